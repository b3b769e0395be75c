"""The op reference: every op of the registry has its reference text
(OpDef::doc) in the shared shape (semantics naming NumPy and PyTorch, then
Type, VJP, FLOPs and Dtypes), explains each of its attrs, says "none" for
the VJP exactly when it has no gradient, is its aj.op docstring (and the
stub's, op.pyi), and docs/ops.md is what adjoint.opdocs renders from it."""

import ast
import inspect
import re
from pathlib import Path

import pytest

import adjoint as aj
from adjoint import _opref, opdocs

OPS_MD = Path(__file__).resolve().parents[1] / "docs" / "ops.md"
NAMES = list(aj._core.op_names())

def schema(name: str) -> dict:
    return aj._core.op_schema(name)


def text_of(name: str) -> str:
    return _opref.reference(schema(name))


@pytest.mark.parametrize("name", NAMES)
def test_each_op_has_its_reference_text_in_the_shared_shape(name):
    text = text_of(name)
    assert text, f"op '{name}' has no reference text: .set_doc(R\"doc(...)doc\") in cpp/src/op/{schema(name)['family']}.cc"
    semantics, parts = opdocs.split_reference(text)
    first_paragraph = semantics.split("\n\n")[0]
    assert re.search(r"NumPy:\s+\S", first_paragraph) and re.search(r"PyTorch:\s+\S", first_paragraph), \
        f"op '{name}': the first paragraph names no 'NumPy: ...' and 'PyTorch: ...' equivalent"
    assert list(parts) == list(opdocs.PARTS), f"op '{name}': parts {list(parts)}, expected {list(opdocs.PARTS)}"
    assert all(parts.values()), f"op '{name}': an empty part in {parts}"
    assert text.count("`") % 2 == 0, f"op '{name}': an unclosed code span"
    prose = re.sub(r"`[^`]*`", "", text)
    html = re.search(r"<[A-Za-z/!?]", prose)  # what CommonMark reads as an HTML tag or autolink
    assert not html, f"op '{name}': {html and html.group()!r} outside a code span (Markdown takes it for HTML)"
    tail = text[len(semantics):].strip()
    for block in re.split(r"\n\s*\n", tail):
        assert re.match(rf"({'|'.join(opdocs.PARTS)}):", block), \
            f"op '{name}': text after the Type, VJP, FLOPs and Dtypes parts, which must close it: {block!r}"


@pytest.mark.parametrize("name", NAMES)
def test_each_attr_is_explained_in_the_text(name):
    text = text_of(name)
    for attr in schema(name)["attrs"]:
        assert re.search(rf"\b{attr['name']}\b", text), f"op '{name}': its attr '{attr['name']}' is not mentioned"


@pytest.mark.parametrize("name", NAMES)
def test_the_vjp_says_none_exactly_when_the_op_has_no_gradient(name):
    s = schema(name)
    vjp = opdocs.split_reference(text_of(name))[1]["VJP"]
    no_gradient = not s["differentiable"] or not s["has_vjp"]
    assert vjp.lower().startswith("none") == no_gradient, \
        f"op '{name}' (differentiable={s['differentiable']}, has_vjp={s['has_vjp']}): VJP: {vjp}"


@pytest.mark.parametrize("name", NAMES)
def test_each_aj_op_docstring_is_its_reference_entry(name):
    doc = getattr(aj.op, name).__doc__
    assert doc.startswith(_opref.signature(schema(name)) + "\n")
    assert text_of(name) in doc
    for attr in schema(name)["attrs"]:
        assert f"    {attr['name']}: {attr['kind']}" in doc


def test_docs_ops_md_is_the_rendered_reference():
    assert OPS_MD.exists(), "docs/ops.md is missing: run python -m adjoint.opdocs > docs/ops.md"
    assert OPS_MD.read_text() == opdocs.render(), "docs/ops.md is stale: run python -m adjoint.opdocs > docs/ops.md"


def test_the_reference_has_one_heading_per_op_and_contents_linking_each():
    page = opdocs.render()
    headings = re.findall(r"^## (\w+)$", page, re.M)
    assert sorted(h for h in headings if h != "Contents") == sorted(NAMES)
    contents = page.split("## Contents", 1)[1].split("\n## ", 1)[0]
    assert sorted(re.findall(r"\]\(#(\w+)\)", contents)) == sorted(NAMES)
    assert "```" not in page  # no code block for a docs runner to execute


def test_an_entry_shows_the_signature_the_attrs_table_and_the_parts_as_paragraphs():
    entry = opdocs.entry("sum")
    assert entry.startswith("## sum\n\n`sum(x, axis=None, keepdims=False) -> Tensor`\n\n")
    assert "| `axis` | None or a list of ints | `None` |" in entry
    assert "| `keepdims` | a bool | `False` |" in entry
    for label in opdocs.PARTS:
        assert f"\n\n**{label}:** " in entry
    assert "| `shape` | a shape (a tuple of dims) | required |" in opdocs.entry("zeros")
    assert opdocs.entry("exp").count("|") == 0  # no attrs, no table


def test_split_reference_takes_parts_on_consecutive_or_separate_and_wrapped_lines():
    text = "Semantics. NumPy: `a`. PyTorch: `b`.\nMore.\n\nType: t1\n  t2\n\nVJP: v\nFLOPs: f\nDtypes: d"
    semantics, parts = opdocs.split_reference(text)
    assert semantics == "Semantics. NumPy: `a`. PyTorch: `b`.\nMore."
    assert parts == {"Type": "t1 t2", "VJP": "v", "FLOPs": "f", "Dtypes": "d"}


def test_signature_lines_write_attrs_as_the_text_form_does():
    assert _opref.signature(schema("matmul")) == "matmul(x1, x2, out_dtype=None) -> Tensor"
    assert _opref.signature(schema("full")) == "full(shape, fill_value, dtype) -> Tensor"
    assert _opref.format_value(["a", 1, (2, 3)]) == '["a", 1, [2, 3]]'


def test_the_ops_marked_as_tuple_results_build_tuples():
    with aj.FunctionBuilder("f") as bb:  # the block deactivates the builder: no later test sees it active
        x = bb.param("x", (4, 6), "float32")
        assert _opref.TUPLE_RESULT_OPS == {"split"}
        assert str(aj.op.split(x, 2, axis=1).type).startswith("Tuple(")
        assert str(aj.op.exp(x).type).startswith("Tensor(")


def test_the_type_stub_carries_each_aj_op_docstring():
    stub = ast.parse((Path(aj.__file__).with_name("op.pyi")).read_text())
    docs = {f.name: ast.get_docstring(f) for f in stub.body if isinstance(f, ast.FunctionDef)}
    assert docs.keys() == set(NAMES)
    for name in NAMES:
        assert docs[name] == inspect.cleandoc(getattr(aj.op, name).__doc__), name
