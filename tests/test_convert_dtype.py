"""ConvertDType: every float32 value of a module as float64 (or back):
params, constants, creation and astype dtypes, matmul's out_dtype, every
binding's type; ints and bools untouched. Golden text for the structure,
the float64 module's numbers against the float32 one's, idempotence, and
its argument checks."""

import numpy as np
import pytest

import adjoint as aj

TO_FLOAT64 = aj.transform.ConvertDType("float64")
TO_FLOAT32 = aj.transform.ConvertDType("float32", from_dtype="float64")
RNG = np.random.default_rng(14)

MIXED = '''\
@function(num_input=2)
def main(x: Tensor(("n", 3), "float32"), i: Tensor(("n", 3), "int32"), w: Tensor((3, 4), "float32")) -> Tuple(Tensor((), "float32"), Tensor(("n", 3), "bool")):
    lv: Tensor(("n", 4), "float32") = matmul(x, w)
    lv_1: Tensor(("n", 4), "float32") = tanh(lv)
    lv_2: Tensor((4,), "float32") = zeros((4,), "float32")
    lv_3: Tensor(("n", 4), "float32") = add(lv_1, lv_2)
    lv_4: Tensor(("n", 4), "float32") = multiply(lv_3, const([1.5, -2.0, 0.25, 3.0], "float32"))
    lv_5: Tensor((3, 4), "int32") = astype(w, "int32")
    lv_6: Tensor(("n", 4), "float32") = matmul(i, lv_5, out_dtype="float32")
    lv_7: Tensor(("n", 3), "float32") = astype(i, "float32")
    lv_8: Tensor(("n", 3), "float64") = astype(x, "float64")
    lv_9: Tensor(("n", 3), "bool") = greater(lv_7, x)
    lv_10: Tuple(Tensor(("n", 2), "float32"), Tensor(("n", 2), "float32")) = split(lv_4, 2, axis=1)
    lv_11: Tensor(("n", 2), "float32") = lv_10[1]
    lv_12: Tensor(("n", 4), "float32") = full_like(lv_6, 2.0)
    lv_13: Tensor((), "float32") = sum(lv_11)
    lv_14: Tensor((), "float32") = sum(lv_12)
    lv_15: Tensor((), "float64") = sum(lv_8)
    lv_16: Tensor((), "float32") = astype(lv_15, "float32")
    lv_17: Tensor((), "float32") = add(lv_13, lv_14)
    lv_18: Tensor((), "float32") = add(lv_17, lv_16)
    gv: Tuple(Tensor((), "float32"), Tensor(("n", 3), "bool")) = (lv_18, lv_9)
    return gv
'''


def float32_inputs(n: int = 5) -> list[np.ndarray]:
    return [RNG.standard_normal((n, 3)).astype(np.float32), RNG.integers(-3, 4, (n, 3)).astype(np.int32),
            RNG.standard_normal((3, 4)).astype(np.float32)]


def upcast(xs: list[np.ndarray]) -> list[np.ndarray]:
    return [x.astype(np.float64) if x.dtype == np.float32 else x for x in xs]


def test_golden_float32_to_float64():
    out = TO_FLOAT64(aj.parse(MIXED))
    assert out.script() == MIXED.replace('"float32"', '"float64"')


def test_golden_float64_to_float32_rounds_constants():
    mod = aj.parse('''\
@function
def main(x: Tensor((2,), "float64"), k: Tensor((2,), "int64")) -> Tensor((2,), "float64"):
    lv: Tensor((2,), "float64") = add(x, const([0.1, 2.0], "float64"))
    lv_1: Tensor((2,), "float64") = astype(k, "float64")
    lv_2: Tensor((2,), "float64") = multiply(lv, lv_1)
    return lv_2
''')
    out = TO_FLOAT32(mod)
    assert out.script() == '''\
@function
def main(x: Tensor((2,), "float32"), k: Tensor((2,), "int64")) -> Tensor((2,), "float32"):
    lv: Tensor((2,), "float32") = add(x, const([0.1, 2.0], "float32"))
    lv_1: Tensor((2,), "float32") = astype(k, "float32")
    lv_2: Tensor((2,), "float32") = multiply(lv, lv_1)
    return lv_2
'''
    const = out["main"].bindings[0].value.args[1]
    assert const.data.dtype == np.float32 and const.data[0] == np.float32(0.1)


