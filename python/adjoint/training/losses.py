"""The loss builders of ``adjoint.training``: ``mse``, ``l1``, ``huber``,
``cross_entropy``, ``nll`` and ``binary_cross_entropy_with_logits``, each a
``Loss`` that emits PyTorch's loss of the same name into the builder of its
prediction, from existing ops only (so ``Gradient`` differentiates it and the
passes simplify it), with as few ops as the formula allows.

``loss(pred, target, **options)`` emits the loss; ``loss(**options)`` binds
options and returns a new ``Loss``; ``loss.label_types(pred_type)`` gives the
(shape, dtype) of the target ``AppendLoss`` creates. Bad input is an
``aj.TypeInferenceError`` naming the loss and the shapes or dtypes involved.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .. import op
from ..builder import Expr, abandon_builder_for
from ..errors import TypeInferenceError
from ..ir import Constant
from ._checks import INT64_MAX, INT64_MIN, checked_int, checked_number, shown, try_array

REDUCTIONS = ("mean", "sum", "none")
TARGET_KINDS = ("indices", "probabilities")
_FLOATS = ("float32", "float64")
_INTS = ("int32", "int64")


# ---- the Loss class ----

class Loss:
    """A loss builder: ``loss(pred, target, **options) -> aj.Var`` emits the
    loss; ``loss(**options)`` returns a copy with those options bound (call-time
    options override them); ``loss.label_types(pred_type)`` lists the target's
    (shape, dtype)."""

    def __init__(self, name: str, emit: Callable[..., Expr], defaults: Mapping[str, Any],
                 label_types: Callable[[str, Any, dict], list], options: Mapping[str, Any] | None = None):
        self._emit = emit
        self._defaults = dict(defaults)
        self._label_types = label_types
        self.name = name
        self.options = _checked_options(name, self._defaults, options or {})

    def __call__(self, *args: Any, **options: Any) -> Any:
        if not args:
            bound = {**self.options, **options}
            return Loss(self.name, self._emit, self._defaults, self._label_types, bound)
        try:
            if len(args) != 2:
                raise TypeInferenceError(f"{self.name} takes (pred, target) and options by keyword; "
                                         f"got {len(args)} positional arguments")
            pred, target = (_tensor_arg(self.name, role, a) for role, a in zip(("input", "target"), args))
            chosen = _checked_options(self.name, self._defaults, {**self.options, **options})
            return self._emit(self.name, pred, target, **{**self._defaults, **chosen})
        except TypeInferenceError as e:
            abandon_builder_for(self.name, [*args, *options.values()], e)
            raise

    def label_types(self, pred_type: Any) -> list[tuple[tuple, str]]:
        """The (shape, dtype) of each target param for a prediction of type
        ``pred_type`` (an aj Tensor type: ``.shape``, ``.dtype``)."""
        shape = getattr(pred_type, "shape", None)
        if not getattr(pred_type, "is_tensor", True) or not isinstance(shape, (tuple, list)):
            raise TypeInferenceError(f"{self.name}: label_types needs a tensor type, got {shown(pred_type)}")
        options = {**self._defaults, **self.options}
        return self._label_types(self.name, pred_type, options)

    def __repr__(self) -> str:
        bound = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"<Loss {self.name}({bound})>"


# ---- checking options and arguments ----

def _check_reduction(name: str, value: Any) -> str:
    return _checked_choice(name, "reduction", value, REDUCTIONS)


def _checked_choice(name: str, option: str, value: Any, known: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in known:
        raise TypeInferenceError(f"{name}: unknown {option} {shown(value)}; known: {', '.join(map(repr, known))}")
    return str(value)


def _check_delta(name: str, value: Any) -> float:
    return checked_number(name, "delta", value, TypeInferenceError, low=0.0, low_open=True)


def _check_ignore_index(name: str, value: Any) -> int:
    # an int64 attr of nll_loss, as in torch
    return checked_int(name, "ignore_index", value, TypeInferenceError, low=INT64_MIN, high=INT64_MAX)


def _check_label_smoothing(name: str, value: Any) -> float:
    return checked_number(name, "label_smoothing", value, TypeInferenceError, low=0.0, high=1.0)


def _check_targets(name: str, value: Any) -> str:
    return _checked_choice(name, "targets", value, TARGET_KINDS)


def _check_pos_weight(name: str, value: Any) -> Any:
    if value is None or isinstance(value, Expr):
        return value
    return checked_number(name, "pos_weight", value, TypeInferenceError, alternatives="None, an aj.Var or ")


def _check_class_weight(name: str, value: Any) -> Any:
    """cross_entropy's and nll's weight: None, an aj.Var, or one finite
    number per class (a 1-D sequence, kept as a tuple of floats)."""
    return _checked_numbers(name, value, (list, tuple, np.ndarray), 1,
                            "a 1-D sequence of finite numbers (one per class)")


def _check_element_weight(name: str, value: Any) -> Any:
    """binary_cross_entropy_with_logits's weight: None, an aj.Var, or a
    number or an array of finite numbers (kept as nested tuples of floats)
    that broadcasts to the input."""
    return _checked_numbers(name, value, (list, tuple, np.ndarray, int, float, np.number), None,
                            "finite numbers that broadcast to the input")


def _checked_numbers(name: str, value: Any, kinds: tuple, ndim: int | None, what: str) -> Any:
    """value as is when None or an aj.Var; else its numbers (of the given
    rank, when ndim is given) as floats in nested tuples (hashable, and
    printed on one line)."""
    if value is None or isinstance(value, Expr):
        return value
    numbers = try_array(value) if isinstance(value, kinds) and not isinstance(value, bool) else None
    if numbers is None or numbers.dtype.kind not in "iuf" or (ndim is not None and numbers.ndim != ndim) \
            or (numbers.ndim and not numbers.size) or not np.all(np.isfinite(numbers)):
        raise TypeInferenceError(f"{name}: weight must be None, {what} or an aj.Var, got {shown(value)}")
    return _nested_tuples(numbers.astype(np.float64).tolist())


def _nested_tuples(value: Any) -> Any:
    """A nested list of numbers as nested tuples (hashable, and printed on one line)."""
    return tuple(_nested_tuples(v) for v in value) if isinstance(value, list) else value


_OPTION_CHECKS = {
    "reduction": _check_reduction, "delta": _check_delta, "ignore_index": _check_ignore_index,
    "label_smoothing": _check_label_smoothing, "targets": _check_targets, "pos_weight": _check_pos_weight,
    "weight": _check_class_weight,
}
# Options whose check depends on the loss: the loss's name, then the option's check.
_LOSS_OPTION_CHECKS = {("binary_cross_entropy_with_logits", "weight"): _check_element_weight}


def _checked_options(name: str, defaults: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    unknown = [k for k in options if k not in defaults]
    if unknown:
        known = ", ".join(repr(k) for k in defaults)
        raise TypeInferenceError(f"{name}: unknown option {unknown[0]!r}; known: {known}")
    return {k: _LOSS_OPTION_CHECKS.get((name, k), _OPTION_CHECKS[k])(name, v) for k, v in options.items()}


def _tensor_arg(name: str, role: str, value: Any) -> Expr:
    if not isinstance(value, Expr) or not value.type.is_tensor:
        raise TypeInferenceError(f"{name}: {role} must be a tensor var of a FunctionBuilder, "
                                 f"got {type(value).__name__}")
    return value


def _shape_str(shape: Any) -> str:
    dims = [str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _require_float_input(name: str, pred: Expr) -> None:
    if pred.type.dtype not in _FLOATS:
        raise TypeInferenceError(f"{name}: input dtype {pred.type.dtype} is not a float dtype (float32 or float64)")


def _require_like_input(name: str, pred: Expr, target: Expr) -> None:
    """target of pred's shape and (float) dtype."""
    _require_float_input(name, pred)
    p, t = pred.type, target.type
    if tuple(t.shape) != tuple(p.shape):
        raise TypeInferenceError(f"{name}: target shape {_shape_str(t.shape)} does not match "
                                 f"input shape {_shape_str(p.shape)}")
    if t.dtype != p.dtype:
        raise TypeInferenceError(f"{name}: target dtype {t.dtype} does not match input dtype {p.dtype} "
                                 f"(input shape {_shape_str(p.shape)}, target shape {_shape_str(t.shape)})")


