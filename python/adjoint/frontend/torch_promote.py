"""torch's type promotion (``torch.result_type``) over adjoint dtypes, for
the ops of ``aj.from_torch`` that take several operands, which adjoint's ops
want of one dtype.

The categories are bool < int < float. Operands come in three tiers:
tensors with dims, 0-d tensors and Python numbers. The result is the
promotion of the dimensioned tensors' dtypes, unless a lower tier holds a
higher category: then that tier's dtype joins in (an int tensor and a
0-d float64 tensor give float64; a float32 tensor and a 0-d float64 tensor
stay float32). A Python float stands for torch's default dtype (float32
unless changed), a Python int for int64, a Python bool for bool.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from ..errors import Error

_CATEGORY = {"bool": 0, "int32": 1, "int64": 1, "float32": 2, "float64": 2}
_WIDTH = {"bool": 0, "int32": 1, "int64": 2, "float32": 1, "float64": 2}


def promote_types(a: str | None, b: str | None) -> str | None:
    """``torch.promote_types`` of two adjoint dtypes (None for an absent tier)."""
    if a is None or b is None:
        return a if b is None else b
    if _CATEGORY[a] != _CATEGORY[b]:
        return a if _CATEGORY[a] > _CATEGORY[b] else b
    return a if _WIDTH[a] >= _WIDTH[b] else b


def _combine(higher: str | None, lower: str | None) -> str | None:
    """c10's combine_categories: the higher tier wins unless the lower one
    is of a higher category."""
    if higher is None:
        return lower
    if lower is not None and _CATEGORY[lower] > _CATEGORY[higher]:
        return promote_types(higher, lower)
    return higher


def size_as_value(size: str) -> Error:
    """The error for a dynamic size (``x.shape[0]`` of a dynamic dim, which
    the importer holds as the dim's name) used as a number or tensor."""
    return Error(f"the dynamic size {size} (x.shape[i] of a torch.export.Dim axis) used as a value is not "
                 "supported: adjoint's dynamic dims are sizes of tensors, not numbers to compute with")


def is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def number_dtype(value: Any, default_float: str) -> str:
    if isinstance(value, bool):
        return "bool"
    return "int64" if isinstance(value, int) else default_float


def result_dtype(default_float: str, *operands: Any) -> str:
    """The dtype torch computes ``operands`` (exprs and Python numbers; None
    is skipped) in."""
    tiers: list[str | None] = [None, None, None]  # dimensioned tensors, 0-d tensors, numbers
    for v in operands:
        if v is None:
            continue
        if isinstance(v, _core.Expr):
            tier, dtype = (1 if v.type.ndim == 0 else 0), v.type.dtype
        elif is_number(v):
            tier, dtype = 2, number_dtype(v, default_float)
        elif isinstance(v, str):
            raise size_as_value(v)
        else:
            raise Error(f"an operand of type {type(v).__name__} has no dtype to promote")
        tiers[tier] = promote_types(tiers[tier], dtype)
    result = _combine(tiers[0], _combine(tiers[1], tiers[2]))
    if result is None:
        raise Error("no operand to promote")
    return result
