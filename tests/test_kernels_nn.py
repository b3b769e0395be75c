"""CPU kernels of the reduce and nn op families against NumPy references
(and PyTorch's, where torch is installed): reductions over every axis
combination, softmaxes, layer_norm, the losses, conv2d and the pools."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import adjoint as aj
from conftest import run_op

RNG = np.random.default_rng(1234)
FLOATS = ["float32", "float64"]
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def randn(shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got), want, **TOL[dtype])


def all_axis_choices(ndim):
    """None, then every non-empty subset of axes, spelled once with negative axes."""
    yield None
    for k in range(1, ndim + 1):
        for axes in itertools.combinations(range(ndim), k):
            yield list(axes)
            yield [a - ndim for a in axes][::-1]


# ---- NumPy references ----


def ref_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def ref_log_softmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def ref_layer_norm(x, gamma, beta, axes, eps):
    axes = [a % x.ndim for a in axes]
    mean = x.mean(tuple(axes), keepdims=True)
    var = x.var(tuple(axes), keepdims=True)
    # gamma's dims follow `axes`; move them to x's order and broadcast.
    order = np.argsort(axes)
    shape = [x.shape[d] if d in axes else 1 for d in range(x.ndim)]
    g = np.transpose(gamma, order).reshape(shape)
    b = np.transpose(beta, order).reshape(shape)
    return (x - mean) / np.sqrt(var + eps) * g + b


def ref_cross_entropy(logits, labels):
    per_row = -(labels * ref_log_softmax(logits, -1)).sum(-1)
    return per_row.mean() if per_row.ndim else per_row


def ref_nll_loss(pred, targets, reduction, ignore_index):
    pred2, t = np.atleast_2d(pred), np.atleast_1d(targets)
    keep = t != ignore_index
    losses = np.where(keep, -pred2[np.arange(len(t)), np.where(keep, t, 0)], 0).astype(pred.dtype)
    if reduction == "none":
        return losses.reshape(np.shape(targets))
    if reduction == "sum":
        return losses.sum()
    with np.errstate(invalid="ignore"):
        return losses.sum() / keep.sum()


def pads4(padding):
    """(top, left, bottom, right) from 1, 2 or 4 ints."""
    if len(padding) == 4:
        return tuple(padding)
    return padding[0], padding[-1], padding[0], padding[-1]


def out_len(n, k, pad_lo, pad_hi, stride, dilation, ceil_mode=False):
    span = n + pad_lo + pad_hi - dilation * (k - 1) - 1
    steps = -(-span // stride) if ceil_mode else span // stride
    if ceil_mode and steps * stride >= n + pad_lo:
        steps -= 1
    return steps + 1


def windows(x, ksize, strides, padding, dilation, ceil_mode, fill, pad_fill):
    """x (N, C, H, W) padded, with each output pixel's taps: (N, C, OH, OW, KH, KW).
    Declared padding holds pad_fill; cells past it (ceil_mode) hold fill."""
    (kh, kw), (sh, sw), (dh, dw) = ksize, strides, dilation
    pt, pl, pb, pr = pads4(padding)
    n, c, h, w = x.shape
    oh = out_len(h, kh, pt, pb, sh, dh, ceil_mode)
    ow = out_len(w, kw, pl, pr, sw, dw, ceil_mode)
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + pt + pb))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + pl + pr))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=pad_fill)
    xp = np.pad(xp, ((0, 0), (0, 0), (0, extra_h), (0, extra_w)), constant_values=fill)
    taps = np.empty((n, c, oh, ow, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            taps[..., i, j] = xp[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                                 j * dw : j * dw + sw * (ow - 1) + 1 : sw]
    return taps


def ref_conv2d(x, w, strides, padding, dilation, groups):
    taps = windows(x, w.shape[2:], strides, padding, dilation, False, 0, 0)
    o, cg = w.shape[:2]
    og = o // groups
    out = [np.einsum("nchwij,ocij->nohw", taps[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og])
           for g in range(groups)]
    return np.concatenate(out, axis=1)


def ref_max_pool(x, size, strides, padding, dilation, ceil_mode):
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    return windows(x, size, strides, padding, dilation, ceil_mode, low, low).max(axis=(4, 5))


def ref_avg_pool(x, size, strides, padding, ceil_mode, count_include_pad):
    taps = windows(x, size, strides, padding, (1, 1), ceil_mode, 0, 0)
    ones = np.ones_like(x)
    counts = windows(ones, size, strides, padding, (1, 1), ceil_mode, 0, 1 if count_include_pad else 0)
    return taps.sum(axis=(4, 5)) / counts.sum(axis=(4, 5))


# ---- reductions ----

REDUCE_SHAPES = [(5,), (3, 4), (2, 1, 5), (3, 2, 4, 3)]


@pytest.mark.parametrize("shape", REDUCE_SHAPES)
@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64"])
def test_reductions_all_axes(shape, dtype):
    x = (randn(shape, "float64") * 10).astype(dtype)
    ops = {"sum": np.sum, "max": np.max, "min": np.min}
    if dtype in FLOATS:
        ops.update(mean=np.mean, variance=np.var)
    for axis, keepdims, (op, ref) in itertools.product(all_axis_choices(len(shape)), [False, True], ops.items()):
        got = run_op(op, x, axis=axis, keepdims=keepdims)
        want = ref(x, axis=None if axis is None else tuple(axis), keepdims=keepdims)
        if op == "sum":
            want = want.astype(dtype)
        assert got.dtype == x.dtype and got.shape == np.shape(want), (op, axis, keepdims)
        if dtype in FLOATS:
            close(got, want, dtype)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [[0], [1], None, [0, 1]])
def test_reductions_large_accurate(dtype, axis):
    """Pairwise sums keep float32 accurate over long rows and columns."""
    x = randn((300, 2000), dtype) + 1
    ax = None if axis is None else tuple(axis)
    for op, ref in [("sum", np.sum), ("mean", np.mean), ("variance", np.var)]:
        want = ref(x.astype(np.float64), axis=ax)
        np.testing.assert_allclose(run_op(op, x, axis=axis), want, rtol=2e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_reductions_random_shapes(seed):
    """Random shapes (zero-size dims included), axes and keepdims."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.choice([0, 1, 2, 3, 7, 33], size=rng.integers(1, 5)))
    dtype = FLOATS[seed % 2]
    x = rng.standard_normal(shape).astype(dtype)
    k = int(rng.integers(0, len(shape) + 1))
    axis = None if k == 0 else [int(a) - len(shape) * int(rng.integers(0, 2))
                                for a in rng.choice(len(shape), size=k, replace=False)]
    keepdims = bool(rng.integers(0, 2))
    ax = None if axis is None else tuple(axis)
    count = np.prod([shape[a] for a in (range(len(shape)) if ax is None else ax)])
    for op, ref in [("sum", np.sum), ("mean", np.mean), ("variance", np.var), ("max", np.max), ("min", np.min)]:
        if op in ("max", "min") and count == 0:
            with pytest.raises(aj.ExecutionError, match="zero-size"):
                run_op(op, x, axis=axis, keepdims=keepdims)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of nothing
            want = ref(x, axis=ax, keepdims=keepdims)
        got = run_op(op, x, axis=axis, keepdims=keepdims)
        assert got.shape == np.shape(want), (op, shape, axis, keepdims)
        close(got, want, dtype)


