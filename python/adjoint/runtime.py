"""Running modules on the CPU: ``exe = aj.build(mod); exe["main"](*arrays)``,
also ``exe.main(x=..., w=...)``, what a compiled function takes
(``exe["main"].signature``), donated inputs
(``exe["step"].donating({"w": 1})``) and what a run allocated
(``last_run_stats``)."""

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


@dataclass(frozen=True)
class Donation:
    """Param ``param`` (#``index``) is donated to flat result ``output``;
    ``direct``: the plan writes the result straight into the param's array
    (else it is computed apart and copied in once the run has succeeded)."""

    param: str
    index: int
    output: int
    direct: bool


@dataclass(frozen=True)
class RunStats:
    """What the last run of a compiled function allocated: fresh buffers
    (the pool had none to reuse, and copies of results) and their bytes, and
    the bytes of donated results copied into their inputs after the run."""

    allocations: int
    allocated_bytes: int
    copied_bytes: int


def _donations(self: ExecFunction) -> tuple[Donation, ...]:
    params = self.function.params
    return tuple(Donation(params[p].name_hint, p, out, direct) for p, out, direct in self._aliases)


ExecFunction.donations = property(_donations, doc="The donated params, as planned (empty unless made by donating).")
ExecFunction.last_run_stats = property(lambda self: RunStats(*self._last_run_stats),
                                       doc="Allocations and copies of the last run (a RunStats).")


def build(mod: Module, *, fuse: bool = True) -> Executable:
    """Plans every function of ``mod`` for the CPU and returns the executable.

    ``exe["main"](*arrays)`` (or ``exe.main(x=..., w=...)``, positional then
    keyword arguments as for a Python function) checks the inputs (count,
    dtype, rank, dims, with symbolic dims bound from the inputs; a one-line
    ``aj.ExecutionError`` names the param otherwise), runs with the GIL
    released, and returns NumPy arrays (tuples for tuple results). Inputs are
    read without copying when C-contiguous and of the param's dtype; a value
    that is not a NumPy array (a scalar, a list) is cast to the param's dtype
    only when no number changes (2.5 into an int is an error).

    ``exe["step"].donating({param: output, ...})`` (a param index or name to
    a flat result index) plans the function anew with those inputs donated:
    each result is written over its input's array, which the call then
    returns at that position (``new_w is w``); a run that raises leaves the
    donated arrays unchanged (docs/executor.md, "Donated inputs").

    ``fuse`` (default on) runs each group of elementwise ops whose results
    have one shape as one instruction, in one pass over memory, with results
    bit-identical to running them one by one (docs/executor.md, "Fusion").
    """
    if not isinstance(mod, Module):
        raise Error(f"build expects an aj.Module, got {type(mod).__name__}")
    return _core.Executable(mod, fuse)


__all__ = ["Donation", "Executable", "ExecFunction", "Param", "RunStats", "Signature", "build"]
