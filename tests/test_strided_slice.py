"""strided_slice(x, axes, begin, end, strides) and its gradient op
strided_slice_backward: the kernel against NumPy slicing (Python slice
semantics: negative and out-of-range bounds, negative strides, every dtype),
symbolic dims, the text form, bad inputs, FLOPs, and the executor reading a
contiguous slice of a dying input without a copy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from conftest import run_op

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
BIG = 2**63 - 1  # "to the end" for a begin or end


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 10).astype(dtype)


def numpy_slice(x, axes, begin, end, strides):
    index = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes, begin, end, strides):
        index[a] = slice(b, e, s)
    return x[tuple(index)]


CASES = [
    ((5,), [0], [1], [4], [1]),
    ((5,), [0], [-1], [-6], [-1]),        # reversed, negative bounds
    ((5,), [-1], [BIG], [-BIG], [-2]),    # the whole axis backwards, every other
    ((4, 6), [1], [1], [100], [2]),       # end past the dim clamps
    ((4, 6), [0, 1], [-100, 5], [2, 0], [1, -3]),
    ((2, 3, 4), [2, 0], [3, 1], [1, 2], [1, 1]),  # an empty slice (3:1)
    ((2, 3, 4), [1], [0], [BIG], [7]),    # a stride larger than the dim
    ((0, 3), [0, 1], [0, 1], [5, 3], [2, 1]),  # a zero-size input
    ((3, 4), [], [], [], []),             # nothing sliced
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axes,begin,end,strides", CASES)
def test_kernel_matches_numpy(shape, axes, begin, end, strides, dtype):
    x = rand(shape, dtype)
    got = run_op("strided_slice", x, axes=axes, begin=begin, end=end, strides=strides)
    want = numpy_slice(x, axes, begin, end, strides)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


bounds = st.integers(-8, 8) | st.sampled_from([BIG, -BIG, -(2**63)])


@settings(max_examples=150)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_every_slice_of_small_shapes_matches_numpy(shape, data):
    n = len(shape)
    axes = data.draw(st.lists(st.integers(-n, n - 1), unique_by=lambda a: a % n, max_size=n))
    begin = [data.draw(bounds) for _ in axes]
    end = [data.draw(bounds) for _ in axes]
    strides = [data.draw(st.integers(-4, 4).filter(bool) | st.sampled_from([2**62, -(2**63)])) for _ in axes]
    x = rand(tuple(shape), "float64")
    want = numpy_slice(x, [a % n for a in axes], begin, end, strides)
    np.testing.assert_array_equal(run_op("strided_slice", x, axes=axes, begin=begin, end=end, strides=strides),
                                  want)
    dy = rand(want.shape, "float64", seed=1)
    back = np.zeros_like(x)
    back[tuple(numpy_slice_index(n, [a % n for a in axes], begin, end, strides))] = dy
    got = run_op("strided_slice_backward", dy, shape=x.shape, axes=axes, begin=begin, end=end, strides=strides)
    np.testing.assert_array_equal(got, back)


def numpy_slice_index(ndim, axes, begin, end, strides):
    index = [slice(None)] * ndim
    for a, b, e, s in zip(axes, begin, end, strides):
        index[a] = slice(b, e, s)
    return index


def test_strides_default_to_one_and_print_and_parse():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 6), "float32")
    mod = bb.finish(aj.op.strided_slice(x, [1], [1], [5]))
    text = mod.script()
    assert 'strided_slice(x, [1], [1], [5])' in text
    assert 'Tensor((4, 4), "float32")' in text
    aj.assert_structural_equal(aj.parse(text), mod)
    assert aj.parse(text).script() == text


def test_negative_strides_and_backward_round_trip_as_text():
    text = '''@function
def main(x: Tensor((4, 6), "float32"), g: Tensor((2, 3), "float32")) -> Tuple(Tensor((2, 3), "float32"), Tensor((4, 6), "float32")):
    lv: Tensor((2, 3), "float32") = strided_slice(x, [0, 1], [-1, 9223372036854775807], [-5, 0], strides=[-2, -2])
    lv1: Tensor((4, 6), "float32") = strided_slice_backward(g, (4, 6), [0, 1], [-1, 9223372036854775807], [-5, 0], strides=[-2, -2])
    return (lv, lv1)
'''
    mod = aj.parse(text)
    assert mod.script() == text
    x, g = rand((4, 6), "float32"), rand((2, 3), "float32", seed=2)
    got, back = aj.build(mod)["main"](x, g)
    np.testing.assert_array_equal(got, x[-1:-5:-2, ::-2])
    want = np.zeros_like(x)
    want[-1:-5:-2, ::-2] = g
    np.testing.assert_array_equal(back, want)


@pytest.mark.parametrize("begin,end,stride,dim", [
    (0, BIG, 1, "n"), (2, BIG, 1, "n - 2"), (BIG, -BIG, -1, "n"), (-1, -BIG, -1, "n"), (1, -1, 1, "n - 2"),
    (0, 2, 1, 2), (-3, -1, 1, 2), (-1, -4, -1, 3), (-1, -6, -2, 3), (1, 5, 3, 2),
])
def test_symbolic_slices_whose_length_is_a_polynomial(begin, end, stride, dim):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, "n"), "float64")
    y = aj.op.strided_slice(x, [1], [begin], [end], [stride])
    assert y.type == aj.TensorType((3, dim), "float64")
    f = aj.build(bb.finish(y))["main"]
    for n in (6, 9):
        a = rand((3, n), "float64")
        np.testing.assert_array_equal(f(a), a[:, begin:end:stride])


@pytest.mark.parametrize("begin,end,stride", [(0, BIG, 2), (1, BIG, -1), (-2, 3, 1), (-1, -BIG, -2)])
def test_symbolic_slice_of_unknown_length_names_the_axis(begin, end, stride):
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (3, "n"), "float64")
        with pytest.raises(aj.TypeInferenceError, match=r"op 'strided_slice': axis 1 of size n"):
            aj.op.strided_slice(x, [1], [begin], [end], [stride])


def test_symbolic_dim_too_short_for_the_bounds_fails_at_run_time():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n",), "float64")
    f = aj.build(bb.finish(aj.op.strided_slice(x, [0], [3], [BIG])))["main"]
    with pytest.raises(aj.ExecutionError, match="n - 3"):
        f(np.zeros(2))
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n",), "float64")
    dy = bb.param("dy", (2,), "float64")
    y = aj.op.exp(x)
    g = aj.build(bb.finish((aj.op.strided_slice(y, [0], [0], [2]),
                            aj.op.strided_slice_backward(dy, ("n",), [0], [0], [2]))))["main"]
    with pytest.raises(aj.ExecutionError, match=r"the slice of x \(1,\) has shape \(1,\) in this run, but its type has \(2,\)"):
        g(np.zeros(1), np.zeros(2))  # y[0:2] of a y of 1 element (y dies there: the view is refused, the kernel fails)
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n",), "float64")
    dy = bb.param("dy", (2,), "float64")
    g = aj.build(bb.finish(aj.op.strided_slice_backward(dy, ("n",), [0], [0], [2]) + x))["main"]
    with pytest.raises(aj.ExecutionError, match="out of range for a symbolic dim"):
        g(np.zeros(1), np.zeros(2))  # dy of 2 elements for the 1-element slice [0:2] of a (1,)


@pytest.mark.parametrize("attrs,match", [
    (dict(axes=[0], begin=[0], end=[2], strides=[0]), r"strides\[0\] \(axis 0\) is 0"),
    (dict(axes=[0, 1], begin=[0], end=[2, 2]), "attr 'begin' has 1 entries but 'axes' has 2"),
    (dict(axes=[0], begin=[0], end=[2, 3]), "attr 'end' has 2 entries"),
    (dict(axes=[1], begin=[0], end=[2], strides=[1, 1]), "attr 'strides' has 2 entries"),
    (dict(axes=[2], begin=[0], end=[2]), "axis 2"),
    (dict(axes=[0, -2], begin=[0, 0], end=[2, 2]), "duplicate|twice|repeated"),
    (dict(axes=[0], begin=[0]), "missing a required argument: 'end'"),
])
def test_bad_attrs_are_type_errors(attrs, match):
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (4, 6), "float32")
        with pytest.raises(aj.TypeInferenceError, match=match):
            aj.op.strided_slice(x, **attrs)


def fresh_param(shape):
    """A param of a new builder (an op error abandons its builder: one per case)."""
    return aj.FunctionBuilder("main").param("x", shape, "float32")


def test_non_int_bounds_are_errors():
    with pytest.raises(aj.Error, match="op 'strided_slice': attr 'begin'"):
        aj.op.strided_slice(fresh_param((4, 6)), [0], [0.5], [2])
    with pytest.raises(aj.Error, match="op 'strided_slice': attr 'axes'"):
        aj.op.strided_slice(fresh_param((4, 6)), "0", [0], [2])


def test_bad_backward_shapes_and_arguments():
    with pytest.raises(aj.TypeInferenceError, match=r"dy has shape \(2, 3\), but the slice of shape \(4, 6\)"):
        aj.op.strided_slice_backward(fresh_param((2, 3)), (4, 6), [0], [0], [3])
    g = fresh_param((2, 3))
    with pytest.raises(aj.TypeInferenceError, match="argument 'x' must be a tensor"):
        aj.op.strided_slice((g, g), [0], [0], [1])


def test_flops_are_zero_like_the_other_data_movement():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 6), "float32")
    mod = bb.finish(aj.op.strided_slice(x, [0], [1], [3]))
    assert aj.analysis.estimate_flops(mod["main"]) == 0


# ---- the executor's views: a contiguous slice of a dying input is not copied ----

def exp_then_slice(axes, begin, end, strides=None, then=None):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (64, 32), "float64")
    y = aj.op.exp(x)
    z = aj.op.strided_slice(y, axes, begin, end, strides)
    return bb.finish(then(y, z) if then else z)


ONE = 64 * 32 * 8  # bytes of y


@pytest.mark.parametrize("axes,begin,end,strides,viewed", [
    ([0], [16], [48], None, True),              # rows 16:48: one block
    ([0, 1], [5, 0], [6, 32], None, True),      # one whole row
    ([0, 1], [5, 3], [6, 9], None, True),       # part of one row
    ([1], [0], [16], None, False),              # the left half of every row
    ([0], [0], [64], [2], False),               # every other row
    ([0], [47], [15], [-1], False),             # rows reversed
])
def test_a_contiguous_slice_of_a_dying_input_is_read_in_place(axes, begin, end, strides, viewed):
    fn = aj.build(exp_then_slice(axes, begin, end, strides))["main"]
    x = rand((64, 32), "float64") / 10
    want = numpy_slice(np.exp(x), axes, begin, end, strides or [1] * len(axes))
    pooled = []
    for _ in range(3):  # later runs reuse the pool: no drift in what it counts
        np.testing.assert_allclose(fn(x), want, rtol=1e-14)
        assert (fn.peak_bytes == ONE) == viewed, fn.peak_bytes
        pooled.append(fn.pool_bytes)
    # y's whole buffer returns to the pool under its full size, even when the
    # result (a view of part of it) is what is given back: nothing piles up.
    assert pooled[0] == pooled[1] == pooled[2]


def test_a_viewed_buffer_returns_to_the_pool_whole():
    # z = y[16:48] views y, and sum(z) frees it: the next run's exp reuses
    # y's buffer (filed under y's size, not z's), so the pool holds one buffer.
    fn = aj.build(exp_then_slice([0], [16], [48], then=lambda y, z: aj.op.sum(z)))["main"]
    x = rand((64, 32), "float64") / 10
    for _ in range(3):
        np.testing.assert_allclose(fn(x), np.exp(x)[16:48].sum(), rtol=1e-12)
        assert fn.pool_bytes == ONE


def test_a_view_is_safe_from_later_in_place_ops():
    # z = y[16:48] is a view of y only if y dies there; here y is used again,
    # so z is a copy, and negative(z) (in place over z) leaves y intact.
    mod = exp_then_slice([0], [16], [48], then=lambda y, z: (aj.op.negative(z), aj.op.sum(y)))
    x = rand((64, 32), "float64") / 10
    neg, total = aj.build(mod)["main"](x)
    np.testing.assert_allclose(neg, -np.exp(x)[16:48], rtol=1e-14)
    np.testing.assert_allclose(total, np.exp(x).sum(), rtol=1e-12)


def test_in_place_ops_over_a_view_write_only_the_dead_input():
    # z views y (dead); negative writes over z, then a second slice of that
    # result views it again: every value read is the one NumPy computes.
    def then(y, z):
        w = aj.op.negative(z)
        return aj.op.add(aj.op.strided_slice(w, [0], [1], [3]), 1.0)

    fn = aj.build(exp_then_slice([0], [16], [48], then=then))["main"]
    x = rand((64, 32), "float64") / 10
    for _ in range(2):
        np.testing.assert_allclose(fn(x), 1.0 - np.exp(x)[17:19], rtol=1e-12)


def test_a_param_is_sliced_by_copy_and_stays_unchanged():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (8, 4), "float64")
    mod = bb.finish(aj.op.negative(aj.op.strided_slice(x, [0], [2], [6])))
    x0 = rand((8, 4), "float64")
    before = x0.copy()
    np.testing.assert_array_equal(aj.build(mod)["main"](x0), -before[2:6])
    np.testing.assert_array_equal(x0, before)
