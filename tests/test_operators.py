"""The operators and methods of exprs (operators.py): each builds the op it
names (structurally equal to the explicit aj.op calls, and golden text), and
computes what NumPy computes on the same arrays, with NumPy 2's dtype
promotion (Python numbers weak), for every dtype the operator applies to;
indexing against NumPy's basic indexing; and the errors of what is not
supported."""

import operator
import re

import numpy as np
import pytest

import adjoint as aj

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
RNG = np.random.default_rng(7)

ARITHMETIC = {  # symbol: (Python operator, op)
    "+": (operator.add, "add"), "-": (operator.sub, "subtract"), "*": (operator.mul, "multiply"),
    "/": (operator.truediv, "divide"), "//": (operator.floordiv, "floor_divide"),
    "%": (operator.mod, "floor_mod"), "**": (operator.pow, "power"),
}
COMPARISONS = {
    "==": (operator.eq, "equal"), "!=": (operator.ne, "not_equal"), "<": (operator.lt, "less"),
    "<=": (operator.le, "less_equal"), ">": (operator.gt, "greater"), ">=": (operator.ge, "greater_equal"),
}
OPERATORS = {**ARITHMETIC, **COMPARISONS}


def values(shape, dtype, nonzero=False):
    """Small values with both signs (and zeros unless nonzero), to divide by too."""
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype.startswith("int"):
        x = RNG.integers(-6, 7, shape).astype(dtype)
        return np.where(x == 0, 3, x).astype(dtype) if nonzero else x
    x = RNG.integers(-12, 13, shape).astype(dtype) / 4
    return np.where(x == 0, 1.5, x).astype(dtype) if nonzero else x


def numpy_applies(fn, *operands):
    try:
        with np.errstate(all="ignore"):
            return fn(*operands).dtype.name in DTYPES
    except (TypeError, ValueError, OverflowError):
        return False


def run(build, *arrays):
    """Builds main over params shaped like `arrays` with body build(*params) and runs it."""
    with aj.FunctionBuilder("main") as bb:  # inactive again when build raises
        params = [bb.param(f"p{i}", a.shape, a.dtype.name) for i, a in enumerate(arrays)]
        mod = bb.finish(build(*params))
    return aj.build(mod)["main"](*arrays)


