"""Building functions from Python: ``aj.FunctionBuilder``; the operator sugar
on expressions (``x @ w``, ``x + 1.0``, ``x.T``, ``x.sum()``) is installed
from operators.py.

An op called from Python (``aj.op.relu(x)``) emits a binding into the builder
that made its var arguments; an op without any (``aj.op.zeros``) goes to the
innermost active builder of this thread. A var used in a builder that did not
make it, or after its builder finished, is an ``aj.TypeInferenceError`` at
that line. A builder whose op, param or finish raised, whose ``with`` block
exited by an exception, or whose notebook cell failed is abandoned: it
leaves the active stack and refuses further use.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from . import _core
from .errors import Error, TypeInferenceError

Expr = _core.Expr
Var = _core.Var


class _ThreadState(threading.local):
    """Per thread: the stack of active builders (innermost last)."""

    def __init__(self) -> None:
        self.stack: list = []


_state = _ThreadState()
_by_serial: "weakref.WeakValueDictionary[int, FunctionBuilder]" = weakref.WeakValueDictionary()
_T = TypeVar("_T")


def _stack() -> list["FunctionBuilder"]:
    return _state.stack


def _deactivate_all() -> list[str]:
    """Empties this thread's stack of active builders; the names of those it
    held. For test suites: a test that leaves a builder active fails."""
    stack = _stack()
    names = [repr(getattr(b, "name", b)) for b in stack]
    stack.clear()
    return names


def current_builder(what: str = "this op") -> "FunctionBuilder":
    """The active FunctionBuilder; aj.Error when there is none."""
    stack = _stack()
    if not stack:
        raise Error(f"{what}: no active FunctionBuilder; create one with aj.FunctionBuilder(name)")
    return stack[-1]


def builder_for(what: str, exprs: Sequence[Expr]) -> "FunctionBuilder":
    """The builder an op on ``exprs`` goes to: the one that made their first
    var, else the innermost active one. The builder itself refuses vars of
    other builders when the op is emitted. While a pattern rewriter runs, its
    call maker (innermost on the stack) takes every op."""
    stack = _stack()
    if stack and not isinstance(stack[-1], FunctionBuilder):
        return stack[-1]
    serial = _core._owner_serial(list(exprs))
    owner = _by_serial.get(serial) if serial is not None else None
    return owner if owner is not None else current_builder(what)


def abandon_builder_for(what: str, values: Sequence[Any], error: BaseException) -> None:
    """Abandons the builder an op on ``values`` would have gone to (if any):
    for an op whose arguments were refused before it was emitted."""
    exprs = [v for v in values if isinstance(v, Expr)]
    exprs += [x for v in values if isinstance(v, (tuple, list)) for x in v if isinstance(x, Expr)]
    try:
        target = builder_for(what, exprs)
    except Error:
        return
    if isinstance(target, FunctionBuilder):
        target._abandon(error)


class FunctionBuilder:
    """Builds one function binding by binding, in A-normal form.

    >>> bb = aj.FunctionBuilder("main", num_input=1)
    >>> x = bb.param("x", ("n", 784), "float32")
    >>> w = bb.param("w", (784, 10), "float32")
    >>> mod = bb.finish(aj.op.sum(aj.op.relu(x @ w)))

    or, leaving no active builder behind whatever happens in the block::

        with aj.FunctionBuilder("main") as bb:
            x = bb.param("x", (3,), "float32")
            mod = bb.finish(aj.op.exp(x))

    Every op on its vars (or, with no var arguments, called while it is the
    innermost active builder) emits a binding into it, with its type
    inferred and its name hint made unique (``lv``, ``lv_1``). ``name`` must
    be a name the text format reads (``[A-Za-z_][A-Za-z0-9_]*``, not a Python
    keyword), else an ``aj.Error``. Function attrs are ``num_input``,
    ``frozen`` (a string of weight names, ``frozen="a, b"``) and ``doc``;
    any other is an ``aj.VerifyError``.
    """

    def __init__(self, name: str = "main", num_input: int | None = None, **attrs: Any) -> None:
        fattrs: dict[str, Any] = {}
        if num_input is not None:
            fattrs["num_input"] = num_input
        fattrs.update(attrs)
        self._builder = _core._FunctionBuilder(name, fattrs)
        self._active_in = _stack()
        self._active_in.append(self)
        _by_serial[self._builder.serial] = self
        _track_notebook_cell(self)

    @property
    def name(self) -> str:
        return self._builder.name

    @property
    def status(self) -> str:
        """"active", "finished", "abandoned" (after an error) or "dropped"."""
        return self._builder.status

    def param(self, name: str, shape: Sequence[int | str], dtype: Any = "float32") -> Var:
        """Adds a tensor param; symbolic dims are strings (``("n", 784)``)."""
        shape = tuple(shape) if isinstance(shape, list) else shape
        return self._guarded(self._builder.param, name, shape, dtype)

    def emit(self, value: Any, name: str = "") -> Var:
        """Binds an expr (a tuple, tuple item, constant or call) to a new var."""
        return self._guarded(lambda: self._builder.emit(as_expr(value), name))

    def inline(self, fn: "_core.Function", *args: Any) -> Any:
        """Calls ``fn`` here by inlining it: its bindings are emitted with its
        params replaced by ``args`` (one value of the param's type each) and
        its result is returned over the new vars, a tuple result as a Python
        tuple. ``aj.TypeInferenceError`` on a wrong count or type."""
        ret = self._guarded(self._builder.inline_function, fn, [as_expr(a) for a in args])
        return _untuple(ret)

    def finish(self, ret: Any) -> "_core.Module":
        """Ends the function, returning ``ret`` (an expr or a nested tuple of
        exprs), verifies it (``aj.VerifyError`` names the offending var) and
        returns a module holding it under this builder's name."""
        try:
            return self._guarded(lambda: self._builder.finish(as_expr(ret)))
        finally:
            self._deactivate()

    def _emit_call(self, op: str, args: list[Any], attrs: dict[str, Any], name: str) -> Var:
        return self._guarded(self._builder.emit_call, op, args, [], attrs, name)

    def _guarded(self, method: Callable[..., _T], *args: Any) -> _T:
        try:
            return method(*args)
        except BaseException as e:
            self._abandon(e)
            raise

    def _abandon(self, error: BaseException) -> None:
        """Marks the builder unusable after ``error`` and deactivates it
        (a finished builder stays finished)."""
        lines = str(error).splitlines()
        reason = f"{type(error).__name__}: {lines[0] if lines else ''}"
        self._builder.abandon(reason[:200])
        self._deactivate()

    def _deactivate(self) -> None:
        if self in self._active_in:
            self._active_in.remove(self)

    def __enter__(self) -> "FunctionBuilder":
        if self.status != "active":
            raise Error(f"with FunctionBuilder '{self.name}': the builder is {self.status}; create a new one")
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            self._abandon(exc)
        else:
            self._deactivate()

    def __repr__(self) -> str:
        return f"<aj.FunctionBuilder '{self.name}' ({self.status})>"


# ---- notebooks: a failed cell abandons the builders it created ----

_cell_builders: "weakref.WeakSet[FunctionBuilder]" = weakref.WeakSet()
_hooked_shells: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _track_notebook_cell(builder: FunctionBuilder) -> None:
    """Under IPython, remembers ``builder`` as made by the running cell, and
    hooks (once per shell) the cell events that abandon such builders when
    the cell raises."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    if shell not in _hooked_shells:
        shell.events.register("pre_run_cell", _start_cell)
        shell.events.register("post_run_cell", _end_cell)
        _hooked_shells.add(shell)
    _cell_builders.add(builder)


def _start_cell(info: Any = None) -> None:
    _cell_builders.clear()


def _end_cell(result: Any) -> None:
    error = getattr(result, "error_in_exec", None)
    if error is not None:
        for builder in list(_cell_builders):
            if builder.status == "active":
                builder._abandon(error)
    _cell_builders.clear()


def _untuple(e: Any) -> Any:
    """A Tuple expr as a Python tuple of its fields (recursively); others as they are."""
    if isinstance(e, _core.Tuple):
        return tuple(_untuple(f) for f in e.fields)
    return e


# The concrete expr classes: `type(v) in _EXPR_CLASSES` answers most checks
# faster than isinstance, which pybind's metaclass makes slow for subclasses.
_EXPR_CLASSES = frozenset({_core.Var, _core.Call, _core.Constant, _core.Tuple, _core.TupleGetItem})


def as_expr(value: Any, like: Expr | str | None = None) -> Expr:
    """An expr for ``value``: exprs as they are, sequences as tuples, numbers
    and arrays as constants (numbers take the dtype of ``like``, an expr or a
    dtype name, when given)."""
    if type(value) in _EXPR_CLASSES or isinstance(value, Expr):
        return value
    if isinstance(value, (tuple, list)):
        return _core.Tuple([as_expr(v, like) for v in value])
    if isinstance(value, (bool, int, float, np.number)) and isinstance(like, str):
        return _core.Constant(np.asarray(_checked_number(value, like)), like)
    if isinstance(value, (bool, int, float, np.number)) and isinstance(like, Expr) and like.type.is_tensor:
        return _core.Constant(np.asarray(_checked_number(value, like.type.dtype)), like.type.dtype)
    if isinstance(value, (bool, int, float, np.number, np.ndarray)):
        return _core.Constant(np.asarray(value), None)
    raise Error(f"cannot use a value of type {type(value).__name__} as an expr")


def _checked_number(value: Any, dtype: str) -> Any:
    """value, when dtype holds it exactly: an int dtype takes whole numbers in
    its range, bool takes bools, 0 and 1 (a cast would wrap 2**32 + 5 to 5,
    truncate 2.5 to 2 and make NaN INT_MIN); floats take any number. An
    aj.TypeInferenceError otherwise."""
    if dtype not in ("int32", "int64", "bool"):
        return value
    v = float(value) if isinstance(value, (float, np.floating)) else value
    whole = not isinstance(v, float) or v.is_integer()
    if dtype == "bool":
        fits = whole and v in (0, 1)
    else:
        info = np.iinfo(dtype)
        fits = whole and info.min <= int(v) <= info.max
    if not fits:
        raise TypeInferenceError(f"the number {value!r} does not fit dtype {dtype} (the operands' dtype): "
                                 f"{'only True, False, 0 and 1 do' if dtype == 'bool' else 'it is not a whole number in its range'}")
    return value


class _CallMaker:
    """Stands for the active FunctionBuilder while a rewriter runs: ``aj.op``
    calls make call exprs, which the rewriter binds where they replace."""

    def _emit_call(self, op: str, args: list[Any], attrs: dict[str, Any], name: str) -> Any:
        return _core.Call(op, args, attrs)

    def emit(self, value: Any, name: str = "") -> Any:
        return as_expr(value)


def _first_expr(*values: Any) -> Expr | None:
    for v in values:
        if isinstance(v, Expr):
            return v
    return None


_NUMBER = (bool, int, float, np.number)


def _numbers_dtype(*values: Any) -> str | None:
    """The dtype numbers among ``values`` (none of them an expr) take: NumPy's
    promotion of the numbers and arrays there (``2.5`` and ``-1`` give
    float64, ``0`` beside a float32 array float32), or None when there is
    no number or NumPy does not promote them (the op's rule then says what
    is wrong)."""
    given = [v for v in values if isinstance(v, (*_NUMBER, np.ndarray))]
    if not any(isinstance(v, _NUMBER) for v in given):
        return None
    try:
        return np.result_type(*given).name
    except (TypeError, ValueError):
        return None


# The operators and methods of exprs (x @ w, x + 1.0, x[1:], x.sum()) live in
# operators.py; installed here, once the builder they emit into is defined.
from . import operators  # noqa: E402

operators.install()
