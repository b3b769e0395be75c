"""A numerical gradient check (float64, central differences) for every
differentiable op of the binary, unary, linalg and manipulate families,
including broadcasting and symbolic dims run at concrete sizes."""

import numpy as np
import pytest

import adjoint as aj
from adjoint.testing import check_gradients

RNG = np.random.default_rng(3)
TOL = dict(delta=1e-6, rtol=1e-5, atol=1e-8)


def weighted(bb, y):
    """dot(flatten(y), w) with a random w param: a scalar whose adjoint is not uniform."""
    n = 1
    for d in y.shape:
        n *= d
    w = bb.param("w", (n,), "float64")
    return aj.op.matmul(aj.op.reshape(y, (n,)), w)


def check(build, *inputs):
    mod = build()
    n = mod["main"].params[-1].type.shape[0]
    check_gradients(mod, "main", list(inputs) + [RNG.standard_normal(n)], **TOL)


UNARY = {
    "negative": (-2, 2), "exp": (-2, 2), "log": (0.5, 2), "log1p": (-0.5, 2), "sqrt": (0.5, 2), "rsqrt": (0.5, 2), "sin": (-2, 2),
    "cos": (-2, 2), "tanh": (-2, 2), "sigmoid": (-3, 3), "relu": (-2, 2), "gelu": (-3, 3), "silu": (-3, 3),
    "abs": (-2, 2), "square": (-2, 2), "erf": (-2, 2),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_unary(op, shape):
    lo, hi = UNARY[op]
    x = RNG.uniform(lo, hi, shape)
    if op in ("relu", "abs"):
        x = np.where(np.abs(x) < 0.1, 0.5, x)  # stay off the kink

    def build():
        bb = aj.FunctionBuilder("main")
        p = bb.param("x", shape, "float64")
        return bb.finish(weighted(bb, getattr(aj.op, op)(p)))

    check(build, x)


def test_astype_between_floats():
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", (4,), "float64")
        return bb.finish(weighted(bb, aj.op.astype(aj.op.astype(x, "float32"), "float64") * x))

    check_gradients(build(), "main", [RNG.standard_normal(4), RNG.standard_normal(4)], delta=1e-3, rtol=1e-4, atol=1e-6)


BINARY = {"add": (-2, 2), "subtract": (-2, 2), "multiply": (-2, 2), "divide": (0.5, 2), "power": (0.5, 2),
          "maximum": (-2, 2), "minimum": (-2, 2)}
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2, 2)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_with_broadcasting(op, sa, sb):
    lo, hi = BINARY[op]
    a, b = RNG.uniform(lo, hi, sa), RNG.uniform(lo, hi, sb)

    def build():
        bb = aj.FunctionBuilder("main")
        x, y = bb.param("a", sa, "float64"), bb.param("b", sb, "float64")
        return bb.finish(weighted(bb, getattr(aj.op, op)(x, y)))

    check(build, a, b)


@pytest.mark.parametrize("c", [0.0, 1.0, 2.0, 3.0, 0.5, -1.5])
@pytest.mark.parametrize("const_shape", [(), (1, 1)])
def test_power_by_a_constant(c, const_shape):
    # x ** c with c a constant takes the folded rule (c * x ** (c - 1)); the
    # (1, 1) constant also broadcasts x up a rank
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", (2, 3), "float64")
        return bb.finish(weighted(bb, aj.op.power(x, aj.Constant(np.full(const_shape, c)))))

    check(build, RNG.uniform(0.5, 2, (2, 3)))


def test_power_by_a_constant_zero_gives_zeros_at_zero():
    # the general rule's g * 0 * x ** -1 is NaN at x = 0; PyTorch gives 0
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), "float64")
    mod = bb.finish(aj.op.sum(x ** 0.0))
    _, (g,) = aj.build(aj.transform.Gradient()(mod))["main_adjoint"](np.array([0.0, 1.0, -2.0]))
    assert g.tolist() == [0.0, 0.0, 0.0]


# Operands where x1 / x2 stays inside (2, 3), away from the jumps of // and %.
FLOOR_OPS = {"floor_divide": ((2.2, 2.8), (0.95, 1.05)), "floor_mod": ((2.2, 2.8), (0.95, 1.05))}


@pytest.mark.parametrize("op", sorted(FLOOR_OPS))
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_floor_divide_and_floor_mod(op, sa, sb):
    (alo, ahi), (blo, bhi) = FLOOR_OPS[op]
    a, b = RNG.uniform(alo, ahi, sa), RNG.uniform(blo, bhi, sb)

    def build():
        bb = aj.FunctionBuilder("main")
        x, y = bb.param("a", sa, "float64"), bb.param("b", sb, "float64")
        return bb.finish(weighted(bb, getattr(aj.op, op)(x, y)))

    check(build, a, b)


