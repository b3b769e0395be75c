"""Weights between a torch state dict and the params of a module made by
``aj.from_torch``.

adjoint keeps weights as a dict from param name to NumPy array, in the order
of the function's weight params (those after ``num_input``), so
``exe["main"](x, *params.values())`` runs the function. Names are matched
through ``torch_names.param_name``: ``fc1.weight`` is param ``fc1_weight``.
A state dict's values may be torch tensors or NumPy arrays; anything else
given is an ``aj.Error`` naming the argument or the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _core
from .._casts import changed_value
from ..errors import Error
from .torch_names import param_name, require_torch


def from_torch_state(torch_state: Any, mod: _core.Module, func_name: str = "main") -> dict[str, np.ndarray]:
    """The weights of ``mod[func_name]`` taken from a torch module or its state
    dict (``{torch name: tensor or NumPy array}``).

    Returns ``{param name: array}`` with one entry per weight param, in
    param order, each array of that param's dtype (so a module converted to
    float64 gets float64 arrays). Raises ``aj.Error`` naming the param when
    the state dict has no entry for it or one of another shape, or one with
    a value the param's dtype does not hold (NaN into an int), and naming
    the argument or entry that is not what it should be.
    """
    what = "aj.from_torch_state"
    torch = require_torch(what)
    state = _state_dict(torch, torch_state, what)
    if not isinstance(mod, _core.Module):
        raise Error(f"{what}: mod must be an adjoint Module (made by aj.from_torch), got {type(mod).__name__}")
    by_param = _by_param_name(state)
    params = {}
    for var in _weights(mod, func_name):
        if var.name_hint not in by_param:
            raise Error(f"{what}: no entry of the state dict becomes param '{var.name_hint}' "
                        f"(its keys: {', '.join(list(state)[:8])}{', ...' if len(state) > 8 else ''})")
        torch_name = by_param[var.name_hint]
        array = _array(torch, state[torch_name], f"{what}: the state dict's entry '{torch_name}'")
        _check_shape(var, array.shape, torch_name)
        params[var.name_hint] = _converted(array, np.dtype(var.type.dtype),
                                           f"{what}: the state dict's entry '{torch_name}' (for param "
                                           f"'{var.name_hint}', {var.type.dtype})")
    return params


def to_torch_state(params: dict[str, Any], torch_state: Any) -> dict[str, Any]:
    """A torch state dict of the adjoint ``params`` (``{param name: array}``;
    a tensor is taken as its values too).

    ``torch_state`` (a torch module or its state dict, of tensors or NumPy
    arrays) gives the torch names and the dtype of each tensor. Every param
    must match an entry; entries with no param (unused buffers) are left
    out, so load the result with ``module.load_state_dict(state,
    strict=False)``. The result's values are torch tensors; a value the
    entry's dtype does not hold (2**40 into int32) is an aj.Error.
    """
    what = "aj.to_torch_state"
    torch = require_torch(what)
    if not isinstance(params, Mapping):
        raise Error(f"{what}: params must be a dict of param name to array, got {type(params).__name__}")
    state = _state_dict(torch, torch_state, what)
    by_param = _by_param_name(state)
    result = {}
    for name, value in params.items():
        if name not in by_param:
            raise Error(f"{what}: param '{name}' matches no entry of the torch state dict")
        entry = state[by_param[name]]
        like = _array(torch, entry, f"{what}: the torch state dict's entry '{by_param[name]}'")
        array = _array(torch, value, f"{what}: param '{name}'")
        if tuple(array.shape) != tuple(like.shape):
            raise Error(f"{what}: param '{name}' has shape {tuple(array.shape)}, torch's "
                        f"'{by_param[name]}' has {tuple(like.shape)}")
        dtype = entry.dtype if isinstance(entry, torch.Tensor) else torch.from_numpy(like.reshape(-1)[:0]).dtype
        array = _converted(array, like.dtype, f"{what}: param '{name}' (for torch's '{by_param[name]}', "
                                              f"{str(dtype).removeprefix('torch.')})")
        tensor = torch.from_numpy(np.array(array)).to(dtype)
        if dtype == torch.bfloat16:  # like is float32 (NumPy has no bfloat16): the cast above is the one to check
            overflow = torch.isfinite(torch.from_numpy(np.asarray(array))) & ~torch.isfinite(tensor)
            if overflow.any():
                raise Error(f"{what}: param '{name}' (for torch's '{by_param[name]}', bfloat16) holds "
                            f"{np.asarray(array)[overflow.numpy()].flat[0].item()!r}, which bfloat16 does not "
                            "(a cast would change it)")
        result[by_param[name]] = tensor
    return result


def _state_dict(torch: Any, torch_state: Any, what: str) -> dict:
    """The state dict of a torch module, or ``torch_state`` itself when it is one."""
    if isinstance(torch_state, torch.nn.Module):
        return torch_state.state_dict()
    if not isinstance(torch_state, Mapping):
        raise Error(f"{what}: torch_state must be a torch module or its state dict, got {type(torch_state).__name__}")
    for key in torch_state:
        if not isinstance(key, str):
            raise Error(f"{what}: the state dict's keys must be torch names (str), got {key!r}")
    return dict(torch_state)


def _array(torch: Any, value: Any, where: str) -> np.ndarray:
    """The values of a tensor, a NumPy array or nested lists of numbers; aj.Error naming ``where`` else."""
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided:
            raise Error(f"{where} is a {str(value.layout).removeprefix('torch.')} tensor, not an array of "
                        "numbers: give t.to_dense()")
        if value.is_meta:
            raise Error(f"{where} is a meta tensor, which holds no values")
        if value.is_complex():
            raise Error(f"{where} is a tensor of complex numbers ({value.dtype}); adjoint's numbers are real")
        value = value.detach().cpu()
        try:
            return (value.float() if value.dtype == torch.bfloat16 else value).numpy()
        except (TypeError, RuntimeError) as e:  # dtypes NumPy has not (uint16 before torch 2.3, float8)
            raise Error(f"{where} is a tensor of dtype {value.dtype}, which NumPy cannot hold: {e}") from None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested lists
        raise Error(f"{where} is not an array of numbers: {e}") from None
    if array.dtype.kind not in "biuf":
        raise Error(f"{where} is not a tensor or an array of numbers: {_short(value)}")
    return array


def _converted(array: np.ndarray, dtype: np.dtype, where: str) -> np.ndarray:
    """``array`` in ``dtype``; an aj.Error naming ``where`` when a value does
    not fit it, which the cast would change (``_casts.changed_value``): a
    NaN, infinity or fraction into an int dtype or bool, a number past its
    range (2**40 into int32, 1e40 into float32), a number other than 0 and 1
    into bool."""
    cast, changed = changed_value(array, dtype)
    if changed is not None:
        raise Error(f"{where} holds {changed!r}, which {dtype.name} does not (a cast would change it)")
    return cast


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
