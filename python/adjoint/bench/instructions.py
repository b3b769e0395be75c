"""Instruction counts (``python -m adjoint.bench instructions``): the work the
compile-time and pattern passes do at each size, which wall time hides where
a size leaves the caches.

In the wall-time suites (``compile``, ``patterns``) time grows faster than the
size from the smallest size to the next, in every row and in the floor (a DCE
that removes nothing) alike: on the 2-core machine of the issues (2 MiB of L2
per core, 32 MiB of L3) a function of 10k bindings (about 4 MB of nodes)
stays in the caches from one run to the next and one of 100k (about 40 MB)
does not. This suite counts what each call executes instead: instructions,
under valgrind's callgrind, which gives the same count for the same build and
input whatever else the machine is doing.

Each size runs in a process of its own under callgrind. Asked by
``callgrind_control --dump``, callgrind writes the instructions executed
since its last dump; the process asks right before and right after each call,
and twice with nothing between (what asking costs, subtracted from each
call's count). As in the wall-time suites each call runs once before it is
counted, and freeing its result is not counted.

Rows: the calls of ``python -m adjoint.bench compile`` on its wide and chain
functions of 10k, 100k and 1M bindings, and the two QKV combines of ``python
-m adjoint.bench patterns`` on 1k, 10k and 100k groups; growth from each size
to the next. Goal: the work grows at most 1.1x as much as the size (10x the
size, at most 11x the instructions). Callgrind runs code about 50x slower than
the machine: the suite takes 20 to 25 minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import adjoint as aj
from adjoint.bench import compile as compile_bench
from adjoint.bench import patterns as patterns_bench
from adjoint.bench import print_table, size_label
from adjoint.bench.graphs import qkv_groups

QKV = "qkv"  # the shape name of the QKV functions (sizes in groups)
FLOOR = compile_bench.FLOOR
NOTHING = "nothing"  # the label of an interval holding only the cost of asking for a dump
NOTHING_SAMPLES = 5  # such intervals; the median is subtracted
COMPILE_SIZES = compile_bench.SIZES
QKV_SIZES = patterns_bench.QKV_GROUPS

Calls = dict[str, Callable[[], object]]


def qkv_calls(groups: int) -> Calls:
    """The QKV combines of the patterns suite on ``groups`` groups, and the
    floor, after checking that each combine left one matmul and one
    permute_dims per group."""
    mod = qkv_groups(groups)
    combine = {"rewrite_bindings": patterns_bench.qkv_rewrite_bindings(),
               "CombineParallelMatmul + Reorder": patterns_bench.combine_and_reorder()}
    for how, rewrite in combine.items():
        ops = [getattr(b.value, "op", None) for b in rewrite(mod)["main"].bindings]
        left = ops.count("matmul") + ops.count("permute_dims")
        if left != 2 * groups:
            raise AssertionError(f"{how} left {left} matmuls and permute_dims for {groups} groups, not {2 * groups}")
    dce = aj.transform.DeadCodeElimination()
    dce(mod)  # each call runs once before it is counted, the floor too
    return {**{how: (lambda r=rewrite: r(mod)) for how, rewrite in combine.items()}, FLOOR: lambda: dce(mod)}


def compile_calls(shape: str, n: int) -> Calls:
    """The compile suite's calls on its ``shape`` function of ``n`` bindings,
    after checking what they give."""
    case = compile_bench.SHAPES[shape](n)
    calls = compile_bench.calls_on(case)
    compile_bench.check_results(case, {name: call() for name, call in calls.items()})
    return calls


def calls_for(shape: str, n: int) -> Calls:
    return qkv_calls(n) if shape == QKV else compile_calls(shape, n)


def _dump(label: str) -> None:
    subprocess.run(["callgrind_control", f"--dump={label}", str(os.getpid())], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def mark_calls(shape: str, n: int) -> None:
    """Run in a process under callgrind: each call of ``calls_for(shape, n)``
    (already run once by its check) between two dumps labelled ``before``
    and ``call<k>``, then two dumps with nothing between; prints the calls'
    names, in order, as JSON."""
    calls = calls_for(shape, n)
    for k, call in enumerate(calls.values()):
        _dump("before")
        result = call()
        _dump(f"call{k}")
        del result
    for k in range(NOTHING_SAMPLES):
        _dump("before")
        _dump(f"{NOTHING}{k}")
    print(json.dumps(list(calls)))


def _dumps(folder: Path) -> dict[str, int]:
    """{label: instructions} of the dumps callgrind wrote in ``folder``."""
    out = {}
    for path in folder.iterdir():
        text = path.read_text()
        label = re.search(r"^desc: Trigger: dump (\S+)$", text, re.M)
        total = re.search(r"^summary: (\d+)$", text, re.M)
        if label and total:
            out[label.group(1)] = int(total.group(1))
    return out


def count_in_fresh_process(shape: str, n: int) -> dict[str, int]:
    """{call: instructions} of each call of ``calls_for(shape, n)``, counted
    in a process of its own under callgrind."""
    code = "import sys; from adjoint.bench.instructions import mark_calls; mark_calls(sys.argv[1], int(sys.argv[2]))"
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/callgrind.%p",
                               sys.executable, "-c", code, shape, str(n)],
                              capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0:
            raise RuntimeError(f"counting the {shape} function of {n} under callgrind failed:\n{done.stderr}")
        dumps = _dumps(Path(folder))
    names = json.loads(done.stdout.splitlines()[-1])
    asking = statistics.median(dumps[f"{NOTHING}{k}"] for k in range(NOTHING_SAMPLES))
    return {name: round(dumps[f"call{k}"] - asking) for k, name in enumerate(names)}


def cannot_count() -> str | None:
    """Why this process cannot count instructions, or None: valgrind missing,
    or a sanitizer runtime preloaded (.ci/sanitize), which valgrind cannot run."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        return f"valgrind's {' and '.join(missing)} not on PATH (Debian: apt install valgrind)"
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        return "a sanitizer runtime is preloaded (LD_PRELOAD), and valgrind cannot run sanitized code"
    return None


