"""The gradient-check benchmark runs and reports its goal (small sizes here;
the figures come from ``python -m adjoint.bench gradcheck``)."""

from adjoint.bench import gradcheck


def test_gradcheck_bench_reports_the_goal(monkeypatch, capsys):
    monkeypatch.setattr(gradcheck, "SIZE", 20_000)
    monkeypatch.setattr(gradcheck, "FULL_SIZE", 50)
    gradcheck.run(repeat=1)
    out = capsys.readouterr().out
    assert "directional, 3 directions (whole call)" in out
    assert "full, measured on 50, scaled to 20,000" in out
    assert "goal: directional check of 20,000 elements under 2 s:" in out
