"""Which in-place ATen ops ``aj.from_torch`` imports, and the hint of the
error for the others.

adjoint functions are pure. An in-place op (``masked_fill_``, ``detach_``)
is imported as its out-of-place op (``masked_fill``, ``detach``) when the
one tensor it changes is fresh (made in the graph by an op that returns a
new tensor: not an input, parameter or buffer, and not a view of one) and
nothing but the in-place op reads it: then no one can see the change, and
the op's result stands for the changed tensor. torch builds attention
masks so (``zeros_like``, then ``masked_fill_``), and a constant tensor
made in ``forward`` (``lift_fresh_copy`` of the constant, then
``detach_``).
"""

from __future__ import annotations

from typing import Any


def out_of_place_key(key: str) -> str:
    """The op table key of an in-place op's out-of-place op (``masked_fill_`` -> ``masked_fill``)."""
    return key[:-1] if key.endswith("_") and not key.endswith("__") else key


def changes_only_a_fresh_tensor(node: Any, out_of_place: set) -> bool:
    """Whether the in-place ``node`` changes only its first argument, a fresh
    tensor that no other node reads (``out_of_place``: the names of the
    in-place nodes imported out of place so far, whose results are fresh)."""
    schema = node.target._schema
    written = [i for i, arg in enumerate(schema.arguments) if arg.alias_info is not None and arg.alias_info.is_write]
    if written != [0] or not node.args:
        return False
    changed = node.args[0]
    return _is_fresh(changed, out_of_place) and len(changed.users) == 1


def _is_fresh(node: Any, out_of_place: set) -> bool:
    if getattr(node, "op", None) != "call_function":
        return False
    if node.name in out_of_place:
        return True
    schema = getattr(node.target, "_schema", None)
    return schema is not None and not schema.is_mutable and all(r.alias_info is None for r in schema.returns)


def in_place_hint(node: Any) -> str:
    """Why an in-place ``node`` that cannot be imported is there, for its error."""
    stack = node.meta.get("nn_module_stack") or {}
    innermost = str(list(stack.values())[-1][1]) if stack else ""
    if "BatchNorm" in innermost:
        return "a BatchNorm in training mode updates its running statistics in place: call module.eval()"
    return ("an in-place op is imported only on a tensor made in the graph that nothing else reads; "
            "write the out-of-place op (x.add(y), not x.add_(y))")
