"""The pattern benchmark's sections at small sizes: in the QKV section every
size of both ways of combining is measured in fresh processes, round after
round, and each row of every section reports its growth over the size
before."""

from __future__ import annotations

import pytest

from adjoint.bench import interleaved
from adjoint.bench import patterns as bench
from adjoint.bench.__main__ import SUITES


def test_interleaved_takes_the_keys_in_turn_round_after_round():
    calls = []
    results = interleaved(lambda key: calls.append(key) or len(calls), ["a", "b", "c"], rounds=2)
    assert calls == ["a", "b", "c", "a", "b", "c"]
    assert results == {"a": [1, 4], "b": [2, 5], "c": [3, 6]}


def test_the_qkv_section_runs_at_small_sizes(capsys):
    assert SUITES["patterns"] == "adjoint.bench.patterns"
    bench.qkv_scaling(repeat=1, rounds=2, groups=(4, 40))
    out = capsys.readouterr().out
    assert "median over 2 such processes per size" in out
    for how in bench.QKV_ANCHORS:
        rows = [line.split() for line in out.splitlines() if line.strip().startswith(how)]
        assert [row[len(how.split())] for row in rows] == ["4", "40"]
        assert float(rows[1][-2]) > 0 and float(rows[1][-1]) > 0
    assert "goal" not in out


@pytest.mark.parametrize("section, cases", [(bench.edge_scaling, bench.EDGE_ORDERS),
                                             (bench.failing_runs_scaling, bench.FAILING_RUNS)],
                         ids=["edge", "failing runs"])
def test_the_graph_sections_run_at_small_sizes(capsys, section, cases):
    section(repeat=1, sizes=(50, 100))
    out = capsys.readouterr().out
    for case in cases:
        rows = [line.split() for line in out.splitlines() if line.strip().startswith(case)]
        assert [row[len(case.split())] for row in rows] == ["50", "100"]
        assert float(rows[1][-2]) > 0 and float(rows[1][-1]) > 0
    assert "goal" not in out
