"""The ATen op table of ``aj.from_torch``: one small function per op (or
group of ops of one meaning), registered in ``OPS`` under the op's overload
packet name (``linear`` for ``aten.linear.default``; ``operator.getitem``
for Python's).

Each function takes the importer ``cx`` (the current node, its fake result
``cx.out()``, ``cx.out_shape()``, ``cx.unsupported(...)``) and the node's
arguments by their ATen schema names (``a.input``, ``a.weight``), tensors
already translated to adjoint values, and emits adjoint ops into the active
builder. Shape-only ops take their result shape from torch's fake result,
so symbolic sizes need no arithmetic here. Ops of several operands cast
them to the dtype torch computes in (``_promoted``, by ``torch_promote``)
first, as adjoint's ops take one dtype. The nn ops are in
``torch_nn_ops``, the reductions in ``torch_reductions`` and the
activations adjoint has no op for in ``torch_activations``; each adds its
entries to the same table.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _core
from .. import op
from ..errors import Error
from .torch_promote import is_number, result_dtype, size_as_value

OPS: dict[str, Callable[[Any, "Args"], Any]] = {}


class Args(dict):
    """A node's arguments by schema name; a missing one reads as None."""

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def aten(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            OPS[name] = fn
        return fn

    return register


def _pair(v: Any) -> list[int]:
    v = [v] if isinstance(v, int) else list(v)
    return v * 2 if len(v) == 1 else v


def _axes(dims: Any, ndim: int) -> list[int]:
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [d % ndim if ndim else 0 for d in dims]


def _swap_last(x: Any) -> Any:
    n = x.type.ndim
    return op.permute_dims(x, list(range(n - 2)) + [n - 1, n - 2])


def _cast(x: Any, dtype: str) -> Any:
    """``x`` (an expr) in ``dtype``, with no astype when it is already."""
    return x if x.type.dtype == dtype else op.astype(x, dtype)


def _promoted(cx: Any, *operands: Any, dtype: str | None = None) -> list:
    """``operands`` (exprs and Python numbers) in the dtype torch computes
    them in (``dtype`` when given): exprs cast to it; numbers left for the
    op to give that dtype, or constants of it when no operand is an expr."""
    dtype = dtype or result_dtype(cx.default_float, *operands)
    operands = tuple(_in_float32(v) if dtype == "float32" else v for v in operands)
    if not any(isinstance(v, _core.Expr) for v in operands):
        return [_core.Constant(np.asarray(v), dtype) for v in operands]
    return [_cast(v, dtype) if isinstance(v, _core.Expr) else v for v in operands]


def _in_float32(value: Any) -> Any:
    """A Python float as float32 holds it: one past its range is inf, as
    torch computes ``float32_x + 1e40`` (done here, where the overflow is
    meant, so NumPy's cast of the constant has none to warn of)."""
    if not isinstance(value, float):
        return value
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _fits(value: Any, dtype: str) -> bool:
    """Whether torch converts the number ``value`` to ``dtype`` without
    overflow: an int dtype takes a value in its range, a float dtype any
    value but a finite one past its range."""
    if dtype.startswith("int"):
        return np.iinfo(dtype).min <= value <= np.iinfo(dtype).max
    if dtype.startswith("float"):
        return not math.isfinite(value) or abs(value) <= float(np.finfo(dtype).max)
    return True


# -- no-ops: copies, asserts, dropout ---------------------------------------


@aten("contiguous", "clone", "alias", "detach", "lift_fresh_copy", "_to_copy", "to", "type_as")
def _copy(cx: Any, a: Args) -> Any:
    x = a.self
    return x if cx.out_dtype() == x.type.dtype else op.astype(x, cx.out_dtype())


@aten("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size", "sym_constrain_range")
def _no_value(cx: Any, a: Args) -> None:
    return None


@aten("dropout", "feature_dropout")
def _dropout(cx: Any, a: Args) -> Any:
    if a.train and a.p > 0:
        raise cx.unsupported(f"in training mode (p={a.p})", "call module.eval() before importing")
    return a.input


# -- elementwise ----------------------------------------------------------------

_UNARY = {"relu": op.relu, "tanh": op.tanh, "sigmoid": op.sigmoid, "silu": op.silu, "exp": op.exp,
          "log": op.log, "log1p": op.log1p, "sqrt": op.sqrt, "rsqrt": op.rsqrt, "neg": op.negative, "abs": op.abs,
          "sin": op.sin, "cos": op.cos, "erf": op.erf, "square": op.square}

for _name, _fn in _UNARY.items():  # an int input of exp, sqrt, ... becomes torch's float first
    OPS[_name] = lambda cx, a, _fn=_fn: _fn(_cast(a.self, cx.out_dtype()))


@aten("reciprocal")
def _reciprocal(cx: Any, a: Args) -> Any:
    return op.divide(1.0, _cast(a.self, cx.out_dtype()))


@aten("gelu")
def _gelu(cx: Any, a: Args) -> Any:
    x = a.self
    if a.approximate == "none":
        return op.gelu(x)
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch writes it
    cube = op.multiply(op.multiply(x, x), x)
    inner = op.multiply(op.add(x, op.multiply(cube, 0.044715)), math.sqrt(2.0 / math.pi))
    one_plus_tanh = op.add(op.tanh(inner), 1.0)
    return op.multiply(op.multiply(x, 0.5), one_plus_tanh)


def _scaled(x: Any, alpha: Any) -> Any:
    if alpha is None or alpha == 1:
        return x
    return x * alpha if is_number(x) else op.multiply(x, alpha)


def _wrapped(cx: Any, *operands: Any, alpha: Any = None) -> list:
    """``_promoted(operands)``, a number among them times ``alpha``, and a
    Python int wrapped into an int dtype as torch converts it
    (``int32_x + 2**31`` adds -2**31, ``int32_x < 2**40`` compares with 0);
    ``alpha`` itself must fit, as torch checks it."""
    dtype = result_dtype(cx.default_float, *operands)
    if alpha is not None and not _fits(alpha, dtype):
        raise Error(f"alpha={alpha!r} does not fit {dtype}, the dtype it computes in (torch refuses it too)")
    values = [_scaled(v, alpha) if is_number(v) else v for v in _promoted(cx, *operands, dtype=dtype)]
    if not dtype.startswith("int"):
        return [_in_float32(v) if dtype == "float32" else v for v in values]
    half = 2 ** (np.iinfo(dtype).bits - 1)
    return [(v + half) % (2 * half) - half if isinstance(v, int) and not isinstance(v, bool) else v for v in values]


@aten("add")
def _add(cx: Any, a: Args) -> Any:
    x, y = _wrapped(cx, a.self, a.other, alpha=a.alpha)
    return op.add(x, y if is_number(y) else _scaled(y, a.alpha))


@aten("sub")
def _sub(cx: Any, a: Args) -> Any:
    x, y = _wrapped(cx, a.self, a.other, alpha=a.alpha)
    return op.subtract(x, y if is_number(y) else _scaled(y, a.alpha))


@aten("rsub")
def _rsub(cx: Any, a: Args) -> Any:
    x, y = _wrapped(cx, a.self, a.other)  # other - alpha * self, self a tensor
    return op.subtract(y, _scaled(x, a.alpha))


@aten("mul")
def _mul(cx: Any, a: Args) -> Any:
    return op.multiply(*_wrapped(cx, a.self, a.other))


@aten("div")
def _div(cx: Any, a: Args) -> Any:
    if a.rounding_mode == "floor":
        return op.floor_divide(*_wrapped(cx, a.self, a.other))
    if a.rounding_mode == "trunc":
        return _trunc_divide(cx, a)
    if a.rounding_mode is not None:
        raise cx.unsupported(f"with rounding_mode='{a.rounding_mode}'")
    dtype = result_dtype(cx.default_float, a.self, a.other)
    if not dtype.startswith("float"):  # true division of ints and bools is torch's default float
        dtype = cx.default_float
    return op.divide(*_promoted(cx, a.self, a.other, dtype=dtype))


def _trunc_divide(cx: Any, a: Args) -> Any:
    """self / other rounded toward zero, in torch's result dtype."""
    x, y = _wrapped(cx, a.self, a.other)
    if result_dtype(cx.default_float, a.self, a.other).startswith("float"):  # the true quotient, truncated
        quotient = op.divide(x, y)
        whole = op.floor_divide(op.abs(quotient), 1.0)
        truncated = op.where(op.less(quotient, 0.0), op.negative(whole), whole)
        return op.where(op.equal(op.abs(quotient), math.inf), quotient, truncated)  # inf // 1 would be NaN
    # ints: the floor quotient, one more where a remainder is left and the signs differ
    quotient = op.floor_divide(x, y)
    inexact = op.not_equal(op.floor_mod(x, y), 0)
    negative = [op.less(v, 0) if isinstance(v, _core.Expr) else _core.Constant(np.asarray(v < 0)) for v in (x, y)]
    signs_differ = op.not_equal(*negative)
    return op.where(op.where(inexact, signs_differ, inexact), op.add(quotient, 1), quotient)


@aten("floor_divide")
def _floor_divide(cx: Any, a: Args) -> Any:
    return op.floor_divide(*_wrapped(cx, a.self, a.other))


@aten("remainder")
def _remainder(cx: Any, a: Args) -> Any:
    return op.floor_mod(*_wrapped(cx, a.self, a.other))  # the sign of the divisor, as Python's %


@aten("pow")
def _pow(cx: Any, a: Args) -> Any:
    base, exponent = _promoted(cx, a.self, a.exponent)  # pow.Scalar (2 ** x) has a number base
    if is_number(exponent) and not isinstance(exponent, bool) and exponent == 2:
        return op.square(base)
    return op.power(base, exponent)


_BINARY = {"maximum": op.maximum, "minimum": op.minimum, "eq": op.equal, "ne": op.not_equal, "lt": op.less,
           "le": op.less_equal, "gt": op.greater, "ge": op.greater_equal}

for _name, _fn in _BINARY.items():  # comparisons compare in the promoted dtype and give bool
    OPS[_name] = lambda cx, a, _fn=_fn: _fn(*_wrapped(cx, a.self, a.other))


@aten("bitwise_not", "logical_not")
def _not(cx: Any, a: Args) -> Any:
    x = a.self
    if x.type.dtype == "bool" or cx.node.target._overloadpacket.__name__ == "logical_not":
        return op.equal(x, cx.constant(np.zeros((), bool), like=x))  # x == 0: a bool of any dtype
    return op.subtract(-1, x)  # ~x of an int: -1 - x in two's complement


@aten("where")
def _where(cx: Any, a: Args) -> Any:
    dtype = result_dtype(cx.default_float, a.self, a.other)
    for v in (a.self, a.other):
        if is_number(v) and not _fits(v, dtype):
            raise Error(f"the number {v!r} does not fit {dtype}, the dtype of the result (torch refuses it too)")
    return op.where(a.condition, *_promoted(cx, a.self, a.other, dtype=dtype))


@aten("masked_fill")
def _masked_fill(cx: Any, a: Args) -> Any:
    x, value = a.self, a.value  # a number, or a 0-d tensor (masked_fill.Tensor); x's dtype either way
    dtype = x.type.dtype
    if isinstance(value, str):
        raise size_as_value(value)
    if isinstance(value, _core.Constant):  # torch checks the value of a 0-d tensor as it checks a number's
        value = value.data.item()
    if isinstance(value, _core.Expr):  # a value known only when run: cast as astype casts
        fill = _cast(value, dtype)
    else:
        fill = cx.constant(np.asarray(_fill_value(value, dtype), dtype))
    return op.where(a.mask, fill, x)


def _fill_value(value: Any, dtype: str) -> Any:
    """``value`` (a number) in ``dtype`` as torch's masked_fill and pad convert it: a
    bool takes any number, an int dtype a number whose whole part is in its
    range (2.5 becomes 2), a float dtype any number but a finite one past
    its range; an aj.Error, as torch's own refusal, otherwise."""
    if dtype == "bool":
        return bool(value)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        if math.isfinite(value) and info.min <= math.trunc(value) <= info.max:
            return math.trunc(value)
    elif not math.isfinite(value) or abs(value) <= float(np.finfo(dtype).max):
        return value
    raise Error(f"the fill value {value!r} does not fit {dtype}, the dtype of the tensor it fills "
                "(torch refuses it too: value cannot be converted without overflow)")


# -- linear algebra -------------------------------------------------------------


@aten("linear")
def _linear(cx: Any, a: Args) -> Any:
    y = op.matmul(a.input, op.permute_dims(a.weight))
    return y if a.bias is None else op.add(y, a.bias)


@aten("matmul", "mm", "bmm")
def _matmul(cx: Any, a: Args) -> Any:
    return op.matmul(a.self, a.other if a.other is not None else a.mat2)


@aten("addmm", "baddbmm")
def _addmm(cx: Any, a: Args) -> Any:
    product = op.matmul(a.mat1, a.mat2) if a.mat1 is not None else op.matmul(a.batch1, a.batch2)
    return op.add(_scaled(a.self, a.beta), _scaled(product, a.alpha))


# -- shapes ---------------------------------------------------------------------


@aten("view", "reshape", "_unsafe_view", "flatten", "unflatten", "view_as", "reshape_as")
def _reshape(cx: Any, a: Args) -> Any:
    return op.reshape(a.self, cx.out_shape())


@aten("t", "numpy_T")
def _reverse(cx: Any, a: Args) -> Any:
    return op.permute_dims(a.self)


@aten("transpose", "swapaxes")
def _transpose(cx: Any, a: Args) -> Any:
    x = a.self
    axes = list(range(x.type.ndim))
    i, j = _axes([a.dim0 if a.dim0 is not None else a.axis0, a.dim1 if a.dim1 is not None else a.axis1],
                 x.type.ndim)
    axes[i], axes[j] = axes[j], axes[i]
    return op.permute_dims(x, axes)


@aten("permute")
def _permute(cx: Any, a: Args) -> Any:
    return op.permute_dims(a.self, _axes(a.dims, a.self.type.ndim))


@aten("unsqueeze")
def _unsqueeze(cx: Any, a: Args) -> Any:
    return op.expand_dims(a.self, a.dim % (a.self.type.ndim + 1))


@aten("squeeze")
def _squeeze(cx: Any, a: Args) -> Any:
    x = a.self
    shape = x.type.shape
    asked = range(x.type.ndim) if a.dim is None else _axes(a.dim, x.type.ndim)
    axes = [d for d in asked if shape[d] == 1]  # torch leaves a size other than 1 in place
    return op.squeeze(x, axes) if axes else x


@aten("expand", "expand_as", "broadcast_to")
def _expand(cx: Any, a: Args) -> Any:
    return op.broadcast_to(a.self, cx.out_shape())


@aten("split", "split_with_sizes", "chunk", "tensor_split", "unsafe_split")
def _split(cx: Any, a: Args) -> Any:
    x = a.self
    axis = (a.dim or 0) % x.type.ndim
    sizes = [cx.out_shape(i)[axis] for i in range(len(cx.out()))]
    if not all(isinstance(s, int) for s in sizes):
        raise cx.unsupported(f"along a dynamic axis (sizes {sizes})")
    bounds = np.cumsum(sizes[:-1]).tolist()
    return op.split(x, bounds if bounds else 1, axis=axis)


@aten("unbind")
def _unbind(cx: Any, a: Args) -> Any:
    x = a.self
    axis = a.dim % x.type.ndim
    n = x.type.shape[axis]
    if not isinstance(n, int):
        raise cx.unsupported("along a dynamic axis")
    parts = op.split(x, n, axis=axis)
    return [op.squeeze(cx.emit(_core.TupleGetItem(parts, i)), [axis]) for i in range(n)]


@aten("operator.getitem")
def _getitem(cx: Any, a: Args) -> Any:
    seq, index = a.arg0, a.arg1
    if isinstance(seq, (list, tuple)):
        return seq[index]
    return cx.emit(_core.TupleGetItem(seq, index))


_TO_THE_END = 2**63 - 1  # torch's and strided_slice's end for x[i:]


@aten("select")
def _select(cx: Any, a: Args) -> Any:
    x = a.self
    axis = a.dim % x.type.ndim
    if not isinstance(x.type.shape[axis], int):  # strided_slice's length on a symbolic axis would be symbolic
        return op.take(x, cx.constant(np.asarray(a.index, np.int64)), axis=axis)
    end = a.index + 1 if a.index != -1 else _TO_THE_END
    return op.squeeze(op.strided_slice(x, [axis], [a.index], [end]), [axis])


@aten("slice")
def _slice(cx: Any, a: Args) -> Any:
    x = a.self
    axis = a.dim % x.type.ndim
    if cx.out_shape()[axis] == x.type.shape[axis]:
        return x  # x[:, :] and x[:, 0:], which torch.export keeps
    bounds = (a.start, a.end, a.step)
    if not all(b is None or isinstance(b, int) for b in bounds):
        raise cx.unsupported(f"with dynamic bounds {bounds}")
    begin = 0 if a.start is None else a.start
    end = _TO_THE_END if a.end is None else min(a.end, _TO_THE_END)
    step = a.step or 1
    return op.strided_slice(x, [axis], [begin], [end], None if step == 1 else [step])


@aten("cat", "concat", "concatenate")
def _cat(cx: Any, a: Args) -> Any:
    rank = len(cx.out_shape())  # torch skips an empty 1-D tensor among tensors of another rank
    tensors = _promoted(cx, *[t for t in a.tensors if t.type.ndim == rank], dtype=cx.out_dtype())
    axis = (a.dim or 0) % tensors[0].type.ndim
    return tensors[0] if len(tensors) == 1 else op.concat(tensors, axis=axis)


@aten("stack")
def _stack(cx: Any, a: Args) -> Any:
    tensors = _promoted(cx, *a.tensors, dtype=cx.out_dtype())
    axis = (a.dim or 0) % (tensors[0].type.ndim + 1)
    return op.concat([op.expand_dims(t, axis) for t in tensors], axis=axis)


@aten("index_select")
def _index_select(cx: Any, a: Args) -> Any:
    return op.take(a.self, a.index, axis=a.dim % max(a.self.type.ndim, 1))


@aten("repeat")
def _repeat(cx: Any, a: Args) -> Any:
    x, repeats = a.self, list(a.repeats)  # x tiled: leading dims of 1 added for the repeats past its rank
    shape = (1,) * (len(repeats) - x.type.ndim) + tuple(x.type.shape)
    spread = [d for s in shape for d in (1, s)]  # (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...)
    tiled = [d for r, s in zip(repeats, shape) for d in (r, s)]
    return op.reshape(op.broadcast_to(op.reshape(x, tuple(spread)), tuple(tiled)), cx.out_shape())


@aten("repeat_interleave")
def _repeat_interleave(cx: Any, a: Args) -> Any:
    x, repeats = a.self, a.repeats
    if not isinstance(repeats, int):
        raise cx.unsupported("with a tensor of repeats (its result's length depends on their values)")
    if a.dim is None:  # each entry of x flattened, repeated
        x = op.reshape(x, (_reduced_count(cx, x, None),)) if x.type.ndim != 1 else x
    axis = 0 if a.dim is None else a.dim % x.type.ndim
    shape = tuple(x.type.shape)
    spread = op.broadcast_to(op.expand_dims(x, axis + 1), shape[:axis + 1] + (repeats,) + shape[axis + 1:])
    return op.reshape(spread, cx.out_shape())


@aten("flip")
def _flip(cx: Any, a: Args) -> Any:
    x = a.self
    axes = sorted(set(_axes(a.dims, x.type.ndim)))
    if not axes:
        return x
    return op.strided_slice(x, axes, [_TO_THE_END] * len(axes), [-_TO_THE_END] * len(axes), [-1] * len(axes))


@aten("roll")
def _roll(cx: Any, a: Args) -> Any:
    x = a.self
    shifts = [a.shifts] if isinstance(a.shifts, int) else list(a.shifts)
    if not a.dims:  # rolled as one flat row, then shaped back
        if x.type.ndim == 1:
            return _rolled(cx, x, shifts[0], 0)
        return op.reshape(_rolled(cx, op.reshape(x, (_reduced_count(cx, x, None),)), shifts[0], 0), x.type.shape)
    for shift, axis in zip(shifts, _axes(a.dims, x.type.ndim)):
        x = _rolled(cx, x, shift, axis)
    return x


def _rolled(cx: Any, x: Any, shift: int, axis: int) -> Any:
    """x rolled by ``shift`` along ``axis``: its last ``shift`` entries first."""
    n = x.type.shape[axis]
    if not isinstance(n, int) or not isinstance(shift, int):
        raise cx.unsupported(f"along a dynamic axis or by a dynamic shift ({n}, {shift})")
    shift = shift % n if n else 0
    if shift == 0:
        return x
    head = op.strided_slice(x, [axis], [n - shift], [n])
    tail = op.strided_slice(x, [axis], [0], [n - shift])
    return op.concat([head, tail], axis=axis)


@aten("pad", "constant_pad_nd")
def _pad(cx: Any, a: Args) -> Any:
    mode = a.mode or "constant"
    if mode != "constant":
        raise cx.unsupported(f"with mode='{mode}' (only 'constant')")
    x = a.self
    dtype = x.type.dtype  # the value converted as torch's fill converts it (2.7 pads an int tensor with 2)
    fill = cx.constant(np.asarray(_fill_value(0 if a.value is None else a.value, dtype), dtype))
    pads = list(a.pad)
    for k in range(len(pads) // 2):  # (left, right) of the last axis, then of the one before, ...
        x = _padded(x, x.type.ndim - 1 - k, pads[2 * k], pads[2 * k + 1], fill)
    return x


def _padded(x: Any, axis: int, before: int, after: int, fill: Any) -> Any:
    """x with ``before`` and ``after`` entries of ``fill`` (0-d) added along
    ``axis`` (a negative count takes entries away)."""
    if before < 0 or after < 0:  # strided_slice reads a negative end from the end, as Python does
        x = op.strided_slice(x, [axis], [max(-before, 0)], [after if after < 0 else _TO_THE_END])
    parts = []
    for count in (before, after):
        shape = list(x.type.shape)
        shape[axis] = count
        parts.append(op.broadcast_to(fill, tuple(shape)) if count > 0 else None)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    return pieces[0] if len(pieces) == 1 else op.concat(pieces, axis=axis)


def _reduced_dims(x: Any, axis: list[int] | None) -> list:
    return list(x.type.shape) if axis is None else [x.type.shape[i] for i in axis]


def _reduced_count(cx: Any, x: Any, axis: list[int] | None) -> int:
    dims = _reduced_dims(x, axis)
    if not all(isinstance(d, int) for d in dims):
        raise cx.unsupported(f"over the dynamic dims {tuple(dims)}")
    return math.prod(dims)


# -- creation -------------------------------------------------------------------


@aten("zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full",
      "scalar_tensor")
def _full(cx: Any, a: Args) -> Any:
    name = cx.node.target._overloadpacket.__name__
    value = {"zeros": 0, "ones": 1}.get(name.removesuffix("_like").removeprefix("new_"), a.fill_value)
    if name == "scalar_tensor":
        value = a.s
    if isinstance(value, str):
        raise size_as_value(value)
    shape, dtype = cx.out_shape(), cx.out_dtype()
    if dtype == "int64" and isinstance(value, int) and abs(value) > 2**53:  # op.full's float64 attr would round it
        fill = cx.constant(np.asarray(value, np.int64))
        return op.broadcast_to(fill, shape) if shape else fill
    if dtype.startswith("float") and not _fits(value, dtype):  # op.full would make it inf
        raise Error(f"the fill value {value!r} does not fit {dtype}, the dtype of the result "
                    "(torch refuses it too: value cannot be converted without overflow)")
    return op.full(shape, float(value), dtype)


@aten("arange")
def _arange(cx: Any, a: Args) -> Any:
    value = cx.out()
    if not isinstance(value.shape[0], int):
        raise cx.unsupported("with a dynamic length")
    start = a.start if a.start is not None else 0
    step = a.step if a.step is not None else 1
    return cx.constant(np.arange(start, a.end, step).astype(cx.out_dtype()))


@aten("tril", "triu")
def _tri(cx: Any, a: Args) -> Any:
    x = a.self
    lower = cx.node.target._overloadpacket.__name__ == "tril"
    k = a.diagonal or 0
    # where above the diagonal (tril) / below it (triu), x becomes zero
    ones = op.ones(x.type.shape[-2:], "float32")
    dropped = op.triu(ones, k + 1) if lower else op.subtract(ones, op.triu(ones, k))
    return op.where(op.greater(dropped, 0.0), op.zeros_like(x), x)
