"""Dataflow patterns over the IR, and rewriting what they match.

``from adjoint import pattern as P`` gives the vocabulary of DESIGN.md §5,
on the C++ matcher (looking through var bindings, linear in the size of the
pattern and of the runs it matches):

    P.wildcard(), P.is_op("matmul")(a, b, **attrs), P.is_const(), P.is_var(),
    P.is_tuple([...]), P.is_tuple_get_item(p, i), P.repeated(p, name=...),
    p | q, p & q, ~p, p.has_dtype(d), p.has_shape(s), p.has_attr({...})

``pattern.match(expr, fn)`` returns the captures (``Captures``: each
sub-pattern object, and each name given with ``name=``, mapped to what it
matched; a list for a run and for patterns inside one) or None.
``P.rewrite_call(pattern, rewriter, mod)`` replaces every call the pattern
matches by ``rewriter(expr, captures)``, built with ``aj.op``, to a fixed
point. ``P.Rewriter`` makes such rules passes (``Module -> Module``): from a
text rule of two functions ``pattern`` and ``replacement``
(``Rewriter.from_text``, ``from_module``: matched and applied in C++) or from
a pattern and a Python function (``from_pattern``); ``r1 | r2`` tries the
rules in order at each call.

Graph patterns, as in TVM: patterns made inside ``with P.PatternContext()
as ctx:`` are registered in it, and its roots (those no other registered
pattern uses, ``P.repeated(p)`` for any number of branches) are matched
together, each to a binding of its own, sharing the sub-patterns they have
in common; ``p.used_by(q, index)`` and ``p.only_used_by(q, index)`` add
edges. ``P.rewrite_bindings(ctx, rewriter, mod)`` calls
``rewriter(matchings, bindings)`` on each match and applies the
``{var: new value}`` it returns, walk after walk until nothing changes::

    with P.PatternContext() as ctx:
        x = P.wildcard()
        wq, wk, wv = P.wildcard(), P.wildcard(), P.wildcard()
        q = P.is_op("matmul")(x, wq)
        k = P.is_op("matmul")(x, wk)
        v = P.is_op("matmul")(x, wv)

    def qkv(m, bindings):
        qkv = aj.op.split(aj.op.matmul(m[x], aj.op.concat([m[wq], m[wk], m[wv]], axis=1)), 3, axis=1)
        return {m[q]: qkv[0], m[k]: qkv[1], m[v]: qkv[2]}

    mod = P.rewrite_bindings(ctx, qkv, mod)

The matching and the applying run in C++, linear in the size of the
function when the shared sub-patterns single out each match (as x does).
"""

from .context import PatternContext
from .patterns import (Captures, Pattern, is_const, is_op, is_tuple, is_tuple_get_item, is_var, match, repeated,
                       wildcard)
from .rewrite_bindings import rewrite_bindings
from .rewrite_call import rewrite_call
from .rewriter import Rewriter

__all__ = [
    "Captures", "Pattern", "PatternContext", "Rewriter", "is_const", "is_op", "is_tuple", "is_tuple_get_item",
    "is_var", "match", "repeated", "rewrite_bindings", "rewrite_call", "wildcard",
]