def _class_axis(name: str, shape: Any) -> int:
    """PyTorch's class axis: 0 for a 1-D input, else 1."""
    if len(shape) == 0:
        raise TypeInferenceError(f"{name}: input shape () has no class axis; expected (C,), (N, C) or (N, C, d1, ...)")
    return 0 if len(shape) == 1 else 1


def _without_class_axis(name: str, shape: Any) -> tuple:
    axis = _class_axis(name, shape)
    return tuple(shape[:axis]) + tuple(shape[axis + 1:])


def _require_index_target(name: str, pred: Expr, target: Expr, probabilities_too: bool) -> None:
    """target as class indices for pred; ``probabilities_too``: the loss
    also takes probabilities (of pred's dtype), which the message names."""
    p, t = pred.type, target.type
    expected = _without_class_axis(name, p.shape)
    if t.dtype not in _INTS:
        also = f" nor probabilities of the input's dtype {p.dtype}" if probabilities_too else ""
        raise TypeInferenceError(f"{name}: target dtype {t.dtype} is {'neither' if also else 'not'} class indices "
                                 f"(int32 or int64){also} "
                                 f"(input shape {_shape_str(p.shape)}, target shape {_shape_str(t.shape)})")
    if tuple(t.shape) != expected:
        raise TypeInferenceError(f"{name}: target shape {_shape_str(t.shape)} does not match input shape "
                                 f"{_shape_str(p.shape)} without its class axis {_shape_str(expected)}")