def test_int_sum_wraps_and_bool_sum_is_or():
    x = np.array([2**31 - 1, 1], dtype=np.int32)
    assert run_op("sum", x) == np.int32(-(2**31))
    b = np.array([[True, True], [False, False]])
    np.testing.assert_array_equal(run_op("sum", b, axis=[1]), [True, False])
    np.testing.assert_array_equal(run_op("sum", b, axis=[0]), [True, True])


def test_reductions_propagate_nan():
    x = randn((4, 6), "float32")
    x[1, 2] = np.nan
    x[3, 0] = np.nan
    for op, ref in [("max", np.max), ("min", np.min), ("sum", np.sum), ("mean", np.mean), ("variance", np.var)]:
        for axis in [None, [0], [1]]:
            want = ref(x, axis=None if axis is None else axis[0])
            np.testing.assert_array_equal(np.isnan(run_op(op, x, axis=axis)), np.isnan(want), err_msg=op)
    # NaN not in the first lane or the tail of a long row
    y = np.zeros(1000, np.float32)
    for pos in [0, 37, 999]:
        y[:] = 0
        y[pos] = np.nan
        assert np.isnan(run_op("max", y)) and np.isnan(run_op("min", y))


@pytest.mark.parametrize("shape,axis", [((0, 3), [0]), ((3, 0), [1]), ((0,), None), ((2, 0, 3), [1, 2])])
def test_zero_size_reductions(shape, axis):
    x = np.zeros(shape, np.float32)
    kept = np.sum(x, axis=None if axis is None else tuple(axis)).shape
    np.testing.assert_array_equal(run_op("sum", x, axis=axis), np.zeros(kept, np.float32))
    assert np.isnan(run_op("mean", x, axis=axis)).all()
    assert np.isnan(run_op("variance", x, axis=axis)).all()
    for op in ["max", "min"]:
        with pytest.raises(aj.ExecutionError, match=f"op '{op}'.*zero-size"):
            run_op(op, x, axis=axis)


