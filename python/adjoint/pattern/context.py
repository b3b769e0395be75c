"""``P.PatternContext``: graph patterns, as TVM's PatternContext makes them.

Every pattern made while a context is active is registered in it (contexts
nest; the innermost active one registers). Its roots are the registered
patterns that can match a call and are no operand of another registered
pattern, in the order they were made, then those given to ``ctx.add``.
``P.rewrite_bindings`` matches all roots at once, each to a binding of its
own, such that

- a sub-pattern two roots share (the same object, or the same ``name=``)
  matched one value in both (vars by identity, other values by content);
- each edge holds: ``p.used_by(q, index)`` (q's arg ``index``, any arg when
  None, is p's value), ``p.only_used_by(q, index)`` (and nothing but q's
  match uses p's value).

A root made with ``P.repeated(p)`` matches one or more bindings (its
branches), each matching ``p``. A sub-pattern of it that another root
shares, or that an edge names, has one value for all branches; its other
sub-patterns take one value per branch, and its captures are then lists.
So ``x.used_by(mm)`` with ``mm`` the element makes every branch use one x::

    with P.PatternContext() as ctx:
        x = P.wildcard()
        mm = P.is_op("matmul")(x, P.wildcard())
        branches = P.repeated(mm)        # a root: any number of matmuls ...
        x.used_by(mm, 0)                 # ... of one LHS
"""

from __future__ import annotations

from typing import Any

from ..errors import Error
from .patterns import Pattern, _P, _active_contexts, _pattern_arg

__all__ = ["PatternContext"]

Edge = tuple[Pattern, Pattern, "int | None", bool]


class PatternContext:
    """The patterns made while it is active, their roots and edges; see the
    module docstring. ``with P.PatternContext() as ctx:`` activates it."""

    __slots__ = ("_patterns", "_registered", "_added", "_edges")

    def __init__(self) -> None:
        self._patterns: list[Pattern] = []
        self._registered: set[int] = set()
        self._added: list[Pattern] = []
        self._edges: list[Edge] = []

    def __enter__(self) -> "PatternContext":
        _active_contexts().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _active_contexts()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                return

    @staticmethod
    def current() -> "PatternContext | None":
        """The innermost active context of this thread, or None."""
        stack = _active_contexts()
        return stack[-1] if stack else None

    def add(self, pattern: Pattern) -> Pattern:
        """Makes ``pattern`` a root, even when it is an operand of another
        registered pattern (its binding's var then stands for it there).
        Returns it."""
        p = _pattern_arg(pattern, "PatternContext.add")
        if not _can_be_root(p):
            raise Error(f"PatternContext.add: {p!r} can match no call, so it cannot be a root")
        self._register(p)
        if all(q is not p for q in self._added):
            self._added.append(p)
        return p

    @property
    def patterns(self) -> tuple[Pattern, ...]:
        """The registered patterns, in the order they were made."""
        return tuple(self._patterns)

    @property
    def roots(self) -> tuple[Pattern, ...]:
        """The patterns matched to bindings (see the module docstring)."""
        operands = {id(c) for p in self._patterns for c in p._children}
        roots = [p for p in self._patterns if id(p) not in operands and _can_be_root(p)]
        return tuple(roots + [p for p in self._added if all(p is not r for r in roots)])

    @property
    def edges(self) -> tuple[Edge, ...]:
        """The edges: (p, q, index, only) for ``p.used_by(q, index)`` and
        ``p.only_used_by(q, index)`` (only=True)."""
        return tuple(self._edges)

    def __repr__(self) -> str:
        roots = ", ".join(repr(r) for r in self.roots)
        edges = ", ".join(_edge_text(e) for e in self._edges)
        return f"PatternContext(roots=[{roots}]" + (f", edges=[{edges}])" if edges else ")")

    def _register(self, p: Pattern) -> None:
        if id(p) not in self._registered:
            self._registered.add(id(p))
            self._patterns.append(p)

    def _add_edge(self, p: Pattern, q: Pattern, index: int | None, only: bool) -> None:
        self._edges.append((p, q, index, only))

    def _graph(self) -> Any:
        """The C++ graph pattern of the roots and edges, or None when there is
        no root."""
        roots = self.roots
        if not roots:
            return None
        _check_shared(roots)
        once = set().union(*(_names(r)[0] for r in roots))
        edges = [_edge_ends(edge, once) for edge in self._edges]
        specs = [(_element(r)._core_tagged(), r._plain.is_run, r._capture_name() if r._plain.is_run else None)
                 for r in roots]
        return _P.GraphPattern(specs, edges, _keys(roots))


def _element(p: Pattern) -> Pattern:
    """What a root matches on one binding: the element of a run, else itself."""
    return p._children[0] if p._plain.is_run else p


def _can_be_root(p: Pattern) -> bool:
    return bool(_P.can_match_call(_element(p)._plain))


def _names(root: Pattern) -> tuple[set[str], set[str]]:
    """A root's capture names: those with one value per binding it matches,
    and those inside runs of it."""
    once: set[str] = set()
    in_runs: set[str] = set()
    seen: set[tuple[int, bool]] = set()
    todo = [(_element(root), False)]
    while todo:
        p, inside = todo.pop()
        if (id(p), inside) in seen:
            continue
        seen.add((id(p), inside))
        (in_runs if inside else once).add(p._capture_name())
        todo.extend((c, inside or c._plain.is_run) for c in p._children)
    return once, in_runs


def _keys(roots: tuple[Pattern, ...]) -> dict[str, list[Any]]:
    """For each capture name of the roots, what the rewriter's dict files its
    value under: every pattern object with that name, and the name itself
    when it was given with name=."""
    keys: dict[str, list[Any]] = {}
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        p = todo.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        keys.setdefault(p._capture_name(), []).append(p)
        todo.extend(p._children)
    for name, ks in keys.items():
        if not name.startswith("%"):
            ks.append(name)
    return keys


def _check_shared(roots: tuple[Pattern, ...]) -> None:
    """A pattern two roots share must not sit in a run of one (where it takes
    one value per element)."""
    counts: dict[str, int] = {}
    in_runs: dict[str, Pattern] = {}
    for r in roots:
        once, runs = _names(r)
        for name in once | runs:
            counts[name] = counts.get(name, 0) + 1
        for name in runs:
            in_runs.setdefault(name, r)
    for name, r in in_runs.items():
        if counts[name] > 1:
            shown = name if not name.startswith("%") else repr(r._objects()[name])
            raise Error(f"PatternContext: {shown} is shared by roots but inside a run of {r!r}, where it takes "
                        "one value per element")


def _end(p: Pattern, once: set[str]) -> str:
    """The capture name an edge's end stands for (a repeated root: its element)."""
    name = _element(p)._capture_name()
    if name not in once:
        raise Error(f"PatternContext: the edge end {p!r} is in no root of the context (or only inside a run); "
                    "roots are the patterns made in it that can match a call and are no operand of another")
    return name


def _edge_ends(edge: Edge, once: set[str]) -> tuple[str, str, int, bool]:
    """An edge as the C++ graph pattern takes it: its ends' capture names."""
    p, q, index, only = edge
    source, target = _end(p, once), _end(q, once)
    if source == target:
        raise Error(f"PatternContext: the edge {_edge_text(edge)} joins a pattern to itself")
    return source, target, -1 if index is None else index, only


def _edge_text(edge: Edge) -> str:
    p, q, index, only = edge
    arrow = "only_used_by" if only else "used_by"
    return f"{p!r} {arrow} {q!r}" + ("" if index is None else f" (arg {index})")
