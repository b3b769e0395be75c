"""ReassociateMatmul: between (W + B@A) @ x and W@x + B@(A@x) (and the forms
with x on the left), and matmul chains re-bracketed, by FLOPs with
compile-time work free. Golden text for each rewrite in each direction, the
LoRA decision of issue 13 (static and symbolic under bounds, then
LiftTransformParams), numbers (float64) for meaning, the forms it must leave
alone, random low-rank forms (1-D, size-1, batched operands) against numpy,
and bad dim_bounds."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

import adjoint as aj

T = aj.transform
A = aj.analysis
REASSOCIATE = T.ReassociateMatmul()
LORA_BOUNDS = {"r": (1, 64), "m": (1024, None), "n": (1024, None)}
# (W + B@A) @ x as the pass writes it, from the expanded form with A and B weights
FACTORED_LEFT = """\
y_part = matmul(B, A)
y_part_1 = add(W, y_part)
y = matmul(y_part_1, x)
return y"""


# ---- helpers ----

def tensor(*shape, dtype: str = "float64") -> str:
    dims = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape)
    return f'Tensor(({dims}{"," if len(shape) == 1 else ""}), "{dtype}")'


def function(params: dict[str, tuple], body: list[tuple[str, tuple, str]], num_input: int | None = None) -> aj.Module:
    """main(params) with bindings (name, shape, value), returning the last."""
    attrs = f"(num_input={num_input})" if num_input is not None else ""
    sig = ", ".join(f"{name}: {tensor(*shape)}" for name, shape in params.items())
    lines = [f"@function{attrs}", f"def main({sig}) -> {tensor(*body[-1][1])}:"]
    lines += [f"    {name}: {tensor(*shape)} = {value}" for name, shape, value in body]
    lines.append(f"    return {body[-1][0]}")
    return aj.parse("\n".join(lines) + "\n")


def lora(form: str, m="m", n="n", r="r", num_input: int | None = None, x_cols=1) -> aj.Module:
    """The LoRA case of issue 13: W (m, n), A (r, n), B (m, r), x (n, 1)."""
    params = {"x": (n, x_cols), "W": (m, n), "A": (r, n), "B": (m, r)}
    bodies = {
        "factored": [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(W, ba)"), ("y", (m, x_cols), "matmul(s, x)")],
        "expanded": [("wx", (m, x_cols), "matmul(W, x)"), ("ax", (r, x_cols), "matmul(A, x)"),
                     ("bax", (m, x_cols), "matmul(B, ax)"), ("y", (m, x_cols), "add(wx, bax)")],
    }
    return function(params, bodies[form], num_input)


def inputs_of(mod: aj.Module, dims: dict[str, int] | None = None, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(d if isinstance(d, int) else dims[d] for d in p.type.shape))
            for p in mod["main"].params]


def assert_same_numbers(before: aj.Module, after: aj.Module, dims: dict[str, int] | None = None) -> None:
    args = inputs_of(before, dims)
    want = np.asarray(aj.build(before)["main"](*args))
    got = np.asarray(aj.build(after)["main"](*args))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * max(1.0, float(np.abs(want).max())))


def reassociated(mod: aj.Module, dim_bounds=None, dims=None) -> aj.Module:
    """The pass's output, checked to verify, compute the same, cost no more and be its own fixed point."""
    p = T.ReassociateMatmul(dim_bounds)
    out = p(mod)
    A.verify(out)
    if all(isinstance(d, int) for q in mod["main"].params for d in q.type.shape) or dims:
        assert_same_numbers(mod, out, dims)
    assert aj.structural_equal(p(out), out)
    return out


def body(mod: aj.Module, func: str = "main") -> str:
    """A function's bindings (types dropped) and return, one per line."""
    lines = [line.strip() for line in mod[func].script().splitlines() if line.startswith("    ")]
    return "\n".join(f"{line.split(':')[0]} = {line.split(' = ', 1)[1]}" if " = " in line else line
                     for line in lines)


# ---- the LoRA decision (issue 13) ----

