"""``rewrite_bindings``: what a Python rewriter makes of each match of a
``P.PatternContext``, on the C++ graph matcher and rewriter
(pattern/graph.h, pattern/graph_rewrite.h); Python runs only the rewriter,
once per match."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from .. import _core
from ..errors import Error
from .context import PatternContext
from .patterns import _P
from .rewrite_call import _ops_make_calls, checked_max_rounds

__all__ = ["rewrite_bindings"]

Mapping.register(_P.FunctionBindings)


def rewrite_bindings(ctx: PatternContext, rewriter: Callable[[dict, Mapping], Any], mod: Any, *,
                     max_rounds: int = 64) -> Any:
    """``mod`` (an ``aj.Module``: every function; or an ``aj.Function``) with
    ``rewriter(matchings, bindings)`` applied to each match of ``ctx``.

    ``matchings`` is a dict from each pattern of the roots (and each
    ``name=``) to what it matched: a root to its binding's var, other
    patterns to the expr as written there; a repeated root, and the
    sub-patterns it does not share, to lists (one item per branch).
    ``bindings`` maps each var of the function to its value. The rewriter
    returns ``{var: new value}`` (exprs built with ``aj.op``, which may use
    vars bound later in the function), or ``{}`` / None for no rewrite.

    One walk matches the whole function (disjoint matches, in binding
    order) and applies every replacement at once: each var keeps its name
    and its binding's place, nested calls are bound to fresh vars, equal new
    values once; bindings are then re-ordered so each follows what it uses,
    and dead ones removed. Walks repeat until nothing matches or no value
    changes (at most ``max_rounds`` that rewrite: a rewrite of a chain that
    matches every other link halves it each walk, so 64 walks end any
    chain).

    A new value of another type than its var's is an aj.TypeInferenceError
    naming the var; a var the function does not bind, a value that uses an
    undefined var or depends on itself, walks that do not stop, and walks
    growing a function past 64 times its size plus 65536 bindings are
    aj.TransformErrors; an exception in ``rewriter`` propagates. ``mod`` is
    never changed."""
    if not isinstance(ctx, PatternContext):
        raise Error(f"rewrite_bindings: expected a P.PatternContext, got {type(ctx).__name__}")
    if not callable(rewriter):
        raise Error(f"rewrite_bindings: the rewriter must be callable, got {type(rewriter).__name__}")
    if not isinstance(mod, (_core.Module, _core.Function)):
        raise Error(f"rewrite_bindings: expected an aj.Module or aj.Function, got {type(mod).__name__}")
    max_rounds = checked_max_rounds("rewrite_bindings", max_rounds)
    graph = ctx._graph()
    if graph is None:
        return mod
    with _ops_make_calls():
        return _P.rewrite_graph(mod, graph, rewriter, max_rounds)
