"""Composite graphs differentiated end to end: finite differences in float64,
and PyTorch autograd on the same graph (rtol 1e-7) when torch is installed."""

import math

import numpy as np
import pytest

import adjoint as aj
from adjoint.testing import check_gradients

RNG = np.random.default_rng(42)
F = "float64"


def rand(*shape, scale=1.0):
    return scale * RNG.standard_normal(shape)


def mlp():
    bb = aj.FunctionBuilder("main", num_input=2)
    x = bb.param("x", (4, 5), F)
    labels = bb.param("labels", (4, 3), F)
    w1, b1 = bb.param("w1", (5, 7), F), bb.param("b1", (7,), F)
    w2, b2 = bb.param("w2", (7, 3), F), bb.param("b2", (3,), F)
    h = aj.op.relu(x @ w1 + b1)
    mod = bb.finish(aj.op.cross_entropy_with_logits(h @ w2 + b2, labels))
    inputs = [rand(4, 5), np.eye(3)[[0, 2, 1, 2]], rand(5, 7), rand(7), rand(7, 3), rand(3)]

    def torch_fn(t, x, labels, w1, b1, w2, b2):
        logits = t.relu(x @ w1 + b1) @ w2 + b2
        return -(labels * t.log_softmax(logits, dim=-1)).sum(-1).mean()

    return mod, inputs, torch_fn


def attention():
    s, d = 5, 4
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (s, d), F)
    wq, wk, wv, wo = (bb.param(n, (d, d), F) for n in ("wq", "wk", "wv", "wo"))
    q, k, v = x @ wq.T, x @ wk.T, x @ wv.T  # linear layers: x @ W^T
    p = aj.op.softmax((q @ k.T) * (1.0 / math.sqrt(d)), axis=-1)
    out = (p @ v) @ wo.T
    mod = bb.finish(aj.op.sum(out * out))
    inputs = [rand(s, d)] + [rand(d, d, scale=0.5) for _ in range(4)]

    def torch_fn(t, x, wq, wk, wv, wo):
        q, k, v = x @ wq.T, x @ wk.T, x @ wv.T
        p = t.softmax((q @ k.T) * (1.0 / math.sqrt(d)), dim=-1)
        out = (p @ v) @ wo.T
        return (out * out).sum()

    return mod, inputs, torch_fn


def layer_norm():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 6), F)
    g, b = bb.param("g", (6,), F), bb.param("b", (6,), F)
    y = aj.op.layer_norm(x, g, b, axes=[-1], epsilon=1e-5)
    w = bb.param("w", (3, 6), F)
    mod = bb.finish(aj.op.sum(y * w))
    inputs = [rand(3, 6), 1 + 0.1 * rand(6), rand(6), rand(3, 6)]

    def torch_fn(t, x, g, b, w):
        return (t.nn.functional.layer_norm(x, (6,), g, b, 1e-5) * w).sum()

    return mod, inputs, torch_fn


def conv_net():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (2, 2, 6, 6), F)
    w = bb.param("w", (3, 2, 3, 3), F)
    fc = bb.param("fc", (12, 2), F)
    h = aj.op.relu(aj.op.conv2d(x, w, strides=[1, 1], padding=[1, 1]))
    h = aj.op.max_pool2d(h, pool_size=[2, 2], strides=[2, 2])
    h = aj.op.avg_pool2d(h, pool_size=[2, 2], strides=[2, 2], padding=[1, 1])
    flat = aj.op.reshape(h, (2, 12))
    mod = bb.finish(aj.op.sum(aj.op.tanh(flat @ fc)))
    inputs = [rand(2, 2, 6, 6), rand(3, 2, 3, 3, scale=0.5), rand(12, 2, scale=0.5)]

    def torch_fn(t, x, w, fc):
        F_ = t.nn.functional
        h = t.relu(F_.conv2d(x, w, stride=1, padding=1))
        h = F_.max_pool2d(h, 2, 2)
        h = F_.avg_pool2d(h, 2, 2, padding=1, count_include_pad=False)
        return t.tanh(h.reshape(2, 12) @ fc).sum()

    return mod, inputs, torch_fn