def assert_like_numpy(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-13, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


# ---- against NumPy, every operator and dtype pair ----

@pytest.mark.parametrize("db", DTYPES)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("symbol", sorted(OPERATORS))
def test_operator_on_two_tensors_matches_numpy(symbol, da, db):
    fn = OPERATORS[symbol][0]
    a = values((3, 4), da)
    b = values((4,), db, nonzero=symbol == "**")
    if symbol == "**" and db.startswith("int"):
        b = np.abs(b)  # NumPy refuses negative int exponents
    if not numpy_applies(fn, a, b):
        with pytest.raises(aj.TypeInferenceError, match=f"operator '{re.escape(symbol)}'"):
            run(fn, a, b)
        return
    with np.errstate(all="ignore"):
        want = fn(a, b)
    assert_like_numpy(run(fn, a, b), want)


# 2**40 and -2**40 lie past int32: NumPy 2 still compares and true-divides by them (regression: those were a
# bare OverflowError), and refuses the rest, as here
SCALARS = [2, -3, 2.5, True, 0, 2**40, -2**40]


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("symbol", sorted(OPERATORS))
def test_operator_with_a_python_number_is_weak_like_numpy(symbol, dtype, scalar):
    fn = OPERATORS[symbol][0]
    a = values((5,), dtype)
    for left in (False, True):
        call = (lambda x: fn(scalar, x)) if left else (lambda x: fn(x, scalar))
        np_call = (lambda x: fn(scalar, x)) if left else (lambda x: fn(x, scalar))
        negative_int_exponent = (dtype.startswith("int") and left) or (scalar in (-3, -2**40) and not left)
        if symbol == "**" and not dtype.startswith("float") and negative_int_exponent:
            continue  # NumPy raises at run time for negative int exponents (adjoint: test_kernels_elementwise)
        if not numpy_applies(np_call, a):
            with pytest.raises(aj.TypeInferenceError, match=f"operator '{re.escape(symbol)}'"):
                run(call, a)
            continue
        with np.errstate(all="ignore"):
            want = np_call(a)
        assert_like_numpy(run(call, a), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numbers_in_where_take_the_other_values_dtype_not_the_conditions(dtype):
    bb = aj.FunctionBuilder("main")
    mask, x = bb.param("mask", (4,), "bool"), bb.param("x", (4,), dtype)
    mod = bb.finish((aj.op.where(mask, x, 0), aj.op.where(mask, 1, x), aj.op.where(mask, 2.5, -1.0)))
    m, a = np.array([True, False, True, False]), values((4,), dtype)
    got = aj.build(mod)["main"](m, a)
    assert [g.dtype.name for g in got] == [dtype, dtype, "float64"]  # two numbers: their own dtypes, as NumPy's
    np.testing.assert_array_equal(got[0], np.where(m, a, np.zeros((), dtype)))
    np.testing.assert_array_equal(got[1], np.where(m, np.ones((), dtype), a))
    np.testing.assert_array_equal(got[2], np.where(m, 2.5, -1.0))


@pytest.mark.parametrize("x1, x2", [(2.5, -1), (-1, 2.5), (1, 2), (True, False), (np.float32(0.5), 3),
                                    (np.ones(4, np.float32), 0), (7, np.arange(4, dtype=np.int32))])
def test_numbers_without_an_expr_beside_them_take_numpys_promoted_dtype(x1, x2):
    bb = aj.FunctionBuilder("main")
    mask = bb.param("mask", (4,), "bool")
    mod = bb.finish(aj.op.where(mask, x1, x2))
    m = np.array([True, False, True, False])
    want = np.where(m, x1, x2)
    assert mod["main"].ret_type.dtype == want.dtype.name
    np.testing.assert_array_equal(aj.build(mod)["main"](m), want)


def test_numbers_promoted_together_still_meet_the_ops_dtype_rule():
    bb = aj.FunctionBuilder("main")
    mask = bb.param("mask", (4,), "bool")
    with pytest.raises(aj.TypeInferenceError, match="op 'add'.*bool and int64"):
        aj.op.add(mask, aj.op.where(mask, 1, 2))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_by_zero_and_negative_operands_as_numpy(dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -5, np.iinfo(dtype).min], dtype)
    b = np.array([2, 2, -2, -2, 0, 0, 0, -1], dtype)
    for fn in (operator.truediv, operator.floordiv, operator.mod):
        with np.errstate(all="ignore"):
            want = fn(a, b)
        got = run(fn, a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert run(operator.truediv, a, b).dtype == np.float64


def test_float_floor_division_and_remainder_by_zero_and_infinity():
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 7.0])
    a, b = np.meshgrid(special, special)
    for fn in (operator.floordiv, operator.mod, operator.truediv):
        with np.errstate(all="ignore"):
            want = fn(a, b)
        np.testing.assert_array_equal(run(fn, a, b), want)


def test_matmul_and_reflected_matmul():
    a, b = values((3, 4), "float64"), values((4, 2), "float64")
    assert_like_numpy(run(operator.matmul, a, b), a @ b)
    assert_like_numpy(run(lambda x: b.T @ x, a.T), b.T @ a.T)  # array @ expr: __rmatmul__
    i, f = values((3, 4), "int32"), values((4, 2), "float32")
    assert_like_numpy(run(operator.matmul, i, f), i @ f)  # int32 @ float32 is float64


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators(dtype):
    a = values((2, 3), dtype)
    if dtype == "bool":  # NumPy has no negative or positive of bools
        for fn, symbol in ((operator.neg, "-"), (operator.pos, "+")):
            with pytest.raises(aj.TypeInferenceError, match=f"unary '{re.escape(symbol)}' on bool"):
                run(fn, a)
        assert_like_numpy(run(abs, a), np.abs(a))
        return
    assert_like_numpy(run(operator.neg, a), -a)
    assert_like_numpy(run(abs, a), np.abs(a))
    assert_like_numpy(run(operator.pos, a), +a)


