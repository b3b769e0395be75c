"""Gradient checking for tests: analytic adjoints against central finite
differences, computed in float64 whatever the graph's dtype."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .errors import Error, GradientCheckError
from .ir import Module
from .runtime import build
from .transform import Gradient


def numerical_grads(f: Callable[..., Any], inputs: Sequence[np.ndarray], delta: float = 1e-3,
                    which: Sequence[int] | None = None) -> list[np.ndarray]:
    """Central differences (f(x + d) - f(x - d)) / 2d of the scalar f for each
    element of each input in ``which`` (all by default), in float64."""
    xs = [np.array(x, copy=True) for x in inputs]
    out = []
    for i in (range(len(xs)) if which is None else which):
        x = xs[i]
        g = np.zeros(x.shape, dtype=np.float64)
        flat = x.reshape(-1)
        for j in range(flat.size):
            orig = flat[j].copy()
            flat[j] = orig + delta
            hi = float(np.asarray(f(*xs), dtype=np.float64))
            flat[j] = orig - delta
            lo = float(np.asarray(f(*xs), dtype=np.float64))
            flat[j] = orig
            g.reshape(-1)[j] = (hi - lo) / (2.0 * delta)
        out.append(g)
    return out


def check_numerical_grads(f: Callable[..., Any], inputs: Sequence[np.ndarray], grads: Sequence[np.ndarray],
                          delta: float = 1e-3, rtol: float = 1e-2, atol: float = 1e-4) -> None:
    """Checks ``grads`` (one per input) against central differences of the
    scalar ``f(*inputs)``: |analytic - numeric| <= atol + rtol * |numeric|
    elementwise. On failure raises ``aj.GradientCheckError`` naming the worst
    element: input index, element index, analytic and numeric values."""
    if len(grads) != len(inputs):
        raise Error(f"check_numerical_grads: {len(inputs)} inputs but {len(grads)} grads")
    for i, (x, g) in enumerate(zip(inputs, grads)):
        if np.shape(g) != np.shape(x):
            raise Error(f"check_numerical_grads: grad {i} has shape {np.shape(g)}, input {i} has {np.shape(x)}")
    numeric = numerical_grads(f, inputs, delta)
    _compare(list(grads), numeric, [np.asarray(x) for x in inputs], list(range(len(inputs))), rtol, atol)


def check_gradients(mod: Module, func_name: str, inputs: Sequence[Any], require_grads: Sequence[str] | None = None,
                    target_index: int = 0, delta: float = 1e-3, rtol: float = 1e-2, atol: float = 1e-4,
                    simplify: bool = True) -> list[np.ndarray]:
    """Gradient + build + finite differences in one call: differentiates
    ``func_name`` with respect to ``require_grads`` (param names; all float
    params by default), runs the adjoint on ``inputs`` and checks it against
    central differences of the function itself. Returns the analytic grads."""
    if not isinstance(mod, Module):
        raise Error(f"check_gradients: expected an aj.Module, got {type(mod).__name__}")
    fn = mod[func_name]
    params = [p.name_hint for p in fn.params]
    if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__len__"):
        raise Error(f"check_gradients: inputs must be a list of arrays, got {type(inputs).__name__}")
    if require_grads is not None and (isinstance(require_grads, str) or not hasattr(require_grads, "__iter__")):
        raise Error(f"check_gradients: require_grads must be a list of param names, got {type(require_grads).__name__}")
    if require_grads is None:
        which = [i for i, p in enumerate(fn.params) if p.type.dtype in ("float32", "float64")]
    else:
        missing = [r for r in require_grads if r not in params]
        if missing:
            raise Error(f"check_gradients: {missing} are not params of '{func_name}' (params: {params})")
        which = [params.index(r) for r in require_grads]
    grad_mod = Gradient(func_name, [params[i] for i in which], target_index, simplify)(mod)
    exe = build(grad_mod)
    _, grads = exe[func_name + "_adjoint"](*inputs)
    forward = exe[func_name]

    def target(*xs: Any) -> Any:
        out = forward(*xs)
        return out[target_index] if isinstance(out, tuple) else out

    xs = [np.asarray(x) for x in inputs]
    numeric = numerical_grads(target, xs, delta, which)
    sub_inputs = [xs[i] for i in which]
    _compare(list(grads), numeric, sub_inputs, which, rtol, atol)
    return list(grads)


def _compare(grads: list[np.ndarray], numeric: list[np.ndarray], inputs: list[np.ndarray], which: list[int],
             rtol: float, atol: float) -> None:
    """Raises GradientCheckError naming the element that most exceeds
    atol + rtol * |numeric|, over all inputs."""
    worst = None
    for k, (g, n) in enumerate(zip(grads, numeric)):
        g = np.asarray(g, dtype=np.float64)
        excess = np.abs(g - n) - (atol + rtol * np.abs(n))
        if excess.size and (worst is None or excess.max() > worst[0]):
            j = int(np.argmax(excess))
            worst = (float(excess.reshape(-1)[j]), k, j, g.reshape(-1)[j], n.reshape(-1)[j])
    if worst is None or worst[0] <= 0:
        return
    _, k, j, a, n = worst
    index = tuple(int(i) for i in np.unravel_index(j, inputs[k].shape)) if inputs[k].ndim else ()
    raise GradientCheckError(
        f"gradient mismatch at input {which[k]}, element {index}: analytic {a:.9g}, numeric {n:.9g} "
        f"(|diff| {abs(a - n):.3g} > atol {atol:g} + rtol {rtol:g} * |numeric|)"
    )


__all__ = ["numerical_grads", "check_numerical_grads", "check_gradients"]
