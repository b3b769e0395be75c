"""The verifier: well-formed modules pass; each kind of malformed module is
rejected with an aj.VerifyError naming the function and the var or binding."""

import pytest

import adjoint as aj
from adjoint import examples

T3 = aj.TensorType((3,), "float32")


def fn(params, bindings, ret, **attrs):
    return aj.Module({"main": aj.Function(params, bindings, ret, attrs)})


def test_examples_are_well_formed():
    for text in examples.ALL.values():
        mod = aj.parse(text)
        assert aj.analysis.well_formed(mod)
        aj.analysis.verify(mod)
        assert aj.analysis.problems(mod) == []


def test_use_before_binding():
    x, a, b = aj.Var("x", T3), aj.Var("a", T3), aj.Var("b", T3)
    mod = fn([x], [(a, aj.Call("add", [x, b])), (b, aj.Call("add", [x, x]))], a)
    assert not aj.analysis.well_formed(mod)
    with pytest.raises(aj.VerifyError, match=r"function 'main', binding 0 'a': uses var 'b'"):
        aj.analysis.verify(mod)


def test_var_bound_twice():
    x, a = aj.Var("x", T3), aj.Var("a", T3)
    mod = fn([x], [(a, aj.Call("add", [x, x])), (a, aj.Call("add", [x, x]))], a)
    with pytest.raises(aj.VerifyError, match=r"binding 1 'a': var 'a' is bound twice \(first at binding 0 'a'\)"):
        aj.analysis.verify(mod)


def test_param_rebound():
    x = aj.Var("x", T3)
    mod = fn([x], [(x, aj.Call("add", [x, x]))], x)
    with pytest.raises(aj.VerifyError, match="bound twice"):
        aj.analysis.verify(mod)


def test_unbound_var_in_return():
    x, z = aj.Var("x", T3), aj.Var("z", T3)
    with pytest.raises(aj.VerifyError, match=r"the return value: uses var 'z'"):
        aj.analysis.verify(fn([x], [], z))


def test_var_type_differs_from_value_type():
    x, a = aj.Var("x", T3), aj.Var("a", aj.TensorType((4,), "float32"))
    mod = fn([x], [(a, aj.Call("add", [x, x]))], a)
    with pytest.raises(aj.VerifyError, match=r"binding 0 'a': var has type Tensor\(\(4,\), \"float32\"\)"):
        aj.analysis.verify(mod)


def test_nested_call_is_not_anf():
    x, a = aj.Var("x", T3), aj.Var("a", T3)
    nested = aj.Call("add", [x, x])
    mod = fn([x], [(a, aj.Tuple([nested]))], a)
    assert not aj.analysis.well_formed(mod)


def test_num_input_out_of_range():
    x = aj.Var("x", T3)
    with pytest.raises(aj.VerifyError, match=r"num_input: 5 is outside \[0, 1\]"):
        aj.analysis.verify(fn([x], [], x, num_input=5))
    with pytest.raises(aj.VerifyError, match="num_input: must be an int"):
        aj.analysis.verify(fn([x], [], x, num_input="one"))


@pytest.mark.parametrize("frozen, problem", [
    ("gone", r"attr frozen: lists 'gone', which is not a param \(its weights: w, s\)"),
    ("x", r"attr frozen: lists 'x', which is an input \(param 0; num_input=1\), not a weight"),
    ("s, w, s", r"attr frozen: lists 's' twice"),
    ("w,,s", r"attr frozen: lists an empty name in \"w,,s\""),
    ("s,", r"attr frozen: lists an empty name in \"s,\""),
])
def test_the_frozen_attr_names_weights_once_each(frozen, problem):
    x, w, s = aj.Var("x", T3), aj.Var("w", T3), aj.Var("s", T3)
    with pytest.raises(aj.VerifyError, match=r"function 'main', " + problem):
        aj.analysis.verify(fn([x, w, s], [], x, num_input=1, frozen=frozen))


@pytest.mark.parametrize("frozen", ["", "  ", "s", " w ,\ts\n", "w, s"])
def test_a_frozen_attr_of_weights_or_blank_verifies_and_lists_them(frozen):
    x, w, s = aj.Var("x", T3), aj.Var("w", T3), aj.Var("s", T3)
    mod = fn([x, w, s], [], x, num_input=1, frozen=frozen)
    aj.analysis.verify(mod)
    assert mod["main"].frozen == tuple(n.strip() for n in frozen.split(",") if n.strip())


