"""What the torch importer and the state-dict helpers share: the lazy torch
import, dtype names, and the rule turning a torch name into a param name.

A torch name (``layers.0.self_attn.in_proj_weight``) becomes an identifier
by replacing every character that cannot be in one with ``_``
(``layers_0_self_attn_in_proj_weight``), with a leading ``p_`` when it would
start with a digit and a trailing ``_`` when it is a Python keyword. The rule
is the same both ways, so state dicts map onto params by name alone.
"""

from __future__ import annotations

import keyword
import re
from types import ModuleType

from ..errors import Error

_NOT_IN_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")

DTYPE_NAMES = ("float32", "float64", "int32", "int64", "bool")


def require_torch(what: str) -> ModuleType:
    """The torch module; an aj.Error with an install hint when it is missing."""
    try:
        import torch
    except ImportError:
        raise Error(f"{what} needs PyTorch, which is not installed: pip install 'adjoint[torch]' "
                    "(or pip install torch)") from None
    return torch


def param_name(torch_name: str) -> str:
    """The adjoint param name of a torch input, parameter or buffer name."""
    name = _NOT_IN_IDENTIFIER.sub("_", torch_name) or "_"
    if name[0].isdigit():
        name = "p_" + name
    if keyword.iskeyword(name):
        name += "_"
    return name


def dtype_name(dtype: object, what: str) -> str:
    """adjoint's name of a torch dtype; aj.Error (from aj.from_torch, its one
    user) for one adjoint has not."""
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPE_NAMES:
        raise Error(f"aj.from_torch: {what} has dtype {dtype}; adjoint has {', '.join(DTYPE_NAMES)}")
    return name
