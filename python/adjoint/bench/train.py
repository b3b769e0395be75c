"""Training-step benchmark (issue 16): steps per second of an MLP (batch
256, 784-1024-1024-10, cross-entropy on class indices) and the transformer
block of graphs.py (MSE against a random target) trained with Adam (lr
1e-3) by adjoint's ``Trainer.step``, by PyTorch eager and by JAX
(``jit(value_and_grad)`` + optax, params and state donated), at 1 and 2
threads, from the same initial params.

Each system runs in a process of its own (bench/train_worker.py), pinned
to the first n CPUs with its thread count set to n (JAX fixes its threads
at start-up: XLA_FLAGS and the CPU affinity set them); the samples are
interleaved, one per system in turn per repeat, and the medians compared.
Memory: each process's resident set after step 10 and after step 1,000.
The adjoint process also times the step's matmuls alone (the same GEMMs
on operands of their shapes, through the same executor and OpenBLAS,
bench/train_models.gemms_alone), sampled after each of its step samples:
a step can go no faster than that by any change outside the GEMMs, and
its ratio to PyTorch's step shows how much of the goal that leaves. The
PyTorch process times the same matmuls by ``torch.matmul``
(train_models.torch_gemms_alone) after each of its samples: their share
of PyTorch's own step, and how fast its GEMMs are against adjoint's.
The header names the OpenBLAS kernels adjoint's GEMMs run: an
OPENBLAS_CORETYPE in the environment overrides OpenBLAS's pick for the CPU
(PyTorch and JAX have GEMMs of their own).

Goals: adjoint at most 0.8x PyTorch eager's time per step and at most 1.0x
JAX's; no allocation per step (resident memory flat over 1,000 steps)."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import statistics
import subprocess
import sys
import time

from adjoint.bench import print_table
from adjoint.bench.train_models import MODELS

SYSTEMS = ("adjoint", "torch", "jax")
GEMMS = {"adjoint": "adjoint GEMMs", "torch": "torch GEMMs"}  # the matmuls of adjoint's step alone, by each
GOALS = {"torch": 0.8, "jax": 1.0}
MiB = 1024  # KiB per MiB


def available_systems() -> list[str]:
    """adjoint, then PyTorch and JAX when they are installed."""
    needs = {"adjoint": [], "torch": ["torch"], "jax": ["jax", "optax"]}
    return [s for s in SYSTEMS if all(importlib.util.find_spec(m) for m in needs[s])]


class Worker:
    """One system's process for one model at one thread count."""

    def __init__(self, system: str, model: str, dims: dict, threads: int):
        self.system = system
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        if system == "jax" and threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                                " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
        spec = {"system": system, "model": model, "dims": dims, "threads": threads,
                "cpus": sorted(os.sched_getaffinity(0))[:threads]}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adjoint.bench.train_worker", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.hello: dict | None = None

    def receive(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.system} worker stopped (exit status {self.process.wait()}); "
                               f"its error is above")
        return json.loads(line)

    def ask(self, command: dict) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.receive()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.process.stdin.close()
        self.process.wait()


def settle() -> None:
    """Lets the previous system's spinning BLAS/OpenMP threads go idle."""
    time.sleep(0.2)


def measure(workers: list[Worker], repeat: int, sample_seconds: float) -> dict[str, float]:
    """Median seconds per step of each system over ``repeat`` samples, taken
    in turn (one sample of each system per repeat, adjoint's and torch's
    each followed by one of their GEMMs alone, under ``GEMMS``); a sample
    is as many steps as fill about ``sample_seconds`` by the worker's first
    steps."""
    steps = {w.system: max(1, round(sample_seconds / w.hello["step_seconds"])) for w in workers}
    times: dict[str, list[float]] = {w.system: [] for w in workers}
    for _ in range(repeat):
        for w in workers:
            settle()
            times[w.system].append(w.ask({"cmd": "time", "steps": steps[w.system]})["seconds"] / steps[w.system])
            if w.system in GEMMS:
                settle()
                times.setdefault(GEMMS[w.system], []).append(
                    w.ask({"cmd": "time", "steps": steps[w.system], "gemms": True})["seconds"] / steps[w.system])
    return {s: statistics.median(t) for s, t in times.items()}


