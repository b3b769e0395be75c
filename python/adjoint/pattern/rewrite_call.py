"""``rewrite_call``: every call a pattern matches replaced by what a Python
function builds from the captures, on the C++ rewriter (transform/rewrite.h).
``_python_rule`` and ``_ops_make_calls`` are the machinery, shared with
``P.Rewriter.from_pattern`` (rewriter.py)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

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


@contextmanager
def _ops_make_calls() -> Iterator[None]:
    """Within it, ``aj.op`` calls make unbound call exprs (what rewriters return)."""
    stack = _stack()
    stack.append(_CallMaker())
    try:
        yield
    finally:
        stack.pop()


def _python_rule(pattern: Pattern, rewriter: Callable[[Any, Captures], Any], name: str) -> tuple:
    """The C++ rewriter's form of a Python rule: (name, "pattern -> name",
    the C++ pattern, replacement(root, raw captures)); ``rewriter`` sees the
    captures as ``Captures``. Run it within ``_ops_make_calls``."""
    objects = pattern._objects()

    def replacement(root: Any, raw: dict[str, Any]) -> Any:
        return rewriter(root, Captures(raw, objects))

    return (name, f"{pattern!r} -> {name}", pattern._core_tagged(), replacement)


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
    fired = []

    def tracked(root: Any, captures: Captures) -> Any:
        out = rewriter(root, captures)
        if out is not None and out is not root and not fired:
            fired.append(True)
        return out

    rule = _python_rule(pattern, tracked, getattr(rewriter, "__name__", "rewriter"))
    with _ops_make_calls():
        out = _P.rewrite(mod, [rule], max_rounds)
    return DeadCodeElimination()(out) if fired else mod
