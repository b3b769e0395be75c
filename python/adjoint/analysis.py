"""Analyses of modules and functions: well-formedness and verification, what
is computable at compile time, and FLOP estimates."""

from __future__ import annotations

from . import _core
from .errors import Error
from .ir import Function, Module, Var


def _module(mod: object, what: str) -> Module:
    if not isinstance(mod, Module):
        raise Error(f"{what} expects an aj.Module, got {type(mod).__name__}")
    return mod


def well_formed(mod: Module) -> bool:
    """True when ``verify(mod)`` would pass."""
    return _core.well_formed(_module(mod, "well_formed"))


def verify(mod: Module) -> None:
    """Checks that every var is bound once and before use, call arguments are
    leaves, every type equals what the op rules infer, attrs fit their op's
    schema, function attrs are known ones of the right type, ``num_input``
    is within the param count and ``frozen`` names weights, once each.
    Raises ``aj.VerifyError`` naming the function and the var, binding or
    attr."""
    _core.verify(_module(mod, "verify"))


def problems(mod: Module) -> list[str]:
    """Every problem ``verify`` would find, one message each."""
    return list(_core.verify_problems(_module(mod, "problems")))


def computable_at_compile_time(fn: Function) -> list[Var]:
    """The weights (params at index >= ``num_input``), then, in binding order,
    every var whose value depends only on weights and constants, and whose
    shape the weights fix (each of its symbolic dims is a dim of a weight by
    itself; a dim only the inputs give is not known at compile time). Without
    ``num_input`` every param is an input, and the list holds only the values
    computed from constants alone (``zeros(...)`` and what uses only those).
    A malformed function is an ``aj.VerifyError``."""
    return _core.computable_at_compile_time(fn)


def estimate_flops(fn: Function, compile_time_free: bool = False, dims: dict[str, int] | None = None) -> int | str:
    """The FLOPs of one call of ``fn``: the sum over its bindings of each op's
    rule (matmul (a, b) x (b, c) is 2abc, batch dims included; elementwise ops
    one per output element; reductions one per input element; reshapes,
    permutes, concats and creation none). An ``int`` when every shape is
    static, else the canonical polynomial text (``"2*m*n*r + 3*m*n"``).
    ``compile_time_free`` makes the bindings ``computable_at_compile_time``
    lists free; ``dims`` ({symbol: int}) substitutes symbol values into each
    binding's count before the sum (an ``aj.Error`` names a symbol the
    function's shapes do not use). A count beyond int64, or a polynomial past
    a dim's limits (256 terms, degree 64) that ``dims`` does not resolve, is
    an ``aj.TypeInferenceError`` naming the binding."""
    return _core.estimate_flops(fn, compile_time_free, dims)


def flops_by_op(fn: Function, compile_time_free: bool = False, dims: dict[str, int] | None = None) -> dict[str, int | str]:
    """``estimate_flops`` per op: {op name: FLOPs} for every op ``fn`` calls,
    in order of its first call; the values add up to ``estimate_flops``."""
    return _core.flops_by_op(fn, compile_time_free, dims)


__all__ = ["well_formed", "verify", "problems", "computable_at_compile_time", "estimate_flops", "flops_by_op"]
