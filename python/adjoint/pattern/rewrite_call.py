"""``rewrite_call``: every call a pattern matches replaced by what a Python
function builds from the captures, on the C++ rewriter (transform/rewrite.h).
``_python_rule`` and ``_ops_make_calls`` are the machinery, shared with
``P.Rewriter.from_pattern`` (rewriter.py)."""

from __future__ import annotations

from contextlib import contextmanager
from numbers import Integral
from typing import Any, Callable, Iterator, Sequence

from .. import _core
from ..analysis import verify
from ..builder import _CallMaker, _stack
from ..errors import Error, VerifyError
from .patterns import Captures, Pattern, _P, _pattern_arg

__all__ = ["rewrite_call"]


@contextmanager
def _ops_make_calls() -> Iterator[None]:
    """Within it, ``aj.op`` calls make unbound call exprs (what rewriters return)."""
    stack = _stack()
    maker = _CallMaker()
    stack.append(maker)
    try:
        yield
    finally:
        stack.remove(maker)  # not pop: a rewriter may have left a builder of its own on the stack


def _python_rule(pattern: Pattern, rewriter: Callable[[Any, Captures], Any], name: str) -> tuple:
    """The C++ rewriter's form of a Python rule: (name, "pattern -> name",
    the C++ pattern, replacement(root, raw captures)); ``rewriter`` sees the
    captures as ``Captures``; returning None, the root or an expr written
    alike is no rewrite. Run it within ``_ops_make_calls``."""
    objects = pattern._objects()

    def replacement(root: Any, raw: dict[str, Any]) -> Any:
        out = rewriter(root, Captures(raw, objects))
        return None if out is None or _same_value(out, root) else out

    return (name, f"{pattern!r} -> {name}", pattern._core_tagged(), replacement)


def rewrite_call(pattern: Pattern, rewriter: Callable[[Any, Captures], Any], mod: Any, *,
                 max_rounds: int = 8) -> Any:
    """``mod`` with every call ``pattern`` matches replaced by
    ``rewriter(expr, captures)``: an expr built with ``aj.op`` from the
    captures, or ``expr`` itself (or an expr written alike, seen through the
    bindings, or None) for no rewrite. Replacements are rewritten
    themselves, to a fixed point; the bindings left dead are removed from
    the functions that changed; with no rewrite, ``mod`` itself is returned.
    ``mod`` may also be an ``aj.Function`` (as TVM's ``rewrite_call``
    takes), rewritten alone and given back as one.

    A replacement of another type than the call's is an aj.TypeInferenceError
    naming the binding; one using vars the function does not bind an
    aj.VerifyError naming the rewriter; rewrites that do not settle in
    ``max_rounds`` rounds an aj.TransformError; an exception in ``rewriter``
    propagates. ``mod`` is never changed."""
    pattern = _pattern_arg(pattern, "rewrite_call: pattern")
    if not callable(rewriter):
        raise Error(f"rewrite_call: the rewriter must be callable, got {type(rewriter).__name__}")
    if isinstance(mod, _core.Function):
        alone = _core.Module({mod.name: mod})
        out = rewrite_call(pattern, rewriter, alone, max_rounds=max_rounds)
        return mod if out is alone else out[mod.name]
    if not isinstance(mod, _core.Module):
        raise Error(f"rewrite_call: expected an aj.Module or aj.Function, got {type(mod).__name__}")
    max_rounds = checked_max_rounds("rewrite_call", max_rounds)
    if not _P.can_match_call(pattern._plain):
        return mod
    name = rule_name_of(rewriter)
    with _ops_make_calls():
        out = _P.rewrite(mod, [_python_rule(pattern, rewriter, name)], max_rounds)
    return out if out is mod else verified_rewrite("rewrite_call", [name], out)


def rule_name_of(fn: Any) -> str:
    """The name a Python rule takes from its function: ``fn.__name__`` when
    that is a str the C++ rule can hold (a callable object may have none, or
    set it to anything), else "rewriter"."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name:
        return "rewriter"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "rewriter"
    return name


def checked_max_rounds(who: str, max_rounds: Any) -> int:
    """max_rounds as an int, or an aj.Error naming ``who``: the C++ rewriters
    count rounds in 32 bits."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, Integral) or not 1 <= max_rounds < 2**31:
        raise Error(f"{who}: max_rounds must be an int from 1 to 2**31 - 1, got {max_rounds!r}")
    return int(max_rounds)


def verified_rewrite(who: str, rule_names: Sequence[str], out: Any) -> Any:
    """``out``, the module Python replacements gave, once it verifies; else
    an aj.VerifyError naming ``who`` and the rules."""
    try:
        verify(out)
    except VerifyError as e:
        names = ", ".join(f"'{n}'" for n in rule_names)
        raise VerifyError(f"{who}: the replacements of rewriter {names} leave the module malformed: {e}") from None
    return out


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
