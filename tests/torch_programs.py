"""Runs an adjoint function under PyTorch, op by op, so that torch.autograd
can give reference gradients (test_properties.py). TORCH holds one torch
function per op, called with the concrete shape of the op's result, its
argument tensors and its attrs; shape-only ops just reshape or broadcast to
that shape. Where a function has no derivative (ties of maximum, abs at 0)
the torch function picks the one-sided derivative adjoint's VJP picks."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import adjoint as aj

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64,
          "bool": torch.bool}


def _reduce(f):
    def run(shape, x, axis=None, keepdims=False):
        dims = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in axis)
        if not dims:  # a rank-0 tensor, or no axes: nothing to reduce
            return torch.zeros_like(x) if f is _variance else x
        return f(x, dims, keepdims)

    return run


def _variance(x, dims, keepdims):
    return torch.var(x, dim=dims, correction=0, keepdim=keepdims)


def _split(shape, x, indices_or_sections, axis=0):
    length = x.shape[axis]
    if isinstance(indices_or_sections, int):
        return torch.split(x, length // indices_or_sections, dim=axis)
    bounds = [0, *indices_or_sections, length]
    return torch.split(x, [b - a for a, b in zip(bounds, bounds[1:])], dim=axis)


def _take(shape, x, indices, axis=0):
    axis %= x.ndim
    flat = indices.reshape(-1).long() % x.shape[axis]
    return x.index_select(axis, flat).reshape(shape)


def _collapse_sum_to(shape, x, shape_attr=None):
    lead = x.ndim - len(shape)
    x = x.sum(dim=tuple(range(lead))) if lead else x
    dims = tuple(i for i, d in enumerate(shape) if d == 1 and x.shape[i] != 1)
    return x.sum(dim=dims, keepdim=True) if dims else x


def _layer_norm(shape, x, gamma, beta, axes=(-1,), epsilon=1e-5):
    axes = [a % x.ndim for a in axes]
    mean = x.mean(dim=axes, keepdim=True)
    var = x.var(dim=axes, correction=0, keepdim=True)
    # gamma's dims are x's at `axes`, in that order: put them in x's order
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    at = [x.shape[d] if d in axes else 1 for d in range(x.ndim)]
    scale, shift = gamma.permute(order).reshape(at), beta.permute(order).reshape(at)
    return (x - mean) / torch.sqrt(var + epsilon) * scale + shift


def _cross_entropy(shape, logits, labels):
    per_row = -(labels * torch.log_softmax(logits, dim=-1)).sum(-1)
    return per_row.mean() if per_row.ndim else per_row


def _pads(padding):
    return [padding[0]] * 4 if len(padding) == 1 else list(padding) * 2 if len(padding) == 2 else list(padding)


def _conv2d(shape, x, w, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    top, left, bottom, right = _pads(padding)
    x = F.pad(x, (left, right, top, bottom))
    return F.conv2d(x, w, stride=list(strides) * (3 - len(strides)), dilation=list(dilation) * (3 - len(dilation)),
                    groups=groups)


def _pair(v):
    return list(v) * (3 - len(v))


def _max_pool2d(shape, x, pool_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    return F.max_pool2d(x, _pair(pool_size), _pair(strides), _pair(padding), _pair(dilation), ceil_mode=ceil_mode)


def _avg_pool2d(shape, x, pool_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), ceil_mode=False,
                count_include_pad=False):
    return F.avg_pool2d(x, _pair(pool_size), _pair(strides), _pair(padding), ceil_mode=ceil_mode,
                        count_include_pad=count_include_pad)


def _reshaped(shape, x, *args, **attrs):
    return x.reshape(shape)


def _filled(value):
    return lambda shape, shape_attr=None, dtype="float64", fill_value=value: torch.full(
        shape, fill_value, dtype=DTYPES[dtype])


def _filled_like(value):
    return lambda shape, x, dtype=None, fill_value=value: torch.full(
        shape, fill_value, dtype=DTYPES[dtype] if dtype else x.dtype)


def _permute(shape, x, axes=None):
    return x.permute(*(reversed(range(x.ndim)) if axes is None else axes))


def _strided_slice(shape, x, axes, begin, end, strides=None):
    """Python slices (negative steps too) as index_select of the slice's indices."""
    for i, a in enumerate(axes):
        step = strides[i] if strides else 1
        picked = range(*slice(begin[i], end[i], step).indices(x.shape[a]))
        x = torch.index_select(x, a, torch.tensor(list(picked), dtype=torch.long))
    return x


