"""The IR benchmark at small sizes: its generated text parses, its variant
differs where it says, and the table of displays and round trips prints a
row per size."""

from __future__ import annotations

import adjoint as aj
from adjoint.bench import ir as bench


def test_the_variant_changes_one_binding_in_six():
    text = bench.generate_text(600)
    d = aj.viz.diff(aj.parse(text), aj.parse(bench.variant(text)))
    assert d.counts["changed"] == text.count("= maximum(") == 100


def test_the_tools_table_has_a_row_per_size(capsys):
    bench.tools(1, sizes=(60, 120))
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[3:]]
    assert [r[0] for r in rows] == ["60", "120"] and all(len(r) == 4 for r in rows)
