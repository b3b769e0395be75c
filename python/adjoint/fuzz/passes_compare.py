"""Running a function of the ``passes`` fuzz target's program before and
after each pass, and comparing what it gives: ``Track`` follows a function
across the pipeline (how LiftTransformParams changed its calling
convention, whether a pass may have rounded otherwise), ``call`` calls it
through that convention, ``compare`` holds results to the tolerance that
allows. Apart from the target so that the pipeline's checks and the Train
check share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import adjoint as aj
from adjoint.fuzz.exec import summarize
from adjoint.fuzz.runner import Finding

@dataclass
class Track:
    """A function run after each pass: how its args come from the original
    function's args (``steps``), and the results it must give."""

    steps: tuple  # ("lift", num_input, transform_params name) or ("weights", num_input)
    args: list  # the original function's args
    want: Any
    converted: bool = False  # a float dtype changed on the way: compare loosely, where finite
    rounding: bool = False  # a pass ran that may round otherwise
    sensitive: bool = False  # ints or bools computed from floats: rounding may flip them
    float32: bool = False  # float32 values inside (a float64 result may hold float32 rounding)


def conform(args: list, fn: aj.Function) -> list:
    """The args cast to the float dtypes of fn's params (after ConvertDType)."""
    out = []
    for a, p in zip(args, fn.params):
        t = p.type
        if t.is_tensor and isinstance(a, np.ndarray) and a.dtype.kind == "f" and t.dtype.startswith("float") \
                and a.dtype.name != t.dtype:
            a = a.astype(t.dtype)
        out.append(a)
    return out


def call(exe: Any, mod: aj.Module, name: str, track: Track) -> Any:
    """What function ``name`` of the built ``mod`` gives on the track's args, taken
    through its steps (after a lift, the weights through f_transform_params first)."""
    args = list(track.args)
    for step in track.steps:
        if step[0] == "lift":
            _, n, tp = step
            got = exe[tp](*conform(args[n:], mod[tp]))
            args = args[:n] + (list(got) if isinstance(got, tuple) else [got])
        else:
            args = args[step[1]:]
    if len(args) != len(mod[name].params):
        raise Finding("signature", f"function {name!r} takes {len(mod[name].params)} params, but its calling "
                                   f"convention gives {len(args)} args", "params")
    return exe[name](*conform(args, mod[name]))


def sensitive(fn: aj.Function) -> bool:
    """Whether fn makes ints or bools from floats (comparisons, astype,
    floor ops), or reads argmax positions: values rounded otherwise may then
    differ by whole steps."""
    for b in fn.bindings:
        v = b.value
        if not isinstance(v, aj.Call):
            continue
        if v.op in ("floor_divide", "floor_mod", "max_pool2d_backward", "max", "min"):
            return True
        floats_in = any(hasattr(a, "type") and _has_float(a.type) for a in v.args)
        if floats_in and not _has_float(b.var.type):
            return True
    return False


def _has_float32(fn: aj.Function) -> bool:
    """Whether fn has a float32 param or binding."""
    return any("float32" in _dtypes(v.type) for v in list(fn.params) + [b.var for b in fn.bindings])


def _has_float(t: aj.Type) -> bool:
    return any(d.startswith("float") for d in _dtypes(t))


def _dtypes(t: aj.Type) -> list[str]:
    """The dtypes of a type's tensors (a tuple's fields', nested)."""
    return [d for f in t.fields for d in _dtypes(f)] if t.is_tuple else [t.dtype]


def compare(got: Any, want: Any, track: Track, where: str) -> None:
    """A Finding unless ``got`` is ``want``: the same structure, shapes and dtypes,
    ints and bools equal, floats within the tolerance the track allows."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            raise Finding("wrong-result", f"{where} is {summarize(got)}, want {summarize(want)}", "structure")
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, track, f"{where}[{i}]")
        return
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        raise Finding("wrong-result", f"{where} is {summarize(got)}, want {summarize(want)}", "shape")
    if want.dtype.kind != "f" or got.dtype.kind != "f":
        if got.dtype != want.dtype:
            raise Finding("wrong-result", f"{where} is {summarize(got)}, want {summarize(want)}", "dtype")
        if not np.array_equal(got, want) and not (track.rounding and track.sensitive):
            raise Finding("wrong-result", f"{where} differs:\ngot  {got!r}\nwant {want!r}", "ints")
        return
    if got.dtype != want.dtype and not track.converted:
        raise Finding("wrong-result", f"{where} is {summarize(got)}, want {summarize(want)}", "dtype")
    if track.rounding and track.sensitive:
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    if track.converted:  # float32 on the way: compare where both are finite, loosely
        # (float64 results of a float32 program are more exact than it: its cancellations, a softmax
        # gradient's, lose digits relative to the largest values)
        both = np.isfinite(g) & np.isfinite(w)
        g, w = g[both], w[both]
        rtol = 1e-2
    else:
        same = (np.isnan(g) == np.isnan(w)) & (np.isposinf(g) == np.isposinf(w)) & (np.isneginf(g) == np.isneginf(w))
        if not np.all(same):
            raise Finding("wrong-result", f"{where}: NaN or inf at other places:\ngot  {got!r}\nwant {want!r}",
                          "nan-inf")
        finite = np.isfinite(w)
        g, w = g[finite], w[finite]
        small = want.dtype == np.float32 or got.dtype == np.float32 or track.float32
        rtol = (2e-4 if small else 1e-9) if track.rounding else (1e-5 if small else 1e-12)
    scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
    bad = np.abs(g - w) > rtol * np.abs(w) + rtol * scale
    if np.any(bad):
        i = int(np.argmax(bad))
        raise Finding("wrong-result", f"{where} differs ({int(bad.sum())} of {bad.size} elements; "
                                      f"first got {g[i]!r}, want {w[i]!r}):\ngot  {got!r}\nwant {want!r}", "floats")
