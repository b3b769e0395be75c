"""The executable as a user calls it: keyword arguments by param name,
``exe.main(...)``, the signature and reprs, and one-line errors for wrong
arguments that never print the arrays given."""

import re

import numpy as np
import pytest

import adjoint as aj


def mlp_exe():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 784), "float32")
    w = bb.param("w", (784, 10), "float32")
    return aj.build(bb.finish(x @ w))


X = np.arange(2 * 784, dtype=np.float32).reshape(2, 784) / 1000
W = np.ones((784, 10), np.float32)
SIGNATURE = "main(x: (n, 784) float32, w: (784, 10) float32) -> (n, 10) float32"


@pytest.mark.parametrize("args, kwargs", [((X, W), {}), ((X,), {"w": W}), ((), {"x": X, "w": W}),
                                          ((), {"w": W, "x": X})])
def test_positional_then_keyword_arguments(args, kwargs):
    np.testing.assert_allclose(mlp_exe()["main"](*args, **kwargs), X @ W, rtol=1e-6)


def test_functions_as_attributes():
    exe = mlp_exe()
    np.testing.assert_allclose(exe.main(X, w=W), X @ W, rtol=1e-6)
    assert "main" in dir(exe) and "names" in dir(exe)
    with pytest.raises(AttributeError, match="no attribute or function 'mian'; its functions: main"):
        exe.mian


def test_an_attribute_name_with_a_lone_surrogate_is_an_attribute_error():
    # regression: pybind11 could not convert the name to UTF-8 and raised a
    # TypeError, so hasattr(exe, name) raised instead of giving False
    exe = mlp_exe()
    assert not hasattr(exe, "\ud800x") and getattr(exe, "\ud800", None) is None
    with pytest.raises(AttributeError, match=r"no attribute or function '\\ud800x'; its functions: main"):
        getattr(exe, "\ud800x")


def test_a_function_named_like_a_method_is_reached_by_subscript():
    bb = aj.FunctionBuilder("names")
    exe = aj.build(bb.finish(bb.param("x", (2,), "float32")))
    assert exe.names == ["names"]
    np.testing.assert_array_equal(exe["names"](np.ones(2, np.float32)), np.ones(2, np.float32))


def test_signature_and_reprs():
    exe = mlp_exe()
    sig = exe["main"].signature
    assert str(sig) == SIGNATURE and sig.result == "(n, 10) float32"
    assert [(p.name, p.shape, p.dtype, p.is_weight) for p in sig.params] == [
        ("x", ("n", 784), "float32", False), ("w", (784, 10), "float32", True)]
    assert [p.name for p in sig.inputs] == ["x"] and [p.name for p in sig.weights] == ["w"]
    assert repr(exe["main"]) == f"<ExecFunction {SIGNATURE}>"
    assert repr(exe) == f"<aj.Executable with 1 function(s):\n  {SIGNATURE}>"


def test_tuple_and_rank_0_results_in_the_signature():
    bb = aj.FunctionBuilder("f")
    v = bb.param("v", (3,), "float64")
    s = aj.op.sum(v)
    exe = aj.build(bb.finish((s, (v,))))
    assert str(exe.f.signature) == "f(v: (3,) float64) -> (() float64, ((3,) float64,))"
    assert exe.f.signature.weights == ()


@pytest.mark.parametrize("args, kwargs, message", [
    ((X,), {}, r"is missing 'w' \(#1\)"),
    ((), {}, r"is missing 'x' \(#0\), 'w' \(#1\)"),
    ((X, W, W), {}, "takes 2 argument\\(s\\), got 3 positional"),
    ((X, W), {"w": W}, r"got two values for 'w' \(#1\)"),
    ((X,), {"q": W}, "has no param named 'q'"),
])
def test_binding_errors_list_the_signature(args, kwargs, message):
    with pytest.raises(aj.ExecutionError) as info:
        mlp_exe()["main"](*args, **kwargs)
    text = str(info.value)
    assert text.startswith("function 'main' ") and text.endswith(f"; its signature: {SIGNATURE}")
    assert re.search(message, text), text


BIG = np.full((2, 784), 123456.75, np.float32)  # its digits would show in an array dump