def test_lora_flop_counts():
    factored, expanded = lora("factored"), lora("expanded")
    assert A.estimate_flops(factored["main"]) == "2*m*n*r + 3*m*n"  # m*n*(2*r + 3)
    assert A.estimate_flops(expanded["main"]) == "2*m*n + 2*m*r + 2*n*r + m"
    weights = lora("factored", num_input=1)
    assert A.estimate_flops(weights["main"], compile_time_free=True) == "2*m*n"


@pytest.mark.parametrize("start", ["factored", "expanded"])
@pytest.mark.parametrize("dims", ["static", "symbolic"])
def test_lora_inputs_choose_the_expanded_form(start, dims):
    mn, r, bounds = ((4096, 4096), 16, None) if dims == "static" else (("m", "n"), "r", LORA_BOUNDS)
    mod = lora(start, *mn, r)
    out = T.ReassociateMatmul(bounds)(mod)
    assert [b.value.op for b in out["main"].bindings] == ["matmul", "matmul", "matmul", "add"]
    assert body(out).splitlines()[-2:] in (["y = add(y_part, y_part_2)", "return y"], ["y = add(wx, bax)", "return y"])
    if dims == "symbolic":
        assert A.estimate_flops(out["main"]) == "2*m*n + 2*m*r + 2*n*r + m"
        assert_same_numbers(mod, out, {"m": 1024, "n": 1100, "r": 16})


@pytest.mark.parametrize("start", ["factored", "expanded"])
@pytest.mark.parametrize("dims", ["static", "symbolic"])
def test_lora_weights_choose_the_factored_form_and_lift_its_sum(start, dims):
    mn, r, bounds = ((4096, 4096), 16, None) if dims == "static" else (("m", "n"), "r", LORA_BOUNDS)
    mod = lora(start, *mn, r, num_input=1)
    out = T.ReassociateMatmul(bounds)(mod)
    assert [b.value.op for b in out["main"].bindings] == ["matmul", "add", "matmul"]
    flops = A.estimate_flops(out["main"], compile_time_free=True)
    assert flops == ("2*m*n" if dims == "symbolic" else 2 * 4096 * 4096)
    lifted = T.LiftTransformParams()(out)
    assert [b.value.op for b in lifted["main_transform_params"].bindings] == ["matmul", "add"]
    assert [b.value.op for b in lifted["main"].bindings] == ["matmul"]
    if dims == "symbolic":
        dims_ = {"m": 1024, "n": 1030, "r": 16}
        assert_same_numbers(mod, out, dims_)
        x, W, A_, B = inputs_of(mod, dims_)
        exe = aj.build(lifted)
        (merged,) = exe["main_transform_params"](W, A_, B)
        want = aj.build(mod)["main"](x, W, A_, B)
        np.testing.assert_allclose(exe["main"](x, merged), want, rtol=1e-10)


def test_lora_symbolic_without_bounds_keeps_either_form():
    # with r free, neither form is cheaper for every m, n, r >= 1
    for start in ["factored", "expanded"]:
        mod = lora(start)
        assert REASSOCIATE(mod) is mod or aj.structural_equal(REASSOCIATE(mod), mod)


# ---- golden before/after, each rewrite both ways ----

def test_low_rank_update_expands_for_inputs():
    out = reassociated(lora("factored", 64, 64, 2))
    assert body(out) == """\
y_part = matmul(W, x)
y_part_1 = matmul(A, x)
y_part_2 = matmul(B, y_part_1)
y = add(y_part, y_part_2)
return y"""


def test_low_rank_update_factors_for_weights():
    out = reassociated(lora("expanded", 64, 64, 2, num_input=1))
    assert body(out) == FACTORED_LEFT


def test_low_rank_update_reads_the_sum_either_way_round_and_either_bracketing():
    m, n, r = 64, 64, 2
    params = {"x": (n, 1), "W": (m, n), "A": (r, n), "B": (m, r)}
    swapped = function(params, [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(ba, W)"),
                                ("y", (m, 1), "matmul(s, x)")])
    assert [b.value.op for b in reassociated(swapped)["main"].bindings] == ["matmul", "matmul", "matmul", "add"]
    other_bracketing = function(params, [("ba", (m, n), "matmul(B, A)"), ("bax", (m, 1), "matmul(ba, x)"),
                                         ("wx", (m, 1), "matmul(W, x)"), ("y", (m, 1), "add(bax, wx)")], num_input=1)
    assert body(reassociated(other_bracketing)) == FACTORED_LEFT


