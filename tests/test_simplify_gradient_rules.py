"""One small case per SimplifyGradient rule, as MLIR's canonicalize tests
have: the printed module before and after the pass (golden), and the two
built and run on the same random float64 inputs. The cases are keyed by the
rule names of ``aj.transform.SimplifyGradient.rules`` (the C++ rule table):
a rule without a case, or a case whose rule is gone, fails."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj

RULES = dict(aj.transform.SimplifyGradient.rules)

F64 = '"float64"'


def t(*shape):
    return f"Tensor({shape if len(shape) != 1 else f'({shape[0]},)'}, {F64})"


# rule name -> [(before, after), ...]; each before is printed text, and only
# its rule fires on it (other rules may fire on what the rule made, as
# fold_permutes does on the transposes of transpose_of_matmul).
CASES = {
    "fold_permutes": [
        (f'''@function
def main(x: {t(2, 3, 4)}) -> {t(3, 4, 2)}:
    a: {t(3, 2, 4)} = permute_dims(x, axes=[1, 0, 2])
    b: {t(3, 4, 2)} = permute_dims(a, axes=[0, 2, 1])
    return b
''', f'''@function
def main(x: {t(2, 3, 4)}) -> {t(3, 4, 2)}:
    b: {t(3, 4, 2)} = permute_dims(x, axes=[1, 2, 0])
    return b
'''),
        # T(T(x)) composes to the identity: x itself
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    a: {t(4, 3)} = permute_dims(x)
    b: {t(3, 4)} = permute_dims(a)
    c: {t(3, 4)} = exp(b)
    return c
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    c: {t(3, 4)} = exp(x)
    return c
'''),
    ],
    "drop_identity_permute": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    y: {t(3, 4)} = permute_dims(x, axes=[0, 1])
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    "transpose_of_matmul": [
        (f'''@function
def main(a: {t(3, 4)}, b: {t(4, 5)}) -> {t(5, 3)}:
    mm: {t(3, 5)} = matmul(a, b)
    t: {t(5, 3)} = permute_dims(mm)
    return t
''', f'''@function
def main(a: {t(3, 4)}, b: {t(4, 5)}) -> {t(5, 3)}:
    lv: {t(5, 4)} = permute_dims(b)
    lv_1: {t(4, 3)} = permute_dims(a)
    t: {t(5, 3)} = matmul(lv, lv_1)
    return t
'''),
        # an operand that is a transpose already: T(T(a)) cancels to a
        (f'''@function
def main(a: {t(4, 3)}, b: {t(4, 5)}) -> {t(5, 3)}:
    ta: {t(3, 4)} = permute_dims(a)
    mm: {t(3, 5)} = matmul(ta, b)
    t: {t(5, 3)} = permute_dims(mm)
    return t
''', f'''@function
def main(a: {t(4, 3)}, b: {t(4, 5)}) -> {t(5, 3)}:
    lv: {t(5, 4)} = permute_dims(b)
    t: {t(5, 3)} = matmul(lv, a)
    return t
'''),
    ],
    "drop_identity_broadcast_to": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    y: {t(3, 4)} = broadcast_to(x, (3, 4))
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    "drop_identity_reshape": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    y: {t(3, 4)} = reshape(x, (3, 4))
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    "drop_identity_collapse_sum_to": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    y: {t(3, 4)} = collapse_sum_to(x, (3, 4))
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    "drop_identity_astype": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    y: {t(3, 4)} = astype(x, "float64")
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    # 2 * 40 * 48 * 32 FLOPs, above the 2 * 32^3 where the rules start
    "matmul_of_broadcast_scalar_lhs": [
        (f'''@function
def main(c: {t()}, b: {t(32, 48)}) -> {t(40, 48)}:
    s: {t(40, 32)} = broadcast_to(c, (40, 32))
    r: {t(40, 48)} = matmul(s, b)
    return r
''', f'''@function
def main(c: {t()}, b: {t(32, 48)}) -> {t(40, 48)}:
    lv: {t(1, 48)} = sum(b, axis=[-2], keepdims=True)
    lv_1: {t(1, 48)} = multiply(lv, c)
    r: {t(40, 48)} = broadcast_to(lv_1, (40, 48))
    return r
'''),
        # a seed of ones needs no multiply; a transposed operand is summed
        # over its other axis, and the sum reshaped into place
        (f'''@function
def main(b: {t(48, 32)}) -> {t(40, 48)}:
    one: {t()} = ones((), "float64")
    s: {t(40, 32)} = broadcast_to(one, (40, 32))
    tb: {t(32, 48)} = permute_dims(b)
    r: {t(40, 48)} = matmul(s, tb)
    return r
''', f'''@function
def main(b: {t(48, 32)}) -> {t(40, 48)}:
    lv: {t(48, 1)} = sum(b, axis=[-1], keepdims=True)
    lv_1: {t(1, 48)} = reshape(lv, (1, 48))
    r: {t(40, 48)} = broadcast_to(lv_1, (40, 48))
    return r
'''),
    ],
    "matmul_of_broadcast_scalar_rhs": [
        (f'''@function
def main(a: {t(40, 32)}, c: {t(1, 1)}) -> {t(40, 48)}:
    s: {t(32, 48)} = broadcast_to(c, (32, 48))
    r: {t(40, 48)} = matmul(a, s)
    return r
''', f'''@function
def main(a: {t(40, 32)}, c: {t(1, 1)}) -> {t(40, 48)}:
    lv: {t(40, 1)} = sum(a, axis=[-1], keepdims=True)
    lv_1: {t(40, 1)} = multiply(lv, c)
    r: {t(40, 48)} = broadcast_to(lv_1, (40, 48))
    return r
'''),
    ],
    "transpose_of_broadcast": [
        (f'''@function
def main(x: {t(1, 5)}) -> {t(5, 4)}:
    y: {t(4, 5)} = broadcast_to(x, (4, 5))
    t: {t(5, 4)} = permute_dims(y)
    return t
''', f'''@function
def main(x: {t(1, 5)}) -> {t(5, 4)}:
    lv: {t(5, 1)} = reshape(x, (5, 1))
    t: {t(5, 4)} = broadcast_to(lv, (5, 4))
    return t
'''),
    ],
    "multiply_by_ones_lhs": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    o: {t()} = ones((), {F64})
    y: {t(3, 4)} = multiply(o, x)
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
        # ones of a larger shape broadcast x: the product is not x
        (f'''@function
def main(x: {t(4)}) -> {t(3, 4)}:
    o: {t(3, 4)} = ones((3, 4), {F64})
    y: {t(3, 4)} = multiply(o, x)
    return y
''', f'''@function
def main(x: {t(4)}) -> {t(3, 4)}:
    o: {t(3, 4)} = ones((3, 4), {F64})
    y: {t(3, 4)} = multiply(o, x)
    return y
'''),
    ],
    "multiply_by_ones_rhs": [
        (f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    o: {t(1, 4)} = ones((1, 4), {F64})
    y: {t(3, 4)} = multiply(x, o)
    z: {t(3, 4)} = exp(y)
    return z
''', f'''@function
def main(x: {t(3, 4)}) -> {t(3, 4)}:
    z: {t(3, 4)} = exp(x)
    return z
'''),
    ],
    "binary_of_broadcast_lhs": [
        (f'''@function
def main(s: {t()}, y: {t(3, 4)}) -> {t(3, 4)}:
    b: {t(3, 4)} = broadcast_to(s, (3, 4))
    d: {t(3, 4)} = subtract(b, y)
    return d
''', f'''@function
def main(s: {t()}, y: {t(3, 4)}) -> {t(3, 4)}:
    d: {t(3, 4)} = subtract(s, y)
    return d
'''),
        # a row broadcast to the shape of y (2, 3, 4)'s last two dims; y gives the result's shape
        (f'''@function
def main(r: {t(1, 4)}, y: {t(2, 3, 4)}) -> {t(2, 3, 4)}:
    b: {t(3, 4)} = broadcast_to(r, (3, 4))
    d: {t(2, 3, 4)} = divide(b, y)
    return d
''', f'''@function
def main(r: {t(1, 4)}, y: {t(2, 3, 4)}) -> {t(2, 3, 4)}:
    d: {t(2, 3, 4)} = divide(r, y)
    return d
'''),
        # y (4,) does not have the result's shape: the broadcast stays
        (f'''@function
def main(s: {t()}, y: {t(4)}) -> {t(3, 4)}:
    b: {t(3, 4)} = broadcast_to(s, (3, 4))
    d: {t(3, 4)} = add(b, y)
    return d
''', f'''@function
def main(s: {t()}, y: {t(4)}) -> {t(3, 4)}:
    b: {t(3, 4)} = broadcast_to(s, (3, 4))
    d: {t(3, 4)} = add(b, y)
    return d
'''),
    ],
    "binary_of_broadcast_rhs": [
        (f'''@function
def main(y: {t(3, 4)}, s: {t(3, 1)}) -> {t(3, 4)}:
    b: {t(3, 4)} = broadcast_to(s, (3, 4))
    d: {t(3, 4)} = maximum(y, b)
    return d
''', f'''@function
def main(y: {t(3, 4)}, s: {t(3, 1)}) -> {t(3, 4)}:
    d: {t(3, 4)} = maximum(y, s)
    return d
'''),
    ],
}

ALL_NAMES = sorted(set(RULES) | set(CASES))


def cases_of(rule):
    assert rule in RULES, f"CASES has a case for {rule!r}, which is not a SimplifyGradient rule (any more)"
    assert CASES.get(rule), f"SimplifyGradient rule {rule!r} ({RULES[rule]}) has no case: add one to CASES"
    return CASES[rule]


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert set(CASES) == set(RULES), (
        f"rules without a case: {sorted(set(RULES) - set(CASES))}; cases without a rule: {sorted(set(CASES) - set(RULES))}")


def test_rules_are_listed_with_their_descriptions():
    rules = aj.transform.SimplifyGradient.rules
    assert all(isinstance(r, tuple) and len(r) == 2 and " -> " in r[1] for r in rules)
    assert len({name for name, _ in rules}) == len(rules)
    for name, before_after in rules:
        assert f"``{name}``: ``{before_after}``" in aj.transform.SimplifyGradient.__doc__


@pytest.mark.parametrize("rule", ALL_NAMES)
def test_rule_golden(rule):
    for before, after in cases_of(rule):
        mod = aj.parse(before)
        assert mod.script() == before, "the case's input is not in printed form"
        simplified = aj.transform.SimplifyGradient()(mod)
        aj.analysis.verify(simplified)
        assert simplified.script() == after, simplified.script()
        aj.assert_structural_equal(aj.transform.SimplifyGradient()(simplified), simplified)


@pytest.mark.parametrize("rule", ALL_NAMES)
def test_rule_keeps_values(rule):
    rng = np.random.default_rng(sum(map(ord, rule)))
    for before, _ in cases_of(rule):
        mod = aj.parse(before)
        inputs = [rng.standard_normal(p.type.shape) for p in mod["main"].params]
        want = aj.build(mod)["main"](*inputs)
        got = aj.build(aj.transform.SimplifyGradient()(mod))["main"](*inputs)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(want).max())))
