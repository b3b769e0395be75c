"""The alignment behind ``aj.viz.diff``: two versions of a function read
from their printed text, their params, bindings and return matched up.

Each binding's value is a list of tokens in which a var is replaced by its
identity: an identity is shared by a before var and an after var once they
are aligned. A binding's key is its type and its value's tokens, so an after
binding whose key equals an unaligned before binding's computes the same
value (same op, attrs and constants, over aligned operands) whatever the
names. Two walks
over the after bindings, in order:
  1. align each to the first unaligned before binding of the same key (an
     aligned var's users can then align by value too);
  2. the same, and a binding left unaligned is paired with the unaligned
     before binding of its var's name, as "changed" (their identities
     joined, so their users can still align by value).
Rows then follow the longest chain of aligned pairs in order on both sides
(patience LIS, n log n); a pair crossing that chain shows as removed and
added. Linear but for the LIS."""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

_BINDING = re.compile(r"^    ([A-Za-z_][\w.]*): (.*?) = (.*)$")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.]*|\s+|.')


class Line(NamedTuple):
    """One part of a function as printed: ``name: type = value`` for a
    binding, ``name: type`` for a param (value ""), the return (name
    "return", type "")."""

    name: str
    type: str
    value: str

    @property
    def text(self) -> str:
        if self.name == "return":
            return f"return {self.value}"
        return f"{self.name}: {self.type}" + (f" = {self.value}" if self.value else "")

    @property
    def short(self) -> str:
        """The text without the type."""
        if self.name == "return":
            return f"return {self.value}"
        return f"{self.name} = {self.value}" if self.value else self.name


class Row(NamedTuple):
    """A row of a diff: ``kind`` is "same", "changed", "removed" or
    "added"; ``part`` "attrs", "param", "binding" or "return"; ``before``
    and ``after`` the lines (None on the side that has none)."""

    function: str
    part: str
    kind: str
    before: Line | None
    after: Line | None


class Parsed(NamedTuple):
    attrs: str
    params: list[Line]
    bindings: list[Line]
    ret: Line


def parse_function(script: str) -> Parsed:
    """A function's printed text as its attrs line, params, bindings and return."""
    lines = script.rstrip("\n").split("\n")
    attrs = lines[0][len("@function"):] if lines and lines[0].startswith("@function") else ""
    head = next((line for line in lines if line.startswith("def ")), "")
    bindings, ret = [], Line("return", "", "")
    for line in lines:
        m = _BINDING.match(line)
        if m:
            bindings.append(Line(*m.groups()))
        elif line.startswith("    return "):
            ret = Line("return", "", line[len("    return "):])
    return Parsed(attrs, _params(head), bindings, ret)


def _params(head: str) -> list[Line]:
    """The params of a ``def name(p: T, ...) -> R:`` line."""
    start = head.find("(")
    if start < 0:
        return []
    depth, parts, current = 0, [], []
    for ch in head[start + 1:]:
        if depth == 0 and ch in ",)":
            parts.append("".join(current).strip())
            current = []
            if ch == ")":
                break
            continue
        depth += (ch in "([") - (ch in ")]")
        current.append(ch)
    out = []
    for p in parts:
        name, _, type_ = p.partition(": ")
        if name:
            out.append(Line(name, type_, ""))
    return out


def _tokens(value: str, names: set[str]) -> list[tuple[bool, str]]:
    """The value's tokens, each (is a var name, text); spaces dropped. An
    identifier followed by "(" (an op) or "=" (an attr name) is not a var."""
    raw = [t for t in _TOKEN.findall(value) if not t.isspace()]
    out = []
    for i, t in enumerate(raw):
        follows = raw[i + 1] if i + 1 < len(raw) else ""
        out.append((t in names and follows not in ("(", "="), t))
    return out


class _Side:
    """One version of a function: each var's identity, and each binding's tokens."""

    def __init__(self, parsed: Parsed, tag: str) -> None:
        names = {p.name for p in parsed.params} | {b.name for b in parsed.bindings}
        self.ids = {name: f"{tag}:{name}" for name in names}
        self.tokens = [_tokens(b.value, names) for b in parsed.bindings]
        self.ret_tokens = _tokens(parsed.ret.value, names)

    def key(self, type_: str, tokens: list[tuple[bool, str]]) -> tuple:
        return (type_, *(self.ids[t] if is_var else t for is_var, t in tokens))


def align(function: str, before: Parsed, after: Parsed) -> list[Row]:
    """The rows of the diff of two versions of `function`."""
    left, right = _Side(before, "b"), _Side(after, "a")
    rows = [_attrs_row(function, before, after)] if before.attrs or after.attrs else []
    rows += _param_rows(function, before.params, after.params, left, right)
    pairs, changed = _match_bindings(before.bindings, after.bindings, left, right)
    rows += _binding_rows(function, before.bindings, after.bindings, pairs, changed)
    same_ret = left.key("", left.ret_tokens) == right.key("", right.ret_tokens)
    rows.append(Row(function, "return", "same" if same_ret else "changed", before.ret, after.ret))
    return rows


