"""The elementwise CPU kernels (op/binary.cc, op/unary.cc) against NumPy:
every op and every dtype its type rule admits, broadcasting (table-driven and
property-based), zero-size dims, NaN/inf, non-contiguous and read-only inputs,
symbolic dims, and the documented integer, bool and conversion semantics."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import adjoint as aj
from conftest import run_op

RNG = np.random.default_rng(0)
FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
ALL_DTYPES = FLOATS + INTS + ["bool"]
TINY = {"float32": 1e-37, "float64": 1e-300}  # atol: below this, results are subnormal
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, 1e-30]


def rand(shape, dtype, low=-50, high=50):
    """Random values of `dtype`: normal * 3 for floats, [low, high) for ints."""
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype in INTS:
        return RNG.integers(low, high, shape).astype(dtype)
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def wrap(values, dtype):
    """Python ints wrapped into `dtype` (two's complement), as NumPy does."""
    bits = np.iinfo(dtype).bits
    values = np.asarray(values, dtype=object)
    return np.array([(int(v) + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1) for v in values.ravel()],
                    dtype=dtype).reshape(values.shape)


def int_power(a, b):
    """The documented integer power: exact (wrapping); a negative exponent
    gives 0, except base 1 gives 1 and base -1 gives +-1 by parity."""
    def one(x, y):
        x, y = int(x), int(y)
        if y < 0:
            return 1 if x == 1 else (-1) ** (-y) if x == -1 else 0
        return x**y
    a, b = np.broadcast_arrays(a, b)
    return wrap(np.array([one(x, y) for x, y in zip(a.ravel(), b.ravel())], dtype=object).reshape(a.shape),
                a.dtype)


def arithmetic_ref(op, a, b):
    """NumPy's result: in the operands' dtype, but for divide on ints and bool
    (np.divide, float64); ints use int_power; bool computes on 0/1 ints and
    keeps != 0 (floor_divide and floor_mod take no bools); floor_mod is
    np.remainder."""
    if op == "divide" or a.dtype != bool:
        if op == "power" and a.dtype.kind == "i":
            return int_power(a, b)
        with np.errstate(all="ignore"):
            return getattr(np, "remainder" if op == "floor_mod" else op)(a, b)
    return arithmetic_ref(op, a.astype(np.int64), b.astype(np.int64)) != 0


ARITHMETIC = ["add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "power", "maximum", "minimum"]
NUMERIC_ONLY = {"floor_divide", "floor_mod"}
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
BROADCAST_SHAPES = [
    ((5,), (5,)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)), ((2, 1, 3), (4, 1)),
    ((64, 67), (67,)), ((64, 1), (64, 33)), ((1,), (2, 3)), ((2, 3), (1, 1)), ((0, 3), (3,)),
    ((2, 0, 4), (1, 4)), ((3, 1), (0,)),
]


def binary_operands(op, dtype, sa, sb):
    if op == "power" and dtype in INTS:
        return rand(sa, dtype, -5, 6), rand(sb, dtype, -3, 9)
    a, b = rand(sa, dtype), rand(sb, dtype)
    if op == "power" and dtype in FLOATS:
        a = np.abs(a)  # a negative base to a fractional power is NaN: tested with SPECIAL
    return a, b


def assert_binary_matches(op, a, b):
    got = run_op(op, a, b)
    want = arithmetic_ref(op, a, b) if op in ARITHMETIC else getattr(np, op)(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if op == "power" and a.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if a.dtype == np.float32 else 1e-12, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES)
@pytest.mark.parametrize("op,dtype", [(op, dtype) for op in ARITHMETIC + COMPARISONS for dtype in ALL_DTYPES
                                      if not (op in NUMERIC_ONLY and dtype == "bool")])
def test_binary_matches_numpy(op, dtype, sa, sb):
    assert_binary_matches(op, *binary_operands(op, dtype, sa, sb))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ARITHMETIC + COMPARISONS)
