"""Building functions from Python: ``aj.FunctionBuilder`` and the operator
sugar on expressions (``x @ w``, ``x + 1.0``, ``x.T``, ``x.sum()``).

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


def _call(op: str, *args: Any, **attrs: Any) -> Var:
    from . import op as ops

    return getattr(ops, op)(*args, **attrs)


def _binary(op: str, reflected: bool = False):
    def method(self: Expr, other: Any) -> Var:
        a, b = (other, self) if reflected else (self, other)
        return _call(op, a, b)

    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


def _install_sugar() -> None:
    sugar = {
        "__add__": _binary("add"), "__radd__": _binary("add", True),
        "__sub__": _binary("subtract"), "__rsub__": _binary("subtract", True),
        "__mul__": _binary("multiply"), "__rmul__": _binary("multiply", True),
        "__truediv__": _binary("divide"), "__rtruediv__": _binary("divide", True),
        "__pow__": _binary("power"), "__rpow__": _binary("power", True),
        "__matmul__": _binary("matmul"), "__rmatmul__": _binary("matmul", True),
        "__lt__": _binary("less"), "__gt__": _binary("greater"),
        "__neg__": lambda self: _call("negative", self),
        "__getitem__": _getitem,
        "T": property(lambda self: _call("permute_dims", self),
                      doc="All axes reversed (NumPy's .T): permute_dims(x)."),
        "mT": property(_matrix_transpose, doc="The last two axes swapped (NumPy's .mT)."),
        "shape": property(lambda self: self.type.shape),
        "dtype": property(lambda self: self.type.dtype),
        "ndim": property(lambda self: self.type.ndim),
        "sum": lambda self, axis=None, keepdims=False: _call("sum", self, axis=axis, keepdims=keepdims),
        "mean": lambda self, axis=None, keepdims=False: _call("mean", self, axis=axis, keepdims=keepdims),
        "max": lambda self, axis=None, keepdims=False: _call("max", self, axis=axis, keepdims=keepdims),
        "min": lambda self, axis=None, keepdims=False: _call("min", self, axis=axis, keepdims=keepdims),
        "reshape": _reshape,
        "astype": lambda self, dtype: _call("astype", self, dtype),
    }
    for name, fn in sugar.items():
        setattr(Expr, name, fn)


def _getitem(self: Expr, index: Any) -> Var:
    if not isinstance(index, int) or isinstance(index, bool):
        raise Error(f"only integer indexing of tuples is supported, got {index!r}")
    if not self.type.is_tuple:
        raise Error(f"cannot index a tensor of type {self.type}; tensors support no subscripts")
    return current_builder("tuple indexing").emit(_core.TupleGetItem(self, index))


def _matrix_transpose(self: Expr) -> Var:
    n = self.type.ndim
    if n < 2:
        raise Error(f".mT needs rank >= 2, got type {self.type}")
    axes = list(range(n - 2)) + [n - 1, n - 2]
    return _call("permute_dims", self, axes=axes)


def _reshape(self: Expr, *shape: Any) -> Var:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _call("reshape", self, shape)


_install_sugar()
