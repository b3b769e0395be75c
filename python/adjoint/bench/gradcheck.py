"""Gradient-check benchmark (``python -m adjoint.bench gradcheck``).

``aj.testing.check_gradients`` on ``sum(tanh(x) * x)`` with x float32 of
1M elements in ``mode="directional"`` (Gradient, the float64 copy, two builds,
one adjoint call and two forward calls per direction, 3 directions), timed
whole, as a user calls it. Issue 14's goal: under 2 s. The reference columns,
measured in the same run: one call of the built adjoint on the same input
(the floor any check pays), and ``mode="full"`` per element, measured on
1,000 elements (two forward calls per element), extrapolated to 1M to show
what the directional mode saves.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import adjoint as aj

SIZE = 1_000_000
FULL_SIZE = 1_000
GOAL_SECONDS = 2.0


def _module(n: int) -> aj.Module:
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (n,), "float32")
    return bb.finish(aj.op.sum(aj.op.tanh(x) * x))


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(repeat: int = 3) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SIZE).astype(np.float32)
    mod = _module(SIZE)
    directional = _median_seconds(lambda: aj.testing.check_gradients(mod, "main", [x], mode="directional"), repeat)
    adjoint = aj.build(aj.transform.Gradient()(mod))["main_adjoint"]
    one_adjoint_call = _median_seconds(lambda: adjoint(x), repeat)
    small = _module(FULL_SIZE)
    full_small = _median_seconds(lambda: aj.testing.check_gradients(small, "main", [x[:FULL_SIZE]]), repeat)
    full_estimate = full_small / FULL_SIZE * SIZE
    print(f"check_gradients on sum(tanh(x) * x), x float32 ({SIZE:,} elements), median of {repeat}")
    print(f"{'what':<44}{'seconds':>12}{'x directional':>16}")
    rows = [("directional, 3 directions (whole call)", directional),
            ("one call of the built adjoint", one_adjoint_call),
            (f"full, measured on {FULL_SIZE:,}, scaled to {SIZE:,}", full_estimate)]
    for what, seconds in rows:
        print(f"{what:<44}{seconds:>12.4f}{seconds / directional:>16.4g}")
    verdict = "met" if directional < GOAL_SECONDS else "NOT met"
    print(f"goal: directional check of {SIZE:,} elements under {GOAL_SECONDS:g} s: {directional:.3f} s ({verdict})")