def test_binary_nan_and_inf_follow_numpy(op, dtype):
    values = np.array(SPECIAL, dtype=dtype)
    assert_binary_matches(op, values[:, None], values[None, :])  # every pair of specials


@settings(max_examples=40)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, min_side=0, max_side=4),
       op=st.sampled_from(["add", "maximum", "divide", "floor_mod", "less_equal"]), dtype=st.sampled_from(["float32", "int64"]))
def test_binary_broadcasting_for_all_shapes(shapes, op, dtype):
    sa, sb = shapes.input_shapes
    assert_binary_matches(op, rand(sa, dtype), rand(sb, dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_wraps_and_floor_divides(dtype):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([hi, lo, hi, 7, -7, 7, -7, 0, lo, lo, 5, -5, 0], dtype)
    b = np.array([1, -1, 2, 2, 2, -2, -2, 3, -1, 1, 0, 0, 0], dtype)
    np.testing.assert_array_equal(run_op("add", a, b)[:2], [lo, hi])
    np.testing.assert_array_equal(run_op("multiply", a, b)[2], wrap([int(hi) * 2], dtype)[0])
    np.testing.assert_array_equal(run_op("floor_divide", a, b),
                                  np.array([hi, lo, hi // 2, 3, -4, -4, 3, 0, lo, lo, 0, 0, 0], dtype))
    np.testing.assert_array_equal(run_op("floor_mod", a, b),
                                  np.array([0, 0, 1, 1, 1, -1, -1, 0, 0, 0, 0, 0, 0], dtype))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run_op("floor_divide", a, b), np.floor_divide(a, b))
        np.testing.assert_array_equal(run_op("floor_mod", a, b), np.remainder(a, b))
        got, want = run_op("divide", a, b), np.divide(a, b)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)  # 5 / 0 = inf, -5 / 0 = -inf, 0 / 0 = nan
    assert got[-3] == np.inf and got[-2] == -np.inf and np.isnan(got[-1])


@pytest.mark.parametrize("op", sorted(NUMERIC_ONLY))
def test_floor_ops_reject_bool(op):
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (3,), "bool")
        with pytest.raises(aj.TypeInferenceError, match=f"op '{op}'.*bool"):
            getattr(aj.op, op)(x, x)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_power(dtype):
    base = np.array([2, -3, 0, 0, 1, -1, -1, 2, 5, 3], dtype)
    exp = np.array([10, 3, 0, 5, -7, -3, -4, -1, -2, 100], dtype)
    want = np.array([1024, -27, 1, 0, 1, -1, 1, 0, 0, 0], dtype)
    want[-1] = wrap([3**100], dtype)[0]
    np.testing.assert_array_equal(run_op("power", base, exp), want)


def test_bool_arithmetic_is_int_arithmetic_then_nonzero():
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    table = {"add": a | b, "subtract": a ^ b, "multiply": a & b,
             "power": a | ~b, "maximum": a | b, "minimum": a & b}
    for op, want in table.items():
        got = run_op(op, a, b)
        assert got.dtype == bool
        np.testing.assert_array_equal(got, want, err_msg=op)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run_op("divide", a, b), np.divide(a, b))  # float64, as NumPy


@pytest.mark.parametrize("op", ["add", "less"])
def test_zero_dim_operand(op):
    assert_binary_matches(op, rand((), "float32"), rand((2, 3), "float32"))


def test_scalar_constant_operand():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3), "float32")
    f = aj.build(bb.finish(aj.op.subtract(2.0, aj.op.multiply(x, 3.0))))["main"]
    a = rand((2, 3), "float32")
    np.testing.assert_array_equal(f(a), np.float32(2) - a * np.float32(3))


