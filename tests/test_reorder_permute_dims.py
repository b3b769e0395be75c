"""ReorderPermuteDimsAfterConcat: a concat of permute_dims calls that all
apply one permutation becomes one permute_dims of the concat of their
inputs, for any number of fields (TVM's patterns stop at 11), and computes
what the input computed."""

import numpy as np
import pytest

import adjoint as aj

REORDER = aj.transform.ReorderPermuteDimsAfterConcat()
RNG = np.random.default_rng(12)


def tensor(shape, dtype="float64") -> str:
    dims = ", ".join(str(d) for d in shape)
    return f'Tensor(({dims}{"," if len(shape) == 1 else ""}), "{dtype}")'


def concat_of_permutes(shapes, perm, axis, axes_text=None, tuple_var=False) -> aj.Module:
    """main(x0, x1, ...) = concat((permute_dims(x0, perm), ...), axis), as text."""
    permuted = [tuple(s[i] for i in perm) for s in shapes]
    ax = axis % len(perm)
    out = list(permuted[0])
    out[ax] = sum(p[ax] for p in permuted)
    params = ", ".join(f"x{i}: {tensor(s)}" for i, s in enumerate(shapes))
    axes = axes_text if axes_text is not None else f"axes={list(perm)}"
    lines = [f"    p{i}: {tensor(p)} = permute_dims(x{i}{', ' + axes if axes else ''})" for i, p in enumerate(permuted)]
    fields = "(" + ", ".join(f"p{i}" for i in range(len(shapes))) + ("," if len(shapes) == 1 else "") + ")"
    if tuple_var:
        types = ", ".join(tensor(p) for p in permuted)
        lines.append(f"    t: Tuple({types}) = {fields}")
        fields = "t"
    lines.append(f"    c: {tensor(out)} = concat({fields}, axis={axis})")
    text = "@function\n" + f"def main({params}) -> {tensor(out)}:\n" + "\n".join(lines) + "\n    return c\n"
    return aj.parse(text)


def inputs_of(mod: aj.Module) -> list[np.ndarray]:
    return [RNG.standard_normal(tuple(d for d in p.type.shape)) for p in mod["main"].params]


def assert_same_numbers(before: aj.Module, after: aj.Module) -> None:
    args = inputs_of(before)
    np.testing.assert_array_equal(aj.build(after)["main"](*args), aj.build(before)["main"](*args))


def ops_of(mod: aj.Module) -> list[str]:
    return [b.value.op for b in mod["main"].bindings if isinstance(b.value, aj.Call)]


def test_two_fields_golden():
    mod = concat_of_permutes([(4, 3), (4, 5)], (1, 0), 0, axes_text="")
    out = REORDER(mod)
    assert out.script() == '''\
@function
def main(x0: Tensor((4, 3), "float64"), x1: Tensor((4, 5), "float64")) -> Tensor((8, 4), "float64"):
    lv: Tensor((4, 8), "float64") = concat((x0, x1), axis=1)
    c: Tensor((8, 4), "float64") = permute_dims(lv)
    return c
'''
    aj.analysis.verify(out)
    assert_same_numbers(mod, out)


QKV = '''\
@function
def main(x: Tensor((2, 16), "float64"), wq: Tensor((8, 16), "float64"), wk: Tensor((8, 16), "float64"), wv: Tensor((8, 16), "float64")) -> Tensor((2, 24), "float64"):
    tq: Tensor((16, 8), "float64") = permute_dims(wq)
    tk: Tensor((16, 8), "float64") = permute_dims(wk)
    tv: Tensor((16, 8), "float64") = permute_dims(wv)
    w: Tensor((16, 24), "float64") = concat((tq, tk, tv), axis=1)
    y: Tensor((2, 24), "float64") = matmul(x, w)
    return y
'''


def test_qkv_golden():
    mod = aj.parse(QKV)
    out = REORDER(mod)
    assert out.script() == '''\
@function
def main(x: Tensor((2, 16), "float64"), wq: Tensor((8, 16), "float64"), wk: Tensor((8, 16), "float64"), wv: Tensor((8, 16), "float64")) -> Tensor((2, 24), "float64"):
    lv: Tensor((24, 16), "float64") = concat((wq, wk, wv))
    w: Tensor((16, 24), "float64") = permute_dims(lv)
    y: Tensor((2, 24), "float64") = matmul(x, w)
    return y
'''
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("n", [1, 2, 12, 13, 100, 1000])
def test_any_number_of_fields(n):
    mod = concat_of_permutes([(3, 2 + i % 3) for i in range(n)], (1, 0), 0)
    out = REORDER(mod)
    aj.analysis.verify(out)
    assert ops_of(out) == ["concat", "permute_dims"]
    concat = out["main"].bindings[0].value
    assert concat.attrs["axis"] == 1 and len(concat.args[0].fields) == n
    assert_same_numbers(mod, out)


