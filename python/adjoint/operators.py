"""The operators and methods of exprs, with NumPy's semantics.

Installed on ``aj.Expr`` (vars and other exprs) by ``install()``:

- arithmetic ``+ - * / // % ** @`` and their reflected forms, unary ``-``,
  ``+`` and ``abs()``; comparisons ``== != < <= > >=``: each builds its op
  (``x // y`` is floor_divide, ``x % y`` floor_mod, ``x == y`` equal, ...);
  ``pow(x, y)`` is ``x ** y``, and pow's third argument (a modulo) is an
  aj.TypeInferenceError;
- dtype promotion exactly as NumPy 2 for the two operands, Python numbers
  weak (NEP 50): NumPy is asked which dtype the same operator gives on empty
  arrays of the operands' dtypes (numbers passed as they are), and operands
  of another dtype are cast with astype first (``int_x / 2`` is float64,
  ``f32_x * 2`` float32); a dtype adjoint lacks (bool // bool is int8) is
  an error;
- ``.T``, ``.mT``, ``.sum/.mean/.max/.min(axis=None, keepdims=False)``
  (in NumPy's dtype: bool and int32 sums in int64, int and bool means in
  float64, each cast with astype first; the max and min of bools through
  int32),
  ``.reshape(*shape)``, ``.astype(dtype)``, one method per unary op of the
  registry (``x.exp()``), and ``.shape``, ``.dtype``, ``.ndim``;
- indexing ``x[1, ::-1, None, ...]``: one strided_slice per index, then
  squeeze for integer indices and expand_dims for None; a tuple-typed expr
  takes an integer (a TupleGetItem); iteration yields a tuple's items or a
  tensor's rows (``a, b = aj.op.split(x, 2)``).

Since ``==`` builds an op, an expr has no truth value (``bool(x == y)``
raises aj.Error) and hashes by identity, so vars stay usable as dict keys;
compare exprs with ``is`` or ``aj.structural_equal``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _core
from .builder import builder_for
from .errors import Error, TypeInferenceError

Expr = _core.Expr

SUPPORTED_DTYPES = ("float32", "float64", "int32", "int64", "bool")
SLICE_END = 2**63 - 1  # a slice bound past either end of any axis

# name of the dunder (without __ and the r of the reflected form): (op, Python
# operator, symbol). NumPy's dtype is the operator's on arrays (a bool array
# ** 2 is int8, np.power's is int64).
BINARY = {
    "add": ("add", operator.add, "+"),
    "sub": ("subtract", operator.sub, "-"),
    "mul": ("multiply", operator.mul, "*"),
    "truediv": ("divide", operator.truediv, "/"),
    "floordiv": ("floor_divide", operator.floordiv, "//"),
    "mod": ("floor_mod", operator.mod, "%"),
    "pow": ("power", operator.pow, "**"),
    "matmul": ("matmul", operator.matmul, "@"),
}
COMPARISONS = {
    "eq": ("equal", operator.eq, "=="),
    "ne": ("not_equal", operator.ne, "!="),
    "lt": ("less", operator.lt, "<"),
    "le": ("less_equal", operator.le, "<="),
    "gt": ("greater", operator.gt, ">"),
    "ge": ("greater_equal", operator.ge, ">="),
}
_COMPARISON_OPS = {op for op, _, _ in COMPARISONS.values()}
# The registry's unary family, each a method (x.exp()); astype has its own.
UNARY_METHODS = ("negative", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "gelu",
                 "silu", "abs", "square", "erf")


def _call(op: str, *args: Any, **attrs: Any) -> Any:
    from . import op as ops

    return getattr(ops, op)(*args, **attrs)


# ---- dtype promotion ----

def _is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float))


def _numpy_stand_in(v: Any, symbol: str) -> Any:
    """What NumPy sees for an operand: an empty array of an expr's dtype, a
    Python number as it is (weak), an array's or NumPy scalar's dtype (strong)."""
    if isinstance(v, Expr):
        if not v.type.is_tensor:
            raise TypeInferenceError(f"operator '{symbol}': an operand is a tuple ({v.type}), not a tensor")
        return np.empty((0,), v.type.dtype)
    if _is_number(v):
        return v
    if isinstance(v, (np.ndarray, np.generic)):
        return np.empty((0,), v.dtype)
    raise TypeInferenceError(f"operator '{symbol}': cannot use a value of type {type(v).__name__} as an operand "
                             f"(exprs, NumPy arrays and Python bool, int and float numbers are)")


def _describe(v: Any) -> str:
    if isinstance(v, Expr):
        return v.type.dtype
    if isinstance(v, (np.ndarray, np.generic)):
        return f"{v.dtype} array"
    return f"Python {type(v).__name__}"


def _promote(numpy_fn: Any, symbol: str, a: Any, b: Any) -> tuple[str, str]:
    """(the dtype both operands take, the result's dtype) by NumPy 2's rules."""
    sa, sb = _numpy_stand_in(a, symbol), _numpy_stand_in(b, symbol)
    what = f"operator '{symbol}' on {_describe(a)} and {_describe(b)}"
    try:
        common = np.result_type(sa, sb).name
        with np.errstate(all="ignore"):
            result = numpy_fn(sa, sb).dtype.name
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeInferenceError(f"{what}: NumPy does not apply it ({e})") from None
    for dtype in (common, result):
        if dtype not in SUPPORTED_DTYPES:
            raise TypeInferenceError(f"{what} gives {dtype} in NumPy, which adjoint does not have "
                                     f"(its dtypes: {', '.join(SUPPORTED_DTYPES)})")
    return common, result


def _operand(v: Any, dtype: str) -> Any:
    """v as a tensor of dtype: an expr cast with astype when it differs, a
    number or array as a constant of dtype."""
    if isinstance(v, Expr):
        return v if v.type.dtype == dtype else _call("astype", v, dtype)
    return _core.Constant(np.asarray(v, dtype=dtype), None)


def _past_range(v: Any, dtype: str) -> bool:
    """Whether v is a Python int that the int dtype cannot hold (NumPy 2
    raises for + and the like, but compares and true-divides by it)."""
    if not isinstance(v, int) or isinstance(v, bool) or np.dtype(dtype).kind != "i":
        return False
    info = np.iinfo(dtype)
    return not info.min <= v <= info.max


def _comparison_past_range(op: str, numpy_fn: Any, x: Expr, number: int, dtype: str) -> Any:
    """``x < 2**40`` on int32 x: the number lies past every value of the
    dtype, so every element has NumPy's answer for the dtype's extreme on
    that side; a bool tensor of x's shape filled with it."""
    info = np.iinfo(dtype)
    edge = np.array([info.max if number > 0 else info.min], dtype)
    return _call("full_like", x, float(numpy_fn(edge, number)[0]), dtype="bool")


def _apply(op: str, numpy_fn: Any, symbol: str, a: Any, b: Any) -> Any:
    common, result = _promote(numpy_fn, symbol, a, b)
    if _past_range(b, common) or _past_range(a, common):
        if op in _COMPARISON_OPS:  # a is the expr: Python reflects comparisons as x.__gt__(n) for n < x
            return _comparison_past_range(op, numpy_fn, a, b, common)
        common = result  # true division: NumPy divides in float64 (what else NumPy applies raised in _promote)
    out = _call(op, _operand(a, common), _operand(b, common))
    if out.type.dtype != result:
        raise TypeInferenceError(f"operator '{symbol}' on {_describe(a)} and {_describe(b)}: op '{op}' gives "
                                 f"{out.type.dtype}, NumPy {result}")
    return out


def _binary(name: str, reflected: bool) -> Any:
    op, numpy_fn, symbol = BINARY[name]

    def apply(self: Expr, other: Any) -> Any:
        return _apply(op, numpy_fn, symbol, *((other, self) if reflected else (self, other)))

    def power(self: Expr, other: Any, modulo: Any = None) -> Any:
        _refuse_modulo(modulo)
        return apply(self, other)

    method = power if name == "pow" else apply
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    method.__doc__ = f"{'other ' + symbol + ' self' if reflected else 'self ' + symbol + ' other'}: op '{op}' " \
                     f"with NumPy's dtype promotion."
    return method


def _refuse_modulo(modulo: Any) -> None:
    """pow(x, y, m) calls x.__pow__(y, m) (Python passes no m when it is
    None); exprs have no modular power."""
    if modulo is not None:
        raise TypeInferenceError(f"pow(): its third argument (modulo, a {_describe(modulo)}) is not supported on "
                                 f"exprs; write (x ** y) % m")


def _comparison(name: str) -> Any:
    op, numpy_fn, symbol = COMPARISONS[name]

    def method(self: Expr, other: Any) -> Any:
        operand = isinstance(other, (Expr, np.ndarray, np.generic)) or _is_number(other)
        if not operand and name in ("eq", "ne"):
            return NotImplemented  # x == None is False, as for any object
        return _apply(op, numpy_fn, symbol, self, other)

    method.__name__ = f"__{name}__"
    method.__doc__ = f"self {symbol} other: op '{op}' (a bool tensor), operands promoted as NumPy's."
    return method


def _unary_operator(symbol: str, op: str | None) -> Any:
    """-x, +x (x itself) and abs(x); NumPy has no negative or positive of
    bools, and abs of a bool is itself."""
    def method(self: Expr) -> Any:
        is_bool = self.type.is_tensor and self.type.dtype == "bool"
        if is_bool and symbol in "-+":
            raise TypeInferenceError(f"unary '{symbol}' on bool: NumPy has no {op or 'positive'} of bools")
        return _call(op, self) if op and not is_bool else self

    method.__name__ = {"-": "__neg__", "+": "__pos__", "abs": "__abs__"}[symbol]
    return method


def _no_truth_value(self: Expr) -> bool:
    raise Error(f"an expr has no truth value ({self.type}): `==`, `<` and the other comparisons of exprs build "
                f"ops (equal, less, ...); compare exprs with `is` or aj.structural_equal")


# ---- methods ----

def _unary_method(op: str) -> Any:
    def method(self: Expr) -> Any:
        return _call(op, self)

    method.__name__ = op
    method.__doc__ = f"The op '{op}' of self."
    return method


def _matrix_transpose(self: Expr) -> Any:
    n = self.type.ndim
    if n < 2:
        raise TypeInferenceError(f".mT needs rank >= 2, got type {self.type}")
    return _call("permute_dims", self, axes=list(range(n - 2)) + [n - 1, n - 2])


def _reshape(self: Expr, *shape: Any) -> Any:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _call("reshape", self, shape)


# The dtype NumPy 2 accumulates a method's reduction in, where it is not the
# operand's: sums of bools and int32 in int64 (a mask's sum counts), means of
# ints and bools in float64.
_ACCUMULATE = {("sum", "bool"): "int64", ("sum", "int32"): "int64",
               ("mean", "bool"): "float64", ("mean", "int32"): "float64", ("mean", "int64"): "float64"}


def _reduction(op: str) -> Any:
    def method(self: Expr, axis: Any = None, keepdims: bool = False) -> Any:
        dtype = self.type.dtype if self.type.is_tensor else None
        if op in ("max", "min") and dtype == "bool":  # NumPy's any / all: the max / min of 0s and 1s
            return _call(op, _call("astype", self, "int32"), axis=axis, keepdims=keepdims).astype("bool")
        dtype = _ACCUMULATE.get((op, dtype))
        return _call(op, self if dtype is None else _call("astype", self, dtype), axis=axis, keepdims=keepdims)

    method.__name__ = op
    method.__doc__ = f"The op '{op}' of self over axis (None: all axes), in the dtype NumPy 2 gives."
    return method


# ---- indexing ----

def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_index_item(item: Any) -> None:
    ok = _is_int(item) or item is None or item is Ellipsis
    if isinstance(item, slice):
        ok = all(f is None or _is_int(f) for f in (item.start, item.stop, item.step))
    if not ok:
        raise TypeInferenceError(f"cannot index a tensor with {item!r} ({type(item).__name__}): supported are "
                                 f"integers, slices of integers, None and ... (no arrays, bools or floats)")


def _expand_ellipsis(items: tuple, ndim: int) -> list:
    """The index items with ... replaced by whole slices of the axes no item takes."""
    takes = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise TypeInferenceError("an index can have only one ellipsis (...)")
    if takes > ndim:
        raise TypeInferenceError(f"too many indices for a tensor of rank {ndim}: {takes} given")
    out: list = []
    for i in items:
        out += [slice(None)] * (ndim - takes) if i is Ellipsis else [i]
    if Ellipsis not in items:
        out += [slice(None)] * (ndim - takes)
    return out


def _slice_bounds(s: slice) -> tuple[int, int, int]:
    """(begin, end, step) of a slice as int64s: None is past the far end, and
    larger magnitudes clamp (a slice cannot tell them apart)."""
    def clamp(v: int) -> int:
        return max(-SLICE_END, min(SLICE_END, int(v)))

    step = 1 if s.step is None else clamp(s.step)
    if step == 0:
        raise TypeInferenceError("slice step cannot be zero")
    begin = (0 if step > 0 else SLICE_END) if s.start is None else clamp(s.start)
    end = (SLICE_END if step > 0 else -SLICE_END) if s.stop is None else clamp(s.stop)
    return begin, end, step


def _integer_index(i: int, axis: int, dim: Any) -> tuple[int, int]:
    """The slice [i, i + 1) for index i of an axis; out of range is an error."""
    if isinstance(dim, int) and not -dim <= i < dim:
        raise TypeInferenceError(f"index {i} is out of bounds for axis {axis} with size {dim}")
    return i, (SLICE_END if i == -1 else i + 1)


def _getitem(self: Expr, index: Any) -> Any:
    if self.type.is_tuple:
        if type(index) is not int and not _is_int(index):
            raise TypeInferenceError(f"a tuple takes an integer index, got {index!r}")
        index = int(index)
        if index < 0:  # from the end, as in Python and the text format
            size = len(self.type.fields)
            if index >= -size:
                index += size
        return builder_for("tuple indexing", [self]).emit(_core.TupleGetItem(self, index))
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        _check_index_item(item)
    shape = self.type.shape
    axes, begin, end, strides, squeezed, inserted = [], [], [], [], [], []
    axis = 0  # the axis of x the next item takes
    out_axis = 0  # its position in the result, counting inserted axes
    for item in _expand_ellipsis(items, len(shape)):
        if item is None:
            inserted.append(out_axis)
            out_axis += 1
            continue
        if isinstance(item, slice):
            b, e, s = _slice_bounds(item)
            if (b, e, s) != (0, SLICE_END, 1):
                axes.append(axis), begin.append(b), end.append(e), strides.append(s)
            out_axis += 1
        else:
            b, e = _integer_index(int(item), axis, shape[axis])
            axes.append(axis), begin.append(b), end.append(e), strides.append(1)
            squeezed.append(axis)
        axis += 1
    out = self
    if axes:
        out = _call("strided_slice", out, axes, begin, end, strides if any(s != 1 for s in strides) else None)
    if squeezed:
        out = _call("squeeze", out, axis=squeezed)
    if inserted:
        out = _call("expand_dims", out, axis=inserted)
    return out


def _iter(self: Expr) -> Any:
    """A tuple's items; a tensor's rows along a constant first axis (as NumPy
    iterates), never an endless x[0], x[1], ... over a symbolic one."""
    if self.type.is_tuple:
        return iter([self[i] for i in range(len(self.type.fields))])
    shape = self.type.shape
    if not shape or not isinstance(shape[0], int):
        raise TypeInferenceError(f"cannot iterate over a tensor of type {self.type}: its first axis must be a "
                                 f"constant (index it instead)")
    return iter([self[i] for i in range(shape[0])])


def install() -> None:
    """Sets the operators and methods on aj.Expr."""
    sugar: dict[str, Any] = {}
    for name in BINARY:
        sugar[f"__{name}__"] = _binary(name, reflected=False)
        sugar[f"__r{name}__"] = _binary(name, reflected=True)
    for name in COMPARISONS:
        sugar[f"__{name}__"] = _comparison(name)
    for op in UNARY_METHODS:
        sugar[op] = _unary_method(op)
    for op in ("sum", "mean", "max", "min"):
        sugar[op] = _reduction(op)
    sugar.update({
        "__hash__": object.__hash__,
        "__bool__": _no_truth_value,
        "__array_ufunc__": None,  # ndarray + expr: NumPy defers to the expr's reflected operator
        "__neg__": _unary_operator("-", "negative"),
        "__pos__": _unary_operator("+", None),
        "__abs__": _unary_operator("abs", "abs"),
        "__getitem__": _getitem,
        "__iter__": _iter,
        "T": property(lambda self: _call("permute_dims", self),
                      doc="All axes reversed (NumPy's .T): permute_dims(x)."),
        "mT": property(_matrix_transpose, doc="The last two axes swapped (NumPy's .mT)."),
        "shape": property(lambda self: self.type.shape),
        "dtype": property(lambda self: self.type.dtype),
        "ndim": property(lambda self: self.type.ndim),
        "reshape": _reshape,
        "astype": lambda self, dtype: _call("astype", self, dtype),
    })
    for name, fn in sugar.items():
        setattr(Expr, name, fn)