def one_side(function: str, parsed: Parsed, kind: str) -> list[Row]:
    """The rows of a function only one side has, all `kind` ("removed" or "added")."""
    lines = ([Line("@function", "", parsed.attrs)] if parsed.attrs else []) + parsed.params + parsed.bindings + \
        [parsed.ret]
    parts = (["attrs"] if parsed.attrs else []) + ["param"] * len(parsed.params) + \
        ["binding"] * len(parsed.bindings) + ["return"]
    if kind == "removed":
        return [Row(function, part, kind, line, None) for part, line in zip(parts, lines)]
    return [Row(function, part, kind, None, line) for part, line in zip(parts, lines)]


def _attrs_row(function: str, before: Parsed, after: Parsed) -> Row:
    lb = Line("@function", "", before.attrs) if before.attrs else None
    la = Line("@function", "", after.attrs) if after.attrs else None
    kind = "same" if before.attrs == after.attrs else "changed" if lb and la else "removed" if lb else "added"
    return Row(function, "attrs", kind, lb, la)


def _param_rows(function: str, before: list[Line], after: list[Line], left: _Side, right: _Side) -> list[Row]:
    """Params aligned by name, the rest by position; aligned params share an identity."""
    after_names = {p.name for p in after}
    before_names = {p.name for p in before}
    rest_before = [p for p in before if p.name not in after_names]
    rest_after = iter(p for p in after if p.name not in before_names)
    partner = {p.name: p for p in after if p.name in before_names}
    for p in rest_before:
        q = next(rest_after, None)
        if q is not None:
            partner[p.name] = q
    rows, shown = [], set()
    for p in before:
        q = partner.get(p.name)
        if q is None:
            rows.append(Row(function, "param", "removed", p, None))
            continue
        right.ids[q.name] = left.ids[p.name]
        shown.add(q.name)
        rows.append(Row(function, "param", "same" if p == q else "changed", p, q))
    rows += [Row(function, "param", "added", None, q) for q in after if q.name not in shown]
    return rows


def _match_bindings(before: list[Line], after: list[Line], left: _Side, right: _Side) -> tuple[list[int], set[int]]:
    """For each after binding, the before binding it aligns with (-1 for
    none), and the after bindings whose pair is "changed"."""
    match = [-1] * len(after)
    taken = [False] * len(before)
    changed: set[int] = set()
    by_key: dict[tuple, list[int]] = {}
    for i in range(len(before) - 1, -1, -1):
        by_key.setdefault(left.key(before[i].type, left.tokens[i]), []).append(i)
    by_name = {b.name: i for i, b in enumerate(before)}

    def pair(j: int, i: int) -> None:
        match[j], taken[i] = i, True
        right.ids[after[j].name] = left.ids[before[i].name]

    for names in (False, True):
        for j, b in enumerate(after):
            if match[j] >= 0:
                continue
            candidates = by_key.get(right.key(b.type, right.tokens[j]), [])
            while candidates and taken[candidates[-1]]:
                candidates.pop()
            if candidates:
                pair(j, candidates.pop())
            elif names and b.name in by_name and not taken[by_name[b.name]]:
                pair(j, by_name[b.name])
                changed.add(j)
    return match, changed


def _in_order(match: list[int]) -> set[int]:
    """The after indices of a longest chain of pairs increasing on both sides."""
    tails: list[int] = []        # tails[k]: the least before index ending a chain of k + 1
    tail_at: list[int] = []      # the after index of that chain's end
    previous = [-1] * len(match)
    for j, i in enumerate(match):
        if i < 0:
            continue
        k = bisect.bisect_left(tails, i)
        previous[j] = tail_at[k - 1] if k else -1
        if k == len(tails):
            tails.append(i)
            tail_at.append(j)
        else:
            tails[k], tail_at[k] = i, j
    chain, j = set(), tail_at[-1] if tail_at else -1
    while j >= 0:
        chain.add(j)
        j = previous[j]
    return chain


def _binding_rows(function: str, before: list[Line], after: list[Line], match: list[int],
                  changed: set[int]) -> list[Row]:
    """Rows in the order of the chain of pairs; between two pairs of it, the
    before bindings left out (removed), then the after ones (added)."""
    chain = _in_order(match)
    rows: list[Row] = []
    added: list[Row] = []
    i = 0
    for j, b in enumerate(after):
        if j not in chain:
            added.append(Row(function, "binding", "added", None, b))
            continue
        anchor = match[j]
        rows += [Row(function, "binding", "removed", before[k], None) for k in range(i, anchor)]
        rows += added
        added = []
        i = anchor + 1
        rows.append(Row(function, "binding", "changed" if j in changed else "same", before[anchor], b))
    rows += [Row(function, "binding", "removed", before[k], None) for k in range(i, len(before))]
    return rows + added
