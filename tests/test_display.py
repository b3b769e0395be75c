"""How IR objects, executables and passes show themselves: the plain repr is
the program's text (cut for big functions), every HTML display parses
strictly as HTML and as XML and holds every binding line, long signatures
wrap one param per line, and no display raises, whatever the module."""

from __future__ import annotations

import html
import keyword
import xml.etree.ElementTree as ET

import html5lib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import display, examples
from programs import programs
from test_roundtrip import DESIGN_EXAMPLES

T = aj.transform

MLP = '''\
@function(num_input=1)
def main(x: Tensor(("n", 784), "float32"), w1: Tensor((784, 128), "float32"), b1: Tensor((128,), "float32"), w2: Tensor((128, 10), "float32"), b2: Tensor((10,), "float32")) -> Tensor((), "float32"):
    h: Tensor(("n", 128), "float32") = matmul(x, w1)
    h1: Tensor(("n", 128), "float32") = add(h, b1)
    a: Tensor(("n", 128), "float32") = relu(h1)
    o: Tensor(("n", 10), "float32") = matmul(a, w2)
    o1: Tensor(("n", 10), "float32") = add(o, b2)
    l: Tensor((), "float32") = sum(o1)
    return l
'''


def chain(n: int) -> aj.Module:
    """A function of n bindings v0 ... v{n-1}, each adding x to the last."""
    lines = ['@function', 'def main(x: Tensor((3, "n"), "float32")) -> Tensor((3, "n"), "float32"):']
    lines += [f'    v{i}: Tensor((3, "n"), "float32") = add({f"v{i - 1}" if i else "x"}, x)' for i in range(n)]
    return aj.parse("\n".join(lines + [f"    return v{n - 1}", ""]))


def parsed(markup: str) -> ET.Element:
    """The markup parsed by html5lib in strict mode (a parse error raises) and as
    XML (so every tag is closed where it opens); the XML tree."""
    html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parseFragment(markup)
    return ET.fromstring(markup)


def shown_text(markup: str) -> str:
    """What a reader sees: the text of the markup without its style sheet."""
    root = parsed(markup)
    for parent in root.iter():
        for style in parent.findall("style"):
            parent.remove(style)
    return "".join(root.itertext())


def code_lines(markup: str) -> list[str]:
    """The lines of the markup's code blocks (<pre>), as a reader sees them."""
    return [line for pre in parsed(markup).iter("pre") for line in "".join(pre.itertext()).splitlines()]


def binding_lines(mod: aj.Module) -> list[str]:
    return [line for line in mod.script().splitlines() if line.startswith("    ") and not line.startswith("    return")]


def x_var() -> aj.Var:
    return aj.Var("x", aj.TensorType(("n", 784), "float32"))


def mlp_adjoint() -> aj.Module:
    return T.Gradient()(aj.parse(MLP))


ALL_TEXTS = {**examples.ALL, **DESIGN_EXAMPLES, "mlp": MLP}


# ---- plain reprs ----


def test_repr_of_each_node_is_its_text():
    x, w = x_var(), aj.Var("w", aj.TensorType((784, 10), "float32"))
    call = aj.Call("matmul", [x, w])
    lv = aj.Var("lv", call.type)
    fn = aj.Function([x, w], [(lv, call)], lv, {"num_input": 1})
    assert repr(x) == 'x: Tensor(("n", 784), "float32")'
    assert repr(call) == 'matmul(x, w): Tensor(("n", 10), "float32")'
    assert repr(fn.bindings[0]) == 'lv: Tensor(("n", 10), "float32") = matmul(x, w)'
    assert repr(call.type) == 'Tensor(("n", 10), "float32")'
    assert repr(aj.TupleType([call.type, w.type])) == 'Tuple(Tensor(("n", 10), "float32"), Tensor((784, 10), "float32"))'
    assert repr(aj.Constant([1.0, 2.5])) == 'const([1.0, 2.5], "float64"): Tensor((2,), "float64")'
    pair = aj.Tuple([x, w])
    assert repr(pair) == '(x, w): Tuple(Tensor(("n", 784), "float32"), Tensor((784, 10), "float32"))'
    assert repr(aj.TupleGetItem(pair, 1)) == '(x, w)[1]: Tensor((784, 10), "float32")'
    assert repr(fn) == fn.script().rstrip("\n")
    assert repr(fn).splitlines()[0] == "@function(num_input=1)"


