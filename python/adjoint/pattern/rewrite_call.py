"""``rewrite_call``: every call a pattern matches replaced by what a Python
function builds from the captures, on the C++ rewriter (transform/rewrite.h)."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Callable

from .. import _core
from ..analysis import verify
from ..builder import _stack, as_expr
from ..errors import Error, VerifyError
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
    captures, or ``expr`` itself (or an expr written alike, or None) for no
    rewrite. Replacements are rewritten themselves, to a fixed point; dead
    bindings are removed; with no rewrite, ``mod`` itself is returned.

    A replacement of another type than the call's is an aj.TypeInferenceError
    naming the binding; one using vars the function does not bind an
    aj.VerifyError naming the rewriter; rewrites that do not settle in
    ``max_rounds`` rounds an aj.TransformError; an exception in ``rewriter``
    propagates. ``mod`` is never changed."""
    pattern = _pattern_arg(pattern, "rewrite_call: pattern")
    if not callable(rewriter):
        raise Error(f"rewrite_call: the rewriter must be callable, got {type(rewriter).__name__}")
    if not isinstance(mod, _core.Module):
        raise Error(f"rewrite_call: expected an aj.Module, got {type(mod).__name__}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, Integral) or not 1 <= max_rounds < 2**31:
        raise Error(f"rewrite_call: max_rounds must be an int from 1 to 2**31 - 1, got {max_rounds!r}")
    if not _P.can_match_call(pattern._plain):
        return mod
    objects = pattern._objects()
    fired = False

    def replacement(root: Any, raw: dict[str, Any]) -> Any:
        nonlocal fired
        out = rewriter(root, Captures(raw, objects))
        if out is None or _same_value(out, root):
            return None
        fired = True
        return out

    name = getattr(rewriter, "__name__", "rewriter")
    rule = (name, f"{pattern!r} -> rewriter", pattern._core_tagged(), replacement)
    stack = _stack()
    maker = _CallMaker()
    stack.append(maker)
    try:
        out = _P.rewrite(mod, [rule], int(max_rounds))
    finally:
        stack.remove(maker)
    if not fired:
        return mod
    try:
        verify(out)
    except VerifyError as e:
        raise VerifyError(f"rewrite_call: the replacements of rewriter '{name}' leave the module malformed: {e}") from None
    return DeadCodeElimination()(out)


def _same_value(a: Any, b: Any) -> bool:
    """Whether exprs a and b are one value written alike: the same vars, equal
    constants, and calls, tuples and items of such (a rewriter that rebuilds
    the call it was given rewrites nothing, as in TVM's rewrite_call)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, _core.Call):
        return a.op == b.op and a.attrs == b.attrs and _same_values(a.args, b.args)
    if isinstance(a, _core.Tuple):
        return _same_values(a.fields, b.fields)
    if isinstance(a, _core.TupleGetItem):
        return a.index == b.index and _same_value(a.tuple, b.tuple)
    if isinstance(a, _core.Constant):
        return a.type == b.type and a.data.tobytes() == b.data.tobytes()
    return False  # two vars


def _same_values(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
