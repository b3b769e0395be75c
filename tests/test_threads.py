"""Thread safety of the runtime: executables running kernels and GEMMs in
several Python threads while another thread changes aj.set_num_threads, and
the kernel pool in a forked child. Each scenario runs in a subprocess with a
timeout, so a crash or a hang fails the test instead of killing or blocking
the suite; the scenario itself checks every result."""

import os
import subprocess
import sys
import threading
import time

import numpy as np

SECONDS = 2.0  # how long the workers and the setter run
TIMEOUT = 40  # generous for a sanitized build; a hang fails the test instead of blocking CI


def run_scenario(name):
    proc = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=TIMEOUT)
    report = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, report
    last_line = proc.stdout.rstrip().rsplit("\n", 1)[-1]  # an editable install may print before it
    assert last_line.startswith("ok:"), report


def test_set_num_threads_while_kernels_run():
    run_scenario("kernels")


def test_set_num_threads_while_gemms_and_kernels_run():
    run_scenario("gemms")


def test_kernel_pool_in_a_forked_child():
    run_scenario("fork")


def test_run_stats_read_while_the_function_runs():
    # regression: pool_bytes walked the buffer pool's free list while a run
    # on another thread grew it (a read of freed memory); the stats now wait
    # for the run
    run_scenario("stats")


# ---- The scenarios (run as `python test_threads.py NAME`) ----


def exp_worker(dtype):
    """A loop check: exp over 1M elements through a parallel_for kernel."""
    import adjoint as aj

    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (1 << 20,), dtype)
    fn = aj.build(bb.finish(aj.op.exp(x)))["main"]
    xs = np.linspace(-3, 3, 1 << 20).astype(dtype)
    want = fn(xs)  # elementwise: the same values whatever the chunking
    np.testing.assert_allclose(want, np.exp(xs), rtol=1e-6)
    return lambda: np.array_equal(fn(xs), want)


def gemm_worker(dtype):
    """A loop check: a 192x192 matmul (threaded inside OpenBLAS) plus a tanh kernel."""
    import adjoint as aj

    n = 192
    bb = aj.FunctionBuilder("main")
    a, b = bb.param("a", (n, n), dtype), bb.param("b", (n, n), dtype)
    fn = aj.build(bb.finish(aj.op.tanh(a @ b)))["main"]
    rng = np.random.default_rng(1)
    xa, xb = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
    want = np.tanh(xa.astype(np.float64) @ xb.astype(np.float64))
    tol = 1e-4 if dtype == "float32" else 1e-10
    return lambda: np.allclose(fn(xa, xb), want, rtol=tol, atol=tol)


def stats_workers():
    """Loop checks sharing one compiled function: two run it at batch sizes
    that change its pool's buffers, one reads its run stats meanwhile."""
    import adjoint as aj

    bb = aj.FunctionBuilder("main")
    x, w = bb.param("x", ("n", 64), "float64"), bb.param("w", (64, 64), "float64")
    h = x
    for _ in range(4):
        h = aj.op.exp(aj.op.tanh(h @ w)) * h
    fn = aj.build(bb.finish((aj.op.sum(h), h)))["main"]
    w_value = np.full((64, 64), 0.01)

    def run(seed):
        rng = np.random.default_rng(seed)

        def check():
            xs = rng.standard_normal((int(rng.integers(0, 200)), 64))
            return fn(xs, w_value)[1].shape == xs.shape
        return check

    def read():
        stats = fn.last_run_stats
        return fn.pool_bytes >= 0 and fn.peak_bytes >= 0 and stats.allocated_bytes >= 0
    return [run(1), run(2), read]


COUNTS = [1, 2, 3, 4, 2, 6, 1, 8]  # thread counts the setter cycles through; 6 and 8 make OpenBLAS start threads


def stress(checks, step):
    """Runs each check in a loop in its own thread while this thread calls
    step(0), step(1), ... for SECONDS; exits non-zero if any check fails or
    raises, or a check never ran."""
    stop = threading.Event()
    failures, runs = [], [0] * len(checks)

    def loop(i):
        try:
            while not stop.is_set():
                if not checks[i]():
                    failures.append(f"check {i}: wrong values")
                runs[i] += 1
        except Exception as e:  # reported, then the scenario fails
            failures.append(f"check {i}: {e!r}")

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(checks))]
    for t in threads:
        t.start()
    deadline, steps = time.monotonic() + SECONDS, 0
    while time.monotonic() < deadline and not failures:
        try:
            step(steps)
        except Exception as e:
            failures.append(f"step {steps}: {e!r}")
        steps += 1
    stop.set()
    for t in threads:
        t.join()
    if failures or min(runs) == 0:
        sys.exit(f"failures {failures}, runs {runs}")
    print(f"ok: {steps} steps, runs {runs}")


def change_threads(i):
    import adjoint as aj

    aj.set_num_threads(COUNTS[i % len(COUNTS)])
    time.sleep(0.0005)


def fork_and_check(check):
    """A step: forks a child that runs the check, changes the thread count and
    runs it again, while the parent's other threads keep running kernels."""
    import adjoint as aj

    def step(i):
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                ok = check()
                aj.set_num_threads(3)
                code = 0 if ok and check() else 4
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"forked child exit {os.waitstatus_to_exitcode(status)}")

    return step


if __name__ == "__main__":
    scenario = sys.argv[1]
    if scenario == "kernels":
        stress([exp_worker("float32"), exp_worker("float64"), exp_worker("float32")], change_threads)
    elif scenario == "gemms":
        stress([gemm_worker("float32"), gemm_worker("float64"), exp_worker("float64")], change_threads)
    elif scenario == "fork":
        import adjoint as aj

        aj.set_num_threads(2)
        stress([exp_worker("float32"), exp_worker("float64")], fork_and_check(exp_worker("float32")))
    elif scenario == "stats":
        stress(stats_workers(), change_threads)
    else:
        sys.exit(f"unknown scenario {scenario}")
