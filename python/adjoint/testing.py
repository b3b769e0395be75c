"""Gradient checking for tests: analytic adjoints against central finite
differences taken in float64, whatever the graph's dtype, with tolerances
chosen by the dtype of the analytic gradient (as JAX's ``check_grads``
does). Every element of every input (``mode="full"``), or a few random
directions through all of them at once (``mode="directional"``, for inputs
of millions of elements). Failures are ``aj.GradientCheckError`` (an
``AssertionError``) whose message names the worst element, how many fail and
the largest relative error per input; pytest shows the caller's frame only
(``__tracebackhide__``)."""

from __future__ import annotations

import numbers
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .errors import Error, GradientCheckError
from .ir import Module
from .runtime import build
from .transform import ConvertDType, Gradient

#: rtol, and atol relative to the largest gradient element, by the dtype of the
#: analytic gradient: JAX's ``default_gradient_tolerance``. The numeric side is
#: float64, so these bound the analytic gradient's own rounding.
GRADIENT_TOLERANCE = {np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}
#: The central-difference step in float64: near the cube root of float64's
#: epsilon, where truncation and rounding errors balance for O(1) inputs.
DEFAULT_DELTA = 1e-6
MODES = ("full", "directional")
_RELATIVE_NOTE = "(rel err: |analytic - numeric| / max(|numeric|, atol / rtol), above rtol where failing)"


def numerical_grads(f: Callable[..., Any], inputs: Sequence[np.ndarray], delta: float | None = None,
                    which: Sequence[int] | None = None) -> list[np.ndarray]:
    """Central differences (f(x + d) - f(x - d)) / 2d of the scalar f for each
    element of each input in ``which`` (all by default), with f called on
    C-ordered float64 copies of the inputs, int and bool ones upcast too
    (only an input left out of ``which`` that is not float keeps its dtype).
    f should compute in float64 for the differences to be float64's."""
    __tracebackhide__ = True
    who = "numerical_grads"
    _check_callable(who, f)
    _check_inputs(who, inputs)
    delta = _Settings(who, delta, None, None, "full", 1, 0).delta
    which = _check_which(who, which, len(inputs))
    xs = _float64_copies(who, inputs, which)
    delta = DEFAULT_DELTA if delta is None else delta
    return [_central_differences(f, xs, i, delta) for i in which]


def _central_differences(f: Callable[..., Any], xs: list[np.ndarray], i: int, delta: float) -> np.ndarray:
    """(f(x + d e_j) - f(x - d e_j)) / 2d for each element j of ``xs[i]``,
    moved in place (by index, so in the array f gets whatever its layout)."""
    __tracebackhide__ = True
    x = xs[i]
    g = np.zeros(x.shape, dtype=np.float64)
    for j in np.ndindex(x.shape):
        orig = x[j]
        x[j] = orig + delta
        hi = _scalar(f(*xs))
        x[j] = orig - delta
        lo = _scalar(f(*xs))
        x[j] = orig
        g[j] = (hi - lo) / (2.0 * delta)
    return g


