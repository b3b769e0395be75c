"""CPU kernels of the manipulate and create ops, checked against NumPy.

Table-driven: each case runs one op over random inputs of every dtype the op
admits, with negative axes and zero-size dims among the cases; Hypothesis
covers permute_dims, reshape, broadcast_to and collapse_sum_to over all small
shapes. Data movement must match exactly; sums to rtol 1e-6 (float32) and
1e-12 (float64).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from conftest import build_op, run_op

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
NUMERIC = ["float32", "float64", "int32", "int64"]
RTOL = {"float32": 1e-6, "float64": 1e-12}


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def positive(shape, dtype, seed=0):
    """Data for sums: floats in [0.5, 1.5) so no sum cancels."""
    if dtype in RTOL:
        return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)
    return rand(shape, dtype, seed)


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def assert_sum(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.name in RTOL:
        np.testing.assert_allclose(got, want, rtol=RTOL[want.dtype.name])
    else:
        np.testing.assert_array_equal(got, want)


def np_collapse_sum_to(x, shape):
    """NumPy reference: sum over x's broadcast dims (logical or for bool)."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    if x.dtype == np.bool_:
        return np.logical_or.reduce(x, axis=axes).reshape(shape)
    acc = x.astype(np.float64) if x.dtype.kind == "f" else x
    return np.sum(acc, axis=axes, dtype=acc.dtype).reshape(shape).astype(x.dtype)


# ---- permute_dims ----------------------------------------------------------

PERMUTE_CASES = [
    ((3, 4), None),
    ((2, 3, 4), None),
    ((2, 3, 4), [0, 2, 1]),
    ((2, 3, 4), [-1, 0, -2]),
    ((2, 3, 4), [0, 1, 2]),
    ((4, 128, 8, 64), [0, 2, 1, 3]),  # attention heads: runs along the kept last axis
    ((2, 8, 16, 64), [0, 1, 3, 2]),  # last two swapped: tiled transpose
    ((37, 70), None),  # partial tiles and 4x4 remainders
    ((2, 33, 5, 67), [0, 3, 2, 1]),
    ((3, 8, 130, 9), [2, 0, 3, 1]),
    ((50, 3), None),  # fewer than 4 rows or columns: no tiles
    ((2, 3, 70), [2, 0, 1]),
    ((1, 5, 1, 6), [3, 2, 1, 0]),  # size-1 dims dropped
    ((2, 1, 3), [2, 1, 0]),
    ((0, 3, 4), [1, 0, 2]),
    ((3, 0), None),
    ((5,), None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axes", PERMUTE_CASES)
def test_permute_dims(shape, axes, dtype):
    x = rand(shape, dtype)
    assert_same(run_op("permute_dims", x, axes=axes), np.transpose(x, axes))


@settings(max_examples=150)
@given(
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=5),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
)
def test_permute_dims_all_shapes(shape, data, dtype):
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)))
    axes = [a - rank if data.draw(st.booleans()) else a for a in perm]
    x = rand(shape, dtype)
    assert_same(run_op("permute_dims", x, axes=axes), np.transpose(x, perm))


# ---- reshape, expand_dims, squeeze ------------------------------------------

