"""Pattern trees as plain data for the ``patterns`` fuzz target: a list of
nodes, children before parents (``{"k": kind, "c": [child indices], ...}``;
a node used by several parents is one pattern object). ``PatternMaker``
makes them at random over a function or mirroring one of its bindings,
``build_patterns`` gives their ``adjoint.pattern`` objects and
``pattern_code`` the Python that builds them, for reproducers. Plain data
so that an input is made from (seed, k) alone and saved as a script.
"""

from __future__ import annotations

import random
from typing import Any

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.patterns_programs import ARITY
from adjoint.fuzz.patterns_reference import bound_values, through_bindings


def build_patterns(nodes: list[dict]) -> list[P.Pattern]:
    """The pattern objects of a node list (children before parents; a node
    used by several is one object)."""
    out: list[P.Pattern] = []
    for n in nodes:
        k, c = n["k"], [out[i] for i in n.get("c", [])]
        name = n.get("name")
        if k == "wildcard":
            p = P.wildcard(name=name)
        elif k == "const":
            p = P.is_const()
        elif k == "var":
            p = P.is_var(n.get("hint"))
        elif k == "op":
            p = P.is_op(n["op"])(*c, name=name, **n["attrs"])
        elif k == "tuple":
            p = P.is_tuple(c, name=name)
        elif k == "item":
            p = P.is_tuple_get_item(c[0], n["index"], name=name)
        elif k == "repeated":
            p = P.repeated(c[0], name=name, count=n.get("count"))
        elif k == "or":
            p = c[0] | c[1]
        elif k == "and":
            p = c[0] & c[1]
        elif k == "not":
            p = ~c[0]
        elif k == "dtype":
            p = c[0].has_dtype(n["dtype"])
        elif k == "shape":
            p = c[0].has_shape(tuple(n["shape"]))
        elif k == "attr":
            p = c[0].has_attr(n["attrs"])
        else:
            raise AssertionError(k)
        out.append(p)
    return out


def pattern_code(nodes: list[dict], prefix: str = "p") -> list[str]:
    """Python lines building the patterns of a node list (for reproducers)."""
    lines = []
    for i, n in enumerate(nodes):
        k, c = n["k"], [f"{prefix}{j}" for j in n.get("c", [])]
        name = f", name={n['name']!r}" if n.get("name") else ""
        if k == "wildcard":
            e = f"P.wildcard({name[2:]})"
        elif k == "const":
            e = "P.is_const()"
        elif k == "var":
            e = f"P.is_var({n.get('hint')!r})"
        elif k == "op":
            attrs = "".join(f", {a}={v!r}" for a, v in n["attrs"].items())
            e = f"P.is_op({n['op']!r})({', '.join(c)}{name}{attrs})".replace("(, ", "(")
        elif k == "tuple":
            e = f"P.is_tuple([{', '.join(c)}]{name})"
        elif k == "item":
            e = f"P.is_tuple_get_item({c[0]}, {n['index']!r}{name})"
        elif k == "repeated":
            count = f", count={n['count']!r}" if n.get("count") else ""
            e = f"P.repeated({c[0]}{name}{count})"
        elif k in ("or", "and"):
            e = f"{c[0]} {'|' if k == 'or' else '&'} {c[1]}"
        elif k == "not":
            e = f"~{c[0]}"
        elif k == "dtype":
            e = f"{c[0]}.has_dtype({n['dtype']!r})"
        elif k == "shape":
            e = f"{c[0]}.has_shape({tuple(n['shape'])!r})"
        else:
            e = f"{c[0]}.has_attr({n['attrs']!r})"
        lines.append(f"{prefix}{i} = {e}")
    return lines


