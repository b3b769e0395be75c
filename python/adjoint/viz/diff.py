"""``aj.viz.diff(before, after)``: two versions of a module (or function)
side by side, aligned by binding (the alignment is in _align.py), with
removed, added and changed bindings marked. The rows are computed when the
diff is made; showing them (text or HTML) only formats strings and never
raises, and cuts a long function as module display does (its first and
last rows, and a line saying how many of each kind were left out)."""

from __future__ import annotations

import html
from collections import Counter
from typing import NamedTuple

from ..display import HTML_HEAD, HTML_LIMIT, HTML_TAIL, clip_line
from ..errors import Error
from ..ir import Function, Module
from ._align import Line, Row, align, one_side, parse_function

__all__ = ["diff", "Diff", "Row", "Line"]

# Marks of the text view, by row kind.
_MARKS = {"same": " ", "changed": "~", "removed": "-", "added": "+"}
# Width of each column of the text view; longer lines end in "…".
_TEXT_WIDTH = 60


class FunctionDiff(NamedTuple):
    """The rows of one function: ``status`` is "same", "changed", "removed" or "added"."""

    name: str
    status: str
    rows: list[Row]


class Diff:
    """What ``aj.viz.diff`` returns. ``.functions``: a FunctionDiff per
    function (those of ``before`` in order, then those only ``after`` has);
    ``.rows``: every row of every function, each a ``Row(function, part,
    kind, before, after)`` with kind "same", "changed", "removed" or
    "added" and part "attrs", "param", "binding" or "return";
    ``.counts``: rows per kind. ``str()`` shows both sides in columns,
    marked ``-`` removed, ``+`` added, ``~`` changed; in Jupyter, a table."""

    def __init__(self, functions: list[FunctionDiff]) -> None:
        self.functions = functions

    @property
    def rows(self) -> list[Row]:
        return [row for f in self.functions for row in f.rows]

    @property
    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(_MARKS, 0)
        for row in self.rows:
            out[row.kind] += 1
        return out

    def __str__(self) -> str:
        try:
            return _text(self)
        except Exception as e:  # a display never raises
            return f"<aj.viz.diff: could not be shown: {type(e).__name__}: {e}>"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        try:
            return _html(self)
        except Exception as e:  # a display never raises
            return f"<pre>{html.escape(f'aj.viz.diff: could not be shown: {type(e).__name__}: {e}')}</pre>"


def diff(before: Module | Function, after: Module | Function) -> Diff:
    """``before`` and ``after`` side by side, aligned by binding: bindings
    that compute the same value (op, attrs and operands aligned before)
    align whatever their names; a binding of the same name and another value
    is "changed"; the others are "removed" or "added". Both modules, or
    both functions (compared whatever their names). Anything else is an
    ``aj.Error`` naming what it got."""
    pairs = _function_pairs(before, after)
    return Diff([_function_diff(name, b, a) for name, b, a in pairs])


def _function_pairs(before: object, after: object) -> list[tuple[str, Function | None, Function | None]]:
    for what, arg in (("before", before), ("after", after)):
        if not isinstance(arg, (Module, Function)):
            raise Error(f"aj.viz.diff: {what} must be an aj.Module or aj.Function, got {type(arg).__name__}")
    if isinstance(before, Function) and isinstance(after, Function):
        name = before.name if before.name == after.name else f"{before.name} / {after.name}"
        return [(name, before, after)]
    if isinstance(before, Function) or isinstance(after, Function):
        raise Error(f"aj.viz.diff: before and after must both be modules or both functions, got "
                    f"{type(before).__name__} and {type(after).__name__}")
    left, right = dict(before.functions), dict(after.functions)
    return [(name, fn, right.get(name)) for name, fn in left.items()] + \
        [(name, None, fn) for name, fn in right.items() if name not in left]


def _function_diff(name: str, before: Function | None, after: Function | None) -> FunctionDiff:
    if after is None:
        return FunctionDiff(name, "removed", one_side(name, parse_function(before.script()), "removed"))
    if before is None:
        return FunctionDiff(name, "added", one_side(name, parse_function(after.script()), "added"))
    rows = align(name, parse_function(before.script()), parse_function(after.script()))
    return FunctionDiff(name, "same" if all(r.kind == "same" for r in rows) else "changed", rows)