def test_reduce_nonempty_output_of_empty_input():
    x = np.zeros((0, 3), np.float32)
    assert run_op("max", x, axis=[1]).shape == (0,)


# ---- softmax, log_softmax ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7,), (3, 130), (2, 3, 4), (2, 5, 3, 4)])
def test_softmax_all_axes(dtype, shape):
    x = randn(shape, dtype) * 5
    for axis in range(-len(shape), len(shape)):
        close(run_op("softmax", x, axis=axis), ref_softmax(x, axis), dtype)
        close(run_op("log_softmax", x, axis=axis), ref_log_softmax(x, axis), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_extremes(dtype, axis):
    x = randn((4, 40), dtype) * 3
    x[0] += 1e4  # stability: large logits
    x[1, ::3] = -np.inf  # masked entries get probability 0
    x[2, 5] = np.nan  # NaN spreads along the softmax axis only
    x[3] -= 200  # exp underflows for all but the max
    with np.errstate(invalid="ignore", over="ignore"):
        want, want_log = ref_softmax(x, axis), ref_log_softmax(x, axis)
    got, got_log = run_op("softmax", x, axis=axis), run_op("log_softmax", x, axis=axis)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_log, want_log, rtol=1e-5, atol=1e-4)


def test_softmax_exp_accuracy_over_range():
    """The vectorized exp across its whole range, through the row sum."""
    x = np.linspace(-100, 0, 4001, dtype=np.float32).reshape(1, -1)
    x = np.concatenate([x, x[:, ::-1]])
    np.testing.assert_allclose(run_op("softmax", x), ref_softmax(x.astype(np.float64), -1), rtol=5e-6, atol=1e-30)


# ---- layer_norm ----