def check_numerical_grads(f: Callable[..., Any], inputs: Sequence[np.ndarray], grads: Sequence[np.ndarray],
                          delta: float | None = None, rtol: float | None = None, atol: float | None = None, *,
                          mode: str = "full", directions: int = 3, seed: int = 0) -> None:
    """Checks ``grads`` (one per input, in the dtype they were computed in)
    against central differences of the scalar ``f(*inputs)``, which is called
    on C-ordered float64 copies of the inputs (int and bool ones upcast too;
    complex or non-numeric ones are an Error): ``f`` must accept float64 arrays and
    should compute in float64, or the differences carry its own rounding (for
    an adjoint module, ``check_gradients`` does this for you; by hand, build
    ``aj.transform.ConvertDType("float64")(mod)`` and pass its function).

    An element passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.
    By default (None) ``rtol`` is ``GRADIENT_TOLERANCE`` of the gradient's dtype
    (2e-3 for float32, 1e-5 for float64), ``atol`` that times the largest
    finite ``|numeric|`` over all inputs (1 when all are zero), and ``delta``
    1e-6. A NaN on either side fails; an infinity passes only against the
    same infinity.

    ``mode="directional"`` checks instead, for ``directions`` random normal
    directions v (drawn from ``seed``) through all inputs at once, the analytic
    ``sum_i <grads_i, v_i>`` against ``(f(x + d v) - f(x - d v)) / 2d``, by the
    same rule (atol by default relative to the largest ``|analytic|``): two
    calls of f per direction, whatever the size of the inputs. A gradient off
    by a small relative amount everywhere is caught; one wrong element of many
    may not be. An analytic gradient holding a NaN fails before any direction
    is tried.

    Raises ``aj.GradientCheckError`` on a mismatch, ``aj.Error`` on bad arguments."""
    __tracebackhide__ = True
    settings = _Settings("check_numerical_grads", delta, rtol, atol, mode, directions, seed)
    _check_callable("check_numerical_grads", f)
    _check_inputs("check_numerical_grads", inputs)
    names = [str(i) for i in range(len(inputs))]
    _check_grads("check_numerical_grads", inputs, grads, names)
    every = list(range(len(inputs)))
    _compare(f, _float64_copies("check_numerical_grads", inputs, every), every, [np.asarray(g) for g in grads], names,
             settings)


def check_gradients(mod: Module, func_name: str, inputs: Sequence[Any], require_grads: Sequence[str] | None = None,
                    target_index: int = 0, delta: float | None = None, rtol: float | None = None,
                    atol: float | None = None, simplify: bool = True, *, mode: str = "full", directions: int = 3,
                    seed: int = 0) -> list[np.ndarray]:
    """Gradient + build + finite differences in one call: differentiates
    ``func_name`` with respect to ``require_grads`` (param names; all float
    params by default), runs the adjoint on ``inputs`` in the module's own
    dtype (float32 stays float32), and checks it against central differences
    of a float64 copy of the function (``aj.transform.ConvertDType``, float
    inputs upcast, int ones as they are). Tolerances, ``delta``, ``mode``, ``directions`` and ``seed`` as in
    ``check_numerical_grads``; the defaults (None) follow the gradient's
    dtype. Returns the analytic grads."""
    __tracebackhide__ = True
    settings = _Settings("check_gradients", delta, rtol, atol, mode, directions, seed)
    if not isinstance(mod, Module):
        raise Error(f"check_gradients: expected an aj.Module, got {type(mod).__name__}")
    fn = mod[func_name]
    params = [p.name_hint for p in fn.params]
    _check_inputs("check_gradients", inputs)
    which = _which_params(fn, params, func_name, require_grads)
    grad_mod = Gradient(func_name, [params[i] for i in which], target_index, simplify)(mod)
    _, grads = build(grad_mod)[func_name + "_adjoint"](*inputs)
    grads = [np.asarray(g) for g in grads]
    names = [f"'{params[i]}' ({i})" for i in which]
    _check_grads("check_gradients", [inputs[i] for i in which], grads, names)
    forward = build(ConvertDType("float64")(mod))[func_name]

    def target(*xs: Any) -> Any:
        out = forward(*xs)
        return out[target_index] if isinstance(out, tuple) else out

    _compare(target, _float64_copies("check_gradients", inputs, which), which, grads, names, settings)
    return grads