# ---- the rows shown ----

def _shown(rows: list[Row]) -> tuple[list[Row], str | None, list[Row]]:
    """(first rows, note, last rows): every row and no note, or over
    HTML_LIMIT rows the first HTML_HEAD and the last HTML_TAIL with a note
    saying how many of each kind were left out, as module display cuts."""
    if len(rows) <= HTML_LIMIT:
        return rows, None, []
    cut = Counter(r.kind for r in rows[HTML_HEAD:len(rows) - HTML_TAIL])
    kinds = ", ".join(f"{cut[kind]:,} {kind}" for kind in _MARKS if cut[kind])
    note = f"... {cut.total():,} of {len(rows):,} rows not shown ({kinds}) ..."
    return rows[:HTML_HEAD], note, rows[len(rows) - HTML_TAIL:]


# ---- text ----

def _cell(line: Line | None, width: int) -> str:
    text = "" if line is None else line.short
    return text if len(text) <= width else text[:width - 1] + "…"


def _text(d: Diff) -> str:
    out = []
    for f in d.functions:
        head, note, tail = _shown(f.rows)
        left = [_cell(r.before, _TEXT_WIDTH) for r in head + tail]
        width = min(_TEXT_WIDTH, max([len(c) for c in left] + [len("before")]))
        lines = [f"{_MARKS[r.kind]} {cell:<{width}} | {_cell(r.after, _TEXT_WIDTH)}".rstrip()
                 for r, cell in zip(head + tail, left)]
        out.append(f"function {f.name} ({f.status})")
        out += lines if note is None else [*lines[:len(head)], f"  {note}", *lines[len(head):]]
    return "\n".join(out) if out else "(no functions)"


# ---- HTML ----

# Row backgrounds: translucent, so they read on light and dark backgrounds.
# Cells align left over Jupyter's own table style (right-aligned, more specific).
_STYLE = """<style>
table.aj-diff{border-collapse:collapse;font-family:monospace;font-size:12px}
table.aj-diff td,table.aj-diff th{padding:1px 6px;text-align:left !important;vertical-align:top;white-space:pre-wrap}
table.aj-diff th.aj-fn{border-top:1px solid rgba(128,128,128,.5);padding-top:6px}
table.aj-diff tr.aj-removed td.aj-before{background:rgba(220,50,50,.18)}
table.aj-diff tr.aj-added td.aj-after{background:rgba(40,160,60,.18)}
table.aj-diff tr.aj-changed td.aj-before,table.aj-diff tr.aj-changed td.aj-after{background:rgba(210,160,20,.2)}
table.aj-diff td.aj-mark{opacity:.7}
table.aj-diff span.aj-type{opacity:.55}
</style>"""


def _html_line(line: Line | None) -> str:
    if line is None:
        return ""
    if line.name == "return" or line.name == "@function":
        return html.escape(clip_line(line.text if line.name == "return" else f"@function{line.value}"))
    value = f" = {html.escape(clip_line(line.value))}" if line.value else ""
    return f'{html.escape(line.name)}<span class="aj-type">: {html.escape(clip_line(line.type))}</span>{value}'


def _html_row(r: Row) -> str:
    return (f'<tr class="aj-{r.kind}" title="{r.kind}"><td class="aj-mark">{_MARKS[r.kind].strip()}</td>'
            f'<td class="aj-before">{_html_line(r.before)}</td><td class="aj-after">{_html_line(r.after)}</td></tr>')


def _html(d: Diff) -> str:
    body = []
    for f in d.functions:
        head, note, tail = _shown(f.rows)
        body.append(f'<tr><th class="aj-fn" colspan="3">function {html.escape(f.name)} ({f.status})</th></tr>')
        body += [_html_row(r) for r in head]
        if note is not None:
            body.append(f'<tr class="aj-cut"><td class="aj-mark"></td><td colspan="2">{html.escape(note)}</td></tr>')
        body += [_html_row(r) for r in tail]
    return (f'<div class="aj-diff">{_STYLE}<table class="aj-diff"><thead><tr><th></th><th>before</th>'
            f'<th>after</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>')