# ---- shared pieces of graph ----

def _reduce(loss: Expr, reduction: str) -> Expr:
    if reduction == "mean":
        return op.mean(loss)
    if reduction == "sum":
        return op.sum(loss)
    return loss


def _rows(pred: Expr, target: Expr) -> tuple[Expr, Expr]:
    """(N, C, d1, ...) scores and (N, d1, ...) indices as (M, C) rows and (M,)
    indices, the class axis moved last; (C,) and (N, C) inputs as they are."""
    rank = len(pred.type.shape)
    if rank <= 2:
        return pred, target
    moved = op.permute_dims(pred, axes=[0, *range(2, rank), 1])
    return op.reshape(moved, shape=(-1, pred.type.shape[1])), op.reshape(target, shape=(-1,))


def _nll_of_rows(logp: Expr, target: Expr, rows: Expr, reduction: str, ignore_index: int) -> Expr:
    """nll_loss over the rows, the "none" result shaped as the target."""
    loss = op.nll_loss(logp, rows, reduction=reduction, ignore_index=ignore_index)
    return _shaped_as_target(loss, target, reduction)


def _shaped_as_target(loss: Expr, target: Expr, reduction: str) -> Expr:
    if reduction == "none" and len(target.type.shape) > 1:
        return op.reshape(loss, shape=tuple(target.type.shape))
    return loss


def _class_weight(name: str, pred: Expr, weight: Any) -> Expr:
    """The weight option as a (C,) tensor of pred's dtype: the var itself, or
    a constant of the numbers given, one per class."""
    shape = pred.type.shape
    classes = shape[_class_axis(name, shape)]
    if isinstance(weight, Expr):
        w = weight.type
        if not w.is_tensor or w.dtype != pred.type.dtype or tuple(w.shape) != (classes,):
            raise TypeInferenceError(f"{name}: weight must be a {pred.type.dtype} tensor of shape ({classes},), "
                                     f"one per class of input shape {_shape_str(shape)}, got {w}")
        return weight
    if len(weight) != classes:
        raise TypeInferenceError(f"{name}: weight has {len(weight)} entries, but input shape {_shape_str(shape)} "
                                 f"has {classes} classes")
    return Constant(np.array(weight, dtype=pred.type.dtype))


def _weighted_nll_of_rows(logp: Expr, target: Expr, rows: Expr, reduction: str, ignore_index: int,
                          weight: Expr, label_smoothing: float) -> Expr:
    """PyTorch's nll_loss with class weights, and cross_entropy's label
    smoothing with them: per kept row, w[y] * -logp[y] mixed with
    e / C * sum_c w[c] * -logp[c]; "mean" divides by the sum of w[y] over
    the kept rows."""
    kept = op.not_equal(rows, ignore_index)
    row_weight = op.multiply(op.take(weight, op.where(kept, rows, 0), axis=0), op.astype(kept, logp.type.dtype))
    loss = op.multiply(op.nll_loss(logp, rows, reduction="none", ignore_index=ignore_index), row_weight)
    if label_smoothing:
        spread = op.negative(op.sum(op.multiply(logp, weight), axis=[-1]))
        loss = op.add(op.multiply(loss, 1.0 - label_smoothing),
                      op.multiply(spread, _per_class(weight, label_smoothing)))
    # ignored rows give 0 through a where, so that their gradient is 0 even when every row is
    # ignored and the mean's 1 / sum(w[y]) is infinite (the mean is then NaN, as PyTorch's)
    loss = op.where(kept, loss, 0.0)
    if reduction == "mean":
        return op.divide(op.sum(loss), op.sum(row_weight))
    return op.sum(loss) if reduction == "sum" else _shaped_as_target(loss, target, reduction)


def _per_class(weight: Expr, value: float) -> Any:
    """value / C for the C entries of weight: a number, or a tensor for a symbolic C."""
    classes = weight.type.shape[0]
    return value / classes if isinstance(classes, int) else op.divide(value, op.sum(op.ones_like(weight)))


