"""The activations of ``aj.from_torch``'s ATen op table that adjoint has no
op of its own for (see ``torch_ops`` for the conventions): clamp and the
hard activations, leaky_relu and prelu, the ELU family, softplus and what
is made of it (mish, log_sigmoid), each written with adjoint's elementwise
ops so that its values and its gradient are torch's. Where a branch that
``where`` drops could overflow (``exp`` of a large input), its input is
clipped first, so that the dropped branch's gradient is 0, not NaN.
"""

from __future__ import annotations

import math
from typing import Any

from .. import op
from .torch_ops import Args, _promoted, aten

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _clamp(x: Any, low: Any, high: Any) -> Any:
    """max(x, low) then min(., high), either bound None for none: with low >
    high every element is high, as in torch. The gradient passes at a bound
    (x == low), as torch's clamp's does."""
    if low is not None:
        x = op.maximum(x, low)
    return x if high is None else op.minimum(x, high)


def _hard_clamp(x: Any, low: float, high: float) -> Any:
    """x clipped to [low, high] as hardtanh clips it: the gradient is 0 at a
    bound too, where clamp's passes (torch's hardtanh, relu6, hardsigmoid
    and hardswish take x strictly inside as the linear part); NaN stays NaN,
    and with low > high every element is high, as clamp's."""
    x = op.where(op.less_equal(x, low), low, x)
    return op.where(op.greater_equal(x, high), high, x)


@aten("clamp", "clip", "clamp_min", "clamp_max")
def _clamp_op(cx: Any, a: Args) -> Any:
    # bounds are numbers or tensors (clamp.Tensor), None for none; all in torch's result dtype
    x, low, high = _promoted(cx, a.self, a.min, a.max, dtype=cx.out_dtype())
    return _clamp(x, low, high)


@aten("hardtanh")
def _hardtanh(cx: Any, a: Args) -> Any:
    return _hard_clamp(a.self, -1.0 if a.min_val is None else a.min_val, 1.0 if a.max_val is None else a.max_val)


@aten("relu6")
def _relu6(cx: Any, a: Args) -> Any:
    return _hard_clamp(a.self, 0.0, 6.0)


@aten("hardsigmoid")
def _hardsigmoid(cx: Any, a: Args) -> Any:
    return op.divide(_hard_clamp(op.add(a.self, 3.0), 0.0, 6.0), 6.0)


@aten("hardswish")
def _hardswish(cx: Any, a: Args) -> Any:
    x = a.self
    return op.multiply(x, op.divide(_hard_clamp(op.add(x, 3.0), 0.0, 6.0), 6.0))


@aten("leaky_relu")
def _leaky_relu(cx: Any, a: Args) -> Any:
    x = a.self
    slope = 0.01 if a.negative_slope is None else a.negative_slope
    return op.where(op.greater(x, 0.0), x, op.multiply(x, slope))


@aten("prelu", "_prelu_kernel")
def _prelu(cx: Any, a: Args) -> Any:
    x, w = a.self, a.weight
    if x.type.ndim >= 2 and w.type.ndim == 1 and w.type.shape[0] != 1:  # one slope per channel (axis 1)
        w = op.reshape(w, (w.type.shape[0],) + (1,) * (x.type.ndim - 2))
    return op.where(op.greater(x, 0.0), x, op.multiply(x, w))


def _elu(x: Any, alpha: float, scale: float, input_scale: float) -> Any:
    """scale * x for x > 0, else scale * alpha * (exp(input_scale * x) - 1)."""
    negative = op.minimum(x, 0.0)  # exp of the clipped input: no overflow in the branch dropped
    curve = op.multiply(op.subtract(op.exp(op.multiply(negative, input_scale)), 1.0), alpha * scale)
    return op.where(op.greater(x, 0.0), op.multiply(x, scale) if scale != 1 else x, curve)


@aten("elu")
def _elu_op(cx: Any, a: Args) -> Any:
    return _elu(a.self, *(1.0 if v is None else float(v) for v in (a.alpha, a.scale, a.input_scale)))


@aten("selu")
def _selu(cx: Any, a: Args) -> Any:
    return _elu(a.self, _SELU_ALPHA, _SELU_SCALE, 1.0)


@aten("celu")
def _celu(cx: Any, a: Args) -> Any:
    alpha = 1.0 if a.alpha is None else float(a.alpha)
    if alpha == 0:
        raise cx.unsupported("with alpha=0 (torch divides by it)")
    return _elu(a.self, alpha, 1.0, 1.0 / alpha)


def _softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    scaled = op.multiply(x, beta) if beta != 1 else x
    smooth = op.log1p(op.exp(op.minimum(scaled, threshold)))
    return op.where(op.greater(scaled, threshold), x, op.divide(smooth, beta) if beta != 1 else smooth)


@aten("softplus")
def _softplus_op(cx: Any, a: Args) -> Any:
    beta = 1.0 if a.beta is None else float(a.beta)
    threshold = 20.0 if a.threshold is None else float(a.threshold)
    if beta == 0 or not math.isfinite(beta):
        raise cx.unsupported(f"with beta={beta}")
    return _softplus(a.self, beta, threshold)


@aten("mish")
def _mish(cx: Any, a: Args) -> Any:
    x = a.self
    return op.multiply(x, op.tanh(_softplus(x)))


@aten("log_sigmoid")
def _log_sigmoid(cx: Any, a: Args) -> Any:
    x = a.self  # min(x, 0) - log(1 + exp(-|x|)): no overflow either way
    negative = op.less(x, 0.0)  # x = 0 counts as positive, so its gradient is torch's 1/2
    low = op.where(negative, x, 0.0)
    magnitude = op.where(negative, op.negative(x), x)
    return op.subtract(low, op.log1p(op.exp(op.negative(magnitude))))
