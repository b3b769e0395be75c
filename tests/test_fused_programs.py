"""Compiled programs for fused groups (docs/executor.md, "Compiled programs"):
the per-param updates of adjoint.training's Adam, AdamW, SGD with momentum
and RMSprop run as one compiled loop, with the bits of the same ops run one
by one, also when the updates are written over donated params and state; any
other group keeps the block interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjoint as aj
from adjoint import training as T

SHAPES = [("w", (37, 53)), ("b", (1,)), ("c", (1000,)), ("e", (0, 4))]
ADAM_PROGRAM = ("float32: subtract(i0, i1) ; multiply(s0, i2:1) ; add(i1, s1)> ; multiply(i3, i4:1) ; "
                "multiply(i0, i5:1) ; multiply(s4, i0) ; add(s3, s5)> ; sqrt(s6) ; divide(s7, i6:1) ; "
                "add(s8, i7:1) ; multiply(i8:1, s2) ; divide(s10, s9) ; subtract(i9, s11)>")


def update_inputs(fn, dtype, seed=0, step=4, lr=1e-2):
    """Random params and grads, state with a non-negative second moment,
    the step count and the learning rate, in ``fn``'s param order."""
    rng = np.random.default_rng(seed)
    arrays = []
    for p in fn.params:
        shape, dt = tuple(p.type.shape), p.type.dtype
        if dt != dtype:
            arrays.append(np.array(step, dt))
        elif p.name_hint == "lr":
            arrays.append(np.array(lr, dt))
        else:
            arrays.append(np.abs(rng.standard_normal(shape)).astype(dt) if "sq" in p.name_hint
                          else rng.standard_normal(shape).astype(dt))
    return arrays