RESHAPE_CASES = [
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (24,)),
    ((2, 3, 4), (-1,)),
    ((6,), (1, 2, 1, 3, 1)),
    ((4, 128, 8, 64), (4, 128, 512)),
    ((0, 3), (3, -1)),
    ((2, 0, 5), (0, 10)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,target", RESHAPE_CASES)
def test_reshape(shape, target, dtype):
    x = rand(shape, dtype)
    assert_same(run_op("reshape", x, shape=target), x.reshape(target))


@settings(max_examples=100)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_reshape_all_shapes(shape, data):
    x = rand(shape, "float32")
    target = data.draw(st.permutations(shape))
    if x.size and data.draw(st.booleans()):
        target = [-1 if i == 0 else d for i, d in enumerate(target)]
    assert_same(run_op("reshape", x, shape=tuple(target)), x.reshape(target))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,axis", [((2, 3), [0]), ((2, 3), [-1]), ((2, 3), [0, -1]), ((2, 3), [1, 3]), ((0, 3), [1])]
)
def test_expand_dims(shape, axis, dtype):
    x = rand(shape, dtype)
    assert_same(run_op("expand_dims", x, axis=axis), np.expand_dims(x, tuple(axis)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,axis", [((1, 2, 1, 3), None), ((1, 2, 1, 3), [0]), ((1, 2, 1, 3), [-2]), ((1, 0, 1), None), ((2, 1), [1])]
)
def test_squeeze(shape, axis, dtype):
    x = rand(shape, dtype)
    want = np.squeeze(x) if axis is None else np.squeeze(x, tuple(axis))
    assert_same(run_op("squeeze", x, axis=axis), want)


# ---- broadcast_to and collapse_sum_to ----------------------------------------

BROADCAST_CASES = [
    ((3,), (2, 3)),
    ((2, 1), (2, 5)),
    ((1, 3, 1), (4, 3, 5)),
    ((512,), (64, 512)),
    ((5, 1, 7), (2, 5, 3, 7)),
    ((1,), (3, 4)),
    ((2, 3), (2, 3)),
    ((1, 3), (0, 3)),
    ((0, 1), (0, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,target", BROADCAST_CASES)
def test_broadcast_to(shape, target, dtype):
    x = rand(shape, dtype)
    assert_same(run_op("broadcast_to", x, shape=target), np.broadcast_to(x, target))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,target",
    [(t, s) for s, t in BROADCAST_CASES]
    + [
        ((3, 300), (3, 1)),  # long runs: pairwise recursion
        ((20, 5, 7), (5, 7)),  # row accumulation, eight rows per pass
        ((4, 3, 10, 2), (3, 1, 2)),
        ((4, 8, 16, 16), (1, 8, 1, 16)),
        ((6, 4), (1,)),
        ((0, 3), (3,)),
    ],
)
def test_collapse_sum_to(shape, target, dtype):
    x = positive(shape, dtype)
    assert_sum(run_op("collapse_sum_to", x, shape=target), np_collapse_sum_to(x, target))


@st.composite
def broadcast_pair(draw):
    """(small, big): small broadcasts to big (some dims 1, some leading dims dropped)."""
    big = draw(st.lists(st.integers(0, 5), min_size=1, max_size=4))
    drop = draw(st.integers(0, len(big) - 1))
    small = [1 if draw(st.booleans()) else d for d in big[drop:]]
    return tuple(small), tuple(big)


@settings(max_examples=150)
@given(pair=broadcast_pair(), dtype=st.sampled_from(DTYPES))
def test_broadcast_to_all_shapes(pair, dtype):
    small, big = pair
    x = rand(small, dtype)
    assert_same(run_op("broadcast_to", x, shape=big), np.broadcast_to(x, big))


@settings(max_examples=150)
@given(pair=broadcast_pair(), dtype=st.sampled_from(DTYPES))
def test_collapse_sum_to_all_shapes(pair, dtype):
    small, big = pair
    x = positive(big, dtype)
    assert_sum(run_op("collapse_sum_to", x, shape=small), np_collapse_sum_to(x, small))


def test_collapse_sum_to_inverts_broadcast_to():
    x = rand((5, 1, 7), "float64")
    mod = build_op("broadcast_to", x, shape=(3, 5, 4, 7))
    big = aj.build(mod)["main"](x)
    np.testing.assert_allclose(run_op("collapse_sum_to", big, shape=(5, 1, 7)), 12 * x, rtol=1e-12)


def test_integer_sums_wrap():
    x = np.full((4, 3), 2**30, dtype="int32")
    assert_same(run_op("collapse_sum_to", x, shape=(3,)), x.sum(axis=0, dtype="int32"))


# ---- concat and split ----------------------------------------------------------

CONCAT_CASES = [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 0)], -1),
    ([(2, 3, 4)] * 3, 1),
    ([(0, 3), (2, 3)], 0),
    ([(4, 128, 256), (4, 128, 256)], -1),
    ([(5,)], 0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes,axis", CONCAT_CASES)
def test_concat(shapes, axis, dtype):
    xs = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
    assert_same(run_op("concat", xs, axis=axis), np.concatenate(xs, axis=axis))


SPLIT_CASES = [
    ((6, 4), 3, 0),
    ((6, 4), 1, 0),
    ((6, 4), [1, 3], 0),
    ((2, 6), [0, 2, 2, 6], -1),  # empty parts
    ((4, 5, 6), 2, -1),
    ((4, 5, 6), [2], 1),
    ((0, 4), 2, 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,spec,axis", SPLIT_CASES)
def test_split(shape, spec, axis, dtype):
    x = rand(shape, dtype)
    got = run_op("split", x, indices_or_sections=spec, axis=axis)
    want = np.split(x, spec, axis=axis)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)


# ---- take ------------------------------------------------------------------------

TAKE_CASES = [
    ((5, 3), [0, -1, 2, 2], 0),
    ((5, 3), [[0, 1], [-3, 2]], 1),
    ((2, 3, 4), [3, -4, 0], -1),
    ((2, 3, 4), [1], -2),
    ((100, 16), [[7, 99], [-100, 0]], 0),  # embedding lookup
    ((2, 3, 4), [], 1),
    ((2, 0, 4), [1, 0], 2),
]


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,indices,axis", TAKE_CASES)
def test_take(shape, indices, axis, dtype, index_dtype):
    x = rand(shape, dtype)
    idx = np.array(indices, dtype=index_dtype)
    assert_same(run_op("take", x, idx, axis=axis), np.take(x, idx, axis=axis))


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("shape,indices,axis,bad", [((5, 3), [0, 5], 0, 5), ((5, 3), [-4], 1, -4), ((0, 3), [0], 0, 0)])
def test_take_out_of_range(shape, indices, axis, bad, index_dtype):
    x = rand(shape, "float32")
    with pytest.raises(aj.ExecutionError, match=rf"op 'take': index {bad} is out of range for axis {axis}"):
        run_op("take", x, np.array(indices, dtype=index_dtype), axis=axis)


# ---- where ----------------------------------------------------------------------

WHERE_CASES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 1), (1, 3), (3,)),
    ((4, 1, 5), (3, 1), (1,)),
    ((3,), (2, 3), (2, 1)),
    ((8, 16, 16), (2, 8, 16, 16), (1,)),
    ((2, 0), (2, 1), (1,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cond_shape,a_shape,b_shape", WHERE_CASES)
def test_where(cond_shape, a_shape, b_shape, dtype):
    cond = rand(cond_shape, "bool", seed=1)
    a, b = rand(a_shape, dtype, seed=2), rand(b_shape, dtype, seed=3)
    assert_same(run_op("where", cond, a, b), np.where(cond, a, b))


def test_where_constant_branch():
    cond, x = rand((3, 5), "bool"), rand((3, 5), "float32")
    bb = aj.FunctionBuilder("main")
    c, p = bb.param("c", (3, 5), "bool"), bb.param("x", (3, 5), "float32")
    mod = bb.finish(aj.op.where(c, p, np.array(-np.inf, dtype="float32")))
    assert_same(aj.build(mod)["main"](cond, x), np.where(cond, x, np.float32(-np.inf)))


# ---- cumsum and triu --------------------------------------------------------------

CUMSUM_CASES = [((5,), 0), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), -3), ((2, 0, 3), 1), ((2, 0, 3), -1)]


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("shape,axis", CUMSUM_CASES)
def test_cumsum(shape, axis, dtype):
    x = rand(shape, dtype)
    assert_sum(run_op("cumsum", x, axis=axis), np.cumsum(x, axis=axis, dtype=x.dtype))


def test_cumsum_integers_wrap_in_their_type():
    x = np.full((2, 4), 2**30, dtype="int32")
    assert_same(run_op("cumsum", x, axis=1), np.cumsum(x, axis=1, dtype="int32"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [-9, -2, 0, 1, 3, 2**62])
@pytest.mark.parametrize("shape", [(4, 5), (5, 4), (2, 3, 6, 4), (0, 3), (3, 0, 2)])
def test_triu(shape, k, dtype):
    x = rand(shape, dtype)
    assert_same(run_op("triu", x, k=k), np.triu(x, k))


# ---- creation ops -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (4,), (0, 2)])
def test_zeros_ones(shape, dtype):
    assert_same(run_op("zeros", shape=shape, dtype=dtype), np.zeros(shape, dtype))
    assert_same(run_op("ones", shape=shape, dtype=dtype), np.ones(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [2.5, -3.75, 0.0, 1e9])
def test_full(value, dtype):
    assert_same(run_op("full", shape=(2, 3), fill_value=value, dtype=dtype), np.full((2, 3), value, dtype))


@pytest.mark.parametrize("dtype", [None, *DTYPES])
def test_filled_like(dtype):
    x = rand((3, 4), "float32")
    want_dtype = dtype or "float32"
    assert_same(run_op("zeros_like", x, dtype=dtype), np.zeros_like(x, dtype=want_dtype))
    assert_same(run_op("ones_like", x, dtype=dtype), np.ones_like(x, dtype=want_dtype))
    assert_same(run_op("full_like", x, fill_value=-2.5, dtype=dtype), np.full_like(x, -2.5, dtype=want_dtype))


@pytest.mark.parametrize(
    "value,dtype", [(3e9, "int32"), (-2147483649.0, "int32"), (float("nan"), "int64"), (float("inf"), "int32"), (1e19, "int64")]
)
def test_full_rejects_unrepresentable_integer_fill(value, dtype):
    with pytest.raises(aj.TypeInferenceError, match=rf"op 'full': fill_value .* is out of range for dtype {dtype}"):
        with aj.FunctionBuilder("main") as bb:
            aj.op.full(shape=(2,), fill_value=value, dtype=dtype)
    assert bb.status == "abandoned" and bb not in aj.builder._stack()


@pytest.mark.parametrize("value, dtype, shown", [(2**31, "int32", "2147483648.0"), (-2**31 - 1, "int32", "-2147483649.0"),
                                                   (2**63 - 1, "int64", "9.223372036854776e+18")])
def test_full_out_of_range_message_shows_the_fill_value_exactly(value, dtype, shown):
    """The value as the text format writes it: it said 2.14748e+09 for 2**31, which reads as in range."""
    with pytest.raises(aj.TypeInferenceError) as info:
        with aj.FunctionBuilder("main"):
            aj.op.full(shape=(2,), fill_value=value, dtype=dtype)
    assert str(info.value) == f"op 'full': fill_value {shown} is out of range for dtype {dtype}"


def test_full_integer_bounds():
    assert_same(run_op("full", shape=(1,), fill_value=-2147483648.9, dtype="int32"), np.array([-2147483648], "int32"))
    assert_same(run_op("full", shape=(1,), fill_value=2147483647.9, dtype="int32"), np.array([2147483647], "int32"))


def test_rank_0_values():
    """Rank-0 tensors made in the graph (rank-0 params are covered by the executor's tests)."""
    x = positive((2, 3), "float64")
    bb = aj.FunctionBuilder("main")
    p = bb.param("x", (2, 3), "float64")
    s = aj.op.collapse_sum_to(p, ())
    outs = (s, aj.op.broadcast_to(s, (2, 2)), aj.op.expand_dims(s, [0]), aj.op.permute_dims(s),
            aj.op.reshape(s, (1, 1)), aj.op.full(shape=(), fill_value=3.0, dtype="int32"))
    got = aj.build(bb.finish(outs))["main"](x)
    total = x.sum()
    np.testing.assert_allclose(got[0], total, rtol=1e-12)
    assert got[0].shape == () and got[3].shape == ()
    for g, shape in zip(got[1:5], [(2, 2), (1,), (), (1, 1)]):
        assert_same(g, np.full(shape, got[0]))
    assert_same(got[5], np.array(3, "int32"))


# ---- input layouts and symbolic dims ----------------------------------------------------

LAYOUT_OPS = [
    ("permute_dims", {"axes": [1, 0, 2]}, lambda x: np.transpose(x, (1, 0, 2))),
    ("reshape", {"shape": (-1, 2)}, lambda x: x.reshape(-1, 2)),
    ("broadcast_to", {"shape": (2, 3, 4, 2)}, lambda x: np.broadcast_to(x, (2, 3, 4, 2))),
    ("cumsum", {"axis": 1}, lambda x: np.cumsum(x, axis=1)),
    ("triu", {"k": 1}, lambda x: np.triu(x, 1)),
    ("take", {"axis": 1}, None),
]


def layouts(x):
    """x as a strided view, a transposed view (both non-contiguous) and read-only."""
    big = np.zeros((x.shape[0], 2 * x.shape[1], x.shape[2]), x.dtype)
    big[:, ::2] = x
    fortran = np.asfortranarray(x)
    frozen = x.copy()
    frozen.setflags(write=False)
    return [big[:, ::2], fortran, frozen]


@pytest.mark.parametrize("op,attrs,ref", LAYOUT_OPS, ids=[o[0] for o in LAYOUT_OPS])
def test_noncontiguous_and_readonly_inputs(op, attrs, ref):
    x = rand((3, 4, 2), "float64")
    for view in layouts(x):
        assert not view.flags.c_contiguous or not view.flags.writeable
        if op == "take":
            idx = np.array([3, -1, 0])
            assert_same(run_op(op, view, idx, **attrs), np.take(x, idx, axis=1))
        else:
            assert_same(run_op(op, view, **attrs), ref(x))
        np.testing.assert_array_equal(view, x)


def test_symbolic_dim_at_two_sizes():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 4), "float32")
    idx = bb.param("idx", (3,), "int64")
    outs = (
        aj.op.permute_dims(x),
        aj.op.reshape(x, (-1, 2)),
        aj.op.broadcast_to(aj.op.collapse_sum_to(x, (4,)), ("n", 4)),
        aj.op.concat([x, x], axis=0),
        aj.op.split(x, [1, 3], axis=1),
        aj.op.take(x, idx, axis=0),
        aj.op.cumsum(x, axis=0),
        aj.op.triu(x, k=-1),
        aj.op.ones_like(x),
    )
    run = aj.build(bb.finish(outs))["main"]
    for n in (3, 7):
        xv = positive((n, 4), "float32", seed=n)
        iv = np.array([0, -1, n - 1])
        got = run(xv, iv)
        assert_same(got[0], xv.T)
        assert_same(got[1], xv.reshape(-1, 2))
        np.testing.assert_allclose(got[2], np.broadcast_to(xv.sum(axis=0), (n, 4)), rtol=1e-6)
        assert_same(got[3], np.concatenate([xv, xv]))
        for g, w in zip(got[4], np.split(xv, [1, 3], axis=1)):
            assert_same(g, w)
        assert_same(got[5], np.take(xv, iv, axis=0))
        np.testing.assert_allclose(got[6], np.cumsum(xv, axis=0), rtol=1e-6)
        assert_same(got[7], np.triu(xv, -1))
        assert_same(got[8], np.ones((n, 4), "float32"))
