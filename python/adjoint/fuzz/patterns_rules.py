"""The ``patterns`` fuzz target's rewrite rules: exact rewrites
(``RULES``), each written both as text for ``P.Rewriter.from_text`` and
as a Python pattern and replacement for ``P.Rewriter.from_pattern`` and
``P.rewrite_call``; ``rewrite_one_way`` applies some of them one of those
ways (reproducers call it too), ``check_fixed_point`` holds a result to
leaving nothing the rules still rewrite. Apart from the target so that the
rules and the ways they are applied read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz.patterns_reference import bound_values, same_value, through_bindings
from adjoint.fuzz.runner import Finding
from adjoint.pattern.rewrite_call import _ops_make_calls


def _text_rule(params: str, pattern_body: str, replacement_body: str) -> str:
    sig = ", ".join(f'{p}: Tensor((4, 4), "float32")' for p in params.split())
    return (f"@function\ndef pattern({sig}):\n{pattern_body}\n\n"
            f"@function\ndef replacement({sig}):\n{replacement_body}\n")


def _is_scalar_one_f32(c: Any, bound: dict[str, Any]) -> bool:
    c = through_bindings(c, bound)
    return isinstance(c, aj.Constant) and c.type.dtype == "float32" and c.type.shape == () and float(c.data) == 1.0


@dataclass
class Rule:
    """An exact rewrite, written both ways: ``text`` for Rewriter.from_text,
    ``pattern()`` (the pattern and its parts) and ``replace(expr, caps,
    parts)`` for Python (None where it does not fire, as the text rule does
    not fire where its ops do not type-check or the type changes), and
    ``loops``: a rule that never settles (an aj.TransformError both ways)."""
    name: str
    text: str
    pattern: Callable[[], tuple[P.Pattern, dict]]
    replace: Callable[[Any, Any, dict], Any]
    loops: bool = False


def _negneg():
    x = P.wildcard()
    return P.is_op("negative")(P.is_op("negative")(x)), {"x": x}


def _permperm():
    x = P.wildcard()
    return P.is_op("permute_dims")(P.is_op("permute_dims")(x, axes=None), axes=None), {"x": x}


def _mulone():
    x, c = P.wildcard(), P.is_const()
    return P.is_op("multiply")(x, c), {"x": x, "c": c}


def _splitcat():
    x = P.wildcard()
    s = P.is_op("split")(x, indices_or_sections=2, axis=1)
    return (P.is_op("concat")(P.is_tuple([P.is_tuple_get_item(s, 0), P.is_tuple_get_item(s, 1)]), axis=1),
            {"x": x})


def _subself():
    x = P.wildcard()
    return P.is_op("subtract")(x, x), {"x": x}


def _permmatmul():
    a, b = P.wildcard(), P.wildcard()
    return P.is_op("permute_dims")(P.is_op("matmul")(a, b, out_dtype=None), axes=[1, 0]), {"a": a, "b": b}


def _addswap():
    a, b = P.wildcard(), P.wildcard()
    return P.is_op("add")(a, b), {"a": a, "b": b}


def _typed(make: Callable[[], Any], old: Any) -> Any:
    """make()'s expr when its ops type-check and it has old's type, else None
    (where a text rule does not fire)."""
    try:
        new = make()
    except aj.TypeInferenceError:
        return None
    return new if new.type == old.type else None


RULES = [
    Rule("negneg", _text_rule("x", "    return negative(negative(x))", "    return x"), _negneg,
         lambda e, m, p: _typed(lambda: m[p["x"]], e)),
    Rule("permperm", _text_rule("x", "    return permute_dims(permute_dims(x))", "    return x"), _permperm,
         lambda e, m, p: _typed(lambda: m[p["x"]], e)),
    Rule("mulone", _text_rule("x", '    return multiply(x, const(1.0, "float32"))', "    return x"), _mulone,
         lambda e, m, p: _typed(lambda: m[p["x"]], e) if _is_scalar_one_f32(m[p["c"]], p["bound"]) else None),
    Rule("splitcat", _text_rule("x", "    s = split(x, 2, axis=1)\n    a = s[0]\n    b = s[1]\n"
                                     "    return concat((a, b), axis=1)", "    return x"), _splitcat,
         lambda e, m, p: _typed(lambda: m[p["x"]], e)),
    Rule("subself", _text_rule("x", "    return subtract(x, x)", "    return zeros_like(x)"), _subself,
         lambda e, m, p: _typed(lambda: aj.op.zeros_like(m[p["x"]]), e)),
    # (a @ b).T = b.T @ a.T for matrices only: axes=[1, 0] type-checks on them alone (axes=None would
    # also reverse the batch axes of 3-D operands, where the identity does not hold)
    Rule("permmatmul", _text_rule("a b", "    return permute_dims(matmul(a, b), axes=[1, 0])",
                                  "    return matmul(permute_dims(b, axes=[1, 0]), permute_dims(a, axes=[1, 0]))"),
         _permmatmul,
         lambda e, m, p: _typed(lambda: aj.op.matmul(aj.op.permute_dims(m[p["b"]], axes=[1, 0]),
                                                     aj.op.permute_dims(m[p["a"]], axes=[1, 0])), e)),
    Rule("addswap", _text_rule("a b", "    return add(a, b)", "    return add(b, a)"), _addswap,
         lambda e, m, p: _typed(lambda: aj.op.add(m[p["b"]], m[p["a"]]), e), loops=True),
]
RULE_BY_NAME = {r.name: r for r in RULES}


def rewrite_one_way(way: str, rules: list[Rule], mod: Any) -> Any:
    """The module the rules give, applied one way: "python" (a Rewriter of
    their patterns), "text" (a Rewriter of their texts) or "rewrite_call"
    (the first rule alone)."""
    bound = bound_values(mod["main"])

    def python_rule(rule: Rule) -> tuple[P.Pattern, Callable]:
        pattern, parts = rule.pattern()
        parts["bound"] = bound
        return pattern, lambda e, m: rule.replace(e, m, parts)

    if way == "text":
        rewriter = P.Rewriter()
        for rule in rules:
            rewriter = rewriter | P.Rewriter.from_text(rule.text, name=rule.name)
        return rewriter(mod)
    if way == "rewrite_call":
        return P.rewrite_call(*python_rule(rules[0]), mod)
    rewriter = P.Rewriter()
    for rule in rules:
        rewriter = rewriter | P.Rewriter.from_pattern(*python_rule(rule), name=rule.name)
    return rewriter(mod)


def check_fixed_point(rules: list[Rule], out: Any) -> None:
    """No call of the result is one a rule would still rewrite."""
    fn = out["main"]
    for rule in rules:
        pattern, parts = rule.pattern()
        parts["bound"] = bound_values(fn)
        for b in fn.bindings:
            caps = pattern.match(b.value, fn)
            if caps is None:
                continue
            with _ops_make_calls():
                new = rule.replace(b.value, caps, parts)
            if new is not None and not same_value(new, b.value):
                raise Finding("not-fixed-point", f"rule {rule.name} still rewrites {b.var.name_hint} in\n"
                                                 f"{out.script()}", rule.name)
