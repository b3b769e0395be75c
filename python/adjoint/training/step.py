"""One training step as one function: ``SetupTrainer`` / ``train_step``.

``step(inputs..., labels..., params..., state..., lr) -> (loss, new params...,
new state...)`` is built from the model's loss function (AppendLoss), its
adjoint (Gradient, simplified), and the optimizer's update, inlined into one
body; then common subexpressions are merged and dead code removed over the
whole, so the passes see the forward pass, the backward pass and the update
as one graph. ``params`` are the model function's weights (params at index >=
``num_input``); ``lr`` is a scalar of their dtype, a run-time input, so a
schedule needs no rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import transform
from ..builder import FunctionBuilder
from ..errors import Error, TransformError
from ..ir import Module
from .append_loss import AppendLoss, loss_name


@dataclass(frozen=True)
class StepLayout:
    """Where each group sits in ``step``'s params and results: inputs, labels,
    params (weights), state and lr, by name, in order."""

    inputs: tuple[str, ...]
    labels: tuple[str, ...]
    params: tuple[str, ...]
    state: tuple[str, ...]

    @property
    def lr_index(self) -> int:
        return len(self.inputs) + len(self.labels) + len(self.params) + len(self.state)

    @property
    def param_index(self) -> int:
        return len(self.inputs) + len(self.labels)

    @property
    def state_index(self) -> int:
        return self.param_index + len(self.params)


def weight_count(fn: Any, func_name: str) -> int:
    """How many trailing params of ``fn`` are weights; an error without num_input."""
    num_input = fn.attrs.get("num_input")
    if num_input is None:
        raise TransformError(f"train_step: function '{func_name}' has no num_input, so its inputs cannot be told "
                             f"from its weights; build it with num_input=k (the first k params are inputs)")
    n = len(fn.params) - int(num_input)
    if n == 0:
        raise TransformError(f"train_step: function '{func_name}' has no weights to train (num_input={num_input} "
                             f"covers all {len(fn.params)} params)")
    return n


class SetupTrainer:
    """A pass adding the function ``step`` (see the module docstring) for
    ``loss`` and ``optimizer`` to a module holding the model ``func_name``."""

    def __init__(self, loss: Callable[..., Any], optimizer: Any, func_name: str = "main",
                 num_backbone_outputs: int = 1, step_name: str = "step", *,
                 labels: Sequence[tuple] | None = None) -> None:
        if isinstance(optimizer, type):
            raise Error(f"SetupTrainer: optimizer is the class {optimizer.__name__}; pass an instance, "
                        f"such as {optimizer.__name__}(lr=0.01)")
        for attr in ("state_types", "update"):
            if not hasattr(optimizer, attr):
                raise Error(f"SetupTrainer: optimizer must be an adjoint.training optimizer (SGD, Adam, ...), "
                            f"got {type(optimizer).__name__}")
        self.loss = loss
        self.optimizer = optimizer
        self.func_name = func_name
        self.num_backbone_outputs = num_backbone_outputs
        self.step_name = step_name
        self.labels = labels

    def __repr__(self) -> str:
        return f"SetupTrainer({loss_name(self.loss)}, {self.optimizer!r}, func_name={self.func_name!r})"

    def __call__(self, mod: Module) -> Module:
        return self.with_layout(mod)[0]

    def with_layout(self, mod: Module) -> tuple[Module, StepLayout]:
        """``mod`` with ``step`` added, and where each group sits in its params."""
        step, layout = self._build(mod)
        return Module({**{n: mod[n] for n in mod.functions}, self.step_name: step[self.step_name]}), layout

    def _build(self, mod: Module) -> tuple[Module, StepLayout]:
        if not isinstance(mod, Module):
            raise Error(f"SetupTrainer: expected an aj.Module, got {type(mod).__name__}")
        if self.step_name in mod:
            raise TransformError(f"SetupTrainer: the module already has a function '{self.step_name}'")
        with_loss = AppendLoss(self.func_name, self.loss, self.num_backbone_outputs, self.labels)(mod)
        loss_fn_name = f"{self.func_name}_loss"
        loss_fn = with_loss[loss_fn_name]
        n_weights = weight_count(with_loss[self.func_name], self.func_name)
        weights = list(loss_fn.params[len(loss_fn.params) - n_weights:])
        split = len(loss_fn.params) - n_weights
        n_labels = split - int(with_loss[self.func_name].attrs["num_input"])
        grads = transform.Gradient(loss_fn_name, require_grads=[w.name_hint for w in weights])(with_loss)
        adjoint = grads[f"{loss_fn_name}_adjoint"]
        param_types = [(w.name_hint, tuple(w.type.shape), w.type.dtype) for w in weights]
        state_types = self.optimizer.state_types(param_types)
        layout = StepLayout(tuple(p.name_hint for p in loss_fn.params[:split - n_labels]),
                            tuple(p.name_hint for p in loss_fn.params[split - n_labels:split]),
                            tuple(w.name_hint for w in weights), tuple(name for name, _, _ in state_types))
        bb = FunctionBuilder(self.step_name)
        with bb:
            args = [bb.param(p.name_hint, p.type.shape, p.type.dtype) for p in loss_fn.params]
            state = [bb.param(name.replace(".", "_"), shape, dtype) for name, shape, dtype in state_types]
            lr = bb.param("lr", (), weights[0].type.dtype)
            result, grad_vars = bb.inline(adjoint, *args)
            loss = result[0] if isinstance(result, tuple) else result
            new_params, new_state = self.optimizer.update(args[split:], list(grad_vars), state, lr)
            step = bb.finish((loss, *new_params, *new_state))
        cleanup = transform.Sequential([transform.EliminateCommonSubexpr(), transform.DeadCodeElimination()])
        return cleanup(step), layout


def train_step(mod: Module, loss: Callable[..., Any], optimizer: Any, func_name: str = "main",
               num_backbone_outputs: int = 1, *, labels: Sequence[tuple] | None = None) -> Module:
    """``mod`` with the training step function ``step`` added:
    ``SetupTrainer(loss, optimizer, func_name, num_backbone_outputs, labels=labels)(mod)``."""
    return SetupTrainer(loss, optimizer, func_name, num_backbone_outputs, labels=labels)(mod)
