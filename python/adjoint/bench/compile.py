"""Compile-time benchmark (``python -m adjoint.bench compile``).

LiftTransformParams, ``computable_at_compile_time(fn)``, ``estimate_flops(fn)``
and ``estimate_flops(fn, compile_time_free=True)`` on functions of 10k, 100k
and 1M bindings of two shapes (``num_input=1``, (4, 4) float32 values):
"wide", one weight per group of four bindings, three of them from the weight
alone and one using the input, all groups independent; and "chain", each
binding using the one before, the first half from the weight alone and the
second half with the input. Each (shape, size) runs in a fresh process, three
times, the sizes taken in turn so that a slow spell of the machine falls on
every size alike (medians over the three), and every result is checked
against what the generated function must give before anything is timed. Building the function (text, then ``aj.parse``,
faster than the builder at 1M) is shown on its own row and counted in no
goal. The floor row, DCE with nothing to remove, is one walk over the same
function: its growth shows what the caches alone cost (10k bindings fit in
them, 100k do not).

Anchor (issue 13, TVM 0.27 on this machine): LiftTransformParams takes 2.76 s
for 10k weight-only bindings and 547 s for 100k in a wide function. Goals:
100k wide LiftTransformParams under 0.3 s; linear, 10x the bindings at most
11x the time, for every measured row.

A second section, ReassociateMatmul: a matrix chain ``x @ (u @ v)`` with a
small middle dim (x (1024, 1024), u (1024, 16), v (16, 1024)) run as written
and as the pass re-brackets it, ``(x @ u) @ v``; the LoRA case of issue 13,
``(W + B@A) @ x`` with W (4096, 4096), A (16, 4096), B (4096, 16), x
(4096, 1): with A and B run-time inputs as written and as the pass expands
it, ``W@x + B@(A@x)``; with them weights as written (B@A at every call) and
after ReassociateMatmul (which keeps it) and LiftTransformParams, one
matmul by the lifted ``W + B@A``; and the pass's own time on matmul chains
and on functions of many low-rank updates, by size.

A third section, ``aj.build`` on long chains of elementwise ops on (3,)
float32 values, at the sizes up to 100k: "tanh chain", x -> tanh -> tanh ...,
and "tanh(x) + y chain", y_k = tanh(x) + y_{k-1}, where each add merges the
one-op group of its tanh with the chain's. With fusion each is one fused
group of every binding; without (``fuse=False``) one instruction per
binding: the unfused row shows what planning costs without grouping. Each
(function, size) runs in a fresh process as in the first section. Anchor
(the commit before fusion planning was made linear, on this machine):
``aj.build`` of the 10k tanh chain took 0.67 s, of the 100k one 91 s. Goal:
the fused build's time grows at most 1.1x as much as the unfused one's.

``run()`` runs each of ``SECTIONS`` in turn; a section is a function of
``Settings`` that prints its table and goal lines.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

import adjoint as aj
from adjoint.bench import interleaved, interleaved_medians_phrase, median_seconds, print_table, size_label

SIZES = (10_000, 100_000, 1_000_000)
LIFT_ANCHORS = {10_000: 2.76, 100_000: 547.0}  # TVM 0.27 LiftTransformParams seconds, wide

_T = 'Tensor((4, 4), "float32")'
_FLOPS = {"permute_dims": 0, "add": 16, "subtract": 16, "multiply": 16, "matmul": 128}  # on (4, 4) operands
_CHAIN_OPS = ("add", "multiply", "matmul", "subtract")

LIFT = aj.transform.LiftTransformParams()
DCE = aj.transform.DeadCodeElimination()


@dataclass(frozen=True)
class Settings:
    """What every section measures with: runs per median (more while their
    total is under ``min_total`` seconds) and function sizes in bindings."""

    repeat: int = 3
    sizes: tuple[int, ...] = SIZES
    min_total: float = 0.3
    rounds: int = 3  # fresh processes per (shape, size), taken in turn (bench.interleaved)


@dataclass(frozen=True)
class Case:
    """A generated ``main`` and what each measured call must give on it."""

    module: aj.Module
    weights: int
    weight_only: int  # bindings from weights alone: lifted into main_transform_params
    input_dependent: int  # bindings left in main after lifting
    flops: int
    run_time_flops: int  # FLOPs of the input-dependent bindings


def wide(n: int) -> Case:
    """main(x, w0, ..., w{g-1}) of n = 4g bindings: for each weight w_i,
    t_i = permute_dims(w_i), s_i = t_i + w_i, u_i = s_i * s_i (from w_i
    alone) and y_i = x @ u_i; main returns every y_i in a tuple."""
    groups = n // 4
    params = [f"x: {_T}"] + [f"w{i}: {_T}" for i in range(groups)]
    lines = ["@function(num_input=1)", f"def main({', '.join(params)}) -> Tuple({', '.join([_T] * groups)}):"]
    for i in range(groups):
        lines += [f"    t{i}: {_T} = permute_dims(w{i})", f"    s{i}: {_T} = add(t{i}, w{i})",
                  f"    u{i}: {_T} = multiply(s{i}, s{i})", f"    y{i}: {_T} = matmul(x, u{i})"]
    lines.append(f"    return ({', '.join(f'y{i}' for i in range(groups))})")
    per_group = _FLOPS["add"] + _FLOPS["multiply"] + _FLOPS["matmul"]
    return Case(aj.parse("\n".join(lines) + "\n"), weights=groups, weight_only=3 * groups,
                input_dependent=groups, flops=groups * per_group, run_time_flops=groups * _FLOPS["matmul"])


def chain(n: int) -> Case:
    """main(x, w) of n bindings v_k = op(v_{k-1}, w) for k < n/2 (v_{-1} is
    w) and v_k = op(v_{k-1}, x) after, op cycling through add, multiply,
    matmul and subtract; main returns the last."""
    half = n // 2
    lines = ["@function(num_input=1)", f"def main(x: {_T}, w: {_T}) -> {_T}:"]
    ops = [_CHAIN_OPS[k % len(_CHAIN_OPS)] for k in range(n)]
    for k, op in enumerate(ops):
        lines.append(f"    v{k}: {_T} = {op}({f'v{k - 1}' if k else 'w'}, {'w' if k < half else 'x'})")
    lines.append(f"    return v{n - 1}")
    return Case(aj.parse("\n".join(lines) + "\n"), weights=1, weight_only=half, input_dependent=n - half,
                flops=sum(_FLOPS[op] for op in ops), run_time_flops=sum(_FLOPS[op] for op in ops[half:]))


SHAPES: dict[str, Callable[[int], Case]] = {"wide": wide, "chain": chain}
BUILD = "build (text + parse)"
FLOOR = "floor: DCE removing nothing"
MEASURED = ("LiftTransformParams", "computable_at_compile_time", "estimate_flops",
            "estimate_flops(compile_time_free)")


def calls_on(case: Case) -> dict[str, Callable[[], object]]:
    """Each measured call on ``case``, then the floor."""
    fn = case.module["main"]
    return {
        "LiftTransformParams": lambda: LIFT(case.module),
        "computable_at_compile_time": lambda: aj.analysis.computable_at_compile_time(fn),
        "estimate_flops": lambda: aj.analysis.estimate_flops(fn),
        "estimate_flops(compile_time_free)": lambda: aj.analysis.estimate_flops(fn, compile_time_free=True),
        FLOOR: lambda: DCE(case.module),
    }


def check_results(case: Case, results: dict[str, object]) -> None:
    """Raises AssertionError naming every result (of ``calls_on``) that is
    not what ``case`` must give, so that no row times a call doing nothing."""
    lifted, floor = results["LiftTransformParams"], results[FLOOR]
    sizes = {name: len(lifted[name].bindings) for name in lifted.functions}
    wrong = []
    if sizes != {"main": case.input_dependent, "main_transform_params": case.weight_only}:
        wrong.append(f"LiftTransformParams gave functions of {sizes} bindings, not main: {case.input_dependent} "
                     f"and main_transform_params: {case.weight_only}")
    expected_vars = case.weights + case.weight_only
    if len(results["computable_at_compile_time"]) != expected_vars:
        wrong.append(f"computable_at_compile_time listed {len(results['computable_at_compile_time'])} vars, "
                     f"not {expected_vars}")
    for name, want in (("estimate_flops", case.flops), ("estimate_flops(compile_time_free)", case.run_time_flops)):
        if results[name] != want:
            wrong.append(f"{name} gave {results[name]}, not {want}")
    if len(floor["main"].bindings) != len(case.module["main"].bindings):
        wrong.append(f"the floor's DCE removed {len(case.module['main'].bindings) - len(floor['main'].bindings)} "
                     "bindings, not none")
    if wrong:
        raise AssertionError("; ".join(wrong))


def measure(shape: str, n: int, repeat: int, min_total: float) -> dict[str, float]:
    """Seconds to build the ``shape`` function of ``n`` bindings, and the
    median seconds of each of ``calls_on`` it, after checking their results."""
    start = time.perf_counter()
    case = SHAPES[shape](n)
    seconds = {BUILD: time.perf_counter() - start}
    calls = calls_on(case)
    check_results(case, {name: call() for name, call in calls.items()})
    for name, call in calls.items():
        seconds[name] = median_seconds(call, repeat, warmup=1, min_total=min_total)
    return seconds


def in_fresh_process(measurer: str, what: str, n: int, settings: Settings) -> dict[str, float]:
    """``measurer(what, n, repeat, min_total)`` of this module (measure or
    measure_build) run in a process of its own: its seconds by name."""
    code = (f"import json, sys; from adjoint.bench.compile import {measurer}; "
            f"json.dump({measurer}(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])), sys.stdout)")
    args = [what, str(n), str(settings.repeat), str(settings.min_total)]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{measurer} of the {what} of {n} bindings failed:\n{done.stderr}")
    return json.loads(done.stdout)


def scaling_runs(measurer: str, names: Sequence[str], sizes: Sequence[int], settings: Settings) -> tuple[dict, dict]:
    """``measurer`` (in_fresh_process) on each name at each size, rounds of
    fresh processes taken in turn: the medians, ``seconds[name, n][what]``,
    and their growth from each size to the next, ``growth[name, what, a, b]``."""
    runs = interleaved(lambda key: in_fresh_process(measurer, *key, settings),
                       [(name, n) for name in names for n in sizes], settings.rounds)
    seconds = {key: {what: statistics.median(r[what] for r in results) for what in results[0]}
               for key, results in runs.items()}
    growth = {(name, what, a, b): seconds[name, b][what] / seconds[name, a][what]
              for name in names for what in seconds[name, sizes[0]] for a, b in zip(sizes, sizes[1:])}
    return seconds, growth


def compile_time_scaling(settings: Settings) -> None:
    sizes = settings.sizes
    seconds, growth = scaling_runs("measure", SHAPES, sizes, settings)
    steps = list(zip(sizes, sizes[1:]))
    rows = []
    for shape in SHAPES:
        for what in (BUILD, *MEASURED, FLOOR):
            over_floor = [growth[shape, what, a, b] / growth[shape, FLOOR, a, b] if what in MEASURED else ""
                          for a, b in steps]
            rows.append([shape, what, *(seconds[shape, n][what] for n in sizes),
                         *(growth[shape, what, a, b] for a, b in steps), *over_floor])
    print(f"Compile-time analyses and LiftTransformParams: seconds, "
          f"{interleaved_medians_phrase(settings.repeat, settings.rounds)} (build: one run per process); growth "
          f"from each size to the next, and that growth over the floor's")
    print_table(["shape", "measured", *(f"{size_label(n)} s" for n in sizes),
                 *(f"{size_label(b)}/{size_label(a)}" for a, b in steps),
                 *(f"{size_label(b)}/{size_label(a)} / floor's" for a, b in steps)], rows)
    print(_goal_line(seconds, growth))


def _worst(excess: dict[tuple[str, str, int, int], float]) -> str:
    shape, what, a, b = max(excess, key=excess.get)
    return f"worst {excess[shape, what, a, b]:.2f} from {size_label(a)} to {size_label(b)} bindings ({shape}, {what})"


def _goal_line(seconds: dict, growth: dict) -> str:
    """Whether 100k wide LiftTransformParams is under 0.3 s (when measured)
    and every measured row's time grows at most 1.1x as much as the bindings
    (10x the bindings, 11x the time); then the same growth over the floor's,
    which shows what is left once the caches' share is taken out."""
    over_size = {k: r / (k[3] / k[2]) for k, r in growth.items() if k[1] in MEASURED}
    over_floor = {k: r / growth[k[0], FLOOR, k[2], k[3]] for k, r in growth.items() if k[1] in MEASURED}
    linear = max(over_size.values()) <= 1.1
    lift = seconds.get(("wide", 100_000), {}).get("LiftTransformParams")
    goal = "goal: time growth at most 1.1x the bindings' growth"
    if lift is not None:
        goal = f"goal: 100k wide LiftTransformParams under 0.3 s ({lift:.3f} s) and time growth at most 1.1x the " \
               "bindings' growth"
        linear = linear and lift < 0.3
    lines = [f"{goal}: {'met' if linear else 'NOT met'} (time growth / bindings' growth: {_worst(over_size)})",
             f"time growth / the floor's growth at most 1.1: {'yes' if max(over_floor.values()) <= 1.1 else 'no'} "
             f"({_worst(over_floor)})"]
    lines += [f"TVM 0.27 LiftTransformParams on {size_label(n)} wide: {t:g} s, {t / seconds['wide', n]['LiftTransformParams']:.0f}x "
              "adjoint's time" for n, t in LIFT_ANCHORS.items() if ("wide", n) in seconds]
    return "\n".join(lines)