def test_float64_module_computes_what_the_float32_one_did():
    mod = aj.parse(MIXED)
    out = TO_FLOAT64(mod)
    xs = float32_inputs()
    (loss32, mask32), (loss64, mask64) = aj.build(mod)["main"](*xs), aj.build(out)["main"](*upcast(xs))
    assert loss32.dtype == np.float32 and loss64.dtype == np.float64
    np.testing.assert_allclose(loss64, loss32, rtol=1e-5)
    np.testing.assert_array_equal(mask64, mask32)


def test_gradients_of_the_float64_copy_agree_with_the_float32_ones():
    mod = aj.transform.Gradient()(aj.parse(MIXED))
    out = TO_FLOAT64(mod)
    xs = float32_inputs()
    _, grads32 = aj.build(mod)["main_adjoint"](*xs)
    _, grads64 = aj.build(out)["main_adjoint"](*upcast(xs))
    for g32, g64 in zip(grads32, grads64):
        assert g64.dtype == np.float64
        np.testing.assert_allclose(g64, g32, rtol=1e-5, atol=1e-6)


def test_idempotent_and_untouched_without_float32():
    once = TO_FLOAT64(aj.parse(MIXED))
    assert TO_FLOAT64(once) is once
    ints = aj.parse('''\
@function
def main(k: Tensor((2,), "int32")) -> Tensor((), "int32"):
    lv: Tensor((), "int32") = sum(k)
    return lv
''')
    assert TO_FLOAT64(ints) is ints


def test_round_trip_float32_float64_float32_is_exact():
    mod = aj.parse(MIXED)
    back = TO_FLOAT32(TO_FLOAT64(mod))
    # lv_8 was float64 in the input: it comes back float32, the rest as it was
    assert back.script() == MIXED.replace('"float64"', '"float32"')


def test_every_function_of_a_module_is_converted():
    mod = aj.transform.Gradient()(aj.parse(MIXED))
    out = TO_FLOAT64(mod)
    assert list(out.functions) == ["main", "main_adjoint"]
    assert '"float32"' not in out.script()
    assert mod.script().count('"float32"') > 0  # the input is unchanged


# Ints and bools divide to float64 (np.divide): that value has no float64
# operand and no dtype attr to convert. It was left float64, and a
# TypeInferenceError naming neither the pass nor the binding where it met a
# converted value ("op 'multiply': arguments 'x1' and 'x2' must have the same
# dtype, got float32 and float64"); an int divide feeding an astype stayed a
# float64 value of the float32 module.
INT_DIVIDES = '''\
@function
def main(y: Tensor((3,), "float64"), i: Tensor((3,), "int32"), b: Tensor((3,), "bool")) -> Tensor((3,), "float64"):
    lv: Tensor((3,), "float64") = divide(i, const(2, "int32"))
    lv_1: Tensor((3,), "float64") = multiply(y, lv)
    lv_2: Tensor((3,), "float64") = divide(b, const(True, "bool"))
    lv_3: Tensor((3,), "float32") = astype(lv_2, "float32")
    lv_4: Tensor((3,), "float64") = divide(i, i)
    lv_5: Tensor((3,), "float32") = astype(lv_4, "float32")
    lv_6: Tensor((3,), "float32") = add(lv_3, lv_5)
    lv_7: Tensor((3,), "float64") = astype(lv_6, "float64")
    lv_8: Tensor((3,), "float64") = add(lv_1, lv_7)
    return lv_8
'''