def test_reprs_name_vars_as_the_printer_does():
    # regression: reprs showed raw name hints (x<y) where print(mod) shows x_y
    bb = aj.FunctionBuilder("main")
    x = bb.param("x<y", (3,), "float32")
    mod = bb.finish(aj.op.sum(x))
    fn = mod["main"]
    assert 'def main(x_y: Tensor((3,), "float32"))' in str(mod)
    assert repr(fn.params[0]) == 'x_y: Tensor((3,), "float32")'
    assert repr(fn.bindings[0]) == 'lv: Tensor((), "float32") = sum(x_y)' == str(mod).splitlines()[2].strip()
    assert repr(fn.bindings[0].value) == 'sum(x_y): Tensor((), "float32")'
    assert shown_text(fn.params[0]._repr_html_()) == repr(fn.params[0])
    assert shown_text(fn.bindings[0]._repr_html_()) == repr(fn.bindings[0])
    # distinct vars of one printed name are told apart, the bound var after the ones it uses, as in a function
    a, b = aj.Var("v", aj.TensorType((3,), "float32")), aj.Var("v", aj.TensorType((3,), "float32"))
    c = aj.Var("v", a.type)
    fn = aj.Function([a, b], [(c, aj.Call("add", [a, b]))], c)
    assert repr(fn.bindings[0]) == 'v_2: Tensor((3,), "float32") = add(v, v_1)' == fn.script().splitlines()[2].strip()


NAME_HINTS = st.one_of(st.text(max_size=6), st.text(alphabet="x_1<> .\u00e9", max_size=4),
                       st.sampled_from([*keyword.kwlist, "", "lv", "lv_1", "x_1", "1x", "x<y"]))


@given(st.lists(NAME_HINTS, min_size=1, max_size=4), NAME_HINTS)
@settings(max_examples=300, deadline=None)
def test_reprs_of_random_names_agree_with_the_printed_module(hints, bound_hint):
    ty = aj.TensorType((2,), "float32")
    params = [aj.Var(h, ty) for h in hints]
    value = aj.Tuple(params)
    bound = aj.Var(bound_hint, value.type)
    mod = aj.Module({"main": aj.Function(params, [(bound, value)], bound)})
    line = str(mod).splitlines()[2].strip()
    assert repr(mod["main"].bindings[0]) == line
    alone = [repr(p).split(": ", 1)[0] for p in params]
    for p, name in zip(params, alone):  # a var alone is named as in a function of that var alone
        assert str(aj.Module({"main": aj.Function([p], [], p)})).splitlines()[1] == f"def main({name}: {ty}) -> {ty}:"
        assert name.isidentifier() and not keyword.iskeyword(name)
    # no two alike: the module's names too (else the module tells apart names that an expr alone need not:
    # params '' and '' beside a bound 'lv:1' print as lv and lv_2 there, as lv and lv_1 in the tuple alone)
    if len({*alone, repr(bound).split(": ", 1)[0]}) == len(params) + 1:
        assert str(mod).splitlines()[1] == f"def main({', '.join(f'{n}: {ty}' for n in alone)}) -> {value.type}:"
        assert repr(value) == f"{line.split(' = ', 1)[1]}: {value.type}"


@pytest.mark.parametrize("name", sorted(ALL_TEXTS))
def test_repr_of_a_small_module_is_its_text_and_str_is_unchanged(name):
    mod = aj.parse(ALL_TEXTS[name])
    assert repr(mod) == ALL_TEXTS[name].rstrip("\n")
    assert str(mod) == mod.script() == ALL_TEXTS[name]


def test_repr_of_a_big_function_keeps_the_first_and_last_ten_bindings():
    mod = chain(41)
    lines = repr(mod).splitlines()
    assert lines[2:12] == binding_lines(mod)[:10] and lines[13:23] == binding_lines(mod)[-10:]
    assert lines[12] == "    # ... 21 of 41 bindings not shown ..."
    assert lines[-1] == "    return v40" and len(lines) == 24
    assert repr(chain(40)) == chain(40).script().rstrip("\n")  # 40 is not over the limit


def test_a_long_line_is_clipped_and_says_by_how_much():
    values = [float(i) for i in range(5000)]
    shown = repr(aj.Constant(values))
    full = aj.Function([], [], aj.Constant(values)).script().splitlines()[-1].removeprefix("    return ")
    assert shown == f'{full[:display.LINE_LIMIT]} ... ({len(full) - display.LINE_LIMIT:,} more characters): Tensor((5000,), "float64")'


def test_an_empty_module_says_so():
    assert repr(aj.Module()) == "<aj.Module: no functions>"
    assert "no functions" in shown_text(aj.Module()._repr_html_())


