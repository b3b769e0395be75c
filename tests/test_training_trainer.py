"""Trainer: resident params and state updated in place (live read-only views,
no allocation per step, every update written straight into its buffer),
atomic failed steps, NaN detection, fit, predict, state_dict round trips,
initialization, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj
from adjoint import training as T


def mlp(dtype: str = "float64", hidden: int = 8) -> aj.Module:
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 4), dtype)
    w1, b1 = bb.param("w1", (4, hidden), dtype), bb.param("b1", (hidden,), dtype)
    w2, b2 = bb.param("w2", (hidden, 3), dtype), bb.param("b2", (3,), dtype)
    return bb.finish(aj.op.relu(x @ w1 + b1) @ w2 + b2)


def data(n: int = 32, seed: int = 0, dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(dtype)
    return x, (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)


def test_every_update_is_written_in_place_with_no_allocation():
    trainer = T.Trainer(mlp("float32"), T.cross_entropy, T.Adam(lr=1e-2))
    step = trainer.step_function
    assert all(d.direct for d in step.donations), step.donations
    x, y = data(dtype="float32")
    buffers = [trainer.params[k] for k in trainer.params]
    for _ in range(3):
        trainer.step(x, y)
    assert step.last_run_stats == aj.runtime.RunStats(allocations=1, allocated_bytes=4, copied_bytes=0)  # the loss
    assert all(np.shares_memory(a, trainer.params[k]) for a, k in zip(buffers, trainer.params))


def test_params_are_live_read_only_views():
    trainer = T.Trainer(mlp(), T.cross_entropy, T.SGD(lr=0.5))
    view = trainer.params["w2"]
    before = view.copy()
    trainer.step(*data())
    assert not np.array_equal(view, before)
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    assert set(trainer.params) == {"w1", "b1", "w2", "b2"} and len(trainer.params) == 4
    assert "w1" in repr(trainer.params)


def test_training_learns_and_predict_uses_the_current_weights():
    trainer = T.Trainer(mlp(hidden=16), T.cross_entropy, T.Adam(lr=3e-2), seed=1)
    x, y = data(256)
    losses = trainer.fit([(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)], epochs=40)
    assert len(losses) == 320 and losses[-1] < losses[0] / 5
    assert (trainer.predict(x).argmax(axis=1) == y).mean() > 0.95
    p = {k: np.array(v) for k, v in trainer.params.items()}
    want = np.maximum(x @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"]
    np.testing.assert_allclose(trainer.predict(x), want, rtol=1e-12)
    assert trainer.step_count == 320 and "step 320" in repr(trainer)


def test_a_failed_step_changes_nothing():
    trainer = T.Trainer(mlp("float32"), T.cross_entropy, T.AdamW(lr=1e-2))
    x, y = data(dtype="float32")
    trainer.step(x, y)
    before = trainer.state_dict()
    bad = y.copy()
    bad[-1] = 7  # no class 7: nll_loss fails at run time
    with pytest.raises(aj.ExecutionError, match="7"):
        trainer.step(x, bad)
    after = trainer.state_dict()
    assert before.keys() == after.keys()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert trainer.step_count == 1
    trainer.step(x, y)  # and it trains on
    assert trainer.step_count == 2


def test_labels_of_the_wrong_shape_or_dtype_name_the_loss_and_both_shapes():
    trainer = T.Trainer(mlp(), T.cross_entropy, T.SGD(lr=0.1))
    x, y = data()
    with pytest.raises(aj.ExecutionError, match=r"cross_entropy: label 'label' has shape \(32, 3\).*expected shape \(32,\)"):
        trainer.step(x, np.zeros((32, 3), np.int64))
    with pytest.raises(aj.ExecutionError, match=r"cross_entropy: label 'label' has shape \(32,\) and dtype float64"):
        trainer.step(x, y.astype(np.float64))
    with pytest.raises(aj.ExecutionError, match=r"takes 2 arrays \(x, label\), got 1"):
        trainer.step(x)
    trainer.step(x, y.astype(np.int32))  # a safe cast is made


def test_a_nan_loss_stops_naming_the_step_unless_turned_off():
    x, y = data()
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=1e3), params={"w1": np.full((4, 8), 10.0)})
    targets = np.zeros((32, 3))
    with pytest.raises(aj.ExecutionError, match=r"the loss of step \d+ is (nan|inf)"):
        trainer.fit([(x, targets)] * 50)
    quiet = T.Trainer(mlp(), T.mse, T.SGD(lr=1e3), params={"w1": np.full((4, 8), 10.0)}, check_nan=False)
    losses = quiet.fit([(x, targets)] * 50)
    assert not np.isfinite(losses[-1])


def test_state_dict_round_trips_through_savez(tmp_path):
    trainer = T.Trainer(mlp(), T.cross_entropy, T.Adam(lr=1e-2, amsgrad=True))
    x, y = data()
    for _ in range(5):
        trainer.step(x, y)
    state = trainer.state_dict()
    assert list(state)[:4] == ["w1", "b1", "w2", "b2"]
    assert {"step", "w1.exp_avg", "w1.exp_avg_sq", "w1.max_exp_avg_sq"} <= set(state)
    assert state["step"] == 5
    np.savez(tmp_path / "ckpt.npz", **state)
    again = T.Trainer(mlp(), T.cross_entropy, T.Adam(lr=1e-2, amsgrad=True))
    again.load_state_dict(np.load(tmp_path / "ckpt.npz"))
    assert again.step_count == 5
    assert again.step(x, y) == trainer.step(x, y)
    assert all(np.array_equal(again.state_dict()[k], v) for k, v in trainer.state_dict().items())


def test_sgd_state_dict_keeps_the_step_count():
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.01))
    trainer.step(data()[0], np.zeros((32, 3)))
    assert set(trainer.state_dict()) == {"w1", "b1", "w2", "b2", "step"}
    assert trainer.state_dict()["step"] == 1


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.pop("w1"), "missing 'w1'"),
    (lambda d: d.update(extra=np.zeros(1)), "unexpected 'extra'"),
    (lambda d: d.update(w2=np.zeros((3, 8))), r"'w2' has shape \(3, 8\), expected \(8, 3\)"),
    (lambda d: d.update(b1=np.zeros(8, np.complex128)), "'b1' has dtype complex128"),
    (lambda d: d.update(step=np.array([1, 2])), r"'step' has shape \(2,\), expected \(\)"),
    (lambda d: d.update(step=np.int64(-3)), "'step' must be a whole number >= 0"),
    (lambda d: d.update(w1=[[1.0], [1.0, 2.0]]), r"Trainer.load_state_dict: 'w1' must be an array \(nested sequences"),
    (lambda d: d.update(step=[[1], [1, 2]]), r"Trainer.load_state_dict: 'step' must be an array \(nested sequences"),
])
def test_load_state_dict_checks_everything_before_writing(edit, message):
    trainer = T.Trainer(mlp(), T.cross_entropy, T.Adam(lr=1e-2))
    trainer.step(*data())
    before = trainer.state_dict()
    bad = {k: v * 2 for k, v in before.items()}
    edit(bad)
    with pytest.raises(aj.Error, match=message):
        trainer.load_state_dict(bad)
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())


def test_lr_override_and_schedule():
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=lambda step: 0.1 / (step + 1)))
    assert trainer.lr == 0.1
    trainer.step(data()[0], np.zeros((32, 3)))
    assert trainer.lr == 0.05
    trainer.lr = 0.3
    assert trainer.lr == 0.3
    trainer.lr = None
    assert trainer.lr == 0.05
    with pytest.raises(aj.Error, match="finite number"):
        trainer.lr = float("nan")
    with pytest.raises(aj.Error, match=r"Trainer: lr must be None \(the optimizer's\) or a finite number >= 0, "
                                       "got an int of 1329 bits"):
        trainer.lr = 10 ** 400
    trainer.lr = np.float32(0.25)
    assert trainer.lr == 0.25


@pytest.mark.parametrize("lr", [float("nan"), -1.0, "fast", True, 10 ** 400, float("inf")],
                         ids=["nan", "negative", "str", "bool", "10**400", "inf"])
def test_an_lr_given_to_step_is_checked_as_the_setter_checks_it(lr):
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.1))
    before = trainer.state_dict()
    with pytest.raises(aj.Error, match=r"Trainer.step: lr must be a finite number >= 0"):
        trainer.step(data()[0], np.zeros((32, 3)), lr=lr)
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())


@pytest.mark.parametrize("step", ["two", [[1], [1, 2]], 2 ** 63, np.uint64(2 ** 63), 1e19, True])
def test_sgd_load_state_dict_checks_the_step_count_before_writing_the_weights(step):
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.1))
    before = trainer.state_dict()
    bad = {**{k: v + 1 for k, v in before.items()}, "step": step}
    with pytest.raises(aj.Error, match="'step' must be a whole number"):
        trainer.load_state_dict(bad)
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())
    trainer.load_state_dict({**before, "step": np.float64(7)})
    assert trainer.step_count == 7
    trainer.load_state_dict({**before, "step": np.int64(2 ** 63 - 1)})
    assert trainer.step_count == 2 ** 63 - 1


@pytest.mark.parametrize("step", [2 ** 63, np.uint64(2 ** 63)])
def test_adam_load_state_dict_refuses_a_step_beyond_int64(step):
    trainer = T.Trainer(mlp(), T.mse, T.Adam(lr=0.1))
    before = trainer.state_dict()
    with pytest.raises(aj.Error, match=r"'step' must be a whole number >= 0 \(the step count, below 2\*\*63\)"):
        trainer.load_state_dict({**before, "step": step})
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())
    trainer.load_state_dict({**before, "step": 2 ** 63 - 1})
    assert trainer.step_count == 2 ** 63 - 1 == trainer.state_dict()["step"]


@pytest.mark.parametrize("optimizer", [T.SGD(lr=0.1), T.Adam(lr=0.1)])
def test_a_weight_named_like_a_state_entry_is_refused_by_the_state_dict(optimizer):
    bb = aj.FunctionBuilder("main", num_input=1)
    x, w = bb.param("x", ("n", 4), "float64"), bb.param("step", (4, 3), "float64")
    trainer = T.Trainer(bb.finish(x @ w), T.mse, optimizer)
    trainer.step(np.ones((2, 4)), np.zeros((2, 3)))
    for call in (trainer.state_dict, lambda: trainer.load_state_dict({"step": np.zeros((4, 3))})):
        with pytest.raises(aj.Error, match="the weight 'step' has the name of another entry"):
            call()


def test_an_lr_of_zero_changes_nothing():
    trainer = T.Trainer(mlp(), T.cross_entropy, T.SGD(lr=0.0, momentum=0.9))
    before = {k: np.array(v) for k, v in trainer.params.items()}
    trainer.step(*data())
    assert all(np.array_equal(before[k], trainer.params[k]) for k in before)


def test_fit_takes_a_callable_and_refuses_an_iterator_for_several_epochs():
    trainer = T.Trainer(mlp(), T.cross_entropy, T.SGD(lr=0.1))
    x, y = data()
    calls = []

    def epoch():
        calls.append(1)
        return [(x, y)] * 2

    assert len(trainer.fit(epoch, epochs=3)) == 6 and len(calls) == 3
    with pytest.raises(aj.Error, match="iterator"):
        trainer.fit(iter([(x, y)]), epochs=2)
    assert len(trainer.fit(iter([(x, y)]), epochs=1)) == 1
    with pytest.raises(aj.Error, match="epochs"):
        trainer.fit([(x, y)], epochs=-1)


def test_fit_shows_a_progress_bar(capsys):
    pytest.importorskip("tqdm")
    trainer = T.Trainer(mlp(), T.cross_entropy, T.SGD(lr=0.1))
    trainer.fit([data()] * 3, epochs=2, progress=True)
    err = capsys.readouterr().err
    assert "epoch 2/2" in err and "loss=" in err


def test_initial_params_follow_fan_in_and_given_values_win():
    fn = mlp()["main"]
    init = T.init_params(fn, seed=3)
    assert set(init) == {"w1", "b1", "w2", "b2"}
    assert np.abs(init["w1"]).max() <= 0.5 and np.abs(init["w2"]).max() <= 1 / np.sqrt(8)
    assert np.abs(init["w1"]).max() > 0.3
    assert not init["b1"].any() and not init["b2"].any()
    again = T.init_params(fn, seed=3, skip={"w1"})
    assert "w1" not in again and np.array_equal(again["w2"], init["w2"])
    w1 = np.ones((4, 8))
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={"w1": w1}, seed=3)
    assert np.array_equal(trainer.params["w1"], w1) and np.array_equal(trainer.params["w2"], init["w2"])


SKIP = "init_params: skip must be an iterable of weight names (not one str),"


@pytest.mark.parametrize("call, message", [
    (lambda fn: T.init_params(None), "init_params: expected a function (such as mod['main']), got NoneType"),
    (lambda fn: T.init_params(mlp()), "init_params: expected a function (such as mod['main']), got Module"),
    (lambda fn: T.init_params(fn, seed=-1), "init_params: seed must be an int >= 0, got -1"),
    (lambda fn: T.init_params(fn, seed=1.5), "init_params: seed must be an int >= 0, got 1.5"),
    (lambda fn: T.init_params(fn, seed=True), "init_params: seed must be an int >= 0, got True"),
    (lambda fn: T.init_params(fn, skip=None), f"{SKIP} got None"),
    (lambda fn: T.init_params(fn, skip="w1"), f"{SKIP} got 'w1'"),
    (lambda fn: T.init_params(fn, skip=[1]), f"{SKIP} got [1]"),
])
def test_bad_init_params_arguments_are_errors_naming_them(call, message):
    with pytest.raises(aj.Error) as info:
        call(mlp()["main"])
    assert str(info.value) == message


@pytest.mark.parametrize("f", [lambda x, w: x @ w, lambda x, w: x * w[0, :4]])
def test_a_weight_too_large_to_allocate_is_an_out_of_memory_error_naming_it(f):
    fn = weights_used([("x", (2, 4)), ("w", (4, 2 ** 45))], f)["main"]  # 1 PiB: past any address space
    with pytest.raises(aj.OutOfMemoryError, match=r"^init_params: weight 'w' of shape \(4, 35184372088832\) float64 "
                                                  "cannot be allocated"):
        T.init_params(fn)


def test_init_params_takes_any_seed_numpy_does():
    fn = mlp()["main"]
    assert np.array_equal(T.init_params(fn, seed=np.int64(3))["w1"], T.init_params(fn, seed=3)["w1"])
    assert T.init_params(fn, seed=2 ** 70, skip=("w1", "b1")).keys() == {"w2", "b2"}


def test_layer_norm_gamma_starts_at_one_and_transposed_weights_use_their_fan_in():
    mod = aj.parse('''@function(num_input=1)
def main(x: Tensor((2, 6), "float32"), w: Tensor((5, 6), "float32"), g: Tensor((5,), "float32"), b: Tensor((5,), "float32")) -> Tensor((2, 5), "float32"):
    wt: Tensor((6, 5), "float32") = permute_dims(w)
    y: Tensor((2, 5), "float32") = matmul(x, wt)
    z: Tensor((2, 5), "float32") = layer_norm(y, g, b)
    return z
''')
    init = T.init_params(mod["main"])
    assert np.array_equal(init["g"], np.ones(5, np.float32)) and not init["b"].any()
    assert np.abs(init["w"]).max() <= 1 / np.sqrt(6) and init["w"].dtype == np.float32


def weights_used(shapes, f):
    bb = aj.FunctionBuilder("main", num_input=1)
    x, *ws = [bb.param(name, shape, "float64") for name, shape in shapes]
    return bb.finish(f(x, *ws))


@pytest.mark.parametrize("x_shape, v_shape, f, fan_in", [
    (("n", 4), (4,), lambda x, v: x @ v, 4),                                   # a vector on the right
    ((4, 3), (4,), lambda x, v: v @ x, 4),                                     # on the left
    ((3, 4), (4,), lambda x, v: x @ aj.op.permute_dims(v), 4),                 # through a transpose
    ((2, 3, 4), (2, 4, 5), lambda x, v: x @ v, 4),                              # batched
    ((2, 3, 4), (2, 5, 4), lambda x, v: x @ aj.op.permute_dims(v, axes=[0, 2, 1]), 4),
    ((5, 3), (3, 4, 6), lambda x, v: x @ aj.op.permute_dims(v, axes=[2, 0, 1]), 3),   # seen as (6, 3, 4)
])
def test_matmul_weights_of_any_rank_take_the_fan_in_of_the_dim_they_contract_over(x_shape, v_shape, f, fan_in):
    init = T.init_params(weights_used([("x", x_shape), ("v", v_shape)], f)["main"], seed=1)["v"]
    bound = 1 / np.sqrt(fan_in)
    assert np.array_equal(init, np.random.default_rng([1, 1]).uniform(-bound, bound, size=v_shape))


def test_a_vector_weight_trains_and_a_scalar_weight_starts_at_zero():
    mod = weights_used([("x", ("n", 4)), ("v", (4,)), ("s", ())], lambda x, v, s: x @ v * s)
    assert not T.init_params(mod["main"])["s"]
    trainer = T.Trainer(weights_used([("x", ("n", 4)), ("v", (4,))], lambda x, v: x @ v), T.mse, T.SGD(lr=0.1))
    assert np.abs(trainer.params["v"]).max() <= 0.5
    x = np.random.default_rng(0).standard_normal((16, 4))
    losses = [trainer.step(x, x @ [1.0, 2.0, 3.0, 4.0]) for _ in range(50)]
    assert losses[-1] < losses[0] / 10


@pytest.mark.parametrize("make, message", [
    (lambda: T.Trainer("main", T.mse, T.SGD(lr=0.1)), "expected an aj.Module"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={"w9": np.zeros(3)}), "'w9', which is not a weight"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={"w1": np.zeros((8, 4))}),
     r"param 'w1' has shape \(8, 4\), expected \(4, 8\)"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), func_name="nope"), "has no function 'nope'"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD), r"the class SGD; pass an instance, such as SGD\(lr=0.01\)"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params=[np.zeros((4, 8))]), "params must map weight names"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), seed="a"), "seed must be an int >= 0"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), seed=-1), "seed must be an int >= 0"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), seed=True), "Trainer: seed must be an int >= 0, got True"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), num_backbone_outputs=True),
     "AppendLoss: num_backbone_outputs must be an int >= 1, got True"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={1: np.zeros(3), "w9": np.zeros(3)}),
     "Trainer: params has 'w9', which is not a weight of 'main'"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={10 ** 5000: 0}),
     "Trainer: params has an int of 16610 bits, which is not a weight of 'main'"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1)).fit([data()], epochs=True),
     "Trainer.fit: epochs must be an int >= 0, got True"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), check_nan="no"),
     "Trainer: check_nan must be True or False, got 'no'"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1)).fit([data()], progress=None),
     "Trainer.fit: progress must be True or False, got None"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1)).fit(None), "batches must be an iterable"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1)).fit(lambda: 3), r"batches\(\) must return an iterable"),
    (lambda: T.Trainer(mlp(), T.mse, T.SGD(lr=0.1)).load_state_dict([1, 2]), "expected a mapping"),
])
def test_bad_trainers_are_errors(make, message):
    with pytest.raises(aj.Error, match=message):
        make()


def test_predict_checks_its_inputs():
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.1))
    with pytest.raises(aj.ExecutionError, match=r"takes 1 array\(s\) \(x\), got 2"):
        trainer.predict(np.zeros((2, 4)), np.zeros(2))
    with pytest.raises(aj.ExecutionError, match="dim 1 must be 4"):
        trainer.predict(np.zeros((2, 5)))
    with pytest.raises(aj.ExecutionError, match=r"Trainer.predict: 'x' must be an array \(nested sequences of one "
                                                r"length at each level\), got \[\[1.0\], \[1.0, 2.0\]\]$"):
        trainer.predict([[1.0], [1.0, 2.0]])


@pytest.mark.parametrize("ragged", [0, 1])
def test_a_ragged_input_or_label_of_a_step_is_an_error_naming_it(ragged):
    trainer = T.Trainer(mlp(), T.mse, T.SGD(lr=0.1))
    before = trainer.state_dict()
    batch = [np.zeros((2, 4)), np.zeros((2, 3))]
    batch[ragged] = [[1.0], [1.0, 2.0]]
    with pytest.raises(aj.ExecutionError, match=rf"Trainer.step: '{['x', 'label'][ragged]}' must be an array"):
        trainer.step(*batch)
    with pytest.raises(aj.ExecutionError, match="must be an array"):
        trainer.fit([batch])
    assert trainer.step_count == 0
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())


def test_a_ragged_initial_param_is_an_error_naming_it():
    with pytest.raises(aj.Error, match=r"Trainer: param 'b2' must be an array \(nested sequences of one length at "
                                       r"each level\), got \[\[1.0\], \[1.0, 2.0\]\]$"):
        T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), params={"b2": [[1.0], [1.0, 2.0]]})


def test_a_model_of_several_outputs_trains_with_labels_given():
    two = aj.parse('''@function(num_input=1)
def main(x: Tensor(("n", 3), "float64"), w: Tensor((3,), "float64")) -> Tuple(Tensor(("n", 3), "float64"), Tensor(("n", 3), "float64")):
    a: Tensor(("n", 3), "float64") = multiply(x, w)
    b: Tensor(("n", 3), "float64") = sin(a)
    return (a, b)
''')
    both = lambda a, b, ta, tb: T.mse(a, ta) + T.l1(b, tb)  # noqa: E731
    trainer = T.Trainer(two, both, T.SGD(lr=0.1), num_backbone_outputs=2, labels=[(("n", 3), "float64")] * 2,
                        params={"w": np.ones(3)})
    x = np.random.default_rng(0).standard_normal((4, 3))
    losses = [trainer.step(x, 0.5 * x, np.sin(0.5 * x)) for _ in range(60)]
    assert losses[-1] < losses[0] / 2
    np.testing.assert_allclose(trainer.params["w"], 0.5, atol=0.05)


def test_a_frozen_weight_is_read_kept_saved_and_loaded_but_never_trained(tmp_path):
    x, y = data()
    trainer = T.Trainer(mlp(), T.cross_entropy, T.AdamW(lr=1e-2, weight_decay=0.5), frozen=["b1"],
                        params={"b1": np.full(8, 0.25)})
    assert trainer.layout.params == ("w1", "w2", "b2") and trainer.layout.frozen == ("b1",)
    assert not any(name.startswith("b1.") for name in trainer.layout.state)  # no optimizer state
    assert list(trainer.params) == ["w1", "b1", "w2", "b2"]                   # the model's order
    assert "1 frozen" in repr(trainer)
    view = trainer.params["b1"]
    for _ in range(5):
        trainer.step(x, y)
    assert np.array_equal(view, np.full(8, 0.25)) and not view.flags.writeable
    p = {k: np.array(v) for k, v in trainer.params.items()}
    np.testing.assert_allclose(trainer.predict(x), np.maximum(x @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"],
                               rtol=1e-12)
    state = trainer.state_dict()
    assert list(state)[:4] == ["w1", "b1", "w2", "b2"] and "b1.exp_avg" not in state
    np.savez(tmp_path / "ckpt.npz", **state)
    again = T.Trainer(mlp(), T.cross_entropy, T.AdamW(lr=1e-2, weight_decay=0.5), frozen=["b1"])
    again.load_state_dict(np.load(tmp_path / "ckpt.npz"))
    assert np.array_equal(again.params["b1"], np.full(8, 0.25))
    assert again.step(x, y) == trainer.step(x, y)
    with pytest.raises(aj.Error, match="missing 'b1'"):
        again.load_state_dict({k: v for k, v in state.items() if k != "b1"})


@pytest.mark.parametrize("frozen, message", [
    (["w9"], r"Trainer: frozen names 'w9', which is not a weight of 'main' \(its weights: w1, b1, w2, b2\)"),
    (["x"], r"Trainer: frozen names 'x', which is not a weight"),
    ("b1", r"Trainer: frozen must be an iterable of weight names \(a list, not one string\), got 'b1'"),
    (["w1", "b1", "w2", "b2"], r"every weight of 'main' is frozen"),
])
def test_a_bad_frozen_is_an_error_naming_it(frozen, message):
    with pytest.raises(aj.Error, match=message):
        T.Trainer(mlp(), T.mse, T.SGD(lr=0.1), frozen=frozen)


def symbolic_mlp(h: int | str = "h") -> aj.Module:
    """mlp() with its hidden width a symbol h (or a number), and a weight of 2*h."""
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 4), "float64")
    w1, b1 = bb.param("w1", (4, h), "float64"), bb.param("b1", (h,), "float64")
    w2, g = bb.param("w2", (h, 3), "float64"), bb.param("g", (aj.Dim(h) * 2,), "float64")
    hidden = aj.op.relu(x @ w1 + b1)
    scale = aj.op.sum(g)
    return bb.finish(hidden @ w2 * scale)


@pytest.mark.parametrize("optimizer", [lambda: T.SGD(lr=0.1, momentum=0.9), lambda: T.AdamW(lr=1e-2)])
def test_weights_of_symbolic_dims_take_their_shapes_from_the_given_values(optimizer):
    rng = np.random.default_rng(0)
    given = {"w1": rng.standard_normal((4, 5)), "b1": rng.standard_normal(5), "w2": rng.standard_normal((5, 3)),
             "g": rng.standard_normal(10)}
    symbolic = T.Trainer(symbolic_mlp(), T.mse, optimizer(), params=given)
    concrete = T.Trainer(symbolic_mlp(5), T.mse, optimizer(), params=given)
    x, y = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    for _ in range(3):
        assert symbolic.step(x, y) == concrete.step(x, y)
    assert all(np.array_equal(symbolic.params[k], concrete.params[k]) for k in given)
    state = symbolic.state_dict()
    assert {k: v.shape for k, v in state.items()} == {k: v.shape for k, v in concrete.state_dict().items()}
    symbolic.load_state_dict(state)
    assert "4 weights (50 values)" in repr(symbolic)


@pytest.mark.parametrize("params, message", [
    ({"w1": np.zeros((4, 5)), "b1": np.zeros(6), "w2": np.zeros((5, 3)), "g": np.zeros(10)},
     r"^Trainer: param 'b1' has shape \(6,\), giving its dim 'h' the value 6, but param 'w1' gave h = 5$"),
    ({"w1": np.zeros((4, 5)), "b1": np.zeros(5), "w2": np.zeros((5, 3)), "g": np.zeros(9)},
     r"^Trainer: param 'g' has shape \(9,\), expected \(10,\)$"),
    ({"w1": np.zeros((4, 5)), "b1": np.zeros(5), "w2": np.zeros((5, 3))},
     r"weight 'g' has symbolic shape \('2\*h',\); give its initial value"),
    ({"w1": np.zeros((4, 5, 1)), "b1": np.zeros(5), "w2": np.zeros((5, 3)), "g": np.zeros(10)},
     r"^Trainer: param 'w1' has shape \(4, 5, 1\), expected \(4, 5\)$"),
])
def test_symbolic_weights_whose_values_disagree_are_errors_naming_them(params, message):
    with pytest.raises(aj.Error, match=message):
        T.Trainer(symbolic_mlp(), T.mse, T.SGD(lr=0.1), params=params)


def test_a_weight_dim_no_weight_gives_alone_is_bound_and_checked_by_the_first_step():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 1), "float64")
    w = bb.param("w", ("h**2",), "float64")
    mod = bb.finish(x * w)
    trainer = T.Trainer(mod, T.mse, T.SGD(lr=0.1), params={"w": np.ones(9)})
    x, y = np.ones((2, 1)), np.zeros((2, 9))
    assert trainer.step(x, y) == 1.0 and trainer.params["w"].shape == (9,)
    odd = T.Trainer(mod, T.mse, T.SGD(lr=0.1), params={"w": np.ones(8)})
    with pytest.raises(aj.ExecutionError, match=r"dim 1 is h\*\*2, got 8: no whole h >= 0 gives it"):
        odd.step(x, np.zeros((2, 8)))


@pytest.mark.parametrize("make_batch, message", [
    (lambda x, y: (np.full(x.shape, 1e40), y), "'x' holds 1e\\+40, which float32"),
    (lambda x, y: (x, y.astype(np.float64) * 1e300), "'label' holds .*, which float32"),
])
def test_a_value_the_param_dtype_does_not_hold_is_refused_before_the_step(make_batch, message):
    # regression: float64 data of 1e40 for a float32 model was cast to inf,
    # and the step ran: the weights took a NaN update before the loss check
    trainer = T.Trainer(mlp("float32"), T.mse, T.SGD(lr=0.1))
    x = data(dtype="float32")[0]
    y = np.ones((len(x), 3), np.float32)
    before = trainer.state_dict()
    with pytest.raises(aj.ExecutionError, match=f"Trainer.step: {message}"):
        trainer.step(*make_batch(x, y))
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())
    assert trainer.step_count == 0
    trainer.step(x.astype(np.float64), y)  # float64 data that float32 holds, rounded


def test_weights_and_state_the_dtype_does_not_hold_are_refused():
    # regression: a float64 weight of 1e40 for a float32 model became inf
    trainer = T.Trainer(mlp("float32"), T.mse, T.Adam(lr=0.1))
    with pytest.raises(aj.Error, match=r"Trainer: param 'w2' holds 1e\+40, which float32 does not"):
        T.Trainer(mlp("float32"), T.mse, T.Adam(lr=0.1), params={"w2": np.full((8, 3), 1e40)})
    state = trainer.state_dict()
    before = {k: v.copy() for k, v in state.items()}
    with pytest.raises(aj.Error, match=r"load_state_dict: 'w1.exp_avg' holds -1e\+300, which float32 does not"):
        trainer.load_state_dict({**state, "w1.exp_avg": np.full((4, 8), -1e300)})
    assert all(np.array_equal(before[k], v) for k, v in trainer.state_dict().items())
