"""Regressions: the minimal programs of failures the random-program
properties (test_properties.py) found, one named test each."""

import numpy as np
import pytest

import adjoint as aj


def test_reshape_infers_minus_one_beside_a_polynomial_dim():
    # A split at 1 leaves ("n - 1", 2, 2); reshaping that to ("n - 1", -1)
    # divides 4*n - 4 elements by n - 1, a sum of two terms, which the type
    # rule could not divide: the dims both shapes have now cancel first.
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 2, 2), "float64")
    rest = aj.op.split(x, [1], axis=0)[1]
    y = aj.op.reshape(rest, ("n - 1", -1))
    assert y.type.shape == ("n - 1", 4)
    mod = bb.finish(aj.op.sum(y * y))
    aj.analysis.verify(aj.transform.Gradient()(mod))
    xs = np.arange(12.0).reshape(3, 2, 2)
    result, (grad,) = aj.build(aj.transform.Gradient()(mod))["main_adjoint"](xs)
    assert result == (xs[1:] ** 2).sum()
    np.testing.assert_array_equal(grad, np.concatenate([np.zeros((1, 2, 2)), 2 * xs[1:]]))


@pytest.mark.parametrize("shape, target, inferred", [
    (("n", "m", 3), ("m", -1), "3*n"),            # cancels m, divides 3*n by 1
    (("n + 1", 6), (-1, 2, "n + 1"), 3),          # cancels n + 1, divides 6 by 2
    (("2*n", 3), (3, -1), "2*n"),
])
def test_reshape_minus_one_cancels_shared_dims(shape, target, inferred):
    with aj.FunctionBuilder("main") as bb:
        y = aj.op.reshape(bb.param("x", shape, "float32"), target)
    assert y.type.shape[list(target).index(-1)] == inferred


@pytest.mark.parametrize("shape, target", [
    (("n - 1", 3), ("n", -1)),       # 3*n - 3 by n
    ((6, "n"), (4, -1)),             # 6*n by 4
])
def test_reshape_minus_one_still_rejects_what_does_not_divide(shape, target):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", shape, "float32")
    with pytest.raises(aj.TypeInferenceError, match="cannot infer the -1 dim"):
        aj.op.reshape(x, target)


def test_reassociate_matmul_reads_a_form_every_way_its_operands_allow():
    # p9 @ (p10 @ w + w): read as x @ (W + A@B) it expands to p9@w + (p9@p10)@w,
    # which, with w in two places, is also W@x + (B@A)@x for W = B = p9, x = w,
    # factoring to (p9 + p9@p10) @ w, cheaper still. Taking the expansion left
    # the second run a rewrite to make: every reading's forms are now weighed at once.
    bb = aj.FunctionBuilder("main")
    p9, p10, w = bb.param("p9", (1, 2), "float64"), bb.param("p10", (2, 2), "float64"), bb.param("w", (2, 2), "float64")
    mod = bb.finish(aj.op.matmul(p9, aj.op.add(aj.op.matmul(p10, w), w)))
    once = aj.transform.ReassociateMatmul()(mod)
    aj.assert_structural_equal(aj.transform.ReassociateMatmul()(once), once)
    assert aj.analysis.estimate_flops(once["main"]) == 18  # matmul 8, add 2, matmul 8
    args = [np.arange(2.0).reshape(1, 2), np.arange(4.0).reshape(2, 2), np.arange(4.0, 8.0).reshape(2, 2)]
    np.testing.assert_allclose(aj.build(once)["main"](*args), aj.build(mod)["main"](*args))


def test_reassociate_matmul_counts_users_after_removing_dead_code():
    # xa = x @ a had a second user that nothing used (as raw adjoints have): the
    # first run kept the form, its DCE dropped that user, and the second run
    # rewrote. Dead code now goes first, so one run does it all.
    text = """@function(num_input=1)
def main(x: Tensor((1, 4), "float64"), w: Tensor((4, 4), "float64"), a: Tensor((4, 2), "float64"), b: Tensor((2, 4), "float64")) -> Tensor((1, 4), "float64"):
    xa: Tensor((1, 2), "float64") = matmul(x, a)
    unused: Tensor((1, 2), "float64") = exp(xa)
    xab: Tensor((1, 4), "float64") = matmul(xa, b)
    xw: Tensor((1, 4), "float64") = matmul(x, w)
    y: Tensor((1, 4), "float64") = add(xw, xab)
    return y
"""
    once = aj.transform.ReassociateMatmul()(aj.parse(text))
    aj.assert_structural_equal(aj.transform.ReassociateMatmul()(once), once)
    assert [b.value.op for b in once["main"].bindings] == ["matmul", "add", "matmul"]  # x @ (w + a@b), a@b lifted


