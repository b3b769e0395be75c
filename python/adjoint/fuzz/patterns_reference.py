"""The ``patterns`` fuzz target's reference matcher: the pattern language
as docs/passes/pattern.md tells it, in plain Python over the target's
pattern node lists (``RefMatcher``), with the comparisons it and the
target's checks share: when two captured values agree (``same_value``),
attr values equal as stored (``attr_equal``, ``attrs_agree``) and dims
equal (``same_shape``). Kept apart from the target because it is the docs
in code, tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import adjoint as aj


def bound_values(fn: Any) -> dict[str, Any]:
    """What each var of fn is bound to, by name (the functions here bind
    each name once)."""
    return {b.var.name_hint: b.value for b in fn.bindings}


def through_bindings(e: Any, bound: dict[str, Any]) -> Any:
    """What e stands for: a var read as the value it is bound to in
    ``bound`` (through vars bound to vars), anything else as it is."""
    while isinstance(e, aj.Var) and e.name_hint in bound:
        e = bound[e.name_hint]
    return e


def same_value(a: Any, b: Any) -> bool:
    """Two captures agree: the same var (by name: the functions here bind
    each name once), equal constants, and calls, tuples and items made of
    agreeing operands (no binding is looked through)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, aj.Var):
        return a.name_hint == b.name_hint
    if isinstance(a, aj.Constant):
        return a.type == b.type and a.data.tobytes() == b.data.tobytes()
    if isinstance(a, aj.Call):
        return a.op == b.op and attrs_equal(a.attrs, b.attrs) and same_values(a.args, b.args)
    if isinstance(a, aj.Tuple):
        return same_values(a.fields, b.fields)
    if isinstance(a, aj.TupleGetItem):
        return a.index == b.index and same_value(a.tuple, b.tuple)
    return False


def same_values(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))


def attr_equal(a: Any, b: Any) -> bool:
    """Attr values equal as stored: a bool is no int, an int no list."""
    if type(a) is not type(b) and not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(attr_equal(x, y) for x, y in zip(a, b))
    return a == b


def attrs_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(attr_equal(a[k], b[k]) for k in a)


def attrs_agree(wanted: dict, call: Any) -> bool:
    """Each attr asked for is the call's, equal as stored (the value asked
    for read as the op reads it: an int where it takes a list is [int], as
    ``aj.op.sum(x, axis=0)`` stores ``axis=[0]``)."""
    kinds = _attr_kinds(call.op)
    for k, v in wanted.items():
        if k not in call.attrs:
            return False
        if isinstance(v, int) and not isinstance(v, bool) and kinds.get(k) == "None or a list of ints":
            v = [v]
        if not attr_equal(call.attrs[k], v):
            return False
    return True


_KINDS: dict[str, dict[str, str]] = {}


def _attr_kinds(op: str) -> dict[str, str]:
    if op not in _KINDS:
        _KINDS[op] = {a["name"]: a["kind"] for a in aj._core.op_schema(op)["attrs"]}
    return _KINDS[op]


def capture_name(nodes: list[dict], i: int) -> str:
    return nodes[i].get("name") or f"%{i}"


