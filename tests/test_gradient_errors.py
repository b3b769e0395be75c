"""Gradient's errors name the function, var or op, and the input module is
never changed."""

import pytest

import adjoint as aj
from adjoint import examples


def base():
    return aj.parse(examples.TRANSPOSED_MATMUL)


def test_unknown_function():
    with pytest.raises(aj.TransformError, match=r"no function 'nope' \(it has: main\)"):
        aj.transform.Gradient("nope")(base())


def test_non_scalar_target():
    mod = aj.parse('@function\ndef main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    y = add(x, x)\n    return y\n')
    with pytest.raises(aj.TransformError, match=r"Gradient of 'main': the target must be a float scalar, got Tensor\(\(3,\), \"float32\"\)"):
        aj.transform.Gradient()(mod)


def test_integer_target():
    mod = aj.parse('@function\ndef main(x: Tensor((3,), "int32")) -> Tensor((), "int32"):\n    y = sum(x)\n    return y\n')
    with pytest.raises(aj.TransformError, match="float scalar"):
        aj.transform.Gradient()(mod)


def test_required_var_not_in_function():
    with pytest.raises(aj.TransformError, match=r"'z' is neither a param nor a var"):
        aj.transform.Gradient(require_grads=["z"])(base())


def test_integer_param_asked_for():
    mod = aj.parse('@function\ndef main(x: Tensor((3,), "float32"), k: Tensor((3,), "int32")) -> Tensor((), "float32"):\n    y = sum(x)\n    return y\n')
    with pytest.raises(aj.TransformError, match=r"'k' of dtype int32"):
        aj.transform.Gradient(require_grads=["k"])(mod)


def test_target_index_out_of_range():
    mod = aj.parse('@function\ndef main(x: Tensor((), "float32")) -> Tuple(Tensor((), "float32"), Tensor((), "float32")):\n    return (x, x)\n')
    with pytest.raises(aj.TransformError, match="target_index 2 is out of range"):
        aj.transform.Gradient(target_index=2)(mod)


def test_input_module_is_not_changed():
    mod = base()
    text = mod.script()
    h = aj.structural_hash(mod)
    out = aj.transform.Gradient()(mod)
    assert mod.script() == text and aj.structural_hash(mod) == h
    assert list(mod) == ["main"] and list(out) == ["main", "main_adjoint"]
    aj.assert_structural_equal(out["main"], mod["main"])


def test_bad_arguments():
    with pytest.raises(aj.TransformError):
        aj.transform.Gradient()("not a module")  # type: ignore[arg-type]
    with pytest.raises(aj.TransformError):
        aj.transform.Gradient(require_grads=[3])  # type: ignore[list-item]
