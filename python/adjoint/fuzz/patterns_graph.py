"""The ``patterns`` fuzz target's graph patterns: random
``P.PatternContext`` node lists over a function (``make_context_nodes``:
roots mirroring its calls and sharing sub-patterns, ``|`` in roots, a
repeated root, edges) built by ``build_context``, and the reference of
``P.rewrite_bindings``: the docs' roots (``reference_roots``), every valid
matching by brute force (``GraphReference``) and what one walk must give
(``check_walk``). Apart from the target because, like the reference
matcher it builds on, it is the docs in code.
"""

from __future__ import annotations

import random
from typing import Any

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.patterns_programs import UNARY
from adjoint.fuzz.patterns_reference import (RefMatcher, bound_values, capture_name, nodes_below, same_value,
                                             through_bindings)
from adjoint.fuzz.patterns_trees import build_patterns
from adjoint.fuzz.runner import Finding

#: an edge: (from, to, arg index or None, only_used_by rather than used_by)
Edge = tuple[int, int, int | None, bool]


def make_context_nodes(rng: random.Random, fn: Any) -> tuple[list[dict], list[Edge]]:
    """The nodes of a random context over fn (made in this order inside it)
    and its edges (from, to, arg index, only). Roots mirror calls of fn, a
    var of fn standing for one wildcard throughout (so roots share it); in
    half the contexts some roots are made again alike (``ContextMaker.again``),
    and a repeated root may be made before, between or after them."""
    maker = ContextMaker(rng, fn)
    steps = ["new"] * rng.choice([1, 2, 2, 3])
    if rng.random() < 0.5:
        steps += ["again"] * rng.choice([1, 1, 2])
    if rng.random() < (0.35 if "again" in steps else 0.2):
        steps.append("run")
    rng.shuffle(steps)
    steps.insert(0, steps.pop(steps.index("new")))  # a root to make again comes first
    if "run" in steps and "again" in steps and rng.random() < 0.5:  # a run between alike roots
        steps.remove("run")
        steps.insert(len(steps) - steps[::-1].index("again") - 1, "run")
    roots: list[int] = []
    for step in steps:
        if step == "new":
            roots.append(maker.root_body())
        elif step == "again":
            roots.append(maker.again(rng.choice([r for r in roots if maker.nodes[r]["k"] != "repeated"]), roots))
        else:
            plain = [r for r in roots if maker.nodes[r]["k"] != "repeated"]
            element = maker.again(rng.choice(plain), roots, tie=0.5) if rng.random() < 0.5 else maker.root_body()
            roots.append(maker.add({"k": "repeated", "c": [element]}))
    return maker.nodes, maker.edges(roots)