def test_low_rank_update_rhs_both_ways():
    m, n, r = 64, 64, 2
    params = {"x": (1, m), "W": (m, n), "A": (m, r), "B": (r, n)}
    factored = function(params, [("ab", (m, n), "matmul(A, B)"), ("s", (m, n), "add(W, ab)"),
                                 ("y", (1, n), "matmul(x, s)")])
    assert body(reassociated(factored)) == """\
y_part = matmul(x, W)
y_part_1 = matmul(x, A)
y_part_2 = matmul(y_part_1, B)
y = add(y_part, y_part_2)
return y"""
    expanded = function(params, [("xw", (1, n), "matmul(x, W)"), ("xa", (1, r), "matmul(x, A)"),
                                 ("xab", (1, n), "matmul(xa, B)"), ("y", (1, n), "add(xab, xw)")], num_input=1)
    assert body(reassociated(expanded)) == """\
y_part = matmul(A, B)
y_part_1 = add(W, y_part)
y = matmul(x, y_part_1)
return y"""


def test_a_sum_both_low_rank_forms_take_in_is_bound_once():
    """A product of two low-rank sums: the left rule expands around x, the
    right sum, which both new matmuls read; x was bound once per reader
    (W2 + A2@B2 computed twice, and lifted twice for weights)."""
    params = {"W1": (64, 64), "B1": (64, 2), "A1": (2, 64), "W2": (64, 2), "A2": (64, 2), "B2": (2, 2)}
    mod = function(params, [("ba", (64, 64), "matmul(B1, A1)"), ("s1", (64, 64), "add(W1, ba)"),
                            ("ab", (64, 2), "matmul(A2, B2)"), ("s2", (64, 2), "add(W2, ab)"),
                            ("y", (64, 2), "matmul(s1, s2)")])
    out = reassociated(mod)
    assert body(out) == """\
y_part = matmul(A2, B2)
y_part_1 = add(W2, y_part)
y_part_2 = matmul(W1, y_part_1)
y_part_3 = matmul(A1, y_part_1)
y_part_4 = matmul(B1, y_part_3)
y = add(y_part_2, y_part_4)
return y"""
    assert (A.estimate_flops(mod["main"]), A.estimate_flops(out["main"])) == (37504, 18176)


def test_a_chain_inside_a_low_rank_form_kept_as_it_is_is_rebracketed():
    # W = U @ V of rank 2: (U@V)@x + B@(A@x) stays expanded, and its full-rank term becomes U @ (V @ x)
    mod = function({"x": (64, 8), "U": (64, 2), "V": (2, 64), "A": (2, 64), "B": (64, 2)},
                   [("uv", (64, 64), "matmul(U, V)"), ("wx", (64, 8), "matmul(uv, x)"), ("ax", (2, 8), "matmul(A, x)"),
                    ("bax", (64, 8), "matmul(B, ax)"), ("y", (64, 8), "add(wx, bax)")])
    out = reassociated(mod)
    assert body(out) == """\
wx_part = matmul(V, x)
wx = matmul(U, wx_part)
ax = matmul(A, x)
bax = matmul(B, ax)
y = add(wx, bax)
return y"""
    assert A.estimate_flops(mod["main"]) == 86_528 and A.estimate_flops(out["main"]) == 8_704


def test_matmul_chain_is_rebracketed():
    # (x @ u) @ v) @ w with u, v of width 8 and w of 4: right to left is 5x fewer FLOPs
    mod = function({"x": (512, 512), "u": (512, 8), "v": (8, 512), "w": (512, 4)},
                   [("a", (512, 8), "matmul(x, u)"), ("b", (512, 512), "matmul(a, v)"),
                    ("c", (512, 4), "matmul(b, w)")])
    out = reassociated(mod)
    assert body(out) == """\
c_part = matmul(v, w)
c_part_1 = matmul(u, c_part)
c = matmul(x, c_part_1)
return c"""
    assert A.estimate_flops(mod["main"]) == 10_485_760 and A.estimate_flops(out["main"]) == 2_162_688


