"""Values that must come through unchanged: byte order of arrays given as
constants or inputs, NaN signs and payloads and -0.0 through print/parse
and the passes, unaligned input arrays, reshape's -1 from Python as from
text, deep nesting up to the cap, keyword arguments to executables, and
bool arrays holding bytes other than 0 and 1 (True, as NumPy reads them),
and constants cast to a dtype only when no number changes."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

import adjoint as aj


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def roundtrip(mod: aj.Module) -> aj.Module:
    text = mod.script()
    again = aj.parse(text)
    assert again.script() == text
    aj.assert_structural_equal(again, mod)
    return again


# ---- byte order ----

@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i8", ">i4", "<f8"])
def test_constant_from_a_non_native_array_keeps_its_values(dtype):
    values = np.array([1, 2, -3], dtype=dtype)
    c = aj.Constant(values)
    assert c.data.dtype.isnative
    np.testing.assert_array_equal(c.data, values)


# ---- a constant of a dtype asked for: cast only when no number changes ----

@pytest.mark.parametrize("value, dtype, shown", [
    (np.array([1.5, 2.0]), "int32", "1.5"), (np.array([np.nan]), "int64", "nan"),
    (np.array([2**40]), "int32", "1099511627776"), (np.array([2]), "bool", "2"),
    (1e40, "float32", "1e+40"), (2**70, "int64", "1180591620717411303424"),
])
def test_a_constant_cast_that_would_change_a_number_is_an_error_naming_it(value, dtype, shown):
    # regression: aj.Constant(np.array([1.5]), "int32") truncated to 1, 2**40
    # into int32 gave 0 and NaN into int64 INT64_MIN, as np.asarray does
    with pytest.raises(aj.Error, match=rf"^Constant: it holds {re.escape(shown)}, which {dtype} does not"):
        aj.Constant(value, dtype)


@pytest.mark.parametrize("value, dtype, expected", [
    (np.array([1.0, 2.0]), "int32", [1, 2]), (np.array([True, False]), "int64", [1, 0]),
    ([1, 2], "float32", [1.0, 2.0]), (np.array([0.1]), "float32", [np.float32(0.1)]),
    (np.array([1, 0]), "bool", [True, False]),
])
def test_a_constant_cast_that_changes_no_number_is_made(value, dtype, expected):
    c = aj.Constant(value, dtype)
    assert c.data.dtype == dtype
    np.testing.assert_array_equal(c.data, expected)


def test_a_ragged_constant_is_an_error_saying_numpy_cannot_read_it():
    with pytest.raises(aj.Error, match=r"^Constant: NumPy cannot read it as an array \(ValueError: "):
        aj.Constant([[1], [1, 2]], "float32")


def test_builder_operand_in_big_endian_is_read_by_value():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float64")
    mod = bb.finish(x + np.array([1.0, 2.0], dtype=">f8"))
    out = aj.build(mod)["main"](np.zeros(2))
    np.testing.assert_array_equal(out, [1.0, 2.0])


def test_big_endian_input_is_converted_not_reinterpreted():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), "float32")
    mod = bb.finish(aj.op.exp(x))
    given = np.array([0.0, 1.0, -1.0], dtype=">f4")
    np.testing.assert_allclose(aj.build(mod)["main"](given), np.exp(given.astype(np.float32)), rtol=1e-6)


# ---- alignment ----

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_unaligned_input_gives_the_aligned_result(dtype):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 3), dtype)
    w = bb.param("w", (3, 2), dtype)
    mod = bb.finish(aj.op.sum(x @ w, axis=[1]))
    exe = aj.build(mod)["main"]
    rng = np.random.default_rng(0)
    x_aligned = rng.integers(-5, 5, (4, 3)).astype(dtype)
    w_aligned = rng.integers(-5, 5, (3, 2)).astype(dtype)
    buf = bytearray(x_aligned.nbytes + 1)
    x_unaligned = np.frombuffer(buf, dtype=dtype, offset=1).reshape(4, 3)
    x_unaligned[...] = x_aligned
    assert not x_unaligned.flags.aligned
    np.testing.assert_array_equal(exe(x_unaligned, w_aligned), exe(x_aligned, w_aligned))
    np.testing.assert_array_equal(x_unaligned, x_aligned)  # the caller's array is left as it was


# ---- NaN and signed zeros ----

F64_SPECIALS = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF4000000000000,
                0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x7FF0000000000000]
F32_SPECIALS = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFC00001, 0x7FFFFFFF, 0x80000000, 0xFF800000]


@pytest.mark.parametrize("dtype,patterns", [("float64", F64_SPECIALS), ("float32", F32_SPECIALS)])
def test_constants_keep_nan_payloads_signs_and_negative_zero_through_text(dtype, patterns):
    raw = np.array(patterns, dtype=f"u{np.dtype(dtype).itemsize}").view(dtype)
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", raw.shape, dtype)
    mod = bb.finish(aj.op.add(x, aj.Constant(raw)))
    again = roundtrip(mod)
    np.testing.assert_array_equal(bits(again["main"].bindings[0].value.args[1].data), bits(raw))


def test_nan_texts():
    mod = aj.parse('@function\ndef main(x: Tensor((4,), "float64")):\n'
                   '    y = add(x, const([nan, -nan, nan(0x1), -nan(0xfffffffffffff)], "float64"))\n    return y\n')
    got = bits(mod["main"].bindings[0].value.args[1].data)
    want = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.uint64))


def f64(pattern: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", pattern))[0]


@pytest.mark.parametrize("pattern", F64_SPECIALS)
def test_float_attrs_keep_their_bits_through_text(pattern):
    bb = aj.FunctionBuilder("main")
    bb.param("x", (2,), "float64")
    mod = bb.finish(aj.op.full((2,), f64(pattern), "float64"))
    again = roundtrip(mod)
    got = again["main"].bindings[0].value.attrs["fill_value"]
    assert struct.pack("<d", got) == struct.pack("<d", f64(pattern))


def test_cse_keeps_negative_zero_apart_from_zero():
    bb = aj.FunctionBuilder("main")
    bb.param("x", (2,), "float64")
    one = aj.op.full((2,), 1.0, "float64")
    mod = bb.finish((one / aj.op.full((2,), 0.0, "float64"), one / aj.op.full((2,), -0.0, "float64")))
    cse = aj.transform.EliminateCommonSubexpr()(mod)
    assert len(cse["main"].bindings) == len(mod["main"].bindings)
    positive, negative = aj.build(cse)["main"](np.zeros(2))
    np.testing.assert_array_equal(positive, [np.inf, np.inf])
    np.testing.assert_array_equal(negative, [-np.inf, -np.inf])


# ---- one rule for text and Python ----

def test_reshape_with_an_inferred_symbolic_dim_from_python_equals_text():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 4), "float64")
    built = bb.finish(aj.op.reshape(x, ("n", -1), name="y"))
    parsed = aj.parse('@function\ndef main(x: Tensor(("n", 4), "float64")):\n'
                      '    y = reshape(x, ("n", -1))\n    return y\n')
    aj.assert_structural_equal(built, parsed)
    assert built["main"].ret_type.shape == ("n", 4)


# ---- nesting up to the cap ----

def test_a_tuple_nested_to_the_cap_prints_parses_and_runs():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    value: aj.Expr = x
    for _ in range(99):
        value = aj.Tuple([value])
    mod = bb.finish(value)
    roundtrip(mod)
    aj.analysis.verify(mod)
    out = aj.build(mod)["main"](np.ones(2, np.float32))
    for _ in range(99):
        out = out[0]
    np.testing.assert_array_equal(out, [1.0, 1.0])


# ---- executables ----

def test_keyword_arguments_by_param_name():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float64")
    y = bb.param("y", (2,), "float64")
    exe = aj.build(bb.finish(x - y))["main"]
    a, b = np.array([5.0, 7.0]), np.array([1.0, 2.0])
    np.testing.assert_array_equal(exe(y=b, x=a), a - b)
    np.testing.assert_array_equal(exe(a, y=b), a - b)


def test_constant_data_is_a_read_only_view():
    c = aj.Constant(np.arange(3.0))
    with pytest.raises(ValueError):
        c.data[0] = 5.0
    np.testing.assert_array_equal(c.data, [0.0, 1.0, 2.0])



# ---- bool bytes: NumPy reads any nonzero byte as True ----

def odd_bools(*data: int) -> np.ndarray:
    """A bool array holding these bytes (2 and 255 are True to NumPy)."""
    return np.frombuffer(bytes(data), dtype=np.bool_)


def canonical(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8) != 0


def test_a_bool_constant_holding_byte_2_equals_its_printed_text():
    bb = aj.FunctionBuilder("main")
    mod = bb.finish(bb.emit(aj.Constant(odd_bools(2, 1), None)))
    assert mod["main"].bindings[0].value.data.view(np.uint8).tolist() == [1, 1]
    again = roundtrip(mod)
    assert aj.structural_hash(again) == aj.structural_hash(mod)


def test_a_bool_array_operand_holding_byte_255_is_a_constant_of_true():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "bool")
    mod = bb.finish(aj.op.equal(x, odd_bools(255, 0)))
    aj.assert_structural_equal(mod, aj.parse("""@function
