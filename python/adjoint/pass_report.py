"""What a pass did to a module, as ``pass_.explain(mod)`` returns it: the
output module and, per pass or stage that ran, how often each of its rules
fired (or how many bindings it merged, removed, lifted, ...). The counts
come from the C++ passes as they run (``_core.collect_pass_stats``), not
from comparing texts."""

from __future__ import annotations

import html
from typing import Any, Callable

from . import _core
from .ir import Module

__all__ = ["PassReport"]


class PassReport:
    """``pass_.explain(mod)``: ``.module`` is ``pass_(mod)``; ``.sections``
    lists ``(pass_name, {what: count})`` in the order the passes (and the
    stages of Gradient) ran; ``.counts`` is the same as a dict, a name seen
    again suffixed ``" #2"``, ``" #3"``, ... Only what happened is counted:
    a pass that changed nothing has an empty dict. ``str(report)`` is one
    line per pass, ``SimplifyGradient: fold_permutes x6, bindings removed x3``."""

    __slots__ = ("module", "sections")

    def __init__(self, module: Module, sections: list[tuple[str, dict[str, int]]]) -> None:
        self.module = module
        self.sections = sections

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for name, counts in self.sections:
            key, k = name, 1
            while key in out:
                k += 1
                key = f"{name} #{k}"
            out[key] = dict(counts)
        return out

    @property
    def changed(self) -> bool:
        """Whether any pass counted a change."""
        return any(counts for _, counts in self.sections)

    def lines(self) -> list[str]:
        """One line per pass: its name, then ``what xN`` for each count, or "no changes"."""
        return [f"{name}: " + (", ".join(f"{what} x{n}" for what, n in counts.items()) or "no changes")
                for name, counts in self.sections]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = []
        for name, counts in self.sections:
            items = list(counts.items()) or [("no changes", None)]
            for i, (what, n) in enumerate(items):
                head = f'<th scope="row" rowspan="{len(items)}" style="text-align:left">{html.escape(name)}</th>' \
                    if i == 0 else ""
                count = "" if n is None else str(n)
                rows.append(f'<tr>{head}<td style="text-align:left">{html.escape(what)}</td>'
                            f'<td style="text-align:right">{count}</td></tr>')
        return ('<table class="adjoint-pass-report"><thead><tr><th>pass</th><th>what</th><th>count</th></tr>'
                f'</thead><tbody>{"".join(rows)}</tbody></table>')


def explain(name: str, run: Callable[[], Any]) -> PassReport:
    """The report of ``run()`` (a pass applied to a module), named ``name`` when no pass in it opened a section."""
    module, sections = _core.collect_pass_stats(run)
    out = [(pass_name, dict(counts)) for pass_name, counts in sections]
    return PassReport(module, out or [(name, {})])
