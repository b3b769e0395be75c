"""Optimizers written as IR: ``SGD``, ``Adam``, ``AdamW`` and ``RMSprop``.

Each optimizer emits its update into a builder (``update``) or builds it as a
standalone function (``function``), so an update is ordinary IR that passes
simplify and the executor runs with the rest of a training step. The update
rules are those of torch.optim's single-tensor implementations, op for op in
their rounding order, so float64 results agree with PyTorch to the last few
bits; the learning rate and the step count are run-time inputs (a schedule
needs no rebuild). docs/training-optimizers.md gives every rule as formulas.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import op
from ..builder import FunctionBuilder, Var, abandon_builder_for
from ..errors import Error, TransformError, TypeInferenceError
from ._checks import allocated, checked_flag, checked_int, checked_number, checked_shape, shown

ParamType = tuple[str, tuple, str]  # (name, shape, dtype)
Schedule = Callable[[int], float]
FLOAT_DTYPES = ("float32", "float64")
CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_: coef = max_norm / (total + 1e-6)


class Optimizer(ABC):
    """An update rule with its options; subclasses define the rule.

    ``lr`` is a float or a schedule ``callable(step) -> float`` (step 0 is
    the first update); ``clip_grad_norm`` scales all grads together so their
    global 2-norm is at most that value before the update.
    """

    name = "Optimizer"

    def __init__(self, lr: float | Schedule, clip_grad_norm: float | None, positional: tuple) -> None:
        if positional:
            raise TransformError(f"{self.name}: lr is the only positional argument; give the other "
                                 f"options by keyword (got {len(positional)} more)")
        if not callable(lr):
            _check_option(self.name, "lr", lr, low=0.0, alternatives="a schedule callable(step) or ")
        if clip_grad_norm is not None:
            _check_option(self.name, "clip_grad_norm", clip_grad_norm, low=0.0, low_open=True,
                          alternatives="None or ")
        self.lr = lr
        self.clip_grad_norm = clip_grad_norm

    # ---- what subclasses define ----

    @abstractmethod
    def _options(self) -> dict[str, Any]:
        """The options shown by repr, as given to the constructor."""

    @abstractmethod
    def _kinds(self) -> tuple[str, ...]:
        """The state tensors kept per param, in state order (torch's names)."""

    def _needs_step(self) -> bool:
        return False

    def _shared(self, lr: Var, step: Var | None, next_step: Var | None) -> Any:
        """Scalars every param's update uses, emitted once per update."""
        return lr

    @abstractmethod
    def _update_param(self, p: Var, g: Var, buffers: dict[str, Var], shared: Any) -> tuple[Var, dict[str, Var]]:
        """Emits one param's update; returns the new param and its new buffers by kind."""

    # ---- the interface ----

    def lr_at(self, step: int) -> float:
        """The learning rate of update ``step`` (0 is the first)."""
        checked_int(f"{self.name}.lr_at", "step", step, TransformError, low=0)
        if not callable(self.lr):
            return _check_option(self.name, "lr", self.lr, low=0.0)
        return _check_option(self.name, f"the lr schedule's value at step {step}", self.lr(step), low=0.0)

    def state_types(self, param_types: Sequence[ParamType]) -> list[ParamType]:
        """(name, shape, dtype) of each state tensor: "step" first when the
        rule counts steps, then per param each kind, named "<param>.<kind>"."""
        params = _checked_param_types(self.name, param_types)
        types: list[ParamType] = [("step", (), "int64")] if self._needs_step() else []
        for name, shape, dtype in params:
            types += [(f"{name}.{kind}", shape, dtype) for kind in self._kinds()]
        return types

    def init_state(self, param_types: Sequence[ParamType]) -> list[np.ndarray]:
        """The state before the first update: zeros, and step 0."""
        arrays = []
        for name, shape, dtype in self.state_types(param_types):
            if not all(isinstance(d, int) for d in shape):
                raise TypeInferenceError(f"{self.name}.init_state: state '{name}' has symbolic shape {shape}; "
                                         "initial state needs concrete dims")
            arrays.append(allocated(f"{self.name}.init_state", f"state '{name}'", shape, dtype,
                                    lambda: np.zeros(shape, dtype)))
        return arrays

    def update(self, params: Sequence[Var], grads: Sequence[Var], state: Sequence[Var],
               lr: Var) -> tuple[list[Var], list[Var]]:
        """Emits the update of ``params`` by ``grads`` into their builder;
        returns (new params, new state), the state in ``state_types`` order.
        Vars that do not fit the params abandon their builder, as a refused
        op does."""
        where = f"{self.name}.update"
        try:
            params, grads, state = (_var_list(where, what, value)
                                    for what, value in (("params", params), ("grads", grads), ("state", state)))
            self._check_update_args(params, grads, state, lr)
        except Error as e:  # as for an op refused before it was emitted
            abandon_builder_for(where, [params, grads, state, lr], e)
            raise
        step = state.pop(0) if self._needs_step() else None
        next_step = op.add(step, 1, name="step") if step is not None else None
        if self.clip_grad_norm is not None:
            grads = _clip_by_global_norm(grads, self.clip_grad_norm)
        shared = self._shared(lr, step, next_step)
        kinds = self._kinds()
        new_params: list[Var] = []
        new_state: list[Var] = [next_step] if next_step is not None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            buffers = dict(zip(kinds, state[i * len(kinds):(i + 1) * len(kinds)]))
            new_p, new_buffers = self._update_param(p, g, buffers, shared)
            new_params.append(new_p)
            new_state += [new_buffers[kind] for kind in kinds]
        return new_params, new_state

    def function(self, param_types: Sequence[ParamType], name: str = "update") -> Any:
        """A module holding ``name(params..., grads..., state..., lr) ->
        (new params..., new state...)``, built with ``update``."""
        params = _checked_param_types(self.name, param_types)
        state_types = self.state_types(params)
        with FunctionBuilder(name) as bb:
            ps = [bb.param(n, shape, dtype) for n, shape, dtype in params]
            gs = [bb.param(f"{n}_grad", shape, dtype) for n, shape, dtype in params]
            ss = [bb.param(n, shape, dtype) for n, shape, dtype in state_types]
            lr = bb.param("lr", (), params[0][2])
            new_params, new_state = self.update(ps, gs, ss, lr)
            return bb.finish(tuple(new_params + new_state))

    def __repr__(self) -> str:
        options = {"lr": self.lr, **self._options()}
        if self.clip_grad_norm is not None:
            options["clip_grad_norm"] = self.clip_grad_norm
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in options.items())})"

    def _check_update_args(self, params: list[Var], grads: list[Var], state: list[Var], lr: Var) -> None:
        where = f"{self.name}.update"
        if len(grads) != len(params):
            raise TypeInferenceError(f"{where}: {len(params)} params but {len(grads)} grads")
        types = _checked_param_types(self.name, [_param_type(p) for p in params])
        for (pname, shape, dtype), g in zip(types, grads):
            if _param_type(g)[1:] != (shape, dtype):
                raise TypeInferenceError(f"{where}: the grad of '{pname}' is {_describe(g)}, "
                                         f"not {_describe_type(shape, dtype)} as the param")
        expected = self.state_types(types)
        if len(state) != len(expected):
            raise TypeInferenceError(f"{where}: expected {len(expected)} state tensors "
                                     f"({', '.join(n for n, _, _ in expected) or 'none'}), got {len(state)}")
        for (sname, shape, dtype), s in zip(expected, state):
            if _param_type(s)[1:] != (shape, dtype):
                raise TypeInferenceError(f"{where}: state '{sname}' is {_describe(s)}, "
                                         f"expected {_describe_type(shape, dtype)}")
        if _param_type(lr)[1:] != ((), types[0][2]):
            raise TypeInferenceError(f"{where}: lr is {_describe(lr)}, expected a {types[0][2]} scalar")