class ContextMaker:
    """The node list of a random context being made over a function: roots
    mirroring its calls down a level at most, their leaves (a var of the
    function is one wildcard throughout, other leaves are shared at random),
    and edges between them."""

    def __init__(self, rng: random.Random, fn: Any):
        self.rng = rng
        self.nodes: list[dict] = []
        self.bound = bound_values(fn)
        self.calls = [b.value for b in fn.bindings if isinstance(b.value, aj.Call)]
        self.leaf_of: dict[str, int] = {}
        self.leaves: list[int] = []

    def add(self, n: dict) -> int:
        self.nodes.append(n)
        return len(self.nodes) - 1

    def leaf(self, e: Any) -> int:
        rng = self.rng
        if isinstance(e, aj.Var) and rng.random() < 0.85:
            if e.name_hint not in self.leaf_of:
                self.leaf_of[e.name_hint] = self.add({"k": "wildcard"} if rng.random() < 0.9
                                                     else {"k": "wildcard", "name": "w"})
                self.leaves.append(self.leaf_of[e.name_hint])
            return self.leaf_of[e.name_hint]
        if self.leaves and rng.random() < 0.5:
            return rng.choice(self.leaves)
        self.leaves.append(self.add({"k": "const"} if isinstance(e, aj.Constant) else {"k": "wildcard"}))
        return self.leaves[-1]

    def mirror(self, e: Any, depth: int) -> int:
        rng = self.rng
        v = through_bindings(e, self.bound)
        if depth <= 0 or rng.random() < 0.15 or not isinstance(v, (aj.Call, aj.Tuple, aj.TupleGetItem)):
            return self.leaf(e)
        if isinstance(v, aj.Tuple):
            return self.add({"k": "tuple", "c": [self.mirror(f, depth - 1) for f in v.fields]})
        if isinstance(v, aj.TupleGetItem):
            return self.add({"k": "item", "c": [self.mirror(v.tuple, depth - 1)],
                             "index": v.index if rng.random() < 0.8 else None})
        return self.add({"k": "op", "op": v.op, "c": [self.mirror(a, depth - 1) for a in v.args],
                         "attrs": dict(v.attrs) if rng.random() < 0.3 else {}})

    def again(self, root: int, roots: list[int], tie: float = 0.05) -> int:
        """A root alike to ``root`` (graph.h, step 3a) or nearly: its nodes
        made again, but for those other roots use (kept: still shared) and,
        at random, some of its own (then shared by the two); a name on the
        root itself or on a node made again is another (private) one. A
        wildcard of its own is, by chance ``tie``, another that other roots
        use (then the two are not alike: a run's element made so competes
        with them for bindings but is tied to other roots)."""
        rng = self.rng
        elsewhere: set[int] = set()
        for r in roots:
            if r != root:
                elsewhere |= nodes_below(self.nodes, r)
        made: dict[int, int] = {}

        def copy(i: int) -> int:
            if i not in made:
                n = self.nodes[i]
                wild = [w for w in self.leaves if self.nodes[w]["k"] == "wildcard" and w in elsewhere]
                if i != root and (i in elsewhere or rng.random() < 0.15):
                    made[i] = i
                elif n["k"] == "wildcard" and wild and rng.random() < tie:
                    made[i] = rng.choice(wild)
                else:
                    new = {**n, "c": [copy(c) for c in n["c"]]} if "c" in n else dict(n)
                    if n.get("name") and (i == root or rng.random() < 0.5):
                        new["name"] = f"q{len(self.nodes)}"
                    elif i == root and rng.random() < 0.1:
                        new["name"], self.nodes[i]["name"] = f"q{len(self.nodes)}", f"q{i}"
                    made[i] = self.add(new)
                    if i in self.leaves:
                        self.leaves.append(made[i])
            return made[i]

        return copy(root)

    def wrapped(self, r: int) -> int:
        """r, sometimes under a constraint, ``&`` or ``~``."""
        rng = self.rng
        kind = rng.choice(["dtype", "shape", "and", "not"]) if rng.random() < 0.15 else None
        if kind == "dtype":
            return self.add({"k": "dtype", "c": [r], "dtype": rng.choice(["float32", "float32", "float64"])})
        if kind == "shape":
            shapes = [c.args[0].type.shape for c in self.calls if c.args and c.args[0].type.is_tensor] or [[2, 2]]
            return self.add({"k": "shape", "c": [r], "shape": list(rng.choice(shapes))})
        if kind == "and":  # with a wildcard, maybe one other roots use (a constant would match no call)
            wild = [leaf for leaf in self.leaves if self.nodes[leaf]["k"] == "wildcard"]
            other = rng.choice(wild) if wild and rng.random() < 0.5 else self.add({"k": "wildcard"})
            return self.add({"k": "and", "c": [r, other]})
        if kind == "not":
            return self.add({"k": "not", "c": [r]})
        return r

    def root_body(self) -> int:
        """A root: a call of the function mirrored (or a unary op, most often
        one the function calls, of anything), sometimes ``|`` another call,
        sometimes constrained."""
        rng = self.rng
        if not self.calls or rng.random() < 0.25:
            unary = [c.op for c in self.calls if c.op in UNARY]  # of the function's, most often
            op = rng.choice(unary if unary and rng.random() < 0.8 else ["exp", "negative"])
            r = self.add({"k": "op", "op": op, "c": [self.add({"k": "wildcard"})], "attrs": {}})
        else:
            ops = [c.op for c in self.calls]
            again = [c for c in self.calls if ops.count(c.op) > 1]  # what alike roots made again may share
            call = rng.choice(again if again and rng.random() < 0.5 else self.calls)
            r = self.add({"k": "op", "op": call.op, "c": [self.mirror(a, rng.choice([0, 0, 1])) for a in call.args],
                          "attrs": {}})
        if rng.random() < 0.12:
            other = self.add({"k": "op", "op": rng.choice(["exp", "negative", "relu"]), "c": [self.leaf(None)],
                              "attrs": {}})
            r = self.add({"k": "or", "c": [r, other] if rng.random() < 0.5 else [other, r]})
        return self.wrapped(r)

    def edges(self, roots: list[int]) -> list[Edge]:
        """None to two edges from a leaf some root uses, or a plain root, to a plain root."""
        rng = self.rng
        edges: list[Edge] = []
        plain = [r for r in roots if self.nodes[r]["k"] != "repeated"]
        used = {c for n in self.nodes for c in n.get("c", [])}
        for _ in range(rng.choice([0, 0, 1, 2])):
            p = rng.choice([leaf for leaf in self.leaves if leaf in used] + plain)
            q = rng.choice(plain)
            if p != q:
                edges.append((p, q, rng.choice([None, None, 0, 1]), rng.random() < 0.4))
        return edges