def test_matmul_chain_of_weights_is_joined_at_compile_time():
    # w1 @ (w2 @ x) with weights w1, w2: (w1 @ w2) @ x does one run-time matmul
    mod = function({"x": (64, 1), "w1": (64, 64), "w2": (64, 64)},
                   [("h", (64, 1), "matmul(w2, x)"), ("y", (64, 1), "matmul(w1, h)")], num_input=1)
    assert A.estimate_flops(mod["main"], compile_time_free=True) == 2 * 2 * 64 * 64
    out = reassociated(mod)
    assert body(out) == "y_part = matmul(w1, w2)\ny = matmul(y_part, x)\nreturn y"
    assert A.estimate_flops(out["main"], compile_time_free=True) == 2 * 64 * 64


# ---- chains: shapes ----

def test_chain_with_vector_ends():
    mod = function({"u": (6,), "a": (6, 40), "b": (40, 40), "v": (40,)},
                   [("ua", (40,), "matmul(u, a)"), ("uab", (40,), "matmul(ua, b)"), ("s", (), "matmul(uab, v)")])
    out = reassociated(mod)
    assert A.estimate_flops(out["main"]) <= A.estimate_flops(mod["main"])


def test_chain_with_a_vector_in_the_middle_is_left_alone():
    # (a @ v) @ w reads v as a column and then the result as a row: no other bracketing means the same
    mod = function({"a": (8, 8), "v": (8,), "w": (8, 8)}, [("av", (8,), "matmul(a, v)"), ("y", (8,), "matmul(av, w)")])
    assert aj.structural_equal(reassociated(mod), mod)


def test_batched_chain_moves_the_batch_to_the_last_product():
    # x (16, 64, 64) @ a (64, 64) @ b (64, 2): a @ b first avoids a batched 64x64x64 product
    mod = function({"x": (16, 64, 64), "a": (64, 64), "b": (64, 2)},
                   [("xa", (16, 64, 64), "matmul(x, a)"), ("y", (16, 64, 2), "matmul(xa, b)")])
    out = reassociated(mod)
    assert body(out) == "y_part = matmul(a, b)\ny = matmul(x, y_part)\nreturn y"


def long_chain(k: int) -> aj.Module:
    """((a0 @ a1) @ a2) ... @ v over k square factors (32, 32) and v (32, 1)."""
    return function({"v": (32, 1), **{f"a{i}": (32, 32) for i in range(k)}},
                    [("h1", (32, 32), "matmul(a0, a1)")] +
                    [(f"h{i}", (32, 32), f"matmul(h{i - 1}, a{i})") for i in range(2, k)] +
                    [("y", (32, 1), f"matmul(h{k - 1}, v)")])


def test_long_chain_is_rebracketed_window_by_window():
    # right to left is cheapest: each round follows the chain 16 operands at a
    # time, so the vector passes about 14 more factors per round; 40 take 3
    mod = long_chain(40)
    assert A.estimate_flops(mod["main"]) == 2 * 32 * 32 * (32 * 39 + 1)
    out = reassociated(mod)
    assert A.estimate_flops(out["main"]) == 2 * 32 * 32 * 40


def test_a_chain_longer_than_the_rounds_reach_gains_more_on_another_run():
    mod = long_chain(200)  # 8 rounds move the vector past about 110 factors
    once = REASSOCIATE(mod)
    twice = REASSOCIATE(once)
    costs = [A.estimate_flops(m["main"]) for m in (mod, once, twice)]
    assert costs[0] > costs[1] > costs[2] == 2 * 32 * 32 * 200
    assert_same_numbers(mod, twice)


def test_symbolic_chain_decided_by_bounds():
    # (x @ u) @ v vs x @ (u @ v): x (b, n), u (n, r), v (r, n); with r <= 64 <= n the left product is cheaper
    mod = function({"x": ("b", "n"), "u": ("n", "r"), "v": ("r", "n")},
                   [("uv", ("n", "n"), "matmul(u, v)"), ("y", ("b", "n"), "matmul(x, uv)")])
    assert aj.structural_equal(REASSOCIATE(mod), mod)  # without bounds, r = n = 1 and b large favour no side
    out = reassociated(mod, {"r": (1, 64), "n": (1024, None)}, dims={"b": 3, "n": 1024, "r": 4})
    assert body(out) == "y_part = matmul(x, u)\ny = matmul(y_part, v)\nreturn y"