class PatternMaker:
    """Random node lists over a function: random trees, and trees mirroring
    one of its bindings (more of them match)."""

    def __init__(self, rng: random.Random, fn: Any):
        self.rng = rng
        self.fn = fn
        self.nodes: list[dict] = []
        self.shared: list[int] = []  # made outside runs: may be used again outside runs
        self.calls = [b.value for b in fn.bindings if isinstance(b.value, aj.Call)]
        self.bound = bound_values(fn)
        self.shapes = [v.type.shape for v in list(fn.params) + [b.var for b in fn.bindings] if v.type.is_tensor]
        self.count_names = ["c1", "c2"]

    def add(self, node: dict, in_run: bool) -> int:
        self.nodes.append(node)
        i = len(self.nodes) - 1
        if not in_run and self.rng.random() < 0.4:
            self.shared.append(i)
        return i

    def name(self, in_run: bool) -> dict:
        if in_run or self.rng.random() > 0.12:
            return {}
        return {"name": self.rng.choice(["x", "y", "z"])}

    def attrs_for(self, op: str) -> dict:
        """Attrs as stored in a call of op in the function, or changed."""
        seen = [c.attrs for c in self.calls if c.op == op and c.attrs]
        if not seen or self.rng.random() < 0.6:
            return {}
        attrs = dict(self.rng.choice(seen))
        keys = self.rng.sample(sorted(attrs), self.rng.randint(1, len(attrs)))
        out = {k: attrs[k] for k in keys}
        if self.rng.random() < 0.3:
            k = self.rng.choice(keys)
            v = out[k]
            if isinstance(v, bool):
                out[k] = not v
            elif isinstance(v, int):
                out[k] = self.rng.choice([v + 1, v - 1, 0])
            elif isinstance(v, list):
                out[k] = list(reversed(v)) if len(v) > 1 and self.rng.random() < 0.5 else None
            elif v is None:
                out[k] = [1, 0]
        return out

    def tree(self, depth: int, in_run: bool = False) -> int:
        rng = self.rng
        if not in_run and self.shared and rng.random() < 0.15:
            return rng.choice(self.shared)
        r = rng.random()
        if depth <= 0 or r < 0.22:
            leaf = rng.choices(["wildcard", "const", "var"], [6, 1, 1])[0]
            node = {"k": leaf, **(self.name(in_run) if leaf == "wildcard" else {})}
            if leaf == "var" and rng.random() < 0.2:
                node["hint"] = rng.choice(["a", "b", "lv"])
            return self.add(node, in_run)
        if r < 0.55:
            op = rng.choice(list(ARITY))
            return self.op(op, depth, in_run)
        if r < 0.62:
            return self.add({"k": "tuple", "c": self.fields(depth, in_run, rng.randint(1, 3)), **self.name(in_run)},
                            in_run)
        if r < 0.67:
            inner = self.op("split", depth - 1, in_run) if rng.random() < 0.6 else self.tree(depth - 1, in_run)
            return self.add({"k": "item", "c": [inner], "index": rng.choice([0, 1, None]), **self.name(in_run)},
                            in_run)
        if r < 0.77:
            return self.add({"k": "or", "c": [self.tree(depth - 1, in_run), self.tree(depth - 1, in_run)]}, in_run)
        if r < 0.84:
            return self.add({"k": "and", "c": [self.tree(depth - 1, in_run), self.tree(depth - 1, in_run)]}, in_run)
        if r < 0.88:
            return self.add({"k": "not", "c": [self.tree(depth - 1, in_run)]}, in_run)
        return self.constraint(self.tree(depth - 1, in_run), in_run)

    def constraint(self, inner: int, in_run: bool) -> int:
        rng = self.rng
        kind = rng.choice(["dtype", "shape", "attr"])
        if kind == "dtype":
            dtype = rng.choice(["float32", "float32", "float64"])
            return self.add({"k": "dtype", "c": [inner], "dtype": dtype}, in_run)
        if kind == "shape":
            shape = list(rng.choice(self.shapes)) if self.shapes else [2, 2]
            if shape and rng.random() < 0.3:
                j = rng.randrange(len(shape))
                shape[j] = rng.choice([2, 4, "n", "m", "2*n", "n*2", "n + n"])
            return self.add({"k": "shape", "c": [inner], "shape": shape}, in_run)
        op = rng.choice([c.op for c in self.calls] or ["sum"])
        attrs = self.attrs_for(op) or rng.choice([{"axis": 0}, {"axis": 1}, {"axes": None}, {"keepdims": True}])
        return self.add({"k": "attr", "c": [inner], "attrs": attrs}, in_run)

    def fields(self, depth: int, in_run: bool, n: int) -> list[int]:
        """Fields or args: single patterns, and sometimes a run (two runs share a count name)."""
        out = [self.tree(depth - 1, in_run) for _ in range(n)]
        if not in_run and self.rng.random() < 0.3:
            runs = self.rng.choice([1, 1, 1, 2])
            count = self.rng.choice(self.count_names) if runs == 2 or self.rng.random() < 0.3 else None
            for _ in range(runs):
                element = self.tree(depth - 1, in_run=True)
                name = {"name": "r"} if self.rng.random() < 0.1 else {}
                out.insert(self.rng.randint(0, len(out)),
                           self.add({"k": "repeated", "c": [element], **name, **({"count": count} if count else {})},
                                    True))
            while len(out) > 3 and self.nodes[out[-1]]["k"] != "repeated":
                out.pop()
        return out

    def op(self, op: str, depth: int, in_run: bool) -> int:
        rng = self.rng
        if op == "concat" and rng.random() < 0.8:
            args = [self.add({"k": "tuple", "c": self.fields(depth, in_run, rng.randint(1, 3))}, in_run)]
        elif rng.random() < 0.15 and not in_run:
            args = self.fields(depth, in_run, 0) or [self.tree(depth - 1, in_run) for _ in range(ARITY[op])]
            if sum(self.nodes[a]["k"] != "repeated" for a in args) > ARITY[op]:
                args = [self.tree(depth - 1, in_run) for _ in range(ARITY[op])]
        else:
            args = [self.tree(depth - 1, in_run) for _ in range(ARITY[op])]
        return self.add({"k": "op", "op": op, "c": args, "attrs": self.attrs_for(op), **self.name(in_run)}, in_run)

    def mirror(self, e: Any, depth: int) -> int:
        """A pattern of e's shape (through bindings) down to depth, with random parts."""
        rng = self.rng
        v = through_bindings(e, self.bound)
        r = rng.random()
        if depth <= 0 or r < 0.1:
            return self.tree(0)
        if r < 0.2:
            return self.tree(depth)
        if r < 0.27:
            return self.add({"k": "or", "c": [self.tree(depth - 1), self.mirror(e, depth - 1)]
                             if rng.random() < 0.5 else [self.mirror(e, depth - 1), self.tree(depth - 1)]}, False)
        if r < 0.32:
            return self.add({"k": "and", "c": [self.mirror(e, depth - 1), self.tree(1)]}, False)
        if r < 0.37:
            return self.constraint(self.mirror(e, depth), False)
        if isinstance(v, aj.Call):
            args = [self.mirror(a, depth - 1) for a in v.args]
            attrs = self.attrs_for(v.op) if rng.random() < 0.5 else {}
            if rng.random() < 0.3:
                attrs = {k: v.attrs[k] for k in rng.sample(sorted(v.attrs), rng.randint(0, len(v.attrs)))}
            return self.add({"k": "op", "op": v.op, "c": args, "attrs": attrs, **self.name(False)}, False)
        if isinstance(v, aj.Tuple):
            if rng.random() < 0.3:
                element = self.tree(1, in_run=True)
                run = self.add({"k": "repeated", "c": [element]}, True)
                return self.add({"k": "tuple", "c": [run]}, False)
            return self.add({"k": "tuple", "c": [self.mirror(f, depth - 1) for f in v.fields]}, False)
        if isinstance(v, aj.TupleGetItem):
            index = v.index if rng.random() < 0.8 else rng.choice([None, 1 - v.index])
            return self.add({"k": "item", "c": [self.mirror(v.tuple, depth - 1)], "index": index}, False)
        if isinstance(v, aj.Constant):
            return self.add({"k": "const"}, False)
        return self.add(rng.choice([{"k": "var"}, {"k": "wildcard"}, {"k": "var", "hint": v.name_hint}]), False)
