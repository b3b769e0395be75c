"""Golden tests of Gradient on the small cases a TVM user knows: each
forward function, its adjoint as printed text (reviewed by hand), and a
numerical check of that adjoint."""

import numpy as np
import pytest

import adjoint as aj

CASES = {
    "sum": (
        '''\
@function
def main(x: Tensor((3, 4), "float32")) -> Tensor((), "float32"):
    gv: Tensor((), "float32") = sum(x)
    return gv
''',
        {},
        '''\
@function
def main_adjoint(x: Tensor((3, 4), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((3, 4), "float32"))):
    gv: Tensor((), "float32") = sum(x)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    x_adjoint: Tensor((3, 4), "float32") = broadcast_to(gv_adjoint, (3, 4))
    return (gv, (x_adjoint,))
''',
    ),
    "var_used_three_times": (
        '''\
@function
def main(x: Tensor((3,), "float32")) -> Tensor((), "float32"):
    a: Tensor((3,), "float32") = multiply(x, x)
    b: Tensor((3,), "float32") = add(a, x)
    gv: Tensor((), "float32") = sum(b)
    return gv
''',
        {},
        '''\
@function
def main_adjoint(x: Tensor((3,), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((3,), "float32"))):
    a: Tensor((3,), "float32") = multiply(x, x)
    b: Tensor((3,), "float32") = add(a, x)
    gv: Tensor((), "float32") = sum(b)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    x_adjoint: Tensor((3,), "float32") = add(gv_adjoint, x)
    x_adjoint_1: Tensor((3,), "float32") = add(x_adjoint, x)
    return (gv, (x_adjoint_1,))
''',
    ),
    "unused_param": (
        '''\
@function
def main(x: Tensor((3,), "float32"), y: Tensor((2,), "float32")) -> Tensor((), "float32"):
    gv: Tensor((), "float32") = sum(x)
    return gv
''',
        {},
        '''\
@function
def main_adjoint(x: Tensor((3,), "float32"), y: Tensor((2,), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((3,), "float32"), Tensor((2,), "float32"))):
    gv: Tensor((), "float32") = sum(x)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    x_adjoint: Tensor((3,), "float32") = broadcast_to(gv_adjoint, (3,))
    y_adjoint: Tensor((2,), "float32") = zeros((2,), "float32")
    return (gv, (x_adjoint, y_adjoint))
''',
    ),
    "split_then_concat": (
        '''\
@function
def main(x: Tensor((4, 2), "float32")) -> Tensor((), "float32"):
    s: Tuple(Tensor((1, 2), "float32"), Tensor((3, 2), "float32")) = split(x, [1])
    a: Tensor((1, 2), "float32") = s[0]
    b: Tensor((3, 2), "float32") = s[1]
    c: Tensor((4, 2), "float32") = concat((b, a))
    gv: Tensor((), "float32") = sum(c)
    return gv
''',
        {},
        '''\
@function
def main_adjoint(x: Tensor((4, 2), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((4, 2), "float32"))):
    s: Tuple(Tensor((1, 2), "float32"), Tensor((3, 2), "float32")) = split(x, [1])
    a: Tensor((1, 2), "float32") = s[0]
    b: Tensor((3, 2), "float32") = s[1]
    c: Tensor((4, 2), "float32") = concat((b, a))
    gv: Tensor((), "float32") = sum(c)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    c_adjoint: Tensor((4, 2), "float32") = broadcast_to(gv_adjoint, (4, 2))
    lv: Tuple(Tensor((3, 2), "float32"), Tensor((1, 2), "float32")) = split(c_adjoint, [3])
    b_adjoint: Tensor((3, 2), "float32") = lv[0]
    a_adjoint: Tensor((1, 2), "float32") = lv[1]
    x_adjoint: Tensor((4, 2), "float32") = concat((a_adjoint, b_adjoint))
    return (gv, (x_adjoint,))
''',
    ),
    "tuple_return_target_index": (
        '''\
@function
def main(x: Tensor((3,), "float32"), y: Tensor((3,), "float32")) -> Tuple(Tensor((), "float32"), Tensor((), "float32")):
    a: Tensor((), "float32") = sum(x)
    m: Tensor((3,), "float32") = multiply(x, y)
    b: Tensor((), "float32") = sum(m)
    return (a, b)
''',
        {'target_index': 1},
        '''\
@function
def main_adjoint(x: Tensor((3,), "float32"), y: Tensor((3,), "float32")) -> Tuple(Tuple(Tensor((), "float32"), Tensor((), "float32")), Tuple(Tensor((3,), "float32"), Tensor((3,), "float32"))):
    a: Tensor((), "float32") = sum(x)
    m: Tensor((3,), "float32") = multiply(x, y)
    b: Tensor((), "float32") = sum(m)
    return ((a, b), (y, x))
''',
    ),
    "intermediate_require_grads": (
        '''\
@function
def main(x: Tensor((3,), "float32")) -> Tensor((), "float32"):
    h: Tensor((3,), "float32") = exp(x)
    gv: Tensor((), "float32") = sum(h)
    return gv
''',
        {'require_grads': ['h', 'x']},
        '''\
@function
def main_adjoint(x: Tensor((3,), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((3,), "float32"), Tensor((3,), "float32"))):
    h: Tensor((3,), "float32") = exp(x)
    gv: Tensor((), "float32") = sum(h)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    h_adjoint: Tensor((3,), "float32") = broadcast_to(gv_adjoint, (3,))
    return (gv, (h_adjoint, h))
''',
    ),
    # relu's VJP reads relu's result, not its input, so that h (x + b) is dead after the forward pass
    "relu_of_bias_add": (
        '''\
@function
def main(x: Tensor((2, 3), "float32"), b: Tensor((3,), "float32")) -> Tensor((), "float32"):
    h: Tensor((2, 3), "float32") = add(x, b)
    r: Tensor((2, 3), "float32") = relu(h)
    gv: Tensor((), "float32") = sum(r)
    return gv
''',
        {},
        '''\
@function
def main_adjoint(x: Tensor((2, 3), "float32"), b: Tensor((3,), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((2, 3), "float32"), Tensor((3,), "float32"))):
    h: Tensor((2, 3), "float32") = add(x, b)
    r: Tensor((2, 3), "float32") = relu(h)
    gv: Tensor((), "float32") = sum(r)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    r_adjoint: Tensor((2, 3), "float32") = broadcast_to(gv_adjoint, (2, 3))
    lv: Tensor((2, 3), "bool") = greater(r, const(0.0, "float32"))
    lv_1: Tensor((2, 3), "float32") = zeros_like(r_adjoint)
    h_adjoint: Tensor((2, 3), "float32") = where(lv, r_adjoint, lv_1)
    b_adjoint: Tensor((3,), "float32") = collapse_sum_to(h_adjoint, (3,))
    return (gv, (h_adjoint, b_adjoint))
''',
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_adjoint(name):
    text, options, expected = CASES[name]
    mod = aj.parse(text)
    out = aj.transform.Gradient(**options)(mod)
    assert out["main_adjoint"].script() == expected
    aj.analysis.verify(out)
    aj.assert_structural_equal(aj.parse(expected)["main_adjoint"], out["main_adjoint"])


RNG = np.random.default_rng(11)


def run_adjoint(name, *inputs):
    text, options, _ = CASES[name]
    return aj.build(aj.transform.Gradient(**options)(aj.parse(text)))["main_adjoint"](*inputs)


def test_numbers_relu_of_bias_add():
    x = np.array([[1.0, -2.0, 0.5], [-0.25, 3.0, -1.0]], np.float32)
    b = np.array([0.5, 1.0, -0.5], np.float32)  # h has an exact 0 (0.5 - 0.5): its gradient is 0
    _, (gx, gb) = run_adjoint("relu_of_bias_add", x, b)
    mask = (x + b > 0).astype(np.float32)
    np.testing.assert_array_equal(gx, mask)
    np.testing.assert_array_equal(gb, mask.sum(axis=0))


def test_numbers_sum():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    _, (gx,) = run_adjoint("sum", x)
    np.testing.assert_array_equal(gx, np.ones((3, 4)))


def test_numbers_var_used_three_times():
    x = RNG.standard_normal(3).astype(np.float32)
    _, (gx,) = run_adjoint("var_used_three_times", x)
    np.testing.assert_allclose(gx, 2 * x + 1, rtol=1e-6)  # d/dx (x*x + x)


def test_numbers_unused_param():
    _, (gx, gy) = run_adjoint("unused_param", np.ones(3, np.float32), np.ones(2, np.float32))
    np.testing.assert_array_equal(gy, np.zeros(2))


def test_numbers_split_then_concat():
    _, (gx,) = run_adjoint("split_then_concat", RNG.standard_normal((4, 2)).astype(np.float32))
    np.testing.assert_array_equal(gx, np.ones((4, 2)))


def test_numbers_tuple_return_target_index():
    x, y = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    (a, b), (gx, gy) = run_adjoint("tuple_return_target_index", x, y)
    np.testing.assert_allclose(b, (x * y).sum(), rtol=1e-6)
    np.testing.assert_allclose(gx, y, rtol=1e-6)  # only b = sum(x * y) is differentiated
    np.testing.assert_allclose(gy, x, rtol=1e-6)


def test_numbers_intermediate_require_grads():
    x = RNG.standard_normal(3).astype(np.float32)
    _, (gh, gx) = run_adjoint("intermediate_require_grads", x)
    np.testing.assert_array_equal(gh, np.ones(3))
    np.testing.assert_allclose(gx, np.exp(x), rtol=1e-6)