def many_uses():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), F)
    y = bb.param("y", (3,), F)
    h = x * x * x + x * y - x / (y * y + 1.0) + aj.op.exp(x) * x
    mod = bb.finish(aj.op.sum(h * x))
    inputs = [rand(3), rand(3)]

    def torch_fn(t, x, y):
        h = x * x * x + x * y - x / (y * y + 1.0) + t.exp(x) * x
        return (h * x).sum()

    return mod, inputs, torch_fn


GRAPHS = {"mlp": mlp, "attention": attention, "layer_norm": layer_norm, "conv_net": conv_net,
          "many_uses": many_uses}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("simplify", [True, False])
def test_finite_differences(name, simplify):
    mod, inputs, _ = GRAPHS[name]()
    check_gradients(mod, "main", inputs, delta=1e-6, rtol=1e-5, atol=1e-7, simplify=simplify)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_matches_torch_autograd(name):
    torch = pytest.importorskip("torch")
    mod, inputs, torch_fn = GRAPHS[name]()
    out = aj.transform.Gradient()(mod)
    result, grads = aj.build(out)["main_adjoint"](*inputs)
    float_idx = [i for i, p in enumerate(mod["main"].params) if p.type.dtype == F]
    tin = [torch.tensor(a, dtype=torch.float64, requires_grad=i in float_idx) for i, a in enumerate(inputs)]
    loss = torch_fn(torch, *tin)
    loss.backward()
    np.testing.assert_allclose(result, loss.detach().numpy(), rtol=1e-7)
    assert len(grads) == len(float_idx)
    for g, i in zip(grads, float_idx):
        np.testing.assert_allclose(g, tin[i].grad.numpy(), rtol=1e-7, atol=1e-12)


def test_require_grads_subsets_and_order():
    mod, inputs, _ = mlp()
    out = aj.transform.Gradient(require_grads=["w2", "x"])(mod)
    result, grads = aj.build(out)["main_adjoint"](*inputs)
    full = aj.build(aj.transform.Gradient()(mod))["main_adjoint"](*inputs)[1]
    names = [p.name_hint for p in mod["main"].params]
    assert len(grads) == 2
    np.testing.assert_allclose(grads[0], full[names.index("w2")], rtol=1e-12)
    np.testing.assert_allclose(grads[1], full[names.index("x")], rtol=1e-12)


def test_unused_param_gets_zeros():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3), F)
    bb.param("unused", (4,), F)
    mod = bb.finish(aj.op.sum(x * x))
    _, (gx, gu) = aj.build(aj.transform.Gradient()(mod))["main_adjoint"](rand(2, 3), rand(4))
    np.testing.assert_array_equal(gu, np.zeros(4))
    assert gx.shape == (2, 3)


def test_symbolic_dims_stay_symbolic():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 5), F)
    w = bb.param("w", (5, 3), F)
    mod = bb.finish(aj.op.sum(aj.op.tanh(x @ w)))
    out = aj.transform.Gradient()(mod)
    aj.analysis.verify(out)
    assert '"n"' in out["main_adjoint"].script()
    for n in (2, 7):
        check_gradients(mod, "main", [rand(n, 5), rand(5, 3)], delta=1e-6, rtol=1e-5, atol=1e-7)



def test_dead_forward_bindings_and_off_path_required_vars():
    # "dead" feeds nothing the result uses; "side" is required but off the
    # path to the result: it gets zeros, and the simplified adjoint drops
    # "dead" while the raw one keeps the whole forward function.
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), F)
    y = bb.param("y", (3,), F)
    bb.emit(aj.op.exp(y), "dead")
    bb.emit(aj.op.tanh(x), "side")
    mod = bb.finish(aj.op.sum(x * y))
    xs, ys = rand(3), rand(3)
    for simplify in (True, False):
        out = aj.transform.Gradient(require_grads=["x", "side"], simplify=simplify)(mod)
        names = {b.var.name_hint for b in out["main_adjoint"].bindings}
        assert ("dead" in names) == (not simplify)
        _, (gx, gside) = aj.build(out)["main_adjoint"](xs, ys)
        np.testing.assert_allclose(gx, ys, rtol=1e-12)
        np.testing.assert_array_equal(gside, np.zeros(3))
