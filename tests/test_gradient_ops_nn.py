"""Gradients of the reduce and nn op families: every VJP against central
finite differences in float64, table-driven over shapes, axes and attrs;
ties of max/min split evenly (an exact check); symbolic dims at two sizes;
the backward ops' own VJPs and errors; and PyTorch autograd (rtol 1e-7)
where torch is installed.

Each op's result y is wrapped as sum(y * w) with a random w, so the adjoint
reaching the op is not uniform."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import adjoint as aj
from adjoint.testing import check_gradients

RNG = np.random.default_rng(2024)
F = "float64"
FD = dict(delta=1e-6, rtol=1e-5, atol=1e-7)


def rand(*shape):
    return RNG.standard_normal(shape)


def concrete(shape, n):
    return tuple(n if d == "n" else d for d in shape)


def op_module(op, specs, **attrs):
    """main(a0, a1, ..., w) = sum(op(a0, a1, ...) * w), w of the result's dtype.
    specs: (shape, dtype) per arg; shapes may hold the symbol "n". Returns the
    module and w's shape."""
    with aj.FunctionBuilder("main") as bb:
        params = [bb.param(f"a{i}", shape, dtype) for i, (shape, dtype) in enumerate(specs)]
        y = getattr(aj.op, op)(*params, **attrs)
        w_shape = tuple(y.type.shape)
        w = bb.param("w", w_shape, y.type.dtype)
        return bb.finish(aj.op.sum(y * w)), w_shape


def check_op(op, args, simplify=True, **attrs):
    """Finite-difference check of op's VJP at the given arrays (ints get no
    gradient); the adjoint module must verify. Returns the analytic grads."""
    mod, w_shape = op_module(op, [(a.shape, a.dtype.name) for a in args], **attrs)
    aj.analysis.verify(aj.transform.Gradient(simplify=simplify)(mod))
    return check_gradients(mod, "main", list(args) + [rand(*w_shape)], simplify=simplify, **FD)


def adjoint_of(mod, inputs):
    """(result, grads) of main_adjoint on inputs."""
    return aj.build(aj.transform.Gradient()(mod))["main_adjoint"](*inputs)


# ---- reductions ----

REDUCE_OPS = ["sum", "mean", "max", "min", "variance"]


def axis_choices(ndim):
    """None, then every non-empty subset of axes, also spelled negative and reversed."""
    yield None
    for k in range(1, ndim + 1):
        for axes in itertools.combinations(range(ndim), k):
            yield list(axes)
            yield [a - ndim for a in axes][::-1]


REDUCE_CASES = [((), None), ((5,), None), ((5,), [0]), ((5,), [-1])]
REDUCE_CASES += [((3, 4), axes) for axes in axis_choices(2)]
REDUCE_CASES += [((2, 3, 4), axes) for axes in axis_choices(3) if axes is None or len(axes) < 3 or axes[0] == 0]


