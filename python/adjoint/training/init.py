"""Initial weights for a model function, read off how each weight is used.

A weight multiplied by matmul or convolved gets PyTorch's nn.Linear / nn.Conv2d
default, uniform in +-1/sqrt(fan_in), with fan_in the dim(s) it contracts
over (a (in, out) matrix on the right of a matmul contracts over in; a conv2d
OIHW weight over I*H*W); a layer_norm gamma is ones; every other weight
(biases, layer_norm's beta) is zeros.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .. import _core
from ..errors import Error


def _users(fn: Any) -> dict[str, list[tuple[str, int, Any]]]:
    """Param name -> (op name, arg position, call) of each call using it
    directly or through a transpose (permute_dims, reported as op "T.<op>")."""
    transposed: dict[str, str] = {}
    uses: dict[str, list[tuple[str, int, Any]]] = {p.name_hint: [] for p in fn.params}
    params = {p.name_hint for p in fn.params}
    for b in fn.bindings:
        call = b.value
        if not isinstance(call, _core.Call):
            continue
        for i, arg in enumerate(call.args):
            name = getattr(arg, "name_hint", None)
            if name in params and isinstance(arg, _core.Var):
                uses[name].append((call.op, i, call))
                if call.op == "permute_dims":
                    transposed[b.var.name_hint] = name
            elif name in transposed:
                uses[transposed[name]].append((f"T.{call.op}", i, call))
    return uses


def _fan_in(shape: tuple[int, ...], uses: list[tuple[str, int, Any]]) -> int | None:
    """The number of inputs each output of a matmul or conv2d weight sums over."""
    for op, position, _ in uses:
        if op == "matmul":
            return int(shape[-2]) if position == 1 else int(shape[-1])
        if op == "T.matmul":
            return int(shape[-1]) if position == 1 else int(shape[-2])
        if op == "conv2d" and position == 1:
            return int(np.prod(shape[1:]))
    return None


def init_params(fn: Any, seed: int = 0, skip: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Initial values for the weights of ``fn`` (params past ``num_input``),
    by name, each drawn from ``np.random.default_rng([seed, index])`` (index
    its position among the params, so leaving one out changes no other);
    names in ``skip`` are left out. Symbolic weight dims are an error."""
    num_input = int(fn.attrs.get("num_input", len(fn.params)))
    uses = _users(fn)
    skip = set(skip)
    out: dict[str, np.ndarray] = {}
    for index, p in enumerate(fn.params):
        name, shape, dtype = p.name_hint, tuple(p.type.shape), np.dtype(p.type.dtype)
        if index < num_input or name in skip:
            continue
        if any(not isinstance(d, int) for d in shape):
            raise Error(f"init_params: weight '{name}' has symbolic shape {shape}; give its initial value")
        fan_in = _fan_in(shape, uses[name])
        if fan_in:
            bound = 1.0 / np.sqrt(fan_in)
            rng = np.random.default_rng([seed, index])
            out[name] = rng.uniform(-bound, bound, size=shape).astype(dtype)
        elif any(op == "layer_norm" and i == 1 for op, i, _ in uses[name]):
            out[name] = np.ones(shape, dtype)
        else:
            out[name] = np.zeros(shape, dtype)
    return out
