"""Trainer against PyTorch, end to end: a 2-layer MLP trained 100 steps from
the same initial weights on the same batches, with every loss and every
optimizer option (momentum, nesterov, dampening, weight decay, Adam's bias
correction, amsgrad, AdamW's decoupled decay, RMSprop centered, a
learning-rate schedule changed between steps, clipping by global norm): the
same losses at every step and the same weights after the last, float64 at
rtol 1e-9 and float32 at rtol 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj
from adjoint import training as T

torch = pytest.importorskip("torch")
F = torch.nn.functional

N, D, H, C = 8, 5, 6, 3
STEPS = 100
TOLERANCE = {"float64": 1e-9, "float32": 1e-5}


def model(dtype: str, log_probs: bool = False) -> aj.Module:
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", D), dtype)
    w1, b1 = bb.param("w1", (D, H), dtype), bb.param("b1", (H,), dtype)
    w2, b2 = bb.param("w2", (H, C), dtype), bb.param("b2", (C,), dtype)
    out = aj.op.tanh(x @ w1 + b1) @ w2 + b2
    return bb.finish(aj.op.log_softmax(out) if log_probs else out)


def torch_model(params: dict, x, log_probs: bool = False):
    out = torch.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return torch.log_softmax(out, -1) if log_probs else out


def initial(dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = {"w1": (D, H), "b1": (H,), "w2": (H, C), "b2": (C,)}
    return {k: (rng.standard_normal(s) * 0.5).astype(dtype) for k, s in shapes.items()}


def batches(kind: str, dtype: str) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(2)
    out = []
    for _ in range(STEPS):
        x = rng.standard_normal((N, D)).astype(dtype)
        if kind == "index":
            y = rng.integers(0, C, N)
        elif kind == "binary":
            y = (rng.random((N, C)) < 0.5).astype(dtype)
        else:
            y = rng.standard_normal((N, C)).astype(dtype)
        out.append((x, y))
    return out


# loss name -> (our loss, torch's, label kind, model ends in log_softmax)
LOSSES = {
    "mse": (T.mse, F.mse_loss, "float", False),
    "l1": (T.l1, F.l1_loss, "float", False),
    "huber": (T.huber(delta=0.5), lambda a, b: F.huber_loss(a, b, delta=0.5), "float", False),
    "cross_entropy": (T.cross_entropy, F.cross_entropy, "index", False),
    "cross_entropy_smoothing": (T.cross_entropy(label_smoothing=0.1),
                                lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), "index", False),
    "nll": (T.nll, F.nll_loss, "index", True),
    "bce_with_logits": (T.binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits, "binary", False),
    "sum_reduction": (T.mse(reduction="sum"), lambda a, b: F.mse_loss(a, b, reduction="sum"), "float", False),
}

# name -> (ours, torch's constructor over params, clip norm)
OPTIMIZERS = {
    "sgd": (lambda: T.SGD(lr=0.05), lambda p: torch.optim.SGD(p, lr=0.05), None),
    "sgd_momentum": (lambda: T.SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), None),
    "sgd_nesterov_decay": (lambda: T.SGD(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
                           lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
                           None),
    "sgd_dampening": (lambda: T.SGD(lr=0.05, momentum=0.8, dampening=0.3),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3), None),
    "adam": (lambda: T.Adam(lr=1e-2), lambda p: torch.optim.Adam(p, lr=1e-2), None),
    "adam_l2_amsgrad": (lambda: T.Adam(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.05, amsgrad=True),
                        lambda p: torch.optim.Adam(p, lr=1e-2, betas=(0.8, 0.99), weight_decay=0.05, amsgrad=True),
                        None),
    "adamw": (lambda: T.AdamW(lr=1e-2, weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
              None),
    "rmsprop_centered_momentum": (lambda: T.RMSprop(lr=1e-3, momentum=0.9, centered=True, weight_decay=0.01),
                                  lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.9, centered=True,
                                                                weight_decay=0.01), None),
    "adam_clipped": (lambda: T.Adam(lr=1e-2, clip_grad_norm=0.5), lambda p: torch.optim.Adam(p, lr=1e-2), 0.5),
    "sgd_clipped": (lambda: T.SGD(lr=0.1, momentum=0.5, clip_grad_norm=0.3),
                    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5), 0.3),
}


def torch_losses(loss_name: str, opt_name: str, dtype: str, schedule=None) -> tuple[list[float], dict]:
    _, torch_loss, kind, log_probs = LOSSES[loss_name]
    params = {k: torch.tensor(v, requires_grad=True) for k, v in initial(dtype).items()}
    _, make_optimizer, clip = OPTIMIZERS[opt_name]
    optimizer = make_optimizer(list(params.values()))
    losses = []
    for step, (x, y) in enumerate(batches(kind, dtype)):
        if schedule is not None:
            for group in optimizer.param_groups:
                group["lr"] = schedule(step)
        loss = torch_loss(torch_model(params, torch.tensor(x), log_probs), torch.tensor(y))
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(list(params.values()), clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in params.items()}


def our_losses(loss_name: str, opt_name: str, dtype: str, schedule=None) -> tuple[list[float], dict]:
    loss, _, kind, log_probs = LOSSES[loss_name]
    trainer = T.Trainer(model(dtype, log_probs), loss, OPTIMIZERS[opt_name][0](), params=initial(dtype))
    losses = []
    for step, (x, y) in enumerate(batches(kind, dtype)):
        losses.append(trainer.step(x, y, lr=None if schedule is None else schedule(step)))
    return losses, {k: np.array(v) for k, v in trainer.params.items()}


def assert_same_training(ours, theirs, dtype):
    rtol = TOLERANCE[dtype]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol, atol=rtol * 1e-3, err_msg="losses")
    for name in theirs[1]:
        np.testing.assert_allclose(ours[1][name], theirs[1][name], rtol=rtol, atol=rtol * 1e-2, err_msg=name)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("loss_name", sorted(LOSSES))
def test_every_loss_trains_as_torch_does(loss_name, dtype):
    assert_same_training(our_losses(loss_name, "adam", dtype), torch_losses(loss_name, "adam", dtype), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_every_optimizer_trains_as_torch_does(opt_name, dtype):
    assert_same_training(our_losses("cross_entropy", opt_name, dtype),
                         torch_losses("cross_entropy", opt_name, dtype), dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam", "adamw"])
def test_a_schedule_changed_between_steps(opt_name, dtype):
    def schedule(step):  # warm up, then step down: lr changes at run time, no rebuild
        return 0.02 * min(1.0, (step + 1) / 10) * (0.5 if step >= 60 else 1.0)

    assert_same_training(our_losses("mse", opt_name, dtype, schedule),
                         torch_losses("mse", opt_name, dtype, schedule), dtype)


def test_a_schedule_given_to_the_optimizer():
    dtype = "float64"
    schedule = lambda step: 0.05 / (1 + step)  # noqa: E731
    trainer = T.Trainer(model(dtype), T.mse, T.SGD(lr=schedule, momentum=0.9), params=initial(dtype))
    ours = [trainer.step(x, y) for x, y in batches("float", dtype)]
    assert trainer.step_count == STEPS
    theirs = torch_losses("mse", "sgd_momentum", dtype, schedule)
    assert_same_training((ours, {k: np.array(v) for k, v in trainer.params.items()}), theirs, dtype)


# ---- a from_torch model with buffers: read by the step, never trained ----

def step_alongside_torch(trainer, ref, optimizer, data):
    """A step of `trainer` and of torch's `optimizer` on `ref` per batch
    of (x, y); the losses agree at rtol 1e-12 each step."""
    for x, y in data:
        loss = F.cross_entropy(ref(torch.as_tensor(x)), torch.as_tensor(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        np.testing.assert_allclose(trainer.step(x, y), loss.item(), rtol=1e-12)


def batch_norm_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, C)).double().eval()


BUFFERS = ("p_1_running_mean", "p_1_running_var")


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adamw"])
def test_a_batch_norm_model_trains_as_torch_does_and_keeps_its_running_statistics(opt_name):
    """torch trains a module's parameters only: its BatchNorm's running mean
    and variance (persistent buffers, params of the imported function) are
    read by every step and left as they are, also by weight decay."""
    ref = batch_norm_mlp()
    with torch.no_grad():  # statistics other than the 0 and 1 a new BatchNorm has
        ref[1].running_mean.copy_(torch.linspace(-0.5, 0.5, 8, dtype=torch.float64))
        ref[1].running_var.copy_(torch.linspace(0.5, 2.0, 8, dtype=torch.float64))
    data = batches("index", "float64")[:30]
    mod = aj.from_torch(ref, (torch.as_tensor(data[0][0]),), dynamic_shapes=({0: torch.export.Dim("n")},))
    make_ours, make_theirs, _ = OPTIMIZERS[opt_name]
    trainer = T.Trainer(mod, T.cross_entropy, make_ours(), params=aj.from_torch_state(ref, mod))
    before = {name: np.array(trainer.params[name]) for name in BUFFERS}
    step_alongside_torch(trainer, ref, make_theirs(ref.parameters()), data)
    for name in BUFFERS:
        assert np.array_equal(trainer.params[name], before[name]), name
    state = aj.to_torch_state(dict(trainer.params), ref)
    for name, value in ref.state_dict().items():
        if name in state:
            np.testing.assert_allclose(state[name].numpy(), value.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    assert set(ref.state_dict()) - set(state) == {"1.num_batches_tracked"}  # not read in eval mode
    assert trainer.layout.frozen == BUFFERS and not set(BUFFERS) & set(trainer.layout.params)
    assert not any(name.startswith(BUFFERS) for name in trainer.layout.state)  # no optimizer state for them


def test_frozen_names_parameters_torch_does_not_train():
    """frozen=[...] keeps parameters as requires_grad=False keeps them in
    torch; the buffers are then trained only when frozen lists none of them
    (frozen=() trains every weight, as before frozen= existed)."""
    ref = batch_norm_mlp()
    ref[0].weight.requires_grad_(False)
    data = batches("index", "float64")[:10]
    mod = aj.from_torch(ref, (torch.as_tensor(data[0][0]),))
    frozen = ["p_0_weight", *BUFFERS]
    trainer = T.Trainer(mod, T.cross_entropy, T.SGD(lr=0.5), params=aj.from_torch_state(ref, mod), frozen=frozen)
    assert trainer.layout.frozen == ("p_0_weight", *BUFFERS)
    step_alongside_torch(trainer, ref, torch.optim.SGD([p for p in ref.parameters() if p.requires_grad], lr=0.5), data)
    assert np.array_equal(trainer.params["p_0_weight"], ref[0].weight.numpy())

    everything = T.Trainer(mod, T.cross_entropy, T.SGD(lr=0.5), params=aj.from_torch_state(batch_norm_mlp(), mod),
                           frozen=())
    assert everything.layout.frozen == () and set(BUFFERS) <= set(everything.layout.params)
    everything.step(*data[0])
    assert not np.array_equal(everything.params["p_1_running_var"], np.ones(8))


def test_a_lifted_model_keeps_what_it_computes_from_buffers_alone_frozen():
    """LiftTransformParams left the running mean's lifted reshape out of
    frozen, so a Trainer on the lifted model trained it."""
    ref = batch_norm_mlp()
    data = batches("index", "float64")[:3]
    mod = aj.from_torch(ref, (torch.as_tensor(data[0][0]),))
    lifted = aj.transform.LiftTransformParams()(mod)
    transformed = aj.build(lifted)["main_transform_params"](*aj.from_torch_state(ref, mod).values())
    params = {p.name_hint: np.asarray(v) for p, v in zip(lifted["main"].params[1:], transformed)}
    trainer = T.Trainer(lifted, T.cross_entropy, T.SGD(lr=0.5), params=params)
    (mean,) = trainer.layout.frozen
    np.testing.assert_array_equal(params[mean], ref[1].running_mean.numpy())
    for x, y in data:
        trainer.step(x, y)
    np.testing.assert_array_equal(trainer.params[mean], ref[1].running_mean.numpy())


def test_parameters_with_requires_grad_false_are_frozen_as_torch_leaves_them():
    """from_torch froze only the buffers: a layer with requires_grad=False
    was trained, and its weights and the loss left torch's after a step."""
    ref = batch_norm_mlp()
    ref[0].weight.requires_grad_(False)
    ref[0].bias.requires_grad_(False)
    data = batches("index", "float64")[:10]
    mod = aj.from_torch(ref, (torch.as_tensor(data[0][0]),))
    assert mod["main"].frozen == ("p_0_weight", "p_0_bias", *BUFFERS)
    trainer = T.Trainer(mod, T.cross_entropy, T.SGD(lr=0.5), params=aj.from_torch_state(ref, mod))
    step_alongside_torch(trainer, ref, torch.optim.SGD([p for p in ref.parameters() if p.requires_grad], lr=0.5), data)
    assert np.array_equal(trainer.params["p_0_weight"], ref[0].weight.numpy())


def test_the_buffers_from_torch_records_survive_printing_parsing_and_pickling():
    import pickle

    mod = aj.from_torch(batch_norm_mlp(), (torch.randn(4, D, dtype=torch.float64),))
    assert mod["main"].attrs["frozen"] == ", ".join(BUFFERS)
    assert '@function(num_input=1, frozen="p_1_running_mean, p_1_running_var")' in mod.script()
    for again in (aj.parse(mod.script()), pickle.loads(pickle.dumps(mod)),
                  aj.transform.ConvertDType("float32", from_dtype="float64")(mod)):
        _, layout = T.SetupTrainer(T.cross_entropy, T.SGD(lr=0.1)).with_layout(again)
        assert layout.frozen == BUFFERS
    plain = aj.from_torch(torch.nn.Linear(3, 2), (torch.randn(4, 3),))
    assert "frozen" not in plain["main"].attrs  # no buffers, nothing frozen
