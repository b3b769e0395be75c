"""Analyses of modules: well-formedness and verification."""

from __future__ import annotations

from . import _core
from .errors import Error
from .ir import Module


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
    schema and ``num_input`` is within the param count. Raises
    ``aj.VerifyError`` naming the function and the var or binding."""
    _core.verify(_module(mod, "verify"))


def problems(mod: Module) -> list[str]:
    """Every problem ``verify`` would find, one message each."""
    return list(_core.verify_problems(_module(mod, "problems")))


__all__ = ["well_formed", "verify", "problems"]