def test_axes_none_and_explicit_reversal_agree():
    text = concat_of_permutes([(4, 3), (4, 5)], (1, 0), 0).script().replace("permute_dims(x0, axes=[1, 0])",
                                                                              "permute_dims(x0)")
    mod = aj.parse(text)
    assert "permute_dims(x0)" in mod.script() and "axes=[1, 0]" in mod.script()
    assert ops_of(REORDER(mod)) == ["concat", "permute_dims"]


def test_negative_axis():
    mod = concat_of_permutes([(4, 3), (4, 5)], (1, 0), -2)
    out = REORDER(mod)
    assert ops_of(out) == ["concat", "permute_dims"]
    assert out["main"].bindings[0].value.attrs["axis"] == 1
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_rank_3_permutation(axis):
    perm = (2, 0, 1)
    shapes = [[4, 3, 5], [4, 3, 5]]
    for s in shapes[1:]:
        s[perm[axis % 3]] = 7
    mod = concat_of_permutes([tuple(s) for s in shapes], perm, axis)
    out = REORDER(mod)
    aj.analysis.verify(out)
    assert ops_of(out) == ["concat", "permute_dims"]
    assert out["main"].bindings[0].value.attrs["axis"] == perm[axis % 3]
    assert list(out["main"].bindings[1].value.attrs["axes"]) == list(perm)
    assert_same_numbers(mod, out)


def test_tuple_var_as_concat_arg():
    mod = concat_of_permutes([(4, 3), (4, 5), (4, 1)], (1, 0), 0, tuple_var=True)
    out = REORDER(mod)
    assert ops_of(out) == ["concat", "permute_dims"]
    assert_same_numbers(mod, out)


MIXED = '''\
@function
def main(x0: Tensor((4, 3), "float64"), x1: Tensor((5, 4), "float64")) -> Tensor((8, 4), "float64"):
    p0: Tensor((3, 4), "float64") = permute_dims(x0)
    p1: Tensor((5, 4), "float64") = permute_dims(x1, axes=[0, 1])
    c: Tensor((8, 4), "float64") = concat((p0, p1), axis=0)
    return c
'''

NOT_ALL_PERMUTES = '''\
@function
def main(x0: Tensor((4, 3), "float64"), x1: Tensor((5, 4), "float64")) -> Tensor((8, 4), "float64"):
    p0: Tensor((3, 4), "float64") = permute_dims(x0)
    c: Tensor((8, 4), "float64") = concat((p0, x1), axis=0)
    return c
'''


@pytest.mark.parametrize("text", [MIXED, NOT_ALL_PERMUTES], ids=["mixed_permutations", "not_all_permutes"])
def test_left_alone(text):
    mod = aj.parse(text)
    aj.assert_structural_equal(REORDER(mod), mod)


def test_nothing_to_do_returns_an_equal_module():
    mod = aj.parse('''\
@function
def main(x: Tensor((4, 3), "float64"), y: Tensor((4, 3), "float64")) -> Tensor((8, 3), "float64"):
    c: Tensor((8, 3), "float64") = concat((x, y), axis=0)
    return c
''')
    out = REORDER(mod)
    aj.assert_structural_equal(out, mod)
    assert out.script() == mod.script()


def test_rules_and_docstring():
    (name, before_after), = aj.transform.ReorderPermuteDimsAfterConcat.rules
    assert name == "permute_dims_after_concat" and "->" in before_after
    assert before_after in aj.transform.ReorderPermuteDimsAfterConcat.__doc__
    assert "ReorderPermuteDimsAfterConcat" in aj.transform.__all__


def test_malformed_input_is_an_error():
    with pytest.raises(aj.Error):
        REORDER("not a module")


DEAD_AND_NOTHING_TO_REORDER = """@function
def main(x: Tensor((2, 3), "float64")) -> Tensor((3, 2), "float64"):
    dead: Tensor((2, 3), "float64") = exp(x)
    t: Tensor((3, 2), "float64") = permute_dims(x)
    return t
"""

DEAD_AND_ONE_TO_REORDER = """@function
def main(x: Tensor((2, 3), "float64"), y: Tensor((2, 3), "float64")) -> Tensor((6, 2), "float64"):
    dead: Tensor((2, 3), "float64") = exp(x)
    a: Tensor((3, 2), "float64") = permute_dims(x)
    b: Tensor((3, 2), "float64") = permute_dims(y)
    c: Tensor((6, 2), "float64") = concat((a, b), axis=0)
    return c
"""


@pytest.mark.parametrize("text", [DEAD_AND_NOTHING_TO_REORDER, DEAD_AND_ONE_TO_REORDER], ids=["unchanged", "rewritten"])
def test_dead_code_goes_from_the_output_and_the_input_keeps_it(text):
    # The pass removes dead code from the functions it rebuilds by moving
    # their bindings when it alone holds them: the caller's module, still
    # held, must keep every binding it had.
    mod = aj.parse(text)
    before = mod.script()
    out = REORDER(mod)
    assert mod.script() == before
    assert "dead" not in out.script()
    aj.analysis.verify(out)
    assert_same_numbers(mod, out)