class SGD(Optimizer):
    """torch.optim.SGD: momentum (the first step's buffer is the grad
    itself), dampening, nesterov and L2 weight decay added to the grad."""

    name = "SGD"

    def __init__(self, lr: float | Schedule = 1e-3, *positional: Any, momentum: float = 0, dampening: float = 0,
                 nesterov: bool = False, weight_decay: float = 0, clip_grad_norm: float | None = None,
                 **unknown: Any) -> None:
        _reject_unknown(self.name, unknown)
        super().__init__(lr, clip_grad_norm, positional)
        _check_option(self.name, "momentum", momentum, low=0.0)
        _check_option(self.name, "dampening", dampening)
        _check_option(self.name, "weight_decay", weight_decay, low=0.0)
        nesterov = checked_flag(self.name, "nesterov", nesterov, TransformError)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise TransformError(f"{self.name}: nesterov momentum requires a momentum > 0 and dampening 0 "
                                 f"(got momentum={momentum}, dampening={dampening})")
        self.momentum, self.dampening = momentum, dampening
        self.nesterov, self.weight_decay = nesterov, weight_decay

    def _options(self) -> dict[str, Any]:
        return {"momentum": self.momentum, "dampening": self.dampening, "nesterov": self.nesterov,
                "weight_decay": self.weight_decay}

    def _kinds(self) -> tuple[str, ...]:
        return ("momentum_buffer",) if self.momentum != 0 else ()

    def _needs_step(self) -> bool:
        # with dampening 0, buf = 0 * momentum + grad is the grad itself on
        # the first step; with dampening the first step must be told apart
        return self.momentum != 0 and self.dampening != 0

    def _shared(self, lr: Var, step: Var | None, next_step: Var | None) -> Any:
        return lr, (op.equal(step, 0) if step is not None else None)

    def _update_param(self, p: Var, g: Var, buffers: dict[str, Var], shared: Any) -> tuple[Var, dict[str, Var]]:
        lr, is_first_step = shared
        name = p.name_hint
        if self.weight_decay != 0:
            g = op.add(g, op.multiply(p, self.weight_decay))
        new_buffers = {}
        if self.momentum != 0:
            buf = op.multiply(buffers["momentum_buffer"], self.momentum)
            if self.dampening == 0:
                buf = op.add(buf, g, name=f"{name}.momentum_buffer")
            else:
                buf = op.add(buf, op.multiply(g, 1 - self.dampening))
                buf = op.where(is_first_step, g, buf, name=f"{name}.momentum_buffer")
            new_buffers["momentum_buffer"] = buf
            g = op.add(g, op.multiply(buf, self.momentum)) if self.nesterov else buf
        return op.subtract(p, op.multiply(lr, g), name=name), new_buffers


