"""The neural-network part of ``aj.from_torch``'s ATen op table (see
``torch_ops`` for the conventions): softmax, normalization, convolution,
pooling, embedding, losses and attention, each onto adjoint's nn ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import op
from .torch_ops import OPS, Args, _cast, _pair, _swap_last, aten

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # ATen's loss reduction enum


@aten("softmax", "_softmax")
def _softmax(cx: Any, a: Args) -> Any:
    return op.softmax(a.self, a.dim)


@aten("log_softmax", "_log_softmax")
def _log_softmax(cx: Any, a: Args) -> Any:
    return op.log_softmax(a.self, a.dim)


@aten("layer_norm")
def _layer_norm(cx: Any, a: Args) -> Any:
    x = a.input
    shape = tuple(a.normalized_shape)
    ones = cx.constant(np.ones(shape), like=x)
    gamma = a.weight if a.weight is not None else ones
    beta = a.bias if a.bias is not None else cx.constant(np.zeros(shape), like=x)
    return op.layer_norm(x, gamma, beta, list(range(-len(shape), 0)), a.eps)


@aten("batch_norm")
def _batch_norm(cx: Any, a: Args) -> Any:
    if a.training:  # a BatchNorm in training mode, or one without running statistics (track_running_stats=False)
        raise cx.unsupported("with batch statistics (training mode, or no running statistics)",
                             "import a BatchNorm that has running statistics in eval mode (module.eval())")
    x = a.input
    per_channel = (x.type.shape[1],) + (1,) * (x.type.ndim - 2)

    def channel(v: Any, default: float) -> Any:
        if v is None:
            return cx.constant(np.full(per_channel, default), like=x)
        return op.reshape(v, per_channel)

    # (x - mean) / sqrt(var + eps) * weight + bias, per channel (axis 1)
    scale = op.divide(channel(a.weight, 1.0), op.sqrt(op.add(channel(a.running_var, 1.0), a.eps)))
    return op.add(op.multiply(op.subtract(x, channel(a.running_mean, 0.0)), scale), channel(a.bias, 0.0))


def _per_channel(v: Any, x: Any) -> Any:
    """A (C,) weight or bias shaped to broadcast along x's axis 1."""
    return op.reshape(v, (x.type.shape[1],) + (1,) * (x.type.ndim - 2))


def _affine(x: Any, weight: Any, bias: Any) -> Any:
    """x * weight + bias per channel (axis 1), each left out when None."""
    if weight is not None:
        x = op.multiply(x, _per_channel(weight, x))
    return x if bias is None else op.add(x, _per_channel(bias, x))


def _static_dims(cx: Any, x: Any, dims: tuple, what: str) -> None:
    if not all(isinstance(d, int) for d in dims):
        raise cx.unsupported(f"with dynamic {what} {tuple(dims)}")


@aten("group_norm")
def _group_norm(cx: Any, a: Args) -> Any:
    x, groups = a.input, a.num_groups
    if x.type.ndim < 2:
        raise cx.unsupported(f"on a rank-{x.type.ndim} input")
    shape = x.type.shape
    _static_dims(cx, x, shape[1:], "channel and spatial dims")
    size = math.prod(shape[1:]) // groups  # the elements of one group of one sample
    grouped = op.reshape(x, (shape[0], groups, size))
    unit = cx.constant(np.ones(size), like=x), cx.constant(np.zeros(size), like=x)
    normalized = op.reshape(op.layer_norm(grouped, *unit, [-1], a.eps), shape)
    return _affine(normalized, a.weight, a.bias)


@aten("instance_norm")
def _instance_norm(cx: Any, a: Args) -> Any:
    x = a.input
    if x.type.ndim < 3:
        raise cx.unsupported(f"on a rank-{x.type.ndim} input (it takes N, C and spatial dims)")
    if not a.use_input_stats:  # running statistics, as BatchNorm in eval mode
        return _batch_norm(cx, Args(a, training=False))
    if a.running_mean is not None or a.running_var is not None:  # an update adjoint's pure functions cannot make
        raise cx.unsupported("in training mode with running statistics (torch updates them in place)",
                             "call module.eval() before importing")
    spatial = x.type.shape[2:]
    _static_dims(cx, x, spatial, "spatial dims")
    unit = cx.constant(np.ones(spatial), like=x), cx.constant(np.zeros(spatial), like=x)
    normalized = op.layer_norm(x, *unit, list(range(2, x.type.ndim)), a.eps)
    return _affine(normalized, a.weight, a.bias)


# -- convolution and pooling ------------------------------------------------------


def _require_nchw(cx: Any, x: Any) -> None:
    if x.type.ndim != 4:
        raise cx.unsupported(f"on a rank-{x.type.ndim} input (adjoint's 2-D ops take NCHW)")


