"""One training step as one function: ``SetupTrainer`` / ``train_step``.

``step(inputs..., labels..., params..., state..., lr) -> (loss, new params...,
new state...)`` is built from the model's loss function (AppendLoss), its
adjoint (Gradient, simplified), and the optimizer's update, inlined into one
body; then common subexpressions are merged and dead code removed over the
whole, so the passes see the forward pass, the backward pass and the update
as one graph. ``params`` are the model function's weights (params at index >=
``num_input``) that are trained; ``frozen`` are the weights it reads but does
not train (not differentiated, not updated, no optimizer state): by default
the ones the function's ``frozen`` attr names (``frozen="a, b"``; what
``aj.from_torch`` gives for a module's persistent buffers, such as a
BatchNorm's running statistics). ``lr`` is a scalar of the trained weights'
dtype, a run-time input, so a schedule needs no rebuild.

    step(inputs..., labels..., params..., frozen..., state..., lr)
        -> (loss, new params..., new state...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .. import transform
from ..builder import FunctionBuilder
from ..errors import Error, TransformError
from ..ir import Module
from ._checks import shown
from .append_loss import AppendLoss, loss_name


@dataclass(frozen=True)
class StepLayout:
    """Where each group sits in ``step``'s params: inputs, labels, params
    (the weights trained), frozen (the weights read, not updated), state and
    lr, by name, in order. The results are the loss, the new params, then the
    new state."""

    inputs: tuple[str, ...]
    labels: tuple[str, ...]
    params: tuple[str, ...]
    state: tuple[str, ...]
    frozen: tuple[str, ...] = ()

    @property
    def lr_index(self) -> int:
        return self.state_index + len(self.state)

    @property
    def param_index(self) -> int:
        return len(self.inputs) + len(self.labels)

    @property
    def frozen_index(self) -> int:
        return self.param_index + len(self.params)

    @property
    def state_index(self) -> int:
        return self.frozen_index + len(self.frozen)


def weight_count(who: str, fn: Any, func_name: str) -> int:
    """How many trailing params of ``fn`` are weights; an error without num_input."""
    num_input = fn.attrs.get("num_input")
    if num_input is None:
        raise TransformError(f"{who}: function '{func_name}' has no num_input, so its inputs cannot be told "
                             f"from its weights; build it with num_input=k (the first k params are inputs)")
    n = len(fn.params) - int(num_input)
    if n == 0:
        raise TransformError(f"{who}: function '{func_name}' has no weights to train (num_input={num_input} "
                             f"covers all {len(fn.params)} params)")
    return n


def checked_frozen(who: str, frozen: Any) -> tuple | None:
    """``frozen`` as a tuple of names, or None; an ``aj.Error`` for one
    string (which would be its letters) or anything not iterable."""
    if frozen is None:
        return None
    if isinstance(frozen, (str, bytes)) or not isinstance(frozen, Iterable):
        raise Error(f"{who}: frozen must be an iterable of weight names (a list, not one string), "
                    f"got {shown(frozen)}")
    return tuple(frozen)


def frozen_weights(who: str, fn: Any, func_name: str, frozen: tuple | None) -> tuple[str, ...]:
    """The weights of ``fn`` not to train, in param order: those ``frozen``
    names, or when it is None those of ``fn``'s ``frozen`` attr; a
    ``TransformError`` (an ``aj.Error``) naming a name that is not a weight
    (an input, a typo, a buffer a pass renamed), or saying that ``fn`` has
    no num_input (so no weights to tell its names from)."""
    weights = [p.name_hint for p in fn.params[len(fn.params) - weight_count(who, fn, func_name):]]
    names = fn.frozen if frozen is None else frozen
    for name in names:
        if name not in weights:
            source = f"the frozen attr of '{func_name}' lists" if frozen is None else "frozen names"
            listed = f"its weights: {', '.join(weights)}" if weights else "it has none"
            hint = "; pass frozen=[...] to say which weights to keep" if frozen is None else ""
            raise TransformError(f"{who}: {source} {shown(name)}, which is not a weight of '{func_name}' "
                                 f"({listed}){hint}")
    return tuple(w for w in weights if w in names)


class SetupTrainer:
    """A pass adding the function ``step`` (see the module docstring) for
    ``loss`` and ``optimizer`` to a module holding the model ``func_name``.
    ``frozen`` names the weights to read but not train; None (the default)
    means the ones the function's ``frozen`` attr lists (``aj.from_torch``'s buffers), ()
    trains every weight."""

    #: The name errors begin with: the entry point the user called
    #: (``train_step`` and ``Trainer`` give theirs through ``called_from``).
    who = "SetupTrainer"

    @classmethod
    def called_from(cls, who: str, *args: Any, **kwargs: Any) -> "SetupTrainer":
        """``SetupTrainer(*args, **kwargs)`` whose errors begin with ``who``."""
        setup = cls.__new__(cls)
        setup.who = who
        setup.__init__(*args, **kwargs)
        return setup

    def __init__(self, loss: Callable[..., Any], optimizer: Any, func_name: str = "main",
                 num_backbone_outputs: int = 1, step_name: str = "step", *,
                 labels: Sequence[tuple] | None = None, frozen: Iterable[str] | None = None) -> None:
        if isinstance(optimizer, type):
            raise Error(f"{self.who}: optimizer is the class {optimizer.__name__}; pass an instance, "
                        f"such as {optimizer.__name__}(lr=0.01)")
        for attr in ("state_types", "update"):
            if not hasattr(optimizer, attr):
                raise Error(f"{self.who}: optimizer must be an adjoint.training optimizer (SGD, Adam, ...), "
                            f"got {type(optimizer).__name__}")
        self.loss = loss
        self.optimizer = optimizer
        self.func_name = func_name
        self.num_backbone_outputs = num_backbone_outputs
        self.step_name = step_name
        self.labels = labels
        self.frozen = checked_frozen(self.who, frozen)

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
            raise Error(f"{self.who}: expected an aj.Module, got {type(mod).__name__}")
        if self.step_name in mod:
            raise TransformError(f"{self.who}: the module already has a function '{self.step_name}'")
        with_loss = AppendLoss(self.func_name, self.loss, self.num_backbone_outputs, self.labels)(mod)
        loss_fn_name = f"{self.func_name}_loss"
        loss_fn = with_loss[loss_fn_name]
        model = with_loss[self.func_name]
        n_weights = weight_count(self.who, model, self.func_name)
        frozen = set(frozen_weights(self.who, model, self.func_name, self.frozen))
        split = len(loss_fn.params) - n_weights
        all_weights = list(loss_fn.params[split:])
        if len(frozen) == n_weights:
            raise TransformError(f"{self.who}: every weight of '{self.func_name}' is frozen "
                                 f"({', '.join(w.name_hint for w in all_weights)}); nothing is left to train")
        trained = [i for i, w in enumerate(all_weights) if w.name_hint not in frozen]
        kept = [i for i, w in enumerate(all_weights) if w.name_hint in frozen]
        weights = [all_weights[i] for i in trained]
        for w in weights:
            if w.type.dtype not in ("float32", "float64"):
                raise TransformError(f"{self.who}: weight '{w.name_hint}' of '{self.func_name}' is {w.type.dtype}, "
                                     f"which has no gradient to train it by; freeze it (frozen=[...], or the "
                                     f"function's frozen attr) to have the step read it as it is")
        n_labels = split - int(model.attrs["num_input"])
        grads = transform.Gradient(loss_fn_name, require_grads=[w.name_hint for w in weights])(with_loss)
        adjoint = grads[f"{loss_fn_name}_adjoint"]
        param_types = [(w.name_hint, tuple(w.type.shape), w.type.dtype) for w in weights]
        state_types = self.optimizer.state_types(param_types)
        layout = StepLayout(tuple(p.name_hint for p in loss_fn.params[:split - n_labels]),
                            tuple(p.name_hint for p in loss_fn.params[split - n_labels:split]),
                            tuple(w.name_hint for w in weights), tuple(name for name, _, _ in state_types),
                            tuple(all_weights[i].name_hint for i in kept))
        bb = FunctionBuilder(self.step_name)
        with bb:
            args = [bb.param(p.name_hint, p.type.shape, p.type.dtype) for p in loss_fn.params[:split]]
            by_index = {i: bb.param(all_weights[i].name_hint, all_weights[i].type.shape, all_weights[i].type.dtype)
                        for i in trained + kept}
            state = [bb.param(name.replace(".", "_"), shape, dtype) for name, shape, dtype in state_types]
            lr = bb.param("lr", (), weights[0].type.dtype)
            result, grad_vars = bb.inline(adjoint, *args, *(by_index[i] for i in range(n_weights)))
            loss = result[0] if isinstance(result, tuple) else result
            new_params, new_state = self.optimizer.update([by_index[i] for i in trained], list(grad_vars), state, lr)
            step = bb.finish((loss, *new_params, *new_state))
        cleanup = transform.Sequential([transform.EliminateCommonSubexpr(), transform.DeadCodeElimination()])
        return cleanup(step), layout


def train_step(mod: Module, loss: Callable[..., Any], optimizer: Any, func_name: str = "main",
               num_backbone_outputs: int = 1, *, labels: Sequence[tuple] | None = None,
               frozen: Iterable[str] | None = None) -> Module:
    """``mod`` with the training step function ``step`` added:
    ``SetupTrainer(loss, optimizer, func_name, num_backbone_outputs, labels=labels, frozen=frozen)(mod)``."""
    return SetupTrainer.called_from("train_step", loss, optimizer, func_name, num_backbone_outputs, labels=labels,
                                    frozen=frozen)(mod)
