"""Elementwise fusion in the executor (docs/executor.md, "Fusion"): which ops
become one instruction, and that every fused result has the bits of the
same program run op by op (aj.build(mod, fuse=False))."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given

import adjoint as aj
from adjoint import transform as T
from programs import programs

MLP_SHAPES = [(784, 1024), (1024,), (1024, 1024), (1024,), (1024, 10), (10,)]


def rand(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_same_bits(got, want):
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert_same_bits(g, w)
            continue
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


def both(mod, *inputs, name="main"):
    """Runs `name` fused and unfused, checks the bits agree, returns the fused function and its result."""
    fused = aj.build(mod)[name]
    want = aj.build(mod, fuse=False)[name](*inputs)
    got = fused(*inputs)
    assert_same_bits(got, want)
    return fused, got


def adam_module(shapes, dtype, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam's update over params of `shapes`: (lr, step, p..., g..., m..., v...) -> (p', m', v')..."""
    bb = aj.FunctionBuilder("main")
    lr, t = bb.param("lr", (), dtype), bb.param("t", (), dtype)
    ps, gs, ms, vs = ([bb.param(f"{k}{i}", s, dtype) for i, s in enumerate(shapes)] for k in "pgmv")
    bc1 = 1.0 - aj.op.power(aj.Constant(np.array(b1, dtype)), t)
    bc2 = 1.0 - aj.op.power(aj.Constant(np.array(b2, dtype)), t)
    step, root_bc2 = lr / bc1, aj.op.sqrt(bc2)
    outs = []
    for p, g, m, v in zip(ps, gs, ms, vs):
        m1 = m * b1 + g * (1 - b1)
        v1 = v * b2 + aj.op.square(g) * (1 - b2)
        denom = aj.op.sqrt(v1) / root_bc2 + eps
        outs += [p - step * (m1 / denom), m1, v1]
    return bb.finish(tuple(outs))


def adam_inputs(shapes, dtype):
    arrays = [np.array(1e-3, dtype), np.array(3.0, dtype)]
    for k in range(4):
        arrays += [np.abs(rand(s, dtype, 10 * k + i)) if k == 3 else rand(s, dtype, 10 * k + i) for i, s in enumerate(shapes)]
    return arrays


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_adam_update_fuses_into_one_instruction_per_param(dtype, threads):
    shapes = [(784, 1024), (1024,), (1024, 10), (10,)] if dtype == "float32" else [(64, 33), (33,), (5,)]
    mod = adam_module(shapes, dtype)
    before = aj.blas_info()["num_threads"]
    aj.set_num_threads(threads)
    try:
        fn, _ = both(mod, *adam_inputs(shapes, dtype))
    finally:
        aj.set_num_threads(before)
    # Per param: 13 ops in one group; the scalar ops (bias corrections, the
    # step size) make two more groups that the params read as scalars.
    assert fn.num_fused_groups == len(shapes) + 2
    assert fn.num_instructions == len(shapes) + 2
    assert fn.num_fused_ops == 13 * len(shapes) + 6


def test_unfused_build_keeps_one_instruction_per_op():
    mod = adam_module([(3, 4)], "float64")
    fn = aj.build(mod, fuse=False)["main"]
    assert fn.num_fused_groups == fn.num_fused_ops == 0
    assert fn.num_instructions == len(mod["main"].bindings)


@given(programs())
def test_random_programs_give_the_same_bits_fused_and_unfused(prog):
    both(prog.mod, *prog.inputs)


@given(programs())
def test_random_gradients_give_the_same_bits_fused_and_unfused(prog):
    both(T.Gradient()(prog.mod), *prog.inputs, name="main_adjoint")


def test_a_member_read_after_the_group_is_written_out():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (5, 6), "float64")
    a = aj.op.exp(x)
    b = aj.op.tanh(a * 2.0) + 1.0
    s = aj.op.sum(a)  # reads a after the group ran
    mod = bb.finish((b, s))
    fn, (got_b, got_s) = both(mod, rand((5, 6)))
    assert fn.num_fused_groups == 1 and fn.num_fused_ops == 4
    np.testing.assert_allclose(got_s, np.exp(rand((5, 6))).sum(), rtol=1e-12)


def test_a_reader_between_members_closes_the_group():
    # s reads a before sin(a) would join a's group: a's group cannot move
    # past s, so sin(a) starts a new group (which cos(x) and the add join
    # through the add); the last multiply broadcasts s along a leading dim.
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (5, 6), "float64")
    a = aj.op.exp(x) * 3.0
    s = aj.op.sum(a, axis=[1], keepdims=True)
    c = aj.op.sin(a) + aj.op.cos(x)
    mod = bb.finish(c * s)
    fn, _ = both(mod, rand((5, 6)))
    assert fn.num_fused_groups == 2 and fn.num_fused_ops == 5
    assert fn.num_instructions == 4