# ---- what it leaves alone ----

def test_equal_costs_keep_the_input():
    mod = function({"a": (4, 4), "b": (4, 4), "c": (4, 4)}, [("ab", (4, 4), "matmul(a, b)"), ("y", (4, 4), "matmul(ab, c)")])
    assert REASSOCIATE(mod) is mod


def test_an_inner_value_used_elsewhere_stays():
    m, n, r = 64, 64, 2
    mod = function({"x": (n, 1), "W": (m, n), "A": (r, n), "B": (m, r)},
                   [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(W, ba)"), ("y", (m, 1), "matmul(s, x)"),
                    ("z", (m, n), "multiply(s, s)"), ("t", (), "sum(z)"), ("out", (m, 1), "add(y, t)")])
    assert aj.structural_equal(reassociated(mod), mod)


def test_matmuls_with_different_out_dtypes_are_left_alone():
    text = f"""@function
def main(x: {tensor(64, 512, dtype="float32")}, u: {tensor(512, 8, dtype="float32")}, v: {tensor(8, 2, dtype="float32")}) -> {tensor(64, 2)}:
    a: {tensor(64, 8, dtype="float32")} = matmul(x, u)
    y: {tensor(64, 2)} = matmul(a, v, out_dtype="float64")
    return y
"""
    mod = aj.parse(text)
    assert REASSOCIATE(mod) is mod