# ---- the losses ----

def _mse(name: str, pred: Expr, target: Expr, reduction: str) -> Expr:
    # mean((pred - target)^2)
    _require_like_input(name, pred, target)
    return _reduce(op.square(op.subtract(pred, target)), reduction)


def _l1(name: str, pred: Expr, target: Expr, reduction: str) -> Expr:
    # mean(|pred - target|), as |d| * (d != 0) so that the gradient at pred == target is
    # PyTorch's sign(0) = 0 (abs's own is +1); the mask changes no value
    _require_like_input(name, pred, target)
    d = op.subtract(pred, target)
    untied = op.astype(op.not_equal(d, 0.0), d.type.dtype)
    return _reduce(op.multiply(op.abs(d), untied), reduction)


def _huber(name: str, pred: Expr, target: Expr, reduction: str, delta: float) -> Expr:
    # with a = |d| and q = min(a, delta): q * (a - q / 2), which is d^2 / 2 for a <= delta
    # and delta * (a - delta / 2) above, with PyTorch's gradient on both sides
    _require_like_input(name, pred, target)
    a = op.abs(op.subtract(pred, target))
    q = op.minimum(a, delta)
    return _reduce(op.multiply(q, op.subtract(a, op.multiply(q, 0.5))), reduction)


def _cross_entropy(name: str, pred: Expr, target: Expr, reduction: str, ignore_index: int,
                   label_smoothing: float, targets: str, weight: Any) -> Expr:
    # the kind of target is PyTorch's: float targets are probabilities, int ones class indices
    _require_float_input(name, pred)
    _class_axis(name, pred.type.shape)
    if target.type.dtype in _FLOATS:
        return _cross_entropy_probabilities(name, pred, target, reduction, label_smoothing, weight)
    _require_index_target(name, pred, target, probabilities_too=True)
    class_weight = None if weight is None else _class_weight(name, pred, weight)
    scores, rows = _rows(pred, target)
    logp = op.log_softmax(scores, axis=-1)
    if class_weight is not None:
        return _weighted_nll_of_rows(logp, target, rows, reduction, ignore_index, class_weight, label_smoothing)
    if label_smoothing:
        # nll is linear in logp: (1 - e) * nll(logp) + e * mean_c(-logp) over the same kept rows
        # (PyTorch's formula, ignored rows out of both terms) is nll of the mixture below
        smooth = op.multiply(op.mean(logp, axis=[-1], keepdims=True), label_smoothing)
        logp = op.add(op.multiply(logp, 1.0 - label_smoothing), smooth)
    return _nll_of_rows(logp, target, rows, reduction, ignore_index)


def _cross_entropy_probabilities(name: str, pred: Expr, target: Expr, reduction: str, label_smoothing: float,
                                 weight: Any) -> Expr:
    # -sum_c w_c * target_c * log_softmax(pred)_c per example, target smoothed as (1 - e) * target + e / C;
    # "mean" divides by the number of examples (PyTorch: input.numel() / C), weighted or not
    _require_like_input(name, pred, target)
    axis = _class_axis(name, pred.type.shape)
    if label_smoothing:
        target = op.add(op.multiply(target, 1.0 - label_smoothing), _uniform(target, axis, label_smoothing))
    if weight is None and reduction == "mean" and len(pred.type.shape) <= 2:
        return op.cross_entropy_with_logits(pred, target)
    weighted = op.multiply(target, op.log_softmax(pred, axis=axis))
    if weight is not None:
        class_weight = _class_weight(name, pred, weight)
        trailing = len(pred.type.shape) - axis - 1  # dims after the class axis, which the weight spans as 1s
        if trailing:
            class_weight = op.reshape(class_weight, shape=(-1,) + (1,) * trailing)
        weighted = op.multiply(weighted, class_weight)
    if reduction == "sum":
        return op.negative(op.sum(weighted))
    per_example = op.sum(weighted, axis=[axis])
    return op.negative(op.mean(per_example) if reduction == "mean" else per_example)


def _uniform(target: Expr, axis: int, label_smoothing: float) -> Any:
    """label_smoothing / C: a number, or for a symbolic C a (.., 1, ..) tensor."""
    classes = target.type.shape[axis]
    if isinstance(classes, int):
        return label_smoothing / classes
    classes = op.sum(op.ones_like(target), axis=[axis], keepdims=True)
    return op.divide(label_smoothing, classes)