def test_reflected_operators_with_numbers_and_arrays():
    a = values((4,), "float32", nonzero=True)
    arr = np.arange(1, 5, dtype=np.float64)
    for fn in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod):
        assert_like_numpy(run(lambda x: fn(3, x), a), fn(3, a))
        assert_like_numpy(run(lambda x: fn(x, arr), a), fn(a, arr))  # a float64 array is strong


# ---- the ops they build ----

def build_both(sugar, explicit, shapes=((2, 3), (3,)), dtypes=("float32", "float32")):
    mods = []
    for body in (sugar, explicit):
        with aj.FunctionBuilder("main") as bb:
            params = [bb.param(f"p{i}", s, d) for i, (s, d) in enumerate(zip(shapes, dtypes))]
            mods.append(bb.finish(body(*params)))
    aj.assert_structural_equal(mods[0], mods[1])
    return mods[0]


@pytest.mark.parametrize("symbol", sorted(OPERATORS))
def test_each_operator_builds_its_op(symbol):
    fn, op = OPERATORS[symbol]
    build_both(lambda x, y: fn(x, y), lambda x, y: getattr(aj.op, op)(x, y))
    build_both(lambda x, y: fn(2.0, x) if symbol not in COMPARISONS else fn(x, 2.0),
               lambda x, y: getattr(aj.op, op)(2.0, x) if symbol not in COMPARISONS else getattr(aj.op, op)(x, 2.0))


def test_promotion_inserts_astype_on_the_operand_that_differs():
    mod = build_both(lambda x, y: x + y,
                     lambda x, y: aj.op.add(aj.op.astype(x, "float64"), y),
                     dtypes=("int32", "float64"))
    assert mod.script() == '''@function
def main(p0: Tensor((2, 3), "int32"), p1: Tensor((3,), "float64")) -> Tensor((2, 3), "float64"):
    lv: Tensor((2, 3), "float64") = astype(p0, "float64")
    lv_1: Tensor((2, 3), "float64") = add(lv, p1)
    return lv_1
'''
    # int / int: no cast, divide itself is float64; int + 2.5: the int is cast
    build_both(lambda x, y: x / y, lambda x, y: aj.op.divide(x, y), dtypes=("int64", "int64"))
    build_both(lambda x, y: x + 2.5, lambda x, y: aj.op.add(aj.op.astype(x, "float64"), aj.Constant(np.float64(2.5))),
               dtypes=("int64", "int64"))
    build_both(lambda x, y: x * 2, lambda x, y: aj.op.multiply(x, aj.Constant(np.float32(2))))  # stays float32