def random_reduce_cases(count, seed=5):
    """Random shapes of rank 1-4 with a random subset of axes (or None)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        shape = tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 5)))
        mask = rng.random(len(shape)) < 0.5
        axes = [int(a) - (len(shape) if rng.random() < 0.5 else 0) for a in np.flatnonzero(mask)]
        yield shape, (axes or None)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", REDUCE_CASES + list(random_reduce_cases(6)))
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce(op, shape, axis, keepdims):
    check_op(op, [rand(*shape)], axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_empty_axis_list_is_identity(op):
    x = rand(3, 4)
    mod, _ = op_module(op, [((3, 4), F)], axis=[])
    w = rand(3, 4)
    _, (gx, _) = adjoint_of(mod, [x, w])
    want = {"sum": w, "mean": w, "max": w, "min": w, "variance": np.zeros_like(w)}[op]
    np.testing.assert_allclose(gx, want, rtol=1e-15)


TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, 5.0, 1.0, -1.0]])


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, [1], [0], [-1, 0]])
@pytest.mark.parametrize("op", ["max", "min"])
def test_extremum_ties_split_evenly(op, axis, keepdims):
    x = TIES if op == "max" else -TIES
    mod, w_shape = op_module(op, [(x.shape, F)], axis=axis, keepdims=keepdims)
    w = rand(*w_shape)
    _, (gx, _) = adjoint_of(mod, [x, w])
    ax = None if axis is None else tuple(axis)
    best = x.max(ax, keepdims=True) if op == "max" else x.min(ax, keepdims=True)
    mask = (x == best).astype(F)
    want = mask / mask.sum(ax, keepdims=True) * w.reshape(best.shape)
    np.testing.assert_allclose(gx, want, rtol=1e-15, atol=0)


# ---- softmax, log_softmax ----


@pytest.mark.parametrize("shape,axis", [((5,), -1), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                        ((2, 3, 4), 0), ((1, 1), 0)])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmaxes(op, shape, axis):
    check_op(op, [rand(*shape)], axis=axis)


# ---- layer_norm ----

LAYER_NORM_CASES = [
    ((4, 6), [-1]),
    ((2, 3, 4), [-1]),
    ((2, 3, 4), [1, 2]),
    ((2, 3, 4), [-2, -1]),
    ((2, 3, 4), [0]),  # leading
    ((2, 3, 4), [1]),  # middle
    ((2, 3, 4), [0, 2]),  # not contiguous
    ((2, 3, 4), [2, 0]),  # not contiguous, not ascending
    ((2, 3, 4), [2, 1]),  # trailing, not ascending
    ((2, 3, 4), [0, 1, 2]),
    ((2, 3, 2, 3), [1, 3]),
]


@pytest.mark.parametrize("shape,axes", LAYER_NORM_CASES)
def test_layer_norm(shape, axes):
    pshape = tuple(shape[a] for a in axes)
    check_op("layer_norm", [rand(*shape), 1 + 0.3 * rand(*pshape), rand(*pshape)], axes=axes, epsilon=1e-5)


# ---- losses ----


@pytest.mark.parametrize("shape", [(5,), (3, 5), (1, 2)])
def test_cross_entropy(shape):
    check_op("cross_entropy_with_logits", [rand(*shape), rand(*shape)])


def nll_targets(rows, classes, tdtype, ignore_index):
    t = RNG.integers(0, classes, rows).astype(tdtype)
    if ignore_index in range(classes) and rows > 1:
        t[0] = ignore_index
    return t


@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("tdtype", ["int64", "int32"])
@pytest.mark.parametrize("rows", [None, 1, 6])
def test_nll_loss(rows, tdtype, reduction, ignore_index):
    c = 4
    if rows is None:  # unbatched
        pred, t = rand(c), np.array(1, dtype=tdtype)
    else:
        pred, t = rand(rows, c), nll_targets(rows, c, tdtype, ignore_index)
    grads = check_op("nll_loss", [pred, t], reduction=reduction, ignore_index=ignore_index)
    assert len(grads) == 2  # predictions and w: targets are ints


def test_nll_loss_ignored_rows_get_zero_gradient():
    pred, t = rand(4, 3), np.array([2, 1, 2, 0])
    mod, _ = op_module("nll_loss", [((4, 3), F), ((4,), "int64")], ignore_index=2)
    _, (gp, _) = adjoint_of(mod, [pred, t, np.array(1.0)])
    want = np.zeros((4, 3))
    want[1, 1] = want[3, 0] = -0.5
    np.testing.assert_allclose(gp, want, rtol=1e-15)


# ---- conv2d ----

CONV_CASES = [
    # data, weight, strides, padding, dilation, groups
    ((1, 2, 5, 5), (3, 2, 3, 3), [1], [0], [1], 1),
    ((2, 2, 6, 5), (4, 2, 3, 2), [2], [1], [1], 1),
    ((1, 2, 7, 7), (2, 2, 3, 3), [2, 1], [1, 2], [2], 1),
    ((1, 1, 6, 6), (1, 1, 3, 3), [2], [0], [1], 1),  # the last row and column are never read
    ((2, 4, 5, 5), (6, 2, 3, 3), [1], [1], [1], 2),
    ((1, 4, 4, 4), (4, 1, 2, 2), [2], [0, 1, 1, 0], [1], 4),  # depthwise, asymmetric padding
    ((2, 3, 4, 4), (5, 3, 1, 1), [1], [0], [1], 1),  # 1x1: no im2col
    ((1, 2, 6, 6), (2, 2, 1, 1), [2], [0], [1], 1),
    ((1, 2, 6, 7), (4, 1, 2, 3), [1, 2], [2, 1], [2, 1], 2),
]


@pytest.mark.parametrize("dshape,wshape,strides,padding,dilation,groups", CONV_CASES)
def test_conv2d(dshape, wshape, strides, padding, dilation, groups):
    check_op("conv2d", [rand(*dshape), rand(*wshape)], strides=strides, padding=padding, dilation=dilation,
             groups=groups)


# ---- pools ----

POOL_CASES = [
    # x, pool_size, strides, padding, dilation, ceil_mode
    ((2, 2, 6, 6), [2], [2], [0], [1], False),
    ((1, 2, 7, 7), [3], [2], [1], [1], False),
    ((1, 2, 7, 7), [3], [2], [1], [1], True),
    ((2, 1, 8, 5), [3, 2], [2, 1], [1, 0], [1], True),
    ((1, 2, 9, 8), [2, 3], [3, 2], [1, 0, 0, 1], [1], True),
    ((1, 1, 5, 5), [3], [1], [1], [1], False),  # overlapping windows
    ((1, 1, 6, 6), [2], [3], [1], [1], True),
    ((1, 1, 9, 9), [3], [2], [2], [2], True),
]


@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", POOL_CASES)
def test_max_pool2d(shape, size, strides, padding, dilation, ceil_mode):
    check_op("max_pool2d", [rand(*shape)], pool_size=size, strides=strides, padding=padding, dilation=dilation,
             ceil_mode=ceil_mode)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", POOL_CASES)
def test_avg_pool2d(shape, size, strides, padding, dilation, ceil_mode, count_include_pad):
    check_op("avg_pool2d", [rand(*shape)], pool_size=size, strides=strides, padding=padding, dilation=dilation,
             ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def test_max_pool2d_tie_goes_to_first_max():
    x = np.array([[[[1.0, 3.0], [3.0, 0.0]]]])
    mod, _ = op_module("max_pool2d", [((1, 1, 2, 2), F)], pool_size=[2])
    _, (gx, _) = adjoint_of(mod, [x, np.full((1, 1, 1, 1), 2.0)])
    np.testing.assert_array_equal(gx, [[[[0.0, 2.0], [0.0, 0.0]]]])


# ---- without simplification ----

RAW_CASES = [
    ("sum", [(3, 4)], dict(axis=[1])),
    ("mean", [(3, 4)], dict(axis=[0], keepdims=True)),
    ("max", [(3, 4)], dict(axis=[1])),
    ("variance", [(2, 3, 4)], dict(axis=[0, 2])),
    ("softmax", [(3, 4)], dict(axis=0)),
    ("log_softmax", [(3, 4)], dict()),
    ("layer_norm", [(2, 3, 4), (4, 2), (4, 2)], dict(axes=[2, 0])),
    ("cross_entropy_with_logits", [(3, 4), (3, 4)], dict()),
    ("conv2d", [(1, 2, 5, 5), (2, 1, 3, 3)], dict(strides=[2], padding=[1], groups=2)),
    ("max_pool2d", [(1, 2, 5, 5)], dict(pool_size=[2], ceil_mode=True)),
    ("avg_pool2d", [(1, 2, 5, 5)], dict(pool_size=[3], padding=[1])),
]


@pytest.mark.parametrize("op,shapes,attrs", RAW_CASES, ids=[c[0] for c in RAW_CASES])
def test_unsimplified_adjoints(op, shapes, attrs):
    check_op(op, [rand(*s) for s in shapes], simplify=False, **attrs)


@pytest.mark.parametrize("op,shapes,attrs", RAW_CASES, ids=[c[0] for c in RAW_CASES])
def test_float32_adjoints_match_float64(op, shapes, attrs):
    arrays = [rand(*s) for s in shapes]
    mod64, w_shape = op_module(op, [(s, F) for s in shapes], **attrs)
    mod32, _ = op_module(op, [(s, "float32") for s in shapes], **attrs)
    inputs = arrays + [rand(*w_shape)]
    _, grads64 = adjoint_of(mod64, inputs)
    _, grads32 = adjoint_of(mod32, [a.astype("float32") for a in inputs])
    for g32, g64 in zip(grads32, grads64):
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4)


# ---- the backward ops: their VJPs, their errors ----


def test_conv2d_backward_ops_vjps():
    attrs = dict(strides=[2, 1], padding=[1], dilation=[1, 2], groups=2)
    d, w = (2, 4, 6, 7), (6, 2, 3, 2)
    with aj.FunctionBuilder("main") as bb:
        out_shape = aj.op.conv2d(bb.param("data", d, F), bb.param("weight", w, F), **attrs).type.shape
    check_op("conv2d_backward_data", [rand(*out_shape), rand(*w)], data_shape=d, **attrs)
    check_op("conv2d_backward_weight", [rand(*out_shape), rand(*d)], weight_shape=w, **attrs)


@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_backward_vjp(count_include_pad):
    attrs = dict(pool_size=[3], strides=[2], padding=[1], ceil_mode=True, count_include_pad=count_include_pad)
    check_op("avg_pool2d_backward", [rand(2, 1, 4, 4), rand(2, 1, 7, 7)], **attrs)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_backward_vjp(reduction):
    g = rand(5) if reduction == "none" else rand()
    grads = check_op("nll_loss_backward", [np.asarray(g), rand(5, 3), np.array([0, 2, 1, 2, 2])], reduction=reduction,
                     ignore_index=1)
    np.testing.assert_array_equal(grads[1], 0)  # the result does not depend on predictions' values


BACKWARD_TYPE_ERRORS = [
    ("conv2d_backward_data.*output_grad", lambda g, w, p: aj.op.conv2d_backward_data(g, w, data_shape=(1, 2, 5, 5))),
    ("conv2d_backward_data.*data_shape", lambda g, w, p: aj.op.conv2d_backward_data(g, w, data_shape=(2, 6, 6))),
    ("conv2d_backward_weight.*weight_shape",
     lambda g, w, p: aj.op.conv2d_backward_weight(g, p("d", (1, 2, 6, 6), F), weight_shape=(3, 2, 3))),
    ("max_pool2d_backward.*output_grad", lambda g, w, p: aj.op.max_pool2d_backward(g, p("x", (1, 3, 6, 6), F), pool_size=[2])),
    ("avg_pool2d_backward.*float",
     lambda g, w, p: aj.op.avg_pool2d_backward(g, p("xi", (1, 3, 8, 8), "int32"), pool_size=[2])),
    ("nll_loss_backward.*output_grad",
     lambda g, w, p: aj.op.nll_loss_backward(p("s", (3,), F), p("p", (3, 4), F), p("t", (3,), "int64"))),
]


@pytest.mark.parametrize("message, call", BACKWARD_TYPE_ERRORS, ids=[m.split(".")[0] for m, _ in BACKWARD_TYPE_ERRORS])
def test_backward_op_type_errors_name_the_op(message, call):
    # each in a builder of its own: an op error abandons its builder
    with pytest.raises(aj.TypeInferenceError, match=message):
        with aj.FunctionBuilder("main") as bb:
            g, w = bb.param("g", (1, 3, 4, 4), F), bb.param("w", (3, 2, 3, 3), F)
            call(g, w, bb.param)


def test_nll_loss_backward_bad_target_is_an_execution_error():
    mod, _ = op_module("nll_loss", [((2, 3), F), ((2,), "int64")])
    exe = aj.build(aj.transform.Gradient()(mod))
    with pytest.raises(aj.ExecutionError, match="nll_loss"):
        exe["main_adjoint"](rand(2, 3), np.array([0, 3]), np.array(1.0))


# ---- symbolic dims ----

SYMBOLIC_CASES = [
    ("sum", [("n", 5)], dict(axis=[0])),
    ("sum", [("n", 5)], dict(axis=[1], keepdims=True)),
    ("mean", [("n", 5)], dict(axis=[0])),
    ("mean", [("n", 5)], dict()),
    ("max", [("n", 5)], dict(axis=[1])),
    ("min", [("n", 5)], dict(axis=None, keepdims=True)),
    ("variance", [("n", 5)], dict(axis=[0])),
    ("variance", [("n", 5)], dict(axis=[1])),
    ("softmax", [("n", 5)], dict(axis=0)),
    ("log_softmax", [("n", 5)], dict(axis=-1)),
    ("layer_norm", [("n", 4, 3), ("n",), ("n",)], dict(axes=[0])),
    ("layer_norm", [("n", 5), (5,), (5,)], dict(axes=[-1])),
    ("cross_entropy_with_logits", [("n", 5), ("n", 5)], dict()),
    ("conv2d", [("n", 2, 5, 5), (3, 2, 3, 3)], dict(padding=[1])),
    ("max_pool2d", [("n", 2, 4, 4)], dict(pool_size=[2], strides=[2])),
    ("avg_pool2d", [("n", 2, 5, 5)], dict(pool_size=[3], padding=[1])),
]


@pytest.mark.parametrize("op,shapes,attrs", SYMBOLIC_CASES, ids=[c[0] for c in SYMBOLIC_CASES])
def test_symbolic_dims(op, shapes, attrs):
    mod, w_shape = op_module(op, [(s, F) for s in shapes], **attrs)
    out = aj.transform.Gradient()(mod)
    aj.analysis.verify(out)
    assert '"n"' in out["main_adjoint"].script()
    for n in (2, 5):
        inputs = [rand(*concrete(s, n)) for s in shapes] + [rand(*concrete(w_shape, n))]
        check_gradients(mod, "main", inputs, **FD)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_symbolic_nll_loss(reduction):
    mod, w_shape = op_module("nll_loss", [(("n", 4), F), (("n",), "int64")], reduction=reduction, ignore_index=0)
    for n in (3, 6):
        inputs = [rand(n, 4), RNG.integers(0, 4, n), rand(*concrete(w_shape, n))]
        inputs[1][0] = 1  # at least one target counts
        check_gradients(mod, "main", inputs, **FD)


# ---- PyTorch autograd, where installed ----


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def compare_torch(torch, op, arrays, torch_fn, **attrs):
    """op's result and grads (within sum(y * w)) against torch_fn's under autograd, rtol 1e-7."""
    mod, w_shape = op_module(op, [(a.shape, a.dtype.name) for a in arrays], **attrs)
    inputs = list(arrays) + [rand(*w_shape)]
    result, grads = adjoint_of(mod, inputs)
    tin = [torch.tensor(a, requires_grad=a.dtype == np.float64) for a in inputs]
    loss = (torch_fn(*tin[:-1]) * tin[-1]).sum()
    loss.backward()
    np.testing.assert_allclose(result, loss.detach().numpy(), rtol=1e-7)
    want = [t.grad.numpy() for t in tin if t.requires_grad]
    assert len(grads) == len(want)
    for g, t in zip(grads, want):
        np.testing.assert_allclose(g, t, rtol=1e-7, atol=1e-12)


def torch_reduce(torch, op, axis, keepdims):
    def fn(x):
        dims = tuple(range(x.ndim)) if axis is None else tuple(axis)
        if op == "variance":
            return torch.var(x, dim=dims, correction=0, keepdim=keepdims)
        f = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin}[op]
        return f(x, dim=dims, keepdim=keepdims)

    return fn


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, [0], [-1], [0, 2], [2, 1]])
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_vs_torch(torch, op, axis, keepdims):
    x = np.round(rand(3, 4, 5), 1)  # ties for max and min: torch's amax/amin split them evenly too
    compare_torch(torch, op, [x], torch_reduce(torch, op, axis, keepdims), axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmaxes_vs_torch(torch, op, axis):
    f = getattr(torch, op)
    compare_torch(torch, op, [rand(3, 4, 5)], lambda x: f(x, dim=axis), axis=axis)


def torch_layer_norm(torch, axes, eps):
    def fn(x, g, b):
        ax = [a % x.ndim for a in axes]
        if ax == list(range(x.ndim - len(ax), x.ndim)):
            return torch.nn.functional.layer_norm(x, g.shape, g, b, eps)
        mean = x.mean(dim=ax, keepdim=True)
        var = x.var(dim=ax, correction=0, keepdim=True)
        order = [int(i) for i in np.argsort(ax)]
        shape = [x.shape[d] if d in ax else 1 for d in range(x.ndim)]
        return (x - mean) / torch.sqrt(var + eps) * g.permute(order).reshape(shape) + b.permute(order).reshape(shape)

    return fn


@pytest.mark.parametrize("shape,axes", LAYER_NORM_CASES)
def test_layer_norm_vs_torch(torch, shape, axes):
    pshape = tuple(shape[a] for a in axes)
    args = [rand(*shape), 1 + 0.3 * rand(*pshape), rand(*pshape)]
    compare_torch(torch, "layer_norm", args, torch_layer_norm(torch, axes, 1e-5), axes=axes, epsilon=1e-5)


@pytest.mark.parametrize("shape", [(5,), (3, 5)])
def test_cross_entropy_vs_torch(torch, shape):
    def fn(logits, labels):
        per_row = -(labels * torch.log_softmax(logits, dim=-1)).sum(-1)
        return per_row.mean() if per_row.ndim else per_row

    compare_torch(torch, "cross_entropy_with_logits", [rand(*shape), rand(*shape)], fn)


@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_vs_torch(torch, reduction, ignore_index):
    pred, t = rand(6, 4), nll_targets(6, 4, "int64", ignore_index)

    def fn(p, targets):
        return torch.nn.functional.nll_loss(p, targets, reduction=reduction, ignore_index=ignore_index)

    compare_torch(torch, "nll_loss", [pred, t], fn, reduction=reduction, ignore_index=ignore_index)


@pytest.mark.parametrize("dshape,wshape,strides,padding,dilation,groups", [c for c in CONV_CASES if len(c[3]) < 4])
def test_conv2d_vs_torch(torch, dshape, wshape, strides, padding, dilation, groups):
    def fn(x, w):
        return torch.nn.functional.conv2d(x, w, stride=strides, padding=padding, dilation=dilation, groups=groups)

    compare_torch(torch, "conv2d", [rand(*dshape), rand(*wshape)], fn, strides=strides, padding=padding,
                  dilation=dilation, groups=groups)


# PyTorch takes symmetric padding of at most half the window.
TORCH_POOL_CASES = [c for c in POOL_CASES if len(c[3]) < 4 and 2 * max(c[3]) <= min(c[1])]


@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode", TORCH_POOL_CASES)
def test_max_pool2d_vs_torch(torch, shape, size, strides, padding, dilation, ceil_mode):
    def fn(x):
        return torch.nn.functional.max_pool2d(x, size, strides, padding, dilation, ceil_mode=ceil_mode)

    compare_torch(torch, "max_pool2d", [rand(*shape)], fn, pool_size=size, strides=strides, padding=padding,
                  dilation=dilation, ceil_mode=ceil_mode)


def test_max_pool2d_ties_vs_torch(torch):
    x = np.round(rand(1, 2, 6, 6)).clip(-1, 1)  # many ties: both route to the first maximum
    compare_torch(torch, "max_pool2d", [x], lambda t: torch.nn.functional.max_pool2d(t, 3, 1, 1), pool_size=[3],
                  padding=[1])


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("shape,size,strides,padding,dilation,ceil_mode",
                         [c for c in TORCH_POOL_CASES if c[4] == [1]])
def test_avg_pool2d_vs_torch(torch, shape, size, strides, padding, dilation, ceil_mode, count_include_pad):
    def fn(x):
        return torch.nn.functional.avg_pool2d(x, size, strides, padding, ceil_mode=ceil_mode,
                                              count_include_pad=count_include_pad)

    compare_torch(torch, "avg_pool2d", [rand(*shape)], fn, pool_size=size, strides=strides, padding=padding,
                  ceil_mode=ceil_mode, count_include_pad=count_include_pad)