class Adam(Optimizer):
    """torch.optim.Adam: bias-corrected moments from the step count, L2
    weight decay added to the grad, amsgrad's running maximum."""

    name = "Adam"
    decoupled_weight_decay = False

    def __init__(self, lr: float | Schedule = 1e-3, *positional: Any, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False,
                 clip_grad_norm: float | None = None, **unknown: Any) -> None:
        _reject_unknown(self.name, unknown)
        super().__init__(lr, clip_grad_norm, positional)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TransformError(f"{self.name}: betas must be a pair (beta1, beta2), got {shown(betas)}")
        for i, beta in enumerate(betas):
            _check_option(self.name, f"betas[{i}]", beta, low=0.0, high=1.0, high_open=True)
        _check_option(self.name, "eps", eps, low=0.0)
        _check_option(self.name, "weight_decay", weight_decay, low=0.0)
        self.betas, self.eps = (float(betas[0]), float(betas[1])), eps
        self.weight_decay, self.amsgrad = weight_decay, checked_flag(self.name, "amsgrad", amsgrad, TransformError)

    def _options(self) -> dict[str, Any]:
        return {"betas": self.betas, "eps": self.eps, "weight_decay": self.weight_decay, "amsgrad": self.amsgrad}

    def _kinds(self) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if self.amsgrad else ("exp_avg", "exp_avg_sq")

    def _needs_step(self) -> bool:
        return True

    def _shared(self, lr: Var, step: Var | None, next_step: Var | None) -> Any:
        # torch computes these scalars in Python floats (double) and rounds
        # them once to the params' dtype where they meet a tensor
        dtype = lr.type.dtype
        beta1, beta2 = self.betas
        lr64 = _as_float64(lr)
        t = op.astype(next_step, "float64")
        step_size = op.divide(lr64, op.subtract(1.0, op.power(beta1, t)))
        bias_correction2_sqrt = op.sqrt(op.subtract(1.0, op.power(beta2, t)))
        decay = None
        if self.decoupled_weight_decay and self.weight_decay != 0:
            decay = _narrow(op.subtract(1.0, op.multiply(lr64, self.weight_decay)), dtype)
        return _narrow(step_size, dtype), _narrow(bias_correction2_sqrt, dtype), decay

    def _update_param(self, p: Var, g: Var, buffers: dict[str, Var], shared: Any) -> tuple[Var, dict[str, Var]]:
        step_size, bias_correction2_sqrt, decay = shared
        name = p.name_hint
        beta1, beta2 = self.betas
        if decay is not None:
            p = op.multiply(p, decay)
        elif self.weight_decay != 0:
            g = op.add(g, op.multiply(p, self.weight_decay))
        exp_avg = _lerp(buffers["exp_avg"], g, 1 - beta1, name=f"{name}.exp_avg")
        exp_avg_sq = op.add(op.multiply(buffers["exp_avg_sq"], beta2), op.multiply(op.multiply(g, 1 - beta2), g),
                            name=f"{name}.exp_avg_sq")
        new_buffers = {"exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        second_moment = exp_avg_sq
        if self.amsgrad:
            second_moment = op.maximum(buffers["max_exp_avg_sq"], exp_avg_sq, name=f"{name}.max_exp_avg_sq")
            new_buffers["max_exp_avg_sq"] = second_moment
        denom = op.add(op.divide(op.sqrt(second_moment), bias_correction2_sqrt), self.eps)
        new_p = op.subtract(p, op.divide(op.multiply(step_size, exp_avg), denom), name=name)
        return new_p, new_buffers


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay, the param
    scaled by (1 - lr * weight_decay) before the update."""

    name = "AdamW"
    decoupled_weight_decay = True

    def __init__(self, lr: float | Schedule = 1e-3, *positional: Any, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False,
                 clip_grad_norm: float | None = None, **unknown: Any) -> None:
        super().__init__(lr, *positional, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         clip_grad_norm=clip_grad_norm, **unknown)


class RMSprop(Optimizer):
    """torch.optim.RMSprop: eps added outside the square root, optional
    centering by the running mean of the grad, momentum on the scaled grad."""

    name = "RMSprop"

    def __init__(self, lr: float | Schedule = 1e-2, *positional: Any, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 clip_grad_norm: float | None = None, **unknown: Any) -> None:
        _reject_unknown(self.name, unknown)
        super().__init__(lr, clip_grad_norm, positional)
        for option, value in (("alpha", alpha), ("eps", eps), ("weight_decay", weight_decay),
                              ("momentum", momentum)):
            _check_option(self.name, option, value, low=0.0)
        self.alpha, self.eps, self.weight_decay = alpha, eps, weight_decay
        self.momentum, self.centered = momentum, checked_flag(self.name, "centered", centered, TransformError)

    def _options(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "eps": self.eps, "weight_decay": self.weight_decay,
                "momentum": self.momentum, "centered": self.centered}

    def _kinds(self) -> tuple[str, ...]:
        return (("square_avg",) + (("momentum_buffer",) if self.momentum > 0 else ())
                + (("grad_avg",) if self.centered else ()))

    def _update_param(self, p: Var, g: Var, buffers: dict[str, Var], shared: Any) -> tuple[Var, dict[str, Var]]:
        lr, name = shared, p.name_hint
        if self.weight_decay != 0:
            g = op.add(g, op.multiply(p, self.weight_decay))
        square_avg = op.add(op.multiply(buffers["square_avg"], self.alpha),
                            op.multiply(op.multiply(g, 1 - self.alpha), g), name=f"{name}.square_avg")
        new_buffers = {"square_avg": square_avg}
        if self.centered:
            grad_avg = _lerp(buffers["grad_avg"], g, 1 - self.alpha, name=f"{name}.grad_avg")
            new_buffers["grad_avg"] = grad_avg
            avg = op.sqrt(op.subtract(square_avg, op.multiply(grad_avg, grad_avg)))
        else:
            avg = op.sqrt(square_avg)
        avg = op.add(avg, self.eps)
        if self.momentum > 0:
            buf = op.add(op.multiply(buffers["momentum_buffer"], self.momentum), op.divide(g, avg),
                         name=f"{name}.momentum_buffer")
            new_buffers["momentum_buffer"] = buf
            return op.subtract(p, op.multiply(lr, buf), name=name), new_buffers
        return op.subtract(p, op.divide(op.multiply(lr, g), avg), name=name), new_buffers


# ---- helpers ----

def _as_float64(x: Var) -> Var:
    return x if x.type.dtype == "float64" else op.astype(x, "float64")


def _narrow(x: Var, dtype: str) -> Var:
    """``x`` (float64) rounded to ``dtype`` when that is narrower."""
    return x if dtype == "float64" else op.astype(x, dtype)


def _lerp(start: Var, end: Var, weight: float, name: str) -> Var:
    """torch.lerp with a scalar weight, in its rounding order: from the
    nearer end, start + w (end - start) or end - (end - start)(1 - w)."""
    diff = op.subtract(end, start)
    if abs(weight) < 0.5:
        return op.add(start, op.multiply(diff, weight), name=name)
    return op.subtract(end, op.multiply(diff, 1 - weight), name=name)


def _clip_by_global_norm(grads: list[Var], max_norm: float) -> list[Var]:
    """torch.nn.utils.clip_grad_norm_: every grad times
    min(max_norm / (total + 1e-6), 1), total the 2-norm of all grads."""
    squares = [op.sum(op.multiply(g, g)) for g in grads]
    total = squares[0]
    for s in squares[1:]:
        total = op.add(total, s)
    total = op.sqrt(total, name="grad_norm")
    coef = op.minimum(op.divide(max_norm, op.add(total, CLIP_EPS)), 1.0, name="clip_coef")
    return [op.multiply(g, coef) for g in grads]


def _checked_param_types(who: str, param_types: Sequence[ParamType]) -> list[ParamType]:
    """The params as (name, shape tuple, dtype name); an error for a non-float
    param, a repeated name, mixed dtypes or no params at all."""
    if isinstance(param_types, (str, bytes)) or not isinstance(param_types, Sequence):
        raise TypeInferenceError(f"{who}: param types must be a list of (name, shape, dtype), "
                                 f"got {type(param_types).__name__}")
    checked: list[ParamType] = []
    for entry in param_types:
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise TypeInferenceError(f"{who}: each param type is (name, shape, dtype), got {shown(entry)}")
        name, shape, dtype = entry
        shape = checked_shape(who, f"param '{name}'", shape, TypeInferenceError)
        dtype_name = _dtype_name(dtype)
        if dtype_name not in FLOAT_DTYPES:
            raise TypeInferenceError(f"{who}: param '{name}' has dtype {dtype_name}; optimizers update "
                                     f"float params ({', '.join(FLOAT_DTYPES)})")
        if any(name == other for other, _, _ in checked):
            raise TypeInferenceError(f"{who}: param '{name}' is given twice")
        checked.append((str(name), tuple(shape), dtype_name))
    if not checked:
        raise TypeInferenceError(f"{who}: no params to update")
    first = checked[0]
    for name, _, dtype in checked[1:]:
        if dtype != first[2]:
            raise TypeInferenceError(f"{who}: params share one dtype (and lr has it); '{first[0]}' is "
                                     f"{first[2]} but '{name}' is {dtype}")
    return checked


def _var_list(who: str, what: str, value: Any) -> list:
    """``value``, an iterable of vars (checked later one by one), as a list."""
    if not isinstance(value, Iterable) or isinstance(value, (str, bytes)):
        raise TypeInferenceError(f"{who}: {what} must be a list of vars, got {type(value).__name__}")
    return list(value)


def _param_type(v: Any) -> ParamType:
    if not isinstance(v, Var) or not v.type.is_tensor:
        raise TypeInferenceError(f"optimizer update: expected tensor vars, got {shown(v)}")
    return (v.name_hint, tuple(v.type.shape), v.type.dtype)


def _dtype_name(dtype: Any) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


def _describe(v: Var) -> str:
    _, shape, dtype = _param_type(v)
    return _describe_type(shape, dtype)


def _describe_type(shape: tuple, dtype: str) -> str:
    return f"{shape} {dtype}"


def _check_option(who: str, option: str, value: Any, **bounds: Any) -> float:
    """A number option of an optimizer: in torch's bounds, and finite (torch
    also takes inf, which makes the updates NaN or empty; a clip_grad_norm of
    inf clips nothing, as None does)."""
    return checked_number(who, option, value, TransformError, **bounds)


def _reject_unknown(who: str, unknown: dict[str, Any]) -> None:
    if unknown:
        raise TransformError(f"{who}: unknown option {', '.join(repr(k) for k in unknown)}")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop"]
