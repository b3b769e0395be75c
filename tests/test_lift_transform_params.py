"""LiftTransformParams: golden printed modules for what is lifted and what
stays (weights transposed and concatenated, a binding mixing an input and a
weight, zeros used by one side or both, weights used directly, a tuple value,
items of tuples holding an input, written inline or not, dead code),
numerical equality of f_transform_params then f with f (also for an adjoint
after Gradient), functions without num_input, name clashes, bad num_input,
and a linear-time check."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import adjoint as aj

LIFT = aj.transform.LiftTransformParams()
RNG = np.random.default_rng(0)


def lifted(text: str) -> aj.Module:
    return LIFT(aj.parse(textwrap.dedent(text)))


def assert_script(mod: aj.Module, text: str) -> None:
    assert mod.script().strip() == textwrap.dedent(text).strip()


def flat(out) -> list[np.ndarray]:
    return [a for o in out for a in flat(o)] if isinstance(out, tuple) else [np.asarray(out)]


def assert_lifting_computes_the_same(mod: aj.Module, name: str = "main") -> None:
    """f_transform_params on the weights, then f on the inputs and its result,
    equals f (each symbol 3)."""
    fn = mod[name]
    size = lambda d: aj.Dim(d).evaluate({s: 3 for s in aj.Dim(d).symbols}) if isinstance(d, str) else d  # noqa: E731
    inputs = [RNG.standard_normal([size(d) for d in p.type.shape]) for p in fn.params]
    n = fn.attrs["num_input"]
    want = aj.build(mod)[name](*inputs)
    exe = aj.build(LIFT(mod))
    transformed = exe[f"{name}_transform_params"](*inputs[n:])
    got = exe[name](*inputs[:n], *transformed)
    for g, w in zip(flat(got), flat(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


TRANSPOSE_CONCAT = '''
@function(num_input=1)
def main(x: Tensor((3, 4), "float64"), w1: Tensor((5, 4), "float64"), w2: Tensor((6, 4), "float64")) -> Tensor((3, 11), "float64"):
    t1: Tensor((4, 5), "float64") = permute_dims(w1)
    t2: Tensor((4, 6), "float64") = permute_dims(w2)
    wcat: Tensor((4, 11), "float64") = concat((t1, t2), axis=1)
    y: Tensor((3, 11), "float64") = matmul(x, wcat)
    return y
'''


def test_weights_transposed_and_concatenated_are_lifted():
    assert_script(lifted(TRANSPOSE_CONCAT), '''
        @function(num_input=1)
        def main(x: Tensor((3, 4), "float64"), wcat: Tensor((4, 11), "float64")) -> Tensor((3, 11), "float64"):
            y: Tensor((3, 11), "float64") = matmul(x, wcat)
            return y

        @function
        def main_transform_params(w1: Tensor((5, 4), "float64"), w2: Tensor((6, 4), "float64")) -> Tuple(Tensor((4, 11), "float64")):
            t1: Tensor((4, 5), "float64") = permute_dims(w1)
            t2: Tensor((4, 6), "float64") = permute_dims(w2)
            wcat: Tensor((4, 11), "float64") = concat((t1, t2), axis=1)
            return (wcat,)
    ''')
    assert_lifting_computes_the_same(aj.parse(TRANSPOSE_CONCAT))


MIXED = '''
@function(num_input=1)
def main(x: Tensor((3, 3), "float64"), w: Tensor((3, 3), "float64")) -> Tensor((3, 3), "float64"):
    xw: Tensor((3, 3), "float64") = add(x, w)
    wt: Tensor((3, 3), "float64") = permute_dims(w)
    out: Tensor((3, 3), "float64") = matmul(xw, wt)
    return out
'''


def test_a_binding_mixing_an_input_and_a_weight_is_not_lifted():
    assert_script(lifted(MIXED), '''
        @function(num_input=1)
        def main(x: Tensor((3, 3), "float64"), w: Tensor((3, 3), "float64"), wt: Tensor((3, 3), "float64")) -> Tensor((3, 3), "float64"):
            xw: Tensor((3, 3), "float64") = add(x, w)
            out: Tensor((3, 3), "float64") = matmul(xw, wt)
            return out

        @function
        def main_transform_params(w: Tensor((3, 3), "float64")) -> Tuple(Tensor((3, 3), "float64"), Tensor((3, 3), "float64")):
            wt: Tensor((3, 3), "float64") = permute_dims(w)
            return (w, wt)
    ''')
    assert_lifting_computes_the_same(aj.parse(MIXED))


ZEROS = '''
@function(num_input=1)
def main(x: Tensor((4,), "float64"), w: Tensor((4,), "float64")) -> Tuple(Tensor((4,), "float64"), Tensor((4,), "int32")):
    both: Tensor((4,), "float64") = zeros((4,), "float64")
    lifted_only: Tensor((4,), "float64") = ones((4,), "float64")
    main_only: Tensor((4,), "int32") = zeros((4,), "int32")
    unused: Tensor((4,), "float64") = ones((4,), "float64")
    shifted: Tensor((4,), "float64") = add(w, both)
    scaled: Tensor((4,), "float64") = multiply(shifted, lifted_only)
    y: Tensor((4,), "float64") = add(x, scaled)
    z: Tensor((4,), "float64") = add(y, both)
    return (z, main_only)
'''


def test_ops_without_inputs_stay_where_they_are_used():
    assert_script(lifted(ZEROS), '''
        @function(num_input=1)
        def main(x: Tensor((4,), "float64"), scaled: Tensor((4,), "float64")) -> Tuple(Tensor((4,), "float64"), Tensor((4,), "int32")):
            both: Tensor((4,), "float64") = zeros((4,), "float64")
            main_only: Tensor((4,), "int32") = zeros((4,), "int32")
            y: Tensor((4,), "float64") = add(x, scaled)
            z: Tensor((4,), "float64") = add(y, both)
            return (z, main_only)

        @function
        def main_transform_params(w: Tensor((4,), "float64")) -> Tuple(Tensor((4,), "float64")):
            both: Tensor((4,), "float64") = zeros((4,), "float64")
            lifted_only: Tensor((4,), "float64") = ones((4,), "float64")
            shifted: Tensor((4,), "float64") = add(w, both)
            scaled: Tensor((4,), "float64") = multiply(shifted, lifted_only)
            return (scaled,)
    ''')
    assert_lifting_computes_the_same(aj.parse(ZEROS))


DIRECT = '''
@function(num_input=1)
def main(x: Tensor((4,), "float64"), w: Tensor((4,), "float64"), v: Tensor((4,), "float64"), u: Tensor((2,), "float64")) -> Tensor((4,), "float64"):
    y: Tensor((4,), "float64") = multiply(x, w)
    v2: Tensor((4,), "float64") = exp(v)
    z: Tensor((4,), "float64") = add(y, v2)
    dead: Tensor((4,), "float64") = exp(w)
    return z
'''


def test_weights_used_directly_pass_through_and_dead_code_leaves_both():
    assert_script(lifted(DIRECT), '''
        @function(num_input=1)
        def main(x: Tensor((4,), "float64"), w: Tensor((4,), "float64"), v2: Tensor((4,), "float64")) -> Tensor((4,), "float64"):
            y: Tensor((4,), "float64") = multiply(x, w)
            z: Tensor((4,), "float64") = add(y, v2)
            return z

        @function
        def main_transform_params(w: Tensor((4,), "float64"), v: Tensor((4,), "float64"), u: Tensor((2,), "float64")) -> Tuple(Tensor((4,), "float64"), Tensor((4,), "float64")):
            v2: Tensor((4,), "float64") = exp(v)
            return (w, v2)
    ''')
    assert_lifting_computes_the_same(aj.parse(DIRECT))


FROZEN = '''
@function(num_input=1, frozen="s, mean", doc="A scaled, shifted linear layer.")
def main(x: Tensor((2, 3), "float64"), w: Tensor((3, 3), "float64"), s: Tensor((3,), "float64"), mean: Tensor((3,), "float64")) -> Tensor((2, 3), "float64"):
    t: Tensor((3, 3), "float64") = permute_dims(w)
    m: Tensor((3,), "float64") = exp(mean)
    y: Tensor((2, 3), "float64") = matmul(x, t)
    z: Tensor((2, 3), "float64") = multiply(y, s)
    r: Tensor((2, 3), "float64") = add(z, m)
    return r
'''


@pytest.mark.parametrize("frozen, kept", [("s, mean", ' frozen="s, m",'), ("mean", ' frozen="m",'),
                                          ("w", ' frozen="t",'), ("\\ts ,\\n mean", ' frozen="s, m",')])
def test_the_frozen_attr_names_the_weights_of_f_that_read_only_frozen_ones(frozen, kept):
    # s passes through; m = exp(mean) and t = permute_dims(w) are lifted, and
    # each is frozen in main when what it is computed from was (the attr goes
    # when it names nothing): training main leaves them as training the
    # original left mean and w
    out = lifted(FROZEN.replace('frozen="s, mean"', f'frozen="{frozen}"'))
    assert out.script().splitlines()[0] == f'@function(num_input=1,{kept} doc="A scaled, shifted linear layer.")'
    assert_lifting_computes_the_same(aj.parse(FROZEN))


def test_lifted_params_of_one_name_get_distinct_names_so_frozen_tells_them_apart():
    """Gradient names its bindings lv; lifted, two became params 'lv' and
    the attr said frozen="s, lv, lv", which then did not verify."""
    grads = aj.transform.Gradient()(aj.parse('''
@function(num_input=1, frozen="rv")
def main(x: Tensor((3,), "float64"), w: Tensor((3,), "float64"), rv: Tensor((3,), "float64")) -> Tensor((), "float64"):
    a: Tensor((3,), "float64") = abs(rv)
    s: Tensor((3,), "float64") = sqrt(a)
    d: Tensor((3,), "float64") = multiply(x, s)
    e: Tensor((3,), "float64") = multiply(d, w)
    l: Tensor((), "float64") = sum(e)
    return l
'''))
    out = aj.transform.LiftTransformParams()(grads)
    aj.analysis.verify(out)
    adjoint = out["main_adjoint"]
    assert [p.name_hint for p in adjoint.params] == ["x", "w", "s", "x_adjoint", "lv", "lv_1"]
    assert adjoint.frozen == ("s", "lv", "lv_1")  # sqrt(|rv|), 2 * that, rv < 0: from rv alone
    assert aj.structural_equal(aj.parse(out.script()), out)
    assert_lifting_computes_the_same(grads)


def test_a_lifted_param_whose_name_is_no_identifier_is_named_as_it_prints():
    """A var made from Python may be named 'w.exp'; lifted, its param takes
    the name the text gives it, as a lifted param whose name another has does."""
    T = aj.TensorType((3,), "float64")
    x, w = aj.Var("x", T), aj.Var("w", T)
    e, s, y, l = aj.Var("w.exp", T), aj.Var("w.exp", T), aj.Var("y", T), aj.Var("l", aj.TensorType((), "float64"))
    fn = aj.Function([x, w], [(e, aj.Call("exp", [w])), (s, aj.Call("sqrt", [e])), (y, aj.Call("multiply", [x, s])),
                              (l, aj.Call("sum", [y]))], l, {"num_input": 1})
    mod = aj.Module({"main": fn})
    out = aj.transform.LiftTransformParams()(mod)
    assert [p.name_hint for p in out["main"].params] == ["x", "w_exp"]
    assert aj.structural_equal(aj.parse(out.script()), out)
    assert_lifting_computes_the_same(mod)


def test_the_frozen_attr_follows_the_lifted_value_not_its_name():
    """ReassociateMatmul names its bindings y_part; with W3, W4 frozen the
    attr named the lifted W1 @ W2 (the first y_part) instead of W3 @ W4."""
    mod = aj.transform.ReassociateMatmul()(aj.parse('''
@function(num_input=1, frozen="W3, W4")
def main(x: Tensor((2, 2), "float64"), W1: Tensor((2, 100), "float64"), W2: Tensor((100, 2), "float64"), W3: Tensor((2, 100), "float64"), W4: Tensor((100, 2), "float64")) -> Tensor((2, 2), "float64"):
    a: Tensor((2, 2), "float64") = matmul(W1, W2)
    b: Tensor((2, 2), "float64") = matmul(a, x)
    c: Tensor((2, 100), "float64") = matmul(b, W3)
    y: Tensor((2, 2), "float64") = matmul(c, W4)
    return y
'''))
    out = aj.transform.LiftTransformParams()(mod)
    weights = [np.random.default_rng(0).standard_normal(p.type.shape) for p in mod["main"].params[1:]]
    transformed = aj.build(out)["main_transform_params"](*weights)
    (frozen,) = out["main"].frozen
    position = [p.name_hint for p in out["main"].params[1:]].index(frozen)
    np.testing.assert_allclose(transformed[position], weights[2] @ weights[3])
    assert [p.name_hint for p in out["main"].params] == ["x", "y_part", "y_part_1"]
    assert_lifting_computes_the_same(mod)


@pytest.mark.parametrize("body", [
    "a: Tensor((3,), \"float64\") = (w, rv)[1]",
    "t: Tuple(Tensor((3,), \"float64\"), Tensor((3,), \"float64\")) = (w, rv)\n    a: Tensor((3,), \"float64\") = t[1]",
])
def test_a_tuple_item_reading_a_frozen_field_is_frozen(body):
    out = lifted(f'''
@function(num_input=1, frozen="rv")
def main(x: Tensor((3,), "float64"), w: Tensor((3,), "float64"), rv: Tensor((3,), "float64")) -> Tensor((3,), "float64"):
    {body}
    e: Tensor((3,), "float64") = exp(w)
    y: Tensor((3,), "float64") = multiply(x, a)
    z: Tensor((3,), "float64") = add(y, e)
    return z
''')
    assert out["main"].frozen == ("a",)


def test_a_lifted_value_reading_a_trained_weight_is_not_frozen():
    out = lifted('''
@function(num_input=1, frozen="mean")
def main(x: Tensor((3,), "float64"), w: Tensor((3,), "float64"), mean: Tensor((3,), "float64")) -> Tensor((3,), "float64"):
    c: Tensor((3,), "float64") = add(w, mean)
    d: Tensor((3,), "float64") = exp(mean)
    y: Tensor((3,), "float64") = multiply(x, c)
    z: Tensor((3,), "float64") = add(y, d)
    return z
''')
    assert out.script().splitlines()[0] == '@function(num_input=1, frozen="d")'
    assert [p.name_hint for p in out["main"].params] == ["x", "c", "d"]


TUPLE = '''
@function(num_input=1)
def main(x: Tensor((4,), "float64"), w: Tensor((4,), "float64")) -> Tuple(Tensor((2,), "float64"), Tuple(Tensor((2,), "float64"), Tensor((2,), "float64"))):
    we: Tensor((4,), "float64") = exp(w)
    parts: Tuple(Tensor((2,), "float64"), Tensor((2,), "float64")) = split(we, 2)
    first: Tensor((2,), "float64") = parts[0]
    xs: Tensor((2,), "float64") = take(x, const([0, 1], "int64"))
    y: Tensor((2,), "float64") = add(xs, first)
    return (y, parts)
'''


def test_a_tuple_value_stays_computed_from_lifted_tensors():
    assert_script(lifted(TUPLE), '''
        @function(num_input=1)
        def main(x: Tensor((4,), "float64"), we: Tensor((4,), "float64"), first: Tensor((2,), "float64")) -> Tuple(Tensor((2,), "float64"), Tuple(Tensor((2,), "float64"), Tensor((2,), "float64"))):
            parts: Tuple(Tensor((2,), "float64"), Tensor((2,), "float64")) = split(we, 2)
            xs: Tensor((2,), "float64") = take(x, const([0, 1], "int64"))
            y: Tensor((2,), "float64") = add(xs, first)
            return (y, parts)

        @function
        def main_transform_params(w: Tensor((4,), "float64")) -> Tuple(Tensor((4,), "float64"), Tensor((2,), "float64")):
            we: Tensor((4,), "float64") = exp(w)
            parts: Tuple(Tensor((2,), "float64"), Tensor((2,), "float64")) = split(we, 2)
            first: Tensor((2,), "float64") = parts[0]
            return (we, first)
    ''')
    assert_lifting_computes_the_same(aj.parse(TUPLE))


MIXED_TUPLE = '''
@function(num_input=1)
def main(x: Tensor((2,), "float64"), w: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
    t: Tuple(Tensor((2,), "float64"), Tensor((2,), "float64")) = (x, w)
    a: Tensor((2,), "float64") = t[1]
    b: Tensor((2,), "float64") = exp(a)
    c: Tensor((2,), "float64") = add(b, x)
    return c
'''


def test_an_item_of_a_tuple_holding_an_input_is_lifted_as_the_weight_it_reads():
    # t holds input x, so t stays; t[1] is w, and exp of it is compile-time work
    assert [v.name_hint for v in aj.analysis.computable_at_compile_time(aj.parse(MIXED_TUPLE)["main"])] == \
        ["w", "a", "b"]
    assert_script(lifted(MIXED_TUPLE), '''
        @function(num_input=1)
        def main(x: Tensor((2,), "float64"), b: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            c: Tensor((2,), "float64") = add(b, x)
            return c

        @function
        def main_transform_params(w: Tensor((2,), "float64")) -> Tuple(Tensor((2,), "float64")):
            a: Tensor((2,), "float64") = w
            b: Tensor((2,), "float64") = exp(a)
            return (b,)
    ''')
    assert_lifting_computes_the_same(aj.parse(MIXED_TUPLE))
    nested = aj.parse(MIXED_TUPLE.replace("t: Tuple(Tensor((2,), \"float64\"), Tensor((2,), \"float64\")) = (x, w)",
                                          "u: Tuple(Tensor((2,), \"float64\"), Tensor((2,), \"float64\")) = (x, w)\n"
                                          "    t: Tuple(Tensor((2,), \"float64\"), Tensor((2,), \"float64\")) = u"))
    assert "exp" in str(LIFT(nested)["main_transform_params"])
    assert_lifting_computes_the_same(nested)



INLINE_TUPLE = """
@function(num_input=1)
def main(x: Tensor((2,), "float64"), w: Tensor((2,), "float64"), v: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
    a: Tensor((2,), "float64") = (w, x)[0]
    y: Tensor((2,), "float64") = add(x, a)
    return y
"""


def test_an_item_of_an_inline_tuple_holding_an_input_is_lifted_as_the_weight_it_reads():
    # regression: a = (w, x)[0] went to main_transform_params as it was, x free there
    assert_script(lifted(INLINE_TUPLE), """
        @function(num_input=1)
        def main(x: Tensor((2,), "float64"), a: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            y: Tensor((2,), "float64") = add(x, a)
            return y

        @function
        def main_transform_params(w: Tensor((2,), "float64"), v: Tensor((2,), "float64")) -> Tuple(Tensor((2,), "float64")):
            a: Tensor((2,), "float64") = w
            return (a,)
    """)
    assert_lifting_computes_the_same(aj.parse(INLINE_TUPLE))


@pytest.mark.parametrize("bindings, transform", [
    # an item of a tuple nested inline; one of tuple type, then its item
    ("a = ((w, x), x)[0][0]", ["a = w"]),
    ("t = ((w, v), x)[0]\n    a = t[1]", ["t = (w, v)", "a = t[1]"]),
    # an inline item inside a tuple var f keeps, and one of weights only
    ("t = ((w, x)[0], x)\n    a = t[0]", ["lv = w", "a = lv"]),
    ("a = (w, v)[1]", ["a = v"]),
])
def test_items_of_inline_tuples_read_only_their_field(bindings, transform):
    mod = aj.parse(INLINE_TUPLE.replace('a: Tensor((2,), "float64") = (w, x)[0]', bindings))
    aj.analysis.verify(LIFT(mod))
    script = aj.Module({"f": LIFT(mod)["main_transform_params"]}).script()
    assert re.findall(r"^    (\w+): [^=]+ = (.*)$", script, re.M) == [tuple(t.split(" = ")) for t in transform]
    assert_lifting_computes_the_same(mod)


def test_f_keeps_an_item_of_an_inline_tuple_as_the_field_it_reads():
    # c reads x alone: neither w nor exp(w) is passed to main for it
    mod = aj.parse(INLINE_TUPLE.replace('a: Tensor((2,), "float64") = (w, x)[0]',
                                        'e: Tensor((2,), "float64") = exp(w)\n    a: Tensor((2,), "float64") = (e, x)[1]'))
    assert_script(aj.Module({"main": LIFT(mod)["main"]}), """
        @function(num_input=1)
        def main(x: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            a: Tensor((2,), "float64") = x
            y: Tensor((2,), "float64") = add(x, a)
            return y
    """)
    assert_lifting_computes_the_same(mod)

SYMBOLS = '''
@function(num_input=1)
def main(x: Tensor((2, 1), "float64"), w: Tensor((2, "n"), "float64")) -> Tuple(Tensor((2, "n"), "float64"), Tensor((), "float64"), Tensor(("n",), "float64")):
    wide: Tensor((2, "n"), "float64") = broadcast_to(x, (2, "n"))
    total: Tensor((), "float64") = sum(w)
    fill: Tensor(("n",), "float64") = ones(("n",), "float64")
    return (wide, total, fill)
'''


def test_a_value_shaped_by_a_weight_s_dim_is_lifted():
    # ones(("n",)) uses no var, but n is a dim of the weight w only; lifted, it is frozen: no training changes it
    assert_script(lifted(SYMBOLS), '''
        @function(num_input=1, frozen="fill")
        def main(x: Tensor((2, 1), "float64"), total: Tensor((), "float64"), fill: Tensor(("n",), "float64")) -> Tuple(Tensor((2, "n"), "float64"), Tensor((), "float64"), Tensor(("n",), "float64")):
            wide: Tensor((2, "n"), "float64") = broadcast_to(x, (2, "n"))
            return (wide, total, fill)

        @function
        def main_transform_params(w: Tensor((2, "n"), "float64")) -> Tuple(Tensor((), "float64"), Tensor(("n",), "float64")):
            total: Tensor((), "float64") = sum(w)
            fill: Tensor(("n",), "float64") = ones(("n",), "float64")
            return (total, fill)
    ''')
    assert_lifting_computes_the_same(aj.parse(SYMBOLS))


def test_a_weight_passes_through_for_a_dim_nothing_else_gives():
    # wide needs n, which only w gives: w passes through
    text = SYMBOLS.replace(', Tensor(("n",), "float64"))', ")").replace("(wide, total, fill)", "(wide, total)")
    assert_script(lifted(text), '''
        @function(num_input=1)
        def main(x: Tensor((2, 1), "float64"), w: Tensor((2, "n"), "float64"), total: Tensor((), "float64")) -> Tuple(Tensor((2, "n"), "float64"), Tensor((), "float64")):
            wide: Tensor((2, "n"), "float64") = broadcast_to(x, (2, "n"))
            return (wide, total)

        @function
        def main_transform_params(w: Tensor((2, "n"), "float64")) -> Tuple(Tensor((2, "n"), "float64"), Tensor((), "float64")):
            total: Tensor((), "float64") = sum(w)
            return (w, total)
    ''')
    assert_lifting_computes_the_same(aj.parse(text))


def test_a_weight_whose_dim_is_a_multiple_of_an_input_s_symbol_is_transformed():
    # w's dim 2*k: main_transform_params(w) has no param with k alone, and the executor
    # refused every call of it. Found by a review
    mod = aj.parse(textwrap.dedent('''
        @function(num_input=1)
        def main(x: Tensor(("k",), "float64"), w: Tensor(("2*k",), "float64")) -> Tensor(("k",), "float64"):
            total: Tensor((), "float64") = sum(w)
            y: Tensor(("k",), "float64") = multiply(x, total)
            return y
    '''))
    out = LIFT(mod)
    aj.analysis.verify(out)
    assert [p.name_hint for p in out["main_transform_params"].params] == ["w"]
    x, w = RNG.standard_normal(3), RNG.standard_normal(6)
    exe = aj.build(out)
    np.testing.assert_allclose(exe["main"](x, *exe["main_transform_params"](w)), x * w.sum(), rtol=1e-12)
    assert_lifting_computes_the_same(mod)


def test_a_weight_passes_through_for_a_symbol_it_binds_as_a_multiple():
    # main needs k, which only w's 2*k gives (the executor solves k from it): w passes through
    mod = aj.parse(textwrap.dedent('''
        @function(num_input=1)
        def main(x: Tensor(("n",), "float64"), w: Tensor(("2*k",), "float64")) -> Tensor(("k",), "float64"):
            z: Tensor(("k",), "float64") = zeros(("k",), "float64")
            s: Tensor((), "float64") = sum(x)
            y: Tensor(("k",), "float64") = add(z, s)
            return y
    '''))
    out = LIFT(mod)
    assert [p.name_hint for p in out["main"].params] == ["x", "w"]
    assert_lifting_computes_the_same(mod)


def test_a_function_without_num_input_is_unchanged():
    mod = aj.parse(MIXED.replace("@function(num_input=1)", "@function"))
    out = LIFT(mod)
    aj.assert_structural_equal(out, mod)
    assert list(out.functions) == ["main"]


def test_explain_counts_a_split_only_when_one_is_made():
    """A second run over the pass's output changes nothing and reports
    nothing (the counts were made before the pass saw that the split of a
    function lifting nothing was already there: review)."""
    mod = aj.parse(textwrap.dedent('''\
        @function(num_input=1)
        def main(x: Tensor((2, 4), "float32"), w: Tensor((4, 8), "float32")) -> Tensor((2, 8), "float32"):
            y = matmul(x, w)
            return y
    '''))
    first = LIFT.explain(mod)
    assert first.changed and first.counts == {"LiftTransformParams": {
        "functions split": 1, "weights passed through": 1}}
    second = LIFT.explain(first.module)
    assert second.module is first.module
    assert not second.changed and second.counts == {"LiftTransformParams": {}}


@pytest.mark.parametrize("dims", ['("m + n",)', '("n", "m*n")', '("n**2 - n",)'])
def test_a_function_whose_weights_do_not_bind_their_symbols_is_unchanged(dims):
    """A weight of m + n beside an input of (n, m): f_transform_params would
    take the weights alone, and no call of it could give m and n (found by
    the passes fuzzer: main_transform_params(w: n**2) was made, and every call
    of it was an ExecutionError; a dim in one symbol that grows with it, as
    n**2, now binds it)."""
    mod = aj.parse(textwrap.dedent(f'''\
        @function(num_input=1)
        def main(x: Tensor(("n", "m"), "float32"), w: Tensor({dims}, "float32")):
            s = sum(w)
            e = exp(s)
            y = multiply(x, e)
            return y
    '''))
    report = LIFT.explain(mod)
    aj.assert_structural_equal(report.module, mod)
    assert list(report.module.functions) == ["main"]
    assert report.counts == {"LiftTransformParams": {
        "functions left: a weight's dim has a symbol the weights do not bind": 1}}


def test_no_weights_gives_an_empty_transform():
    mod = aj.parse(MIXED.replace("num_input=1", "num_input=2"))
    out = LIFT(mod)
    aj.assert_structural_equal(out["main"], mod["main"])
    assert out["main_transform_params"].params == [] and len(out["main_transform_params"].ret.fields) == 0
    assert_lifting_computes_the_same(mod)


def test_the_adjoint_lifts_too():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (2, 4), "float64")
    w1, w2, b = bb.param("w1", (3, 4), "float64"), bb.param("w2", (5, 4), "float64"), bb.param("b", (8,), "float64")
    wcat = aj.op.concat([aj.op.permute_dims(w1), aj.op.permute_dims(w2)], axis=1)
    mod = aj.transform.Gradient()(bb.finish(aj.op.sum(aj.op.tanh(x @ wcat + b * 2.0))))
    out = LIFT(mod)
    assert list(out.functions) == ["main", "main_transform_params", "main_adjoint", "main_adjoint_transform_params"]
    assert "concat" in out["main_adjoint_transform_params"].script()
    assert "concat" not in out["main_adjoint"].script()
    assert_lifting_computes_the_same(mod, "main")
    assert_lifting_computes_the_same(mod, "main_adjoint")


def test_a_second_run_changes_nothing():
    # regression: it added main_transform_params_1, passing every weight through
    once = LIFT(aj.parse(MIXED))
    assert LIFT(once) is once


def test_a_taken_name_gets_a_suffix():
    mod = aj.parse(MIXED)
    once = LIFT(mod)
    taken = aj.Module({"main": mod["main"], "main_transform_params": once["main_transform_params"]})
    out = LIFT(taken)
    assert list(out.functions) == ["main", "main_transform_params_1", "main_transform_params"]
    assert_script(aj.Module({"main": out["main"]}), once["main"].script())
    aj.assert_structural_equal(aj.Module({"f": out["main_transform_params_1"]}),
                               aj.Module({"f": once["main_transform_params"]}))


@pytest.mark.parametrize("num_input", [3, -1])
def test_bad_num_input_is_a_verify_error(num_input):
    mod = aj.Module({"main": aj.parse(MIXED)["main"].with_attr("num_input", num_input)})
    with pytest.raises(aj.VerifyError, match=rf"LiftTransformParams.*num_input: {num_input} is outside \[0, 2\]"):
        LIFT(mod)


def wide(n: int) -> aj.Module:
    """n weight-only chains of one op each, summed by an input-dependent tail."""
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (2,), "float64")
    ws = [bb.param(f"w{i}", (2,), "float64") for i in range(n)]
    acc = x
    for w in ws:
        acc = acc + aj.op.exp(w)
    return bb.finish(acc)


def test_a_wide_function_of_20k_weights_lifts_every_weight_computation():
    mod = wide(20_000)
    lifted = LIFT(mod)
    transform, main = lifted["main_transform_params"], lifted["main"]
    assert len(transform.params) == 20_000 and len(main.params) == 20_001
    assert [b.value.op for b in transform.bindings if isinstance(b.value, aj.Call)].count("exp") == 20_000
    assert "exp" not in {b.value.op for b in main.bindings if isinstance(b.value, aj.Call)}