# ---- HTML ----


def every_display() -> dict[str, object]:
    """One of each kind of object that displays itself in Jupyter."""
    mod = mlp_adjoint()
    fn = mod["main_adjoint"]
    x = fn.params[0]
    call = fn.bindings[0].value
    pair = aj.Tuple([x, x])
    exe = aj.build(mod)
    passes = {type(p).__name__: p for p in [
        T.Gradient(), T.DeadCodeElimination(), T.EliminateCommonSubexpr(), T.SimplifyGradient(),
        T.ReorderPermuteDimsAfterConcat(), T.LiftTransformParams(), T.CombineParallelMatmul(),
        T.ReassociateMatmul({"n": (1, 64)}), T.ConvertDType(), T.Sequential([T.SimplifyGradient(), T.DeadCodeElimination()])]}
    return {"module": mod, "function": fn, "var": x, "call": call, "binding": fn.bindings[0], "tensor_type": x.type,
            "tuple_type": fn.ret_type, "constant": aj.Constant([[1.0, 2.0]], "float32"), "tuple": pair,
            "tuple_get_item": aj.TupleGetItem(pair, 0), "executable": exe, "exec_function": exe["main_adjoint"],
            **passes}


DISPLAYS = every_display()


@pytest.mark.parametrize("name", sorted(DISPLAYS))
def test_every_html_display_parses_strictly(name):
    markup = DISPLAYS[name]._repr_html_()
    assert markup.startswith('<div class="aj-ir"><style>')
    assert shown_text(markup).strip()


@pytest.mark.parametrize("name", ["var", "call", "binding", "tensor_type", "tuple_type", "constant", "tuple",
                                  "tuple_get_item"])
def test_the_html_of_a_node_shows_its_repr(name):
    node = DISPLAYS[name]
    assert shown_text(node._repr_html_()) == repr(node)


@pytest.mark.parametrize("name", sorted(ALL_TEXTS))
def test_highlighted_text_holds_every_binding_line(name):
    mod = aj.parse(ALL_TEXTS[name])
    for m in (mod, T.Gradient()(mod) if name in ("mlp", "mlp_symbolic", "transposed_matmul") else mod):
        lines = code_lines(m._repr_html_())
        for line in binding_lines(m) + [line for line in m.script().splitlines() if line.startswith("@")]:
            assert line in lines


def test_types_are_in_dimmed_spans_and_ops_highlighted():
    root = parsed(DISPLAYS["function"]._repr_html_())
    dimmed = ["".join(s.itertext()) for s in root.iter("span") if s.get("class") == "aj-t"]
    assert ': Tensor(("n", 128), "float32")' in dimmed and ': Tensor((), "float32")' in dimmed
    assert any(d.startswith(" -> Tuple(\n") for d in dimmed)
    ops = {s.text for s in root.iter("span") if s.get("class") == "aj-o"}
    assert {"matmul", "add", "relu", "sum", "permute_dims", "collapse_sum_to"} <= ops
    assert [s.text for s in root.iter("span") if s.get("class") == "aj-k"][:1] == ["def"]


def test_the_mlp_adjoint_signature_wraps_one_param_per_line():
    mod = mlp_adjoint()
    signature = mod["main_adjoint"].script().splitlines()[1]
    assert len(signature) == 365  # the 379-character line, for these names
    lines = code_lines(mod._repr_html_())
    start = lines.index("def main_adjoint(")
    assert lines[start + 1:start + 6] == [
        '    x: Tensor(("n", 784), "float32"),', '    w1: Tensor((784, 128), "float32"),',
        '    b1: Tensor((128,), "float32"),', '    w2: Tensor((128, 10), "float32"),', '    b2: Tensor((10,), "float32"),']
    assert lines[start + 6:start + 17] == [
        ") -> Tuple(", '    Tensor((), "float32"),', "    Tuple(", '        Tensor(("n", 784), "float32"),',
        '        Tensor((784, 128), "float32"),', '        Tensor((128,), "float32"),',
        '        Tensor((128, 10), "float32"),', '        Tensor((10,), "float32"),', "    ),", "):",
        '    h: Tensor(("n", 128), "float32") = matmul(x, w1)']
    assert max(len(line) for line in lines) <= display.WRAP_WIDTH


def test_each_function_is_collapsible_and_summarized():
    root = parsed(mlp_adjoint()._repr_html_())
    details = root.findall("details")
    assert [d.get("open") for d in details] == ["", ""]
    assert ["".join(d.find("summary").itertext()) for d in details] == [
        "main 5 params \u00b7 6 bindings", "main_adjoint 5 params \u00b7 21 bindings"]


