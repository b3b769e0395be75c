"""Building functions from Python: ``aj.FunctionBuilder``; the operator sugar
on expressions (``x @ w``, ``x + 1.0``, ``x.T``, ``x.sum()``) is installed
from operators.py.

Ops called from Python (``aj.op.relu(x)``) emit a binding into the active
builder: the innermost one created and not yet finished on this thread.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from . import _core
from .errors import Error

Expr = _core.Expr
Var = _core.Var

_state = threading.local()


def _stack() -> list["FunctionBuilder"]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def current_builder(what: str = "this op") -> "FunctionBuilder":
    """The active FunctionBuilder; aj.Error when there is none."""
    stack = _stack()
    if not stack:
        raise Error(f"{what}: no active FunctionBuilder; create one with aj.FunctionBuilder(name)")
    return stack[-1]


class FunctionBuilder:
    """Builds one function binding by binding, in A-normal form.

    >>> bb = aj.FunctionBuilder("main", num_input=1)
    >>> x = bb.param("x", ("n", 784), "float32")
    >>> w = bb.param("w", (784, 10), "float32")
    >>> mod = bb.finish(aj.op.sum(aj.op.relu(x @ w)))

    Every op called while the builder is active emits a binding into it,
    with its type inferred and its name hint made unique (``lv``, ``lv_1``).
    """

    def __init__(self, name: str = "main", num_input: int | None = None, **attrs: Any) -> None:
        fattrs: dict[str, Any] = {}
        if num_input is not None:
            fattrs["num_input"] = num_input
        fattrs.update(attrs)
        self._builder = _core._FunctionBuilder(name, fattrs)
        _stack().append(self)

    @property
    def name(self) -> str:
        return self._builder.name

    def param(self, name: str, shape: Sequence[int | str], dtype: Any = "float32") -> Var:
        """Adds a tensor param; symbolic dims are strings (``("n", 784)``)."""
        return self._builder.param(name, tuple(shape) if isinstance(shape, list) else shape, dtype)

    def emit(self, value: Any, name: str = "") -> Var:
        """Binds an expr (a tuple, tuple item, constant or call) to a new var."""
        return self._builder.emit(as_expr(value), name)

    def finish(self, ret: Any) -> "_core.Module":
        """Ends the function, returning ``ret`` (an expr or a nested tuple of exprs),
        and returns a module holding it under this builder's name."""
        try:
            return self._builder.finish(as_expr(ret))
        finally:
            self._deactivate()

    def _emit_call(self, op: str, args: list[Any], attrs: dict[str, Any], name: str) -> Var:
        return self._builder.emit_call(op, args, [], attrs, name)

    def _deactivate(self) -> None:
        stack = _stack()
        if self in stack:
            stack.remove(self)

    def __enter__(self) -> "FunctionBuilder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._deactivate()


def as_expr(value: Any, like: Expr | None = None) -> Expr:
    """An expr for ``value``: exprs as they are, sequences as tuples, numbers
    and arrays as constants (numbers take the dtype of ``like`` when given)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (tuple, list)):
        return _core.Tuple([as_expr(v, like) for v in value])
    if isinstance(value, (bool, int, float, np.number)) and like is not None and like.type.is_tensor:
        return _core.Constant(np.asarray(value), like.type.dtype)
    if isinstance(value, (bool, int, float, np.number, np.ndarray)):
        return _core.Constant(np.asarray(value), None)
    raise Error(f"cannot use a value of type {type(value).__name__} as an expr")


def _first_expr(*values: Any) -> Expr | None:
    for v in values:
        if isinstance(v, Expr):
            return v
    return None


# The operators and methods of exprs (x @ w, x + 1.0, x[1:], x.sum()) live in
# operators.py; installed here, once the builder they emit into is defined.
from . import operators  # noqa: E402

operators.install()
