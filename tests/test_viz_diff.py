"""aj.viz.diff: golden alignment of the raw and simplified adjoints of the
2-layer MLP, renamed vars aligning by value, functions only one side has,
HTML that parses as XML and holds every binding of both sides, bad
arguments, a property over random programs and passes, and the time for
two 10,000-binding modules."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given

import adjoint as aj
from programs import programs
from test_explain import MLP, RAW

T = aj.transform
op = aj.op


def kinds(d) -> list[tuple[str, str | None, str | None]]:
    """(kind, before var, after var) per binding row."""
    return [(r.kind, r.before and r.before.name, r.after and r.after.name) for r in d.rows if r.part == "binding"]


def test_raw_vs_simplified_mlp_adjoint_golden():
    d = aj.viz.diff(RAW, T.SimplifyGradient()(RAW))
    assert [(f.name, f.status) for f in d.functions] == [("main", "same"), ("main_adjoint", "changed")]
    rows = [(k, b, a) for k, b, a in kinds(d) if k != "same"]
    assert rows == [
        ("changed", "lv_8", "lv_8"), ("changed", "lv_3_adjoint", "lv_3_adjoint"), ("changed", "lv_9", "lv_9"),
        ("removed", "lv_4_adjoint", None), ("changed", "w2_adjoint", "w2_adjoint"),
        ("removed", "lv_12", None), ("changed", "x_adjoint", "x_adjoint"), ("removed", "lv_13", None),
        ("removed", "lv_adjoint", None), ("added", None, "lv_11"), ("changed", "w1_adjoint", "w1_adjoint")]
    assert d.counts == {"same": 35, "changed": 6, "removed": 4, "added": 1}
    text = str(d).splitlines()
    assert text[0] == "function main (same)"
    lv_8 = text[text.index("function main_adjoint (changed)") + 17]
    assert lv_8.startswith("~ lv_8 = permute_dims(lv_4)   ") and lv_8.endswith(" | lv_8 = sum(w2, axis=[-2], keepdims=True)")


NAMED = '''@function
def main(x: Tensor((2, 2), "float64")) -> Tensor((2, 2), "float64"):
    {a}: Tensor((2, 2), "float64") = exp(x)
    {b}: Tensor((2, 2), "float64") = multiply({a}, const(2.0, "float64"))
    {c}: Tensor((2, 2), "float64") = add({b}, {a})
    return {c}
'''


def test_renamed_vars_align_by_value():
    before = aj.parse(NAMED.format(a="a", b="b", c="c"))
    after = aj.parse(NAMED.format(a="p", b="q", c="r"))
    d = aj.viz.diff(before, after)
    assert kinds(d) == [("same", "a", "p"), ("same", "b", "q"), ("same", "c", "r")]
    assert [r.kind for r in d.rows] == ["same"] * 5


def test_a_value_changed_under_the_same_name_and_its_users_still_align():
    before = aj.parse(NAMED.format(a="a", b="b", c="c"))
    after = aj.parse(NAMED.format(a="a", b="b", c="c").replace("exp(x)", "tanh(x)"))
    assert kinds(aj.viz.diff(before, after)) == [("changed", "a", "a"), ("same", "b", "b"), ("same", "c", "c")]


def test_inserted_and_deleted_bindings():
    before = aj.parse(NAMED.format(a="a", b="b", c="c"))
    after = aj.parse(NAMED.format(a="a", b="b", c="c").replace(
        "    c:", '    n: Tensor((2, 2), "float64") = negative(b)\n    c:'))
    assert kinds(aj.viz.diff(before, after)) == [("same", "a", "a"), ("same", "b", "b"), ("added", None, "n"),
                                                  ("same", "c", "c")]
    assert kinds(aj.viz.diff(after, before))[2] == ("removed", "n", None)


def test_functions_only_one_side_has():
    d = aj.viz.diff(MLP, RAW)
    assert [(f.name, f.status) for f in d.functions] == [("main", "same"), ("main_adjoint", "added")]
    assert all(r.kind == "added" and r.before is None for r in d.functions[1].rows)
    d = aj.viz.diff(RAW, MLP)
    assert d.functions[1].status == "removed" and all(r.after is None for r in d.functions[1].rows)
    assert "+ " not in str(d) and "- lv_8 = permute_dims(lv_4)" in str(d)


def test_functions_are_compared_whatever_their_names():
    d = aj.viz.diff(RAW["main"], RAW["main_adjoint"])
    assert d.functions[0].name == "main / main_adjoint"
    assert d.counts["same"] == 13 and d.counts["added"] > 0


def html_cells(d) -> list[str]:
    root = ET.fromstring(d._repr_html_())  # strict: the HTML is well-formed XML
    return ["".join(td.itertext()) for td in root.iter("td")]


def test_html_parses_and_holds_every_binding_of_both_sides():
    after = T.SimplifyGradient()(RAW)
    cells = html_cells(aj.viz.diff(RAW, after))
    for mod in (RAW, after):
        for fn in mod.functions.values():
            for line in fn.script().splitlines():
                if " = " in line and not line.startswith("def"):
                    assert line.strip() in cells


def test_html_escapes_what_it_shows():
    mod = aj.parse('''@function
def main(x: Tensor((2,), "float64")) -> Tensor((2,), "bool"):
    y: Tensor((2,), "bool") = less(x, const(1.0, "float64"))
    return y
''')
    html = aj.viz.diff(mod, mod)._repr_html_()
    assert "<span" in html and "&quot;float64&quot;" in html and '"float64"' not in html.split("</style>")[1]
    ET.fromstring(html)


@pytest.mark.parametrize("bad", [None, "main", 3])
def test_bad_arguments_are_errors_naming_them(bad):
    with pytest.raises(aj.Error, match=f"before must be an aj.Module or aj.Function, got {type(bad).__name__}"):
        aj.viz.diff(bad, MLP)
    with pytest.raises(aj.Error, match=f"after must be an aj.Module or aj.Function, got {type(bad).__name__}"):
        aj.viz.diff(MLP, bad)
    with pytest.raises(aj.Error, match="must both be modules or both functions, got Module and Function"):
        aj.viz.diff(MLP, MLP["main"])


@given(programs())
def test_diff_of_a_pass_output_holds_both_sides(prog):
    for pass_ in (T.Gradient(), T.ReassociateMatmul(), T.CombineParallelMatmul()):
        out = pass_(prog.mod)
        d = aj.viz.diff(prog.mod, out)
        cells = html_cells(d)
        before = [r.before.text for r in d.rows if r.before and r.part == "binding"]
        after = [r.after.text for r in d.rows if r.after and r.part == "binding"]
        assert before == [line.strip() for fn in prog.mod.functions.values() for line in fn.script().splitlines()
                          if line.startswith("    ") and not line.startswith("    return")]
        assert len(after) == sum(len(fn.bindings) for fn in out.functions.values())
        assert all(r.kind == "same" for r in aj.viz.diff(out, out).rows)
        assert len(cells) == 3 * len(d.rows)


def chain(n: int, shift: int) -> aj.Module:
    bb = aj.FunctionBuilder("main")
    y = bb.param("x", (4, 4), "float64")
    for i in range(n):
        y = op.exp(y) if (i + shift) % 3 else op.tanh(y)
    return bb.finish(y)


def test_two_10k_binding_modules_diff_row_by_row():
    a, b = chain(10_000, 0), chain(10_000, 1)
    d = aj.viz.diff(a, b)
    assert len(d.rows) == 10_002 and d.counts["changed"] == 6_667  # tanh moved one place in every three
    shown = d.rows[:200] + d.rows[-100:]  # displays cut the rest, as module display does
    changed = sum(r.kind == "changed" for r in shown)
    assert str(d).count("\n~ ") == changed and d._repr_html_().count('class="aj-changed"') == changed


def test_a_long_function_shows_its_first_200_and_last_100_rows_and_says_what_was_cut():
    # regression: a 100k-binding module diffed with itself gave 29 MB of HTML and 5.6 MB of text
    d = aj.viz.diff(chain(10_000, 0), chain(10_000, 1))
    cut = d.rows[200:-100]
    note = (f"... {len(cut):,} of 10,002 rows not shown ({sum(r.kind == 'same' for r in cut):,} same, "
            f"{sum(r.kind == 'changed' for r in cut):,} changed) ...")
    lines = str(d).splitlines()
    assert len(lines) == 1 + 200 + 1 + 100 and lines[201] == f"  {note}"
    assert lines[1].startswith("  x ") and lines[-1].startswith("  return lv_9999")
    assert lines[200][2:].startswith(d.rows[199].before.short + " ")
    assert lines[202][2:].startswith(d.rows[-100].before.short + " ")
    cells = html_cells(d)
    assert len(cells) == 3 * 300 + 2 and note in cells
    assert len(d._repr_html_()) < 200_000 and len(str(d)) < 50_000
    assert len(d.rows) == 10_002 and sum(d.counts.values()) == 10_002  # the data keeps every row
    small = aj.viz.diff(chain(398, 0), chain(398, 1))  # 400 rows: not over the limit
    assert "not shown" not in str(small) and len(html_cells(small)) == 3 * 400


def test_a_huge_line_is_clipped_in_the_html():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (10_000,), "float64")
    mod = bb.finish(x + aj.Constant(list(range(10_000)), "float64"))
    html = aj.viz.diff(mod, mod)._repr_html_()
    assert "more characters)" in html and len(html) < 20_000