def test_methods_build_their_ops():
    build_both(lambda x, y: x.T, lambda x, y: aj.op.permute_dims(x))
    build_both(lambda x, y: x.mT, lambda x, y: aj.op.permute_dims(x, axes=[1, 0]))
    for red in ("sum", "mean", "max", "min"):
        build_both(lambda x, y: getattr(x, red)(), lambda x, y: getattr(aj.op, red)(x))
        build_both(lambda x, y: getattr(x, red)(axis=1, keepdims=True),
                   lambda x, y: getattr(aj.op, red)(x, axis=[1], keepdims=True))
    build_both(lambda x, y: x.reshape(3, 2), lambda x, y: aj.op.reshape(x, (3, 2)))
    build_both(lambda x, y: x.reshape((6,)), lambda x, y: aj.op.reshape(x, (6,)))
    build_both(lambda x, y: x.astype("int32"), lambda x, y: aj.op.astype(x, "int32"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["sum", "mean", "max", "min"])
def test_reduction_methods_give_numpys_dtype(method, dtype):
    # regression: the methods kept the operand's dtype, so mask.sum() was a bool (a logical or), an int32 sum
    # wrapped, and int means and bool max/min were errors
    a = values((3, 4), dtype)
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        assert_like_numpy(run(lambda x: getattr(x, method)(**kw), a), getattr(a, method)(**kw))


UNARY = ["negative", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu",
         "abs", "square", "erf"]


def test_every_unary_op_of_the_registry_is_a_method():
    unary = [n for n in aj._core.op_names() if aj._core.op_schema(n)["family"] == "unary" and n != "astype"]
    assert sorted(unary) == sorted(UNARY)
    for op in UNARY:
        build_both(lambda x, y: getattr(x, op)(), lambda x, y: getattr(aj.op, op)(x))
    a = np.abs(values((2, 3), "float64", nonzero=True))
    assert_like_numpy(run(lambda x: x.exp().sqrt().log(), a), np.log(np.sqrt(np.exp(a))))


def test_properties_keep_working():
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", ("n", 3), "float32")
        assert (x.shape, x.dtype, x.ndim) == (("n", 3), "float32", 2)


# ---- indexing ----

INDICES = [
    1, -1, (slice(None), slice(1, 3)), (Ellipsis, slice(None, None, 2)), None, (1, None, slice(None, None, -1)),
    (slice(-100, 100), 0, Ellipsis), (Ellipsis, -2), (None, Ellipsis, None), (slice(3, 0, -2), slice(None), 2),
    (slice(5, 1),), (), Ellipsis, (np.int64(1), slice(np.int32(0), None)),
    (slice(-2**70, 2**70, 2**70),), (slice(None, None, -2**80), 0),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_indexing_matches_numpy(index, dtype):
    a = values((4, 3, 5), dtype)
    assert_like_numpy(run(lambda x: x[index], a), a[index])


def test_an_index_is_one_strided_slice_then_squeeze_and_expand_dims():
    mod = build_both(lambda x, y: x[1, None, ::-1],
                     lambda x, y: aj.op.expand_dims(aj.op.squeeze(
                         aj.op.strided_slice(x, [0, 1], [1, 2**63 - 1], [2, -(2**63 - 1)], [1, -1]), axis=[0]),
                         axis=[0]))
    assert mod.script() == '''@function
def main(p0: Tensor((2, 3), "float32"), p1: Tensor((3,), "float32")) -> Tensor((1, 3), "float32"):
    lv: Tensor((1, 3), "float32") = strided_slice(p0, [0, 1], [1, 9223372036854775807], [2, -9223372036854775807], strides=[1, -1])
    lv_1: Tensor((3,), "float32") = squeeze(lv, axis=[0])
    lv_2: Tensor((1, 3), "float32") = expand_dims(lv_1, [0])
    return lv_2
'''
    build_both(lambda x, y: x[:, 1:3], lambda x, y: aj.op.strided_slice(x, [1], [1], [3]))
    build_both(lambda x, y: x[:], lambda x, y: x)


def test_indexing_a_symbolic_axis():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 3), "float64")
    first, last, inner, back = x[0], x[-1], x[1:-1], x[::-1]
    assert (first.shape, last.shape, inner.shape, back.shape) == ((3,), (3,), ("n - 2", 3), ("n", 3))
    f = aj.build(bb.finish((first, last, inner, back)))["main"]
    a = values((5, 3), "float64")
    for got, want in zip(f(a), (a[0], a[-1], a[1:-1], a[::-1])):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(aj.ExecutionError, match="out of range for a symbolic dim"):
        f(values((0, 3), "float64"))  # x[0] of an empty axis


@pytest.mark.parametrize("index,match", [
    (4, "index 4 is out of bounds for axis 0 with size 4"),
    ((0, -4), "index -4 is out of bounds for axis 1 with size 3"),
    ((0, 0, 0, 0), "too many indices for a tensor of rank 3: 4 given"),
    ((Ellipsis, 0, Ellipsis), "only one ellipsis"),
    (slice(None, None, 0), "slice step cannot be zero"),
    (np.array([0, 1]), "supported are integers, slices of integers, None and ..."),
    (True, "supported are integers"),
    (1.0, "supported are integers"),
    ([0, 1], "supported are integers"),
    (slice(0.5, 2), "supported are integers"),
])
def test_unsupported_and_out_of_range_indices(index, match):
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (4, 3, 5), "float32")
        with pytest.raises(aj.TypeInferenceError, match=match):
            x[index]


def test_tuples_keep_integer_indexing():
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (4, 6), "float32")
        parts = aj.op.split(x, 2, axis=1)
        assert isinstance(bb.emit(aj.TupleGetItem(parts, 1)), aj.Var)
        assert parts[1].type == aj.TensorType((4, 3), "float32")
        with pytest.raises(aj.TypeInferenceError, match="a tuple takes an integer index"):
            parts[0:1]


