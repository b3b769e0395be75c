"""The executor: input validation naming the param, symbolic dims bound from
inputs, zero-copy inputs and outputs, transposes folded into GEMM flags,
and matmul with NumPy semantics (1-D, batched, broadcast) through BLAS."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from conftest import build_op, run_op

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float64"):
    return RNG.standard_normal(shape).astype(dtype)


def matmul_module(shape_a, shape_b, dtype="float64", transpose_b=False, transpose_a=False):
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", shape_a, dtype)
    b = bb.param("b", shape_b, dtype)
    if transpose_a:
        a = a.mT
    if transpose_b:
        b = b.mT
    return bb.finish(a @ b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "sa,sb",
    [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
     ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((7, 1, 4), (1, 4, 2)), ((0, 4), (4, 5)),
     ((3, 0), (0, 5)), ((2, 0, 3), (3, 4))],
)
def test_matmul_matches_numpy(dtype, sa, sb):
    a, b = rand(*sa, dtype=dtype), rand(*sb, dtype=dtype)
    got = run_op("matmul", a, b)
    want = a @ b
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_matmul(dtype):
    a = RNG.integers(-5, 5, (2, 3, 4)).astype(dtype)
    b = RNG.integers(-5, 5, (4, 2)).astype(dtype)
    np.testing.assert_array_equal(run_op("matmul", a, b), a @ b)


def test_matmul_out_dtype():
    a, b = rand(3, 4, dtype="float32"), rand(4, 2, dtype="float32")
    got = run_op("matmul", a, b, out_dtype="float64")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_transposed_operands_fold_into_gemm_flags(ta, tb, batch):
    sa = batch + ((4, 5) if ta else (5, 4))
    sb = batch + ((6, 4) if tb else (4, 6))
    mod = matmul_module(sa, sb, transpose_a=ta, transpose_b=tb)
    fn = aj.build(mod)["main"]
    a, b = rand(*sa), rand(*sb)
    got = fn(a, b)
    want = (np.swapaxes(a, -1, -2) if ta else a) @ (np.swapaxes(b, -1, -2) if tb else b)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert fn.num_folded_transposes == int(ta) + int(tb)
    assert fn.num_instructions == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("batch,m,k,n", [((), 3000, 700, 1), ((), 1, 700, 3000), ((), 1, 9, 1), ((), 5, 0, 1),
                                         ((), 1, 0, 5), ((5,), 300, 70, 1), ((5,), 1, 70, 300), ((2, 3), 1, 9, 1)])
def test_matrix_vector_products_match_numpy(dtype, ta, tb, batch, m, k, n):
    # a result of one column or one row runs as GEMV (a GEMM packs a whole
    # operand first): every transpose, large enough to be split into panels,
    # and batched (one GEMV per matrix)
    sa, sb = batch + ((k, m) if ta else (m, k)), batch + ((n, k) if tb else (k, n))
    a, b = rand(*sa, dtype=dtype), rand(*sb, dtype=dtype)
    fn = aj.build(matmul_module(sa, sb, dtype=dtype, transpose_a=ta, transpose_b=tb))["main"]
    want = (np.swapaxes(a, -1, -2) if ta else a) @ (np.swapaxes(b, -1, -2) if tb else b)
    np.testing.assert_allclose(fn(a, b), want, rtol=1e-4 if dtype == "float32" else 1e-11, atol=1e-4)


def test_transpose_used_elsewhere_is_materialized():
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", (3, 4), "float64")
    t = a.T
    mod = bb.finish((t @ a, t))
    fn = aj.build(mod)["main"]
    x = rand(3, 4)
    prod, tt = fn(x)
    np.testing.assert_allclose(prod, x.T @ x, rtol=1e-12)
    np.testing.assert_array_equal(tt, x.T)
    assert fn.num_folded_transposes == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.lists(st.integers(1, 3), max_size=2),
       st.booleans(), st.booleans())
def test_matmul_property(m, k, n, batch, ta, tb):
    batch = tuple(batch)
    sa = batch + ((k, m) if ta else (m, k))
    sb = batch + ((n, k) if tb else (k, n))
    a, b = rand(*sa), rand(*sb)
    got = aj.build(matmul_module(sa, sb, transpose_a=ta, transpose_b=tb))["main"](a, b)
    want = (np.swapaxes(a, -1, -2) if ta else a) @ (np.swapaxes(b, -1, -2) if tb else b)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---- input validation ----

def symbolic_module():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", "k"), "float64")
    w = bb.param("w", ("k", 3), "float64")
    return bb.finish(x @ w)


def test_symbolic_dims_run_at_two_sizes():
    fn = aj.build(symbolic_module())["main"]
    for n, k in [(2, 5), (7, 1)]:
        x, w = rand(n, k), rand(k, 3)
        np.testing.assert_allclose(fn(x, w), x @ w, rtol=1e-12)


def test_wrong_input_count():
    fn = aj.build(symbolic_module())["main"]
    with pytest.raises(aj.ExecutionError, match=r"function 'main' is missing 'w' \(#1\); its signature: main\(x: \(n, k\) float64, w: \(k, 3\) float64\) -> \(n, 3\) float64$"):
        fn(rand(2, 2))


def test_wrong_dtype_names_the_param():
    fn = aj.build(symbolic_module())["main"]
    with pytest.raises(aj.ExecutionError, match=r"param 'w' \(#1\): expected dtype float64, got float32"):
        fn(rand(2, 2), rand(2, 3, dtype="float32"))


def test_wrong_rank_and_dim_name_the_param():
    fn = aj.build(symbolic_module())["main"]
    with pytest.raises(aj.ExecutionError, match=r"param 'x' \(#0\): expected rank 2"):
        fn(rand(2), rand(2, 3))
    with pytest.raises(aj.ExecutionError, match=r"param 'w' \(#1\): dim 1 must be 3, got 4"):
        fn(rand(2, 2), rand(2, 4))


def test_inconsistent_symbol_names_both_sizes():
    fn = aj.build(symbolic_module())["main"]
    with pytest.raises(aj.ExecutionError, match=r"param 'w'.*symbol 'k' = 5 \(from param 'x' dim 1\), but here it is 4"):
        fn(rand(2, 5), rand(4, 3))


def test_polynomial_dims_are_checked():
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", ("n",), "float64")
    b = bb.param("b", ("m",), "float64")
    c = bb.param("c", ("m + n",), "float64")
    mod = bb.finish(aj.op.concat([aj.op.concat([a, b]), c]))
    fn = aj.build(mod)["main"]
    with pytest.raises(aj.ExecutionError, match=r"param 'c'.*m \+ n = 5, got 4"):
        fn(rand(2), rand(3), rand(4))


def linear_dims_module():
    # no param has k alone: w binds it as 2*k + 1, and v must agree
    return aj.parse('''
@function
def main(w: Tensor(("2*k + 1",), "float64"), v: Tensor(("3*k",), "float64")) -> Tensor(("k",), "float64"):
    z: Tensor(("k",), "float64") = zeros(("k",), "float64")
    s: Tensor((), "float64") = sum(w)
    y: Tensor(("k",), "float64") = add(z, s)
    return y
''')


def test_a_symbol_no_param_binds_alone_is_solved_from_a_linear_dim():
    fn = aj.build(linear_dims_module())["main"]
    for k in [0, 1, 4]:
        w = rand(2 * k + 1)
        got = fn(w, rand(3 * k))
        assert got.shape == (k,)
        np.testing.assert_allclose(got, np.full(k, w.sum()), rtol=1e-12)


@pytest.mark.parametrize("w, v, message", [
    (6, 9, r"function 'main', param 'w' \(#0\): dim 0 is 2\*k \+ 1, got 6: no whole k >= 0 gives it"),
    (0, 0, r"function 'main', param 'w' \(#0\): dim 0 is 2\*k \+ 1, got 0: no whole k >= 0 gives it"),
    (7, 8, r"function 'main', param 'v' \(#1\): dim 0 is 3\*k = 9, got 8"),
])
def test_a_linear_dim_that_gives_no_whole_symbol_or_disagrees_names_the_param(w, v, message):
    fn = aj.build(linear_dims_module())["main"]
    with pytest.raises(aj.ExecutionError, match=message):
        fn(rand(w), rand(v))


def test_a_symbol_a_param_binds_alone_is_taken_from_it():
    # x binds k alone (the first binding wins), so w's 2*k is checked against it
    bb = aj.FunctionBuilder("main")
    w = bb.param("w", ("2*k",), "float64")
    x = bb.param("x", ("k",), "float64")
    fn = aj.build(bb.finish(aj.op.concat([w, x])))["main"]
    np.testing.assert_allclose(fn(np.ones(4), np.zeros(2)), [1, 1, 1, 1, 0, 0])
    with pytest.raises(aj.ExecutionError, match=r"param 'w' \(#0\): dim 0 is 2\*k = 6, got 4"):
        fn(np.ones(4), np.zeros(3))


def module_of_dims(*dims: str) -> aj.Module:
    params = ", ".join(f'p{i}: Tensor(("{d}",), "float64")' for i, d in enumerate(dims))
    return aj.parse(f"@function\ndef main({params}):\n    s = sum(p0)\n    return s\n")


@pytest.mark.parametrize("dims, sizes", [
    (["k**2"], [9]), (["k**2"], [0]), (["k**2 + k - 3"], [3]), (["k**2"], [10**6]),
    (["k*n + 1", "n"], [7, 3]),  # n bound first, then k from 3*k + 1
    (["k**3", "k**2 + 1"], [8, 5]),
])
def test_a_symbol_is_solved_from_a_dim_that_grows_with_it_alone(dims, sizes):
    # it was an ExecutionError: a dim k**2 bound nothing (found through LiftTransformParams, by the passes fuzzer)
    assert aj.build(module_of_dims(*dims))["main"](*[np.ones(n) for n in sizes]) == sizes[0]


@pytest.mark.parametrize("dims, sizes, message", [
    (["k**2"], [8], r"param 'p0' \(#0\): dim 0 is k\*\*2, got 8: no whole k >= 0 gives it"),
    (["3037000500*k**2"], [9], r"dim 0 is 3037000500\*k\*\*2, got 9: no whole k >= 0 gives it"),
    (["k**2", "k"], [9, 4], r"param 'p0' \(#0\): dim 0 is k\*\*2 = 16, got 9"),  # k alone binds first
    (["k**2 - 2*k"], [3], r"dim 0 \(k\*\*2 - 2\*k\) uses a symbol that no param binds"),  # does not grow
    (["k*n + 1", "n"], [1, 0], r"dim 0 \(k\*n \+ 1\) uses a symbol that no param binds"),  # n = 0: no growth
])
def test_a_dim_that_gives_no_whole_symbol_or_does_not_grow_names_the_param(dims, sizes, message):
    with pytest.raises(aj.ExecutionError, match=message):
        aj.build(module_of_dims(*dims))["main"](*[np.ones(n) for n in sizes])


def test_a_dim_of_two_symbols_binds_neither():
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", ("m + n",), "float64")
    fn = aj.build(bb.finish(aj.op.exp(a)))["main"]
    with pytest.raises(aj.ExecutionError, match=r"param 'a' \(#0\): dim 0 \(m \+ n\) uses a symbol that no param"):
        fn(rand(3))


def test_non_contiguous_read_only_and_lists_are_accepted():
    fn = aj.build(matmul_module((3, 4), (4, 2)))["main"]
    a = rand(4, 3).T  # non-contiguous view
    b = rand(4, 2)
    b.flags.writeable = False
    np.testing.assert_allclose(fn(a, b), a @ b, rtol=1e-12)
    np.testing.assert_allclose(fn(a.tolist(), b.tolist()), a @ b, rtol=1e-12)
    big_endian = b.astype(">f8")
    np.testing.assert_allclose(fn(a, big_endian), a @ b, rtol=1e-12)


def test_inputs_off_the_in_place_path_compute_the_same():
    """Only exact-dtype, C-contiguous, aligned arrays are read in place; an
    unaligned array, a dtype equal to the param's but not NumPy's builtin
    object, and an ndarray subclass take the checked path and give the same."""
    fn = aj.build(matmul_module((3, 4), (4, 2)))["main"]
    a, b = rand(3, 4), rand(4, 2)
    unaligned = np.frombuffer(bytearray(a.nbytes + 1), dtype=np.float64, offset=1, count=a.size).reshape(3, 4)
    unaligned[...] = a
    assert not unaligned.flags.aligned
    with_metadata = b.astype(np.dtype("f8", metadata={"unit": "m"}))
    assert with_metadata.dtype is not np.dtype("float64")

    class Sub(np.ndarray):
        pass

    for x, y in [(unaligned, b), (a, with_metadata), (a.view(Sub), b.view(Sub))]:
        np.testing.assert_allclose(fn(x, y), a @ b, rtol=1e-12)


def test_unconvertible_input_names_the_param():
    fn = aj.build(matmul_module((3, 4), (4, 2)))["main"]
    with pytest.raises(aj.ExecutionError, match="param 'b'"):
        fn(rand(3, 4), object())


def test_nan_and_inf_are_computed():
    fn = aj.build(matmul_module((2, 2), (2, 2)))["main"]
    a = np.array([[np.nan, 1.0], [np.inf, 0.0]])
    got = fn(a, np.eye(2))
    assert np.isnan(got[0, 0]) and np.isinf(got[1, 0])


# ---- outputs and memory ----

def test_outputs_are_handed_over_without_copy_and_own_their_memory():
    fn = aj.build(matmul_module((64, 64), (64, 64)))["main"]
    a, b = rand(64, 64), rand(64, 64)
    r1 = fn(a, b)
    r2 = fn(a, b)
    assert r1.base is not None and not r1.flags.owndata  # a view of the executor's buffer
    assert not np.shares_memory(r1, r2)
    r1[:] = 0  # writable, and does not disturb later runs
    np.testing.assert_allclose(fn(a, b), a @ b, rtol=1e-12)


def test_returning_params_and_constants_copies_them():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float64")
    c = bb.emit(aj.Constant(np.array([1.0, 2.0])), "c")
    mod = bb.finish((x, c, x))
    x0 = np.array([5.0, 6.0])
    got = aj.build(mod)["main"](x0)
    assert isinstance(got, tuple) and len(got) == 3
    assert not np.shares_memory(got[0], x0) and not np.shares_memory(got[0], got[2])
    got[1][:] = -1
    np.testing.assert_array_equal(aj.build(mod)["main"](x0)[1], [1.0, 2.0])


def test_tuple_results_and_items():
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", (2, 3), "float64")
    b = bb.param("b", (3, 2), "float64")
    t = bb.emit(aj.Tuple([a, b]))
    mod = bb.finish((t[0] @ t[1], (t[1],)))
    x, y = rand(2, 3), rand(3, 2)
    prod, (yy,) = aj.build(mod)["main"](x, y)
    np.testing.assert_allclose(prod, x @ y, rtol=1e-12)
    np.testing.assert_array_equal(yy, y)


def test_buffers_are_reused_by_liveness():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (128, 128), "float64")
    h = x
    for _ in range(8):
        h = h @ x
    fn = aj.build(bb.finish(h))["main"]
    x0 = rand(128, 128) / 16
    fn(x0)
    one = 128 * 128 * 8
    assert fn.peak_bytes <= 2 * one  # the live set: the current value and its successor


def test_gil_is_released_so_threads_overlap():
    fn = aj.build(matmul_module((300, 300), (300, 300)))["main"]
    a, b = rand(300, 300), rand(300, 300)
    results = []

    def work():
        results.append(fn(a, b))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for r in results:
        np.testing.assert_array_equal(r, results[0])
        # NumPy's BLAS splits the sum differently: last-bit differences, absolute near zero.
        np.testing.assert_allclose(r, a @ b, rtol=1e-12, atol=1e-12)


def test_build_errors():
    with pytest.raises(aj.Error, match="aj.Module"):
        aj.build("nope")  # type: ignore[arg-type]
    exe = aj.build(matmul_module((2, 2), (2, 2)))
    assert "main" in exe and "other" not in exe
    with pytest.raises(aj.FunctionNotFoundError):
        exe["other"]


def test_set_num_threads():
    before = aj._core.get_num_threads()
    aj.set_num_threads(1)
    assert aj._core.get_num_threads() == 1
    np.testing.assert_allclose(run_op("matmul", rand(50, 50), rand(50, 50)).shape, (50, 50))
    aj.set_num_threads(before)
    with pytest.raises(aj.Error):
        aj.set_num_threads(0)


def test_build_op_helper_builds_one_binding():
    mod = build_op("matmul", rand(2, 3), rand(3, 4))
    assert len(mod["main"].bindings) == 1


def test_rank0_params_and_constants_keep_rank_zero():
    bb = aj.FunctionBuilder("main")
    s = bb.param("s", (), "float64")
    x = bb.param("x", (3,), "float64")
    c = bb.emit(aj.Constant(np.float64(2.0)), "c")
    assert c.type.shape == ()
    mod = bb.finish(aj.op.matmul(x, x * s * c))
    got = aj.build(mod)["main"](np.float64(3.0), np.arange(3.0))
    assert np.shape(got) == ()
    np.testing.assert_allclose(got, 6.0 * (np.arange(3.0) ** 2).sum())
    got = aj.build(mod)["main"](3.0, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(got, 30.0)


def test_threaded_kernels_work_in_a_forked_child():
    import os

    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (1 << 17,), "float32")
    fn = aj.build(bb.finish(aj.op.exp(x)))["main"]
    zeros = np.zeros(1 << 17, np.float32)
    np.testing.assert_array_equal(fn(zeros), 1.0)  # the pool now exists in this process
    pid = os.fork()
    if pid == 0:
        os._exit(0 if np.array_equal(fn(zeros), np.ones(1 << 17, np.float32)) else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_results_are_the_same_with_one_thread():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (300, 400), "float64")
    b = bb.param("b", (400,), "float64")
    fn = aj.build(bb.finish(aj.op.tanh(x + b) * x))["main"]
    xs, bs = rand(300, 400), rand(400)
    many = fn(xs, bs)
    before = aj._core.get_num_threads()
    aj.set_num_threads(1)
    try:
        one = fn(xs, bs)
    finally:
        aj.set_num_threads(before)
    np.testing.assert_array_equal(many, one)


def test_elementwise_ops_write_over_dying_inputs():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (256, 256), "float64")
    b = bb.param("b", (256,), "float64")
    h = x @ x                  # an executor buffer
    h2 = aj.op.add(h, h)       # both operands the dying h
    h3 = aj.op.tanh(h2 + b)    # broadcast add, then unary, each in place
    keep = aj.op.exp(h3)       # h3 dies here but is also returned: no in-place over a result
    fn = aj.build(bb.finish((keep, h3)))["main"]
    xs, bs = rand(256, 256) / 16, rand(256)
    got_keep, got_h3 = fn(xs, bs)
    want_h3 = np.tanh(2 * (xs @ xs) + bs)
    np.testing.assert_allclose(got_h3, want_h3, rtol=1e-12)
    np.testing.assert_allclose(got_keep, np.exp(want_h3), rtol=1e-12)
    assert fn.peak_bytes <= 3 * 256 * 256 * 8  # h, then at most two more live buffers


def test_reshape_of_a_dying_value_reuses_its_buffer():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (64, 64), "float64")
    h = x @ x
    r = aj.op.reshape(h, (4096,))      # h dies here: r is h's buffer
    kept = aj.op.reshape(x @ x, (64, 64, 1))
    s = aj.op.add(aj.op.reshape(kept, (4096,)), r)
    fn = aj.build(bb.finish((s, kept)))["main"]
    xs = rand(64, 64)
    got_s, got_kept = fn(xs)
    np.testing.assert_allclose(got_s, 2 * (xs @ xs).reshape(-1), rtol=1e-12)
    np.testing.assert_allclose(got_kept, (xs @ xs).reshape(64, 64, 1), rtol=1e-12)
    assert not np.shares_memory(got_s, got_kept)



def test_a_kernel_refusing_its_data_names_the_function_and_binding():
    # regression: the message named the op alone ("op 'take': index 5 is out
    # of range ..."), which does not say which take of a large step failed
    fn = aj.build(aj.parse('''
@function
def main(x: Tensor((3,), "float32"), i: Tensor((1,), "int64"), j: Tensor((1,), "int64")) -> Tensor((1,), "float32"):
    first: Tensor((1,), "float32") = take(x, i)
    second: Tensor((1,), "float32") = take(x, j)
    y: Tensor((1,), "float32") = add(first, second)
    return y
'''))["main"]
    x = np.zeros(3, np.float32)
    with pytest.raises(aj.ExecutionError) as info:
        fn(x, np.array([1]), np.array([5]))
    assert str(info.value) == ("function 'main', binding 'second': op 'take': index 5 is out of range for axis 0 "
                               "(size 3) of x (3,)")
    with pytest.raises(aj.ExecutionError, match="^function 'main', binding 'first': op 'take': index -4 is out"):
        fn(x, np.array([-4]), np.array([0]))
