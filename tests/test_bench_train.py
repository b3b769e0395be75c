"""The training-step benchmark at tiny sizes: each system's step computes
the model's loss (against NumPy in float64) and trains it as PyTorch's Adam
does, and the whole suite runs (worker processes, tables, goal lines).
The PyTorch and JAX parts skip when those libraries are absent."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from adjoint.bench import train as bench
from adjoint.bench.__main__ import SUITES
from adjoint.bench.graphs import transformer_block
from adjoint.bench.train_models import (MODELS, SYSTEMS, Gemm, adjoint_step, gemms_alone, step_gemms,
                                        torch_gemms_alone)

TINY = {"mlp": {"batch": 8, "sizes": (12, 16, 16, 5)},
        "transformer": {"batch": 2, "seq": 8, "hidden": 16, "heads": 2, "ffn": 32}}


def reference_loss(model) -> float:
    """The model's loss at its initial params, in float64 NumPy."""
    init = [a.astype(np.float64) for a in model.init]
    if model.name == "transformer":
        out = transformer_block(**model.dims).numpy_fn(model.x.astype(np.float64), *init)
        return float(np.mean((out - model.y) ** 2))
    h = model.x.astype(np.float64)
    for i in range(0, len(init), 2):
        h = h @ init[i].T + init[i + 1]
        if i < len(init) - 2:
            h = np.maximum(h, 0)
    z = h - h.max(-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(-log_p[np.arange(len(model.y)), model.y].mean())


def needs(system: str) -> None:
    for module in {"adjoint": [], "torch": ["torch"], "jax": ["jax", "optax"]}[system]:
        pytest.importorskip(module)


def losses(system: str, model_name: str, steps: int) -> list[float]:
    """The losses of the first ``steps`` steps of ``system`` on the tiny model.
    JAX runs in a process of its own: once imported, its threads would make
    the os.fork of later tests (test_executor's) unsafe."""
    if system != "jax":
        step = SYSTEMS[system](MODELS[model_name](**TINY[model_name]))
        return [step() for _ in range(steps)]
    script = ("import json, sys; from adjoint.bench.train_models import MODELS, SYSTEMS; "
              "name, dims, steps = json.loads(sys.argv[1]); step = SYSTEMS['jax'](MODELS[name](**dims)); "
              "print(json.dumps([step() for _ in range(steps)]))")
    run = subprocess.run([sys.executable, "-c", script, json.dumps([model_name, TINY[model_name], steps])],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


@pytest.mark.parametrize("system", sorted(SYSTEMS))
@pytest.mark.parametrize("model_name", sorted(TINY))
def test_first_step_loss_is_the_models_loss(system, model_name):
    needs(system)
    model = MODELS[model_name](**TINY[model_name])
    assert losses(system, model_name, 1)[0] == pytest.approx(reference_loss(model), rel=1e-5)


@pytest.mark.parametrize("system", ["adjoint", "jax"])
@pytest.mark.parametrize("model_name", sorted(TINY))
def test_steps_train_as_torch_adam_does(system, model_name):
    needs(system)
    needs("torch")
    got, want = losses(system, model_name, 20), losses("torch", model_name, 20)
    assert want[-1] < want[0]
    np.testing.assert_allclose(got, want, rtol=1e-4)


@pytest.mark.parametrize("model_name", sorted(TINY))
def test_gemms_alone_makes_the_steps_matmuls_and_nothing_else(model_name):
    _, trainer = adjoint_step(MODELS[model_name](**TINY[model_name]))
    gemms = gemms_alone(trainer)
    step_matmuls = [b.value for b in trainer.module["step"].bindings if getattr(b.value, "op", None) == "matmul"]
    results = gemms()
    assert [r.shape for r in results] == [tuple(c.type.shape) for c in step_matmuls]
    assert gemms() is not results and all(a is b for a, b in zip(gemms(), results))  # written over donated arrays
    assert gemms.func.last_run_stats.allocations == 0
    ops = [b.value.op for b in gemms.func.function.bindings]
    assert set(ops) <= {"matmul", "permute_dims"} and ops.count("matmul") == len(step_matmuls)


@pytest.mark.parametrize("model_name", sorted(TINY))
def test_torch_gemms_alone_makes_the_same_matmuls(model_name):
    needs("torch")
    _, trainer = adjoint_step(MODELS[model_name](**TINY[model_name]))
    gemms = step_gemms(trainer)
    step_matmuls = [b.value for b in trainer.module["step"].bindings if getattr(b.value, "op", None) == "matmul"]
    run = torch_gemms_alone(gemms)
    results = run()
    assert [tuple(r.shape) for r in results] == [tuple(c.type.shape) for c in step_matmuls]
    assert all(a is b for a, b in zip(run(), results))  # into the same out tensors
    assert any(g.rhs_transposed for g in gemms) and any(g.lhs_transposed for g in gemms)


def test_torch_gemms_alone_multiplies_in_the_result_dtype():
    needs("torch")
    run = torch_gemms_alone([Gemm((3, 2), True, (3, 4), False, "float32", {"out_dtype": None}),
                             Gemm((2, 3), False, (3, 4), False, "float32", {"out_dtype": "float64"})])
    assert [(tuple(r.shape), str(r.dtype)) for r in run()] == [((2, 4), "torch.float32"), ((2, 4), "torch.float64")]


def test_the_gemms_line_says_when_torchs_own_gemms_leave_no_room():
    seconds = {"torch": 10.0, "adjoint GEMMs": 8.2, "torch GEMMs": 8.0}
    assert bench.gemms_line(seconds) == ("    (adjoint's GEMMs alone: 0.82 of torch's step; torch's own GEMMs alone: "
                                         "0.80 of it: at or above 0.8, the goal needs GEMMs faster than torch's)")
    seconds["torch GEMMs"] = 7.0
    assert bench.gemms_line(seconds).endswith("torch's own GEMMs alone: 0.70 of it)")


def test_a_failing_worker_is_an_error_naming_its_system():
    worker = bench.Worker("nonesuch", "mlp", TINY["mlp"], 1)
    with pytest.raises(RuntimeError, match="^the nonesuch worker stopped"):
        worker.receive()
    worker.close()


def table(lines: list[str], title: str) -> list[list[str]]:
    """The rows of the table printed under the line starting with ``title``."""
    title_at = next(i for i, line in enumerate(lines) if line.startswith(title))
    start = next(i for i in range(title_at, len(lines)) if lines[i].startswith("---")) + 1
    end = next(i for i in range(start, len(lines) + 1) if i == len(lines) or not lines[i].strip())
    return [line.split() for line in lines[start:end]]


def test_the_suite_runs_at_small_sizes(capsys):
    assert SUITES["train"] == "adjoint.bench.train"
    bench.run(repeat=2, models={"mlp": TINY["mlp"]}, thread_counts=(1, 2), memory_steps=300, sample_seconds=0.01)
    lines = capsys.readouterr().out.splitlines()
    present = bench.available_systems()
    times, losses = table(lines, "Training step with Adam"), table(lines, "Loss of step 1")
    assert [r[:2] for r in times] == [r[:2] for r in losses] == [["mlp", "1"], ["mlp", "2"]]
    for row, loss_row in zip(times, losses):
        for k, system in enumerate(bench.SYSTEMS):
            assert (row[2 + k] == "nan") == (system not in present) == (row[11 + k] == "nan"), (system, row)
            assert (loss_row[2 + k] == "nan") == (system not in present), (system, loss_row)
        for k, other in enumerate(("torch", "jax")):
            if other in present:
                assert float(row[7 + k]) == pytest.approx(float(row[2]) / float(row[3 + k]), rel=1e-2)
        assert float(row[5]) > 0
        assert (row[6] == "nan") == ("torch" not in present)
        if "torch" in present:
            assert float(row[9]) == pytest.approx(float(row[5]) / float(row[3]), rel=1e-2)
            assert float(row[10]) == pytest.approx(float(row[6]) / float(row[3]), rel=1e-2)
        assert float(loss_row[-1]) < 1e-5
    memory = table(lines, "Resident memory")
    assert [r[2] for r in memory] == present
    for row in memory:
        assert row[:2] == ["mlp", "2"] and int(row[3]) >= 300 and float(row[4]) > 0 and math.isfinite(float(row[5]))
    adjoint_row = next(r for r in memory if r[2] == "adjoint")
    param_bytes = sum(a.nbytes for a in MODELS["mlp"](**TINY["mlp"]).init)
    assert float(adjoint_row[8]) * 2**20 / (int(adjoint_row[3]) - 10) < param_bytes  # no params allocated per step
    assert float(adjoint_row[9]) == 0
    goals = [line for line in lines if re.match(r"  mlp, \d threads?: aj/", line)]
    assert len(goals) == 2 * (len(present) - 1)
    assert sum(line.startswith("    (adjoint's GEMMs alone: ") for line in lines) == 2 * ("torch" in present)
    assert sum(line.startswith("  adjoint's GEMMs: OpenBLAS's ") for line in lines) == 1


def test_the_blas_line_names_the_kernels_and_an_override(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    own = bench.openblas_core(dict(os.environ))
    assert own != "?" and own[0].isupper()
    assert bench.blas_line() == f"adjoint's GEMMs: OpenBLAS's {own} kernels, the ones it picks for this CPU"
    monkeypatch.setenv("OPENBLAS_CORETYPE", own)
    assert bench.blas_line().endswith(f"(OPENBLAS_CORETYPE={own}, also its pick for this CPU)")
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")  # kernels every x86-64 CPU runs
    forced = bench.openblas_core(dict(os.environ))
    assert forced != own
    line = bench.blas_line()
    assert line.startswith(f"adjoint's GEMMs: OpenBLAS's {forced} kernels, set by OPENBLAS_CORETYPE=Prescott")
    assert f"for this CPU OpenBLAS would pick {own}" in line
