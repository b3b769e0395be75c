"""Function names: every way a name enters a module (FunctionBuilder,
aj.Module, with_function, aj.Function) takes exactly the names the parser
reads after `def`, and refuses others with an aj.Error naming the name and
the rule, so printed text and pickles of any module read back."""

import pickle

import pytest

import adjoint as aj

BAD = ["my-func", "def", "class", "None", "", "é", "xé", "1abc", "a b", "a.b", "a\x00b", "f\n"]
GOOD = ["main", "_", "f1", "_private", "Tensor", "function", "const", "match", "print", "A_b_9"]
RULE = "a function name must be an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*) that is not a Python keyword"


def exp_module(name: str = "f") -> aj.Module:
    bb = aj.FunctionBuilder(name)
    x = bb.param("x", (3,), "float32")
    return bb.finish(aj.op.exp(x))


def parses_as_function_name(name: str) -> bool:
    text = f'@function\ndef {name}(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    return x\n'
    try:
        return name in aj.parse(text)
    except aj.ParseError:
        return False


@pytest.mark.parametrize("name", BAD + GOOD)
def test_the_rule_is_the_parsers(name):
    try:
        aj.FunctionBuilder(name).finish(aj.Constant(1.0, "float32"))
        accepted = True
    except aj.Error:
        accepted = False
    assert accepted == parses_as_function_name(name)


@pytest.mark.parametrize("name", GOOD)
def test_good_names_print_and_pickle_back(name):
    mod = exp_module(name)
    aj.analysis.verify(mod)
    aj.assert_structural_equal(aj.parse(str(mod)), mod)
    aj.assert_structural_equal(pickle.loads(pickle.dumps(mod)), mod)
    assert pickle.loads(pickle.dumps(mod[name])).name == name


@pytest.mark.parametrize("name", BAD)
def test_builder_refuses_a_bad_name(name):
    with pytest.raises(aj.Error, match=r"^FunctionBuilder: function name '") as e:
        aj.FunctionBuilder(name)
    assert type(e.value) is aj.Error and RULE in str(e.value)
    assert aj.builder._deactivate_all() == []


@pytest.mark.parametrize("name", BAD)
def test_module_with_function_and_function_refuse_a_bad_name(name):
    fn = exp_module()["f"]
    for owner, make in [("Module", lambda: aj.Module({name: fn})),
                        ("with_function", lambda: exp_module().with_function(name, fn)),
                        ("Function", lambda: aj.Function(fn.params, fn.bindings, fn.ret, name=name))]:
        with pytest.raises(aj.Error, match=rf"^{owner}: function name '") as e:
            make()
        assert RULE in str(e.value)


@pytest.mark.parametrize("name, why", [
    ("my-func", "holds '-'"), ("def", "is a Python keyword"), ("", "is empty"), ("é", "holds 'é', which is not ASCII"),
    ("1abc", "starts with a digit"), ("a b", "holds ' '"), ("a\x00b", "holds '\\x00'"),
])
def test_the_message_says_what_is_wrong(name, why):
    with pytest.raises(aj.Error) as e:
        aj.Module({name: exp_module()["f"]})
    shown = name.replace("\x00", "\\x00")
    assert str(e.value).startswith(f"Module: function name '{shown}' {why}: {RULE}")


def test_a_name_that_is_not_a_str_is_an_error():
    with pytest.raises(aj.Error, match="Module: a function name: expected a str, got int"):
        aj.Module({1: exp_module()["f"]})
