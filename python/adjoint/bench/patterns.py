"""Pattern benchmark (``python -m adjoint.bench patterns``).

1. ``rewrite_call`` of exp(log(x)) -> x over a chain log, exp, log, exp, ...
   of 100k and 1M bindings (each exp(log(.)) collapses, so the whole chain
   becomes its input): a Python rewriter (called once per match) vs the same
   rule as text (``P.Rewriter.from_text``, matched and applied in C++).
   Anchor: TVM 0.27's ``rewrite_call`` takes 175 s at 100k. Goals: 100k
   under 0.5 s with the Python rewriter, under 0.1 s from text; linear
   (1M/100k time at most 11x).
"""

from __future__ import annotations

import adjoint as aj
from adjoint import pattern as P
from adjoint.bench import median_seconds, print_table

_T = 'Tensor((4,), "float32")'

EXP_OF_LOG = f"""@function
def pattern(x: {_T}) -> {_T}:
    l: {_T} = log(x)
    e: {_T} = exp(l)
    return e

@function
def replacement(x: {_T}) -> {_T}:
    return x
"""


def exp_log_chain(n: int) -> aj.Module:
    """main(x) of n bindings alternating log and exp, each using the last."""
    lines = ["@function", f"def main(x: {_T}) -> {_T}:"]
    last = "x"
    for k in range(n):
        lines.append(f"    v{k}: {_T} = {'log' if k % 2 == 0 else 'exp'}({last})")
        last = f"v{k}"
    lines.append(f"    return {last}")
    return aj.parse("\n".join(lines) + "\n")


def _exp_of_log_in_python() -> tuple[P.Pattern, object]:
    x = P.wildcard()
    return P.is_op("exp")(P.is_op("log")(x)), (lambda expr, captures: captures[x])


def rewrite_call_scaling(repeat: int) -> None:
    pattern, in_python = _exp_of_log_in_python()
    as_text = P.Rewriter.from_text(EXP_OF_LOG, name="exp_of_log")
    rows, seconds = [], {}
    for n in (100_000, 1_000_000):
        mod = exp_log_chain(n)
        for how, run in (("Python rewriter", lambda: P.rewrite_call(pattern, in_python, mod)),
                         ("Rewriter.from_text", lambda: as_text(mod))):
            out = run()
            if out["main"].bindings:
                raise AssertionError(f"{how} left {len(out['main'].bindings)} bindings of the {n}-binding chain")
            seconds[how, n] = median_seconds(run, repeat, warmup=0)
            rows.append([how, n, seconds[how, n]])
    print("rewrite_call: exp(log(x)) -> x over a log/exp chain (TVM 0.27: 175 s at 100k)")
    print_table(["rewriter", "bindings", "seconds"], rows)
    for how, limit in (("Python rewriter", 0.5), ("Rewriter.from_text", 0.1)):
        t, growth = seconds[how, 100_000], seconds[how, 1_000_000] / seconds[how, 100_000]
        ok = t < limit and growth <= 11
        print(f"goal ({how}): 100k under {limit} s, 1M/100k time <= 11: {'met' if ok else 'NOT met'} "
              f"({t:.3f} s, {growth:.1f}x); TVM at 100k / adjoint at 100k: {175 / t:.0f}x")
    print()


def run(repeat: int = 3) -> None:
    rewrite_call_scaling(repeat)