def test_returned_intermediates_are_written_out():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (7,), "float32")
    h = aj.op.sigmoid(x)
    k = aj.op.square(h) - h
    mod = bb.finish((aj.op.abs(k), h, k))
    fn, (out, got_h, got_k) = both(mod, rand(7, "float32"))
    assert fn.num_instructions == 1 and fn.num_fused_ops == 4
    np.testing.assert_array_equal(out, np.abs(got_k))


@pytest.mark.parametrize("scalar_shape", [(), (1,), (1, 1)])
def test_scalar_operands_broadcast_over_the_block(scalar_shape):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (300, 7), "float64")
    c = bb.param("c", scalar_shape, "float64")
    mod = bb.finish(aj.op.maximum(c - x * c, c / c))
    fn, got = both(mod, rand((300, 7)), np.full(scalar_shape, 0.75))
    assert fn.num_instructions == 2  # c / c has c's shape: its own instruction
    assert fn.num_fused_ops == 3
    np.testing.assert_allclose(got, np.maximum(0.75 - rand((300, 7)) * 0.75, 1.0), rtol=1e-15)


@pytest.mark.parametrize("bias_shape", [(2053,), (1, 2053), (3, 2053)])
def test_trailing_dims_broadcast_is_gathered_per_block(bias_shape):
    # 2053 is prime: the bias's period never lines up with a block.
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (5, 3, 2053), "float32")
    b = bb.param("b", bias_shape, "float32")
    mod = bb.finish(aj.op.relu(x * 2.0 + b) - b)
    fn, got = both(mod, rand((5, 3, 2053), "float32"), rand(bias_shape, "float32", 1))
    assert fn.num_instructions == 1


def test_a_leading_dims_broadcast_is_not_fused():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (6, 5), "float64")
    col = bb.param("col", (6, 1), "float64")
    mod = bb.finish(aj.op.exp(x + col) * 2.0)
    fn, _ = both(mod, rand((6, 5)), rand((6, 1)))
    assert fn.num_fused_ops == 2  # exp and multiply; the add broadcasts along a leading dim
    assert fn.num_instructions == 2


def test_a_fused_group_writes_over_a_dying_input():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (256, 256), "float64")
    h = x @ x  # an executor buffer that dies in the group
    mod = bb.finish(aj.op.tanh(h * 0.5) + h)
    fn, _ = both(mod, rand((256, 256)) / 16)
    one = 256 * 256 * 8
    assert fn.num_instructions == 2
    assert fn.peak_bytes == one


@pytest.mark.parametrize("n", [0, 1, 5, 3000])
def test_symbolic_and_zero_size_shapes(n):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("n", 4), "float32")
    y = bb.param("y", ("n", 4), "float32")
    mod = bb.finish((aj.op.exp(x) * y + 1.0, aj.op.sqrt(aj.op.abs(y))))
    fn, (a, b) = both(mod, rand((n, 4), "float32"), rand((n, 4), "float32", 1))
    assert fn.num_instructions == fn.num_fused_groups == 2  # two chains, one group each
    assert a.shape == b.shape == (n, 4)


def test_int_and_bool_ops_fuse():
    bb = aj.FunctionBuilder("main")
    i = bb.param("i", (50,), "int32")
    j = bb.param("j", (50,), "int32")
    q = aj.op.floor_divide(i * 3 - j, j) + aj.op.floor_mod(i, j)
    big = aj.op.greater(aj.op.abs(q), aj.op.negative(j))
    both_true = aj.op.multiply(big, aj.op.less(i, j))  # bool and
    f = aj.op.astype(q, "float64") / 7.0
    mod = bb.finish((aj.op.where(both_true, f, -f), aj.op.astype(both_true, "int64") + 1))
    ints = np.random.default_rng(0).integers(-1000, 1000, (2, 50)).astype(np.int32)
    ints[1, :5] = 0
    fn, _ = both(mod, ints[0], ints[1])
    assert fn.num_instructions == 1


