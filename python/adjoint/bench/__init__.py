"""Benchmarks: ``python -m adjoint.bench <suite>``. Each suite prints a table
of medians of repeated runs, with ratios computed in the same run."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Hashable, Sequence, TypeVar

Key = TypeVar("Key", bound=Hashable)
Result = TypeVar("Result")


def median_seconds(fn: Callable[[], object], repeat: int = 5, warmup: int = 1,
                   min_total: float = 0.0) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs, after ``warmup`` runs;
    more runs while the time spent running them is under ``min_total``
    seconds, so that a run of a millisecond is not measured from three
    samples of noise.
    What ``fn`` returns is freed after its timing stops: freeing the previous
    result (a module of 200k bindings, say) is not part of the next run."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeat or time.perf_counter() - start < min_total:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        del result
    return statistics.median(times)


def interleaved(measure: Callable[[Key], Result], keys: Sequence[Key], rounds: int) -> dict[Key, list[Result]]:
    """``measure(key)`` for every key, ``rounds`` times over, the keys taken
    in turn (every key once, then every key again, ...): a slow spell of a
    shared machine then falls on every key alike instead of on those measured
    during it, so ratios between keys (growth with size) stay steady. Each
    key's results, in round order."""
    results: dict[Key, list[Result]] = {key: [] for key in keys}
    for _ in range(rounds):
        for key in keys:
            results[key].append(measure(key))
    return results


def interleaved_medians_phrase(repeat: int, rounds: int) -> str:
    """How a table measured with ``interleaved`` fresh processes was made."""
    return (f"median of {repeat} runs in a fresh process, then median over {rounds} such processes per size, "
            f"the sizes taken in turn")


def size_label(n: int) -> str:
    """10k for 10000, 1M for 1000000; other sizes as they are."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """Prints rows as an aligned plain-text table."""
    cells = [headers] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
