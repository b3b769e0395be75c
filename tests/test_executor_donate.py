"""Donated inputs (exe["f"].donating({param: output})): SGD- and Adam-like
update steps in the text format compute with donation exactly what they do
without it, return the donated arrays themselves and allocate nothing for
params and state in steady state; a run that raises (a bad label, a shape
that does not evaluate, out of memory) leaves every donated array
bit-identical; every bad argument or pair is an aj.ExecutionError naming
it; and random programs' adjoints compute the same with every type-matching
param donated."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, note

import adjoint as aj
from programs import programs

SHAPES = [(3, 4), (4,), (4, 2), ()]
STEPS = 50


def tensor(shape, dtype: str) -> str:
    dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape)
    return f'Tensor(({dims}{"," if len(shape) == 1 else ""}), "{dtype}")'


def step_text(params: list[tuple[str, tuple]], body: list[str], outputs: list[tuple[str, tuple]], dtype: str,
              int_params: tuple = ()) -> str:
    """A function `step` of these params (name, shape), bindings and results,
    all of `dtype` but the int64 `int_params`."""
    args = ", ".join(f"{name}: {tensor(shape, 'int64' if name in int_params else dtype)}" for name, shape in params)
    ret = ", ".join(tensor(shape, dtype) for _, shape in outputs)
    lines = "".join(f"    {line}\n" for line in body)
    return (f"@function\ndef step({args}) -> Tuple({ret}):\n{lines}"
            f"    return ({', '.join(name for name, _ in outputs)})\n")


def sgd_step(dtype: str) -> aj.Module:
    """step(w..., g..., buf..., lr) -> (loss, new w..., new buf...): SGD with
    momentum 0.9 as torch.optim.SGD; loss = sum(g0 * g0), computed first."""
    k = len(SHAPES)
    params = [(f"{p}{i}", s) for p in "wgb" for i, s in enumerate(SHAPES)] + [("lr", ())]
    body = ["gg = multiply(g0, g0)", "loss = sum(gg)"]
    for i in range(k):
        body += [f'mb{i} = multiply(b{i}, const(0.9, "{dtype}"))', f"nb{i} = add(mb{i}, g{i})",
                 f"s{i} = multiply(lr, nb{i})", f"nw{i} = subtract(w{i}, s{i})"]
    outputs = [("loss", ())] + [(f"nw{i}", s) for i, s in enumerate(SHAPES)] + [(f"nb{i}", s) for i, s in enumerate(SHAPES)]
    return aj.parse(step_text(params, body, outputs, dtype))


def adam_step(dtype: str) -> aj.Module:
    """step(w..., g..., m..., v..., lr, t) -> (new w..., new m..., new v...):
    Adam with bias correction by the run-time step count t."""
    c = lambda v: f'const({v}, "{dtype}")'  # noqa: E731
    params = [(f"{p}{i}", s) for p in "wgmv" for i, s in enumerate(SHAPES)] + [("lr", ()), ("t", ())]
    body = [f"p1 = power({c(0.9)}, t)", f"c1 = subtract({c(1.0)}, p1)",
            f"p2 = power({c(0.999)}, t)", f"c2 = subtract({c(1.0)}, p2)"]
    for i in range(len(SHAPES)):
        body += [f"am{i} = multiply(m{i}, {c(0.9)})", f"bg{i} = multiply(g{i}, {c(0.1)})", f"nm{i} = add(am{i}, bg{i})",
                 f"av{i} = multiply(v{i}, {c(0.999)})", f"gg{i} = multiply(g{i}, g{i})",
                 f"bv{i} = multiply(gg{i}, {c(0.001)})", f"nv{i} = add(av{i}, bv{i})",
                 f"mh{i} = divide(nm{i}, c1)", f"vh{i} = divide(nv{i}, c2)", f"r{i} = sqrt(vh{i})",
                 f"d{i} = add(r{i}, {c(1e-8)})", f"q{i} = divide(mh{i}, d{i})", f"u{i} = multiply(lr, q{i})",
                 f"nw{i} = subtract(w{i}, u{i})"]
    outputs = [(f"{p}{i}", s) for p in ("nw", "nm", "nv") for i, s in enumerate(SHAPES)]
    return aj.parse(step_text(params, body, outputs, dtype))


def run_sgd(fn, donated: bool, dtype: str):
    """50 steps; returns the losses, the final params and buffers, and
    whether each step returned the donated arrays themselves."""
    rng = np.random.default_rng(0)
    k = len(SHAPES)
    ws = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    bufs = [np.zeros(s, dtype) for s in SHAPES]
    lr = np.array(0.05, dtype)
    losses, same = [], []
    for _ in range(STEPS):
        gs = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        out = fn(*ws, *gs, *bufs, lr)
        losses.append(out[0])
        same.append(all(n is o for n, o in zip(out[1:], ws + bufs)))
        ws, bufs = list(out[1:1 + k]), list(out[1 + k:])
    return losses, ws + bufs, same


def run_adam(fn, dtype: str):
    rng = np.random.default_rng(1)
    k = len(SHAPES)
    state = [rng.standard_normal(s).astype(dtype) for s in SHAPES] + [np.zeros(s, dtype) for s in SHAPES * 2]
    same = []
    for t in range(1, STEPS + 1):
        gs = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        out = fn(*state[:k], *gs, *state[k:], np.array(1e-3, dtype), np.array(t, dtype))
        same.append(all(n is o for n, o in zip(out, state)))
        state = list(out)
    return state, same


def all_donated(fn, first_output: int) -> dict:
    """Every param but the grads (and scalars past the state) donated to its new value, in order."""
    names = [p.name for p in fn.signature.params]
    state = [n for n in names if n[0] in "wbmv"]
    return {n: first_output + i for i, n in enumerate(state)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sgd_step_with_donation_computes_exactly_what_it_does_without(dtype):
    exe = aj.build(sgd_step(dtype))
    donating = exe["step"].donating(all_donated(exe["step"], 1))
    assert all(d.direct for d in donating.donations)  # the updates are the last ops: written in place
    want_losses, want, _ = run_sgd(exe["step"], False, dtype)
    got_losses, got, same = run_sgd(donating, True, dtype)
    assert all(same)
    assert [float(v) for v in got_losses] == [float(v) for v in want_losses]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adam_step_with_donation_computes_exactly_what_it_does_without(dtype):
    exe = aj.build(adam_step(dtype))
    donating = exe["step"].donating(all_donated(exe["step"], 0))
    assert len(donating.donations) == 3 * len(SHAPES) and all(d.direct for d in donating.donations)
    want, _ = run_adam(exe["step"], dtype)
    got, same = run_adam(donating, dtype)
    assert all(same)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_donated_arrays_come_back_as_the_results():
    exe = aj.build(sgd_step("float64"))
    step = exe["step"].donating({"w0": 1, "b1": 6})
    args = sgd_args()
    want = exe["step"](**{k: v.copy() for k, v in args.items()})
    out = step(**args)
    assert out[1] is args["w0"] and out[6] is args["b1"]
    assert np.array_equal(args["w0"], want[1]) and np.array_equal(args["b1"], want[6])
    assert not any(out[k] is a for k in (2, 3, 4, 5, 7, 8) for a in args.values())


def test_the_original_function_is_unaffected():
    exe = aj.build(sgd_step("float64"))
    donating = exe["step"].donating(all_donated(exe["step"], 1))
    assert exe["step"].donations == () and len(donating.donations) == 2 * len(SHAPES)
    args = [np.ones(s) for s in SHAPES * 3] + [np.array(0.5)]
    before = [a.copy() for a in args]
    out = exe["step"](*args)
    assert all(np.array_equal(a, b) for a, b in zip(args, before))
    assert not any(o is a for o in out for a in args)


def test_steady_state_allocates_only_the_loss():
    exe = aj.build(sgd_step("float32"))
    step = exe["step"].donating(all_donated(exe["step"], 1))
    args = [np.ones(s, np.float32) for s in SHAPES * 3] + [np.array(0.5, np.float32)]
    for _ in range(3):
        step(*args)
    stats = step.last_run_stats
    assert stats == aj.runtime.RunStats(allocations=1, allocated_bytes=4, copied_bytes=0)  # the loss scalar
    exe_adam = aj.build(adam_step("float64"))
    adam = exe_adam["step"].donating(all_donated(exe_adam["step"], 0))
    args = [np.ones(s) for s in SHAPES * 4] + [np.array(1e-3), np.array(1.0)]
    adam(*args)
    first = adam.last_run_stats.allocations
    adam(*args)
    assert first > 0 and adam.last_run_stats == aj.runtime.RunStats(0, 0, 0)


# ---- atomicity: a run that raises leaves every donated array as it was ----

def classifier_step(batch, loss_after_update: bool) -> aj.Module:
    """One SGD step of a linear softmax classifier with nll_loss (its
    gradient written out): the loss of the old weights, or of the updated
    ones (then nll_loss, which may fail, runs after the update)."""
    params = [("x", (batch, 4)), ("y", (batch,)), ("w", (4, 3)), ("lr", ())]
    body = ["z = matmul(x, w)", "p = log_softmax(z)", "loss = nll_loss(p, y)",
            'dp = nll_loss_backward(const(1.0, "float64"), p, y)', "e = exp(p)",
            "sd = sum(dp, axis=[-1], keepdims=True)", "se = multiply(e, sd)", "dz = subtract(dp, se)",
            "xt = permute_dims(x)", "gw = matmul(xt, dz)", "s = multiply(lr, gw)", "nw = subtract(w, s)"]
    if loss_after_update:
        body += ["z2 = matmul(x, nw)", "p2 = log_softmax(z2)", "loss2 = nll_loss(p2, y)"]
    outputs = [("loss2" if loss_after_update else "loss", ()), ("nw", (4, 3))]
    return aj.parse(step_text(params, body, outputs, "float64", int_params=("y",)))


@pytest.mark.parametrize("batch", [5, "n"])
@pytest.mark.parametrize("loss_after_update", [False, True])
def test_a_bad_label_leaves_the_donated_weights_bit_identical(batch, loss_after_update):
    exe = aj.build(classifier_step(batch, loss_after_update))
    step = exe["step"].donating({"w": 1})
    # nll_loss after the update can fail: the update is computed apart and copied in at the end
    assert [d.direct for d in step.donations] == [not loss_after_update]
    rng = np.random.default_rng(2)
    x, w, lr = rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), np.array(0.1)
    want = exe["step"](x, np.array([0, 1, 2, 1, 0]), w.copy(), lr)
    before = w.tobytes()
    with pytest.raises(aj.ExecutionError, match=r"op 'nll_loss.*target 3 at index 2 is out of range"):
        step(x, np.array([0, 1, 3, 1, 0]), w, lr)
    assert w.tobytes() == before
    loss, new_w = step(x, np.array([0, 1, 2, 1, 0]), w, lr)
    assert new_w is w and loss == want[0] and np.array_equal(w, want[1])
    assert step.last_run_stats.copied_bytes == (w.nbytes if loss_after_update else 0)


def test_a_shape_that_does_not_evaluate_after_a_direct_write_leaves_the_input():
    text = '''@function
def step(w: Tensor((3,), "float64"), x: Tensor(("n",), "float64")) -> Tuple(Tensor((3,), "float64"), Tensor(("m",), "float64")):
    nw = add(w, w)
    f = full(shape=("m",), fill_value=1.0, dtype="float64")
    return (nw, f)
'''
    step = aj.build(aj.parse(text))["step"].donating({"w": 0})
    assert step.donations[0].direct
    w = np.arange(3.0)
    with pytest.raises(aj.ExecutionError, match="binding 'f'.*cannot compute dim m"):
        step(w, np.ones(2))
    assert np.array_equal(w, np.arange(3.0))


def test_running_out_of_memory_after_a_direct_write_leaves_the_input():
    text = '''@function
def step(w: Tensor((3,), "float64")) -> Tuple(Tensor((3,), "float64"), Tensor((), "float64")):
    nw = add(w, w)
    huge = zeros(shape=(1099511627776,), dtype="float64")
    s = sum(huge)
    return (nw, s)
'''
    step = aj.build(aj.parse(text))["step"].donating({"w": 0})
    assert step.donations[0].direct
    w = np.arange(3.0)
    with pytest.raises(aj.OutOfMemoryError, match="out of memory"):
        step(w)
    assert np.array_equal(w, np.arange(3.0))


def wide_step(width: int) -> aj.Module:
    """nw = w - g, donated and written first, then one fused group holding
    `width` values live at once (sum_k tanh(x * c_k))."""
    bb = aj.FunctionBuilder("step")
    w, g, x = bb.param("w", (4096,), "float64"), bb.param("g", (4096,), "float64"), bb.param("x", (100,), "float64")
    new_w = w - g
    terms = [aj.op.tanh(x * (1.0 + k / width)) for k in range(width)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return bb.finish((new_w, total))


def wide_step_inputs():
    return np.ones(4096), np.full(4096, 0.5), np.linspace(-1.0, 1.0, 100)


def test_a_fused_group_too_wide_for_its_fallback_scratch_defers_the_update():
    # 9000 live values do not fit the 64 KB a thread falls back to when its
    # scratch cannot be had: the group may fail, so w is written after the run
    exe = aj.build(wide_step(9000))
    step = exe["step"].donating({"w": 0})
    assert [d.direct for d in step.donations] == [False]
    w, g, x = wide_step_inputs()
    want = exe["step"](w.copy(), g, x)
    new_w, total = step(w, g, x)
    assert new_w is w and np.array_equal(w, want[0]) and np.array_equal(total, want[1])


RUN_WITHOUT_ROOM_FOR_SCRATCH = """
import ctypes, hashlib, resource
ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD: large blocks are mapped, so RLIMIT_AS bounds them
import adjoint as aj
from test_executor_donate import wide_step, wide_step_inputs
aj.set_num_threads(1)
step = aj.build(wide_step(1500))["step"].donating({"w": 0})
w, g, x = wide_step_inputs()
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size + 256 * 1024, resource.RLIM_INFINITY))
new_w, total = step(w, g, x)
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(step.donations[0].direct, new_w is w, hashlib.sha256(w.tobytes() + total.tobytes()).hexdigest())
"""


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="a sanitizer runtime is preloaded: its address-space reservations defeat RLIMIT_AS")
def test_a_fused_group_whose_scratch_cannot_be_had_runs_in_shorter_blocks():
    # regression: the group's first run on a thread grows its scratch (1500
    # live values: 750 KB); that allocation failing raised OutOfMemoryError
    # after w was written. The thread now runs the group in blocks that fit
    # 64 KB on its stack: the run succeeds, with the same bits
    done = subprocess.run([sys.executable, "-c", RUN_WITHOUT_ROOM_FOR_SCRATCH], capture_output=True, text=True,
                          cwd=os.path.dirname(__file__), timeout=120)
    assert done.returncode == 0, done.stderr
    w, g, x = wide_step_inputs()
    new_w, total = aj.build(wide_step(1500), fuse=False)["step"](w, g, x)
    assert done.stdout.split() == ["True", "True", hashlib.sha256(new_w.tobytes() + total.tobytes()).hexdigest()]


def test_a_bad_index_after_the_update_defers_it_and_leaves_the_input():
    text = '''@function
def step(w: Tensor((4,), "float64"), i: Tensor((2,), "int64")) -> Tuple(Tensor((4,), "float64"), Tensor((2,), "float64")):
    nw = multiply(w, w)
    t = take(nw, i, axis=0)
    return (nw, t)
'''
    step = aj.build(aj.parse(text))["step"].donating({"w": 0})
    assert not step.donations[0].direct
    w = np.arange(4.0)
    with pytest.raises(aj.ExecutionError, match="index 7 is out of range"):
        step(w, np.array([0, 7]))
    assert np.array_equal(w, np.arange(4.0))
    nw, t = step(w, np.array([3, 1]))
    assert nw is w and np.array_equal(w, np.arange(4.0) ** 2) and np.array_equal(t, [9.0, 1.0])


READ_AFTER_OR_BY_A_NON_ELEMENTWISE_PRODUCER = [
    # w is read after its new value is made: written in place, add would read the new w
    ("nw = multiply(w, w)\n    a = add(w, nw)\n    s = sum(a, axis=[0])", lambda w: (w * w, (w + w * w).sum(axis=0))),
    # matmul reads every element of w while it writes: it cannot write over w
    ("nw = matmul(w, w)\n    s = sum(nw, axis=[0])", lambda w: (w @ w, (w @ w).sum(axis=0))),
]


@pytest.mark.parametrize("body, want", READ_AFTER_OR_BY_A_NON_ELEMENTWISE_PRODUCER)
def test_a_result_its_input_is_read_after_or_by_a_matmul_is_copied_in_after_the_run(body, want):
    text = f'''@function
def step(w: Tensor((3, 3), "float64")) -> Tuple(Tensor((3, 3), "float64"), Tensor((3,), "float64")):
    {body}
    return (nw, s)
'''
    step = aj.build(aj.parse(text))["step"].donating({"w": 0})
    assert not step.donations[0].direct
    w = np.arange(9.0).reshape(3, 3) / 10
    want_nw, want_s = want(w.copy())
    nw, s = step(w)
    assert nw is w and np.allclose(w, want_nw, rtol=1e-15) and np.allclose(s, want_s, rtol=1e-15)
    assert step.last_run_stats.copied_bytes == w.nbytes


def test_swapped_and_repeated_results_take_their_values_before_the_run():
    text = '''@function
def f(a: Tensor((2,), "float64"), b: Tensor((2,), "float64")) -> Tuple(Tensor((2,), "float64"), Tensor((2,), "float64"), Tensor((2,), "float64"), Tensor((2,), "float64")):
    s = add(a, b)
    return (b, a, s, s)
'''
    exe = aj.build(aj.parse(text))
    swap = exe["f"].donating({"a": 0, "b": 1})
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out = swap(a, b)
    assert out[0] is a and out[1] is b
    assert a.tolist() == [3.0, 4.0] and b.tolist() == [1.0, 2.0] and out[2].tolist() == [4.0, 6.0]
    both = exe["f"].donating({0: 2, 1: 3})
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out = both(a, b)
    assert out[2] is a and out[3] is b and a.tolist() == b.tolist() == [4.0, 6.0]
    assert out[0].tolist() == [3.0, 4.0] and out[1].tolist() == [1.0, 2.0]  # the inputs' values before the run


# ---- bad arguments and pairs ----

@pytest.fixture
def sgd():
    exe = aj.build(sgd_step("float64"))
    return exe["step"].donating(all_donated(exe["step"], 1))


def sgd_args(**replace):
    names = [f"{p}{i}" for p in "wgb" for i in range(len(SHAPES))]
    args = {n: np.ones(SHAPES[int(n[1:])]) for n in names} | {"lr": np.array(0.5)}
    return args | replace


def read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def overlapping() -> dict:
    base = np.zeros(24)
    return sgd_args(w0=base[:12].reshape(3, 4), b0=base[8:20].reshape(3, 4))


BAD_ARGUMENTS = [
    ("read_only", lambda: sgd_args(w0=read_only(np.ones((3, 4)))), "w0", "read-only"),
    ("not_contiguous", lambda: sgd_args(w0=np.ones((3, 8))[:, ::2]), "w0", "not C-contiguous"),
    ("fortran_order", lambda: sgd_args(w0=np.asfortranarray(np.ones((3, 4)))), "w0", "not C-contiguous"),
    ("wrong_dtype", lambda: sgd_args(b1=np.ones(4, np.float32)), "b1", "expected dtype float64.*got float32"),
    ("byte_swapped", lambda: sgd_args(w2=np.ones((4, 2), ">f8")), "w2", "byte-swapped"),
    ("list", lambda: sgd_args(w1=[1.0, 2.0, 3.0, 4.0]), "w1", "got list"),
    ("none", lambda: sgd_args(w1=None), "w1", "got None"),
    ("overlapping_donated", overlapping, "w0", "share its memory.*param 'b0'"),
    ("same_array_twice", lambda: (lambda a: sgd_args(w0=a, b0=a))(np.ones((3, 4))), "w0", "param 'b0'"),
    ("grad_is_the_param", lambda: (lambda a: sgd_args(w1=a, g1=a))(np.ones(4)), "w1", "param 'g1'"),
    ("grad_views_the_param", lambda: (lambda a: sgd_args(w0=a, g0=a[:, ::-1]))(np.ones((3, 4))), "w0", "param 'g0'"),
    ("wrong_shape", lambda: sgd_args(w0=np.ones((4, 3))), "w0", "dim 0 must be 3"),
]


@pytest.mark.parametrize("make, name, what", [pytest.param(m, n, w, id=i) for i, m, n, w in BAD_ARGUMENTS])
def test_a_bad_donated_argument_is_an_execution_error_naming_it(sgd, make, name, what):
    args = make()
    before = {k: np.array(v, copy=True) for k, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(aj.ExecutionError, match=f"param '{name}'.*{what}"):
        sgd(**args)
    for k, v in before.items():
        assert np.array_equal(args[k], v)


def test_views_of_one_buffer_that_do_not_overlap_are_fine(sgd):
    base = np.zeros(24)
    args = sgd_args(w0=base[:12].reshape(3, 4), b0=base[12:].reshape(3, 4))
    out = sgd(**args)
    assert out[1] is args["w0"] and out[5] is args["b0"]


BAD_PAIRS = [
    ({"w0": 2}, "param 'w0' \\(#0\\) to result #2: the param is Tensor\\(\\(3, 4\\).*the result Tensor\\(\\(4,\\)"),
    ({0: 1, "w0": 5}, "param 'w0' \\(#0\\) to result #5.*donated to result #1 already"),
    ({"w0": 1, "b0": 1}, "param 'b0' \\(#8\\) to result #1: result #1 takes param 'w0' already"),
    ({"nope": 1}, "no param named 'nope'"),
    ({13: 1}, "param index 13 is out of range"),
    ({-1: 1}, "param index -1 is out of range"),
    ({"w0": 9}, "param 'w0' \\(#0\\) to result #9: the result has 9 tensor"),
    ({"w0": -1}, "the result index for param 'w0' \\(#0\\) must be >= 0, got -1"),
    ({"w0": "1"}, "the result index for param 'w0' \\(#0\\): expected an int, got str"),
    ({1.5: 1}, "a key must be a param index or name, got float"),
    ([("w0", 1)], "expected a dict"),
]


@pytest.mark.parametrize("pairs, what", BAD_PAIRS)
def test_a_bad_pair_is_an_execution_error_naming_it(pairs, what):
    fn = aj.build(sgd_step("float64"))["step"]
    with pytest.raises(aj.ExecutionError, match=f"function 'step': cannot donate.*{what}"):
        fn.donating(pairs)


class PairsOfLists(dict):
    """A dict whose items() gives lists, as a custom mapping's may."""

    def items(self):
        return [list(kv) for kv in super().items()]