def test_golden_int_divides_take_their_operands_as_float32():
    # each int or bool operand as float32 (a var cast once, a constant
    # converted), so each divide gives float32 and no float64 value is left
    out = TO_FLOAT32(aj.parse(INT_DIVIDES))
    assert out.script() == '''\
@function
def main(y: Tensor((3,), "float32"), i: Tensor((3,), "int32"), b: Tensor((3,), "bool")) -> Tensor((3,), "float32"):
    lv_9: Tensor((3,), "float32") = astype(i, "float32")
    lv: Tensor((3,), "float32") = divide(lv_9, const(2.0, "float32"))
    lv_1: Tensor((3,), "float32") = multiply(y, lv)
    lv_10: Tensor((3,), "float32") = astype(b, "float32")
    lv_2: Tensor((3,), "float32") = divide(lv_10, const(1.0, "float32"))
    lv_3: Tensor((3,), "float32") = astype(lv_2, "float32")
    lv_4: Tensor((3,), "float32") = divide(lv_9, lv_9)
    lv_5: Tensor((3,), "float32") = astype(lv_4, "float32")
    lv_6: Tensor((3,), "float32") = add(lv_3, lv_5)
    lv_7: Tensor((3,), "float32") = astype(lv_6, "float32")
    lv_8: Tensor((3,), "float32") = add(lv_1, lv_7)
    return lv_8
'''
    assert TO_FLOAT32(out) is out


def test_int_divides_compute_what_they_did():
    mod = aj.parse(INT_DIVIDES)
    y, i, b = RNG.standard_normal(3), np.array([-3, 1, 7], np.int32), np.array([True, False, True])
    want = aj.build(mod)["main"](y, i, b)
    np.testing.assert_allclose(aj.build(TO_FLOAT32(mod))["main"](y.astype(np.float32), i, b), want, rtol=1e-6)
    # back in float64 the divides are float64 ones of the ints as float64: the same numbers
    up = TO_FLOAT64(TO_FLOAT32(mod))
    np.testing.assert_array_equal(aj.build(up)["main"](y, i, b), want)
    aj.assert_structural_equal(TO_FLOAT32(up), TO_FLOAT32(mod))


def test_int_divides_are_left_when_float32_is_converted():
    # from float32, an int divide's float64 is already the dtype wanted
    mod = aj.parse('''\
@function
def main(x: Tensor((3,), "float32"), i: Tensor((3,), "int32")) -> Tensor((3,), "float64"):
    lv: Tensor((3,), "float64") = divide(i, const(2, "int32"))
    lv_1: Tensor((3,), "float64") = astype(x, "float64")
    lv_2: Tensor((3,), "float64") = multiply(lv_1, lv)
    return lv_2
''')
    out = TO_FLOAT64(mod)
    assert out.script() == mod.script().replace('"float32"', '"float64"')


def test_numpy_dtypes_are_accepted():
    assert repr(aj.transform.ConvertDType(np.float64, np.dtype("float32"))) == \
        "aj.transform.ConvertDType(dtype='float64', from_dtype='float32')"


@pytest.mark.parametrize("dtype, from_dtype, message", [
    ("float16", "float32", "dtype must be \"float32\" or \"float64\", got 'float16'"),
    ("int32", "float32", "got 'int32'"),
    ("float64", "bool", "from_dtype must be \"float32\" or \"float64\", got 'bool'"),
    (64, "float32", "got 64"),
    ("float32", "float32", "dtype and from_dtype are both float32"),
])
def test_bad_dtypes_are_transform_errors(dtype, from_dtype, message):
    with pytest.raises(aj.TransformError, match="ConvertDType") as e:
        aj.transform.ConvertDType(dtype, from_dtype)
    assert message in str(e.value)


def test_bad_dtypes_reaching_the_core_are_transform_errors():
    mod = aj.parse(MIXED)
    with pytest.raises(aj.TransformError, match='from_dtype must be "float32" or "float64", got "int8"'):
        aj._core.convert_dtype(mod, "float64", "int8")
    with pytest.raises(aj.TransformError, match="both float64"):
        aj._core.convert_dtype(mod, "float64", "float64")
    with pytest.raises(aj.TransformError, match="expects an aj.Module"):
        TO_FLOAT64("not a module")
