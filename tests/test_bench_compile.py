"""The compile-time benchmark at small sizes: its generated functions give
the results it checks, its checks catch a call that did nothing or the
wrong thing (or a build that did not fuse), and the whole suite runs (fresh
processes, tables, goal lines)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import adjoint as aj
from adjoint.bench import compile as bench
from adjoint.bench.__main__ import SUITES


@pytest.mark.parametrize("shape", sorted(bench.SHAPES))
def test_generated_functions_give_what_their_case_says(shape):
    case = bench.SHAPES[shape](40)
    bench.check_results(case, {name: call() for name, call in bench.calls_on(case).items()})


@pytest.mark.parametrize("shape", sorted(bench.SHAPES))
def test_lifting_the_generated_functions_computes_the_same(shape):
    mod = bench.SHAPES[shape](40).module
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((4, 4)).astype(np.float32) for _ in mod["main"].params]
    lifted = aj.build(bench.LIFT(mod))
    got = lifted["main"](inputs[0], *lifted["main_transform_params"](*inputs[1:]))
    want = aj.build(mod)["main"](*inputs)
    for g, w in zip(*(o if isinstance(o, tuple) else (o,) for o in (got, want)), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def _wrong_results(case: bench.Case) -> dict[str, tuple[object, str]]:
    """For each checked call: what a call doing nothing (or the wrong thing)
    would give instead, and the start of the message that must name it."""
    computable = aj.analysis.computable_at_compile_time(case.module["main"])
    return {"LiftTransformParams": (case.module, "LiftTransformParams gave functions of {'main': 40}"),
            "computable_at_compile_time": (computable[:-1], "computable_at_compile_time listed 39 vars, not 40"),
            "estimate_flops": (0, "estimate_flops gave 0, not 1600"),
            "estimate_flops(compile_time_free)": (case.flops, "estimate_flops(compile_time_free) gave 1600, not 1280"),
            bench.FLOOR: (bench.LIFT(case.module), "the floor's DCE removed 30 bindings")}


@pytest.mark.parametrize("name", [*bench.MEASURED, bench.FLOOR])
def test_checks_catch_a_wrong_result(name):
    case = bench.wide(40)
    results = {n: call() for n, call in bench.calls_on(case).items()}
    results[name], message = _wrong_results(case)[name]
    with pytest.raises(AssertionError, match="^" + re.escape(message)):
        bench.check_results(case, results)


def test_the_suite_runs_at_small_sizes(capsys):
    assert SUITES["compile"] == "adjoint.bench.compile"
    bench.run(repeat=1, sizes=(400, 800), min_total=0.0, rounds=2)
    out = capsys.readouterr().out
    for shape in bench.SHAPES:
        for what in (bench.BUILD, *bench.MEASURED, bench.FLOOR):
            assert any(line.split()[:1] == [shape] and what in line for line in out.splitlines()), (shape, what)
    assert "800/400" in out
    lines = out.splitlines()
    assert any(line.startswith("goal: time growth at most 1.1x the bindings' growth: ") for line in lines)
    assert any(line.startswith("time growth / the floor's growth at most 1.1: ") for line in lines)
    for row in ("x @ (u @ v) -> (x @ u) @ v", "A, B inputs -> W@x + B@(A@x)", "A, B weights -> kept, W + B@A lifted"):
        assert any(row in line for line in lines), row
    for function in ("matmul chain", "low-rank updates"):
        assert sum(line.split()[:2] == function.split() for line in lines) == 2, function
    for chain in bench.CHAINS:
        for how in ("fused", "unfused"):
            rows = [line for line in lines if line.strip().startswith(f"{chain}  ")]
            assert sum(row.split()[len(chain.split())] == how for row in rows) == 1, (chain, how)
    assert any(line.startswith("goal: the fused build's time growth at most 1.1x the unfused build's: ")
               for line in lines)


@pytest.mark.parametrize("chain", sorted(bench.CHAINS))
def test_build_chains_plan_as_checked(chain):
    mod = bench.CHAINS[chain](40)
    assert len(mod["main"].bindings) == 40
    bench.check_plan(chain, 40, aj.build(mod)["main"], aj.build(mod, fuse=False)["main"])
    with pytest.raises(AssertionError, match=re.escape(f"aj.build of the {chain} of 40 bindings planned "
                                                       "(instructions, fused groups, fused ops) (40, 0, 0) fused")):
        bench.check_plan(chain, 40, aj.build(mod, fuse=False)["main"], aj.build(mod, fuse=False)["main"])
