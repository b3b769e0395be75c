"""The dataflow graph of a function as plain nodes and edges: what the
pictures of ``aj.viz.graph`` draw, independent of any layout engine.

Params, ops, tuples and constants are nodes; a value is an edge labelled with
its shape and dtype; a tuple's item (``t[0]``) is an edge from the tuple's
producer labelled ``[0] ...`` rather than a node of its own; the returned
values flow into a ``return`` node. ``restrict``/``collapse``/``truncate``
derive smaller graphs from it (a dependency cone, folded groups, a size cap).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter, deque
from typing import Callable, Iterable

from .. import _core
from ..errors import VizError

_DTYPE_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8"}


@dataclasses.dataclass
class Node:
    """A box of the picture. ``kind`` is one of param, op, tuple, const,
    output, collapsed; ``lines`` is its text, the first line its title."""

    id: str
    kind: str
    lines: list[str]
    name: str | None = None
    returned: bool = False
    highlighted: bool = False
    inputs_hidden: bool = False


@dataclasses.dataclass
class Edge:
    """A value flowing from ``src`` to ``dst``; ``value`` identifies the value
    (its producer and tuple path) so that each value is labelled once."""

    src: str
    dst: str
    label: str
    value: tuple


@dataclasses.dataclass
class Graph:
    nodes: dict[str, Node]
    edges: list[Edge]
    names: dict[str, str]  # printed var name -> id of the node that produces it
    caption: str | None = None

    def in_edges(self) -> dict[str, list[Edge]]:
        result: dict[str, list[Edge]] = {n: [] for n in self.nodes}
        for e in self.edges:
            result[e.dst].append(e)
        return result


def type_label(ty) -> str:
    """``(n, 784) f32`` for a tensor type, ``tuple(...)`` for a tuple type."""
    if ty.is_tuple:
        return "(" + ", ".join(type_label(f) for f in ty.fields) + ")"
    dims = ", ".join(str(d) for d in ty.shape)
    if len(ty.shape) == 1:
        dims += ","
    return f"({dims}) {_DTYPE_SHORT.get(ty.dtype, ty.dtype)}"


def _attr_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_attr_text(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def op_label(call) -> str:
    """``permute_dims axes=[1,0]``: the op and its attrs that are set (not None or False)."""
    attrs = " ".join(f"{k}={_attr_text(v)}" for k, v in call.attrs.items() if v is not None and v is not False)
    text = f"{call.op} {attrs}".strip()
    return text if len(text) <= 48 else text[:47] + "…"


def _printed_names(fn) -> list[str] | None:
    """The names ``fn.script()`` prints for its params then its bindings (the
    printer renames repeated hints), or None when the text does not parse so."""
    lines = fn.script().splitlines()
    signature = next((ln for ln in lines if ln.startswith("def ")), "")
    params, depth = [], 0
    for m in re.finditer(r"[()]|(\w+): ", signature[signature.find("("):]):
        if m.group(0) == "(":
            depth += 1
        elif m.group(0) == ")":
            depth -= 1
        elif depth == 1:
            params.append(m.group(1))
    bindings = [m.group(1) for ln in lines if (m := re.match(r"    (\w+): .* = ", ln))]
    if len(params) != len(fn.params) or len(bindings) != len(fn.bindings):
        return None
    return params + bindings


class _Builder:
    """Walks a function once, making nodes for params, bindings and constants."""

    def __init__(self, fn) -> None:
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.names: dict[str, str] = {}
        self.refs: dict[int, tuple[str, tuple[int, ...]]] = {}
        self.alive: list = []  # keeps wrappers alive so that id() stays the var's identity

    def add(self, kind: str, lines: list[str], name: str | None = None) -> str:
        node_id = f"n{len(self.nodes)}"
        self.nodes[node_id] = Node(node_id, kind, lines, name)
        if name is not None:
            self.names[name] = node_id
        return node_id

    def define(self, var, name: str, ref: tuple[str, tuple[int, ...]]) -> None:
        self.alive.append(var)
        self.refs[id(var)] = ref
        self.names.setdefault(name, ref[0])

    def resolve(self, expr) -> tuple[str, tuple[int, ...]]:
        """The node and tuple path that produce ``expr``, making nodes for
        constants and inline tuples."""
        if isinstance(expr, _core.Var):
            if id(expr) not in self.refs:
                raise VizError(f"aj.viz.graph: var '{expr.name_hint}' is used but never defined")
            return self.refs[id(expr)]
        if isinstance(expr, _core.TupleGetItem):
            node, path = self.resolve(expr.tuple)
            return node, path + (expr.index,)
        if isinstance(expr, _core.Constant):
            return self.constant(expr), ()
        if isinstance(expr, _core.Tuple):
            node = self.add("tuple", ["tuple"])
            self.connect(expr.fields, node)
            return node, ()
        raise VizError(f"aj.viz.graph: cannot draw an expression of type {type(expr).__name__}")

    def constant(self, const, name: str | None = None) -> str:
        data = const.data
        text = f"const {data.item():g}" if data.size == 1 else f"const {type_label(const.type)}"
        return self.add("const", [text] + ([name] if name else []), name)

    def connect(self, args: Iterable, dst: str) -> None:
        for arg in args:
            src, path = self.resolve(arg)
            prefix = "".join(f"[{i}]" for i in path)
            self.edges.append(Edge(src, dst, f"{prefix} {type_label(arg.type)}".strip(), (src, path)))

    def binding(self, var, value, name: str) -> None:
        if isinstance(value, _core.Call):
            node = self.add("op", [op_label(value), name], name)
            self.connect(value.args, node)
            self.define(var, name, (node, ()))
        elif isinstance(value, _core.Tuple):
            node = self.add("tuple", ["tuple", name], name)
            self.connect(value.fields, node)
            self.define(var, name, (node, ()))
        elif isinstance(value, _core.Constant):
            self.define(var, name, (self.constant(value, name), ()))
        else:  # a tuple item or another var: an edge from what produces it
            self.define(var, name, self.resolve(value))

    def output(self, ret) -> None:
        node = self.add("output", ["return"])
        leaves = []

        def flatten(expr, path):
            if isinstance(expr, _core.Tuple):
                for i, f in enumerate(expr.fields):
                    flatten(f, path + (i,))
            else:
                leaves.append((expr, path))

        flatten(ret, ())
        for expr, out_path in leaves:
            src, path = self.resolve(expr)
            self.nodes[src].returned = True
            prefix = "".join(f"[{i}]" for i in path)
            where = "".join(f"[{i}]" for i in out_path)
            label = f"{prefix} {type_label(expr.type)}".strip() + (f" → out{where}" if where else "")
            self.edges.append(Edge(src, node, label, (src, path, out_path)))


def build(fn) -> Graph:
    """The whole dataflow graph of ``fn``."""
    names = _printed_names(fn) or _unique_hints(fn)
    b = _Builder(fn)
    for var, name in zip(fn.params, names):
        node = b.add("param", [name, type_label(var.type)], name)
        b.define(var, name, (node, ()))
    for binding, name in zip(fn.bindings, names[len(fn.params):]):
        b.binding(binding.var, binding.value, name)
    b.output(fn.ret)
    return Graph(b.nodes, b.edges, b.names)


def _unique_hints(fn) -> list[str]:
    seen: Counter = Counter()
    names = []
    for var in list(fn.params) + [bd.var for bd in fn.bindings]:
        hint = var.name_hint
        names.append(hint if not seen[hint] else f"{hint}_{seen[hint]}")
        seen[hint] += 1
    return names


def node_of(graph: Graph, name: str, what: str) -> str:
    """The node producing var ``name``; an unknown name is a VizError listing close names."""
    if not isinstance(name, str):
        raise VizError(f"aj.viz.graph: {what} must be a var name (str), got {type(name).__name__}")
    if name not in graph.names:
        close = difflib.get_close_matches(name, list(graph.names), n=5, cutoff=0.5)
        hint = f"; close names: {', '.join(close)}" if close else ""
        raise VizError(f"aj.viz.graph: {what} '{name}' is not a var of the function{hint}")
    return graph.names[name]


def cone(graph: Graph, roots: list[str], depth: int | None) -> list[str]:
    """The nodes that ``roots`` depend on within ``depth`` hops (all when None),
    nearest first."""
    ins = graph.in_edges()
    dist = {r: 0 for r in roots}
    queue = deque(roots)
    while queue:
        n = queue.popleft()
        if depth is not None and dist[n] >= depth:
            continue
        for e in ins[n]:
            if e.src not in dist:
                dist[e.src] = dist[n] + 1
                queue.append(e.src)
    return list(dist)


def restrict(graph: Graph, keep: Iterable[str]) -> Graph:
    """The subgraph on ``keep``; nodes that lose an input are marked."""
    kept = set(keep)
    nodes = {n: graph.nodes[n] for n in graph.nodes if n in kept}
    edges = [e for e in graph.edges if e.src in kept and e.dst in kept]
    for e in graph.edges:
        if e.dst in kept and e.src not in kept:
            nodes[e.dst] = dataclasses.replace(nodes[e.dst], inputs_hidden=True)
    names = {k: v for k, v in graph.names.items() if v in kept}
    return Graph(nodes, edges, names, graph.caption)


def collapse(graph: Graph, groups: dict[str, set[str]]) -> Graph:
    """Folds each group of nodes (and constants feeding only it) into one box."""
    nodes = dict(graph.nodes)
    owner: dict[str, str] = {}
    consumers: dict[str, set[str]] = {}
    for e in graph.edges:
        consumers.setdefault(e.src, set()).add(e.dst)
    for i, (label, members) in enumerate(groups.items()):
        box = f"c{i}"
        if not members:
            raise VizError(f"aj.viz.graph: the collapse group '{label}' names no var")
        twice = sorted(graph.nodes[m].name or m for m in members if m in owner)
        if twice:
            raise VizError(f"aj.viz.graph: {', '.join(twice)} in two collapse groups (the second is '{label}')")
        members = set(members) | {n for n, node in graph.nodes.items()
                                  if node.kind == "const" and consumers.get(n) and consumers[n] <= members}
        ops = Counter(graph.nodes[m].lines[0].split(" ")[0] for m in members)
        summary = ", ".join(f"{op}×{k}" if k > 1 else op for op, k in ops.most_common(4))
        summary += ", …" if len(ops) > 4 else ""
        nodes[box] = Node(box, "collapsed", [label, f"{len(members)} nodes: {summary}"],
                          returned=any(graph.nodes[m].returned for m in members))
        for m in members:
            owner[m] = box
            del nodes[m]
    edges, seen = [], set()
    for e in graph.edges:
        src, dst = owner.get(e.src, e.src), owner.get(e.dst, e.dst)
        key = (src, dst, e.label)
        if src != dst and key not in seen:
            seen.add(key)
            edges.append(Edge(src, dst, e.label, e.value))
    names = {k: owner.get(v, v) for k, v in graph.names.items()}
    return Graph(nodes, edges, names, graph.caption)


def collapse_groups(graph: Graph, fn, spec) -> dict[str, set[str]]:
    """``collapse=`` as groups of node ids: a list of var names, a predicate on
    bindings, or a dict of box label to either."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {str(label): _members(graph, fn, s) for label, s in spec.items()}
    return {"collapsed": _members(graph, fn, spec)}