def build_context(nodes: list[dict], edges: list) -> tuple[P.PatternContext, list[P.Pattern]]:
    with P.PatternContext() as ctx:
        objs = build_patterns(nodes)
        for p, q, index, only in edges:
            (objs[p].only_used_by if only else objs[p].used_by)(objs[q], index)
    return ctx, objs


def reference_roots(nodes: list[dict]) -> list[int]:
    """The docs' roots: the patterns no other registered pattern uses, in the
    order made (all those made here can match a call, or are runs of such)."""
    used = {c for n in nodes for c in n.get("c", [])}
    return [i for i in range(len(nodes)) if i not in used and nodes[i]["k"] not in ("const", "var")]


def alike_roots(nodes: list[dict], edges: list) -> list[tuple[int, int]]:
    """Pairs of plain roots (earlier, later) that are alike as the docs say:
    one pattern, node for node, but for the names of sub-patterns no other
    root captures and no edge names, which may differ when they stand for
    one another throughout. Only to see how often the fuzzer makes them."""
    roots = reference_roots(nodes)
    capturing: dict[str, int] = {}
    for r in roots:
        names, todo = set(), [r]
        while todo:
            i = todo.pop()
            if capture_name(nodes, i) not in names:
                names.add(capture_name(nodes, i))
                todo.extend(nodes[i].get("c", []))
        for n in names:
            capturing[n] = capturing.get(n, 0) + 1
    edge_names = {capture_name(nodes, e[i]) for e in edges for i in (0, 1)}

    def private(n: str) -> bool:
        return capturing.get(n) == 1 and n not in edge_names

    def alike(a: int, b: int) -> bool:
        there: dict[str, str] = {}
        back: dict[str, str] = {}
        todo = [(a, b)]
        while todo:
            i, j = todo.pop()
            if i == j:
                continue
            ni, nj = nodes[i], nodes[j]
            if {k: v for k, v in ni.items() if k not in ("c", "name")} != \
                    {k: v for k, v in nj.items() if k not in ("c", "name")} or len(ni.get("c", [])) != len(nj.get("c", [])):
                return False
            x, y = capture_name(nodes, i), capture_name(nodes, j)
            if private(x) and private(y):
                if there.setdefault(x, y) != y or back.setdefault(y, x) != x:
                    return False
            elif x != y:
                return False
            todo.extend(zip(ni.get("c", []), nj.get("c", [])))
        return True

    plain = [r for r in roots if nodes[r]["k"] != "repeated"]
    return [(a, b) for k, b in enumerate(plain) for a in plain[:k] if alike(a, b)]