LAYER_NORM_CASES = [
    ((4, 16), [-1]),
    ((512, 64), [1]),
    ((2, 3, 8), [-2, -1]),
    ((2, 3, 8), [0]),
    ((2, 3, 8), [1]),
    ((2, 3, 8), [0, 2]),
    ((2, 3, 8), [-1, -2]),
    ((3, 1, 5, 2), [3, 1]),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axes", LAYER_NORM_CASES)
def test_layer_norm(dtype, shape, axes):
    x = randn(shape, dtype) * 3 + 1
    pshape = tuple(shape[a] for a in axes)
    gamma, beta = randn(pshape, dtype), randn(pshape, dtype)
    for eps in [1e-5, 0.5]:
        got = run_op("layer_norm", x, gamma, beta, axes=axes, epsilon=eps)
        close(got, ref_layer_norm(x, gamma, beta, axes, eps), dtype)


# ---- losses ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(256, 10), (3, 70), (5,), (1, 1)])
def test_cross_entropy(dtype, shape):
    logits = randn(shape, dtype) * 3
    soft = np.exp(randn(shape, dtype))
    soft /= soft.sum(-1, keepdims=True)
    onehot = np.eye(shape[-1], dtype=dtype)[RNG.integers(0, shape[-1], shape[:-1])]
    for labels in [soft, onehot]:
        got = run_op("cross_entropy_with_logits", logits, labels)
        assert got.shape == ()
        close(got, ref_cross_entropy(logits, labels), dtype)


def test_cross_entropy_empty_batch_is_nan():
    assert np.isnan(run_op("cross_entropy_with_logits", np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tdtype", ["int32", "int64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_nll_loss(dtype, tdtype, reduction, ignore_index):
    pred = ref_log_softmax(randn((9, 5), dtype), -1)
    targets = RNG.integers(0, 5, 9).astype(tdtype)
    targets[[1, 4]] = 2
    got = run_op("nll_loss", pred, targets, reduction=reduction, ignore_index=ignore_index)
    close(got, ref_nll_loss(pred, targets, reduction, ignore_index), dtype)
    for t0 in [3, 2]:
        got0 = nll_loss_unbatched(pred[0], np.array([t0], tdtype), reduction=reduction, ignore_index=ignore_index)
        close(got0, ref_nll_loss(pred[0], np.array(t0), reduction, ignore_index), dtype)


def nll_loss_unbatched(pred, target1, **attrs):
    """nll_loss of predictions (c,) and a target () made in the graph, as
    sum(target1) of a (1,) array: the executor cannot take a 0-d input."""
    bb = aj.FunctionBuilder("main")
    p = bb.param("p", pred.shape, pred.dtype.name)
    t = bb.param("t", (1,), target1.dtype.name)
    return aj.build(bb.finish(aj.op.nll_loss(p, aj.op.sum(t), **attrs)))["main"](pred, target1)


def test_nll_loss_ignore_index_semantics():
    pred = np.log(np.full((3, 4), 0.25, np.float32))
    targets = np.array([-1, -1, 1])
    np.testing.assert_allclose(run_op("nll_loss", pred, targets, ignore_index=-1), np.log(4), rtol=1e-6)
    np.testing.assert_array_equal(
        run_op("nll_loss", pred, targets, reduction="none", ignore_index=-1), [0, 0, np.log(4, dtype=np.float32)]
    )
    assert np.isnan(run_op("nll_loss", pred, np.array([-1, -1, -1]), ignore_index=-1))
    assert run_op("nll_loss", pred, np.array([-1, -1, -1]), reduction="sum", ignore_index=-1) == 0


@pytest.mark.parametrize("bad", [4, -1, 1000])
def test_nll_loss_target_out_of_range_any_value(bad):
    pred = randn((3, 4))
    targets = np.array([0, bad, 1])
    with pytest.raises(aj.ExecutionError, match=rf"op 'nll_loss'.*target {bad} at index 1"):
        run_op("nll_loss", pred, targets)


# ---- conv2d ----

CONV_CASES = [
    # (N, C, H, W), (O, KH, KW), strides, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3), [1], [0], [1], 1),
    ((1, 2, 8, 8), (3, 3, 2), [2, 1], [1], [1], 1),
    ((2, 4, 9, 7), (6, 3, 3), [2], [1, 2], [2, 1], 2),
    ((1, 4, 6, 6), (4, 3, 3), [1], [2, 0, 1, 1], [1], 4),
    ((3, 3, 5, 5), (2, 1, 1), [1], [0], [1], 1),
    ((1, 2, 5, 5), (2, 1, 1), [2], [1], [1], 1),
    ((2, 6, 10, 9), (4, 2, 3), [3, 2], [1, 0, 2, 1], [2], 2),
    ((1, 1, 4, 4), (1, 5, 5), [1], [2], [1], 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dshape,wshape,strides,padding,dilation,groups", CONV_CASES)
def test_conv2d(dtype, dshape, wshape, strides, padding, dilation, groups):
    data = randn(dshape, dtype)
    o, kh, kw = wshape
    weight = randn((o, dshape[1] // groups, kh, kw), dtype)
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    got = run_op("conv2d", data, weight, **attrs)
    want = ref_conv2d(data, weight, strides * (3 - len(strides)), padding, dilation * (3 - len(dilation)), groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-11, atol=1e-4 if dtype == "float32" else 1e-11)


# ---- pools ----

POOL_CASES = [
    # (N, C, H, W), pool_size, strides, padding, dilation, ceil_mode
    ((2, 3, 6, 6), [2], [2], [0], [1], False),
    ((1, 2, 7, 7), [3], [2], [1], [1], False),
    ((1, 2, 7, 7), [3], [2], [1], [1], True),
    ((2, 1, 8, 5), [3, 2], [2, 1], [1, 0], [1], True),
    ((1, 2, 9, 8), [2, 3], [3, 2], [1, 0, 0, 1], [1], True),
    ((1, 1, 5, 5), [3], [1], [1], [1], False),
    ((1, 1, 6, 6), [2], [3], [1], [1], True),
]


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", POOL_CASES + [((1, 2, 9, 9), [3], [2], [2], [2], True)])
def test_max_pool2d(dtype, shape, size, strides, padding, dilation, ceil_mode):
    x = (randn(shape, "float64") * 10).astype(dtype)
    attrs = dict(strides=strides, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    got = run_op("max_pool2d", x, pool_size=size, **attrs)
    pair = lambda v: v * (3 - len(v))  # noqa: E731
    np.testing.assert_array_equal(got, ref_max_pool(x, pair(size), pair(strides), padding, pair(dilation), ceil_mode))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", POOL_CASES)
def test_avg_pool2d(dtype, count_include_pad, shape, size, strides, padding, dilation, ceil_mode):
    x = randn(shape, dtype)
    attrs = dict(strides=strides, padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    got = run_op("avg_pool2d", x, pool_size=size, **attrs)
    pair = lambda v: v * (3 - len(v))  # noqa: E731
    want = ref_avg_pool(x, pair(size), pair(strides), padding, ceil_mode, count_include_pad)
    close(got, want, dtype)


# Strides and dilations near 2**63 (a 1x1 window takes any dilation) and
# windows of more than 2**63 taps of padding: the kernels' tap ranges were
# rounded up in 64 bits and overflowed (a segfault, or wrong taps), and
# avg_pool2d's divisor overflowed to give inf.
HUGE = 2**63 - 1


def test_conv2d_strides_near_int64_max():
    data, weight = randn((1, 2, 5, 5)), randn((3, 2, 3, 3))
    attrs = dict(strides=[HUGE], padding=[0], dilation=[1], groups=1)
    want = ref_conv2d(data, weight, [1, 1], [0], [1, 1], 1)[:, :, :1, :1]
    close(run_op("conv2d", data, weight, **attrs), want, "float32")
    grad = randn((1, 3, 1, 1))
    want_data = np.zeros_like(data)
    want_data[:, :, :3, :3] = np.einsum("no,ocij->ncij", grad[:, :, 0, 0], weight)
    close(run_op("conv2d_backward_data", grad, weight, data_shape=data.shape, **attrs), want_data, "float32")
    want_weight = np.einsum("no,ncij->ocij", grad[:, :, 0, 0], data[:, :, :3, :3])
    close(run_op("conv2d_backward_weight", grad, data, weight_shape=weight.shape, **attrs), want_weight, "float32")


def test_one_tap_window_with_dilation_near_int64_max():
    x = randn((1, 2, 4, 5))
    got = run_op("max_pool2d", x, pool_size=[1], strides=[1], padding=[1], dilation=[HUGE])
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf))
    got = run_op("conv2d", x, np.ones((1, 2, 1, 1), np.float32), padding=[1], dilation=[HUGE])
    close(got, np.pad(x.sum(1, keepdims=True), ((0, 0), (0, 0), (1, 1), (1, 1))), "float32")


def test_avg_pool2d_window_of_more_than_int64_max_taps():
    x = np.ones((1, 1, 5, 5), np.float64)
    attrs = dict(pool_size=[2**62], strides=[1], padding=[2**61], count_include_pad=True)
    got = run_op("avg_pool2d", x, **attrs)  # 25 taps of x in a window of 2**124 taps
    np.testing.assert_allclose(got, np.full((1, 1, 6, 6), 25 / 2.0**124), rtol=1e-15)
    dx = run_op("avg_pool2d_backward", np.ones((1, 1, 6, 6)), x, **attrs)
    np.testing.assert_allclose(dx, np.full(x.shape, 36 / 2.0**124), rtol=1e-15)


def test_max_pool2d_propagates_nan():
    x = randn((1, 1, 4, 4))
    x[0, 0, 1, 1] = np.nan
    got = run_op("max_pool2d", x, pool_size=[2], strides=[2])
    np.testing.assert_array_equal(np.isnan(got[0, 0]), [[True, False], [False, False]])


# ---- symbolic dims ----


@pytest.mark.parametrize("op,attrs", [("log_softmax", {}), ("sum", {"axis": [0]}), ("max", {"axis": [-1]}),
                                      ("variance", {"axis": None})])
def test_symbolic_batch_two_sizes(op, attrs):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 10), "float32")
    f = aj.build(bb.finish(getattr(aj.op, op)(x, **attrs)))["main"]
    refs = {"log_softmax": lambda a: ref_log_softmax(a, -1), "sum": lambda a: a.sum(0),
            "max": lambda a: a.max(-1), "variance": np.var}
    for n in [3, 17]:
        a = randn((n, 10))
        close(f(a), refs[op](a), "float32")


def test_symbolic_batch_losses_and_layer_norm():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 10), "float32")
    t = bb.param("t", ("n",), "int64")
    g = bb.param("g", (10,), "float32")
    b = bb.param("b", (10,), "float32")
    y = aj.op.layer_norm(x, g, b)
    f = aj.build(bb.finish(aj.op.nll_loss(aj.op.log_softmax(y), t)))["main"]
    for n in [2, 9]:
        xa, ga, ba = randn((n, 10)), randn(10), randn(10)
        ta = RNG.integers(0, 10, n)
        want = ref_nll_loss(ref_log_softmax(ref_layer_norm(xa, ga, ba, [-1], 1e-5), -1), ta, "mean", -100)
        np.testing.assert_allclose(f(xa, ta, ga, ba), want, rtol=1e-5)


# ---- PyTorch, where installed ----


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dshape,wshape,strides,padding,dilation,groups", [c for c in CONV_CASES if len(c[3]) < 4])
def test_conv2d_vs_torch(torch, dshape, wshape, strides, padding, dilation, groups):
    data = randn(dshape, "float64")
    o, kh, kw = wshape
    weight = randn((o, dshape[1] // groups, kh, kw), "float64")
    got = run_op("conv2d", data, weight, strides=strides, padding=padding, dilation=dilation, groups=groups)
    want = torch.nn.functional.conv2d(torch.from_numpy(data), torch.from_numpy(weight), stride=strides,
                                      padding=padding, dilation=dilation, groups=groups)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", [c for c in POOL_CASES if len(c[3]) < 4])
def test_pools_vs_torch(torch, shape, size, strides, padding, dilation, ceil_mode):
    x = randn(shape, "float64")
    tx = torch.from_numpy(x)
    got = run_op("max_pool2d", x, pool_size=size, strides=strides, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    want = torch.nn.functional.max_pool2d(tx, size, strides, padding, dilation, ceil_mode=ceil_mode)
    np.testing.assert_array_equal(got, want.numpy())
    for include in [False, True]:
        got = run_op("avg_pool2d", x, pool_size=size, strides=strides, padding=padding, ceil_mode=ceil_mode,
                     count_include_pad=include)
        want = torch.nn.functional.avg_pool2d(tx, size, strides, padding, ceil_mode=ceil_mode,
                                              count_include_pad=include)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_layer_norm_and_nll_loss_vs_torch(torch):
    x, g, b = randn((6, 4, 8), "float64"), randn((4, 8), "float64"), randn((4, 8), "float64")
    got = run_op("layer_norm", x, g, b, axes=[-2, -1])
    tx, tg, tb = map(torch.from_numpy, (x, g, b))
    want = torch.nn.functional.layer_norm(tx, (4, 8), tg, tb)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)
    pred, t = randn((7, 5), "float64"), np.array([0, 4, -100, 2, 2, 1, -100])
    for reduction in ["mean", "sum", "none"]:
        want = torch.nn.functional.nll_loss(torch.from_numpy(pred), torch.from_numpy(t), reduction=reduction)
        np.testing.assert_allclose(run_op("nll_loss", pred, t, reduction=reduction), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("op, bad", [("nll_loss", 4), ("nll_loss", -2), ("nll_loss_backward", 4), ("nll_loss_backward", -2)])
def test_nll_loss_target_out_of_range(op, bad):
    pred, targets = np.zeros((3, 4), np.float32), np.array([0, bad, 1])
    args = [pred, targets] if op == "nll_loss" else [np.ones((), np.float32), pred, targets]
    with pytest.raises(aj.ExecutionError, match=rf"op '{op}': target {bad} at index 1 is out of range \[0, 4\)"):
        run_op(op, *args, reduction="mean", ignore_index=-100)
