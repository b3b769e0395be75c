"""The IR as seen from Python: node classes of the C++ core, the text format
(``parse``, ``Module.script``) and structural equality."""

from __future__ import annotations

from typing import Union

from . import _core
from . import display as _display
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


def _function_from_text(name: str, text: str) -> Function:
    """The function ``name`` of a module's text: how a pickled function is read back."""
    return parse(text)[name]


def _pickle_text(mod: Module, what: str) -> str:
    """The text a module or function pickles as; a VerifyError when it does
    not verify (its text would not parse back)."""
    if not _core.well_formed(mod):
        from .errors import VerifyError

        problem = _core.verify_problems(mod)[0]
        raise VerifyError(f"cannot pickle {what} that does not verify: {problem}")
    return mod.script()


def _type_nodes(ty: Type) -> list:
    """The distinct types within ``ty``, fields before the tuples holding
    them, ``ty`` last: ("tensor", shape, dtype) or ("tuple", field indices).
    Flat, so a type nested as deep as the cap pickles without recursing, and
    a type sharing a field in several places pickles it once."""
    index: dict[Type, int] = {}
    nodes: list = []
    stack = [ty]
    while stack:
        t = stack[-1]
        if t in index:
            stack.pop()
            continue
        pending = [] if t.is_tensor else [f for f in t.fields if f not in index]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        index[t] = len(nodes)
        if t.is_tensor:
            nodes.append(("tensor", tuple(t.shape), t.dtype))
        else:
            nodes.append(("tuple", [index[f] for f in t.fields]))
    return nodes


def _type_from_nodes(nodes: list) -> Type:
    """The type ``_type_nodes`` listed: how a pickled type is read back."""
    made: list[Type] = []
    for kind, *rest in nodes:
        if kind == "tensor":
            made.append(TensorType(*rest))
        else:
            made.append(TupleType([made[i] for i in rest[0]]))
    return made[-1]


def _type_reduce(ty: Type) -> tuple:
    return _type_from_nodes, (_type_nodes(ty),)


def _same(node, memo=None):
    """Copying an immutable node (or binding, or dim) gives it itself."""
    return node


# Pickled through the text form (printing and parsing 100k bindings take
# about 0.25 s); a pickled var is a new var of the same name and type.
Module.__reduce__ = lambda mod: (parse, (_pickle_text(mod, "a module"),))
Function.__reduce__ = lambda fn: (
    _function_from_text, (fn.name, _pickle_text(Module({fn.name: fn}), f"function '{fn.name}'")))
Var.__reduce__ = lambda var: (Var, (var.name_hint, var.type))
Type.__reduce__ = _type_reduce
for _cls in (Module, Function, Var, Type, Constant, Call, Tuple, TupleGetItem, Binding, _core.Dim):
    _cls.__copy__ = _cls.__deepcopy__ = _same

_display.install()  # repr and _repr_html_ of the nodes


def _show(fn: Function, **options):
    """The dataflow graph of this function as a picture: ``aj.viz.graph(fn, **options)``."""
    from .viz import graph

    return graph(fn, **options)


Function.show = _show  # fn.show(around="w_adjoint", depth=3) in a notebook
