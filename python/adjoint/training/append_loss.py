"""AppendLoss: the pass that turns a model function into a loss function.

``AppendLoss("main", T.cross_entropy)(mod)`` adds ``main_loss``: main's
inputs, then one label param per loss target, then main's weights (so
``num_input`` still separates run-time values from weights), computing main
inline and feeding its first ``num_backbone_outputs`` results and the labels
to the loss. Backbone results past those are returned after the loss, as
TVM's ``relax.training.AppendLoss`` does.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .. import _core
from ..builder import FunctionBuilder
from ..errors import Error, TransformError
from ..ir import Module
from ._checks import checked_int, checked_shape, shown
from .losses import Loss


def loss_name(loss: Any) -> str:
    """What to call a loss in messages: a Loss's name, else the callable's."""
    if isinstance(loss, functools.partial):
        return loss_name(loss.func)
    return str(getattr(loss, "name", None) or getattr(loss, "__name__", None) or type(loss).__name__)


def label_types(loss: Any, preds: Sequence[_core.Type], labels: Sequence[tuple] | None) -> list[tuple]:
    """The (shape, dtype) of each label param: ``labels`` when given, else
    what the loss asks for its one prediction (``Loss.label_types``; for a
    ``functools.partial`` of a Loss, that Loss with the partial's options)."""
    if labels is not None:
        return _checked_labels(loss, labels)
    ask = getattr(loss, "label_types", None)
    if isinstance(loss, functools.partial) and not loss.args:
        ask = getattr(loss.func(**loss.keywords) if isinstance(loss.func, Loss) else loss.func, "label_types", None)
    if ask is None:
        raise TransformError(f"AppendLoss: cannot tell what labels the loss '{loss_name(loss)}' takes; "
                             "pass labels=[(shape, dtype), ...]")
    if len(preds) != 1:
        raise TransformError(f"AppendLoss: the loss '{loss_name(loss)}' takes one prediction, but "
                             f"num_backbone_outputs is {len(preds)}; pass labels=[(shape, dtype), ...] "
                             "and a loss taking every prediction")
    return [(tuple(shape), str(dtype)) for shape, dtype in ask(preds[0])]


def _checked_labels(loss: Any, labels: Any) -> list[tuple]:
    """``labels`` as a list of (shape tuple, dtype name); an error naming
    the first entry that is not a (shape, dtype) pair."""
    entries = list(labels) if isinstance(labels, (list, tuple)) else None
    if entries is None:
        raise TransformError(f"AppendLoss: labels must be a list of (shape, dtype) pairs, got {shown(labels)}")
    out = []
    for i, entry in enumerate(entries):
        what = f"labels[{i}] of the loss '{loss_name(loss)}'"
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise TransformError(f"AppendLoss: {what} must be a (shape, dtype) pair, got {shown(entry)}")
        out.append((checked_shape("AppendLoss", what, entry[0], TransformError), str(entry[1])))
    return out


def _outputs(ret: Any) -> list[Any]:
    """The inlined function's results, one per field of its tuple result: a
    var bound to a tuple (``s = split(y, 2); return s``) taken apart too."""
    if isinstance(ret, tuple):
        return list(ret)
    return [ret[i] for i in range(len(ret.type.fields))] if ret.type.is_tuple else [ret]


class AppendLoss:
    """A pass adding ``<func_name>_loss`` (see the module docstring).

    ``loss`` is a loss of ``adjoint.training`` (``T.mse``,
    ``T.cross_entropy(label_smoothing=0.1)``) or any callable
    ``loss(*predictions, *labels) -> scalar var`` building with ``aj.op``;
    ``labels`` gives the label params' ``(shape, dtype)`` for a callable that
    cannot say (symbolic dims as strings). Label params are named ``label``
    (``label_0``, ``label_1``, ... for several)."""

    def __init__(self, func_name: str, loss: Callable[..., Any], num_backbone_outputs: int = 1,
                 labels: Sequence[tuple] | None = None) -> None:
        if not callable(loss):
            raise Error(f"AppendLoss: loss must be callable, got {type(loss).__name__}")
        num_backbone_outputs = checked_int("AppendLoss", "num_backbone_outputs", num_backbone_outputs, low=1)
        self.func_name = func_name
        self.loss = loss
        self.num_backbone_outputs = num_backbone_outputs
        self.labels = labels

    def __repr__(self) -> str:
        return f"AppendLoss({self.func_name!r}, {loss_name(self.loss)}, num_backbone_outputs={self.num_backbone_outputs})"

    def __call__(self, mod: Module) -> Module:
        if not isinstance(mod, Module):
            raise Error(f"AppendLoss: expected an aj.Module, got {type(mod).__name__}")
        if self.func_name not in mod:
            raise TransformError(f"AppendLoss: the module has no function '{self.func_name}' "
                                 f"(it has {', '.join(mod.functions) or 'none'})")
        name = f"{self.func_name}_loss"
        if name in mod:
            raise TransformError(f"AppendLoss: the module already has a function '{name}'")
        fn = mod[self.func_name]
        loss_fn = self._loss_function(fn, name)
        return Module({**{n: mod[n] for n in mod.functions}, name: loss_fn[name]})

    def _loss_function(self, fn: Any, name: str) -> Module:
        params = list(fn.params)
        num_input = fn.attrs.get("num_input")
        split = len(params) if num_input is None else int(num_input)
        outs = _output_types(fn.ret.type)
        k = self.num_backbone_outputs
        if k > len(outs):
            raise TransformError(f"AppendLoss: num_backbone_outputs is {k}, but '{self.func_name}' returns "
                                 f"{len(outs)} value(s)")
        labels = label_types(self.loss, outs[:k], self.labels)
        label_names = ["label"] if len(labels) == 1 else [f"label_{i}" for i in range(len(labels))]
        taken = {p.name_hint for p in params}
        label_names = [_fresh(n, taken) for n in label_names]
        bb = FunctionBuilder(name, num_input=None if num_input is None else split + len(labels))
        with bb:
            new = [bb.param(p.name_hint, p.type.shape, p.type.dtype) for p in params[:split]]
            label_vars = [bb.param(n, shape, dtype) for n, (shape, dtype) in zip(label_names, labels)]
            new += [bb.param(p.name_hint, p.type.shape, p.type.dtype) for p in params[split:]]
            results = _outputs(bb.inline(fn, *new))
            try:
                value = self.loss(*results[:k], *label_vars)
            except Error as e:
                raise type(e)(f"AppendLoss '{self.func_name}': {e}") from None
            _check_scalar(value, self.loss)
            rest = results[k:]
            return bb.finish((value, *rest) if rest else value)


def _output_types(t: _core.Type) -> list[_core.Type]:
    return list(t.fields) if t.is_tuple else [t]


def _fresh(name: str, taken: set[str]) -> str:
    out, i = name, 1
    while out in taken:
        out, i = f"{name}_{i}", i + 1
    taken.add(out)
    return out


def _check_scalar(value: Any, loss: Any) -> None:
    t = getattr(value, "type", None)
    if t is None or not t.is_tensor or tuple(t.shape) != () or not t.dtype.startswith("float"):
        got = t if t is not None else type(value).__name__
        raise TransformError(f"AppendLoss: the loss '{loss_name(loss)}' must give a float scalar to train on, "
                             f"got {got} (reduction='none' gives one loss per element)")
