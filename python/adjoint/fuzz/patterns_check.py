"""The ``patterns`` fuzz target's checks of what the API gave: a match's
captures against the reference matcher's (``compare_match``), and the
values a rewritten module computes against the input's
(``compare_results`` on ``inputs_for``, run by ``run_module``), for the
rewrite inputs and for ``check_graph_rewrite``. Apart from the target,
which makes the inputs and runs them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.exec import summarize
from adjoint.fuzz.patterns_graph import GraphReference
from adjoint.fuzz.patterns_reference import RefMatcher, capture_name, same_value, same_values
from adjoint.fuzz.runner import Finding


def tol(dtype: Any) -> float:
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-10


def compare_results(got: Any, want: Any, what: str) -> None:
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            raise Finding("wrong-result", f"{what}: {summarize(got)} where {summarize(want)} was computed")
        for i, (g, w) in enumerate(zip(got, want)):
            compare_results(g, w, f"{what}[{i}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(g, w, rtol=tol(w.dtype), atol=tol(w.dtype),
                                                                    equal_nan=True):
        diff = np.nanmax(np.abs(g.astype(float) - w.astype(float))) if g.shape == w.shape else "n/a"
        raise Finding("wrong-result", f"{what}: {summarize(g)} where {summarize(w)} was computed; max diff {diff}")


def inputs_for(fn: Any, seed: int) -> list[np.ndarray] | None:
    rng = np.random.default_rng(seed)
    out = []
    for p in fn.params:
        shape = tuple(3 if isinstance(d, str) else d for d in p.type.shape)
        out.append(rng.standard_normal(shape).astype(p.type.dtype))
    return out


def run_module(mod: Any, args: list) -> Any:
    return aj.build(mod)["main"](*args)


def show(e: Any) -> str:
    if isinstance(e, list):
        return "[" + ", ".join(show(x) for x in e) + "]"
    if isinstance(e, aj.Var):
        return e.name_hint
    return repr(e)


def compare_match(nodes, objs, root, expr, with_fn, got, want) -> None:
    where = f"p{root}.match({show(expr)}{', fn' if with_fn else ', None'})"
    if (got is None) != (want is None):
        raise Finding("match", f"{where} gives {'a match' if got is not None else 'None'}; the reference "
                               f"{'matches' if want is not None else 'does not'} "
                               f"({'with captures ' + _show_caps(want) if want else ''})",
                      f"match {'found' if got is not None else 'missed'}")
    if got is None:
        return
    matcher = RefMatcher(nodes, None)
    reachable = matcher._below(root)
    in_run = matcher.in_run
    for i in sorted(reachable):
        name = capture_name(nodes, i)
        g = got.get(objs[i])
        w = want.get(name)
        if i in in_run or nodes[i]["k"] == "repeated":
            g = [] if g is None else g
            w = [] if w is None else w
            ok = isinstance(g, list) and same_values(g, w)
        else:
            ok = (g is None) == (w is None) and (g is None or same_value(g, w))
        if not ok:
            raise Finding("capture", f"{where}: p{i} ({name}) captured {show(g)}, the reference {show(w)}",
                          f"capture of a {nodes[i]['k']}")
    for n in nodes:
        # a run that took no part captures [] here, not None: see bugs.md (B2); not flagged again
        g, w = got.get(n.get("name")) if n.get("name") else None, want.get(n.get("name"))
        if n["k"] == "repeated":
            g, w = g or None, w or None
        if n.get("name") and (g is None) != (w is None):
            raise Finding("capture", f"{where}: name {n['name']!r}: {show(got.get(n['name']))} vs the reference "
                                     f"{show(want.get(n['name']))}", "capture of a name")


def check_graph_rewrite(ctx, objs, ref: GraphReference, mod: Any, budget: int, reach) -> None:
    """Exact replacements for the plain roots of the first matchings: negative(negative(call)),
    add and multiply with their args swapped; the module must verify and compute the same."""
    left = [budget]

    def replace(m, bindings):
        if left[0] <= 0:
            return {}
        left[0] -= 1
        out = {}
        for r in ref.roots:
            if ref.nodes[r]["k"] == "repeated":
                continue
            var = m[objs[r]]
            value = bindings[var]
            if not isinstance(value, aj.Call) or not var.type.is_tensor:
                continue
            make = getattr(aj.op, value.op)
            if value.op in ("add", "multiply") and len(value.args) == 2:
                out[var] = make(value.args[1], value.args[0])
            else:
                out[var] = aj.op.negative(aj.op.negative(make(*value.args, **value.attrs)))
        return out

    out = P.rewrite_bindings(ctx, replace, mod)
    try:
        aj.analysis.verify(out)
    except aj.Error as e:
        raise Finding("invalid-output", f"rewrite_bindings gives a module that does not verify: {e}\n"
                                        f"{out.script()}") from None
    args = inputs_for(mod["main"], 1)
    compare_results(run_module(out, args), run_module(mod, args), "main(...) after rewrite_bindings")
    reach("graph rewrote")


def _show_caps(caps: dict | None) -> str:
    if caps is None:
        return "None"
    return "{" + ", ".join(f"{k}: {show(v)}" for k, v in caps.items()) + "}"
