"""Executor benchmark: an MLP forward, a transformer block and a chain of
1,000 tiny ops, each run by adjoint, by NumPy and by PyTorch eager (when
installed), with the pure GEMM time of the graph's matmuls and peak memory.

Goals (issue 3): adjoint at most 1.0x NumPy and 1.1x PyTorch on the MLP and
the transformer block (run both with nn.Linear-style x @ W.T weights and with x @ W); at least 85% of the MLP's time in GEMM; under 1 us per
op on the 1,000-op chain.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

import adjoint as aj
from adjoint.bench import median_seconds, print_table
from adjoint.bench.graphs import Graph, chain, mlp, transformer_block


def gemm_seconds(shapes: list[tuple[int, int, int]], repeat: int) -> float:
    """Time of the graph's matmuls as plain 2-D GEMMs, back to back, in OpenBLAS."""
    if not shapes:
        return float("nan")
    rng = np.random.default_rng(0)
    distinct = {s: (rng.standard_normal((s[0], s[1])).astype(np.float32),
                    rng.standard_normal((s[1], s[2])).astype(np.float32),
                    np.empty((s[0], s[2]), np.float32)) for s in set(shapes)}

    def run():
        for s in shapes:
            a, b, c = distinct[s]
            aj._core.gemm(a, b, c)

    return median_seconds(run, repeat)


def numpy_peak_bytes(g: Graph) -> int:
    """Peak bytes NumPy allocates while running the reference (tracemalloc sees them)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    g.numpy_fn(*g.inputs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def settle() -> None:
    """Lets BLAS thread pools that spin after work (NumPy's and adjoint's
    OpenBLAS each have one, PyTorch has its own) go idle, so one framework's
    spinning threads do not steal the cores from the next one's timing."""
    time.sleep(0.5)


def check_agreement(g: Graph, got: object) -> float:
    want = np.asarray(g.numpy_fn(*g.inputs), dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))


def run(repeat: int = 10) -> None:
    graphs = [mlp(), transformer_block(), transformer_block(linear_wt=False), chain()]
    try:
        import torch

        torch_threads = torch.get_num_threads()
    except ImportError:
        torch = None
        torch_threads = 0
    rows = []
    notes = []
    for g in graphs:
        exe = aj.build(g.module)["main"]
        out = exe(*g.inputs)
        err = check_agreement(g, out)
        settle()
        t_aj = median_seconds(lambda: exe(*g.inputs), repeat, warmup=2)
        settle()
        t_np = median_seconds(lambda: g.numpy_fn(*g.inputs), repeat, warmup=2)
        t_torch = float("nan")
        if torch is not None and g.torch_fn is not None:
            tin = [torch.from_numpy(a) for a in g.inputs]
            settle()
            with torch.no_grad():
                t_torch = median_seconds(lambda: g.torch_fn(*tin), repeat, warmup=2)
        settle()
        t_gemm = gemm_seconds(g.gemm_shapes, repeat)
        n_ops = len(g.module["main"].bindings)
        rows.append([
            g.name, n_ops, t_aj * 1e3, t_np * 1e3, t_torch * 1e3,
            t_aj / t_np, t_aj / t_torch if t_torch == t_torch else float("nan"),
            t_gemm * 1e3, t_gemm / t_aj if t_gemm == t_gemm else float("nan"),
            t_aj / n_ops * 1e6, exe.peak_bytes / 2**20, numpy_peak_bytes(g) / 2**20,
        ])
        notes.append(f"{g.name}: max relative difference from NumPy {err:.2e}; "
                     f"{exe.num_folded_transposes} transposes folded into GEMM flags")
    print(f"Executor benchmark: milliseconds, median of {repeat} runs; BLAS threads {aj._core.get_num_threads()}, "
          f"torch threads {torch_threads or 'n/a'}")
    print_table(["graph", "ops", "adjoint ms", "numpy ms", "torch ms", "aj/numpy", "aj/torch",
                 "gemm ms", "gemm share", "us/op", "aj peak MiB", "numpy peak MiB"], rows)
    print()
    for n in notes:
        print(n)
    mlp_row, tr_row, trxw_row, ch_row = rows
    print()
    print("goals:")
    print(f"  MLP aj/numpy {mlp_row[5]:.2f} (<= 1.0), aj/torch {mlp_row[6]:.2f} (<= 1.1), gemm share {mlp_row[8]:.0%} (>= 85%)")
    print(f"  transformer (x @ W.T) aj/numpy {tr_row[5]:.2f} (<= 1.0), aj/torch {tr_row[6]:.2f} (<= 1.1)")
    print(f"  transformer (x @ W)   aj/numpy {trxw_row[5]:.2f} (<= 1.0), aj/torch {trxw_row[6]:.2f} (<= 1.1)")
    print(f"  chain {ch_row[9]:.3f} us/op (< 1)")
