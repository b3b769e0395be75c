"""The two models of the training benchmark (an MLP with a cross-entropy loss
on class indices, the transformer block of graphs.py with an MSE loss) and,
for each system compared (adjoint, PyTorch eager, JAX), a function making
one Adam training step on a fixed batch from the same initial params.

Every step function returns the step's loss as a Python float, so each
system finishes its step (JAX's asynchronous dispatch included) before the
next one starts."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import adjoint as aj
from adjoint.bench.graphs import transformer_block

LR = 1e-3


@dataclass
class Model:
    name: str
    module: aj.Module          # main(x, params...) -> prediction
    names: list[str]           # the params' names, in order
    init: list[np.ndarray]     # their initial values
    x: np.ndarray
    y: np.ndarray              # class indices (int64) or a target of the prediction's shape
    loss: str                  # "cross_entropy" or "mse"
    dims: dict                 # the sizes the model was built with


def mlp(batch: int = 256, sizes: tuple[int, ...] = (784, 1024, 1024, 10), seed: int = 0) -> Model:
    """relu MLP with nn.Linear-style layers (x @ W.T + b, W of shape (out, in)),
    float32; the loss is the mean cross-entropy of its logits on class indices."""
    rng = np.random.default_rng(seed)
    bb = aj.FunctionBuilder("main", num_input=1)
    h = bb.param("x", (batch, sizes[0]), "float32")
    names, init = [], []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        w, bias = bb.param(f"w{i}", (b, a), "float32"), bb.param(f"b{i}", (b,), "float32")
        names += [f"w{i}", f"b{i}"]
        init += [(rng.standard_normal((b, a)) / math.sqrt(a)).astype(np.float32),
                 (0.01 * rng.standard_normal(b)).astype(np.float32)]
        h = h @ w.T + bias
        if i < len(sizes) - 2:
            h = aj.op.relu(h)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch).astype(np.int64)
    return Model("mlp", bb.finish(h), names, init, x, y, "cross_entropy",
                 {"batch": batch, "sizes": list(sizes)})


def transformer(batch: int = 4, seq: int = 128, hidden: int = 512, heads: int = 8, ffn: int = 2048,
                seed: int = 0) -> Model:
    """The transformer block of graphs.py (pre-norm, nn.Linear-style weights),
    its output against a random target of its shape by the mean squared error."""
    g = transformer_block(batch=batch, seq=seq, hidden=hidden, heads=heads, ffn=ffn, seed=seed)
    names = [p.name_hint for p in g.module["main"].params[1:]]
    y = np.random.default_rng(seed + 1).standard_normal(g.inputs[0].shape).astype(np.float32)
    return Model("transformer", g.module, names, g.inputs[1:], g.inputs[0], y, "mse",
                 {"batch": batch, "seq": seq, "hidden": hidden, "heads": heads, "ffn": ffn})


MODELS: dict[str, Callable[..., Model]] = {"mlp": mlp, "transformer": transformer}


def adjoint_step(model: Model) -> tuple[Callable[[], float], object]:
    """``Trainer.step`` on the model's batch; also returns the trainer."""
    from adjoint import training as T

    loss = {"cross_entropy": T.cross_entropy, "mse": T.mse}[model.loss]
    trainer = T.Trainer(model.module, loss, T.Adam(lr=LR), params=dict(zip(model.names, model.init)))
    return (lambda: float(trainer.step(model.x, model.y))), trainer


@dataclass(frozen=True)
class Gemm:
    """One matmul of a step: its operands as stored (shape, dtype), each
    with whether the step reads it transposed (a ``permute_dims`` of its last
    two axes, which the executor folds into the GEMM), and the call's attrs."""
    lhs: tuple[int, ...]
    lhs_transposed: bool
    rhs: tuple[int, ...]
    rhs_transposed: bool
    dtype: str
    attrs: dict


def step_gemms(trainer) -> list[Gemm]:
    """The matmuls of ``trainer``'s step function, in order."""
    step_fn = trainer.module["step"]
    values = {b.var: b.value for b in step_fn.bindings}

    def operand(arg) -> tuple[tuple[int, ...], bool]:
        value = values.get(arg)
        transposed = value is not None and _is_transpose(value)
        return tuple((value.args[0] if transposed else arg).type.shape), transposed

    return [Gemm(*operand(call.args[0]), *operand(call.args[1]), call.args[0].type.dtype, dict(call.attrs))
            for call in (b.value for b in step_fn.bindings) if getattr(call, "op", None) == "matmul"]


def gemms_alone(trainer) -> functools.partial:
    """The matmuls of ``trainer``'s step function and nothing else, on
    operands of their shapes: a function of adjoint's executor making each
    of them, an operand that the step passes transposed (a folded
    ``permute_dims``) passed transposed here too, each result written over a
    donated array. Its time is the part of a step no change outside the
    GEMMs can remove (bench/train.py reports it beside the step). A
    ``functools.partial`` of that function (``.func``) and its arrays."""
    rng = np.random.default_rng(0)
    bb = aj.FunctionBuilder("gemms")
    arrays, results = [], []

    def operand(shape: tuple[int, ...], transposed: bool, dtype: str, name: str):
        arrays.append(rng.standard_normal(shape).astype(dtype))
        param = bb.param(name, shape, dtype)
        return _swap_last_two(param) if transposed else param

    with bb:
        for i, g in enumerate(step_gemms(trainer)):
            lhs = operand(g.lhs, g.lhs_transposed, g.dtype, f"a{i}")
            rhs = operand(g.rhs, g.rhs_transposed, g.dtype, f"b{i}")
            results.append(aj.op.matmul(lhs, rhs, **g.attrs))
        first_output = len(arrays)
        for i, r in enumerate(results):
            bb.param(f"out{i}", tuple(r.type.shape), r.type.dtype)
            arrays.append(np.empty(tuple(r.type.shape), r.type.dtype))
        module = bb.finish(tuple(results))
    run = aj.build(module)["gemms"].donating({first_output + i: i for i in range(len(results))})
    return functools.partial(run, *arrays)


