"""The instructions benchmark: its dumps are read by label, and, under
valgrind at small sizes, every call is counted in a process of its own with
the cost of asking for the counts taken out."""

from __future__ import annotations

import pytest

from adjoint.bench import compile as compile_bench
from adjoint.bench import instructions as bench
from adjoint.bench.__main__ import SUITES


def _dump_text(label: str, total: int) -> str:
    return f"version: 1\ncreator: callgrind-3.19.0\ndesc: Trigger: dump {label}\n\nevents: Ir\n\nsummary: {total}\n" \
           f"fn=(1) main\n0 {total}\ntotals: {total}\n"


def test_dumps_are_read_by_label_and_other_files_are_skipped(tmp_path):
    (tmp_path / "callgrind.7.1").write_text(_dump_text("call0", 1_234_567))
    (tmp_path / "callgrind.7.2").write_text(_dump_text("nothing3", 42))
    (tmp_path / "callgrind.7").write_text(_dump_text("x", 1).replace("dump x", "Program termination"))
    assert bench._dumps(tmp_path) == {"call0": 1_234_567, "nothing3": 42}


def test_the_qkv_calls_check_what_they_combined():
    calls = bench.calls_for(bench.QKV, 3)
    assert list(calls) == ["rewrite_bindings", "CombineParallelMatmul + Reorder", compile_bench.FLOOR]
    for how in ("rewrite_bindings", "CombineParallelMatmul + Reorder"):
        ops = [getattr(b.value, "op", None) for b in calls[how]()["main"].bindings]
        assert ops.count("matmul") == 3 and ops.count("permute_dims") == 3


@pytest.mark.skipif(bench.cannot_count() is not None, reason=str(bench.cannot_count()))
def test_the_suite_counts_each_call_at_small_sizes(capsys):
    assert SUITES["instructions"] == "adjoint.bench.instructions"
    bench.run(sizes={"wide": (40, 400)})
    out = capsys.readouterr().out
    names = sorted((*compile_bench.MEASURED, compile_bench.FLOOR), key=len, reverse=True)  # longest first
    rows = {}
    for line in out.splitlines():
        name = next((n for n in names if line.strip().startswith(n)), None)
        if name:
            rows[name] = line.split()
    assert set(rows) == {*compile_bench.MEASURED, compile_bench.FLOOR}
    for row in rows.values():
        small, large, growth = (int(row[-3].replace(",", "")), int(row[-2].replace(",", "")), float(row[-1]))
        # Ten times the bindings: more work, but not more than ten times (the
        # per-call work that does not grow with the function is counted once).
        assert 0 < small < large <= 11 * small
        assert growth == pytest.approx(large / small, rel=1e-3)
    assert "goal: instructions grow at most 1.1x as much as the size" in out