def test_reassociate_matmul_rewrites_what_a_rewrite_exposes():
    # ((p4 + p5@p6) @ p3) @ v: re-bracketing the chain to s @ (p3 @ v) made
    # s @ vector a low-rank form to expand, which only a second run did. Rounds
    # now repeat while one changes the function.
    bb = aj.FunctionBuilder("main")
    p3, p4, p5, p6 = (bb.param(f"p{i}", (2, 2), "float64") for i in range(3, 7))
    v = bb.param("v", (2,), "float64")
    mod = bb.finish((((p5 @ p6) + p4) @ p3) @ v)
    once = aj.transform.ReassociateMatmul()(mod)
    aj.assert_structural_equal(aj.transform.ReassociateMatmul()(once), once)
    assert aj.analysis.estimate_flops(once["main"]) < aj.analysis.estimate_flops(mod["main"])
    args = [np.arange(4.0).reshape(2, 2) + i for i in range(4)] + [np.array([1.0, -2.0])]
    np.testing.assert_allclose(aj.build(once)["main"](*args), aj.build(mod)["main"](*args))


@pytest.mark.parametrize("form", ["chain", "low_rank"])
def test_reassociate_matmul_keeps_a_batch_of_vectors_apart_from_a_matrix(form):
    # (p0 @ p3) @ v with p3 (2, 2, 2) and v (2,) was re-bracketed to
    # p0 @ (p3 @ v): p3 @ v is a batch of two vectors, shape (2, 2), which
    # p0 @ then read as a matrix. Same type, other numbers. The low-rank forms
    # meet it the same way through A @ x.
    bb = aj.FunctionBuilder("main")
    rng = np.random.default_rng(0)
    p0, p1 = bb.param("p0", (2, 2), "float64"), bb.param("p1", (2, 2), "float64")
    p3 = bb.param("p3", (2, 2, 2), "float64")
    v = bb.param("v", (2,), "float64")
    ret = (p0 @ p3) @ v if form == "chain" else (p0 + p1 @ p3) @ v
    mod = bb.finish(ret)
    out = aj.transform.ReassociateMatmul()(mod)
    aj.analysis.verify(out)
    args = [rng.standard_normal(p.type.shape) for p in mod["main"].params]
    np.testing.assert_allclose(aj.build(out)["main"](*args), aj.build(mod)["main"](*args))


def test_reassociate_matmul_keeps_a_bias_gradient_out_of_the_weight_gradient():
    # The adjoint of sum(ones.T @ p5 @ v) + mean-like terms held
    # p5_adjoint = ones @ (g + outer(a, b)) with g (32,): the sum repeats g down
    # the axis ones @ contracts, but the expanded ones @ g + (ones @ a) @ b read
    # g as a column, and the add broadcast it back to (32, 32): same type, other
    # numbers. Sums broadcasting along the contracted axis are now left alone.
    bb = aj.FunctionBuilder("main")
    p5, p6 = bb.param("p5", (32, 32), "float64"), bb.param("p6", (), "float64")
    ones = aj.op.ones((32, 32), "float64")
    h = ones.T @ p5
    v = p6 + aj.op.collapse_sum_to(h, (32,)) * (1 / 2048)
    mod = bb.finish(aj.op.sum(h @ v))
    adjoint = aj.transform.Gradient()(mod)
    out = aj.transform.ReassociateMatmul()(adjoint)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((32, 32)), np.float64(0.5)]
    want = aj.build(adjoint)["main_adjoint"](*args)
    got = aj.build(out)["main_adjoint"](*args)
    np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-10)
    np.testing.assert_allclose(got[1][1], want[1][1], rtol=1e-10)


def test_lifted_gradients_made_of_constants_alone_are_frozen():
    # With num_input=0 every param is a weight; the adjoint's gradients of
    # sum(p1 + p0) are ones broadcast and summed: constants, lifted as n is a
    # weight's dim. Lifted, they are frozen (training must not change them),
    # which the property first took for an attr the pass should not add.
    mod = aj.parse('''@function(num_input=0)
def main(p0: Tensor(("n",), "float64"), p1: Tensor((), "float64")) -> Tensor((), "float64"):
    lv: Tensor(("n",), "float64") = add(p1, p0)
    lv_1: Tensor((), "float64") = sum(lv)
    return lv_1
''')
    grads = aj.transform.Gradient(simplify=False)(mod)
    out = aj.transform.LiftTransformParams()(grads)
    assert out["main_adjoint"].frozen == ("lv_adjoint", "p1_adjoint")
    assert out["main"].frozen == ()
    exe, want = aj.build(out), aj.build(grads)["main_adjoint"]
    p0, p1 = np.array([1.4554425309821815]), np.float64(-0.5614602859042921)
    got = exe["main_adjoint"](*exe["main_adjoint_transform_params"](p0, p1))
    (value, (g0, g1)), (value_want, (g0_want, g1_want)) = got, want(p0, p1)
    assert value == value_want and np.array_equal(g0, g0_want) and g1 == g1_want