REASSOCIATE = aj.transform.ReassociateMatmul()


def _matmuls(params: dict[str, tuple[int, ...]], body: list[tuple[str, tuple[int, ...], str]],
             num_input: int | None = None) -> aj.Module:
    """main(params) with float32 bindings (name, shape, value), returning the last."""
    def t(shape: tuple[int, ...]) -> str:
        return f'Tensor(({", ".join(map(str, shape))}{"," if len(shape) == 1 else ""}), "float32")'
    attrs = f"(num_input={num_input})" if num_input is not None else ""
    lines = [f"@function{attrs}", f"def main({', '.join(f'{n}: {t(s)}' for n, s in params.items())}) -> {t(body[-1][1])}:"]
    lines += [f"    {name}: {t(shape)} = {value}" for name, shape, value in body] + [f"    return {body[-1][0]}"]
    return aj.parse("\n".join(lines) + "\n")


def thin_chain(n: int = 1024, k: int = 16) -> aj.Module:
    """x @ (u @ v): x (n, n), u (n, k), v (k, n); (x @ u) @ v is n/k times fewer FLOPs."""
    return _matmuls({"x": (n, n), "u": (n, k), "v": (k, n)},
                    [("uv", (n, n), "matmul(u, v)"), ("y", (n, n), "matmul(x, uv)")])


