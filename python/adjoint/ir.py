"""The IR as seen from Python: node classes of the C++ core, the text format
(``parse``, ``Module.script``) and structural equality."""

from __future__ import annotations

from typing import Union

from . import _core
from .errors import StructuralMismatch

Type = _core.Type
TensorType = _core.TensorType
TupleType = _core.TupleType
Expr = _core.Expr
Var = _core.Var
Constant = _core.Constant
Call = _core.Call
Tuple = _core.Tuple
TupleGetItem = _core.TupleGetItem
Binding = _core.Binding
Function = _core.Function
Module = _core.Module

Node = Union[Module, Function]


def parse(text: str) -> Module:
    """Parses adjoint text (DESIGN.md §3) into a module.

    Raises ``aj.ParseError`` for bad syntax or names and
    ``aj.TypeInferenceError`` for shapes, dtypes, arity and attrs the op rules
    reject; both carry ``line`` and ``column``.
    """
    if not isinstance(text, str):
        from .errors import ParseError

        raise ParseError(f"parse expects a str, got {type(text).__name__}")
    return _core.parse(text)


def structural_equal(lhs: Node, rhs: Node) -> bool:
    """True when two modules (or functions) are equal up to var names."""
    return _core.structural_equal(lhs, rhs)


def structural_hash(node: Node) -> int:
    """A hash consistent with ``structural_equal``."""
    return _core.structural_hash(node)


def structural_diff(lhs: Node, rhs: Node) -> str | None:
    """None when equal, else a message naming the first difference."""
    return _core.structural_diff(lhs, rhs)


def assert_structural_equal(lhs: Node, rhs: Node) -> None:
    """Raises ``aj.StructuralMismatch`` (an ``AssertionError``) naming the first
    difference: the function, the binding, and both sides printed."""
    diff = _core.structural_diff(lhs, rhs)
    if diff is not None:
        raise StructuralMismatch(diff)


def _module_html(mod: Module) -> str:
    import html

    return f"<pre>{html.escape(mod.script())}</pre>"


Module._repr_html_ = _module_html  # Jupyter shows modules as their text
Function._repr_html_ = lambda fn: f"<pre>{__import__('html').escape(fn.script())}</pre>"


def _show(fn: Function, **options):
    """The dataflow graph of this function as a picture: ``aj.viz.graph(fn, **options)``."""
    from .viz import graph

    return graph(fn, **options)


Function.show = _show  # fn.show(around="w_adjoint", depth=3) in a notebook