@aten("conv2d")
def _conv2d(cx: Any, a: Args) -> Any:
    x, w = a.input, a.weight
    _require_nchw(cx, x)
    dilation = _pair(a.dilation)
    padding = a.padding
    if isinstance(padding, str):
        padding = _same_padding(cx, w, dilation) if padding == "same" else [0, 0]
    y = op.conv2d(x, w, _pair(a.stride), _pair(padding), dilation, a.groups)
    return y if a.bias is None else op.add(y, op.reshape(a.bias, (w.type.shape[0], 1, 1)))


@aten("conv1d")
def _conv1d(cx: Any, a: Args) -> Any:
    x, w = a.input, a.weight  # as a conv2d over a height of 1: (N, C, 1, L) by (O, C/groups, 1, K)
    if x.type.ndim != 3:
        raise cx.unsupported(f"on a rank-{x.type.ndim} input (it takes N, C, L)")
    dilation = [1, _single(a.dilation)]
    padding = a.padding
    if isinstance(padding, str):
        padding = _same_padding(cx, op.expand_dims(w, 2), dilation) if padding == "same" else [0, 0]
    else:
        padding = [0, _single(padding)]
    y = op.conv2d(op.expand_dims(x, 2), op.expand_dims(w, 2), [1, _single(a.stride)], padding, dilation, a.groups)
    y = op.squeeze(y, [2])
    return y if a.bias is None else op.add(y, op.reshape(a.bias, (w.type.shape[0], 1)))


def _single(v: Any) -> int:
    return v if isinstance(v, int) else v[0]