def torch_gemms_alone(gemms: list[Gemm]) -> Callable[[], list]:
    """The same matmuls in PyTorch: ``torch.matmul`` of operands of their
    shapes (a transposed one as a transposed view, as ``nn.Linear`` passes
    its weight), each into an ``out`` tensor made once. Its time against
    torch's step shows how much of that step is GEMMs."""
    import torch

    generator = torch.Generator().manual_seed(0)

    def operand(shape: tuple[int, ...], transposed: bool, dtype: str):
        t = torch.randn(shape, generator=generator).to(getattr(torch, dtype))
        return t.mT if transposed else t

    calls = []
    for g in gemms:
        dtype = str(g.attrs.get("out_dtype") or g.dtype)  # torch multiplies in the result's dtype
        lhs, rhs = operand(g.lhs, g.lhs_transposed, dtype), operand(g.rhs, g.rhs_transposed, dtype)
        calls.append((lhs, rhs, torch.matmul(lhs, rhs)))  # the third: the out tensor

    def run() -> list:
        return [torch.matmul(lhs, rhs, out=out) for lhs, rhs, out in calls]

    return run


def _last_two_swapped(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


def _swap_last_two(x):
    return aj.op.permute_dims(x, axes=_last_two_swapped(len(x.type.shape)))


def _is_transpose(value) -> bool:
    """Whether ``value`` is a permute_dims swapping its operand's last two
    axes, which the executor folds into the GEMM reading it."""
    if getattr(value, "op", None) != "permute_dims":
        return False
    rank = len(value.args[0].type.shape)
    axes = value.attrs["axes"]
    axes = list(axes) if axes is not None else list(range(rank))[::-1]
    return rank >= 2 and axes == _last_two_swapped(rank)


def torch_step(model: Model) -> Callable[[], float]:
    """PyTorch eager: forward, backward, ``optimizer.step()``,
    ``zero_grad(set_to_none=True)``, with torch.optim.Adam's default settings."""
    import torch

    params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in model.init]
    forward = _torch_forward(model, params)
    x, y = torch.from_numpy(model.x), torch.from_numpy(model.y)
    loss_fn = {"cross_entropy": torch.nn.functional.cross_entropy, "mse": torch.nn.functional.mse_loss}[model.loss]
    optimizer = torch.optim.Adam(params, lr=LR)

    def step() -> float:
        loss = loss_fn(forward(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def _torch_forward(model: Model, params: list) -> Callable:
    import torch

    if model.name == "transformer":
        torch_fn = transformer_block(**model.dims).torch_fn
        return lambda x: torch_fn(x, *params)
    layers = []
    for i in range(0, len(params), 2):
        linear = torch.nn.Linear(params[i].shape[1], params[i].shape[0])
        linear.weight, linear.bias = params[i], params[i + 1]
        layers += [linear, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def jax_step(model: Model) -> Callable[[], float]:
    """``jax.jit`` of ``jax.value_and_grad`` and ``optax.adam``, with the
    params and the optimizer state donated to each step."""
    import jax
    import jax.numpy as jnp
    import optax

    forward = {"mlp": _jax_mlp, "transformer": _jax_transformer}[model.name](model)
    if model.loss == "cross_entropy":
        def loss_of(params, x, y):
            return optax.softmax_cross_entropy_with_integer_labels(forward(params, x), y).mean()
    else:
        def loss_of(params, x, y):
            return jnp.mean((forward(params, x) - y) ** 2)
    optimizer = optax.adam(LR)

    def update(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_of)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    update = jax.jit(update, donate_argnums=(0, 1))
    params = [jnp.asarray(a) for a in model.init]
    state = {"params": params, "opt": optimizer.init(params)}
    x, y = jnp.asarray(model.x), jnp.asarray(model.y)

    def step() -> float:
        state["params"], state["opt"], loss = update(state["params"], state["opt"], x, y)
        return float(loss)

    return step


def _jax_mlp(model: Model) -> Callable:
    import jax

    def forward(params, x):
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i].T + params[i + 1]
            if i < len(params) - 2:
                h = jax.nn.relu(h)
        return h

    return forward


def _jax_transformer(model: Model) -> Callable:
    """The block as graphs.transformer_block builds it, in jax.numpy."""
    import jax
    import jax.numpy as jnp

    batch, seq, hidden, heads = (model.dims[k] for k in ("batch", "seq", "hidden", "heads"))
    d, tokens = hidden // heads, batch * seq

    def layer_norm(t, g, b):
        mu = t.mean(-1, keepdims=True)
        var = ((t - mu) ** 2).mean(-1, keepdims=True)
        return (t - mu) * jax.lax.rsqrt(var + 1e-5) * g + b

    def heads_first(t):
        return t.reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)

    def forward(params, x):
        g1, be1, wq, wk, wv, wo, g2, be2, w1, w2 = params
        h = layer_norm(x, g1, be1)
        q, k, v = heads_first(h @ wq.T), heads_first(h @ wk.T), heads_first(h @ wv.T)
        s = jax.nn.softmax((q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(d)), axis=-1)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(tokens, hidden)
        x2 = x + a @ wo.T
        return x2 + jax.nn.gelu(layer_norm(x2, g2, be2) @ w1.T, approximate=False) @ w2.T

    return forward


SYSTEMS = {"adjoint": lambda m: adjoint_step(m)[0], "torch": torch_step, "jax": jax_step}
