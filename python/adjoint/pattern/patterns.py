"""The pattern vocabulary (DESIGN.md §5): immutable patterns on the C++
matcher, what a match captured, and ``match``. Rewriting with them lives in
``rewrite_call.py`` and the other modules of this package.

Every pattern made while a ``P.PatternContext`` (context.py) is active is
registered in the innermost one, and ``p.used_by(q)`` adds an edge to it;
the stack of active contexts (one per thread) lives here so that patterns
can reach it without importing the context module."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from numbers import Integral
from typing import Any, Callable, Iterator, Sequence

from .. import _core
from ..errors import Error

_P = _core._pattern

__all__ = [
    "Captures", "Pattern", "is_const", "is_op", "is_tuple", "is_tuple_get_item", "is_var", "match", "repeated",
    "wildcard",
]


class Pattern:
    """An immutable pattern. Combine with ``|``, ``&``, ``~``; constrain with
    ``has_dtype``, ``has_shape``, ``has_attr``; ``match`` an expr.

    A pattern object used twice in one pattern matches one value in both
    places, as one capture name does."""

    __slots__ = ("_build", "_children", "_name", "_plain", "_tagged", "_tagged_checked")

    def __init__(self, build: Callable[..., Any], children: Sequence["Pattern"] = (), name: str | None = None):
        self._build = build
        self._children = tuple(children)
        self._name = _check_name(name)
        self._tagged = None
        self._tagged_checked = False
        core = build(*(c._plain for c in self._children))
        self._plain = core.named(name) if name is not None else core
        contexts = _active_contexts()
        if contexts:
            contexts[-1]._register(self)

    def _capture_name(self) -> str:
        if self._name is not None:
            return self._name
        return f"%{id(self)}"

    def _core_tagged(self) -> Any:
        """The C++ pattern with every node named: its own name, or one made
        for it. Built children first without recursion (any depth), with
        the name checks put off until the whole is built: one check of this
        root, linear in its distinct objects, instead of one per node."""
        if not self._tagged_checked:
            try:
                with _P._DeferredNameChecks():
                    self._build_tagged()
                _P.check_names(self._tagged)
            except Error as e:
                raise self._readable(e) from None
            self._tagged_checked = True
        return self._tagged

    def _build_tagged(self) -> None:
        """Sets ``_tagged`` on this pattern and every pattern inside it, in
        post-order over the distinct objects."""
        todo: list[tuple[Pattern, bool]] = [(self, False)]
        while todo:
            p, children_done = todo.pop()
            if p._tagged is not None:
                continue
            if children_done:
                p._tagged = p._build(*(c._tagged for c in p._children)).named(p._capture_name())
                continue
            todo.append((p, True))
            todo.extend((c, False) for c in reversed(p._children) if c._tagged is None)

    def _readable(self, error: Error) -> Error:
        """``error`` (from the C++ pattern with every node named) told with the
        pattern as written: a made-up name means a pattern object used twice."""
        made_up = re.search(r"'(%\d+)' is used both inside and outside", str(error))
        if made_up is None:
            return error
        twice = self._objects()[made_up.group(1)]
        return Error(f"pattern {self!r}: the pattern object {twice!r} is used both inside and outside a repeated "
                     "run, or in two runs; one object matches one value, so use a new object in each place")

    def _objects(self) -> dict[str, "Pattern"]:
        """Every sub-pattern of this one by capture name (the first of the
        objects given one name)."""
        out: dict[str, Pattern] = {}
        seen: set[int] = set()
        todo = [self]
        while todo:
            p = todo.pop()
            if id(p) not in seen:
                seen.add(id(p))
                out.setdefault(p._capture_name(), p)
                todo.extend(reversed(p._children))  # in the order written
        return out

    def __or__(self, other: "Pattern") -> "Pattern":
        return Pattern(lambda a, b: a | b, [self, _pattern_arg(other, "|")])

    def __and__(self, other: "Pattern") -> "Pattern":
        return Pattern(lambda a, b: a & b, [self, _pattern_arg(other, "&")])

    def __ror__(self, other: Any) -> "Pattern":
        return _pattern_arg(other, "|") | self

    def __rand__(self, other: Any) -> "Pattern":
        return _pattern_arg(other, "&") & self

    def __invert__(self) -> "Pattern":
        return Pattern(lambda a: ~a, [self])

    def has_dtype(self, dtype: Any) -> "Pattern":
        """This pattern, on a tensor of this dtype only."""
        return Pattern(lambda a: a.has_dtype(dtype), [self])

    def has_shape(self, shape: Sequence[int | str]) -> "Pattern":
        """This pattern, on a tensor of this shape only (symbolic dims are strings: ``("n", 4)``)."""
        shape = tuple(shape) if isinstance(shape, list) else shape
        return Pattern(lambda a: a.has_shape(shape), [self])

    def has_attr(self, attrs: dict[str, Any]) -> "Pattern":
        """This pattern, on a call with these attrs only."""
        return Pattern(lambda a: a.has_attr(attrs), [self])

    def used_by(self, other: "Pattern", index: int | None = None) -> "Pattern":
        """An edge of the active ``P.PatternContext``: in a match, ``other``'s
        arg ``index`` (any arg when None) is this pattern's value (a field of
        a tuple arg counts). Returns ``other``, so edges chain:
        ``a.used_by(b).used_by(c)``."""
        return _add_edge(self, other, index, False)

    def only_used_by(self, other: "Pattern", index: int | None = None) -> "Pattern":
        """As ``used_by``, and moreover every use of this pattern's value is
        by ``other``'s match (and the function does not return it)."""
        return _add_edge(self, other, index, True)

    def match(self, expr: Any, fn: Any = None) -> "Captures | None":
        """The captures of this pattern on ``expr``, seeing through the bindings
        of ``fn`` (an ``aj.Function``; None: vars stand for themselves), or None."""
        try:
            raw = _P.match_expr(self._core_tagged(), expr, fn)
        except Error:
            _P.match_expr(self._plain, expr, fn)  # the same error, told with the pattern as written
            raise
        return None if raw is None else Captures(raw, self._objects())

    def __repr__(self) -> str:
        return repr(self._plain)