def test_a_negative_tuple_index_counts_from_the_end_as_in_the_text_format():
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (4, 6), "float32")
        parts = aj.op.split(x, [1, 4], axis=1)
        assert [parts[i].type.shape for i in (-1, -2, -3)] == [(4, 2), (4, 3), (4, 1)]
        with pytest.raises(aj.TypeInferenceError, match="tuple index -4 out of range for a tuple of 3 fields"):
            parts[-4]
        mod = bb.finish(parts[-1])
    assert mod["main"].bindings[-1].value.index == 2


def test_iteration_unpacks_tuples_and_rows_but_not_symbolic_axes():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 6), "float32")
    a, b = aj.op.split(x, 2, axis=1)
    assert a.type == b.type == aj.TensorType((2, 3), "float32")
    first, second = x
    assert first.type == aj.TensorType((6,), "float32")
    f = aj.build(bb.finish((a, second)))["main"]
    v = values((2, 6), "float32")
    got_a, got_second = f(v)
    np.testing.assert_array_equal(got_a, v[:, :3])
    np.testing.assert_array_equal(got_second, v[1])
    with aj.FunctionBuilder("main") as bb:
        for shape in (("n", 2), ()):
            with pytest.raises(aj.TypeInferenceError, match="cannot iterate over a tensor"):
                list(bb.param(f"p{len(shape)}", shape, "float32"))


# ---- == builds an op; exprs have no truth value and hash by identity ----

def test_equality_builds_an_op_and_has_no_truth_value():
    with aj.FunctionBuilder("main") as bb:
        x, y = bb.param("x", (2,), "float32"), bb.param("y", (2,), "float32")
        eq = x == y
        assert eq.type == aj.TensorType((2,), "bool")
        with pytest.raises(aj.Error, match=r"`==`.*build.*ops.*`is` or aj.structural_equal"):
            bool(eq)
        with pytest.raises(aj.Error, match="no truth value"):
            if x:
                pass
        assert {x: 1, y: 2}[x] == 1 and hash(x) == hash(x)  # identity hash: vars stay dict keys
        assert (x == None) is False and (x != None) is True  # noqa: E711


def test_operand_errors_name_the_operator_and_dtypes():
    with aj.FunctionBuilder("main") as bb:
        b = bb.param("b", (2,), "bool")
        f = bb.param("f", (2,), "float32")
        parts = aj.op.split(f, 2)
        with pytest.raises(aj.TypeInferenceError, match=r"operator '-' on bool and bool: NumPy does not apply it"):
            b - b
        with pytest.raises(aj.TypeInferenceError, match=r"operator '//' on bool and bool gives int8 in NumPy"):
            b // b
        with pytest.raises(aj.TypeInferenceError, match=r"operator '\+' on int32 and Python int: NumPy does not apply it \(Python integer"):
            f.astype("int32") + 2**40
        with pytest.raises(aj.TypeInferenceError, match=r"operator '\*': cannot use a value of type str"):
            f * "a"
        with pytest.raises(aj.TypeInferenceError, match=r"operator '<': cannot use a value of type NoneType"):
            f < None
        with pytest.raises(aj.TypeInferenceError, match=r"operator '\+': an operand is a tuple"):
            parts + f
        with pytest.raises(aj.TypeInferenceError, match=r"\.mT needs rank >= 2"):
            f.mT


def test_pow_with_a_modulo_is_an_error_naming_its_third_argument():
    with aj.FunctionBuilder("main") as bb:
        f = bb.param("f", (2,), "float32")
        for modulo, kind in [(3, "Python int"), (f, "float32"), (np.ones(2), "float64 array")]:
            with pytest.raises(aj.TypeInferenceError, match=re.escape(
                    f"pow(): its third argument (modulo, a {kind}) is not supported on exprs; write (x ** y) % m")):
                pow(f, 2, modulo)
        assert not issubclass(aj.TypeInferenceError, TypeError)  # as every operator error: an aj.Error only
        assert bb.status == "active"
        squared = pow(f, 2, None)  # no modulo: f ** 2
        assert bb.finish(squared)["main"].bindings[-1].value.op == "power"