def erfc(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


# Float references, evaluated in float64 and rounded to the dtype under test.
UNARY_REF = {
    "negative": np.negative, "exp": np.exp, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": sigmoid, "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * erfc(-x / math.sqrt(2)), "silu": lambda x: x * sigmoid(x),
    "abs": np.abs, "square": np.square, "erf": erf,
}
TRANSCENDENTAL = {"exp", "log", "log1p", "sin", "cos", "tanh", "sigmoid", "gelu", "silu", "erf"}
NUMERIC_UNARY = ["negative", "relu", "abs", "square"]  # these also take ints


def assert_unary_matches(op, x):
    got = run_op(op, x)
    assert got.shape == x.shape and got.dtype == x.dtype
    with np.errstate(all="ignore"):
        want = UNARY_REF[op](x.astype(np.float64)).astype(x.dtype)
    if x.dtype == np.float32:
        rtol = 1e-5 if op in TRANSCENDENTAL else 1e-6
    else:
        rtol = 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=TINY[x.dtype.name], err_msg=op)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (64, 67), (0,), (4, 0, 2)])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_REF))
def test_unary_matches_numpy(op, dtype, shape):
    x = rand(shape, dtype)
    if op in ("log", "log1p", "sqrt", "rsqrt"):
        x = np.abs(x)
    assert_unary_matches(op, x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_REF))
def test_unary_over_the_whole_range(op, dtype):
    """Dense grids: every branch of the float32 exp/tanh/gelu approximations,
    and where results overflow or become subnormal."""
    edges = [0.0, -0.0, 88.72, 88.73, 709.78, 709.79]
    x = np.concatenate([np.linspace(-20, 20, 4001), np.linspace(-0.4, 0.4, 801),
                        np.linspace(-120, 100, 2201), edges]).astype(dtype)
    if op in ("log", "log1p", "sqrt", "rsqrt"):
        x = np.abs(x)
    assert_unary_matches(op, x)


def test_float32_erf_is_within_its_documented_ulp():
    """float32 erf is a vectorizing approximation: a Taylor polynomial below
    |x| = 1 and 1 - erfc above, which the docs put within 1.6 ulp of erf.
    A dense grid over both branches, their meeting point and the tails."""
    x = np.concatenate([np.linspace(-6, 6, 600_001), np.linspace(0.99, 1.01, 20_001),
                        np.geomspace(1e-38, 1, 20_001), [0.0, -0.0, 10.9, 11.0, 11.1]]).astype(np.float32)
    got = run_op("erf", x).astype(np.float64)
    want = erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) / ulp).max() <= 1.6
    assert np.array_equal(np.signbit(got), np.signbit(x))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_REF))
def test_unary_nan_and_inf(op, dtype):
    x = np.array(SPECIAL, dtype)
    got = run_op(op, x)
    if op in ("gelu", "silu"):  # the formulas give NaN at -inf; the limit is 0
        assert got[2] == 0
        got, x = np.delete(got, 2), np.delete(x, 2)
    with np.errstate(all="ignore"):
        want = UNARY_REF[op](x.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=TINY[dtype], err_msg=op)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", NUMERIC_UNARY)
def test_integer_unary_wraps(op, dtype):
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    x = np.concatenate([rand((50,), dtype), np.array([lo, lo + 1, hi, 0, -1, 1], dtype)])
    got = run_op(op, x)
    assert got.dtype == x.dtype
    want = {"negative": wrap([-int(v) for v in x], dtype), "abs": wrap([abs(int(v)) for v in x], dtype),
            "square": wrap([int(v) ** 2 for v in x], dtype), "relu": np.maximum(x, 0)}[op]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_astype_matches_numpy(src, dst):
    x = rand((3, 4), src, -1000, 1000)
    if src in FLOATS:
        x = np.concatenate([x.ravel(), np.array([0.0, -0.0, 0.99, -0.99, 1.5, -1.5, 2.5, 1e5], src)])
    got = run_op("astype", x, dtype=dst)
    assert got.dtype == np.dtype(dst) and got.shape == x.shape
    np.testing.assert_array_equal(got, x.astype(dst))


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", INTS)
def test_float_to_int_saturates_and_maps_nan_to_zero(src, dst):
    lo, hi = np.iinfo(dst).min, np.iinfo(dst).max
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0**63, -(2.0**63), 2.0**31, -(2.0**31), -7.9], src)
    want = np.array([0, hi, lo, hi, lo, hi, lo, min(2**31, hi), -(2**31), -7], dst)
    np.testing.assert_array_equal(run_op("astype", x, dtype=dst), want)