def assert_same_bits(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def compiled_names(fn):
    return [name for _, name in fn.fused_programs]


def with_threads(n, run):
    before = aj.blas_info()["num_threads"]
    aj.set_num_threads(n)
    try:
        return run()
    finally:
        aj.set_num_threads(before)


COMPILED = [
    (T.Adam(lr=1e-2), "adam"),
    (T.Adam(lr=1e-2, betas=(0.3, 0.9)), "adam"),
    (T.Adam(lr=1e-2, weight_decay=0.1), "adam"),
    (T.Adam(lr=1e-2, betas=(0.5, 0.9), weight_decay=0.1), "adam"),
    (T.Adam(lr=1e-2, amsgrad=True), "adam"),
    (T.Adam(lr=1e-2, betas=(0.2, 0.99), amsgrad=True), "adam"),
    (T.Adam(lr=1e-2, weight_decay=0.1, amsgrad=True), "adam"),
    (T.Adam(lr=1e-2, betas=(0.4, 0.99), weight_decay=0.1, amsgrad=True), "adam"),
    (T.AdamW(lr=1e-2, weight_decay=0.1), "adamw"),
    (T.AdamW(lr=1e-2, betas=(0.1, 0.99), weight_decay=0.1), "adamw"),
    (T.AdamW(lr=1e-2, weight_decay=0.1, amsgrad=True), "adamw"),
    (T.AdamW(lr=1e-2, betas=(0.5, 0.99), weight_decay=0.1, amsgrad=True), "adamw"),
    (T.SGD(lr=1e-2, momentum=0.9), "sgd_momentum"),
    (T.SGD(lr=1e-2, momentum=0.9, nesterov=True), "sgd_momentum"),
    (T.SGD(lr=1e-2, momentum=0.9, weight_decay=1e-3), "sgd_momentum"),
    (T.SGD(lr=1e-2, momentum=0.9, nesterov=True, weight_decay=1e-3), "sgd_momentum"),
    (T.RMSprop(lr=1e-2), "rmsprop"),
    (T.RMSprop(lr=1e-2, weight_decay=1e-3), "rmsprop"),
]


@pytest.mark.parametrize("optimizer, name", COMPILED)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_updates_run_compiled_with_the_bits_of_the_ops_one_by_one(optimizer, name, dtype, threads):
    mod = optimizer.function([(n, s, dtype) for n, s in SHAPES])
    fused = aj.build(mod)["update"]
    assert compiled_names(fused).count(name) == len(SHAPES)
    args = update_inputs(mod["update"], dtype)
    want = aj.build(mod, fuse=False)["update"](*args)
    assert_same_bits(with_threads(threads, lambda: fused(*args)), want)


@st.composite
def compiled_optimizers(draw):
    """An optimizer whose per-param update has a compiled program, with any
    hyperparameters, and that program's name."""
    lr = draw(st.floats(1e-5, 1.0))
    decay = draw(st.sampled_from([0.0, 1e-4, 0.5]))
    kind = draw(st.sampled_from(["adam", "adamw", "sgd_momentum", "rmsprop"]))
    if kind in ("adam", "adamw"):
        options = dict(lr=lr, betas=draw(st.tuples(st.floats(0.01, 0.99), st.floats(0.01, 0.9999))),
                       eps=draw(st.floats(1e-12, 1e-2)), amsgrad=draw(st.booleans()))
        if kind == "adamw":
            return T.AdamW(weight_decay=max(decay, 1e-4), **options), kind
        return T.Adam(weight_decay=decay, **options), kind
    if kind == "sgd_momentum":
        return T.SGD(lr=lr, momentum=draw(st.floats(0.01, 0.99)), nesterov=draw(st.booleans()),
                     weight_decay=decay), kind
    return T.RMSprop(lr=lr, alpha=draw(st.floats(0.01, 0.999)), eps=draw(st.floats(1e-12, 1e-2)),
                     weight_decay=decay), kind


@given(optimizer=compiled_optimizers(), dtype=st.sampled_from(["float32", "float64"]),
       step=st.integers(0, 10_000), shape=st.sampled_from([(1,), (7,), (3, 5), (64, 9), (2, 3, 4)]),
       seed=st.integers(0, 2**16))
def test_for_all_hyperparameters_the_compiled_update_has_the_bits_of_the_ops(optimizer, dtype, step, shape, seed):
    optimizer, name = optimizer
    mod = optimizer.function([("w", shape, dtype)])
    fused = aj.build(mod)["update"]
    assert name in compiled_names(fused)
    args = update_inputs(mod["update"], dtype, seed, step, optimizer.lr)
    assert_same_bits(fused(*args), aj.build(mod, fuse=False)["update"](*args))


@pytest.mark.parametrize("optimizer", [T.Adam(lr=1e-2), T.AdamW(lr=1e-2, weight_decay=0.1, amsgrad=True),
                                       T.SGD(lr=1e-2, momentum=0.9, nesterov=True), T.RMSprop(lr=1e-2)])
def test_compiled_updates_written_over_donated_params_and_state(optimizer):
    mod = optimizer.function([(n, s, "float32") for n, s in SHAPES])
    fn = mod["update"]
    args = update_inputs(fn, "float32", seed=1)
    want = aj.build(mod, fuse=False)["update"](*[a.copy() for a in args])
    params, state_start = len(SHAPES), 2 * len(SHAPES)
    donations = {p: p for p in range(params)}
    donations.update({state_start + k: params + k for k in range(len(fn.params) - state_start - 1)})
    run = aj.build(mod)["update"].donating(donations)
    assert all(d.direct for d in run.donations)
    got = run(*args)
    assert_same_bits(got, want)
    for i, out in donations.items():
        assert got[out] is args[i]


def test_the_adam_group_as_text():
    mod = T.Adam(lr=1e-3).function([("w", (3, 2), "float32")])
    assert (ADAM_PROGRAM, "adam") in aj.build(mod)["update"].fused_programs


@pytest.mark.parametrize("optimizer", [T.SGD(lr=1e-2), T.SGD(lr=1e-2, momentum=0.9, dampening=0.1),
                                       T.RMSprop(lr=1e-2, momentum=0.9), T.RMSprop(lr=1e-2, centered=True)])
def test_other_updates_keep_the_block_interpreter(optimizer):
    mod = optimizer.function([(n, s, "float64") for n, s in SHAPES])
    fused = aj.build(mod)["update"]
    assert fused.fused_programs and set(compiled_names(fused)) == {""}
    args = update_inputs(mod["update"], "float64")
    assert_same_bits(fused(*args), aj.build(mod, fuse=False)["update"](*args))


def test_the_same_ops_written_by_hand_in_the_same_order_match_the_program():
    bb = aj.FunctionBuilder("main")
    g, m, v, p = (bb.param(k, (8, 3), "float32") for k in "gmvp")
    step_size, bias_sqrt = bb.param("step_size", (), "float32"), bb.param("bias_sqrt", (), "float32")
    m1 = m + (g - m) * 0.1
    v1 = v * 0.999 + g * 0.001 * g
    denom = aj.op.sqrt(v1) / bias_sqrt + 1e-8
    p1 = p - step_size * m1 / denom
    mod = bb.finish((m1, v1, p1))
    fused = aj.build(mod)["main"]
    assert compiled_names(fused) == ["adam"]
    # The text fixes the order of the ops: the step size's multiply first is another program.
    bb = aj.FunctionBuilder("main")
    g, m, v, p = (bb.param(k, (8, 3), "float32") for k in "gmvp")
    step_size, bias_sqrt = bb.param("step_size", (), "float32"), bb.param("bias_sqrt", (), "float32")
    m1 = m + (g - m) * 0.1
    v1 = v * 0.999 + g * 0.001 * g
    reordered = bb.finish((m1, v1, p - step_size * m1 / (aj.op.sqrt(v1) / bias_sqrt + 1e-8)))
    assert compiled_names(aj.build(reordered)["main"]) == [""]
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(4)] + [np.float32(0.01), np.float32(0.5)]
    args[2] = np.abs(args[2])
    assert_same_bits(fused(*args), aj.build(mod, fuse=False)["main"](*args))


def test_a_trainer_step_runs_every_param_update_compiled():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (16, 8), "float32")
    w, b = bb.param("w", (4, 8), "float32"), bb.param("b", (4,), "float32")
    mod = bb.finish(x @ w.T + b)
    trainer = T.Trainer(mod, T.mse, T.Adam(lr=1e-2), params={"w": np.ones((4, 8), np.float32) / 8,
                                                             "b": np.zeros(4, np.float32)})
    assert compiled_names(trainer.step_function).count("adam") == 2
    rng = np.random.default_rng(3)
    x_batch, y_batch = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((16, 4)).astype(np.float32)
    losses = [float(trainer.step(x_batch, y_batch)) for _ in range(20)]
    assert losses[-1] < losses[0]
