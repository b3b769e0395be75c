"""Building functions from Python: A-normal form, inferred types, unique
names, operator sugar, and errors for misuse."""

import numpy as np
import pytest

import adjoint as aj
from adjoint import examples


def test_design_section5_example():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 784), "float32")
    w = bb.param("w", (784, 10), "float32")
    mod = bb.finish(aj.op.sum(aj.op.relu(x @ w)))
    fn = mod["main"]
    assert fn.attrs == {"num_input": 1}
    assert fn.params[0].type.shape == ("n", 784)
    assert fn.bindings[0].value.op == "matmul"
    assert fn.bindings[0].var.type.shape == ("n", 10)
    aj.analysis.verify(mod)


def test_builder_matches_parsed_text():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), "float32")
    y = bb.param("y", (3, 3), "float32")
    lv1 = aj.op.permute_dims(x, name="lv1")
    lv2 = aj.op.permute_dims(y, name="lv2")
    lv3 = aj.op.matmul(lv1, lv2, name="lv3")
    mod = bb.finish(aj.op.sum(lv3, name="gv"))
    assert mod.script() == examples.TRANSPOSED_MATMUL


def test_operator_sugar():
    bb = aj.FunctionBuilder("f")
    x = bb.param("x", (2, 3), "float64")
    y = x * 2.0 + 1.0 - x / x
    z = (-y).T @ x
    s = z.sum(axis=[0], keepdims=True)
    mod = bb.finish(s)
    ops = [b.value.op for b in mod["f"].bindings]
    assert ops == ["multiply", "add", "divide", "subtract", "negative", "permute_dims", "matmul", "sum"]
    consts = [b.value.args[1] for b in mod["f"].bindings[:2]]
    assert all(isinstance(c, aj.Constant) and c.type.dtype == "float64" for c in consts)
    assert mod["f"].ret_type.shape == (1, 3)


def test_tuples_and_items():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 6), "float32")
    parts = aj.op.split(x, 3, axis=1)
    a, b = parts[0], parts[2]
    c = aj.op.concat([a, b], axis=1)
    mod = bb.finish((c, (a, b)))
    fn = mod["main"]
    assert str(fn.ret_type) == 'Tuple(Tensor((4, 4), "float32"), Tuple(Tensor((4, 2), "float32"), Tensor((4, 2), "float32")))'
    aj.analysis.verify(mod)
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


def test_names_are_deduplicated():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    x2 = bb.param("x", (2,), "float32")
    a = aj.op.add(x, x2, name="x")
    assert [p.name_hint for p in bb._builder.params] == ["x", "x_1"]
    assert a.name_hint == "x_2"
    bb.finish(a)


def test_constants_from_numpy():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 2), "float32")
    c = np.array([[1, 2], [3, 4]], dtype=np.float32)
    mod = bb.finish(aj.op.add(x, c))
    const = mod["main"].bindings[0].value.args[1]
    np.testing.assert_array_equal(const.data, c)
    assert 'const([[1.0, 2.0], [3.0, 4.0]], "float32")' in mod.script()


def test_type_errors_name_the_op():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3), "float32")
    with pytest.raises(aj.TypeInferenceError, match=r"matmul.*\(2, 3\)"):
        x @ x
    with pytest.raises(aj.TypeInferenceError, match="sum"):
        aj.op.sum(x, axis=[7])
    with pytest.raises(aj.TypeInferenceError, match="add"):
        aj.op.add(x)
    with pytest.raises(aj.TypeInferenceError, match="no attr 'bogus'|unexpected keyword"):
        aj.op.sum(x, bogus=1)
    with pytest.raises(aj.Error, match="dtype"):
        bb.param("z", (2,), "float16")
    with pytest.raises(aj.Error):
        bb.param("z", (-1,), "float32")
    with pytest.raises(aj.Error):
        aj.op.add(x, object())
    bb.finish(x)


def test_ops_outside_a_builder_are_an_error():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    bb.finish(x)
    with pytest.raises(aj.Error, match="no active FunctionBuilder"):
        aj.op.add(x, x)
    with pytest.raises(aj.Error, match="already finished"):
        bb.param("y", (2,), "float32")


def test_context_manager_deactivates():
    with aj.FunctionBuilder("outer") as outer:
        x = outer.param("x", (2,), "float32")
        with aj.FunctionBuilder("inner") as inner:
            y = inner.param("y", (2,), "float32")
            inner_mod = inner.finish(aj.op.add(y, y))
        outer_mod = outer.finish(aj.op.multiply(x, x))
    assert inner_mod["inner"].bindings[0].value.op == "add"
    assert outer_mod["outer"].bindings[0].value.op == "multiply"


def test_module_api():
    mod = aj.parse(examples.TRANSPOSED_MATMUL + "\n" + examples.TRANSPOSED_MATMUL.replace("def main", "def g"))
    assert "main" in mod and "g" in mod and "h" not in mod
    assert list(mod) == ["main", "g"] and len(mod) == 2
    assert list(mod.functions) == ["main", "g"]
    with pytest.raises(aj.FunctionNotFoundError, match="h"):
        mod["h"]
    with pytest.raises(KeyError):
        mod["h"]
    fn = mod["main"].with_attr("num_input", 1)
    assert fn.attrs == {"num_input": 1} and mod["main"].attrs == {}
    mod2 = mod.with_function("main", fn)
    assert mod2["main"].attrs == {"num_input": 1} and mod["main"].attrs == {}
    assert "@function(num_input=1)" in mod2.script()
    assert "<pre>" in mod._repr_html_()
