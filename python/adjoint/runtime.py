"""Running modules on the CPU: ``exe = aj.build(mod); exe["main"](*arrays)``."""

from __future__ import annotations

from . import _core
from .errors import Error
from .ir import Module

Executable = _core.Executable
ExecFunction = _core.ExecFunction


def build(mod: Module) -> Executable:
    """Plans every function of ``mod`` for the CPU and returns the executable.

    ``exe["main"](*arrays)`` checks the inputs (count, dtype, rank, dims, with
    symbolic dims bound from the inputs; ``aj.ExecutionError`` names the param
    otherwise), runs with the GIL released, and returns NumPy arrays (tuples
    for tuple results).
    """
    if not isinstance(mod, Module):
        raise Error(f"build expects an aj.Module, got {type(mod).__name__}")
    return _core.Executable(mod)


__all__ = ["Executable", "ExecFunction", "build"]
