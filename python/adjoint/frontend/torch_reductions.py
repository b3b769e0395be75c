"""The reductions of ``aj.from_torch``'s ATen op table (see ``torch_ops``
for the conventions): sum, mean, amax/amin, any/all, cumsum, var/std,
logsumexp, vector norms, max/min and argmax/argmin. Where torch defines a
gradient at a tie or a zero (the index max returns, |x| at 0 in a norm),
the translation gives torch's.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import _core, op
from .torch_ops import OPS, Args, _axes, _cast, _reduced_dims, _wrapped, aten


def _no_dims(dim: Any) -> bool:
    """Whether a reduction's ``dim=`` is None or empty."""
    return dim is None or (not isinstance(dim, int) and len(dim) == 0)


def _reduction_axes(dim: Any, ndim: int) -> list[int] | None:
    """A reduction's ``dim=`` as adjoint's ``axis``: None (every axis) for
    None or [] (sum, mean, amax, var/std, logsumexp and the norms read [] so
    in torch), no axis of a 0-d tensor (whose dim 0 or -1 is itself)."""
    if _no_dims(dim):
        return None
    return _axes(dim, ndim) if ndim else []


def _reduce(fn: Callable) -> Callable:
    """sum or mean, over the dtype torch accumulates in: its ``dtype=``, or
    int64 for a bool or int input of sum."""

    def run(cx: Any, a: Args) -> Any:
        axis = _reduction_axes(a.dim, a.self.type.ndim)
        return fn(_cast(a.self, cx.out_dtype()), axis=axis, keepdims=bool(a.keepdim))

    return run


OPS["sum"] = _reduce(op.sum)
OPS["mean"] = _reduce(op.mean)


@aten("amax", "amin")
def _amax(cx: Any, a: Args) -> Any:
    x = a.self
    largest = cx.node.target._overloadpacket.__name__ == "amax"
    return _extreme(x, _reduction_axes(a.dim, x.type.ndim), bool(a.keepdim), largest)


@aten("any", "all")
def _any_all(cx: Any, a: Args) -> Any:
    x = a.self
    zero = cx.constant(np.zeros((), x.type.dtype))
    if a.dim is not None and _no_dims(a.dim):  # dim=[]: torch's any and all reduce no dim
        return op.not_equal(x, zero)
    # any: some entry is true; all: no entry is false. Counted, so that zero entries give torch's False and True
    is_any = cx.node.target._overloadpacket.__name__ == "any"
    counted = (op.not_equal if is_any else op.equal)(x, zero)
    count = op.sum(op.astype(counted, "int64"), axis=_reduction_axes(a.dim, x.type.ndim), keepdims=bool(a.keepdim))
    return op.greater(count, 0) if is_any else op.equal(count, 0)


@aten("cumsum")
def _cumsum(cx: Any, a: Args) -> Any:
    x = _cast(a.self, cx.out_dtype())  # an int or bool input sums in int64, as in torch
    return op.cumsum(x, axis=a.dim % x.type.ndim) if x.type.ndim else x


@aten("var", "std")
def _var_std(cx: Any, a: Args) -> Any:
    x = _cast(a.self, cx.out_dtype())
    axis = _reduction_axes(a.dim, x.type.ndim)
    keepdims = bool(a.keepdim)
    correction = a.correction if a.correction is not None else (0 if a.unbiased is False else 1)
    var = op.variance(x, axis=axis, keepdims=keepdims)
    if correction:  # the count minus the correction divides (none left: inf, as torch gives inf or nan)
        var = op.multiply(var, _bessel_factor(x, axis, keepdims, correction))
    if cx.node.target._overloadpacket.__name__ == "var":
        return var
    return _root_with_zero_gradient_at_zero(var, 2)  # torch's std has gradient 0 where it is 0


def _bessel_factor(x: Any, axis: list[int] | None, keepdims: bool, correction: float) -> Any:
    """n / (n - correction) for the count n of the reduced elements, inf
    where n <= correction; a number, or a tensor computed when run for
    dynamic dims."""
    dims = _reduced_dims(x, axis)
    if all(isinstance(d, int) for d in dims):
        n = math.prod(dims)
        return n / (n - correction) if n > correction else math.inf
    n = op.sum(op.ones_like(x), axis=axis, keepdims=keepdims)
    return op.where(op.greater(n, correction), op.divide(n, op.subtract(n, correction)), math.inf)


@aten("logsumexp")
def _logsumexp(cx: Any, a: Args) -> Any:
    x = _cast(a.self, cx.out_dtype())
    axis = _reduction_axes(a.dim, x.type.ndim)
    keepdims = bool(a.keepdim)
    if 0 in _reduced_dims(x, axis):  # the log of an empty sum, which max cannot shift
        return op.full(cx.out_shape(), -math.inf, x.type.dtype)
    top = op.max(x, axis=axis, keepdims=True)
    # an infinite max shifts by 0 instead: exp(x - inf) would be NaN, and torch gives -inf or inf there
    top = op.where(op.equal(op.abs(top), math.inf), op.zeros_like(top), top)
    total = op.log(op.sum(op.exp(op.subtract(x, top)), axis=axis, keepdims=keepdims))
    return op.add(total, top if keepdims else op.reshape(top, total.type.shape))


