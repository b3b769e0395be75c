"""GEMMs split over adjoint's pool (runtime/blas.cc): OpenBLAS runs on one
thread, a split GEMM repeats its bits run after run, and every thread count
gives NumPy's product to rounding."""

import ctypes
import os

import numpy as np
import pytest
import scipy_openblas32
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj

RNG = np.random.default_rng(16)


def matmul_fn(shape_a, shape_b, dtype, transpose_a=False, transpose_b=False):
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", shape_a, dtype)
    b = bb.param("b", shape_b, dtype)
    return aj.build(bb.finish(aj.op.matmul(a.mT if transpose_a else a, b.mT if transpose_b else b)))["main"]


def run_with_threads(n, fn, *args):
    before = aj.blas_info()["num_threads"]
    aj.set_num_threads(n)
    try:
        return fn(*args)
    finally:
        aj.set_num_threads(before)


def test_openblas_runs_on_one_thread_whatever_the_pool_size():
    lib = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so"))
    before = aj.blas_info()["num_threads"]
    aj.set_num_threads(3)
    try:
        assert aj.blas_info()["num_threads"] == 3
        assert lib.scipy_openblas_get_num_threads() == 1
    finally:
        aj.set_num_threads(before)


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 300),
    n=st.integers(1, 300),
    k=st.integers(1, 200),
    dtype=st.sampled_from(["float32", "float64"]),
    transpose_a=st.booleans(),
    transpose_b=st.booleans(),
)
def test_split_gemm_repeats_its_bits_and_matches_numpy(m, n, k, dtype, transpose_a, transpose_b):
    a = RNG.standard_normal((k, m) if transpose_a else (m, k)).astype(dtype)
    b = RNG.standard_normal((n, k) if transpose_b else (k, n)).astype(dtype)
    fn = matmul_fn(a.shape, b.shape, dtype, transpose_a, transpose_b)
    want = (a.T if transpose_a else a).astype("float64") @ (b.T if transpose_b else b).astype("float64")
    tol = 1e-4 if dtype == "float32" else 1e-12
    for threads in (1, 2, 3):
        got = run_with_threads(threads, fn, a, b)
        np.testing.assert_array_equal(run_with_threads(threads, fn, a, b), got)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_big_split_gemm_and_batched_gemm_match_numpy(dtype):
    rtol, atol = (1e-4, 1e-3) if dtype == "float32" else (1e-12, 1e-10)
    a, b = RNG.standard_normal((256, 784)).astype(dtype), RNG.standard_normal((784, 1000)).astype(dtype)
    fn = matmul_fn(a.shape, b.shape, dtype)
    np.testing.assert_allclose(run_with_threads(2, fn, a, b), a.astype("float64") @ b, rtol=rtol, atol=atol)
    xa, xb = RNG.standard_normal((40, 64, 96)).astype(dtype), RNG.standard_normal((40, 96, 80)).astype(dtype)
    batched = matmul_fn(xa.shape, xb.shape, dtype)
    got = run_with_threads(2, batched, xa, xb)
    np.testing.assert_array_equal(got, run_with_threads(1, batched, xa, xb))
    np.testing.assert_allclose(got, xa @ xb, rtol=rtol, atol=atol)