def _members(graph: Graph, fn, spec) -> set[str]:
    if callable(spec):
        names = _printed_names(fn) or _unique_hints(fn)
        bound = names[len(fn.params):]
        return {graph.names[name] for b, name in zip(fn.bindings, bound) if _call(spec, b)}
    if isinstance(spec, str) or not isinstance(spec, Iterable):
        raise VizError("aj.viz.graph: collapse must be a list of var names, a predicate on bindings "
                       f"or a dict of label to either, got {type(spec).__name__}")
    return {node_of(graph, name, "collapse name") for name in spec}


def _call(predicate: Callable, binding) -> bool:
    try:
        return bool(predicate(binding))
    except Exception as e:  # the user's predicate: say where it failed
        raise VizError(f"aj.viz.graph: the collapse predicate raised {type(e).__name__}: {e}") from e


def truncate(graph: Graph, sinks: list[str], max_nodes: int, near: str) -> Graph:
    """At most ``max_nodes`` nodes: those nearest the sinks, with a caption saying so."""
    total = len(graph.nodes)
    if total <= max_nodes:
        return graph
    order = cone(graph, sinks, None)
    reached = set(order)
    order += [n for n in graph.nodes if n not in reached]
    small = restrict(graph, order[:max_nodes])
    small.caption = (f"{total:,} nodes; showing the {max_nodes:,} nearest {near}; "
                     "use around=... or max_nodes=...")
    return small