class Captures(Mapping):
    """What a match captured: each sub-pattern object that matched, and each
    name given with ``name=``, mapped to the expr it matched (a list for a
    run and for the patterns inside one). Patterns under ``~`` and on the
    side of ``|`` that failed capture nothing."""

    __slots__ = ("_raw", "_objects")

    def __init__(self, raw: dict[str, Any], objects: dict[str, Pattern]):
        self._raw = raw
        self._objects = objects

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, Pattern):
            return self._raw[key._capture_name()]
        if isinstance(key, str) and not key.startswith("%"):
            return self._raw[key]
        raise KeyError(key)

    def __contains__(self, key: Any) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[Any]:
        for name in self._raw:
            yield self._objects[name]
        for name in self._raw:
            if not name.startswith("%"):
                yield name

    def __len__(self) -> int:
        return sum(1 if name.startswith("%") else 2 for name in self._raw)

    def __repr__(self) -> str:
        return "Captures({" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "})"


_contexts = threading.local()


def _active_contexts() -> list[Any]:
    """The active PatternContexts of this thread, innermost last."""
    stack = getattr(_contexts, "stack", None)
    if stack is None:
        stack = _contexts.stack = []
    return stack


def _add_edge(source: Pattern, target: Any, index: Any, only: bool) -> Pattern:
    what = "only_used_by" if only else "used_by"
    target = _pattern_arg(target, what)
    if index is not None and (not isinstance(index, Integral) or isinstance(index, bool) or not 0 <= index < 2**31):
        raise Error(f"{what}: the arg index must be an int from 0 to 2**31 - 1, or None for any arg, got {index!r}")
    index = None if index is None else int(index)
    contexts = _active_contexts()
    if not contexts:
        raise Error(f"{source!r}.{what}({target!r}): no P.PatternContext is active; edges belong to one "
                    "(with P.PatternContext() as ctx: ...)")
    contexts[-1]._add_edge(source, target, index, only)
    return target


def _check_name(name: Any, what: str = "name=") -> str | None:
    if name is not None and (not isinstance(name, str) or not name or name.startswith("%")):
        raise Error(f"{what}: expected a non-empty str not starting with '%', got {name!r}")
    if name is not None:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as e:
            raise Error(f"{what}: the str holds a lone surrogate U+{ord(name[e.start]):04X} at index {e.start} "
                        "(no UTF-8 form)") from None
    return name