@pytest.mark.parametrize("bad, message", [
    ("abc", "param 'x' (#0): cannot convert a str to a C-contiguous float32 array"),
    (None, "param 'x' (#0): expected a float32 array, got None"),
    ([[1.0, 2.0], [3.0]], "param 'x' (#0): cannot convert a list to a C-contiguous float32 array"),
    (BIG.astype(np.float64), "param 'x' (#0): expected dtype float32, got float64"),
    (BIG[:, :5], "param 'x' (#0): dim 1 must be 784, got 5"),
    (object(), "param 'x' (#0): cannot convert a object"),
])
def test_wrong_arguments_are_one_line_without_array_contents(bad, message):
    with pytest.raises(aj.ExecutionError) as info:
        mlp_exe()["main"](bad, w=W)
    text = str(info.value)
    assert message in text
    assert "\n" not in text and "123456" not in text and "incompatible function arguments" not in text


def test_inputs_are_read_in_place_or_copied_as_documented():
    exe = mlp_exe()
    strided = np.asfortranarray(X)  # not C-contiguous: copied, same result
    np.testing.assert_allclose(exe.main(strided, w=W), X @ W, rtol=1e-6)
    swapped = X.astype(">f4")  # byte-swapped float32: copied
    np.testing.assert_allclose(exe.main(swapped, W), X @ W, rtol=1e-6)
    np.testing.assert_allclose(exe.main(X.tolist(), W), X @ W, rtol=1e-6)  # a convertible list


def scalar_exe(dtype):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (), dtype)
    return aj.build(bb.finish(aj.op.astype(x, "float64")))["main"]


@pytest.mark.parametrize("dtype, value, shown", [
    # regression: these were cast as NumPy casts, so 2.5 ran as 2, 2**40 as 0 and "7" as 7
    ("int32", 2.5, "2.5"),
    ("int32", np.float64(2.5), "2.5"),
    ("int32", np.int64(2 ** 40), str(2 ** 40)),
    ("int32", [1.7], "1.7"),
    ("int64", np.uint64(2 ** 64 - 1), str(2 ** 64 - 1)),
    ("int64", [2 ** 70], str(2 ** 70)),
    ("int64", float("nan"), "nan"),
    ("bool", 2, "2"),
    ("bool", 0.5, "0.5"),
    ("float32", 1e40, "1e+40"),
    ("float32", np.float64(-1e40), "-1e+40"),
    pytest.param("float32", 10 ** 5000, "an int of 16610 bits", id="an int too long to print"),
])
def test_a_value_that_is_no_array_is_cast_only_when_no_number_changes(dtype, value, shown):
    with pytest.raises(aj.ExecutionError) as info:
        scalar_exe(dtype)(value)
    assert "param 'x' (#0): cannot convert a " in str(info.value)
    assert f"it holds {shown}, which {dtype} does not (a cast would change it)" in str(info.value)


@pytest.mark.parametrize("dtype, value", [("int32", "7"), ("float32", "1.5"), ("bool", ""), ("float32", [1, "a"])])
def test_a_value_that_is_no_number_is_refused(dtype, value):
    with pytest.raises(aj.ExecutionError, match="param 'x' .*which is not a number .NumPy reads it as dtype"):
        scalar_exe(dtype)(value)


@pytest.mark.parametrize("value", [1 + 2j, 62 + 0j, [1.5 + 0j]])
def test_a_complex_value_is_refused_as_one(value):
    # adjoint has no complex dtype: a complex number is refused (NumPy would drop its imaginary part with a
    # ComplexWarning), even one whose imaginary part is zero, and the message says it is complex
    with pytest.raises(aj.ExecutionError, match=r"param 'x' .*, a complex number, which float32 does not \(NumPy "
                                                r"reads it as dtype complex128\)"):
        scalar_exe("float32")(value)


@pytest.mark.parametrize("dtype, value, expected", [
    ("int32", 7, 7), ("int32", np.int64(-2 ** 31), -2 ** 31), ("int32", True, 1), ("int64", 3.0, 3),
    ("bool", 1, 1), ("bool", 0.0, 0), ("float32", 0.1, np.float32(0.1)), ("float32", 2 ** 70, np.float32(2 ** 70)),
    ("float64", np.float32(0.5), 0.5), ("float32", float("inf"), np.inf), ("float32", float("nan"), np.nan),
])
def test_a_value_that_is_no_array_is_cast_when_every_number_survives(dtype, value, expected):
    np.testing.assert_array_equal(scalar_exe(dtype)(value), np.float64(expected))


def test_a_list_is_cast_as_a_whole():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), "int32")
    fn = aj.build(bb.finish(x + x))["main"]
    assert fn([1, 2.0, True]).tolist() == [2, 4, 2]
    with pytest.raises(aj.ExecutionError, match="cannot convert a list to a C-contiguous int32 array: it holds 1.5"):
        fn([1, 1.5, 2])