def test_int_division_passes_no_gradient_to_its_int_operands():
    # x -> int -> (i / i, i // 2, i % 2) -> float64: only the direct use of x has a gradient
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", (3,), "float64")
        i = x.astype("int32")
        return bb.finish(weighted(bb, (i / i + (i // 2 + i % 2).astype("float64")) * x))

    check(build, np.array([1.2, 2.5, 3.7]))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_shapes(sa, sb):
    def build():
        bb = aj.FunctionBuilder("main")
        x, y = bb.param("a", sa, "float64"), bb.param("b", sb, "float64")
        return bb.finish(weighted(bb, x @ y))

    check(build, RNG.standard_normal(sa), RNG.standard_normal(sb))


MANIPULATE = {
    "permute_dims": lambda x: aj.op.permute_dims(x, axes=[2, 0, 1]),
    "permute_dims_default": lambda x: aj.op.permute_dims(x),
    "reshape": lambda x: aj.op.reshape(x, (6, 4)),
    "broadcast_to": lambda x: aj.op.broadcast_to(aj.op.reshape(x, (2, 1, 12)), (2, 3, 12)),
    "collapse_sum_to": lambda x: aj.op.collapse_sum_to(x, (3, 1)),
    "expand_dims": lambda x: aj.op.expand_dims(x, axis=[0, -1]),
    "squeeze": lambda x: aj.op.squeeze(aj.op.reshape(x, (2, 1, 3, 4)), axis=[1]),
    "concat": lambda x: aj.op.concat([x, aj.op.exp(x), x], axis=1),
    "split_sections": lambda x: aj.op.split(x, 2, axis=2)[1],
    "split_indices": lambda x: aj.op.concat([aj.op.split(x, [1, 3], axis=2)[k] for k in (2, 0)], axis=2),
    "take": lambda x: aj.op.take(x, aj.Constant(np.array([[2, 0], [2, -1]], dtype=np.int64)), axis=2),
    "where": lambda x: aj.op.where(aj.op.greater(x, 0.0), x, aj.op.square(x)),
    "cumsum": lambda x: aj.op.cumsum(x, axis=1),
    "triu": lambda x: aj.op.triu(x, k=1),
    "strided_slice": lambda x: aj.op.strided_slice(x, [0, 2], [1, -1], [2, -5], strides=[1, -2]),
    "strided_slice_steps": lambda x: aj.op.strided_slice(x, [1], [0], [3], strides=[2]),
    "strided_slice_backward": lambda x: aj.op.strided_slice_backward(x, (2, 5, 4), [1], [0], [5], strides=[2]),
}


@pytest.mark.parametrize("name", sorted(MANIPULATE))
def test_manipulate(name):
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", (2, 3, 4), "float64")
        return bb.finish(weighted(bb, MANIPULATE[name](x)))

    x = RNG.standard_normal((2, 3, 4))
    if name == "where":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    check(build, x)


def test_index_add_gradient():
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", (4, 3), "float64")
        s = bb.param("s", (2, 3), "float64")
        idx = aj.Constant(np.array([1, 1], dtype=np.int32))
        return bb.finish(weighted(bb, aj.op.index_add(x, idx, s, axis=0)))

    check(build, RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3)))


def test_symbolic_dims_run_at_two_sizes():
    def build():
        bb = aj.FunctionBuilder("main")
        x = bb.param("x", ("n", 3), "float64")
        y = bb.param("y", ("n", 3), "float64")
        w = bb.param("w", (3,), "float64")
        z = aj.op.concat([x * y, aj.op.tanh(x)], axis=0)  # (2n, 3)
        parts = aj.op.split(z, [1], axis=1)
        h = aj.op.concat([parts[1], parts[0]], axis=1) @ w
        return bb.finish(aj.op.matmul(h, aj.op.exp(aj.op.reshape(aj.op.concat([x, y], axis=0), (-1, 3)) @ w)))

    mod = build()
    adj = aj.transform.Gradient()(mod)
    aj.analysis.verify(adj)
    assert '"n"' in adj["main_adjoint"].script()
    for n in (1, 4):
        check_gradients(mod, "main", [RNG.standard_normal((n, 3)), RNG.standard_normal((n, 3)),
                                      RNG.standard_normal(3)], **TOL)


def test_concat_with_symbolic_parts_splits_at_symbolic_points():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 2), "float64")
    y = bb.param("y", ("m", 2), "float64")
    w = bb.param("w", (2,), "float64")
    c = aj.op.concat([x, y], axis=0)
    mod = bb.finish(aj.op.matmul(aj.op.tanh(c) @ w, aj.op.tanh(c) @ w))
    text = aj.transform.Gradient()(mod)["main_adjoint"].script()
    assert 'split(' in text and '("n",)' in text
    for n, m in ((1, 3), (4, 2)):
        check_gradients(mod, "main", [RNG.standard_normal((n, 2)), RNG.standard_normal((m, 2)),
                                      RNG.standard_normal(2)], **TOL)
