"""What the ``patterns`` fuzz target's inputs are made of: random valid
functions (``make_function``: elementwise ops, matmul, permute_dims, concat,
split and its items, constants, tuples, float32 and float64, some symbolic
dims, and chains the rewrite rules match) and pattern trees as plain data,
a list of nodes with children before parents (``PatternMaker`` makes them
at random or mirroring a binding; ``build_patterns`` gives their
``adjoint.pattern`` objects, ``pattern_code`` the Python that builds them,
for reproducers). Plain data so that an input is made from (seed, k) alone
and a finding can be saved as a script.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.patterns_reference import bound_values, through_bindings
from adjoint.pattern.rewrite_call import _ops_make_calls

# ---------------------------------------------------------------- functions

UNARY = ["exp", "negative", "tanh", "relu"]
BINARY = ["add", "multiply", "subtract"]
#: op -> number of args, for the op patterns made.
ARITY = {**{op: 1 for op in UNARY}, **{op: 2 for op in BINARY}, "matmul": 2, "permute_dims": 1, "concat": 1,
         "split": 1, "sum": 1}


def _dims(rng: random.Random, symbolic: bool) -> tuple:
    rank = rng.choice([1, 2, 2, 2, 3])
    return tuple(rng.choice(["n", 2, 4] if symbolic and rng.random() < 0.3 else [2, 4, 4, 3]) for _ in range(rank))


#: the kinds of value make_function draws, and their weights
KINDS = {"unary": 5, "binary": 6, "binary_const": 2, "matmul": 2, "permute": 2, "concat": 2, "split": 2, "sum": 1,
         "const": 1, "tuple": 1}
#: more of them when it is asked for targets: chains that the rewrite RULES match
TARGET_KINDS = {"negneg": 3, "permperm": 2, "mulone": 2, "splitcat": 2, "subself": 1, "permmatmul": 2}


def make_function(rng: random.Random, steps: int, symbolic: bool = True, float64: bool = True,
                  targets: bool = False) -> str:
    """The text of a random valid function ``main``: ops drawn at random on
    the values made so far (an op whose types do not fit is skipped).
    ``targets``: more chains that the rewrite RULES match."""
    maker = FunctionMaker(rng, symbolic, float64)
    kinds = {**KINDS, **(TARGET_KINDS if targets else {})}
    for _ in range(steps):
        maker.add(rng.choices(list(kinds), list(kinds.values()))[0])
    return maker.finish()


class FunctionMaker:
    """A random function being built: its params (one to three, float32 or
    sometimes float64 too), then a value of a drawn kind at each step on
    those made so far (``pool``, the recent ones more often)."""

    def __init__(self, rng: random.Random, symbolic: bool, float64: bool):
        self.rng = rng
        self.bb = aj.FunctionBuilder("main")
        dtypes = ["float32", "float64"] if float64 and rng.random() < 0.3 else ["float32"]
        shape = _dims(rng, symbolic)
        self.pool: list[Any] = []
        for i, name in enumerate("abc"[:rng.choice([1, 2, 2, 3])]):
            s = shape if i == 0 or rng.random() < 0.6 else _dims(rng, symbolic)
            self.pool.append(self.bb.param(name, s, rng.choice(dtypes)))
        self.values: list[Any] = []

    def add(self, kind: str) -> None:
        """A value of the kind bound, unless its ops do not type-check."""
        try:
            with _ops_make_calls():  # calls as exprs: one that does not type-check leaves the builder usable
                v = self.step(kind)
        except aj.Error:
            return
        if v is None:
            return
        if not isinstance(v, aj.Var):
            v = self.bb.emit(v)
        self.pool.append(v)
        self.values.append(v)

    def finish(self) -> str:
        """The function's text, returning one to three of the values made."""
        rng, values = self.rng, self.values
        if not values:
            values.append(self.bb.emit(_exp(self.pool[0])))
        outs = [v for v in values if v.type.is_tensor]
        outs = rng.sample(outs, min(len(outs), rng.choice([1, 1, 2, 3]))) or values[-1:]
        return self.bb.finish(outs[0] if len(outs) == 1 else aj.Tuple(outs))["main"].script()

    def tensors(self) -> list[Any]:
        return [v for v in self.pool if v.type.is_tensor and v.type.shape]

    def pick(self) -> Any:
        ts = self.tensors()
        return self.rng.choice(ts[-4:]) if self.rng.random() < 0.7 else self.rng.choice(ts)

    def alike(self, x: Any) -> Any:
        same = [v for v in self.tensors() if v.type == x.type]
        return self.rng.choice(same) if same and self.rng.random() < 0.85 else self.pick()

    def const(self, x: Any, value: float | None = None) -> Any:
        rng, t = self.rng, x.type
        shape = () if rng.random() < 0.5 or not all(isinstance(d, int) for d in t.shape) else t.shape[-1:]
        data = np.full(shape, value, t.dtype) if value is not None else \
            np.asarray(np.round(np.random.default_rng(rng.randrange(1 << 30)).standard_normal(shape), 2), t.dtype)
        return aj.Constant(data)

    def step(self, kind: str) -> Any:
        """One random value of the kind (an expr, or a var already bound), None for none."""
        x = self.pick()
        if kind in TARGET_KINDS:
            return self.rule_chain(kind, x)
        return self.plain_value(kind, x)

    def plain_value(self, kind: str, x: Any) -> Any:
        """A value of one of KINDS on x."""
        rng, bb = self.rng, self.bb
        if kind == "unary":
            v = getattr(aj.op, rng.choice(UNARY))(x)
        elif kind == "binary":
            y = self.alike(x)
            v = getattr(aj.op, rng.choice(BINARY))(*([x, y] if rng.random() < 0.8 else [y, x]))
        elif kind == "binary_const":
            c = self.const(x, rng.choice([None, 1.0]))
            if rng.random() < 0.3:
                c = bb.emit(c)
            v = getattr(aj.op, rng.choice(BINARY))(x, c)
        elif kind == "matmul":
            ys = [y for y in self.tensors() if len(y.type.shape) >= 2 and len(x.type.shape) >= 1
                  and y.type.shape[-2] == x.type.shape[-1] and y.type.dtype == x.type.dtype]
            y = rng.choice(ys) if ys else aj.op.permute_dims(x)
            v = aj.op.matmul(x, y)
        elif kind == "permute":
            axes = list(range(len(x.type.shape)))
            rng.shuffle(axes)
            v = aj.op.permute_dims(x, axes=axes if rng.random() < 0.4 else None)
        elif kind == "concat":
            y = self.alike(x)
            fields = [x, y] + ([self.alike(x)] if rng.random() < 0.3 else [])
            axis = rng.randrange(len(x.type.shape))
            t = bb.emit(aj.Tuple(fields)) if rng.random() < 0.25 else fields
            v = aj.op.concat(t, axis=axis)
        elif kind == "split":
            axes = _even_axes(x)
            if not axes:
                return None
            s = bb.emit(aj.op.split(x, 2, axis=rng.choice(axes)))
            self.pool.append(s)
            v = bb.emit(aj.TupleGetItem(s, rng.randrange(2)))
            if rng.random() < 0.5:
                self.pool.append(v)
                v = bb.emit(aj.TupleGetItem(s, rng.randrange(2)))
        elif kind == "sum":
            v = aj.op.sum(x, axis=[rng.randrange(len(x.type.shape))], keepdims=rng.random() < 0.5)
        elif kind == "const":
            v = bb.emit(self.const(x))
        elif kind == "tuple":
            t = bb.emit(aj.Tuple([x, self.alike(x)]))
            self.pool.append(t)
            v = bb.emit(aj.TupleGetItem(t, rng.randrange(2)))
        else:
            raise AssertionError(kind)
        return v

    def rule_chain(self, kind: str, x: Any) -> Any:
        """A chain of TARGET_KINDS on x, what a rewrite rule matches."""
        if kind == "negneg":
            return aj.op.negative(aj.op.negative(x))
        if kind == "permperm":
            return aj.op.permute_dims(aj.op.permute_dims(x))
        if kind == "mulone":
            return aj.op.multiply(x, aj.Constant(np.ones((), x.type.dtype)))
        if kind == "splitcat":
            axes = _even_axes(x)
            if not axes:
                return None
            axis = self.rng.choice(axes)
            s = aj.op.split(x, 2, axis=axis)
            return aj.op.concat([s[0], s[1]], axis=axis)
        if kind == "subself":
            return aj.op.subtract(x, x)
        if kind == "permmatmul":
            y = self.alike(x) if len(x.type.shape) == 2 else x
            return aj.op.permute_dims(aj.op.matmul(x, aj.op.permute_dims(y)))
        raise AssertionError(kind)


def _even_axes(x: Any) -> list[int]:
    """The axes of x of an even, known size: where it splits in two."""
    return [i for i, d in enumerate(x.type.shape) if isinstance(d, int) and d % 2 == 0]


def _exp(x: Any) -> Any:
    with _ops_make_calls():
        return aj.op.exp(x)


# ---------------------------------------------------------------- patterns as plain data

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
            return self.add({"k": "dtype", "c": [inner], "dtype": rng.choice(["float32", "float32", "float64"])}, in_run)
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
