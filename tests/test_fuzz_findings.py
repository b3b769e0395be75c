"""Regression tests for what the fuzz scripts (python -m adjoint.fuzz) found,
one named test per finding, each minimized from the fuzzer's reproducer:
the exact aj.Error subclass and the parts of its message."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj


def sum_module() -> aj.Module:
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    return bb.finish(aj.op.sum(x))


def raised(action) -> aj.Error:
    with pytest.raises(aj.Error) as info:
        action()
    return info.value


# ---- a str holding a lone surrogate (U+D800..U+DFFF alone has no UTF-8 form) ----
# Found by `parse` (a mutation inserted "\ud800" into a text) and by `exec`
# (a keyword argument named "\ud800"): pybind11's str -> std::string cast
# failed with a RuntimeError ("Unable to cast Python instance of type str").


def test_parse_text_with_a_lone_surrogate_is_a_located_parse_error():
    text = '@function\ndef main(x: Tensor((2,), "float32")):\n    y\ud800 = exp(x)\n    return y\n'
    err = raised(lambda: aj.parse(text))
    assert type(err) is aj.ParseError
    assert (err.line, err.column) == (3, 6)
    assert err.source_line == "    y? = exp(x)"
    assert str(err).startswith("3:6: unexpected character: a lone surrogate U+D800 (no UTF-8 form)\n")


def test_parse_lone_surrogate_in_a_comment_is_located_too():
    text = '@function\ndef main(x: Tensor((2,), "float32")):\n    y = exp(x)  # caf\udce9\n    return y\n'
    err = raised(lambda: aj.parse(text))
    assert type(err) is aj.ParseError
    assert (err.line, err.column) == (3, 22)
    assert "U+DCE9" in str(err)


def test_executable_keyword_named_with_a_lone_surrogate_is_an_execution_error():
    fn = aj.build(sum_module())["main"]
    err = raised(lambda: fn(**{"\ud800": np.ones(2, np.float32)}))
    assert type(err) is aj.ExecutionError
    assert "function 'main' has no param named '\\ud800'; its signature: main(x: (2,) float32)" in str(err)


def test_function_lookup_with_a_lone_surrogate_is_not_found():
    mod = sum_module()
    exe = aj.build(mod)
    for container, what in ((mod, "the module"), (exe, "the executable")):
        err = raised(lambda: container["\ud800"])
        assert type(err) is aj.FunctionNotFoundError
        assert f"{what} has no function '\\ud800'" in str(err)
        assert "\ud800" not in container


@pytest.mark.parametrize("action,error,parts", [
    (lambda: aj.Var("a\udc00", aj.TensorType((2,), "float32")), aj.Error, ("Var: name_hint", "U+DC00 at index 1")),
    (lambda: aj.TensorType(("n\ud800",), "float32"), aj.Error, ("TensorType", "U+D800 at index 1")),
    (lambda: aj.TensorType((2,), "float\ud800"), aj.Error, ("TensorType", "U+D800 at index 5")),
    (lambda: aj.Dim("n\ud800"), aj.Error, ("Dim", "U+D800 at index 1")),
    (lambda: aj.FunctionBuilder("m\ud800"), aj.Error, ("FunctionBuilder: name", "U+D800")),
    (lambda: aj.transform.Gradient(func_name="m\ud800")(sum_module()), aj.TransformError,
     ("Gradient: func_name", "U+D800")),
    (lambda: aj.transform.Gradient(require_grads=["x\ud800"])(sum_module()), aj.TransformError,
     ("Gradient: require_grads", "U+D800")),
], ids=["var_name", "symbolic_dim", "dtype", "dim", "builder_name", "gradient_func_name", "gradient_require_grads"])
def test_names_with_a_lone_surrogate_are_aj_errors(action, error, parts):
    err = raised(action)
    assert type(err) is error, f"{type(err).__name__}: {err}"
    for part in parts + ("lone surrogate", "no UTF-8 form"):
        assert part in str(err)


def test_string_attr_with_a_lone_surrogate_is_an_aj_error():
    bb = aj.FunctionBuilder("main")
    try:
        p = bb.param("p", (2, 3), "float32")
        t = bb.param("t", (2,), "int64")
        err = raised(lambda: aj.op.nll_loss(p, t, reduction="me\ud800an"))
    finally:
        bb._deactivate()
    assert type(err) is aj.Error
    assert "op 'nll_loss': attr 'reduction': the str holds a lone surrogate U+D800 at index 2" in str(err)


# ---- a wrong-shaped strided input was copied before its shape was checked ----
# Found by `exec` as a hang: pools called with a zero-stride float64 array of
# shape (4194304, 2, 6, 6) (2.4 GB logical, 8 bytes of memory) spent over
# 10 s copying it to C order before refusing dim 0; at 2**40 rows the copy
# failed with OutOfMemoryError instead of the shape's ExecutionError.


def zero_strides(shape, dtype="float64"):
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=shape, strides=(0,) * len(shape))


def test_wrong_shaped_zero_stride_input_is_refused_before_it_is_copied():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (1, 2, 6, 6), "float64")
    fn = aj.build(bb.finish(aj.op.max_pool2d(x, [2, 2], strides=[2, 2])))["main"]
    err = raised(lambda: fn(zero_strides((2**40, 2, 6, 6))))
    assert type(err) is aj.ExecutionError
    assert "function 'main', param 'x' (#0): dim 0 must be 1, got 1099511627776" in str(err)


def test_inconsistent_symbol_of_a_zero_stride_input_is_refused_before_it_is_copied():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n",), "float32")
    y = bb.param("y", ("n",), "float32")
    fn = aj.build(bb.finish(x + y))["main"]
    err = raised(lambda: fn(np.ones(3, np.float32), zero_strides((2**40,), "float32")))
    assert type(err) is aj.ExecutionError
    assert "param 'y' (#1): dim 0 is symbol 'n' = 3 (from param 'x' dim 0), but here it is 1099511627776" in str(err)


def test_strided_and_byte_swapped_inputs_of_the_right_shape_still_run():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n",), "float32")
    y = bb.param("y", ("n",), "float32")
    fn = aj.build(bb.finish(x * y))["main"]
    got = fn(np.arange(6, dtype=np.float32)[::-2], np.arange(3, dtype=">f4"))
    np.testing.assert_array_equal(got, [0.0, 3.0, 2.0])


# ---- matmul with an out_dtype other than its inputs' (the naive kernel) ----
# Found by `parse` under the sanitizer build (.ci/sanitize), seed 7, input
# 48989: matmul(x, y, out_dtype="bool") on float32 cast each float sum to the
# bool's byte with static_cast (UBSan: "-1.76946 is outside the range of
# representable values of type 'unsigned char'"); int64 sums overflowed as
# signed ints. Now each sum converts as astype does, and int sums wrap.


def matmul_module(dtype: str, out_dtype: str | None, n: int = 2) -> aj.Module:
    bb = aj.FunctionBuilder("main")
    x, y = bb.param("x", (n, n), dtype), bb.param("y", (n, n), dtype)
    return bb.finish(aj.op.matmul(x, y, out_dtype=out_dtype))


def test_matmul_of_floats_to_bool_is_nonzero_of_the_product():
    x = np.array([[1, -2, 0], [0, 0, 0], [3, 1, 1]], np.float32)
    got = aj.build(matmul_module("float32", "bool", 3))["main"](x, x)
    np.testing.assert_array_equal(got, (x @ x) != 0)


def test_matmul_of_floats_to_int_saturates_like_astype():
    x = np.array([[1e10, 2.7], [-1e300, -3.5]])
    got = aj.build(matmul_module("float64", "int32"))["main"](x, np.eye(2))
    np.testing.assert_array_equal(got, [[2**31 - 1, 2], [-(2**31), -3]])


def test_matmul_of_int64_wraps_like_numpy():
    a = np.array([[2**62, 3], [-(2**63), 1]], np.int64)
    got = aj.build(matmul_module("int64", None))["main"](a, a)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, a @ a)


# ---- the fuzzer's own input makers failed (false findings, the core was right) ----
# Found by `parse` (seed 2): a param of shape (0, 2**61 + 1) has no elements,
# yet NumPy cannot make it ("array is too big"); and by `exec` (seed 3): a
# shape-() bool came back as a NumPy scalar, which unaligned() and
# reversed_view() cannot view as a buffer. Such a float32 type is now
# refused where it is written, as NumPy refuses it (test_bad_inputs.py);
# a bool one NumPy makes, but the fuzzer keeps to small inputs.


def test_the_parse_fuzzer_makes_no_inputs_for_a_huge_dim_beside_a_zero():
    from adjoint.fuzz.inputs import small_inputs

    fn = aj.parse('@function\ndef main(b: Tensor((0, 2305843009213693953), "bool")):\n    return b\n')["main"]
    assert small_inputs(fn, np.random.default_rng(0)) is None


@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_the_exec_fuzzer_makes_an_array_for_shape_nothing(dtype):
    from adjoint.fuzz.exec import HELPERS

    helpers: dict = {}
    exec(HELPERS, helpers)  # the lines a finding's script starts with
    a = helpers["rand"](0, (), dtype)
    assert isinstance(a, np.ndarray) and a.shape == () and a.dtype == dtype
    assert helpers["unaligned"](a) == a and helpers["reversed_view"](a) == a


# ---- LiftTransformParams: an f_transform_params that cannot be called ----
# Found by `passes` (seed 0, input 37680: a mutation made a weight's dim
# "n**4"). A weight whose dim is a symbol only the inputs bind as a dim of
# their own ("n" of x), here "n*n" (printed "n**2"), went to
# main_transform_params, where no param bound n (the executor bound k from a
# dim k or a*k + b alone): every call of it was an ExecutionError. The
# executor now binds k from a dim in k alone that grows with it, as n**2;
# a function whose weights still do not bind their symbols (m + n) is left
# unlifted (test_lift_transform_params.py).

WEIGHT_OF_AN_INPUT_SYMBOL = '''\
@function(num_input=1)
def main(x: Tensor(("n",), "float32"), w: Tensor(("n*n",), "float32")):
    s = sum(w)
    return s
'''


def test_lifted_transform_params_of_a_weight_sized_by_an_input_symbol_can_be_called():
    mod = aj.parse(WEIGHT_OF_AN_INPUT_SYMBOL)
    x, w = np.ones(2, np.float32), np.arange(4, dtype=np.float32)
    assert aj.build(mod)["main"](x, w) == 6.0  # the program runs
    exe = aj.build(aj.transform.LiftTransformParams()(mod))
    transformed = exe["main_transform_params"](w)
    assert exe["main"](x, *transformed) == 6.0


# ---- a result NumPy cannot make is a ValueError, not an aj.Error ----
# Found by `passes` (seed 0, input 193046: a mutation returned
# full(shape=(0, 3, 2305843009213693953, 1), ...)). The result has no
# elements, so the run succeeds, but NumPy refuses the shape ("array is too
# big"), and the executable's call let NumPy's ValueError out where its
# other refusals are aj.Errors; it became an ExecutionError naming the
# result. Such a shape written out is now refused by the type rules, as
# NumPy refuses it (test_bad_inputs.py); one whose symbol an input binds is
# refused when the run computes it, as other shapes too large are.


def test_a_result_numpy_cannot_make_is_an_execution_error_naming_it():
    mod = aj.parse('@function\ndef main(b: Tensor((0, "m"), "bool")):\n    z = zeros((0, "m"), "int32")\n'
                   '    return (z, z)\n')
    b = np.zeros((0, 2**61 + 1), bool)  # NumPy makes it: 1-byte items
    with pytest.raises(aj.ExecutionError, match=r"^function 'main', binding 'z' \(op 'zeros'\): shape "
                                                 r"\(0, 2305843009213693953\) of int32 is too large: its byte "
                                                 r"size does not fit in 64 bits$"):
        aj.build(mod)["main"](b)


# ---- LiftTransformParams: a lifted constant is trained when no weight is frozen ----
# Found reducing `passes` findings (seed 1, inputs 44335 and 74353: false
# ones, the fuzzer's frozen check did not count such a value as frozen when
# the function had a frozen attr, as the pass rightly did): a value made
# of constants alone whose shape only a weight gives, zeros(("n", 3)) with n
# a dim of weights alone, is lifted into main_transform_params and becomes a
# weight of main. When main has a frozen attr, the pass lists it there (it
# reads no weight training updates); when it has none, it gets no attr, so a
# Trainer of main as lifted trained the zeros, which training main left as
# they were. Now frozen="z" either way.

LIFTED_CONSTANT = '''\
@function(num_input=1{frozen})
def main(x: Tensor((3,), "float64"), w: Tensor(("n", 3), "float64"), y: Tensor(("n", 3), "float64")):
    z = zeros(("n", 3), "float64")
    a = add(x, z)
    b = add(a, w)
    c = add(b, y)
    return c
'''


def test_a_lifted_constant_is_frozen_when_another_weight_is():
    lifted = aj.transform.LiftTransformParams()(aj.parse(LIFTED_CONSTANT.format(frozen=', frozen="y"')))
    assert [p.name_hint for p in lifted["main"].params] == ["x", "w", "y", "z"]
    assert lifted["main"].frozen == ("y", "z")


def test_a_lifted_constant_is_frozen_when_no_weight_is():
    lifted = aj.transform.LiftTransformParams()(aj.parse(LIFTED_CONSTANT.format(frozen="")))
    assert [p.name_hint for p in lifted["main"].params] == ["x", "w", "y", "z"]
    assert lifted["main"].frozen == ("z",)


# ---- AppendLoss: a function returning a var bound to a tuple ----
# Found by `passes` (seed 11, input 11497, a Train check after
# LiftTransformParams: main returned lv_1 = split(lv, [2], axis=1)). A
# function whose return is a var of tuple type has as many results as the
# tuple has fields (AppendLoss counts them from the type), but AppendLoss
# feeds the loss the whole tuple var instead of its first field, and mse
# refused it with a TypeInferenceError that names no tuple ("input must be a
# tensor var of a FunctionBuilder, got Var"). Written `return (s[0], s[1])`,
# the same function trained. `_outputs` (training/append_loss.py) split only
# a Python tuple from bb.inline; it now takes a var of tuple type apart too.

RETURNS_A_TUPLE_VAR = '''\
@function(num_input=1)
def main(x: Tensor((2, 6), "float64"), w: Tensor((2, 6), "float64")):
    y = multiply(x, w)
    s = split(y, [2], axis=1)
    return s
'''


def test_append_loss_of_a_function_returning_a_tuple_var_takes_its_first_field():
    from adjoint import training as T

    as_fields = aj.parse(RETURNS_A_TUPLE_VAR.replace("return s", "a = s[0]\n    b = s[1]\n    return (a, b)"))
    want = T.AppendLoss("main", T.mse)(as_fields)["main_loss"]
    got = T.AppendLoss("main", T.mse)(aj.parse(RETURNS_A_TUPLE_VAR))["main_loss"]
    assert [p.name_hint for p in got.params] == ["x", "label", "w"]
    assert got.ret_type == want.ret_type
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in ((2, 6), (2, 2), (2, 6))]
    wanted = aj.build(aj.Module({"f": want}))["f"](*args)
    for g, w in zip(aj.build(aj.Module({"f": got}))["f"](*args), wanted):
        np.testing.assert_allclose(g, w)
