"""Initial weights for a model function, read off how each weight is used.

A weight multiplied by matmul or convolved gets PyTorch's nn.Linear / nn.Conv2d
default, uniform in +-1/sqrt(fan_in), with fan_in the dim(s) it contracts
over (a (in, out) matrix on the right of a matmul contracts over in, a 1-D
vector on either side over its only dim; a conv2d OIHW weight over I*H*W); a
layer_norm gamma is ones; every other weight (biases, layer_norm's beta) is
zeros.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .. import _core
from ..errors import Error
from ._checks import allocated, checked_int, shown


def _users(fn: Any) -> dict[str, list[tuple[str, int, tuple]]]:
    """Param name -> (op name, arg position, the arg's shape) of each call
    using it directly or through a transpose (permute_dims, reported as op
    "T.<op>" with the transposed shape)."""
    transposed: dict[str, str] = {}
    uses: dict[str, list[tuple[str, int, tuple]]] = {p.name_hint: [] for p in fn.params}
    params = {p.name_hint for p in fn.params}
    for b in fn.bindings:
        call = b.value
        if not isinstance(call, _core.Call):
            continue
        for i, arg in enumerate(call.args):
            name = getattr(arg, "name_hint", None)
            if name in params and isinstance(arg, _core.Var):
                uses[name].append((call.op, i, tuple(arg.type.shape)))
                if call.op == "permute_dims":
                    transposed[b.var.name_hint] = name
            elif name in transposed:
                uses[transposed[name]].append((f"T.{call.op}", i, tuple(arg.type.shape)))
    return uses


def _contracted(shape: tuple, position: int) -> int:
    """The dim of matmul's operand ``position`` (of ``shape``) that the
    product sums over: a vector's only dim, else the last dim of the left
    operand or the second to last of the right."""
    if len(shape) == 1:
        return int(shape[0])
    return int(shape[-1] if position == 0 else shape[-2])


def _fan_in(uses: list[tuple[str, int, tuple]]) -> int | None:
    """The number of inputs each output of a matmul or conv2d weight sums over."""
    for op, position, shape in uses:
        if op in ("matmul", "T.matmul"):
            return _contracted(shape, position)
        if op == "conv2d" and position == 1:
            return int(np.prod(shape[1:]))
    return None


def init_params(fn: Any, seed: int = 0, skip: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Initial values for the weights of ``fn`` (params past ``num_input``),
    by name, each drawn from ``np.random.default_rng([seed, index])`` (index
    its position among the params, so leaving one out changes no other);
    names in ``skip`` are left out. Symbolic weight dims are an error."""
    if not isinstance(fn, _core.Function):
        raise Error(f"init_params: expected a function (such as mod['main']), got {type(fn).__name__}")
    seed = checked_seed("init_params", seed)
    skip = _checked_names("init_params", "skip", skip)
    num_input = int(fn.attrs.get("num_input", len(fn.params)))
    uses = _users(fn)
    out: dict[str, np.ndarray] = {}
    for index, p in enumerate(fn.params):
        name, shape, dtype = p.name_hint, tuple(p.type.shape), np.dtype(p.type.dtype)
        if index < num_input or name in skip:
            continue
        if any(not isinstance(d, int) for d in shape):
            raise Error(f"init_params: weight '{name}' has symbolic shape {shape}; give its initial value")
        out[name] = allocated("init_params", f"weight '{name}'", shape, dtype,
                              lambda: _initial_value(shape, dtype, uses[name], [seed, index]))
    return out


def _initial_value(shape: tuple, dtype: np.dtype, uses: list[tuple[str, int, tuple]], seed: list[int]) -> np.ndarray:
    """A weight's initial value, by the rule of the module docstring."""
    fan_in = _fan_in(uses)
    if fan_in:
        bound = 1.0 / np.sqrt(fan_in)
        return np.random.default_rng(seed).uniform(-bound, bound, size=shape).astype(dtype)
    if any(op == "layer_norm" and i == 1 for op, i, _ in uses):
        return np.ones(shape, dtype)
    return np.zeros(shape, dtype)


def checked_seed(who: str, seed: Any) -> int:
    """A seed of ``np.random.default_rng``: an int >= 0."""
    return checked_int(who, "seed", seed, low=0)


def _checked_names(who: str, what: str, names: Any) -> set[str]:
    """An iterable of names (not one str) as a set."""
    items = list(names) if isinstance(names, Iterable) and not isinstance(names, (str, bytes)) else None
    if items is None or not all(isinstance(n, str) for n in items):
        raise Error(f"{who}: {what} must be an iterable of weight names (not one str), got {shown(names)}")
    return set(items)