def _same_padding(cx: Any, w: Any, dilation: list[int]) -> list[int]:
    totals = [d * (k - 1) for d, k in zip(dilation, w.type.shape[2:])]
    if any(t % 2 for t in totals):
        raise cx.unsupported("with padding='same' that pads one side more than the other")
    return [t // 2 for t in totals]


@aten("max_pool2d")
def _max_pool2d(cx: Any, a: Args) -> Any:
    _require_nchw(cx, a.self)
    kernel = _pair(a.kernel_size)
    stride = _pair(a.stride) if a.stride else kernel
    return op.max_pool2d(a.self, kernel, stride, _pair(a.padding), _pair(a.dilation), bool(a.ceil_mode))


@aten("avg_pool2d")
def _avg_pool2d(cx: Any, a: Args) -> Any:
    _require_nchw(cx, a.self)
    if a.divisor_override is not None:
        raise cx.unsupported(f"with divisor_override={a.divisor_override}")
    kernel = _pair(a.kernel_size)
    stride = _pair(a.stride) if a.stride else kernel
    return op.avg_pool2d(a.self, kernel, stride, _pair(a.padding), [1, 1], bool(a.ceil_mode),
                         bool(a.count_include_pad))


@aten("adaptive_avg_pool2d")
def _adaptive_avg_pool2d(cx: Any, a: Args) -> Any:
    x = a.self
    _require_nchw(cx, x)
    sizes, outs = x.type.shape[2:], _pair(a.output_size)
    if list(outs) == [1, 1]:
        return op.mean(x, axis=[2, 3], keepdims=True)
    if not all(isinstance(s, int) and s % o == 0 for s, o in zip(sizes, outs)):
        raise cx.unsupported(f"from {tuple(sizes)} to {tuple(outs)} (only whole windows)")
    kernel = [s // o for s, o in zip(sizes, outs)]
    return op.avg_pool2d(x, kernel, kernel)


@aten("upsample_nearest2d")
def _upsample_nearest2d(cx: Any, a: Args) -> Any:
    x = a.input if a.input is not None else a.self  # .vec names it input, .default self
    _require_nchw(cx, x)
    scales = a.scale_factors or [a.scales_h, a.scales_w]  # torch picks its sources by them when given
    sizes, outs = x.type.shape[2:], cx.out_shape()[2:]
    if not all(isinstance(d, int) for d in (*sizes, *outs)):
        raise cx.unsupported(f"from {tuple(sizes)} to {tuple(outs)} (only static sizes)")
    for axis, size, out, scale in zip((2, 3), sizes, outs, scales):
        x = _nearest(cx, x, axis, _nearest_sources(size, out, scale))
    return x


def _nearest_sources(size: int, out: int, scale: float | None) -> list[int]:
    """The entry of ``size`` that each of ``out`` entries copies, as torch's
    nearest_idx picks it (in float32, by 1 / scale when a scale is given)."""
    if out == size:
        return list(range(out))
    if out == 2 * size:
        return [i // 2 for i in range(out)]
    step = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(size) / np.float32(out)
    return [min(int(np.floor(np.float32(i) * step)), size - 1) for i in range(out)]


def _nearest(cx: Any, x: Any, axis: int, sources: list[int]) -> Any:
    """x along ``axis`` made of the entries ``sources``: each entry repeated
    (x broadcast along a new axis after ``axis``) when that is what they
    are, a take otherwise."""
    shape, size, out = tuple(x.type.shape), x.type.shape[axis], len(sources)
    if sources == list(range(size)):
        return x
    factor = out // size if size else 0
    if factor * size != out or sources != [i // factor for i in range(out)]:
        return op.take(x, cx.constant(np.asarray(sources, np.int64)), axis=axis)
    spread = op.reshape(x, shape[:axis + 1] + (1,) + shape[axis + 1:])
    spread = op.broadcast_to(spread, shape[:axis + 1] + (factor,) + shape[axis + 1:])
    return op.reshape(spread, shape[:axis] + (out,) + shape[axis + 1:])


# -- embedding and losses --------------------------------------------------------


@aten("embedding")
def _embedding(cx: Any, a: Args) -> Any:
    if a.padding_idx is not None and a.padding_idx >= 0:
        raise cx.unsupported(f"with padding_idx={a.padding_idx} (its row gets no gradient in torch)")
    return op.take(a.weight, a.indices, axis=0)


def _nll(cx: Any, log_probs: Any, a: Args) -> Any:
    if a.weight is not None:
        raise cx.unsupported("with class weights")
    reduction = _REDUCTIONS[a.reduction]
    target = a.target
    if not target.type.dtype.startswith("int"):
        raise cx.unsupported("with class probabilities as targets (only class indices)")
    if log_probs.type.ndim <= 2:
        return op.nll_loss(log_probs, target, reduction, a.ignore_index)
    # (N, C, d1, ...) -> (N*d1*..., C): classes last, one row per target
    n = log_probs.type.ndim
    rows = op.reshape(op.permute_dims(log_probs, [0, *range(2, n), 1]), (_product(target.type.shape),
                                                                           log_probs.type.shape[1]))
    loss = op.nll_loss(rows, op.reshape(target, (_product(target.type.shape),)), reduction, a.ignore_index)
    return op.reshape(loss, target.type.shape) if reduction == "none" else loss


def _product(dims: tuple) -> int | str:
    ints = math.prod(d for d in dims if isinstance(d, int))
    syms = [f"({d})" for d in dims if not isinstance(d, int)]
    return ints if not syms else "*".join([str(ints), *syms])


@aten("nll_loss", "nll_loss_nd", "nll_loss2d")
def _nll_loss(cx: Any, a: Args) -> Any:
    return _nll(cx, a.self, a)


@aten("cross_entropy_loss")
def _cross_entropy(cx: Any, a: Args) -> Any:
    if a.label_smoothing:
        raise cx.unsupported(f"with label_smoothing={a.label_smoothing}")
    x = a.self
    return _nll(cx, op.log_softmax(x, 1 if x.type.ndim > 1 else 0), a)


# -- attention -------------------------------------------------------------------


@aten("scaled_dot_product_attention")
def _sdpa(cx: Any, a: Args) -> Any:
    q, k, v = a.query, a.key, a.value
    if a.dropout_p:
        raise cx.unsupported(f"with dropout_p={a.dropout_p}")
    if a.enable_gqa and q.type.shape[-3] != k.type.shape[-3]:
        raise cx.unsupported("with grouped-query attention (enable_gqa and fewer key heads)")
    width = q.type.shape[-1]
    if a.scale is None and not isinstance(width, int):
        raise cx.unsupported("with a dynamic head width and no scale")
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(width)
    scores = op.multiply(op.matmul(q, _swap_last(k)), scale)
    if a.is_causal:
        scores = _masked(cx, scores, _causal_keep(q.type.shape[-2], k.type.shape[-2]))
    mask = a.attn_mask
    if mask is None:
        return op.matmul(op.softmax(scores, -1), v)
    if mask.type.dtype == "bool":
        scores = _masked(cx, scores, mask)
    elif mask.type.dtype in ("float32", q.type.dtype):  # torch adds a float32 mask to float64 scores as float64
        scores = op.add(scores, _cast(mask, scores.type.dtype))
    else:
        raise cx.unsupported(f"with a {mask.type.dtype} attn_mask and {q.type.dtype} queries",
                             "give a bool mask, or a float mask of the queries' dtype")
    # torch's safe softmax: a query whose keys are all masked attends to nothing (zeros, not NaN)
    # (their scores become 0 before the softmax, so no NaN reaches the gradient either)
    none_kept = op.equal(op.max(scores, -1, True), cx.constant(np.asarray(-np.inf), like=scores))
    zero = cx.constant(np.zeros(()), like=scores)
    weights = op.where(none_kept, zero, op.softmax(op.where(none_kept, zero, scores), -1))
    return op.matmul(weights, v)


def _causal_keep(rows: Any, cols: Any) -> Any:
    """Bool (rows, cols): true on and below the diagonal, the keys a query may see."""
    ones = op.ones((rows, cols), "float32")
    return op.equal(op.triu(ones, 1), 0.0)


def _masked(cx: Any, scores: Any, keep: Any) -> Any:
    return op.where(keep, scores, cx.constant(np.asarray(-np.inf), like=scores))