def test_float_to_bool_is_nonzero():
    x = np.array([0.0, -0.0, np.nan, np.inf, 1e-30], np.float32)
    np.testing.assert_array_equal(run_op("astype", x, dtype="bool"), [False, False, True, True, True])


def test_non_contiguous_and_read_only_inputs():
    base = rand((6, 8), "float64")
    strided, transposed = base[:, ::2], base[:3, :3].T
    frozen = rand((6, 4), "float64")
    frozen.setflags(write=False)
    before = frozen.copy()
    np.testing.assert_array_equal(run_op("add", strided, frozen), strided + frozen)
    other = base[:3, 4:7]
    np.testing.assert_array_equal(run_op("maximum", transposed, other), np.maximum(transposed, other))
    np.testing.assert_allclose(run_op("exp", strided), np.exp(strided), rtol=1e-12)
    np.testing.assert_array_equal(run_op("astype", transposed, dtype="int32"), transposed.astype(np.int32))
    np.testing.assert_array_equal(frozen, before)


def test_symbolic_dims_at_two_sizes():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 4), "float32")
    b = bb.param("b", (4,), "float32")
    f = aj.build(bb.finish(aj.op.sigmoid(aj.op.gelu(aj.op.add(x, b)))))["main"]
    bias = rand((4,), "float32")
    for n in (3, 17):
        a = rand((n, 4), "float32")
        z = (a + bias).astype(np.float64)
        got = f(a, bias)
        assert got.shape == (n, 4) and got.dtype == np.float32
        np.testing.assert_allclose(got, sigmoid(0.5 * z * erfc(-z / math.sqrt(2))), rtol=1e-5)


NEW_BINARY = ["floor_divide", "floor_mod", "not_equal", "less_equal", "greater_equal"]


@pytest.mark.parametrize("op", NEW_BINARY)
def test_new_binary_ops_print_and_parse(op):
    bb = aj.FunctionBuilder("main")
    x, y = bb.param("x", (2, 3), "int64"), bb.param("y", (3,), "int64")
    mod = bb.finish(getattr(aj.op, op)(x, y))
    text = mod.script()
    assert f"= {op}(x, y)" in text
    aj.assert_structural_equal(aj.parse(text), mod)
    assert aj.parse(text).script() == text


@pytest.mark.parametrize("op", NEW_BINARY + ["divide"])
def test_new_binary_ops_reject_mixed_dtypes_and_bad_shapes(op):
    bb = aj.FunctionBuilder("main")  # an op error abandons its builder: one builder per case
    i, f = bb.param("i", (2, 3), "int32"), bb.param("f", (2, 3), "float32")
    with pytest.raises(aj.TypeInferenceError, match=f"op '{op}'.*(int32.*float32|float32.*int32)"):
        getattr(aj.op, op)(i, f)
    bb = aj.FunctionBuilder("main")
    f, g = bb.param("f", (2, 3), "float32"), bb.param("g", (4,), "float32")
    with pytest.raises(aj.TypeInferenceError, match=f"op '{op}'"):
        getattr(aj.op, op)(f, g)


def test_divide_types_ints_and_bool_as_float64():
    with aj.FunctionBuilder("main") as bb:
        for dtype, want in [("int32", "float64"), ("int64", "float64"), ("bool", "float64"), ("float32", "float32")]:
            x = bb.param(f"x_{dtype}", (2,), dtype)
            assert aj.op.divide(x, x).type.dtype == want