def test_relu_vjp_is_one_instruction_with_no_zeroed_buffer():
    # where(x > 0, g, zeros_like(g)): the zeros are filled block by block in
    # the group, never written out as a tensor.
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (256, 1024), "float32")
    g = bb.param("g", (256, 1024), "float32")
    mod = bb.finish(aj.op.where(aj.op.greater(x, 0.0), g, aj.op.zeros_like(g)))
    xs, gs = rand((256, 1024), "float32"), rand((256, 1024), "float32", 1)
    fn, got = both(mod, xs, gs)
    assert fn.num_instructions == 1 and fn.num_fused_ops == 3
    assert fn.peak_bytes == 256 * 1024 * 4  # the result only
    np.testing.assert_array_equal(got, np.where(xs > 0, gs, np.float32(0)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("fill", ["zeros_like", "ones_like"])
def test_zeros_like_and_ones_like_fuse_in_every_dtype(fill, dtype):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (40, 3), "float64")
    filled = getattr(aj.op, fill)(x, dtype=dtype)
    mod = bb.finish(aj.op.where(aj.op.less(x, 0.0), aj.op.astype(x, dtype), filled))
    xs = rand((40, 3))
    fn, got = both(mod, xs)
    assert fn.num_instructions == 1 and fn.num_fused_ops == 4
    np.testing.assert_array_equal(got, np.where(xs < 0, xs.astype(dtype), np.full((40, 3), fill == "ones_like", dtype)))


@pytest.mark.parametrize("scalars", [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)])
def test_where_broadcasts_a_scalar_in_any_position(scalars):
    bb = aj.FunctionBuilder("main")
    shapes = [() if k in scalars else (300, 7) for k in range(3)]
    x = bb.param("x", (300, 7), "float64")
    c, a, b = (bb.param(n, s, "float64") for n, s in zip("cab", shapes))
    mod = bb.finish(aj.op.where(aj.op.greater(c, x), a, b) - x)
    values = [rand(s, seed=k + 1) for k, s in enumerate(shapes)]
    xs = rand((300, 7))
    fn, got = both(mod, xs, *values)
    assert fn.num_instructions == 1
    np.testing.assert_array_equal(got, np.where(values[0] > xs, values[1], values[2]) - xs)


def test_a_chain_of_a_thousand_ops_is_one_instruction():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3000,), "float64")
    h = x
    for k in range(250):
        h = aj.op.tanh(h * 1.01 + x) - 0.001 * k
    mod = bb.finish(h)
    fn, _ = both(mod, rand(3000))
    assert fn.num_instructions == 1 and fn.num_fused_ops == 1000


@pytest.mark.parametrize("chain_first", [True, False], ids=["y + tanh(x)", "tanh(x) + y"])
def test_a_group_merged_into_a_long_one_at_every_add_stays_one_group(chain_first):
    # each add reads the chain's group and its tanh's group of one, in
    # either order: they merge, and the chain ends as one group
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (5,), "float64")
    y = x
    for k in range(1000):
        t = aj.op.tanh(x * (1.0 + k / 1000))
        y = y + t if chain_first else t + y
    fn, _ = both(bb.finish(y), rand(5))
    assert (fn.num_instructions, fn.num_fused_groups, fn.num_fused_ops) == (1, 1, 3000)


@pytest.mark.parametrize("build", [aj.build, aj.runtime.Executable])
def test_fuse_must_be_a_bool(build):
    mod = adam_module([(2,)], "float64")
    with pytest.raises(aj.Error, match="fuse must be True or False, got str"):
        build(mod, fuse="yes")
    # regression: aj.build refused NumPy's bool ("fuse must be True or False,
    # got bool"), and aj.runtime.Executable(mod, "yes") raised pybind11's TypeError
    assert build(mod, fuse=np.False_)["main"].num_fused_groups == 0


def wide_sum(n: int, width: int) -> aj.Module:
    """sum_k tanh(x * c_k): every tanh is computed before the adds, so one
    fused group holds `width` results live at once."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (n,), "float64")
    terms = [aj.op.tanh(x * (1.0 + k / width)) for k in range(width)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return bb.finish(total)


def test_a_wide_group_runs_in_shorter_blocks_with_the_same_bits():
    fn, got = both(wide_sum(10_000, 2000), rand(10_000))
    assert (fn.num_fused_groups, fn.num_fused_ops) == (1, 5999)
    x = rand(10_000)
    np.testing.assert_allclose(got, sum(np.tanh(x * (1.0 + k / 2000)) for k in range(2000)), rtol=1e-12)


PEAK_OF_A_WIDE_RUN = """
import resource
from test_executor_fusion import rand, wide_sum
import adjoint as aj
fn = aj.build(wide_sum(1 << 16, 2000))["main"]
x = rand(1 << 16)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fn(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_wide_group_keeps_its_scratch_small():
    # 2000 live results took a 32 KB scratch block each, per thread, kept
    # after the run: 126 MB more peak memory on 2 threads, 250 MB on 4. Blocks shrink so
    # the group's scratch fits 1 MB a thread.
    done = subprocess.run([sys.executable, "-c", PEAK_OF_A_WIDE_RUN], capture_output=True, text=True,
                          cwd=os.path.dirname(__file__), env={**os.environ, "OPENBLAS_NUM_THREADS": "4"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 24, f"the run raised peak memory by {done.stdout.strip()} MB"