def check_tools() -> None:
    why = cannot_count()
    if why:
        raise RuntimeError(f"the instructions suite cannot count here: {why}")


def instruction_scaling(sizes: dict[str, tuple[int, ...]]) -> None:
    """For each shape, a table of each call's count at each of its sizes and
    the growth from each size to the next; then the goal line."""
    check_tools()
    excess = {}
    for shape, ns in sizes.items():
        counts = {n: count_in_fresh_process(shape, n) for n in ns}
        steps = list(zip(ns, ns[1:]))
        rows = []
        for what in counts[ns[0]]:
            growth = [counts[b][what] / counts[a][what] for a, b in steps]
            excess.update({(shape, what, a, b): g / (b / a) for (a, b), g in zip(steps, growth)})
            rows.append([what, *(f"{counts[n][what]:,}" for n in ns), *growth])
        unit = "groups" if shape == QKV else "bindings"
        print(f"Instructions executed per call (callgrind), {shape} functions of {', '.join(map(size_label, ns))} "
              f"{unit}, each in a process of its own; growth from each size to the next")
        print_table(["call", *map(size_label, ns), *(f"{size_label(b)}/{size_label(a)}" for a, b in steps)], rows)
        print()
    shape, what, a, b = max(excess, key=excess.get)
    print(f"goal: instructions grow at most 1.1x as much as the size: "
          f"{'met' if max(excess.values()) <= 1.1 else 'NOT met'} (worst: {excess[shape, what, a, b]:.3f}x the "
          f"size's growth, {shape} {what} from {size_label(a)} to {size_label(b)})")


def run(repeat: int = 3, sizes: dict[str, tuple[int, ...]] | None = None) -> None:
    """``repeat`` is unused: a count is the same at every run."""
    del repeat
    instruction_scaling(sizes or {**{shape: COMPILE_SIZES for shape in compile_bench.SHAPES}, QKV: QKV_SIZES})
