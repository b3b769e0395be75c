"""The ``passes`` fuzz target's oracle, what each pass's output must be:
``check_output`` (it verifies, prints and parses back to itself, is its own
fixed point when the pass says so, keeps the other functions; what
LiftTransformParams freezes) and ``check_results`` (built and run on the
inputs of before, through the calling convention lifting gave, it gives
the same results; a new adjoint gives its function's result, and what the
adjoint made with the other ``simplify`` gives). Apart from the target,
which makes the inputs and runs the pipeline.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import adjoint as aj
from adjoint.fuzz.exec import summarize
from adjoint.fuzz.passes_compare import Track, _has_float32, call, compare, sensitive
from adjoint.fuzz.passes_pipeline import fixed_point, leaf_specs, make_pass, pass_names, rounds
from adjoint.fuzz.passes_train import check_frozen, transform_params_names
from adjoint.fuzz.runner import Finding


def check_output(spec: dict, where: str, mod: aj.Module, out: aj.Module, reach: Callable[[str], None]) -> None:
    """What a pass's output must be whether or not it runs: a module that
    verifies and prints and parses back to itself; its own fixed point when
    the pass says so; LiftTransformParams' frozen attrs right; Gradient
    adding f_adjoint alone, the other passes dropping no function."""
    name = spec["pass"]
    try:
        aj.analysis.verify(out)
    except aj.Error as e:
        raise Finding("invalid-output", f"{where} gave a module that does not verify: {type(e).__name__}: {e}\n"
                                        f"--- output:\n{_script(out)}", f"{name}: {type(e).__name__}") from None
    reach("verified")
    printed, again = _round_trip(name, where, out)
    reach("round trip")
    if name == "Rewriter" and not aj.structural_equal(out, mod):
        reach("rule rewrote")
    if fixed_point(spec):
        _check_fixed_point(spec, where, out, printed)
        reach("fixed point")
    if name == "LiftTransformParams":
        check_frozen(where, mod, again)
        reach("frozen checked")
    _check_functions_kept(spec, where, mod, out)


def _round_trip(name: str, where: str, out: aj.Module) -> tuple[str, aj.Module]:
    """The output printed, and parsed back: structurally equal to it, with the same print and hash."""
    printed = out.script()
    try:
        again = aj.parse(printed)
    except aj.Error as e:
        raise Finding("reparse", f"{where}: its printed output does not parse: {type(e).__name__}: {e}\n"
                                 f"--- printed:\n{printed}", f"{name}: {type(e).__name__}") from None
    if not aj.structural_equal(out, again):
        raise Finding("roundtrip", f"{where}: parse(print(out)) differs from out:\n"
                                   f"{aj.structural_diff(out, again)}\n--- printed:\n{printed}", name)
    if again.script() != printed or aj.structural_hash(again) != aj.structural_hash(out):
        raise Finding("roundtrip", f"{where}: print or hash unstable\n--- printed:\n{printed}", name)
    return printed, again


def _check_fixed_point(spec: dict, where: str, out: aj.Module, printed: str) -> None:
    """The pass run again on its output gives it back."""
    name = spec["pass"]
    try:
        twice = make_pass(spec)(out)
    except aj.Error as e:
        raise Finding("fixed-point", f"{where}: a second run raised {type(e).__name__}: {e}\n"
                                     f"--- after one run:\n{printed}", name) from None
    if not aj.structural_equal(twice, out):
        raise Finding("fixed-point", f"{where}: a second run changed the module:\n"
                                     f"{aj.structural_diff(out, twice)}\n--- after one run:\n{printed}\n"
                                     f"--- after two:\n{_script(twice)}", name)


def _check_functions_kept(spec: dict, where: str, mod: aj.Module, out: aj.Module) -> None:
    """Gradient adds f_adjoint and leaves the other functions as they were; no other pass drops one."""
    name = spec["pass"]
    if name == "Gradient":
        adjoint = spec["func_name"] + "_adjoint"
        if set(out.functions) != set(mod.functions) | {adjoint} or adjoint in mod:
            raise Finding("gradient-functions", f"{where}: functions {sorted(mod.functions)} became "
                                                f"{sorted(out.functions)}", name)
        for f in mod.functions:
            if not aj.structural_equal(mod[f], out[f]):
                raise Finding("gradient-changed", f"{where} changed function {f!r}:\n"
                                                  f"{aj.structural_diff(mod[f], out[f])}", name)
    else:
        lost = [f for f in mod.functions if f not in out]
        if lost:
            raise Finding("function-lost", f"{where} dropped functions {lost}", name)


def check_results(spec: dict, where: str, mod: aj.Module, out: aj.Module, tracks: dict[str, Track],
                  reach: Callable[[str], None]) -> dict[str, Track]:
    """The output built and each tracked function run on the inputs of
    before: the results it gave (a new function's are the reference from
    now on). The tracks for the next pass."""
    last = pass_names(spec)[-1]
    updated = _follow(spec, mod, out, tracks)
    try:
        exe = aj.build(out)
    except aj.Error as e:
        raise Finding("build-refused", f"{where}: the input built, its output does not: {type(e).__name__}: {e}\n"
                                       f"--- output:\n{_script(out)}", f"{last}: {type(e).__name__}") from None
    reach("built")
    for f, t in updated.items():
        try:
            got = call(exe, out, f, t)
        except aj.Error as e:
            raise Finding("run-refused", f"{where}: function {f!r} ran before the pass, not after: "
                                         f"{type(e).__name__}: {e}\n--- output:\n{_script(out)}",
                          f"{last}: {type(e).__name__}") from None
        if t.want is None:  # new: its results are the reference from now on
            _check_new(spec, where, mod, out, updated, f, got, reach)
            continue
        t.float32 = _has_float32(out[f])
        compare(got, t.want, t, f"{f}(...)")
        reach("compared after a dtype change" if t.converted else
              "lifted compared" if any(s[0] == "lift" for s in t.steps) else "compared")
        if t.converted:  # the results in the new dtypes are the reference from now on
            t.want, t.converted = got, False
    return updated


def _follow(spec: dict, mod: aj.Module, out: aj.Module, tracks: dict[str, Track]) -> dict[str, Track]:
    """The tracks after the pass: each function kept, marked by what the pass
    may have done to its results; and the functions the passes added, in the
    order they ran (a Sequential may differentiate, then lift): f_adjoint,
    run on f's args, and f_transform_params, on f's weights (then f through it)."""
    names = pass_names(spec)
    rounding = rounds(spec)
    converted = "ConvertDType" in names
    new = [f for f in out.functions if f not in mod]
    updated = {f: Track(t.steps, t.args, t.want, t.converted or converted, t.rounding or rounding,
                        t.sensitive or sensitive(out[f])) for f, t in tracks.items() if f in out}
    taken: set[str] = set()
    for leaf in leaf_specs(spec):
        if leaf["pass"] == "Gradient":
            g = leaf["func_name"]
            if g + "_adjoint" in new and g in updated and g + "_adjoint" not in updated:
                t = updated[g]
                updated[g + "_adjoint"] = Track(t.steps, t.args, None, t.converted, t.rounding,
                                                t.sensitive or sensitive(out[g + "_adjoint"]))
        elif leaf["pass"] == "LiftTransformParams":
            for f in list(updated):
                lifted = sorted(transform_params_names(f, (n for n in new if n not in taken)), key=len)
                if not lifted or "num_input" not in out[f].attrs:
                    continue
                tp, ni, t = lifted[0], out[f].attrs["num_input"], updated[f]
                taken.add(tp)
                updated[tp] = Track(t.steps + (("weights", ni),), t.args, None, t.converted, t.rounding,
                                    t.sensitive or sensitive(out[tp]))
                updated[f] = Track(t.steps + (("lift", ni, tp),), t.args, t.want, t.converted, t.rounding,
                                   t.sensitive)
    return updated


def _check_new(spec: dict, where: str, mod: aj.Module, out: aj.Module, tracks: dict[str, Track], f: str, got: Any,
               reach: Callable[[str], None]) -> None:
    """A function the pass added gave ``got``, the reference from now on. An
    adjoint's first output is its function's result; after Gradient, the
    adjoint made with the other ``simplify`` gives the same."""
    t = tracks[f]
    t.want, t.converted, t.float32 = got, False, _has_float32(out[f])
    base = tracks.get(base_name(f)) if f.endswith("_adjoint") else None
    if base is None or base.want is None:
        return
    if not isinstance(got, tuple) or len(got) != 2:
        raise Finding("wrong-result", f"{where}: {f!r} returned {summarize(got)}, not (result, grads)", "adjoint")
    compare(got[0], base.want, base, f"{f}(...)[0], against {base_name(f)}'s result")
    reach("adjoint compared")
    if spec["pass"] == "Gradient":
        _other_simplify(spec, where, mod, f, t, got)
        reach("simplified gradient compared")


def _other_simplify(spec: dict, where: str, mod: aj.Module, f: str, t: Track, got: Any) -> None:
    """The adjoint made with the other ``simplify`` gives the same results
    (SimplifyGradient, EliminateCommonSubexpr and DeadCodeElimination on
    gradient code), within the tolerance of results rounded otherwise."""
    other = make_pass(dict(spec, simplify=not spec["simplify"]))
    try:
        out = other(mod)
    except aj.Error as e:
        raise Finding("simplify-refused", f"{where}: with simplify={not spec['simplify']} the pass raised "
                                          f"{type(e).__name__}: {e}", type(e).__name__) from None
    try:
        again = call(aj.build(out), out, f, t)
    except aj.Error as e:
        raise Finding("run-refused", f"{where}: {f!r} made with simplify={not spec['simplify']} does not run: "
                                     f"{type(e).__name__}: {e}\n--- output:\n{_script(out)}",
                      f"simplify: {type(e).__name__}") from None
    rounded = replace(t, want=got, rounding=True)
    compare(again, got, rounded, f"{f}(...) with simplify={not spec['simplify']}, against simplify={spec['simplify']}")


def base_name(adjoint: str) -> str:
    return adjoint[:-len("_adjoint")]


def _script(mod: aj.Module) -> str:
    try:
        return mod.script()
    except Exception as e:  # noqa: BLE001 (the module cannot print: say so)
        return f"<cannot print: {type(e).__name__}: {e}>"
