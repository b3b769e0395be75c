"""The op reference, generated from the op registry: ``render()`` is the
Markdown of ``docs/ops.md`` (``python -m adjoint.opdocs > docs/ops.md``
writes it; a test keeps the checked-in file equal to it).

Each op's reference text is ``OpDef::doc``, set in its family file under
cpp/src/op/: one or two sentences of semantics naming the NumPy and PyTorch
equivalents, optional paragraphs of detail, then the ``Type:``, ``VJP:``,
``FLOPs:`` and ``Dtypes:`` parts. The signature line and the attrs table come
from the op's schema. The same text is the docstring of ``aj.op.<name>``.
"""

from __future__ import annotations

import re
import sys

from . import _core
from ._opref import format_value, reference, signature

# The parts that close every op's reference text, in this order.
PARTS = ("Type", "VJP", "FLOPs", "Dtypes")
_PART_LINE = re.compile(rf"^({'|'.join(PARTS)}):\s*(.*)$")

FAMILY_TITLES = {
    "binary": "Binary elementwise",
    "unary": "Unary elementwise",
    "linalg": "Linear algebra",
    "manipulate": "Shape and data movement",
    "reduce": "Reductions",
    "create": "Creation",
    "nn": "Neural network",
}

_INTRO = """\
# Op reference

Every op of adjoint, generated from the op registry (`python -m adjoint.opdocs > docs/ops.md`).
Each op is also the Python function `aj.op.<name>`, whose docstring is the entry below, and appears
in the text form as `name(args, attr=value)`, for example `sum(x, axis=[1], keepdims=True)`.

How to read an entry:

- The **signature** names the tensor arguments, then the attrs with their defaults; an attr without a
  default is required. In Python every attr may also be given by keyword, and every op takes `name=`,
  the result var's name hint. Tensor arguments may be exprs, NumPy arrays or Python numbers (numbers
  take the dtype of the op's first expr argument; for `where`, of the first of `x1` and `x2`; without an
  expr argument, NumPy's promotion of the numbers and arrays given, so `where(mask, 2.5, -1)` is float64).
  The integer `indices` of `take` and `index_add` and the `targets` of the `nll_loss` ops also take an
  int or a list of ints, as NumPy's (int64): `take(x, [0, 2], axis=1)`.
- The **attrs table** gives each attr's kind (what values it accepts; from Python, a NumPy int or bool is an int or bool) and default.
- The text gives the semantics and the nearest **NumPy** and **PyTorch** equivalents, and how this op
  differs from them where it does.
- **Type** is the type rule: which dtypes and shapes are accepted, and the result's shape and dtype.
  Shapes may hold symbolic dims (`n`, `2*n`); a rule that needs two dims equal needs them equal as
  polynomials. What the rule refuses is an `aj.TypeInferenceError` when the call is built.
- **VJP** is the gradient rule, written as adjoint ops: `grad` is the adjoint of the op's result and
  `grad_<arg>` that of an argument. Gradients flow through float tensors only, so a rule applies to
  float operands; "none" means the op is not differentiable.
- **FLOPs** is what `aj.analysis.estimate_flops` counts for one call.
- **Dtypes** are the dtypes the kernel accepts.
"""


def split_reference(text: str) -> tuple[str, dict[str, str]]:
    """(the text before the parts, {part label: its text}); a part runs from
    its ``Label:`` line to the next part's line or a blank line."""
    lines = text.splitlines()
    parts: dict[str, str] = {}
    first = len(lines)
    label = None
    for i, line in enumerate(lines):
        m = _PART_LINE.match(line)
        if m:
            first = min(first, i)
            label = m.group(1)
            parts[label] = m.group(2).strip()
        elif label and line.strip():
            parts[label] += " " + line.strip()
        else:
            label = None
    return "\n".join(lines[:first]).strip(), parts


def _attrs_table(schema: dict) -> list[str]:
    if not schema["attrs"]:
        return []
    rows = ["| attr | kind | default |", "| --- | --- | --- |"]
    for a in schema["attrs"]:
        default = "required" if a["required"] else f"`{format_value(a['default'])}`"
        rows.append(f"| `{a['name']}` | {a['kind']} | {default} |")
    return rows + [""]


def _body(text: str) -> list[str]:
    """The reference text with each part as its own paragraph, its label bold."""
    semantics, parts = split_reference(text)
    out = [semantics, ""] if semantics else []
    for label in PARTS:
        if label in parts:
            out += [f"**{label}:** {parts[label]}", ""]
    return out


def entry(name: str) -> str:
    """The Markdown of one op's entry: heading, signature, attrs table, text."""
    schema = _core.op_schema(name)
    lines = [f"## {name}", "", f"`{signature(schema)}`", ""]
    lines += _attrs_table(schema)
    lines += _body(reference(schema))
    return "\n".join(lines)


def _families(names: list[str]) -> dict[str, list[str]]:
    """Family -> its ops, both in registry order."""
    out: dict[str, list[str]] = {}
    for n in names:
        out.setdefault(_core.op_schema(n)["family"], []).append(n)
    return out


def _contents(names: list[str]) -> list[str]:
    lines = ["## Contents", ""]
    for family, ops in _families(names).items():
        title = FAMILY_TITLES.get(family, family)
        links = ", ".join(f"[{n}](#{n})" for n in ops)
        lines.append(f"- **{title}** (`cpp/src/op/{family}.cc`): {links}")
    return lines + [""]


def render() -> str:
    """The whole op reference as Markdown (docs/ops.md)."""
    names = list(_core.op_names())
    ordered = [n for ops in _families(names).values() for n in ops]
    sections = [_INTRO, "\n".join(_contents(names))] + [entry(n) for n in ordered]
    return "\n".join(sections).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