TORCH = {
    # binary (NumPy broadcasting, as torch's)
    "add": lambda s, a, b: a + b,
    "subtract": lambda s, a, b: a - b,
    "multiply": lambda s, a, b: a * b,
    "divide": lambda s, a, b: a / b,
    "power": lambda s, a, b: torch.pow(a, b),
    # at ties adjoint's VJPs give x1 the gradient (torch.maximum splits it)
    "maximum": lambda s, a, b: torch.where(a < b, b, a),
    "minimum": lambda s, a, b: torch.where(a > b, b, a),
    "equal": lambda s, a, b: a == b,
    "less": lambda s, a, b: a < b,
    "greater": lambda s, a, b: a > b,
    "not_equal": lambda s, a, b: a != b,
    "less_equal": lambda s, a, b: a <= b,
    "greater_equal": lambda s, a, b: a >= b,
    # unary
    "negative": lambda s, x: -x,
    "exp": lambda s, x: torch.exp(x),
    "log": lambda s, x: torch.log(x),
    "log1p": lambda s, x: torch.log1p(x),
    "sqrt": lambda s, x: torch.sqrt(x),
    "rsqrt": lambda s, x: torch.rsqrt(x),
    "sin": lambda s, x: torch.sin(x),
    "cos": lambda s, x: torch.cos(x),
    "tanh": lambda s, x: torch.tanh(x),
    "sigmoid": lambda s, x: torch.sigmoid(x),
    "relu": lambda s, x: torch.relu(x),
    "gelu": lambda s, x: F.gelu(x),
    "silu": lambda s, x: F.silu(x),
    "abs": lambda s, x: torch.where(x < 0, -x, x),  # slope 1 at 0, as adjoint's VJP (torch.abs: 0)
    "square": lambda s, x: torch.square(x),
    "erf": lambda s, x: torch.erf(x),
    "astype": lambda s, x, dtype: x != 0 if dtype == "bool" else x.to(DTYPES[dtype]),
    # linalg
    "matmul": lambda s, a, b, out_dtype=None: torch.matmul(a, b).to(DTYPES[out_dtype] if out_dtype else a.dtype),
    # manipulate
    "permute_dims": _permute,
    "reshape": _reshaped,
    "expand_dims": _reshaped,
    "squeeze": _reshaped,
    "broadcast_to": lambda s, x, shape_attr: torch.broadcast_to(x, s),
    "collapse_sum_to": _collapse_sum_to,
    "concat": lambda s, xs, axis=0: torch.cat(xs, dim=axis),
    "split": _split,
    "take": _take,
    "strided_slice": _strided_slice,
    "where": lambda s, c, a, b: torch.where(c, a, b),
    "cumsum": lambda s, x, axis=-1: torch.cumsum(x, dim=axis),
    "triu": lambda s, x, k=0: torch.triu(x, k),
    # reduce
    "sum": _reduce(lambda x, d, k: torch.sum(x, dim=d, keepdim=k)),
    "mean": _reduce(lambda x, d, k: torch.mean(x, dim=d, keepdim=k)),
    "max": _reduce(lambda x, d, k: torch.amax(x, dim=d, keepdim=k)),
    "min": _reduce(lambda x, d, k: torch.amin(x, dim=d, keepdim=k)),
    "variance": _reduce(_variance),
    # create
    "zeros": _filled(0.0),
    "ones": _filled(1.0),
    "full": _filled(None),
    "zeros_like": _filled_like(0.0),
    "ones_like": _filled_like(1.0),
    "full_like": _filled_like(None),
    # nn
    "softmax": lambda s, x, axis=-1: torch.softmax(x, dim=axis),
    "log_softmax": lambda s, x, axis=-1: torch.log_softmax(x, dim=axis),
    "layer_norm": _layer_norm,
    "cross_entropy_with_logits": _cross_entropy,
    "nll_loss": lambda s, p, t, reduction="mean", ignore_index=-100: F.nll_loss(
        p, t.long(), reduction=reduction, ignore_index=ignore_index),
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
}

# attrs that the table takes under another name (shape is the result's shape)
RENAMED = {"shape": "shape_attr"}


def run(fn: aj.Function, inputs: list[torch.Tensor], dims: dict[str, int]):
    """fn's result on `inputs` (torch tensors in param order), computed by torch
    ops (a tensor, or a tuple for a tuple), and the tensor of each bound var.
    Float tensors that depend on no input require grad all the same, so that
    torch.autograd.grad can take the target's gradient with respect to any."""
    env = dict(zip(fn.params, inputs))

    def concrete(t: aj.Type):
        return [d if isinstance(d, int) else aj.Dim(d).evaluate(dims) for d in t.shape] if t.is_tensor else None

    def value(e):
        if isinstance(e, aj.Var):
            return env[e]
        if isinstance(e, aj.Constant):
            return torch.from_numpy(np.array(e.data))
        if isinstance(e, aj.Tuple):
            return tuple(value(f) for f in e.fields)
        if isinstance(e, aj.TupleGetItem):
            return value(e.tuple)[e.index]
        attrs = {RENAMED.get(k, k): v for k, v in e.attrs.items()}
        out = TORCH[e.op](concrete(e.type), *(value(a) for a in e.args), **attrs)
        return out.to(DTYPES[e.type.dtype]) if e.type.is_tensor else out  # torch sums ints as int64

    for b in fn.bindings:
        v = value(b.value)
        if isinstance(v, torch.Tensor) and any(v is t for t in env.values()):
            v = v.view_as(v)  # a var of its own (x.to(x.dtype) and items of tuples are x itself)
        if isinstance(v, torch.Tensor) and v.is_floating_point() and not v.requires_grad:
            v.requires_grad_()
        env[b.var] = v
    return value(fn.ret), env
