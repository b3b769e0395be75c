"""Structural equality and hashing: alpha-equivalent modules are equal and
hash equal; binding order, args and attrs matter; the diff names the first
difference."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import examples
from conftest import BINARY, UNARY_SQUARE, build_graph

steps = st.lists(
    st.tuples(st.sampled_from(BINARY + UNARY_SQUARE), st.integers(0, 50), st.integers(0, 50)),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300)
@given(steps)
def test_renaming_vars_keeps_modules_equal_and_hashes_equal(s):
    a = build_graph(s, names=("x", "y"), prefix="lv")
    b = build_graph(s, names=("p", "q"), prefix="tmp")
    assert aj.structural_equal(a, b)
    assert aj.structural_hash(a) == aj.structural_hash(b)
    aj.assert_structural_equal(a, b)


@settings(max_examples=300)
@given(steps)
def test_printed_text_reparses_equal(s):
    mod = build_graph(s)
    again = aj.parse(mod.script())
    aj.assert_structural_equal(again, mod)
    assert aj.structural_hash(again) == aj.structural_hash(mod)
    assert again.script() == mod.script()
    aj.analysis.verify(again)


@settings(max_examples=200)
@given(steps, steps)
def test_equal_implies_equal_hash(s1, s2):
    a, b = build_graph(s1), build_graph(s2)
    if aj.structural_equal(a, b):
        assert aj.structural_hash(a) == aj.structural_hash(b)
    else:
        assert aj.structural_diff(a, b) is not None


@settings(max_examples=200)
@given(steps, st.data())
def test_swapping_args_of_a_call_makes_modules_differ(s, data):
    binary = [k for k, (op, i, j) in enumerate(s) if op in BINARY and (i % (k + 2)) != (j % (k + 2))]
    if not binary:
        return
    k = data.draw(st.sampled_from(binary))
    op, i, j = s[k]
    swapped = list(s)
    swapped[k] = (op, j, i)
    assert not aj.structural_equal(build_graph(s), build_graph(swapped))


def _text(sum_attrs=""):
    return (
        '@function\ndef main(x: Tensor((3, 3), "float32")) -> Tensor((3, 3), "float32"):\n'
        f"    a = sum(x, axis=[1], keepdims=True{sum_attrs})\n"
        "    b = broadcast_to(a, (3, 3))\n"
        "    return b\n"
    )


def test_changing_an_attr_makes_modules_differ():
    a = aj.parse(_text())
    b = aj.parse(_text().replace("axis=[1]", "axis=[0]"))
    assert not aj.structural_equal(a, b)
    with pytest.raises(aj.StructuralMismatch) as info:
        aj.assert_structural_equal(a, b)
    msg = str(info.value)
    assert "main" in msg and "axis=[1]" in msg and "axis=[0]" in msg
    assert isinstance(info.value, AssertionError)


def test_default_attrs_written_or_not_are_equal():
    a = aj.parse(_text())
    b = aj.parse(_text().replace("keepdims=True", "keepdims=True").replace("axis=[1]", "axis=1"))
    aj.assert_structural_equal(a, b)


def test_binding_order_matters():
    t1 = '@function\ndef main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    a = add(x, x)\n    b = multiply(x, x)\n    c = subtract(a, b)\n    return c\n'
    t2 = '@function\ndef main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    b = multiply(x, x)\n    a = add(x, x)\n    c = subtract(a, b)\n    return c\n'
    assert not aj.structural_equal(aj.parse(t1), aj.parse(t2))


def test_diff_names_function_binding_and_both_sides():
    a = aj.parse(examples.TRANSPOSED_MATMUL)
    b = aj.parse(examples.TRANSPOSED_MATMUL.replace("matmul(lv1, lv2)", "matmul(lv2, lv1)"))
    diff = aj.structural_diff(a, b)
    assert diff is not None
    assert "main" in diff and "lv3" in diff
    assert "matmul(lv1, lv2)" in diff and "matmul(lv2, lv1)" in diff
    assert re.search(r"binding\s*2", diff)


def test_diff_of_missing_function_and_different_params():
    a = aj.parse(examples.TRANSPOSED_MATMUL)
    b = aj.parse(examples.TRANSPOSED_MATMUL.replace("def main", "def other"))
    assert "main" in aj.structural_diff(a, b)
    wide = examples.TRANSPOSED_MATMUL.replace("(3, 3)", "(4, 4)")
    diff = aj.structural_diff(a, aj.parse(wide))
    assert "param" in diff and "(3, 3)" in diff and "(4, 4)" in diff


def test_function_attrs_matter():
    a = aj.parse(examples.MLP_SYMBOLIC)
    b = aj.parse(examples.MLP_SYMBOLIC.replace("@function(num_input=1)", "@function"))
    assert not aj.structural_equal(a, b)
    fa = a["main"]
    assert aj.structural_equal(fa.with_attr("num_input", 1), fa)
    assert not aj.structural_equal(fa.with_attr("num_input", 2), fa)


def test_constants_compare_by_value():
    t = '@function\ndef main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    y = add(x, const([1.0, 2.0], "float32"))\n    return y\n'
    assert aj.structural_equal(aj.parse(t), aj.parse(t))
    assert not aj.structural_equal(aj.parse(t), aj.parse(t.replace("2.0]", "2.5]")))


def test_module_function_order_does_not_matter():
    f = examples.TRANSPOSED_MATMUL
    g = f.replace("def main", "def other")
    assert aj.structural_equal(aj.parse(f + "\n" + g), aj.parse(g + "\n" + f))
    assert aj.structural_hash(aj.parse(f + "\n" + g)) == aj.structural_hash(aj.parse(g + "\n" + f))


def test_comparing_unlike_things_is_an_error():
    mod = aj.parse(examples.TRANSPOSED_MATMUL)
    with pytest.raises(aj.Error):
        aj.structural_equal(mod, mod["main"])
    with pytest.raises(aj.Error):
        aj.structural_hash(3)


def test_functions_sharing_vars_at_different_places():
    # Each var caches where a function defines it; here the same vars sit at
    # other indices in a second function, so lookups alternate between the
    # two and must fall back to the table, not trust the other's cache.
    T = aj.TensorType((3,), "float32")
    x, a, b = aj.Var("x", T), aj.Var("a", T), aj.Var("b", T)
    f = aj.Function([x], [(a, aj.Call("exp", [x])), (b, aj.Call("add", [a, x]))], b)
    c = aj.Var("c", T)
    g = aj.Function([x], [(c, aj.Call("tanh", [x])), (a, aj.Call("exp", [x])), (b, aj.Call("add", [a, c]))], b)
    mod = aj.Module({"f": f, "g": g})
    text = mod.script()
    again = aj.parse(text)
    for _ in range(2):
        aj.assert_structural_equal(mod, again)
        assert aj.structural_hash(mod) == aj.structural_hash(again)
        assert mod.script() == text
    assert "b: Tensor((3,), \"float32\") = add(a, c)" in text
    kept = aj.transform.DeadCodeElimination()(aj.Module({"g": g}))["g"]
    assert [bd.var.name_hint for bd in kept.bindings] == ["c", "a", "b"]


def test_var_defined_twice_prints_and_hashes_by_first_definition():
    T = aj.TensorType((3,), "float32")
    x, a = aj.Var("x", T), aj.Var("a", T)
    twice = aj.Module({"main": aj.Function([x], [(a, aj.Call("exp", [x])), (a, aj.Call("tanh", [a]))], a)})
    assert not aj.analysis.well_formed(twice)
    text = twice.script()
    assert text.count("a: Tensor") == 2
    assert aj.structural_hash(twice) == aj.structural_hash(twice)
    assert aj.structural_equal(twice, twice)


def test_a_type_made_and_freed_over_and_over_keeps_one_interned_entry():
    # Tensor types are interned; a lookup that passed the entries of freed
    # types kept them, so a pass run over and over (each run making and
    # freeing the same types) scanned a growing list on every lookup.
    from adjoint import _core

    aj.TensorType((7, 11, 13), "float64")  # made and freed once
    before = _core._interned_tensor_types()
    for _ in range(5000):
        aj.TensorType((7, 11, 13), "float64")
    assert _core._interned_tensor_types() - before <= 1