def _nll(name: str, pred: Expr, target: Expr, reduction: str, ignore_index: int, weight: Any) -> Expr:
    _require_float_input(name, pred)
    _require_index_target(name, pred, target, probabilities_too=False)
    class_weight = None if weight is None else _class_weight(name, pred, weight)
    logp, rows = _rows(pred, target)
    if class_weight is not None:
        return _weighted_nll_of_rows(logp, target, rows, reduction, ignore_index, class_weight, 0.0)
    return _nll_of_rows(logp, target, rows, reduction, ignore_index)


def _binary_cross_entropy_with_logits(name: str, pred: Expr, target: Expr, reduction: str, pos_weight: Any,
                                      weight: Any) -> Expr:
    # with x the logits, y the target and sp = softplus(-x) = max(-x, 0) + log1p(exp(-|x|)):
    # (1 - y) * x + (1 + (pos_weight - 1) * y) * sp, never exponentiating a positive number,
    # times weight per element ("mean" still divides by the number of elements, as PyTorch)
    _require_like_input(name, pred, target)
    if isinstance(pos_weight, Expr):
        _require_broadcasts(name, "pos_weight", pred, pos_weight)
    element_weight = None if weight is None else _element_weight(name, pred, weight)
    x, y = pred, target
    tail = op.log1p(op.exp(op.negative(op.abs(x))))  # keeps the tail past |x| = 17 that log(1 + e) rounds to 0
    if not isinstance(pos_weight, Expr) and pos_weight in (None, 1.0):
        # = max(x, 0) - x * y + tail; maximum's tie at x = 0 gives x the gradient, so that
        # with abs's +1 there the gradient is sigmoid(0) - y
        loss = op.add(op.subtract(op.maximum(x, 0.0), op.multiply(x, y)), tail)
    else:
        softplus = op.add(op.relu(op.negative(x)), tail)  # relu's gradient at 0 is 0: -1/2 in all
        extra = op.subtract(pos_weight, 1.0) if isinstance(pos_weight, Expr) else pos_weight - 1.0
        positive = op.add(op.multiply(y, extra), 1.0)
        loss = op.add(op.multiply(op.subtract(1.0, y), x), op.multiply(positive, softplus))
    return _reduce(loss if element_weight is None else op.multiply(loss, element_weight), reduction)


def _element_weight(name: str, pred: Expr, weight: Any) -> Expr:
    """The weight option of binary_cross_entropy_with_logits as an expr of
    pred's dtype that broadcasts to pred."""
    if not isinstance(weight, Expr):
        weight = Constant(np.asarray(weight, dtype=pred.type.dtype))
    _require_broadcasts(name, "weight", pred, weight)
    return weight


def _require_broadcasts(name: str, option: str, pred: Expr, value: Expr) -> None:
    p, w = pred.type, value.type
    if not w.is_tensor or w.dtype != p.dtype:
        raise TypeInferenceError(f"{name}: {option} must be a {p.dtype} tensor like the input, got {w}")
    shape, weights = tuple(p.shape), tuple(w.shape)
    fits = len(weights) <= len(shape) and all(d in (1, s) for d, s in zip(reversed(weights), reversed(shape)))
    if not fits:
        raise TypeInferenceError(f"{name}: {option} shape {_shape_str(weights)} does not broadcast to "
                                 f"input shape {_shape_str(shape)}")


# ---- label types ----

def _same_as_input(name: str, pred_type: Any, options: dict) -> list[tuple[tuple, str]]:
    return [(tuple(pred_type.shape), str(pred_type.dtype))]


def _class_labels(name: str, pred_type: Any, options: dict) -> list[tuple[tuple, str]]:
    if options.get("targets") == "probabilities":
        _class_axis(name, pred_type.shape)
        return _same_as_input(name, pred_type, options)
    return [(_without_class_axis(name, pred_type.shape), "int64")]


_REDUCTION = {"reduction": "mean"}

mse = Loss("mse", _mse, _REDUCTION, _same_as_input)
l1 = Loss("l1", _l1, _REDUCTION, _same_as_input)
huber = Loss("huber", _huber, {**_REDUCTION, "delta": 1.0}, _same_as_input)
cross_entropy = Loss("cross_entropy", _cross_entropy,
                     {**_REDUCTION, "ignore_index": -100, "label_smoothing": 0.0, "targets": "indices",
                      "weight": None},
                     _class_labels)
nll = Loss("nll", _nll, {**_REDUCTION, "ignore_index": -100, "weight": None}, _class_labels)
binary_cross_entropy_with_logits = Loss("binary_cross_entropy_with_logits", _binary_cross_entropy_with_logits,
                                        {**_REDUCTION, "pos_weight": None, "weight": None}, _same_as_input)

__all__ = ["Loss", "mse", "l1", "huber", "cross_entropy", "nll", "binary_cross_entropy_with_logits"]