class Unreadable(Mapping):
    def __getitem__(self, key):
        raise KeyError(key)

    def __iter__(self):
        return iter(["w0"])

    def __len__(self):
        return 1


def test_a_mapping_is_read_as_dict_reads_it():
    # regression: donating read items() as (key, value) tuples, so one that
    # gave lists raised SystemError ("bad argument to internal function")
    fn = aj.build(sgd_step("float64"))["step"]
    assert fn.donating(PairsOfLists({"w0": 1})).donations == fn.donating({"w0": 1}).donations
    with pytest.raises(aj.ExecutionError, match="function 'step': cannot donate: cannot read the dict given: KeyError"):
        fn.donating(Unreadable())


# ---- random programs ----

def type_key(t) -> tuple:
    return (tuple(t.shape), t.dtype)


def flat_types(t) -> list:
    return [t] if t.is_tensor else [f for field in t.fields for f in flat_types(field)]


def flat(out) -> list:
    return [x for o in out for x in flat(o)] if isinstance(out, tuple) else [out]


@given(programs())
def test_random_adjoints_compute_the_same_with_every_matching_param_donated(prog):
    mod = aj.transform.Gradient()(prog.mod)
    exe = aj.build(mod)
    fn = exe["main_adjoint"]
    params = fn.function.params
    outputs = flat_types(fn.function.ret_type)
    pairs, taken = {}, set()
    for i, p in enumerate(params):
        k = next((k for k, t in enumerate(outputs) if k not in taken and type_key(t) == type_key(p.type)), None)
        if k is not None:
            pairs[i] = k
            taken.add(k)
    note(f"pairs {pairs}")
    want = flat(fn(*prog.inputs))
    donating = fn.donating(pairs)
    note(f"plan {donating.donations}")
    args = [np.array(a, copy=True) for a in prog.inputs]
    got = flat(donating(*args))
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w, equal_nan=True), f"result #{k}"
    for i, k in pairs.items():
        assert got[k] is args[i]
