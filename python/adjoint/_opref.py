"""The parts of an op's reference shared by the op reference page
(adjoint.opdocs) and the docstrings of aj.op (adjoint.op): the signature
line, from the op's schema, and the reference text, OpDef::doc."""

from __future__ import annotations

import inspect
from typing import Any

# Ops whose result is a tuple of tensors rather than one tensor (the schema
# does not say; a test checks this against the type rules).
TUPLE_RESULT_OPS = frozenset({"split"})


def reference(schema: dict) -> str:
    """The op's reference text, dedented, without surrounding blank lines."""
    return inspect.cleandoc(schema["doc"])


def format_value(value: Any) -> str:
    """An attr value as the text form writes it: strings in double quotes."""
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def signature(schema: dict) -> str:
    """``name(args, attr=default, ...) -> Tensor``; required attrs by name alone."""
    params = list(schema["args"])
    for a in schema["attrs"]:
        params.append(a["name"] if a["required"] else f"{a['name']}={format_value(a['default'])}")
    result = "Tuple[Tensor, ...]" if schema["name"] in TUPLE_RESULT_OPS else "Tensor"
    return f"{schema['name']}({', '.join(params)}) -> {result}"


def docstring(schema: dict) -> str:
    """The docstring of ``aj.op.<name>``: the signature, the reference text,
    the attrs' kinds and how the function emits its call."""
    attrs = "".join(
        f"\n    {a['name']}: {a['kind']}" + ("" if a["required"] else f", default {format_value(a['default'])}")
        for a in schema["attrs"]
    )
    text = reference(schema)
    lines = [signature(schema), ""] + ([text, ""] if text else [])
    if attrs:
        lines += ["Attrs:" + attrs, ""]
    lines.append("Emits a binding into the FunctionBuilder of its var arguments; name= is the var's name hint.")
    return "\n".join(lines)
