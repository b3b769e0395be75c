"""Weights between a torch state dict and the params of a module made by
``aj.from_torch``.

adjoint keeps weights as a dict from param name to NumPy array, in the order
of the function's weight params (those after ``num_input``), so
``exe["main"](x, *params.values())`` runs the function. Names are matched
through ``torch_names.param_name``: ``fc1.weight`` is param ``fc1_weight``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..errors import Error
from .torch_names import param_name, require_torch


def from_torch_state(torch_state: Any, mod: _core.Module, func_name: str = "main") -> dict[str, np.ndarray]:
    """The weights of ``mod[func_name]`` taken from a torch module or its state dict.

    Returns ``{param name: array}`` with one entry per weight param, in
    param order, each array of that param's dtype (so a module converted to
    float64 gets float64 arrays). Raises ``aj.Error`` naming the param when
    the state dict has no entry for it or one of another shape.
    """
    torch = require_torch("aj.from_torch_state")
    state = torch_state.state_dict() if isinstance(torch_state, torch.nn.Module) else dict(torch_state)
    by_param = _by_param_name(state)
    params = {}
    for var in _weights(mod, func_name):
        if var.name_hint not in by_param:
            raise Error(f"aj.from_torch_state: no entry of the state dict becomes param '{var.name_hint}' "
                        f"(its keys: {', '.join(list(state)[:8])}{', ...' if len(state) > 8 else ''})")
        torch_name = by_param[var.name_hint]
        array = state[torch_name].detach().cpu().numpy().astype(var.type.dtype)
        _check_shape(var, array.shape, torch_name)
        params[var.name_hint] = array
    return params


def to_torch_state(params: dict[str, Any], torch_state: Any) -> dict[str, Any]:
    """A torch state dict of the adjoint ``params`` (``{param name: array}``).

    ``torch_state`` (a torch module or its state dict) gives the torch names
    and the dtype of each tensor. Every param must match an entry; entries
    with no param (unused buffers) are left out, so load the result with
    ``module.load_state_dict(state, strict=False)``.
    """
    torch = require_torch("aj.to_torch_state")
    state = torch_state.state_dict() if isinstance(torch_state, torch.nn.Module) else dict(torch_state)
    by_param = _by_param_name(state)
    result = {}
    for name, value in params.items():
        if name not in by_param:
            raise Error(f"aj.to_torch_state: param '{name}' matches no entry of the torch state dict")
        like = state[by_param[name]]
        array = np.asarray(value)
        if tuple(array.shape) != tuple(like.shape):
            raise Error(f"aj.to_torch_state: param '{name}' has shape {tuple(array.shape)}, torch's "
                        f"'{by_param[name]}' has {tuple(like.shape)}")
        result[by_param[name]] = torch.from_numpy(np.array(array)).to(like.dtype)
    return result


def _by_param_name(state: dict) -> dict[str, str]:
    by_param: dict[str, str] = {}
    for torch_name in state:
        name = param_name(torch_name)
        if name in by_param:
            raise Error(f"torch names '{by_param[name]}' and '{torch_name}' both map to param '{name}'")
        by_param[name] = torch_name
    return by_param


def _weights(mod: _core.Module, func_name: str) -> list:
    fn = mod[func_name]
    return list(fn.params[fn.attrs.get("num_input", len(fn.params)):])


def _check_shape(var: Any, shape: tuple, torch_name: str) -> None:
    if tuple(var.type.shape) != tuple(shape):
        raise Error(f"aj.from_torch_state: param '{var.name_hint}' has shape {tuple(var.type.shape)}, "
                    f"torch's '{torch_name}' has {tuple(shape)}")
