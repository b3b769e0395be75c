"""One system's side of the training benchmark, run in its own process
(``python -m adjoint.bench.train_worker SPEC``, started by bench/train.py):
JAX fixes its thread count when it starts, every system gets its own
process alike, and each process's memory is its own to measure.

It builds the model and the system's step function, makes the first
steps, then answers JSON commands, one a line, on stdin:
``{"cmd": "time", "steps": k}`` -> seconds of k steps (with ``"gemms": true``,
of k runs of the matmuls of adjoint's step alone, by adjoint or by torch:
train_models.gemms_alone, torch_gemms_alone); ``{"cmd": "memory",
"until": n}`` -> steps up to the n-th, and the resident memory then against
at step 10; ``{"cmd": "quit"}``. Replies go to stdout, one JSON line each;
anything else written to stdout goes to stderr instead."""

from __future__ import annotations

import json
import os
import sys
import time

WARMUP_STEPS = 10


def memory_kib() -> dict[str, int]:
    """Resident set size now and at its peak (VmRSS, VmHWM) in KiB."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return {"rss": fields["VmRSS"], "peak": fields["VmHWM"]}


def pin(cpus: list[int]) -> None:
    """Pins every thread of this process (those BLAS started at import too)
    to ``cpus``; threads started later inherit it. JAX sizes its thread
    pool by the CPUs it may run on."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), cpus)


def set_threads(system: str, threads: int) -> None:
    """adjoint: aj.set_num_threads; torch: torch.set_num_threads; JAX: the
    CPU affinity and, for one thread, XLA_FLAGS set by the parent."""
    if system == "adjoint":
        import adjoint as aj

        aj.set_num_threads(threads)
    elif system == "torch":
        import torch

        torch.set_num_threads(threads)


def serve(spec: dict, replies) -> None:
    from adjoint.bench.train_models import (MODELS, adjoint_step, gemms_alone, jax_step, step_gemms,
                                            torch_gemms_alone, torch_step)

    system = spec["system"]
    pin(spec["cpus"])
    set_threads(system, spec["threads"])
    model = MODELS[spec["model"]](**spec["dims"])
    gemms = None
    if system == "adjoint":
        step, trainer = adjoint_step(model)
        gemms = gemms_alone(trainer)
        gemms()
        step, counters = counted(step, trainer)
    else:
        step, counters = {"torch": torch_step, "jax": jax_step}[system](model), dict
    if system == "torch":
        gemms = torch_gemms_alone(step_gemms(adjoint_step(model)[1]))
        gemms()
    reply = replies_to(replies)
    first_loss = step()
    t0 = time.perf_counter()
    for _ in range(WARMUP_STEPS - 1):
        step()
    done = WARMUP_STEPS
    at_warmup, counted_from = memory_kib(), counters()
    reply({"loss1": first_loss, "step_seconds": (time.perf_counter() - t0) / (WARMUP_STEPS - 1), **at_warmup})
    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "time" and command.get("gemms"):
            t0 = time.perf_counter()
            for _ in range(command["steps"]):
                gemms()
            reply({"seconds": time.perf_counter() - t0})
        elif command["cmd"] == "time":
            t0 = time.perf_counter()
            for _ in range(command["steps"]):
                step()
            reply({"seconds": time.perf_counter() - t0})
            done += command["steps"]
        elif command["cmd"] == "memory":
            while done < command["until"]:
                step()
                done += 1
            now = counters()
            reply({"steps": done, "at_warmup": at_warmup, "now": memory_kib(),
                   "executor": {k: now[k] - counted_from[k] for k in now}})
        else:
            return


def counted(step, trainer):
    """The adjoint step, adding up the executor's own counts of each run
    (``last_run_stats`` of the trainer's step function: fresh buffers, their
    bytes, bytes copied into donated inputs); and a function giving the sums."""
    step_function = trainer.step_function
    totals = {"allocations": 0, "allocated_bytes": 0, "copied_bytes": 0}

    def counted_step() -> float:
        loss = step()
        stats = step_function.last_run_stats
        for name in totals:
            totals[name] += getattr(stats, name)
        return loss

    return counted_step, lambda: dict(totals)


def replies_to(stream):
    def reply(message: dict) -> None:
        stream.write(json.dumps(message) + "\n")
        stream.flush()

    return reply


def main() -> None:
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(json.loads(sys.argv[1]), replies)


if __name__ == "__main__":
    main()