def memory(workers: list[Worker], until: int) -> dict[str, dict]:
    """Each worker's memory after step ``until`` against after step 10, one
    worker at a time."""
    return {w.system: w.ask({"cmd": "memory", "until": until}) for w in workers}


def run_model(model: str, dims: dict, systems: list[str], threads: int, repeat: int,
              sample_seconds: float, memory_steps: int | None) -> tuple[dict, dict, dict]:
    """(seconds per step, step-1 loss, memory or {}) of each system."""
    workers = [Worker(s, model, dims, threads) for s in systems]
    try:
        for w in workers:
            w.hello = w.receive()
        seconds = measure(workers, repeat, sample_seconds)
        mem = memory(workers, memory_steps) if memory_steps else {}
        return seconds, {w.system: w.hello["loss1"] for w in workers}, mem
    finally:
        for w in workers:
            w.close()


MODEL_LOSSES = {"mlp": "relu MLP, mean cross-entropy on class indices",
                "transformer": "graphs.transformer_block, mean squared error against a random target"}


def describe(model: str, dims: dict) -> str:
    """The sizes a model is built with: its builder's defaults, then ``dims``."""
    params = inspect.signature(MODELS[model]).parameters.values()
    sizes = {**{p.name: p.default for p in params if p.name != "seed"}, **dims}
    return ", ".join(f"{k} {'-'.join(map(str, v)) if isinstance(v, (tuple, list)) else v}" for k, v in sizes.items())


def memory_row(model: str, threads: int, system: str, m: dict) -> list[object]:
    executor = m["executor"]
    return [model, threads, system, m["steps"], m["at_warmup"]["rss"] / MiB,
            (m["now"]["rss"] - m["at_warmup"]["rss"]) / MiB, (m["now"]["peak"] - m["at_warmup"]["peak"]) / MiB,
            executor.get("allocations", "-"), executor.get("allocated_bytes", float("nan")) / 2**20,
            executor.get("copied_bytes", float("nan")) / 2**20]


def openblas_core(env: dict[str, str]) -> str:
    """The kernel set OpenBLAS picks in a process started with ``env``: the
    core's name in its config string (``Haswell``, ``SkylakeX``), the one
    word that is neither the version nor an ALL_CAPS build option."""
    code = "import adjoint; print(adjoint.blas_info()['config'])"
    config = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            check=True).stdout.split()
    return next((w for w in config[1:] if w.isidentifier() and not w.isupper()), "?")