@dataclass
class _Settings:
    """A check's options, validated on construction (``who`` names the check)."""

    who: str
    delta: float | None
    rtol: float | None
    atol: float | None
    mode: str
    directions: int
    seed: int

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        if self.mode not in MODES:
            raise Error(f"{self.who}: mode must be one of {MODES}, got {self.mode!r}")
        if not _is_int(self.directions) or self.directions < 1:
            raise Error(f"{self.who}: directions must be a positive int, got {self.directions!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise Error(f"{self.who}: seed must be a non-negative int, got {self.seed!r}")
        for name, value, least in (("delta", self.delta, "positive"), ("rtol", self.rtol, "non-negative"),
                                   ("atol", self.atol, "non-negative")):
            number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            ok = value is None or (number and np.isfinite(value) and (value > 0 if least == "positive" else value >= 0))
            if not ok:
                raise Error(f"{self.who}: {name} must be None or a {least} finite number, got {value!r}")


def _check_callable(who: str, f: Any) -> None:
    __tracebackhide__ = True
    if not callable(f):
        raise Error(f"{who}: f must be callable, got {type(f).__name__}")


def _check_inputs(who: str, inputs: Any) -> None:
    __tracebackhide__ = True
    if isinstance(inputs, np.ndarray):  # its rows would be taken as the inputs
        raise Error(f"{who}: inputs must be a list of arrays, one per input, got an ndarray of shape {inputs.shape}; "
                    f"give one input as [x]")
    if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__len__") or not hasattr(inputs, "__getitem__"):
        raise Error(f"{who}: inputs must be a list of arrays, got {type(inputs).__name__}")


def _check_which(who: str, which: Any, count: int) -> list[int]:
    """``which`` (None: every input) as a list of input indices."""
    __tracebackhide__ = True
    if which is None:
        return list(range(count))
    if isinstance(which, (str, bytes)) or not hasattr(which, "__iter__"):
        raise Error(f"{who}: which must be a list of input indices, got {type(which).__name__}")
    which = list(which)
    for i in which:
        if not _is_int(i) or not 0 <= i < count:
            raise Error(f"{who}: which holds {i!r}, not the index of one of the {count} inputs")
    return [int(i) for i in which]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _which_params(fn: Any, params: list[str], func_name: str, require_grads: Sequence[str] | None) -> list[int]:
    """The indices of the params check_gradients differentiates."""
    __tracebackhide__ = True
    if require_grads is None:
        return [i for i, p in enumerate(fn.params) if p.type.dtype in ("float32", "float64")]
    if isinstance(require_grads, str) or not hasattr(require_grads, "__iter__"):
        raise Error(f"check_gradients: require_grads must be a list of param names, got {type(require_grads).__name__}")
    missing = [r for r in require_grads if r not in params]
    if missing:
        raise Error(f"check_gradients: {missing} are not params of '{func_name}' (params: {params})")
    return [params.index(r) for r in require_grads]


def _check_grads(who: str, inputs: Sequence[Any], grads: Sequence[Any], names: list[str]) -> None:
    """One float grad of its input's shape per input."""
    __tracebackhide__ = True
    _check_inputs(who, inputs)
    if isinstance(grads, (str, bytes)) or not hasattr(grads, "__len__"):
        raise Error(f"{who}: grads must be a list of arrays, got {type(grads).__name__}")
    if len(grads) != len(inputs):
        raise Error(f"{who}: {len(inputs)} inputs but {len(grads)} grads")
    for name, x, g in zip(names, inputs, grads):
        if np.shape(g) != np.shape(x):
            raise Error(f"{who}: grad of input {name} has shape {np.shape(g)}, the input {np.shape(x)}")
        if np.asarray(g).dtype not in GRADIENT_TOLERANCE:
            raise Error(f"{who}: grad of input {name} is {np.asarray(g).dtype}, expected float32 or float64")


def _compare(f: Callable[..., Any], xs: list[np.ndarray], which: list[int], grads: list[np.ndarray],
             names: list[str], s: _Settings) -> None:
    """Runs the check s.mode names on f at the float64 inputs xs, for the
    inputs ``which`` with analytic ``grads``; raises GradientCheckError."""
    __tracebackhide__ = True
    delta = DEFAULT_DELTA if s.delta is None else s.delta
    tol = max(GRADIENT_TOLERANCE[g.dtype] for g in grads) if grads else GRADIENT_TOLERANCE[np.dtype(np.float64)]
    rtol = tol if s.rtol is None else s.rtol
    if s.mode == "full":
        numeric = numerical_grads(f, xs, delta, which)
        atol = tol * _scale(numeric) if s.atol is None else s.atol
        message = _elementwise_mismatch(grads, numeric, names, rtol, atol)
    else:
        atol = tol * _scale(grads) if s.atol is None else s.atol
        message = _nan_mismatch(grads, names) or _directional_mismatch(f, xs, which, grads, delta, rtol, atol,
                                                                        s.directions, s.seed)
    if message:
        raise GradientCheckError(message)


def _elementwise_mismatch(grads: list[np.ndarray], numeric: list[np.ndarray], names: list[str], rtol: float,
                          atol: float) -> str | None:
    """The failure message of a full check, or None when every element passes."""
    __tracebackhide__ = True
    rows, worst, failing, not_finite, total = [], None, 0, 0, 0
    floor = atol / rtol if rtol > 0 else 0.0
    for name, g, n in zip(names, grads, numeric):
        a = np.asarray(g, dtype=np.float64)
        excess, rel = _excess(a, n, rtol, atol, floor)
        bad = int(np.count_nonzero(excess > 0))
        rows.append((name, a.size, bad, float(rel.max(initial=0.0))))
        failing, total = failing + bad, total + a.size
        not_finite += int(np.count_nonzero((excess > 0) & ~(np.isfinite(a) & np.isfinite(n))))
        if bad and (worst is None or excess.max() > worst[0]):
            j = int(np.argmax(excess))
            worst = (float(excess.reshape(-1)[j]), name, np.unravel_index(j, a.shape), a.reshape(-1)[j],
                     n.reshape(-1)[j])
    if worst is None:
        return None
    _, name, index, a, n = worst
    index = tuple(int(i) for i in index)
    which = f" ({not_finite} of them not finite)" if not_finite else ""
    return (f"gradient check failed: {failing} of {total} elements exceed "
            f"atol {atol:.3g} + rtol {rtol:.3g} * |numeric|{which}\n"
            f"worst: input {name}, element {index}: analytic {a:.9g}, numeric {n:.9g} (|diff| {abs(a - n):.3g})\n"
            + _table(["input", "elements", "failing", "max rel err"], rows) + "\n" + _RELATIVE_NOTE)


def _excess(analytic: np.ndarray, numeric: np.ndarray, rtol: float, atol: float,
            floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Per element, how far ``|analytic - numeric|`` is beyond ``atol + rtol *
    |numeric|`` (positive where it fails), and its relative error. Where
    either side is not finite, the same infinity on both passes (excess
    -inf, error 0), anything else fails (excess and error +inf): a NaN on
    either side, an infinity on one side only or of opposite signs."""
    __tracebackhide__ = True
    a, n = np.asarray(analytic, dtype=np.float64), np.asarray(numeric, dtype=np.float64)
    finite = np.isfinite(a) & np.isfinite(n)
    same_infinity = np.isinf(a) & (a == n)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - n)
        excess = diff - (atol + rtol * np.abs(n))
        rel = _relative(diff, n, floor)
    excess = np.where(finite, excess, np.where(same_infinity, -np.inf, np.inf))
    rel = np.where(finite, rel, np.where(same_infinity, 0.0, np.inf))
    return excess, rel


def _nan_mismatch(grads: list[np.ndarray], names: list[str]) -> str | None:
    """The failure message when an analytic gradient holds a NaN, else None."""
    __tracebackhide__ = True
    nans = [np.isnan(np.asarray(g, dtype=np.float64)) for g in grads]
    count = sum(int(np.count_nonzero(m)) for m in nans)
    if not count:
        return None
    name, mask = next((name, m) for name, m in zip(names, nans) if m.any())
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))
    return (f"gradient check failed: {count} of {sum(m.size for m in nans)} analytic gradient elements are NaN\n"
            f"first: input {name}, element {index}: analytic nan")


def _directional_mismatch(f: Callable[..., Any], xs: list[np.ndarray], which: list[int], grads: list[np.ndarray],
                          delta: float, rtol: float, atol: float, directions: int, seed: int) -> str | None:
    """The failure message of a directional check, or None when every direction passes."""
    __tracebackhide__ = True
    rng = np.random.default_rng(seed)
    rows, failing = [], 0
    floor = atol / rtol if rtol > 0 else 0.0
    grads64 = [np.asarray(g, dtype=np.float64) for g in grads]
    for k in range(directions):
        vs = [rng.standard_normal(xs[i].shape) for i in which]
        analytic = sum(float(np.vdot(g, v)) for g, v in zip(grads64, vs))
        numeric = _directional_difference(f, xs, which, vs, delta)
        excess, rel = _excess(np.array(analytic), np.array(numeric), rtol, atol, floor)
        bad = bool(excess > 0)
        failing += bad
        rows.append((k, f"{analytic:.9g}", f"{numeric:.9g}", float(rel), "FAIL" if bad else "ok"))
    if not failing:
        return None
    return (f"gradient check failed: {failing} of {directions} random directions (seed {seed}) exceed "
            f"atol {atol:.3g} + rtol {rtol:.3g} * |numeric|\n"
            + _table(["direction", "analytic <grad, v>", "numeric", "rel err", ""], rows) + "\n" + _RELATIVE_NOTE)


def _directional_difference(f: Callable[..., Any], xs: list[np.ndarray], which: list[int], vs: list[np.ndarray],
                            delta: float) -> float:
    """(f(x + d v) - f(x - d v)) / 2d, v moving the inputs ``which``."""
    __tracebackhide__ = True
    hi, lo = list(xs), list(xs)
    for i, v in zip(which, vs):
        hi[i], lo[i] = xs[i] + delta * v, xs[i] - delta * v
    return (_scalar(f(*hi)) - _scalar(f(*lo))) / (2.0 * delta)


def _relative(diff: np.ndarray, numeric: np.ndarray, floor: float) -> np.ndarray:
    """|diff| relative to |numeric|, or to ``floor`` (atol / rtol) where that
    is larger: comparable to rtol, whichever of atol and rtol decides."""
    __tracebackhide__ = True
    denom = np.maximum(np.abs(numeric), floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(diff == 0, 0.0, diff / np.where(denom > 0, denom, np.finfo(np.float64).tiny))


def _table(header: list[str], rows: list[tuple]) -> str:
    __tracebackhide__ = True
    cells = [header] + [[f"{c:.3g}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(r[c]) for r in cells) for c in range(len(header))]
    return "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def _scale(arrays: list[np.ndarray]) -> float:
    """The largest finite magnitude over all arrays, or 1 when there is none
    but zero (NaNs and infinities have no scale to give)."""
    __tracebackhide__ = True
    top = max((float(np.max(np.abs(a), initial=0.0, where=np.isfinite(a))) for a in arrays), default=0.0)
    return top if top > 0 else 1.0


def _float64_copies(who: str, inputs: Sequence[Any], which: Sequence[int]) -> list[np.ndarray]:
    """C-ordered copies of the inputs: float64 for float inputs and for every
    input in ``which`` (the differences move those, so ints and bools are
    upcast too), the others in their own dtype. An input in ``which`` that
    is not a real number is an Error naming it."""
    __tracebackhide__ = True
    moved = set(which)
    out = []
    for i, x in enumerate(inputs):
        a = _as_array(who, i, x)
        if i in moved and a.dtype.kind not in "biuf":
            raise Error(f"{who}: input {i} is {a.dtype}; finite differences need real numbers (float, int or bool)")
        float64 = i in moved or a.dtype.kind == "f"
        out.append(np.array(a, dtype=np.float64 if float64 else a.dtype, order="C"))
    return out


def _as_array(who: str, i: int, x: Any) -> np.ndarray:
    __tracebackhide__ = True
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as e:
        raise Error(f"{who}: input {i} is not an array: {e}") from e


def _scalar(value: Any) -> float:
    """What f returned, as a float: one real number (of any array shape with
    one element); anything else is an Error saying what f returned."""
    __tracebackhide__ = True
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - whatever f returned that NumPy cannot take is reported below
        a = np.asarray(None)
    if a.dtype.kind in "biuf":
        if a.size != 1:
            raise Error(f"gradient check: the function must return a scalar, got shape {a.shape}")
        return float(a.reshape(()))
    item = a.reshape(()).item() if a.size == 1 else None  # an object array: a Fraction passes
    if not isinstance(item, numbers.Real):
        raise Error(f"gradient check: the function must return a real scalar, got {reprlib.repr(value)} "
                    f"({type(value).__name__})")
    try:
        return float(item)
    except OverflowError:  # an int past float64's range
        raise Error(f"gradient check: the function returned {reprlib.repr(value)}, too large for a float64") from None


__all__ = ["numerical_grads", "check_numerical_grads", "check_gradients", "GRADIENT_TOLERANCE", "DEFAULT_DELTA"]