def operands(v: Any) -> list[Any]:
    if isinstance(v, aj.Call):
        return list(v.args)
    if isinstance(v, aj.Tuple):
        return list(v.fields)
    if isinstance(v, aj.TupleGetItem):
        return [v.tuple]
    return []


def var_uses(e: Any, out: list[str]) -> None:
    if isinstance(e, aj.Var):
        out.append(e.name_hint)
        return
    for o in operands(e):
        var_uses(o, out)


class GraphReference:
    """rewrite_bindings' matching, as the docs tell it, by brute force over a
    tiny function: each root matched on a binding's call as ``root.match``
    would (RefMatcher), the root's own value reported as the binding's var;
    names captured by two roots agree; each edge holds: ``p.used_by(q, i)``
    when q's call has p's value as arg i (any arg for None) or as a field of
    a tuple written in that arg; ``only_used_by`` moreover when every use of
    p's value is by q's binding and the function does not return it (with an
    index: that arg is its only use there). A repeated root takes every free
    binding that fits the roots before it (at least one)."""

    def __init__(self, nodes: list[dict], edges: list, fn: Any):
        self.nodes, self.edges, self.fn = nodes, edges, fn
        self.roots = reference_roots(nodes)
        self.bindings = list(fn.bindings)
        self.matcher = RefMatcher(nodes, fn)
        users: dict[str, set[int]] = {}
        for i, b in enumerate(self.bindings):
            names: list[str] = []
            var_uses(b.value, names)
            for n in names:
                users.setdefault(n, set()).add(i)
        self.users = users
        returned: list[str] = []
        var_uses(fn.ret, returned)
        self.returned = set(returned)
        self.names_of = {r: self._names(r) for r in self.roots}
        self.candidates = {r: self._candidates(r) for r in self.roots}
        self.order = self._search_order()

    def _tied(self, a: int, b: int, by_name: bool = True) -> bool:
        """Roots a and b share a pattern (a name both capture; only with
        by_name) or an edge joins them."""
        if by_name and self.names_of[a] & self.names_of[b]:
            return True
        for e in self.edges:
            f, t = capture_name(self.nodes, e[0]), capture_name(self.nodes, e[1])
            if (f in self.names_of[a] and t in self.names_of[b]) or (t in self.names_of[a] and f in self.names_of[b]):
                return True
        return False

    def _search_order(self) -> list[int]:
        """The order the docs match the roots in: as made, except that a
        repeated root no earlier root ties to (by a shared pattern or an
        edge) is matched right after the first later plain root an edge
        ties it to."""
        waiting: dict[int, list[int]] = {}
        order: list[int] = []

        def place(r: int) -> None:
            order.append(r)
            for w in waiting.pop(r, []):
                place(w)

        for i, r in enumerate(self.roots):
            if self.nodes[r]["k"] == "repeated" and not any(self._tied(r, o) for o in self.roots[:i]):
                later = [t for t in self.roots[i + 1:] if self.nodes[t]["k"] != "repeated" and self._tied(r, t, by_name=False)]
                if later:
                    waiting.setdefault(later[0], []).append(r)
                    continue
            place(r)
        return order

    def _names(self, root: int) -> set[str]:
        out, todo = set(), [root]
        while todo:
            i = todo.pop()
            name = capture_name(self.nodes, i)
            if name not in out:
                out.add(name)
                todo.extend(self.nodes[i].get("c", []))
        return out

    def element(self, root: int) -> int:
        n = self.nodes[root]
        return n["c"][0] if n["k"] == "repeated" else root

    def _candidates(self, root: int) -> dict[int, dict[str, Any]]:
        out = {}
        el = self.element(root)
        for i, b in enumerate(self.bindings):
            if not isinstance(b.value, aj.Call):
                continue
            caps = self.matcher.match(el, b.value)
            if caps is None:
                continue
            for name, e in list(caps.items()):
                if e is b.value:
                    caps[name] = b.var
            caps[capture_name(self.nodes, root)] = b.var
            out[i] = caps
        return out

    def value(self, name: str, chosen: list[tuple[int, list[int]]]) -> Any:
        """What name stands for in an assignment (root, bindings), None if no root captured it."""
        for r, bs in chosen:
            if self.nodes[r]["k"] == "repeated" and name in self.names_of[r] - {capture_name(self.nodes, r)}:
                vals = [self.candidates[r][b].get(name) for b in bs]
                if vals and vals[0] is not None and all(v is not None and same_value(v, vals[0]) for v in vals):
                    return vals[0]
                continue
            if self.nodes[r]["k"] != "repeated" and name in self.candidates[r][bs[0]]:
                return self.candidates[r][bs[0]][name]
        return None

    def shared_agree(self, chosen: list[tuple[int, list[int]]]) -> bool:
        """Names captured by several chosen roots agree (a root whose match
        left a name out puts no bound on it)."""
        seen: dict[str, Any] = {}
        for r, bs in chosen:
            for b in bs:
                for name, v in self.candidates[r][b].items():
                    if isinstance(v, list) or name == capture_name(self.nodes, r):
                        continue
                    if not any(name in self.names_of[o] for o, _ in chosen if o != r):
                        continue
                    if name in seen and not same_value(seen[name], v):
                        return False
                    seen.setdefault(name, v)
        return True

    def edge_holds(self, edge: tuple, chosen: list[tuple[int, list[int]]]) -> bool:
        p, q, index, only = edge
        pv = self.value(capture_name(self.nodes, p), chosen)
        qv = self.value(capture_name(self.nodes, q), chosen)
        if not isinstance(pv, aj.Var) or qv is None:
            return False  # "a direct use: q's call has p's var as an arg"
        call = self.matcher.resolve(qv)
        if not isinstance(call, aj.Call):
            return False

        def occurs(arg: Any) -> bool:
            return same_value(arg, pv) or (isinstance(arg, aj.Tuple) and any(occurs(f) for f in arg.fields))

        args = call.args
        if index is not None:
            if index >= len(args) or not occurs(args[index]):
                return False
        elif not any(occurs(a) for a in args):
            return False
        if not only:
            return True
        if index is not None and any(occurs(a) for i, a in enumerate(args) if i != index):
            return False
        if pv.name_hint in self.returned:
            return False
        q_bindings = {i for i, b in enumerate(self.bindings)
                      if isinstance(qv, aj.Var) and b.var.name_hint == qv.name_hint}
        return self.users.get(pv.name_hint, set()) <= q_bindings

    def valid(self, chosen: list[tuple[int, list[int]]]) -> bool:
        return self.shared_agree(chosen) and all(self.edge_holds(e, chosen) for e in self.edges)

    def edges_hold(self, chosen: list[tuple[int, list[int]]]) -> bool:
        """The edges whose ends the chosen roots hold, hold."""
        held = {n for r, _ in chosen for n in self.names_of[r]}
        return all(self.edge_holds(e, chosen) for e in self.edges
                   if capture_name(self.nodes, e[0]) in held and capture_name(self.nodes, e[1]) in held)

    def run_from(self, first: int, r: int, chosen: list[tuple[int, list[int]]], free: set[int]) -> list[int]:
        """The branches of repeated root ``r`` gathered from ``first``: it and
        every other free binding, in binding order, that fits the chosen
        roots and the branches gathered before it (a shared value the chosen
        roots left unset is set by the first branch that captures it); []
        when ``first`` does not fit."""
        own = capture_name(self.nodes, r)
        edge_ends = {capture_name(self.nodes, e[i]) for e in self.edges for i in (0, 1)}
        shared = {n for n in self.names_of[r] if n != own and
                  (n in edge_ends or any(n in self.names_of[o] for o in self.roots if o != r))}

        def branches_agree(run: list[int]) -> bool:
            seen: dict[str, Any] = {}
            for b in run:
                for name, v in self.candidates[r][b].items():
                    if name in shared and not isinstance(v, list):
                        if name in seen and not same_value(seen[name], v):
                            return False
                        seen.setdefault(name, v)
            return True

        def fits(run: list[int]) -> bool:
            return (self.shared_agree(chosen + [(r, run)]) and branches_agree(run)
                    and self.edges_hold(chosen + [(r, run[-1:])]))

        if not fits([first]):
            return []
        run = [first]
        for b in sorted(self.candidates[r]):
            if b != first and b in free and fits(run + [b]):
                run.append(b)
        return run

    def assignments(self, first: int, free: set[int]) -> list[list[tuple[int, list[int]]]]:
        """Every valid assignment with the first root on binding ``first``,
        within the free bindings (a repeated root: every fitting free binding)."""
        out = []

        def extend(k: int, chosen: list[tuple[int, list[int]]], used: set[int]) -> None:
            if k == len(self.order):
                if self.valid(chosen):
                    out.append(sorted(chosen, key=lambda one: self.roots.index(one[0])))
                return
            r = self.order[k]
            if self.nodes[r]["k"] == "repeated":
                runs: list[list[int]] = []
                for start in (b for b in sorted(self.candidates[r]) if b in free and b not in used):
                    run = self.run_from(start, r, chosen, free - used)
                    if run and sorted(run) not in runs:
                        runs.append(sorted(run))
                for run in runs:
                    extend(k + 1, chosen + [(r, run)], used | set(run))
                return
            for b in sorted(self.candidates[r]):
                if b in free and b not in used and self.shared_agree(chosen + [(r, [b])]):
                    extend(k + 1, chosen + [(r, [b])], used | {b})

        r0 = self.roots[0]
        if first in self.candidates[r0] and first in free:
            if self.nodes[r0]["k"] == "repeated":
                return []  # a repeated first root: handled by check_walk
            extend(1, [(r0, [first])], {first})
        return out


