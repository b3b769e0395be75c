"""``rewrite_call``: every call a pattern matches replaced by what a Python
function builds from the captures, on the C++ rewriter (transform/rewrite.h)."""

from __future__ import annotations

from typing import Any, Callable

from .. import _core
from ..builder import _stack, as_expr
from ..errors import Error
from ..transform import DeadCodeElimination
from .patterns import Captures, Pattern, _P, _pattern_arg

__all__ = ["rewrite_call"]


class _CallMaker:
    """Stands for the active FunctionBuilder while a rewriter runs: ``aj.op``
    calls make call exprs, which the rewriter binds where they replace."""

    def _emit_call(self, op: str, args: list[Any], attrs: dict[str, Any], name: str) -> Any:
        return _core.Call(op, args, attrs)

    def emit(self, value: Any, name: str = "") -> Any:
        return as_expr(value)


def rewrite_call(pattern: Pattern, rewriter: Callable[[Any, Captures], Any], mod: Any, *,
                 max_rounds: int = 8) -> Any:
    """``mod`` with every call ``pattern`` matches replaced by
    ``rewriter(expr, captures)``: an expr built with ``aj.op`` from the
    captures, or ``expr`` itself (or None) for no rewrite. Replacements are
    rewritten themselves, to a fixed point; dead bindings are removed.

    A replacement of another type than the call's is an aj.TypeInferenceError
    naming the binding; rewrites that do not settle in ``max_rounds`` rounds
    an aj.TransformError; an exception in ``rewriter`` propagates. ``mod`` is
    never changed."""
    pattern = _pattern_arg(pattern, "rewrite_call: pattern")
    if not callable(rewriter):
        raise Error(f"rewrite_call: the rewriter must be callable, got {type(rewriter).__name__}")
    if not isinstance(mod, _core.Module):
        raise Error(f"rewrite_call: expected an aj.Module, got {type(mod).__name__}")
    if not _P.can_match_call(pattern._plain):
        return mod
    objects = pattern._objects()
    fired = []

    def replacement(root: Any, raw: dict[str, Any]) -> Any:
        out = rewriter(root, Captures(raw, objects))
        if out is not None and out is not root and not fired:
            fired.append(True)
        return out

    rule = (getattr(rewriter, "__name__", "rewriter"), f"{pattern!r} -> rewriter", pattern._core_tagged(), replacement)
    stack = _stack()
    stack.append(_CallMaker())
    try:
        out = _P.rewrite(mod, [rule], max_rounds)
    finally:
        stack.pop()
    return DeadCodeElimination()(out) if fired else mod