def lora_factored(num_input: int | None, m: int = 4096, n: int = 4096, r: int = 16) -> aj.Module:
    """(W + B@A) @ x: W (m, n), A (r, n), B (m, r), x (n, 1); with num_input=1 W, A, B are weights."""
    return _matmuls({"x": (n, 1), "W": (m, n), "A": (r, n), "B": (m, r)},
                    [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(W, ba)"), ("y", (m, 1), "matmul(s, x)")],
                    num_input=num_input)


def matmul_chain_function(n: int) -> aj.Module:
    """n matmuls h_k = h_{k-1} @ (w, w, v, u)[k mod 4], left to right, with w
    (8, 8), v (8, 2), u (2, 8): bracketing towards each thin v is cheaper,
    so every window of the chain is re-bracketed."""
    shapes = {"w": (8, 8), "v": (8, 2), "u": (2, 8)}
    body, last, width = [], "x", 8
    for k in range(n):
        w = "wwvu"[k % 4]
        width = shapes[w][1]
        body.append((f"h{k}", (8, width), f"matmul({last}, {w})"))
        last = f"h{k}"
    return _matmuls({"x": (8, 8), **shapes}, body)


def low_rank_groups(groups: int) -> aj.Module:
    """``groups`` independent W_i@x + B@(A@x) with weights W_i, A, B, summed: each group factors."""
    params = {"x": (8, 1), "A": (2, 8), "B": (8, 2), **{f"W{i}": (8, 8) for i in range(groups)}}
    body, acc = [], None
    for i in range(groups):
        body += [(f"wx{i}", (8, 1), f"matmul(W{i}, x)"), (f"ax{i}", (2, 1), "matmul(A, x)"),
                 (f"bax{i}", (8, 1), f"matmul(B, ax{i})"), (f"y{i}", (8, 1), f"add(wx{i}, bax{i})")]
        if acc is not None:
            body.append((f"s{i}", (8, 1), f"add({acc}, y{i})"))
        acc = f"s{i}" if i else "y0"
    return _matmuls(params, body, num_input=1)


def _run_seconds(mod: aj.Module, args: list[np.ndarray], settings: Settings, func: str = "main") -> float:
    f = aj.build(mod)[func]
    return median_seconds(lambda: f(*args), settings.repeat, warmup=1, min_total=settings.min_total)


def reassociation(settings: Settings) -> None:
    rng = np.random.default_rng(0)
    rows = []
    chain = thin_chain()
    rebracketed = REASSOCIATE(chain)
    if [b.value.args[0].name_hint for b in rebracketed["main"].bindings] != ["x", "y_part"]:
        raise AssertionError(f"ReassociateMatmul did not re-bracket x @ (u @ v):\n{rebracketed}")
    args = [rng.standard_normal(p.type.shape).astype(np.float32) for p in chain["main"].params]
    before, after = _run_seconds(chain, args, settings), _run_seconds(rebracketed, args, settings)
    rows.append(["x @ (u @ v) -> (x @ u) @ v, n=1024, k=16", aj.analysis.estimate_flops(chain["main"]),
                 aj.analysis.estimate_flops(rebracketed["main"]), before, after, before / after])

    inputs = lora_factored(None)
    expanded = REASSOCIATE(inputs)
    if [b.value.op for b in expanded["main"].bindings] != ["matmul", "matmul", "matmul", "add"]:
        raise AssertionError(f"ReassociateMatmul did not expand (W + B@A) @ x with A, B inputs:\n{expanded}")
    args = [rng.standard_normal(p.type.shape).astype(np.float32) for p in inputs["main"].params]
    before, after = _run_seconds(inputs, args, settings), _run_seconds(expanded, args, settings)
    rows.append(["LoRA (W + B@A) @ x, A, B inputs -> W@x + B@(A@x)", aj.analysis.estimate_flops(inputs["main"]),
                 aj.analysis.estimate_flops(expanded["main"]), before, after, before / after])

    weights = lora_factored(1)
    lifted = aj.transform.LiftTransformParams()(REASSOCIATE(weights))
    if [b.value.op for b in lifted["main"].bindings] != ["matmul"]:
        raise AssertionError(f"ReassociateMatmul + LiftTransformParams did not leave one matmul:\n{lifted}")
    merged = aj.build(lifted)["main_transform_params"](*args[1:])
    before, after = _run_seconds(weights, args, settings), _run_seconds(lifted, [args[0], *merged], settings)
    rows.append(["LoRA (W + B@A) @ x, A, B weights -> kept, W + B@A lifted", aj.analysis.estimate_flops(weights["main"]),
                 aj.analysis.estimate_flops(lifted["main"]), before, after, before / after])
    print(f"ReassociateMatmul: running the function before and after (median of {settings.repeat} calls)")
    print_table(["function", "FLOPs before", "FLOPs after", "before s", "after s", "speed-up"], rows)

    rows = []
    for name, make, per in (("matmul chain", matmul_chain_function, 1), ("low-rank updates", low_rank_groups, 5)):
        for n in [s for s in settings.sizes if s <= 100_000]:
            mod = make(n // per)
            before, after = (aj.analysis.estimate_flops(m["main"], compile_time_free=True) for m in (mod, REASSOCIATE(mod)))
            if after >= before:
                raise AssertionError(f"ReassociateMatmul left the {name} function of {n} bindings at {before} FLOPs")
            seconds = median_seconds(lambda: REASSOCIATE(mod), settings.repeat, warmup=0, min_total=settings.min_total)
            floor = median_seconds(lambda: DCE(mod), settings.repeat, warmup=0, min_total=settings.min_total)
            rows.append([name, len(mod["main"].bindings), seconds, floor])
    print()
    print(f"ReassociateMatmul's own time (median of {settings.repeat} runs), beside DCE removing nothing")
    print_table(["function", "bindings", "ReassociateMatmul s", "floor s"], rows)


BUILD_SIZE_CAP = 100_000  # the build section's largest size
BUILD_ANCHORS = {10_000: 0.67, 100_000: 91.0}  # tanh chain's aj.build seconds before it was made linear


def tanh_chain(n: int) -> aj.Module:
    """main(x) = tanh(tanh(... tanh(x))): n tanh on x of shape (3,), returning the last."""
    bb = aj.FunctionBuilder("main")
    y = bb.param("x", (3,), "float32")
    for _ in range(n):
        y = aj.op.tanh(y)
    return bb.finish(y)


def merging_chain(n: int) -> aj.Module:
    """main(x) of n bindings, y_k = tanh(x) + y_{k-1} (y_0 = x) for k up to
    n/2: each add reads a new group of one (its tanh) first and the chain's
    group second, and merges them."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), "float32")
    y = x
    for _ in range(n // 2):
        y = aj.op.tanh(x) + y
    return bb.finish(y)


CHAINS: dict[str, Callable[[int], aj.Module]] = {"tanh chain": tanh_chain, "tanh(x) + y chain": merging_chain}


def check_plan(chain: str, n: int, fused: aj.runtime.ExecFunction, unfused: aj.runtime.ExecFunction) -> None:
    """Raises AssertionError unless the fused plan is one group of all n
    bindings and the unfused one an instruction per binding."""
    got = (fused.num_instructions, fused.num_fused_groups, fused.num_fused_ops, unfused.num_instructions)
    if got != (1, 1, n, n):
        raise AssertionError(f"aj.build of the {chain} of {n} bindings planned (instructions, fused groups, fused ops) "
                             f"{got[:3]} fused and {got[3]} instructions unfused, not (1, 1, {n}) and {n}")


def measure_build(chain: str, n: int, repeat: int, min_total: float) -> dict[str, float]:
    """Median seconds of ``aj.build`` on the ``chain`` of ``n`` bindings,
    fused and unfused, after checking the plans (check_plan)."""
    mod = CHAINS[chain](n)
    check_plan(chain, n, aj.build(mod)["main"], aj.build(mod, fuse=False)["main"])
    return {"fused": median_seconds(lambda: aj.build(mod), repeat, warmup=1, min_total=min_total),
            "unfused": median_seconds(lambda: aj.build(mod, fuse=False), repeat, warmup=1, min_total=min_total)}


def build_scaling(settings: Settings) -> None:
    sizes = [n for n in settings.sizes if n <= BUILD_SIZE_CAP]
    seconds, growth = scaling_runs("measure_build", CHAINS, sizes, settings)
    steps = list(zip(sizes, sizes[1:]))
    rows = [[chain, how, *(seconds[chain, n][how] for n in sizes), *(growth[chain, how, a, b] for a, b in steps)]
            for chain in CHAINS for how in ("fused", "unfused")]
    print(f"aj.build on chains of elementwise ops on (3,) values: seconds, "
          f"{interleaved_medians_phrase(settings.repeat, settings.rounds)}; growth from each size to the next")
    print_table(["function", "aj.build", *(f"{size_label(n)} s" for n in sizes),
                 *(f"{size_label(b)}/{size_label(a)}" for a, b in steps)], rows)
    print(_build_goal_lines(seconds, growth))


def _build_goal_lines(seconds: dict, growth: dict) -> str:
    """Whether the fused build's time grows at most 1.1x as much as the
    unfused one's, at every step of every chain; then the tanh chain's
    anchors against this run."""
    over_unfused = {(chain, a, b): r / growth[chain, "unfused", a, b]
                    for (chain, how, a, b), r in growth.items() if how == "fused"}
    lines = []
    if over_unfused:
        chain, a, b = max(over_unfused, key=over_unfused.get)
        worst = over_unfused[chain, a, b]
        lines.append(f"goal: the fused build's time growth at most 1.1x the unfused build's: "
                     f"{'met' if worst <= 1.1 else 'NOT met'} (worst {worst:.2f} from {size_label(a)} to "
                     f"{size_label(b)} bindings, {chain})")
    lines += [f"before fusion planning was linear, the {size_label(n)} tanh chain's aj.build took {before:g} s, "
              f"{before / seconds['tanh chain', n]['fused']:.0f}x this run's"
              for n, before in BUILD_ANCHORS.items() if ("tanh chain", n) in seconds]
    return "\n".join(lines)


SECTIONS: tuple[Callable[[Settings], None], ...] = (compile_time_scaling, reassociation, build_scaling)


def run(repeat: int = 3, sizes: tuple[int, ...] = SIZES, min_total: float = 0.3, rounds: int = 3) -> None:
    for k, section in enumerate(SECTIONS):
        if k:
            print()
        section(Settings(repeat, sizes, min_total, rounds))