def check_walk(ref: GraphReference, seen: list) -> None:
    """The matchings of one walk: valid, disjoint, and for each candidate
    of the first root in binding order, a match exactly when one exists
    among the bindings still free."""
    def text(chosen):
        return ", ".join(f"p{r}->{[ref.bindings[b].var.name_hint for b in bs]}" for r, bs in chosen)

    taken: set[int] = set()
    everything = set(range(len(ref.bindings)))
    r0 = ref.roots[0]
    if ref.nodes[r0]["k"] == "repeated":
        return
    order = [m[0][1][0] for m in seen]
    if order != sorted(order):
        raise Finding("graph-order", f"matchings not in binding order of the first root: {order}")
    pending = list(seen)
    for b0 in sorted(ref.candidates[r0]):
        free = everything - taken
        possible = ref.assignments(b0, free)
        if pending and pending[0][0][1][0] == b0:
            m = pending.pop(0)
            used = [b for _, bs in m for b in bs]
            if len(set(used)) != len(used) or set(used) & taken:
                raise Finding("graph-overlap", f"matching {text(m)} reuses a binding taken ({sorted(taken)})")
            if not any(m == a for a in possible):
                raise Finding("graph-invalid", f"matching {text(m)} is not one the docs allow here; allowed: "
                                               f"{[text(a) for a in possible]}", "invalid matching")
            taken |= set(used)
        elif possible:
            raise Finding("graph-missed", f"no matching with p{r0} on {ref.bindings[b0].var.name_hint}, "
                                          f"but {text(possible[0])} holds", "missed matching")
    if pending:
        raise Finding("graph-invalid", f"matching {text(pending[0])} has a first root that is no candidate",
                      "invalid matching")
