"""The operators, one Python function per op of the C++ registry.

The functions are generated from the registry's schemas, so the registry is
the one list of ops: ``aj.op.sum(x, axis=[1], keepdims=True)`` checks its
arguments against the schema of ``sum`` and emits a binding into the
``aj.FunctionBuilder`` that made its var arguments (the innermost active one
for an op without any, such as ``zeros``). Every op also takes ``name=`` for
the var's name hint.
Tensor arguments may be exprs, NumPy arrays or Python numbers (numbers take
the dtype of the op's first expr argument; for ``where``, of the first of
``x1`` and ``x2``, so that ``where(mask, g, 0.0)`` is a float where;
without an expr argument, NumPy's promotion of the numbers and arrays
given, so that ``where(mask, 2.5, -1)`` is float64). An index argument (take's and
index_add's ``indices``, the nll_loss ops' ``targets``) takes ints and lists of
ints as NumPy makes them arrays (int64), never its operands' dtype, which
indices cannot have. Each function's docstring is the op's entry in the op
reference (docs/ops.md, see adjoint.opdocs).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from . import _core
from ._core import Expr
from ._opref import docstring
from .builder import (_EXPR_CLASSES, _first_expr, _numbers_dtype, abandon_builder_for, as_expr, builder_for,
                      current_builder)
from .errors import Error, TypeInferenceError


def _signature(schema: dict) -> inspect.Signature:
    P = inspect.Parameter
    params = [P(a, P.POSITIONAL_OR_KEYWORD) for a in schema["args"]]
    for attr in schema["attrs"]:
        default = P.empty if attr["required"] else attr["default"]
        params.append(P(attr["name"], P.POSITIONAL_OR_KEYWORD, default=default))
    params.append(P("name", P.KEYWORD_ONLY, default=""))
    return inspect.Signature(params)


# The args that hold integer indices: a number or list there is an array of
# NumPy's dtype for it, and is not an operand whose dtype numbers take.
_INDEX_ARGS = frozenset({"indices", "targets"})


def _index_expr(value: Any) -> Any:
    """An index argument as an expr: ints and lists of ints as NumPy makes them
    arrays (int64); exprs, tuples of exprs and the rest as as_expr takes them."""
    if isinstance(value, (list, tuple)) and not any(isinstance(v, Expr) for v in value):
        try:
            value = np.asarray(value)
        except ValueError as e:  # ragged lists
            raise TypeInferenceError(f"cannot make an array of {value!r}: {e}") from None
    return as_expr(value, None)


def _all_exprs(values: Any) -> bool:
    for v in values:
        if type(v) not in _EXPR_CLASSES and not isinstance(v, Expr):
            return False
    return True


def _exprs_as_tuple(value: Any) -> Any:
    """A list or tuple of exprs (concat's args) as a Tuple expr; anything else as it is."""
    if type(value) in (list, tuple) and _all_exprs(value):
        return _core.Tuple(value)
    return value


def _make_op(op_name: str) -> Callable[..., Any]:
    schema = _core.op_schema(op_name)
    sig = _signature(schema)
    arg_names = schema["args"]
    positional = [*arg_names, *(a["name"] for a in schema["attrs"])]
    n_positional = len(positional)
    keywords = frozenset(positional[len(arg_names):]) | {"name"}
    required = frozenset(a["name"] for a in schema["attrs"] if a["required"])

    n_args = len(arg_names)
    attr_names = positional[n_args:]
    operand_names = [a for a in arg_names if a != "condition" and a not in _INDEX_ARGS]

    def common_attrs(args: tuple, kwargs: dict) -> dict | None:
        """The attrs of the common call (tensors by position, attrs by
        position or keyword), bound as sig.bind would bind them; None for
        any other call. (kwargs is the call's own dict: it may become the
        attrs.)"""
        given = len(args)
        if given == n_args:
            attrs = kwargs
        elif given == n_args + 1 and n_positional > n_args:
            attrs = {attr_names[0]: args[n_args]}
        elif n_args < given <= n_positional:
            attrs = dict(zip(attr_names, args[n_args:]))
        else:
            return None
        if kwargs:
            if not keywords.issuperset(kwargs):
                return None
            if attrs is not kwargs:
                if not attrs.keys().isdisjoint(kwargs):
                    return None
                attrs.update(kwargs)
        return attrs if not required or required.issubset(attrs) else None

    def bind(args: tuple, kwargs: dict, attrs: dict | None) -> tuple[list, dict, str]:
        """Tensors, attrs and name of a call that is not the common one with
        expr tensors (attrs: what common_attrs made of it)."""
        if attrs is not None:
            name = attrs.pop("name", "") if kwargs else ""
            tensors = [t if a in _INDEX_ARGS else _exprs_as_tuple(t) for a, t in zip(arg_names, args[:n_args])]
            if not _all_exprs(tensors):
                tensors = _tensor_args(dict(zip(arg_names, tensors)))
            return tensors, attrs, name
        try:
            given = sig.bind(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeInferenceError(f"op '{op_name}': {e}") from None
        name = given.pop("name", "")
        return _tensor_args({a: given.pop(a) for a in arg_names}), given, name

    def _tensor_args(given: dict) -> list:
        """The tensor args as exprs: numbers take the dtype of the first expr
        operand, else NumPy's promotion of the numbers and arrays given."""
        operands = [given[a] for a in operand_names]
        like = _first_expr(*operands)
        if like is None:
            like = _numbers_dtype(*operands)
        try:
            return [_index_expr(given[a]) if a in _INDEX_ARGS else as_expr(given[a], like) for a in arg_names]
        except Error as e:  # a number the dtype cannot hold, an array of a dtype adjoint has not
            raise type(e)(f"op '{op_name}': {e}") from None

    what = f"aj.op.{op_name}"

    def op_fn(*args: Any, **kwargs: Any) -> Any:
        attrs = common_attrs(args, kwargs)
        tensors = list(args[:n_args])
        if attrs is not None and _all_exprs(tensors):  # the common call, bound here
            name = attrs.pop("name", "") if kwargs else ""
        else:
            try:
                tensors, attrs, name = bind(args, kwargs, attrs)
            except Error as e:  # arguments refused before the op reached its builder: abandoned all the same
                abandon_builder_for(what, [*args, *kwargs.values()], e)
                raise
        return builder_for(what, tensors)._emit_call(op_name, tensors, attrs, name)

    op_fn.__name__ = op_fn.__qualname__ = op_name
    op_fn.__signature__ = sig  # type: ignore[attr-defined]
    op_fn.__doc__ = docstring(schema)
    op_fn.__module__ = __name__
    return op_fn


def _install() -> list[str]:
    names = list(_core.op_names())
    for n in names:
        globals()[n] = _make_op(n)
    return names


__all__ = _install()