def test_a_short_signature_stays_on_one_line():
    lines = code_lines(aj.parse(examples.TRANSPOSED_MATMUL)._repr_html_())
    assert lines[:2] == examples.TRANSPOSED_MATMUL.splitlines()[:2]


def test_executable_html_shows_each_function_signature_and_plan():
    text = shown_text(DISPLAYS["executable"]._repr_html_())
    assert "aj.Executable \u00b7 2 functions" in text
    count = DISPLAYS["executable"]["main_adjoint"].num_instructions  # fused groups count once
    assert f"main_adjoint {count} instructions \u00b7 1 input then 4 weights" in text
    assert '    w1: Tensor((784, 128), "float32"),' in code_lines(DISPLAYS["executable"]._repr_html_())


def test_pass_html_shows_its_doc_and_rule_table():
    markup = T.SimplifyGradient()._repr_html_()
    root = parsed(markup)
    rows = [["".join(td.itertext()) for td in tr.findall("td")] for tr in root.iter("tr")][1:]
    assert rows == [[name, rule] for name, rule in T.SimplifyGradient.rules]
    assert "Simplifies what reverse mode emits" in shown_text(markup)
    assert "aj.transform.Gradient(func_name='main'" in shown_text(T.Gradient()._repr_html_())


@settings(max_examples=30)
@given(programs())
def test_html_of_random_programs_parses_and_holds_every_binding(program):
    for mod in (program.mod, T.Gradient(simplify=False)(program.mod)):
        assert {display.clip_line(line) for line in binding_lines(mod)} <= set(code_lines(mod._repr_html_()))
        clipped = "\n".join(display.clip_line(line) for line in mod.script().rstrip("\n").split("\n"))
        assert repr(mod) == clipped or "bindings not shown" in repr(mod)


# ---- big and malformed modules ----


def test_a_huge_module_shows_its_ends_and_says_what_was_cut():
    mod = chain(100_000)
    plain = repr(mod)
    markup = mod._repr_html_()
    assert "    # ... 99,980 of 100,000 bindings not shown ..." in plain.splitlines()
    text = shown_text(markup)
    assert "    # ... 99,700 of 100,000 bindings not shown ..." in code_lines(markup)
    assert "main 1 param \u00b7 100,000 bindings \u00b7 99,700 not shown" in text
    lines = binding_lines(mod)
    assert lines[199] in text and lines[200] not in text and lines[-100] in text and lines[-101] not in text


def undefined_var_module() -> aj.Module:
    """main's binding uses y, which nothing binds: a module only the low-level API makes."""
    x = aj.Var("x", aj.TensorType((3,), "float32"))
    y = aj.Var("y", aj.TensorType((3,), "float32"))
    call = aj.Call("add", [x, y])
    lv = aj.Var("lv", call.type)
    return aj.Module({"main": aj.Function([x], [(lv, call)], lv)})


def twice_bound_module() -> aj.Module:
    x = aj.Var("x", aj.TensorType((3,), "float32"))
    call = aj.Call("negative", [x])
    lv = aj.Var("lv", call.type)
    return aj.Module({"main": aj.Function([x], [(lv, call), (lv, call)], lv)})


@pytest.mark.parametrize("make", [undefined_var_module, twice_bound_module])
def test_a_malformed_module_shows_its_text_and_what_is_wrong(make):
    mod = make()
    problem = aj.analysis.problems(mod)[0]
    plain = repr(mod)
    assert plain.splitlines()[0] == f"# does not verify: {problem}"
    assert plain.endswith(mod.script().rstrip("\n"))
    assert repr(mod["main"]) == plain
    text = shown_text(mod._repr_html_())
    assert f"does not verify: {problem}" in text and "    return lv" in text
    assert f"does not verify: {problem}" in shown_text(mod["main"]._repr_html_())


def test_a_display_that_fails_shows_the_error_instead_of_raising(monkeypatch):
    def broken(self):
        raise RuntimeError("printer <broken> & gone")

    monkeypatch.setattr(aj.Function, "script", broken)
    mod = aj.parse(examples.TRANSPOSED_MATMUL)
    assert repr(mod) == "<aj.Module that could not be shown: RuntimeError: printer <broken> & gone>"
    for shown in (mod._repr_html_(), mod["main"]._repr_html_(), aj.build(mod)._repr_html_()):
        assert "could not be shown: RuntimeError: printer <broken> & gone" in html.unescape(shown)
        parsed(shown)
