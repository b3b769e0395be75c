"""Fuzz target ``patterns``: the pattern language (``adjoint.pattern``)
against a reference written in Python from docs/passes/pattern.md.

An input is one of three kinds, made from (seed, k) alone:

- ``match``: a small random function (elementwise ops, matmul,
  permute_dims, concat, split and its items, constants, tuples, float32 and
  float64, some symbolic dims) and random pattern trees over it (every
  combinator, attrs, dtype and shape constraints, names, sub-patterns
  shared), half of them mirroring a binding of the function. For each
  binding, ``pattern.match(value, fn)`` (and on the binding's var, and with
  ``fn=None``) must agree with ``RefMatcher``: match or not, and what
  each sub-pattern and name captured.
- ``rewrite``: one or two exact rules (``RULES``) applied by
  ``P.Rewriter.from_pattern`` (and ``P.rewrite_call`` for one rule) and by
  ``P.Rewriter.from_text``: both must refuse alike or give structurally
  equal modules that verify, leave no call the rules rewrite (a fixed
  point, checked with the reference matcher) and compute what the input
  computed; the input module is left as it was.
- ``graph``: a random ``P.PatternContext`` (plain roots sharing
  sub-patterns, ``|`` in roots, a repeated root, edges) on a tiny function:
  ``ctx.roots`` are those the docs name, the matchings of one walk of
  ``P.rewrite_bindings`` are valid, disjoint and exactly what a greedy walk
  over the first root's candidates allows (checked by brute force), and a
  rewriter giving exact replacements for the first few matchings gives a
  module that verifies and computes the same values.

Only ``aj.Error`` may come out of the API; anything else, and any
disagreement, is a finding. Inputs are plain data (the function's text and
the pattern as a list of nodes), so a finding is saved as a script that
rebuilds and reruns it.

This module is the target, ``Fuzzer``: it makes the inputs, runs them and
saves reproducers. Its parts: ``patterns_programs`` (the random
functions), ``patterns_trees`` (pattern trees as data), ``patterns_reference``
(``RefMatcher``, the docs in code), ``patterns_rules`` (the rewrite rules
and the ways they are applied), ``patterns_graph`` (contexts and
``GraphReference``) and ``patterns_check`` (captures and computed values
compared).
"""

from __future__ import annotations

import random
from typing import Callable

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.patterns_check import check_graph_rewrite, compare_match, compare_results, inputs_for, run_module
from adjoint.fuzz.patterns_graph import GraphReference, alike_roots, build_context, check_walk, make_context_nodes
from adjoint.fuzz.patterns_programs import make_function
from adjoint.fuzz.patterns_reference import RefMatcher
from adjoint.fuzz.patterns_rules import RULE_BY_NAME, RULES, check_fixed_point, rewrite_one_way
from adjoint.fuzz.patterns_trees import PatternMaker, build_patterns, pattern_code
from adjoint.fuzz.runner import Finding, error_label

LABELS = ["ok", "ok, pattern refused"]
REACHED = ["match compared", "matched", "matched on a var", "matched without fn", "rewrite compared",
           "rewrite fired", "rewrite refused alike", "graph compared", "graph matched", "graph rewrote",
           "graph alike roots", "graph alike roots matched", "graph run among alike roots"]


