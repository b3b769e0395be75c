"""Running modules on the CPU: ``exe = aj.build(mod); exe["main"](*arrays)``,
also ``exe.main(x=..., w=...)``, and what a compiled function takes
(``exe["main"].signature``)."""

from __future__ import annotations

from dataclasses import dataclass

from . import _core
from .errors import Error
from .ir import Module

Executable = _core.Executable
ExecFunction = _core.ExecFunction


@dataclass(frozen=True)
class Param:
    """One param of a compiled function: symbolic dims are their names
    (``("n", 784)``); ``is_weight`` for params past the function's num_input."""

    name: str
    shape: tuple
    dtype: str
    is_weight: bool

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.name}: ({dims}{',' if len(self.shape) == 1 else ''}) {self.dtype}"


@dataclass(frozen=True)
class Signature:
    """What ``exe[name]`` takes and returns: ``params`` in order (the inputs,
    then the weights when the function has num_input), ``result`` as text."""

    name: str
    params: tuple[Param, ...]
    result: str
    text: str

    @property
    def inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.is_weight)

    @property
    def weights(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_weight)

    def __str__(self) -> str:
        return self.text


def _signature(self: ExecFunction) -> Signature:
    fn = self.function
    num_input = fn.attrs.get("num_input", len(fn.params))
    params = tuple(Param(p.name_hint, tuple(p.type.shape), p.type.dtype, i >= num_input) for i, p in enumerate(fn.params))
    text = self._signature_text
    return Signature(self.name, params, text.rsplit(" -> ", 1)[1], text)


ExecFunction.signature = property(_signature, doc="The params (name, shape, dtype, input or weight) and the result.")


def build(mod: Module, *, fuse: bool = True) -> Executable:
    """Plans every function of ``mod`` for the CPU and returns the executable.

    ``exe["main"](*arrays)`` (or ``exe.main(x=..., w=...)``, positional then
    keyword arguments as for a Python function) checks the inputs (count,
    dtype, rank, dims, with symbolic dims bound from the inputs; a one-line
    ``aj.ExecutionError`` names the param otherwise), runs with the GIL
    released, and returns NumPy arrays (tuples for tuple results). Inputs are
    read without copying when C-contiguous and of the param's dtype.

    ``fuse`` (default on) runs each group of elementwise ops whose results
    have one shape as one instruction, in one pass over memory, with results
    bit-identical to running them one by one (docs/executor.md, "Fusion").
    """
    if not isinstance(mod, Module):
        raise Error(f"build expects an aj.Module, got {type(mod).__name__}")
    if not isinstance(fuse, bool):
        raise Error(f"build: fuse must be True or False, got {type(fuse).__name__}")
    return _core.Executable(mod, fuse)


__all__ = ["Executable", "ExecFunction", "Param", "Signature", "build"]