@aten("linalg_vector_norm", "norm")
def _vector_norm(cx: Any, a: Args) -> Any:
    x = _cast(a.self, cx.out_dtype())
    order = 2 if a.ord is None and a.p is None else (a.ord if a.ord is not None else a.p)
    if not isinstance(order, (int, float)) or isinstance(order, bool):
        raise cx.unsupported(f"with ord={order!r}")
    axis = _reduction_axes(a.dim, x.type.ndim)
    keepdims = bool(a.keepdim)
    if order == 0:
        return op.sum(op.astype(op.not_equal(x, 0.0), x.type.dtype), axis=axis, keepdims=keepdims)
    if order == 2:
        return _root_with_zero_gradient_at_zero(op.sum(op.square(x), axis=axis, keepdims=keepdims), 2)
    magnitude = _abs_with_zero_gradient_at_zero(x)
    if order == math.inf or order == -math.inf:
        return (op.max if order > 0 else op.min)(magnitude, axis=axis, keepdims=keepdims)
    if order == 1:
        return op.sum(magnitude, axis=axis, keepdims=keepdims)
    total = op.sum(op.power(magnitude, float(order)), axis=axis, keepdims=keepdims)
    return _root_with_zero_gradient_at_zero(total, order)


def _abs_with_zero_gradient_at_zero(x: Any) -> Any:
    """|x|, whose gradient at 0 is 0, torch's sign(0) (adjoint's abs passes
    the gradient unchanged there); also where |x| ** p (p < 1) has an
    infinite one, which ``where`` drops."""
    return op.where(op.equal(x, 0.0), op.zeros_like(x), op.abs(x))


def _root_with_zero_gradient_at_zero(total: Any, order: float) -> Any:
    """total ** (1 / order), whose gradient at a total of 0 is 0, as torch's
    norm gives for a zero vector (the root's own is inf there, and inf * 0
    NaN): the root reads 1 where the total is 0, and ``where`` drops it."""
    zero = op.equal(total, 0.0)
    safe = op.where(zero, op.ones_like(total), total)
    root = op.sqrt(safe) if order == 2 else op.power(safe, 1.0 / order)
    return op.where(zero, op.zeros_like(total), root)


@aten("max", "min")
def _max_min(cx: Any, a: Args) -> Any:
    largest = cx.node.target._overloadpacket.__name__ == "max"
    overload = cx.node.target._overloadname
    if overload == "other":  # torch.max(x, y): elementwise
        return (op.maximum if largest else op.minimum)(*_wrapped(cx, a.self, a.other))
    x = a.self
    if overload != "dim":
        return _extreme(x, None, False, largest)
    if x.type.ndim == 0:  # along dim 0 or -1 of a 0-d tensor: itself, at index 0
        return [x, _arg_extreme(x, 0, False, largest)]
    axis, keepdims = a.dim % x.type.ndim, bool(a.keepdim)
    index = _arg_extreme(x, axis, True, largest)
    if x.type.dtype == "bool":  # no gradient to route
        values = _extreme(x, [axis], keepdims, largest)
    else:  # the entry at the index, so that the gradient of a tie reaches it alone, as torch's
        picked = op.where(op.equal(_positions(x, axis), index), x, op.zeros_like(x))
        values = op.sum(picked, axis=[axis], keepdims=keepdims)
    return [values, index if keepdims else op.squeeze(index, [axis])]


@aten("argmax", "argmin")
def _argmax(cx: Any, a: Args) -> Any:
    x = a.self
    largest = cx.node.target._overloadpacket.__name__ == "argmax"
    if a.dim is not None:
        return _arg_extreme(x, a.dim % max(x.type.ndim, 1), bool(a.keepdim), largest)
    flat = op.reshape(x, (-1,)) if x.type.ndim != 1 else x  # the index into x flattened
    index = _arg_extreme(flat, 0, False, largest)
    return op.reshape(index, (1,) * x.type.ndim) if a.keepdim else index


def _extreme(x: Any, axis: list[int] | None, keepdims: bool, largest: bool) -> Any:
    """max (min) over ``axis``; of a bool x, any (all): the max (min) of 0s and 1s."""
    fn = op.max if largest else op.min
    if x.type.dtype == "bool":
        return op.astype(fn(op.astype(x, "int32"), axis=axis, keepdims=keepdims), "bool")
    return fn(x, axis=axis, keepdims=keepdims)


def _positions(x: Any, axis: int) -> Any:
    """int64 0, 1, ... along ``axis``, in x's shape."""
    return op.subtract(op.cumsum(op.ones_like(x, "int64"), axis=axis), 1)


def _arg_extreme(x: Any, axis: int, keepdims: bool, largest: bool) -> Any:
    """The int64 index of the first largest (smallest) entry along ``axis``,
    as torch gives it: the first NaN where there is one (torch's max is NaN
    there). 0 for a 0-d x."""
    if x.type.ndim == 0:
        return _core.Constant(np.asarray(0, np.int64), "int64")
    if x.type.dtype == "bool":
        x = op.astype(x, "int32")
    top = _extreme(x, [axis], True, largest)
    hit = op.equal(x, top)
    if x.type.dtype.startswith("float"):
        hit = op.where(op.not_equal(x, x), op.not_equal(x, x), hit)  # NaN: where torch's max is
    beyond = _core.Constant(np.asarray(np.iinfo(np.int64).max), "int64")
    return op.min(op.where(hit, _positions(x, axis), beyond), axis=[axis], keepdims=keepdims)