class Fuzzer:
    """The target as ``runner`` drives it: ``make(k)`` an input of one of the
    three kinds, ``run`` it (``run_match``, ``run_rewrite``, ``run_graph``),
    ``save`` a reproducer script."""

    #: saved reproducers of rewrite inputs call Fuzzer.rewrite_one_way
    rewrite_one_way = staticmethod(rewrite_one_way)

    def __init__(self, seed: int):
        self.seed = seed

    # ---- making input k ----

    def make(self, k: int) -> dict:
        rng = random.Random(f"patterns:{self.seed}:{k}")
        kind = rng.choices(["match", "rewrite", "graph"], [5, 2, 3])[0]
        if kind == "match":
            text = make_function(rng, rng.randint(2, 7))
            fn = aj.parse(text)["main"]
            maker = PatternMaker(rng, fn)
            roots = []
            for _ in range(rng.randint(1, 3)):
                if maker.calls and rng.random() < 0.5:
                    b = rng.choice([b for b in fn.bindings])
                    roots.append(maker.mirror(b.var, rng.randint(1, 4)))
                else:
                    roots.append(maker.tree(rng.randint(1, 4)))
            return {"kind": kind, "text": text, "nodes": maker.nodes, "roots": roots}
        if kind == "rewrite":
            text = make_function(rng, rng.randint(2, 8), symbolic=False, targets=True)
            names = [r.name for r in RULES]
            rules = rng.sample(names, rng.choice([1, 1, 2]))
            if "addswap" in rules and rng.random() < 0.7:
                rules.remove("addswap")
                rules = rules or [rng.choice(names[:-1])]
            return {"kind": kind, "text": text, "rules": rules}
        text = make_function(rng, rng.randint(3, 6), symbolic=False, float64=False, again=0.5)
        nodes, edges = make_context_nodes(rng, aj.parse(text)["main"])
        return {"kind": kind, "text": text, "nodes": nodes, "edges": [list(e) for e in edges],
                "replace": rng.randint(0, 3)}

    def describe(self, inp: dict) -> str:
        if inp["kind"] == "rewrite":
            return f"rewrite with rules {', '.join(inp['rules'])}"
        return f"{inp['kind']}: {len(inp['nodes'])} pattern nodes"

    def group(self, inp: dict) -> str:
        return inp["kind"]

    def run(self, inp: dict, reach: Callable[[str], None]) -> str:
        return getattr(self, "run_" + inp["kind"])(inp, reach)

    # ---- match ----

    def run_match(self, inp: dict, reach: Callable[[str], None]) -> str:
        fn = aj.parse(inp["text"])["main"]
        nodes = inp["nodes"]
        try:
            objs = build_patterns(nodes)
        except aj.Error:
            return "ok, pattern refused"  # has_attr on a pattern of no call, or of an op without that attr
        for root in inp["roots"]:
            p = objs[root]
            for b in fn.bindings:
                for expr, with_fn, stage in ((b.value, fn, "matched"), (b.var, fn, "matched on a var"),
                                             (b.value, None, "matched without fn")):
                    got = p.match(expr, with_fn)
                    want = RefMatcher(nodes, with_fn).match(root, expr)
                    compare_match(nodes, objs, root, expr, with_fn is not None, got, want)
                    reach("match compared")
                    if got is not None:
                        reach(stage)
        return "ok"

    # ---- rewrite ----

    def run_rewrite(self, inp: dict, reach: Callable[[str], None]) -> str:
        mod = aj.parse(inp["text"])
        before = mod.script()
        rules = [RULE_BY_NAME[n] for n in inp["rules"]]
        fn = mod["main"]
        args = inputs_for(fn, 0)
        want = run_module(mod, args)
        outcomes = {}
        for way in ("python", "text", "rewrite_call"):
            if way == "rewrite_call" and len(rules) != 1:
                continue
            try:
                outcomes[way] = ("ok", rewrite_one_way(way, rules, mod))
            except aj.Error as e:
                outcomes[way] = (error_label(e), e)
            if mod.script() != before:
                raise Finding("input-changed", f"{way}: the module given was changed")
        labels = {w: o[0] for w, o in outcomes.items()}
        loops = any(r.loops for r in rules)
        if len(set(labels.values())) != 1:
            raise Finding("rewrite-outcome", "the ways disagree: " + "; ".join(
                f"{w}: {o[0]}" + (f" ({o[1]})" if o[0] != "ok" else "") for w, o in outcomes.items()),
                ", ".join(f"{w} {l}" for w, l in sorted(labels.items())))
        label = labels["python"]
        if label != "ok":
            if not (loops and label == "aj.TransformError"):
                raise Finding("rewrite-refused", f"every way refused the rules: {outcomes['python'][1]}", label)
            reach("rewrite refused alike")
            return label
        outs = {w: o[1] for w, o in outcomes.items()}
        for w, out in outs.items():
            if not aj.structural_equal(out, outs["python"]):
                raise Finding("rewrite-differs", f"{w} and python give different modules:\n"
                                                 f"{aj.structural_diff(outs['python'], out)}\n--- python:\n"
                                                 f"{outs['python'].script()}--- {w}:\n{out.script()}")
        out = outs["text"]
        try:
            aj.analysis.verify(out)
        except aj.Error as e:
            raise Finding("invalid-output", f"the rewritten module does not verify: {e}\n{out.script()}") from None
        if out.script() != before:
            reach("rewrite fired")
        check_fixed_point(rules, out)
        compare_results(run_module(out, args), want, "main(...) after the rewrite")
        reach("rewrite compared")
        return "ok"

    # ---- graph ----

    def run_graph(self, inp: dict, reach: Callable[[str], None]) -> str:
        mod = aj.parse(inp["text"])
        fn = mod["main"]
        nodes, edges = inp["nodes"], [tuple(e) for e in inp["edges"]]
        try:
            ctx, objs = build_context(nodes, edges)
        except aj.Error as e:
            raise Finding("pattern-refused", f"a valid context was refused: {type(e).__name__}: {e}",
                          type(e).__name__) from None
        ref = GraphReference(nodes, edges, fn)
        got_roots = [next(i for i, o in enumerate(objs) if o is r) for r in ctx.roots]
        if got_roots != ref.roots:
            raise Finding("roots", f"ctx.roots are nodes {got_roots}, the docs' roots {ref.roots}")
        names = {b.var.name_hint: i for i, b in enumerate(fn.bindings)}
        seen: list[list[tuple[int, list[int]]]] = []

        def record(m, bindings):
            one = []
            for r in ref.roots:
                v = m[objs[r]]
                vs = v if isinstance(v, list) else [v]
                one.append((r, [names[x.name_hint] for x in vs]))
            seen.append(one)
            return {}

        try:
            P.rewrite_bindings(ctx, record, fn)
        except aj.Error as e:
            if any(nodes[r]["k"] == "repeated" for r in ref.roots):
                return error_label(e)  # edges into a run, a run first: the docs allow refusals there
            raise Finding("graph-refused", f"rewrite_bindings refused: {type(e).__name__}: {e}",
                          type(e).__name__) from None
        check_walk(ref, seen)
        reach("graph compared")
        if seen:
            reach("graph matched")
        alike = alike_roots(nodes, edges)
        if alike:
            reach("graph alike roots")
            if seen:
                reach("graph alike roots matched")
            if any(nodes[r]["k"] == "repeated" and a < r < b for a, b in alike for r in ref.roots):
                reach("graph run among alike roots")
        if seen and inp["replace"]:
            check_graph_rewrite(ctx, objs, ref, mod, inp["replace"], reach)
        return "ok"

    # ---- the reproducer ----

    def save(self, inp: dict, stem: str, header: str) -> list[str]:
        path = stem + ".py"
        lines = ["# " + line for line in header.rstrip().splitlines()]
        lines += ["import adjoint as aj", "from adjoint import pattern as P", "",
                  f"TEXT = {inp['text']!r}", "mod = aj.parse(TEXT)", "fn = mod['main']", "print(TEXT)"]
        if inp["kind"] == "match":
            lines += pattern_code(inp["nodes"])
            lines += ["for root in [" + ", ".join(f"p{r}" for r in inp["roots"]) + "]:",
                      "    for b in fn.bindings:",
                      "        print(b.var.name_hint, root.match(b.value, fn), root.match(b.var, fn), "
                      "root.match(b.value))"]
        elif inp["kind"] == "rewrite":
            lines += ["from adjoint.fuzz.patterns import RULE_BY_NAME, Fuzzer",
                      f"rules = [RULE_BY_NAME[n] for n in {inp['rules']!r}]",
                      "for way in ('python', 'text', 'rewrite_call'):",
                      "    try:",
                      "        print(way, Fuzzer.rewrite_one_way(way, rules, mod))",
                      "    except aj.Error as e:",
                      "        print(way, type(e).__name__, e)"]
        else:
            lines += ["with P.PatternContext() as ctx:"]
            lines += ["    " + line for line in pattern_code(inp["nodes"])]
            for p, q, index, only in inp["edges"]:
                lines.append(f"    p{p}.{'only_used_by' if only else 'used_by'}(p{q}, {index!r})")
            lines += ["print(ctx)", "def show(m, bindings):",
                      "    print({repr(k): v for k, v in m.items() if not isinstance(k, str)})", "    return {}",
                      "P.rewrite_bindings(ctx, show, fn)"]
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return [path]