@dataclass
class State:
    """What a match has captured so far: the captures of the current scope
    (name -> (node, expr)), the lists of the names inside runs, the lengths
    of count names and the values of named runs."""
    caps: dict[str, tuple[int, Any]] = field(default_factory=dict)
    lists: dict[str, list[Any]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    runs: dict[str, list[Any]] = field(default_factory=dict)

    def copy(self) -> State:
        return State(dict(self.caps), {k: list(v) for k, v in self.lists.items()}, dict(self.counts),
                     {k: list(v) for k, v in self.runs.items()})


def nodes_below(nodes: list[dict], i: int) -> set[int]:
    """Node i of a node list and every node under it."""
    out, todo = set(), [i]
    while todo:
        j = todo.pop()
        if j not in out:
            out.add(j)
            todo.extend(nodes[j].get("c", []))
    return out


class RefMatcher:
    """The pattern language as docs/passes/pattern.md tells it, on the node
    lists of this target (see ``build_patterns``): a plain recursive matcher,
    with no memo (shared objects are simply matched again).

    - A var stands for the value it is bound to in ``fn`` (through vars
      bound to vars) when a pattern looks at what it is (op, const, var,
      tuple, item, attrs); types are read from the expr itself.
    - A pattern object (or a name) already captured in the scope must take
      the same value again (vars by identity, other values by content); the
      same object then needs no second match.
    - ``|`` is an ordered choice without backtracking into its right side
      once its left matched; ``|``'s failed side and ``~``'s operand leave no
      captures.
    - Args and tuple fields are matched left to right; runs take what the
      single patterns leave, split evenly (several runs in one list share a
      count name); each element of a run is a scope of its own, and the
      names inside a run capture a list, one value per element.
    """

    def __init__(self, nodes: list[dict], fn: Any | None):
        self.nodes = nodes
        self.bound: dict[str, Any] = {} if fn is None else bound_values(fn)
        self.state = State()
        self.in_run: set[int] = set()
        for i, n in enumerate(nodes):
            if n["k"] == "repeated":
                self.in_run |= self._below(n["c"][0])

    def _below(self, i: int) -> set[int]:
        return nodes_below(self.nodes, i)

    def resolve(self, e: Any) -> Any:
        return through_bindings(e, self.bound)

    def match(self, root: int, e: Any) -> dict[str, Any] | None:
        """name -> what it captured (a list for runs and names in runs), or None."""
        self.state = State()
        if not self.node(root, e):
            return None
        out = {name: expr for name, (_, expr) in self.state.caps.items()}
        out.update(self.state.lists)
        return out

    def node(self, i: int, e: Any) -> bool:
        name = capture_name(self.nodes, i)
        caps = self.state.caps
        if name in caps:
            owner, earlier = caps[name]
            if not same_value(earlier, e):
                return False
            if owner == i:
                return True
        if not self.here(i, e):
            return False
        if name in self.state.caps and not same_value(self.state.caps[name][1], e):
            return False
        self.state.caps.setdefault(name, (i, e))
        return True

    def here(self, i: int, e: Any) -> bool:
        n = self.nodes[i]
        k, c = n["k"], n.get("c", [])
        if k == "wildcard":
            return True
        if k == "const":
            return isinstance(self.resolve(e), aj.Constant)
        if k == "var":
            v = self.resolve(e)
            return isinstance(v, aj.Var) and (not n.get("hint") or v.name_hint == n["hint"])
        if k == "op":
            v = self.resolve(e)
            return (isinstance(v, aj.Call) and v.op == n["op"] and attrs_agree(n["attrs"], v)
                    and self.sequence(c, v.args))
        if k == "tuple":
            v = self.resolve(e)
            return isinstance(v, aj.Tuple) and self.sequence(c, v.fields)
        if k == "item":
            v = self.resolve(e)
            return isinstance(v, aj.TupleGetItem) and n["index"] in (None, v.index) and self.node(c[0], v.tuple)
        if k == "or":
            saved = self.state.copy()
            if self.node(c[0], e):
                return True
            self.state = saved
            return self.node(c[1], e)
        if k == "and":
            return self.node(c[0], e) and self.node(c[1], e)
        if k == "not":
            saved = self.state.copy()
            matched = self.node(c[0], e)
            self.state = saved
            return not matched
        if k == "dtype":
            t = e.type
            return t.is_tensor and t.dtype == n["dtype"] and self.node(c[0], e)
        if k == "shape":
            t = e.type
            return t.is_tensor and same_shape(t.shape, n["shape"]) and self.node(c[0], e)
        if k == "attr":
            v = self.resolve(e)
            return isinstance(v, aj.Call) and attrs_agree(n["attrs"], v) and self.node(c[0], e)
        raise AssertionError(f"a run stands for one value: {n}")

    def sequence(self, children: list[int], exprs: list[Any]) -> bool:
        runs = sum(self.nodes[i]["k"] == "repeated" for i in children)
        singles = len(children) - runs
        if runs == 0 and len(exprs) != singles:
            return False
        if runs and (len(exprs) < singles or (len(exprs) - singles) % runs):
            return False
        per_run = (len(exprs) - singles) // runs if runs else 0
        at = 0
        for i in children:
            if self.nodes[i]["k"] == "repeated":
                if not self.run(i, exprs[at:at + per_run]):
                    return False
                at += per_run
            else:
                if not self.node(i, exprs[at]):
                    return False
                at += 1
        return True

    def run(self, i: int, exprs: list[Any]) -> bool:
        n = self.nodes[i]
        count = n.get("count")
        if count and self.state.counts.setdefault(count, len(exprs)) != len(exprs):
            return False
        outer = self.state.caps
        for e in exprs:
            self.state.caps = {}
            ok = self.node(n["c"][0], e)
            element, self.state.caps = self.state.caps, outer
            if not ok:
                return False
            for name, (_, expr) in element.items():
                self.state.lists.setdefault(name, []).append(expr)
        name = capture_name(self.nodes, i)
        if n.get("name"):  # a run named as an earlier one holds the same values
            if name in self.state.runs and not same_values(self.state.runs[name], exprs):
                return False
            self.state.runs.setdefault(name, list(exprs))
        self.state.lists[name] = list(exprs)
        return True


def same_shape(shape: tuple, wanted: list) -> bool:
    """Dims equal: ints exactly, symbolic dims as expressions (their
    canonical text, ``aj.dims`` when it has one)."""
    if len(shape) != len(wanted):
        return False
    return all(canonical_dim(a) == canonical_dim(b) for a, b in zip(shape, wanted))


def canonical_dim(d: Any) -> Any:
    if isinstance(d, int):
        return d
    s = str(d).replace(" ", "")
    return {"n*2": "2*n", "n+n": "2*n"}.get(s, s)