def _pattern_arg(value: Any, what: str) -> Pattern:
    if not isinstance(value, Pattern):
        raise Error(f"{what}: expected a pattern, got {type(value).__name__} ({value!r})")
    return value


def _patterns_arg(values: Any, what: str) -> list[Pattern]:
    if not isinstance(values, (list, tuple)):
        raise Error(f"{what}: expected a list of patterns, got {type(values).__name__}")
    return [_pattern_arg(v, f"{what}[{i}]") for i, v in enumerate(values)]


def wildcard(name: str | None = None) -> Pattern:
    """Any expr."""
    return Pattern(_P.wildcard, name=name)


def is_const(name: str | None = None) -> Pattern:
    """A constant."""
    return Pattern(_P.is_const, name=name)


def is_var(name: str | None = None) -> Pattern:
    """A var bound to nothing (a param); with ``name``, only vars of that name
    hint (as TVM's is_var). Name its capture with ``name=`` of a wrapping
    pattern, e.g. ``P.is_var() & P.wildcard(name="x")``."""
    hint = "" if name is None else _check_name(name, "is_var: name=")
    return Pattern(lambda: _P.is_var(hint))


class _OpPattern:
    """``is_op(op)``: call it with the patterns of the args and the attrs."""

    __slots__ = ("_op",)

    def __init__(self, op: str):
        if not isinstance(op, str):
            raise Error(f"is_op: expected an op name (str), got {type(op).__name__}")
        self._op = op

    def __call__(self, *args: Pattern, name: str | None = None, **attrs: Any) -> Pattern:
        what = f"is_op({self._op!r})"
        for i, a in enumerate(args):
            if not isinstance(a, Pattern):
                raise Error(f"{what}: argument {i} is {type(a).__name__} ({a!r}), not a pattern "
                            "(use P.wildcard(), P.is_const(), ... )")
        op = self._op
        return Pattern(lambda *a: _P.is_op(op, list(a), attrs), args, name=name)

    def __repr__(self) -> str:
        return f"is_op({self._op!r})"


def is_op(op: str) -> _OpPattern:
    """A call of ``op``: ``is_op("sum")(x, axis=1, name="s")`` (args are
    patterns, or runs of them from ``repeated``; attrs must be equal)."""
    return _OpPattern(op)


def is_tuple(fields: Sequence[Pattern], name: str | None = None) -> Pattern:
    """A tuple whose fields match ``fields`` (which may hold runs from ``repeated``)."""
    fields = _patterns_arg(fields, "is_tuple")
    return Pattern(lambda *f: _P.is_tuple(list(f)), fields, name=name)


def is_tuple_get_item(tuple_pattern: Pattern, index: int | None = None, name: str | None = None) -> Pattern:
    """Item ``index`` of a tuple matching ``tuple_pattern`` (None: any item)."""
    tuple_pattern = _pattern_arg(tuple_pattern, "is_tuple_get_item")
    if isinstance(index, Integral) and not isinstance(index, bool) and not 0 <= index < 2**31:
        raise Error(f"is_tuple_get_item: index {index} is out of range (0 to 2**31 - 1, or None for any item)")
    i = -1 if index is None else index
    return Pattern(lambda t: _P.is_tuple_get_item(t, i), [tuple_pattern], name=name)


def repeated(element: Pattern, name: str | None = None, count: str | None = None) -> Pattern:
    """A run of consecutive tuple fields or call args, each matching
    ``element``, of any length; an element of ``is_tuple`` or ``is_op(...)``.
    Captures a list. Two runs of one ``count`` name have one length."""
    element = _pattern_arg(element, "repeated")
    count_name = "" if count is None else _check_name(count, "repeated: count=")
    return Pattern(lambda e: _P.repeated(e, "", count_name), [element], name=name)


def match(pattern: Pattern, expr: Any, fn: Any = None) -> Captures | None:
    """``pattern.match(expr, fn)``."""
    return _pattern_arg(pattern, "match").match(expr, fn)