def test_a_sum_that_broadcasts_along_the_contracted_axis_is_not_expanded():
    # W (m, 1) broadcasts along n: W @ x does not type, so the expanded form is no alternative
    m, n, r = 64, 64, 2
    mod = function({"x": (n, 1), "W": (m, 1), "A": (r, n), "B": (m, r)},
                   [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(W, ba)"), ("y", (m, 1), "matmul(s, x)")])
    assert REASSOCIATE(mod) is mod


def test_a_sum_broadcasting_its_rows_is_expanded_correctly():
    m, n, r = 64, 64, 2
    mod = function({"x": (n, 3), "W": (1, n), "A": (r, n), "B": (m, r)},
                   [("ba", (m, n), "matmul(B, A)"), ("s", (m, n), "add(W, ba)"), ("y", (m, 3), "matmul(s, x)")])
    out = reassociated(mod)
    assert [b.value.op for b in out["main"].bindings] == ["matmul", "matmul", "matmul", "add"]


def test_a_vector_added_down_the_contracted_axis_of_a_right_sum_is_not_expanded():
    # x @ (w + A@B) with w (n,): the sum repeats w down its rows, the axis x contracts, so
    # it is x.sum(1) outer w, while x @ w is a matrix-vector product (the add after it would
    # broadcast back to the same type). Found by the random-program property on an adjoint.
    n, r = 32, 1
    mod = function({"x": (n, n), "w": (n,), "A": (n, r), "B": (r, n)},
                   [("ab", (n, n), "matmul(A, B)"), ("s", (n, n), "add(w, ab)"), ("y", (n, n), "matmul(x, s)")])
    assert REASSOCIATE(mod) is mod


def test_a_right_sum_broadcasting_its_columns_is_expanded_correctly():
    # w (n, 1) repeated along the columns of the sum, which x does not contract: x @ w broadcasts back
    n, r = 64, 2
    mod = function({"x": (3, n), "w": (n, 1), "A": (n, r), "B": (r, n)},
                   [("ab", (n, n), "matmul(A, B)"), ("s", (n, n), "add(w, ab)"), ("y", (3, n), "matmul(x, s)")])
    out = reassociated(mod)
    assert [b.value.op for b in out["main"].bindings] == ["matmul", "matmul", "matmul", "add"]


# A 1-D A is the middle of the chain B A x (x A B): B @ (A @ x) reads it as a row, (B @ A) @ x as
# a column, so neither direction may rewrite it. Found by a review.
@pytest.mark.parametrize("start, params, bindings, num_input", [
    ("expanded left", {"x": (2, 2), "W": (2, 2), "A": (2,), "B": (2, 2)},
     [("wx", (2, 2), "matmul(W, x)"), ("ax", (2,), "matmul(A, x)"), ("bax", (2,), "matmul(B, ax)"),
      ("y", (2, 2), "add(wx, bax)")], None),
    ("expanded right", {"x": (2, 2), "W": (2,), "A": (2,), "B": (2, 2)},
     [("xw", (2,), "matmul(x, W)"), ("xa", (2,), "matmul(x, A)"), ("xab", (2,), "matmul(xa, B)"),
      ("y", (2,), "add(xw, xab)")], None),
    ("factored right", {"B": (3, 3), "x": (3, 3), "W": (3,), "A": (3,)},
     [("ab", (3,), "matmul(A, B)"), ("s", (3,), "add(W, ab)"), ("y", (3,), "matmul(x, s)")], 1),
    ("factored left", {"A": (3,), "B": (3, 3), "W": (3, 3), "x": (3, 3)},
     [("ba", (3,), "matmul(B, A)"), ("s", (3, 3), "add(W, ba)"), ("y", (3, 3), "matmul(s, x)")], 2),
])
def test_a_low_rank_form_with_a_vector_middle_factor_is_left_alone(start, params, bindings, num_input):
    mod = function(params, bindings, num_input)
    assert aj.structural_equal(reassociated(mod), mod)


# x (p, 1) @ w (1,) is a (p,) vector, which the add broadcasts as a row, while x @ (w + A@B)
# repeats w (and a (1,) A@B) along the columns: a contracted axis of size 1 does not make a
# 1-D operand of a right sum safe. Found by a review.
@pytest.mark.parametrize("start, params, bindings, num_input", [
    ("expanded, W (1,)", {"x": (2, 1), "W": (1,), "A": (1, 2), "B": (2, 2)},
     [("xw", (2,), "matmul(x, W)"), ("xa", (2, 2), "matmul(x, A)"), ("xab", (2, 2), "matmul(xa, B)"),
      ("y", (2, 2), "add(xw, xab)")], None),
    ("factored, B (1,)", {"B": (1,), "x": (2, 1), "W": (1, 2), "A": (1, 1)},
     [("ab", (1,), "matmul(A, B)"), ("s", (1, 2), "add(W, ab)"), ("y", (2, 2), "matmul(x, s)")], 1),
])
def test_a_length_one_vector_in_a_right_sum_is_left_alone(start, params, bindings, num_input):
    mod = function(params, bindings, num_input)
    out = reassociated(mod)  # numbers as the input's; the chain x A B inside the form may be re-bracketed
    assert body(out).splitlines()[-2] == body(mod).splitlines()[-2]


# ---- low-rank forms over random shapes ----

# Each low-rank form as bindings (name, op, a, b), the root last: side (x on the right of the
# factors or on the left) and start (the expanded form in either bracketing of its low-rank term).
LOW_RANK_FORMS = {
    ("left", "factored"): [("ba", "matmul", "B", "A"), ("s", "add", "W", "ba"), ("y", "matmul", "s", "x")],
    ("left", "expanded"): [("wx", "matmul", "W", "x"), ("ax", "matmul", "A", "x"), ("bax", "matmul", "B", "ax"),
                           ("y", "add", "wx", "bax")],
    ("left", "expanded (B@A)@x"): [("wx", "matmul", "W", "x"), ("ba", "matmul", "B", "A"),
                                   ("bax", "matmul", "ba", "x"), ("y", "add", "wx", "bax")],
    ("right", "factored"): [("ab", "matmul", "A", "B"), ("s", "add", "W", "ab"), ("y", "matmul", "x", "s")],
    ("right", "expanded"): [("xw", "matmul", "x", "W"), ("xa", "matmul", "x", "A"), ("xab", "matmul", "xa", "B"),
                            ("y", "add", "xw", "xab")],
    ("right", "expanded x@(A@B)"): [("xw", "matmul", "x", "W"), ("ab", "matmul", "A", "B"),
                                    ("xab", "matmul", "x", "ab"), ("y", "add", "xw", "xab")],
}


def random_operand_shape(rng: random.Random, rows: int, cols: int) -> tuple:
    """(rows, cols), or a 1-D operand (either dim), or a batch of 1 or 2 of it."""
    kind = rng.choice(["matrix", "matrix", "row", "column", "batch"])
    return {"matrix": (rows, cols), "row": (cols,), "column": (rows,),
            "batch": (rng.choice([1, 2]), rows, cols)}[kind]


def random_low_rank_form(rng: random.Random):
    """(form, module, its arguments, numpy's float64 result), or None when numpy refuses its shapes."""
    form, size = rng.choice(list(LOW_RANK_FORMS)), rng.choice([1, 2, 3])
    m, n, r, k = (size if rng.random() < 0.75 else rng.choice([1, 2, 3]) for _ in range(4))  # mostly equal: more forms type
    natural = ({"W": (m, n), "B": (m, r), "A": (r, n), "x": (n, k)} if form[0] == "left"
               else {"x": (k, m), "W": (m, n), "A": (m, r), "B": (r, n)})
    values = {p: np.random.default_rng(rng.randrange(2**32)).standard_normal(random_operand_shape(rng, *s))
              for p, s in natural.items()}
    bindings = [(v, op, b, a) if op == "add" and rng.random() < 0.5 else (v, op, a, b)
                for v, op, a, b in LOW_RANK_FORMS[form]]
    env = dict(values)
    try:
        for v, op, a, b in bindings:
            env[v] = np.matmul(env[a], env[b]) if op == "matmul" else env[a] + env[b]
    except ValueError:
        return None
    order = rng.sample(list(values), len(values))  # the weights are the params after num_input
    mod = function({p: values[p].shape for p in order},
                   [(v, env[v].shape, f"{op}({a}, {b})") for v, op, a, b in bindings], rng.randrange(5))
    return form, mod, [values[p] for p in order], env["y"]


def test_low_rank_forms_of_random_shapes_compute_what_numpy_does():
    # 1-D, size-1 and batched operands, both sides, either start, inputs or weights: a review
    # found 1-D middle factors and (1,) vectors in a right sum rewritten to other numbers
    rng, rewritten = random.Random(20261129), Counter()
    for _ in range(4000):
        case = random_low_rank_form(rng)
        if case is None:
            continue
        form, mod, args, want = case
        report = REASSOCIATE.explain(mod)
        out = report.module
        A.verify(out)
        got = np.asarray(aj.build(out)["main"](*args))
        assert got.shape == want.shape, f"{mod.script()}\n->\n{out.script()}"
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"{mod.script()}\n->\n{out.script()}")
        counts = report.counts.get("ReassociateMatmul", {})
        if counts.get("low_rank_update") or counts.get("low_rank_update_rhs"):
            shapes = [a.shape for a in args]
            rewritten.update([form, *(kind for kind, present in [
                ("1-D", any(len(s) == 1 for s in shapes)), ("size 1", any(1 in s for s in shapes)),
                ("batched", any(len(s) == 3 for s in shapes))] if present)])
    # the cases exercise every form, and rewrite ones with each kind of operand
    assert all(rewritten[form] >= 5 for form in LOW_RANK_FORMS), rewritten
    assert all(rewritten[kind] >= 5 for kind in ["1-D", "size 1", "batched"]), rewritten


def test_the_adjoint_of_a_chain_reassociates_and_computes_the_same():
    mod = function({"x": (64, 64), "u": (64, 4), "v": (4, 64), "w": (64, 2)},
                   [("a", (64, 4), "matmul(x, u)"), ("b", (64, 64), "matmul(a, v)"), ("c", (64, 2), "matmul(b, w)"),
                    ("s", (), "sum(c)")])
    grad = T.Gradient()(mod)
    out = T.ReassociateMatmul()(grad)
    A.verify(out)
    args = inputs_of(mod)
    want, got = aj.build(grad)["main_adjoint"](*args), aj.build(out)["main_adjoint"](*args)
    for g, w in zip([got[0], *got[1]], [want[0], *want[1]]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    assert A.estimate_flops(out["main_adjoint"]) < A.estimate_flops(grad["main_adjoint"])


def test_the_input_module_is_not_changed():
    mod = lora("factored", 64, 64, 2)
    text = mod.script()
    REASSOCIATE(mod)
    assert mod.script() == text


def test_alternatives_too_large_to_type_are_not_considered():
    # (a @ b) would be (2**40, 2**40): beyond 64-bit sizes, so only the input's bracketing types
    big = 2**40
    mod = function({"a": (big, 2), "b": (2, big), "c": (big, 1)},
                   [("bc", (2, 1), "matmul(b, c)"), ("y", (big, 1), "matmul(a, bc)")])
    assert REASSOCIATE(mod) is mod


def test_alternatives_whose_flops_overflow_are_not_considered():
    # (a @ b) types as (2**20, 2**20), but joining it costs 2 * 2**20 * 2**30 * 2**20 FLOPs, beyond int64
    m, k = 2**20, 2**30
    mod = function({"a": (m, k), "b": (k, m), "x": (m, 1)}, [("v", (k, 1), "matmul(b, x)"), ("y", (m, 1), "matmul(a, v)")])
    assert REASSOCIATE(mod) is mod


def test_a_chain_whose_own_flops_overflow_is_left_alone():
    m, k = 2**20, 2**30
    mod = function({"a": (m, k), "b": (k, m), "c": (m, 1)}, [("v", (m, m), "matmul(a, b)"), ("y", (m, 1), "matmul(v, c)")])
    assert REASSOCIATE(mod) is mod


def test_a_value_used_as_both_operands_of_one_matmul_stays():
    # v @ v read as a @ b @ a @ b would compute a @ b twice: 4160 FLOPs against the input's 3600
    mod = function({"a": (10, 8), "b": (8, 10)}, [("v", (10, 10), "matmul(a, b)"), ("y", (10, 10), "matmul(v, v)")])
    assert REASSOCIATE(mod) is mod


def test_a_product_of_weights_whose_shape_the_inputs_fix_is_not_free():
    # w1 @ w2 is (2*k, 3), with k a dim of the input z only: not computable at
    # compile time, so joining the weights first costs 48*k against 12*k + 18
    mod = aj.parse("""\
@function(num_input=2)
def main(x: Tensor((3, 1), "float32"), z: Tensor(("k",), "float32"), w1: Tensor(("2*k", 3), "float32"),
         w2: Tensor((3, 3), "float32")) -> Tensor(("2*k", 1), "float32"):
    a: Tensor((3, 1), "float32") = matmul(w2, x)
    y: Tensor(("2*k", 1), "float32") = matmul(w1, a)
    return y
""")
    assert A.estimate_flops(mod["main"], compile_time_free=True) == "12*k + 18"
    assert REASSOCIATE(mod) is mod


# ---- the pass object and bad input ----

def test_repr_and_rules():
    assert repr(REASSOCIATE) == "aj.transform.ReassociateMatmul()"
    assert repr(T.ReassociateMatmul({"r": (1, 64)})) == "aj.transform.ReassociateMatmul(dim_bounds={'r': (1, 64)})"
    assert [name for name, _ in T.ReassociateMatmul.rules] == ["low_rank_update", "low_rank_update_rhs", "matmul_chain"]
    assert "low_rank_update" in T.ReassociateMatmul.__doc__


@pytest.mark.parametrize("bounds, message", [
    ({"r": (64, 1)}, "'r': low bound 64 is greater than high bound 1"),
    ({"r": (-1, 4)}, "'r'"),
    ({"r": 4}, "expected a pair (low, high or None)"),
    ({"r": (1, "x")}, "'r': high bound"),
    ([("r", (1, 2))], "expected a dict"),
    ({"2r": (1, 2)}, "2r"),
])
def test_bad_dim_bounds_are_an_error_naming_them(bounds, message):
    with pytest.raises(aj.TransformError, match="ReassociateMatmul: dim_bounds") as e:
        T.ReassociateMatmul(bounds)
    assert message in str(e.value)


def test_a_bound_on_a_symbol_no_function_uses_is_an_error():
    with pytest.raises(aj.TransformError, match="ReassociateMatmul: dim_bounds: 'q' is not a symbol"):
        T.ReassociateMatmul({"q": (1, 2)})(lora("factored"))


@pytest.mark.parametrize("num_input", [5, -1])
def test_bad_num_input_is_a_verify_error(num_input):
    fn = lora("factored")["main"].with_attr("num_input", num_input)
    with pytest.raises(aj.VerifyError, match="num_input"):
        REASSOCIATE(aj.Module({"main": fn}))


def test_not_a_module_is_an_error():
    with pytest.raises(aj.TransformError, match="ReassociateMatmul expects an aj.Module"):
        REASSOCIATE("main")