def blas_line() -> str:
    """Which OpenBLAS kernels adjoint's GEMMs run, and which this CPU would
    get without OPENBLAS_CORETYPE (PyTorch and JAX bring their own GEMMs)."""
    core = openblas_core(dict(os.environ))
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if not forced:
        return f"adjoint's GEMMs: OpenBLAS's {core} kernels, the ones it picks for this CPU"
    own = openblas_core({k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"})
    if own == core:
        return f"adjoint's GEMMs: OpenBLAS's {core} kernels (OPENBLAS_CORETYPE={forced}, also its pick for this CPU)"
    return (f"adjoint's GEMMs: OpenBLAS's {core} kernels, set by OPENBLAS_CORETYPE={forced} in the environment; "
            f"for this CPU OpenBLAS would pick {own} (measure that with `env -u OPENBLAS_CORETYPE`); "
            f"PyTorch and JAX use GEMMs of their own, which it does not change")


def gemms_line(seconds: dict) -> str:
    """How much of torch's step the step's GEMMs alone take, adjoint's and
    torch's own; when torch's own take the goal's share or more, no system
    with GEMMs no faster than torch's can reach the goal."""
    mine, theirs = ratio(seconds, "torch", GEMMS["adjoint"]), ratio(seconds, "torch", GEMMS["torch"])
    line = f"    (adjoint's GEMMs alone: {mine:.2f} of torch's step; torch's own GEMMs alone: {theirs:.2f} of it"
    if theirs >= GOALS["torch"]:
        line += f": at or above {GOALS['torch']}, the goal needs GEMMs faster than torch's"
    return line + ")"


def ratio(seconds: dict, other: str, mine: str = "adjoint") -> float:
    return seconds[mine] / seconds[other] if other in seconds and mine in seconds else float("nan")


def run(repeat: int = 3, models: dict | None = None, thread_counts: tuple[int, ...] = (1, 2),
        memory_steps: int = 1000, sample_seconds: float = 1.0) -> None:
    models = models if models is not None else {"mlp": {}, "transformer": {}}
    systems = available_systems()
    cpus = len(os.sched_getaffinity(0))
    thread_counts = tuple(n for n in thread_counts if n <= cpus)
    rows, loss_rows, memory_rows, goal_lines = [], [], [], []
    for model, dims in models.items():
        for threads in thread_counts:
            check_memory = memory_steps if threads == thread_counts[-1] else None
            seconds, losses, mem = run_model(model, dims, systems, threads, repeat, sample_seconds, check_memory)
            rows.append([model, threads] + [seconds.get(s, float("nan")) * 1e3 for s in (*SYSTEMS, *GEMMS.values())]
                        + [ratio(seconds, "torch"), ratio(seconds, "jax")]
                        + [ratio(seconds, "torch", g) for g in GEMMS.values()]
                        + [1 / seconds[s] if s in seconds else float("nan") for s in SYSTEMS])
            loss_rows.append([model, threads] + [losses.get(s, float("nan")) for s in SYSTEMS]
                             + [loss_spread(losses)])
            memory_rows += [memory_row(model, threads, s, m) for s, m in mem.items()]
            goal_lines += [f"  {model}, {threads} thread{'s' * (threads > 1)}: aj/{o} "
                           f"{ratio(seconds, o):.2f} (<= {g})" for o, g in GOALS.items() if o in seconds]
            if "torch" in seconds:
                goal_lines.append(gemms_line(seconds))
    print(f"Training step with Adam (lr 1e-3): ms per step, median of {repeat} interleaved samples of "
          f"~{sample_seconds:g} s; each system in its own process pinned to the first n CPUs "
          f"({cpus} available); systems: {', '.join(systems)}")
    for model, dims in models.items():
        print(f"  {model}: {MODEL_LOSSES[model]}; {describe(model, dims)}")
    print(f"  {blas_line()}")
    print_table(["model", "threads", "adjoint ms", "torch ms", "jax ms", "aj GEMMs ms", "torch GEMMs ms", "aj/torch",
                 "aj/jax", "aj GEMMs/torch", "torch GEMMs/torch", "adjoint steps/s", "torch steps/s", "jax steps/s"],
                rows)
    print()
    print("Loss of step 1 (same initial params and batch):")
    print_table(["model", "threads", "adjoint", "torch", "jax", "max rel diff"], loss_rows)
    print()
    print(f"Resident memory (MiB) after step 10 and its growth to step {memory_steps}, "
          f"at {thread_counts[-1] if thread_counts else '-'} threads:")
    print("(allocations, allocated and copied: the adjoint executor's own counts over those steps, "
          "from its last_run_stats; copied: bytes of results copied into their donated inputs)")
    print_table(["model", "threads", "system", "steps", "RSS@10", "RSS growth", "peak RSS growth",
                 "allocations", "allocated MiB", "copied MiB"], memory_rows)
    print()
    print("goals:")
    for line in goal_lines:
        print(line)


def loss_spread(losses: dict[str, float]) -> float:
    """Largest relative difference between any system's step-1 loss and adjoint's."""
    ref = losses["adjoint"]
    return max(abs(v - ref) / abs(ref) for v in losses.values())