def main(x: Tensor((2,), "bool")) -> Tensor((2,), "bool"):
    lv: Tensor((2,), "bool") = equal(x, const([True, False], "bool"))
    return lv
"""))


def bool_ops_module() -> aj.Module:
    bb = aj.FunctionBuilder("main")
    c, d = bb.param("c", (4,), "bool"), bb.param("d", (4,), "bool")
    x = bb.param("x", (4,), "float32")
    return bb.finish((aj.op.where(c, x, -x), c.astype("int32"), c.astype("float64"), aj.op.equal(c, d),
                      aj.op.not_equal(c, d), aj.op.subtract(c, d), aj.op.multiply(c, d), aj.op.sum(c),
                      aj.op.maximum(c, d), aj.op.power(c, d)))


def bool_ops_expected(c: np.ndarray, d: np.ndarray, x: np.ndarray) -> list:
    c, d = canonical(c), canonical(d)
    return [np.where(c, x, -x), c.astype(np.int32), c.astype(np.float64), c == d, c != d, c ^ d, c & d,
            np.array(c.any()), c | d, c | ~d]


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "by keyword"])
def test_bool_inputs_holding_other_bytes_than_0_and_1_are_read_as_numpy_reads_them(fuse, layout):
    c, d = odd_bools(2, 0, 255, 1), odd_bools(1, 3, 1, 0)
    x = np.arange(1.0, 5.0, dtype=np.float32)
    exe = aj.build(bool_ops_module(), fuse=fuse)["main"]
    if layout == "strided":
        c_in, d_in = (np.repeat(a, 2)[::2] for a in (c, d))
        assert not c_in.flags.c_contiguous
        got = exe(c_in, d_in, x)
    elif layout == "by keyword":
        got = exe(x=x, d=d, c=c)
    else:
        got = exe(c, d, x)
    for result, expected in zip(got, bool_ops_expected(c, d, x)):
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(result.view(np.uint8) if result.dtype == bool else result,
                                      expected.view(np.uint8) if expected.dtype == bool else expected)
    assert c.view(np.uint8).tolist() == [2, 0, 255, 1]  # the caller's array is left as it was


def test_a_donated_bool_input_holding_byte_2_is_read_as_true():
    mod = aj.parse("""@function
def main(c: Tensor((3,), "bool")) -> Tensor((3,), "bool"):
    lv: Tensor((3,), "bool") = equal(c, const([True, True, False], "bool"))
    return lv
""")
    step = aj.build(mod)["main"].donating({0: 0})
    c = np.frombuffer(bytearray([2, 0, 0]), dtype=np.bool_)
    out = step(c)
    assert out is c and out.view(np.uint8).tolist() == [1, 0, 1]
