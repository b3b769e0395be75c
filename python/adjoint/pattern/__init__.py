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
point.
"""

from .patterns import (Captures, Pattern, is_const, is_op, is_tuple, is_tuple_get_item, is_var, match, repeated,
                       wildcard)
from .rewrite_call import rewrite_call
from .rewriter import Rewriter

__all__ = [
    "Captures", "Pattern", "is_const", "is_op", "is_tuple", "is_tuple_get_item", "is_var", "match", "repeated",
    "rewrite_call", "wildcard", "Rewriter",
]