@pytest.mark.parametrize("attrs, problem, column", [
    ('num_input=1, frozen="gone"', r"frozen lists 'gone', which is not a param \(its weights: w\)", 31),
    ('num_input=1, frozen="x"', r"frozen lists 'x', which is an input \(param 0; num_input=1\)", 31),
    ('num_input=1, frozen="w, w"', "frozen lists 'w' twice", 31),
    ('frozen="w"', "frozen names weights, but the function has no num_input", 18),
])
def test_the_text_format_refuses_a_bad_frozen_attr_where_it_is(attrs, problem, column):
    text = f'@function({attrs})\ndef main(x: Tensor((3,), "float32"), w: Tensor((3,), "float32")):\n    return x\n'
    with pytest.raises(aj.ParseError, match=f"^1:{column}: {problem}"):
        aj.parse(text)


def test_a_frozen_name_no_param_has_lists_twenty_weights_at_most():
    params = [aj.Var("x", T3)] + [aj.Var(f"w{i}", T3) for i in range(30)]
    weights = ", ".join(f"w{i}" for i in range(20))
    with pytest.raises(aj.VerifyError, match=rf"lists 'nope', which is not a param \(its weights: {weights} and 10 more\)$"):
        aj.analysis.verify(fn(params, [], params[0], num_input=1, frozen="w3, nope"))


def test_a_frozen_name_two_params_have_is_refused():
    x, w, w2 = aj.Var("x", T3), aj.Var("w", T3), aj.Var("w", T3)
    with pytest.raises(aj.VerifyError, match="attr frozen: lists 'w', which 2 params are named: a frozen name must be"):
        aj.analysis.verify(fn([x, w, w2], [], x, num_input=1, frozen="w"))
    aj.analysis.verify(fn([x, w, w2], [], x, num_input=1))


@pytest.mark.parametrize("hint, printed", [("x.y", "x_y"), ("def", "def_"), ("1w", "_1w")])
def test_frozen_prints_the_names_its_params_print_as(hint, printed):
    """The printer made a param's hint an identifier but kept the attr's
    name, so the text did not parse back (nor pickle, which goes through it)."""
    import pickle

    x, w = aj.Var("x", T3), aj.Var(hint, T3)
    mod = fn([x, w], [], x, num_input=1, frozen=hint)
    aj.analysis.verify(mod)
    text = mod.script()
    assert f'frozen="{printed}"' in text and f"{printed}: Tensor" in text
    assert aj.parse(text)["main"].frozen == (printed,)
    assert pickle.loads(pickle.dumps(mod))["main"].frozen == (printed,)


def test_a_frozen_attr_needs_num_input_and_a_string():
    x, w = aj.Var("x", T3), aj.Var("w", T3)
    with pytest.raises(aj.VerifyError, match="attr frozen: names weights, but the function has no num_input"):
        aj.analysis.verify(fn([x, w], [], x, frozen="w"))
    aj.analysis.verify(fn([x, w], [], x, frozen=""))
    bad = fn([x, w], [], x, num_input=1)["main"].with_attr("frozen", 3)
    with pytest.raises(aj.VerifyError, match="function 'main': function attr frozen must be a string of param names, got 3"):
        bad.frozen
    assert fn([x, w], [], x)["main"].frozen == ()


def test_all_problems_are_listed():
    x, a, b = aj.Var("x", T3), aj.Var("a", T3), aj.Var("b", T3)
    mod = fn([x], [(a, aj.Call("add", [x, b])), (a, aj.Call("add", [x, x]))], b, num_input=9)
    assert len(aj.analysis.problems(mod)) == 4



def test_a_malformed_module_is_refused_every_time():
    """A function remembers that it verified clean (the IR is immutable), never
    that it was checked: a malformed one is reported again at every level."""
    x, a, b = aj.Var("x", T3), aj.Var("a", T3), aj.Var("b", T3)
    bad = fn([x], [(a, aj.Call("add", [x, b])), (b, aj.Call("add", [x, x]))], a)
    for _ in range(2):
        with pytest.raises(aj.VerifyError, match="DeadCodeElimination: the module is not well formed"):
            aj.transform.DeadCodeElimination()(bad)
        with pytest.raises(aj.VerifyError, match="uses var 'b'"):
            aj.analysis.verify(bad)
        assert len(aj.analysis.problems(bad)) == 1
    good = fn([x], [(a, aj.Call("add", [x, x]))], a)
    for _ in range(2):
        assert aj.transform.DeadCodeElimination()(good)["main"].bindings
        assert aj.analysis.problems(good) == []
        # a module built from an already verified function is checked as a whole
        assert aj.analysis.problems(aj.Module({"f": good["main"], "g": bad["main"]}))

def test_verify_rejects_non_modules():
    with pytest.raises(aj.Error, match="aj.Module"):
        aj.analysis.verify("not a module")  # type: ignore[arg-type]
