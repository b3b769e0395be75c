"""CombineParallelMatmul: matmuls sharing an operand become one matmul over
the concatenated other operands and one split, with bias adds and
activations fused when every branch has them. Golden text for each kind of
rewrite, numbers (float64) for meaning, and the inputs on which TVM's pass
crashes or gives up (1-D operands, biases that broadcast differently, scalar
biases, mixed dtypes, a bias on the left, a weight shared by two branches)."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj
from adjoint.bench.graphs import qkv_groups, transformer_block

T = aj.transform
COMBINE = T.CombineParallelMatmul()
REORDER_DCE = T.Sequential([T.ReorderPermuteDimsAfterConcat(), T.DeadCodeElimination()])
F64 = "float64"


# ---- helpers ----

def inputs_of(mod: aj.Module, dims: dict[str, int] | None = None, seed: int = 0) -> list[np.ndarray]:
    """Random arguments for main's params (symbolic dims from `dims`)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        shape = tuple(d if isinstance(d, int) else dims[d] for d in p.type.shape)
        a = rng.standard_normal(shape)
        out.append(a.astype(p.type.dtype) if p.type.dtype.startswith("float") else (3 * a).astype(p.type.dtype))
    return out


def flat(out) -> list[np.ndarray]:
    return [a for o in out for a in flat(o)] if isinstance(out, tuple) else [np.asarray(out)]


def assert_same_numbers(before: aj.Module, after: aj.Module, dims: dict[str, int] | None = None,
                        rtol: float = 1e-13) -> None:
    """after verifies and computes what before computes, on random inputs."""
    aj.analysis.verify(after)
    args = inputs_of(before, dims)
    got, want = flat(aj.build(after)["main"](*args)), flat(aj.build(before)["main"](*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def ops_of(fn: aj.Function) -> list[str]:
    return [b.value.op for b in fn.bindings if isinstance(b.value, aj.Call)]


def count(fn: aj.Function, op: str) -> int:
    return ops_of(fn).count(op)


def combined(mod: aj.Module, check=None) -> aj.Module:
    """COMBINE(mod), checked to compute what mod does and to be its own fixed point."""
    out = COMBINE(mod) if check is None else T.CombineParallelMatmul(check)(mod)
    assert_same_numbers(mod, out)
    aj.assert_structural_equal(COMBINE(out) if check is None else T.CombineParallelMatmul(check)(out), out)
    return out


def qkv(rows: int = 2, hidden: int = 16, heads_out: int = 8) -> aj.Module:
    """q, k, v = x @ wq.T, x @ wk.T, x @ wv.T, as nn.Linear computes them."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (rows, hidden), F64)
    outs = []
    for n in "qkv":
        w = bb.param(f"w{n}", (heads_out, hidden), F64)
        outs.append(aj.op.matmul(x, aj.op.permute_dims(w, name=f"t{n}"), name=n))
    return bb.finish(tuple(outs))


# ---- the QKV case, golden ----

def test_qkv_golden():
    mod = qkv()
    out = combined(mod)
    assert out.script() == '''\
@function
def main(x: Tensor((2, 16), "float64"), wq: Tensor((8, 16), "float64"), wk: Tensor((8, 16), "float64"), wv: Tensor((8, 16), "float64")) -> Tuple(Tensor((2, 8), "float64"), Tensor((2, 8), "float64"), Tensor((2, 8), "float64")):
    tq: Tensor((16, 8), "float64") = permute_dims(wq)
    tk: Tensor((16, 8), "float64") = permute_dims(wk)
    tv: Tensor((16, 8), "float64") = permute_dims(wv)
    lv: Tensor((16, 24), "float64") = concat((tq, tk, tv), axis=1)
    lv_1: Tensor((2, 24), "float64") = matmul(x, lv)
    lv_2: Tuple(Tensor((2, 8), "float64"), Tensor((2, 8), "float64"), Tensor((2, 8), "float64")) = split(lv_1, [8, 16], axis=1)
    q: Tensor((2, 8), "float64") = lv_2[0]
    k: Tensor((2, 8), "float64") = lv_2[1]
    v: Tensor((2, 8), "float64") = lv_2[2]
    return (q, k, v)
'''


def test_qkv_then_reorder_and_dce_golden():
    mod = qkv()
    out = REORDER_DCE(COMBINE(mod))
    assert out.script() == '''\
@function
def main(x: Tensor((2, 16), "float64"), wq: Tensor((8, 16), "float64"), wk: Tensor((8, 16), "float64"), wv: Tensor((8, 16), "float64")) -> Tuple(Tensor((2, 8), "float64"), Tensor((2, 8), "float64"), Tensor((2, 8), "float64")):
    lv_3: Tensor((24, 16), "float64") = concat((wq, wk, wv))
    lv: Tensor((16, 24), "float64") = permute_dims(lv_3)
    lv_1: Tensor((2, 24), "float64") = matmul(x, lv)
    lv_2: Tuple(Tensor((2, 8), "float64"), Tensor((2, 8), "float64"), Tensor((2, 8), "float64")) = split(lv_1, [8, 16], axis=1)
    q: Tensor((2, 8), "float64") = lv_2[0]
    k: Tensor((2, 8), "float64") = lv_2[1]
    v: Tensor((2, 8), "float64") = lv_2[2]
    return (q, k, v)
'''
    args = inputs_of(mod)
    for got, want in zip(aj.build(out)["main"](*args), aj.build(mod)["main"](*args)):
        np.testing.assert_array_equal(got, want)


def test_uses_of_an_earlier_branch_move_after_the_combined_matmul():
    # q is used before k is computed (heads_first(q), then k = ...): the use waits for the split
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    wq, wk = bb.param("wq", (4, 3), F64), bb.param("wk", (4, 3), F64)
    q = aj.op.matmul(x, wq, name="q")
    sq = aj.op.exp(q, name="sq")
    k = aj.op.matmul(x, wk, name="k")
    mod = bb.finish(aj.op.add(sq, k, name="out"))
    out = combined(mod)
    assert ops_of(out["main"]) == ["concat", "matmul", "split", "exp", "add"]


# ---- any number of branches, any number of groups ----

@pytest.mark.parametrize("n", [2, 3, 13, 1000])
def test_one_lhs_any_number_of_branches(n):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    outs = [aj.op.matmul(x, aj.op.permute_dims(bb.param(f"w{i}", (1 + i % 3, 4), F64))) for i in range(n)]
    mod = bb.finish(tuple(outs))
    out = combined(mod)
    assert count(out["main"], "matmul") == 1 and count(out["main"], "split") == 1
    final = REORDER_DCE(out)
    assert ops_of(final["main"]) == ["concat", "permute_dims", "matmul", "split"]
    assert len(final["main"].bindings[0].value.args[0].fields) == n
    assert_same_numbers(mod, final)


def test_100_qkv_groups_in_one_call_and_unrelated_matmuls_untouched():
    mod = qkv_groups(100, tokens=2, hidden=4, dtype=F64)
    out = combined(mod)
    assert count(out["main"], "matmul") == 100 and count(out["main"], "split") == 100
    final = REORDER_DCE(out)
    assert (count(final["main"], "permute_dims"), count(final["main"], "concat")) == (100, 100)
    for b in final["main"].bindings:
        if isinstance(b.value, aj.Call) and b.value.op == "concat":
            assert [f.name_hint[:2] for f in b.value.args[0].fields] == ["wq", "wk", "wv"]
    assert_same_numbers(mod, final)


def test_unrelated_matmuls_are_left_alone():
    # a chain, matmuls on different LHS and RHS, and one matmul per var: nothing to combine
    bb = aj.FunctionBuilder("main")
    x, y = bb.param("x", (3, 3), F64), bb.param("y", (3, 3), F64)
    a = aj.op.matmul(x, y)
    b = aj.op.matmul(a, x)
    c = aj.op.matmul(y, b)
    mod = bb.finish(aj.op.sum(c))
    out = COMBINE(mod)
    aj.assert_structural_equal(out, mod)
    assert out.script() == mod.script()


# ---- one golden case per kind of rewrite ----

def linear_branches(widths, bias=None, act=None, bias_left=False, rows=2, k=4):
    """main(x, w_i, b_i) = (act(x @ w_i + b_i), ...); bias: None, "own" ((width,) each) or a list of shapes."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (rows, k), F64)
    outs = []
    for i, n in enumerate(widths):
        y = aj.op.matmul(x, bb.param(f"w{i}", (k, n), F64), name=f"y{i}")
        if bias is not None:
            shape = (n,) if bias == "own" else bias[i]
            b = bb.param(f"b{i}", shape, F64)
            y = aj.op.add(b, y, name=f"z{i}") if bias_left else aj.op.add(y, b, name=f"z{i}")
        if act is not None:
            y = getattr(aj.op, act if isinstance(act, str) else act[i])(y, name=f"a{i}")
        outs.append(y)
    return bb.finish(tuple(outs))


def body(mod: aj.Module) -> list[str]:
    """main's binding lines, without the types."""
    lines = mod.script().splitlines()[2:-1]
    return [line.split(":", 1)[0].strip() + " =" + line.split("=", 1)[1] for line in lines]


def test_shared_rhs_golden():
    # the weight gradients of a backward pass: T(dq) @ x, T(dk) @ x, T(dv) @ x
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 16), F64)
    grads = []
    for n in "qkv":
        d = bb.param(f"d{n}", (4, 8), F64)
        grads.append(aj.op.matmul(aj.op.permute_dims(d, name=f"t{n}"), x, name=f"g{n}"))
    mod = bb.finish(tuple(grads))
    out = combined(mod)
    assert body(out) == [
        "tq = permute_dims(dq)",
        "tk = permute_dims(dk)",
        "tv = permute_dims(dv)",
        "lv = concat((tq, tk, tv))",
        "lv_1 = matmul(lv, x)",
        "lv_2 = split(lv_1, [8, 16])",
        "gq = lv_2[0]",
        "gk = lv_2[1]",
        "gv = lv_2[2]",
    ]
    # the concat of the transposes becomes their transpose: its var binds the
    # permute_dims, and the new concat takes a name no var has
    assert body(REORDER_DCE(out))[:2] == ["lv_3 = concat((dq, dk, dv), axis=1)", "lv = permute_dims(lv_3)"]


def test_bias_golden_either_side():
    for bias_left in (False, True):
        out = combined(linear_branches([3, 5], bias="own", bias_left=bias_left))
        assert body(out) == [
            "lv = concat((w0, w1), axis=1)",
            "lv_1 = matmul(x, lv)",
            "lv_2 = concat((b0, b1))",
            "lv_3 = add(lv_1, lv_2)",
            "lv_4 = split(lv_3, [3], axis=1)",
            "z0 = lv_4[0]",
            "z1 = lv_4[1]",
        ]


def test_one_bias_for_every_branch_golden():
    # one (1,)-shaped bias var, broadcast along the split axis: added once as it is
    bb = aj.FunctionBuilder("main")
    x, c = bb.param("x", (2, 4), F64), bb.param("c", (1,), F64)
    outs = [aj.op.add(aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64), name=f"y{i}"), c, name=f"z{i}")
            for i in range(2)]
    out = combined(bb.finish(tuple(outs)))
    assert body(out) == [
        "lv = concat((w0, w1), axis=1)",
        "lv_1 = matmul(x, lv)",
        "lv_2 = add(lv_1, c)",
        "lv_3 = split(lv_2, [3], axis=1)",
        "z0 = lv_3[0]",
        "z1 = lv_3[1]",
    ]


@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
def test_bias_and_activation_golden(act):
    out = combined(linear_branches([3, 5, 2], bias="own", act=act))
    assert body(out) == [
        "lv = concat((w0, w1, w2), axis=1)",
        "lv_1 = matmul(x, lv)",
        "lv_2 = concat((b0, b1, b2))",
        "lv_3 = add(lv_1, lv_2)",
        f"lv_4 = {act}(lv_3)",
        "lv_5 = split(lv_4, [3, 8], axis=1)",
        "a0 = lv_5[0]",
        "a1 = lv_5[1]",
        "a2 = lv_5[2]",
    ]


def test_activation_without_bias_golden():
    out = combined(linear_branches([3, 5], act="gelu"))
    assert body(out) == [
        "lv = concat((w0, w1), axis=1)",
        "lv_1 = matmul(x, lv)",
        "lv_2 = gelu(lv_1)",
        "lv_3 = split(lv_2, [3], axis=1)",
        "a0 = lv_3[0]",
        "a1 = lv_3[1]",
    ]


def test_adds_and_activations_not_on_every_branch_stay_after_the_split_golden():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (4, 3), F64), name="y0")
    z0 = aj.op.relu(aj.op.add(y0, bb.param("b0", (3,), F64), name="z0"), name="a0")
    y1 = aj.op.matmul(x, bb.param("w1", (4, 5), F64), name="y1")
    a1 = aj.op.silu(y1, name="a1")
    out = combined(bb.finish((z0, a1)))
    assert body(out) == [
        "lv = concat((w0, w1), axis=1)",
        "lv_1 = matmul(x, lv)",
        "lv_2 = split(lv_1, [3], axis=1)",
        "y0 = lv_2[0]",
        "z0 = add(y0, b0)",
        "a0 = relu(z0)",
        "y1 = lv_2[1]",
        "a1 = silu(y1)",
    ]


def test_different_activations_are_not_fused():
    out = combined(linear_branches([3, 5], act=["relu", "silu"]))
    assert ops_of(out["main"]) == ["concat", "matmul", "split", "relu", "silu"]


def test_a_branch_result_used_twice_keeps_its_add():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (4, 3), F64), name="y0")
    z0 = aj.op.add(y0, bb.param("b0", (3,), F64))
    y1 = aj.op.matmul(x, bb.param("w1", (4, 3), F64), name="y1")
    z1 = aj.op.add(y1, bb.param("b1", (3,), F64))
    mod = bb.finish((z0, z1, aj.op.sum(y0)))
    out = combined(mod)
    assert ops_of(out["main"]) == ["concat", "matmul", "split", "add", "add", "sum"]


def test_symbolic_widths_golden():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", ("t", 4), F64)
    w0, w1 = bb.param("w0", (4, "n"), F64), bb.param("w1", (4, "m"), F64)
    b0, b1 = bb.param("b0", ("n",), F64), bb.param("b1", ("m",), F64)
    mod = bb.finish((aj.op.add(aj.op.matmul(x, w0), b0, name="z0"), aj.op.add(aj.op.matmul(x, w1), b1, name="z1")))
    out = COMBINE(mod)
    assert body(out) == [
        "lv_2 = concat((w0, w1), axis=1)",  # lv and lv_1 are the builder's names of the matmuls
        "lv_3 = matmul(x, lv_2)",
        "lv_4 = concat((b0, b1))",
        "lv_5 = add(lv_3, lv_4)",
        'lv_6 = split(lv_5, ("n",), axis=1)',
        "z0 = lv_6[0]",
        "z1 = lv_6[1]",
    ]
    assert_same_numbers(mod, out, dims={"t": 3, "n": 2, "m": 5})


def test_symbolic_widths_whose_sum_passes_int64_are_left_alone():
    """n and 9223372036854775807*n add up to a coefficient past int64: the
    concat of the weights raised TypeInferenceError (found by the passes
    fuzzer); a well-formed module must pass."""
    mod = aj.parse('''
@function
def main(x: Tensor((2, 4), "float64"), a: Tensor((4, "n"), "float64"), b: Tensor((4, "9223372036854775807*n"), "float64")):
    p = matmul(x, a)
    q = matmul(x, b)
    return (p, q)
''')
    aj.assert_structural_equal(COMBINE(mod), mod)


# ---- batched operands ----

def test_batched_lhs_with_2d_weights():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3, 4), F64)
    mod = bb.finish(tuple(aj.op.matmul(x, bb.param(f"w{i}", (4, 5 + i), F64)) for i in range(3)))
    out = combined(mod)
    assert ops_of(out["main"]) == ["concat", "matmul", "split"]
    assert out["main"].bindings[2].value.attrs["axis"] == 2


def test_batched_weights_combined_when_their_batch_dims_are_equal():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 4), F64)
    same = [aj.op.matmul(x, bb.param(f"w{i}", (2, 4, 5 + i), F64)) for i in range(2)]
    other = aj.op.matmul(x, bb.param("u", (3, 4, 5), F64))
    mod = bb.finish((*same, other))
    out = combined(mod)
    assert count(out["main"], "matmul") == 2 and count(out["main"], "split") == 1


def test_shared_rhs_batched_and_1d():
    bb = aj.FunctionBuilder("main")
    w, v = bb.param("w", (4, 6), F64), bb.param("v", (4,), F64)
    a0, a1 = bb.param("a0", (2, 3, 4), F64), bb.param("a1", (2, 5, 4), F64)
    mod = bb.finish((aj.op.matmul(a0, w), aj.op.matmul(a1, w), aj.op.matmul(a0, v), aj.op.matmul(a1, v)))
    out = combined(mod)
    # a0 @ w and a0 @ v share a0, but v is 1-D: the groups are the ones sharing w and v
    splits = [b.value for b in out["main"].bindings if isinstance(b.value, aj.Call) and b.value.op == "split"]
    assert [s.attrs["axis"] for s in splits] == [1, 1]
    assert count(out["main"], "matmul") == 2


# ---- what TVM's pass crashes on or leaves alone ----

def test_1d_lhs_is_combined():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4,), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (4, 3), F64), name="y0")
    mod = bb.finish((y0, aj.op.matmul(x, bb.param("w1", (4, 5), F64), name="y1")))
    out = combined(mod)
    assert body(out) == ["lv = concat((w0, w1), axis=1)", "lv_1 = matmul(x, lv)", "lv_2 = split(lv_1, [3])",
                         "y0 = lv_2[0]", "y1 = lv_2[1]"]


def test_1d_rhs_is_left_alone():
    # a 1-D RHS has no column axis to concatenate along; the 2-D ones still combine
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    vecs = [aj.op.matmul(x, bb.param(f"v{i}", (4,), F64)) for i in range(2)]
    mats = [aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64)) for i in range(2)]
    mod = bb.finish((*vecs, *mats))
    out = combined(mod)
    assert count(out["main"], "matmul") == 3 and count(out["main"], "split") == 1
    only_vectors = bb2 = aj.FunctionBuilder("main")
    x = bb2.param("x", (2, 4), F64)
    only_vectors = bb2.finish(tuple(aj.op.matmul(x, bb2.param(f"v{i}", (4,), F64)) for i in range(2)))
    aj.assert_structural_equal(COMBINE(only_vectors), only_vectors)


@pytest.mark.parametrize("widths, shapes", [
    ([4, 5], [(1, 4), (2, 5)]),   # leading dims differ
    ([4, 5], [(2, 4), (1, 5)]),
    ([64, 64], [(64,), (1,)]),    # one broadcasts along the split axis, the other does not
    ([64, 64], [(1,), (64,)]),
    ([4, 4], [(), ()]),           # two scalars
    ([4, 4], [(4,), ()]),         # ranks differ
    ([4, 5], [(2, 1), (1, 5)]),
], ids=str)
def test_biases_that_do_not_join_stay_after_the_split(widths, shapes):
    out = combined(linear_branches(widths, bias=shapes))
    assert ops_of(out["main"]) == ["concat", "matmul", "split", "add", "add"]


def test_biases_with_leading_unit_dims_join():
    out = combined(linear_branches([3, 5], bias=[(1, 3), (1, 5)]))
    assert body(out)[2:4] == ["lv_2 = concat((b0, b1), axis=1)", "lv_3 = add(lv_1, lv_2)"]


def test_one_linear_layer_on_two_inputs_golden():
    # y_i = a_i @ w + b: the rows are concatenated, and b, the same along them, is added once
    bb = aj.FunctionBuilder("main")
    w, b = bb.param("w", (4, 6), F64), bb.param("b", (6,), F64)
    outs = [aj.op.add(aj.op.matmul(bb.param(f"a{i}", (2 + i, 4), F64), w), b, name=f"z{i}") for i in range(2)]
    out = combined(bb.finish(tuple(outs)))
    assert body(out) == [
        "lv_2 = concat((a0, a1))",  # lv and lv_1 are the builder's names of the matmuls
        "lv_3 = matmul(lv_2, w)",
        "lv_4 = add(lv_3, b)",
        "lv_5 = split(lv_4, [2])",
        "z0 = lv_5[0]",
        "z1 = lv_5[1]",
    ]


def test_scalar_biases():
    # different scalar constants: kept per branch; one scalar for all: added once before the split
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    ys = [aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64)) for i in range(2)]
    mod = bb.finish((aj.op.add(ys[0], 1.0), aj.op.add(ys[1], 2.0)))
    assert ops_of(combined(mod)["main"]) == ["concat", "matmul", "split", "add", "add"]
    bb = aj.FunctionBuilder("main")
    x, s = bb.param("x", (2, 4), F64), bb.param("s", (), F64)
    ys = [aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64)) for i in range(2)]
    mod = bb.finish((aj.op.add(ys[0], s), aj.op.add(s, ys[1])))
    assert ops_of(combined(mod)["main"]) == ["concat", "matmul", "add", "split"]
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    ys = [aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64)) for i in range(2)]
    mod = bb.finish((aj.op.add(ys[0], 1.5), aj.op.add(ys[1], 1.5)))  # equal constants are one value
    assert ops_of(combined(mod)["main"]) == ["concat", "matmul", "add", "split"]


def test_mixed_dtypes():
    # out_dtype float64 on float32 operands (one weight cast from float64) combine; the float32 results
    # form their own group, whether out_dtype says float32 or is left out
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), "float32")
    wa = aj.op.astype(bb.param("wa", (4, 3), F64), "float32")
    y0 = aj.op.matmul(x, wa, out_dtype=F64, name="y0")
    y1 = aj.op.matmul(x, bb.param("wb", (4, 5), "float32"), out_dtype=F64, name="y1")
    y2 = aj.op.matmul(x, bb.param("wc", (4, 2), "float32"), name="y2")
    y3 = aj.op.matmul(x, bb.param("wd", (4, 2), "float32"), out_dtype="float32", name="y3")
    i = bb.param("i", (2, 3), "int64")
    ints = [aj.op.matmul(i, bb.param(f"j{n}", (3, 2), "int64")) for n in range(2)]
    mod = bb.finish((y0, y1, y2, y3, *ints))
    out = COMBINE(mod)
    assert_same_numbers(mod, out, rtol=1e-6)
    matmuls = [b for b in out["main"].bindings if isinstance(b.value, aj.Call) and b.value.op == "matmul"]
    assert [(m.var.type.shape, m.var.type.dtype, m.value.attrs["out_dtype"]) for m in matmuls] == [
        ((2, 8), F64, F64), ((2, 4), "float32", "float32"), ((2, 4), "int64", None)]


def test_a_weight_used_by_two_branches():
    bb = aj.FunctionBuilder("main")
    x, z = bb.param("x", (2, 4), F64), bb.param("z", (3, 4), F64)
    w, v = bb.param("w", (4, 3), F64), bb.param("v", (4, 5), F64)
    mod = bb.finish((aj.op.matmul(x, w), aj.op.matmul(x, w), aj.op.matmul(x, v), aj.op.matmul(z, w)))
    out = combined(mod)
    assert count(out["main"], "matmul") == 2
    concat = next(b.value for b in out["main"].bindings if isinstance(b.value, aj.Call) and b.value.op == "concat")
    assert [f.name_hint for f in concat.args[0].fields] == ["w", "w", "v"]


# ---- dependences between branches ----

def test_an_operand_computed_from_another_branch_is_not_combined_with_it():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (3, 3), F64), name="y0")
    y1 = aj.op.matmul(x, aj.op.tanh(y0), name="y1")  # its weight depends on y0
    mod = bb.finish((y0, y1))
    aj.assert_structural_equal(COMBINE(mod), mod)
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (3, 3), F64), name="y0")
    y1 = aj.op.matmul(x, aj.op.tanh(y0), name="y1")
    y2 = aj.op.matmul(x, bb.param("w2", (3, 3), F64), name="y2")
    out = combined(bb.finish((y0, y1, y2)))
    assert count(out["main"], "matmul") == 2
    concat = next(b.value for b in out["main"].bindings if isinstance(b.value, aj.Call) and b.value.op == "concat")
    assert [f.name_hint for f in concat.args[0].fields] == ["w0", "w2"]


def test_a_bias_computed_from_another_branch_is_not_fused():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 4), F64)
    y0 = aj.op.matmul(x, bb.param("w0", (4, 3), F64))
    y1 = aj.op.matmul(x, bb.param("w1", (4, 3), F64))
    mod = bb.finish(aj.op.add(y0, y1))
    assert ops_of(combined(mod)["main"]) == ["concat", "matmul", "split", "add"]


def test_an_operand_computed_after_another_branch():
    # as in a backward pass: the second weight gradient's operand is computed after the first one,
    # which is used before it
    bb = aj.FunctionBuilder("main")
    x, d0 = bb.param("x", (4, 6), F64), bb.param("d0", (4, 3), F64)
    g0 = aj.op.matmul(aj.op.permute_dims(d0), x, name="g0")
    s0 = aj.op.sum(g0, name="s0")
    d1 = aj.op.exp(d0, name="d1")
    g1 = aj.op.matmul(aj.op.permute_dims(d1), x, name="g1")
    mod = bb.finish((s0, g1))
    out = combined(mod)
    assert ops_of(out["main"]) == ["permute_dims", "exp", "permute_dims", "concat", "matmul", "split", "sum"]


def test_groups_that_would_form_a_cycle_together_are_left_alone():
    # each group alone is fine, but x's needs z's result y_d and z's needs x's result y_b
    bb = aj.FunctionBuilder("main")
    x, z = bb.param("x", (2, 2), F64), bb.param("z", (2, 2), F64)
    y_b = aj.op.matmul(x, bb.param("wb", (2, 2), F64), name="y_b")
    y_d = aj.op.matmul(z, bb.param("wd", (2, 2), F64), name="y_d")
    y_a = aj.op.matmul(x, aj.op.tanh(y_d, name="wa"), name="y_a")
    y_c = aj.op.matmul(z, aj.op.tanh(y_b, name="wc"), name="y_c")
    mod = bb.finish((y_a, y_b, y_c, y_d))
    out = combined(mod)
    aj.assert_structural_equal(out, mod)
    assert aj.transform.CombineParallelMatmul().explain(mod).counts == {"CombineParallelMatmul": {}}


def test_a_cycle_leaves_other_groups_combined():
    bb = aj.FunctionBuilder("main")
    x, z, u = bb.param("x", (2, 2), F64), bb.param("z", (2, 2), F64), bb.param("u", (2, 2), F64)
    y_b = aj.op.matmul(x, bb.param("wb", (2, 2), F64))
    y_d = aj.op.matmul(z, bb.param("wd", (2, 2), F64))
    y_a = aj.op.matmul(x, aj.op.tanh(y_d))
    y_c = aj.op.matmul(z, aj.op.tanh(y_b))
    free = [aj.op.matmul(u, bb.param(f"v{i}", (2, 2), F64)) for i in range(3)]
    mod = bb.finish((y_a, y_b, y_c, y_d, *free))
    out = combined(mod)
    assert count(out["main"], "matmul") == 5 and count(out["main"], "split") == 1
    report = aj.transform.CombineParallelMatmul().explain(mod)  # only the group put in is counted
    assert report.counts == {"CombineParallelMatmul": {"shared_lhs": 1, "branches combined": 3}}


def far_apart_groups(n: int, chain: int) -> aj.Module:
    """n groups x_g @ w_g, x_g @ u_g bound far apart: every first branch,
    then a chain of `chain` tanh on each (the results' heights), then
    u_g = tanh^chain(v_g) (the operands' depths), then every second branch."""
    bb = aj.FunctionBuilder("main")
    xs = [bb.param(f"x{g}", (2, 2), F64) for g in range(n)]
    firsts = [aj.op.matmul(x, bb.param(f"w{g}", (2, 2), F64)) for g, x in enumerate(xs)]
    tails, operands = list(firsts), [bb.param(f"v{g}", (2, 2), F64) for g in range(n)]
    for _ in range(chain):
        tails = [aj.op.tanh(t) for t in tails]
    for _ in range(chain):
        operands = [aj.op.tanh(u) for u in operands]
    seconds = [aj.op.matmul(x, u) for x, u in zip(xs, operands)]
    return bb.finish((*tails, *seconds))


def test_branches_far_apart_are_combined_without_a_sweep():
    # each second operand is deeper than each first result and lower: no path, so no sweep is needed
    mod = far_apart_groups(200, chain=1)
    out = combined(mod)
    assert count(out["main"], "split") == 200


def test_past_the_sweep_budget_possible_paths_count_as_paths():
    # the heights and depths cannot rule paths out (results chained 3 deep, operands 3 deep): the first
    # groups are settled by sweeps over most of the function, the rest, past the budget, are left alone
    # (so a second run, with a budget of its own, combines more: the one case where the pass is not idempotent)
    mod = far_apart_groups(50, chain=3)
    out = COMBINE(mod)
    assert_same_numbers(mod, out)
    assert 0 < count(out["main"], "split") < count(COMBINE(out)["main"], "split") < 50


# ---- check ----

def test_check_sees_each_group_and_may_refuse_it():
    seen = []

    def check(lhs, rhs):
        seen.append((lhs, rhs))
        return False

    mod = qkv()
    aj.assert_structural_equal(T.CombineParallelMatmul(check)(mod), mod)
    (lhs, rhs), = seen
    assert lhs.name_hint == "x" and [r.name_hint for r in rhs] == ["tq", "tk", "tv"]


def test_check_for_a_shared_rhs_gets_the_lhs_list_first():
    seen = []
    bb = aj.FunctionBuilder("main")
    w = bb.param("w", (4, 3), F64)
    mod = bb.finish(tuple(aj.op.matmul(bb.param(f"a{i}", (2, 4), F64), w) for i in range(3)))
    out = combined(mod, check=lambda lhs, rhs: seen.append((lhs, rhs)) or np.bool_(True))
    assert count(out["main"], "matmul") == 1
    lhs, rhs = seen[0]
    assert [a.name_hint for a in lhs] == ["a0", "a1", "a2"] and rhs.name_hint == "w"


def test_check_refusing_small_groups():
    bb = aj.FunctionBuilder("main")
    x, y = bb.param("x", (2, 4), F64), bb.param("y", (2, 4), F64)
    small = [aj.op.matmul(x, bb.param(f"w{i}", (4, 3), F64)) for i in range(2)]
    large = [aj.op.matmul(y, bb.param(f"v{i}", (4, 3), F64)) for i in range(3)]
    out = combined(bb.finish((*small, *large)), check=lambda lhs, rhs: len(rhs) >= 3)
    assert count(out["main"], "matmul") == 3 and count(out["main"], "split") == 1


def test_check_errors():
    with pytest.raises(aj.TransformError, match="callable"):
        T.CombineParallelMatmul(check=3)
    with pytest.raises(aj.TransformError, match="bool"):
        T.CombineParallelMatmul(lambda lhs, rhs: 1)(qkv())

    def fails(lhs, rhs):
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        T.CombineParallelMatmul(fails)(qkv())


def test_malformed_input_is_an_error():
    with pytest.raises(aj.TransformError):
        COMBINE("not a module")
    t = aj.TensorType((3, 3), F64)
    x, a, b = aj.Var("x", t), aj.Var("a", t), aj.Var("b", t)
    bad = aj.Module({"main": aj.Function([x], [(a, aj.Call("matmul", [x, b])), (b, aj.Call("matmul", [x, x]))], a)})
    with pytest.raises(aj.VerifyError, match="uses var 'b'"):
        COMBINE(bad)


def test_rules_docstring_and_repr():
    names = [name for name, _ in T.CombineParallelMatmul.rules]
    assert names == ["shared_lhs", "shared_rhs", "bias", "activation"]
    for _, before_after in T.CombineParallelMatmul.rules:
        assert before_after in T.CombineParallelMatmul.__doc__
    assert repr(COMBINE) == "aj.transform.CombineParallelMatmul()"
    assert "CombineParallelMatmul" in T.__all__


# ---- training: the QKV projection of an attention block ----

HIDDEN = 8


def block() -> aj.Module:
    return transformer_block(batch=1, seq=4, hidden=HIDDEN, heads=2, ffn=16, loss=True).module


def qkv_matmuls(fn: aj.Function) -> int:
    """Matmuls whose operands or result have the concatenated QKV width."""
    return sum(1 for b in fn.bindings if isinstance(b.value, aj.Call) and b.value.op == "matmul"
               and 3 * HIDDEN in (*b.var.type.shape, *(d for a in b.value.args for d in a.type.shape)))


def block_inputs(mod: aj.Module) -> list[np.ndarray]:
    return inputs_of(mod, seed=1)


def assert_same_adjoint(a: aj.Module, b: aj.Module) -> None:
    args = block_inputs(a)
    (ra, ga), (rb, gb) = aj.build(a)["main_adjoint"](*args), aj.build(b)["main_adjoint"](*args)
    np.testing.assert_allclose(ra, rb, rtol=1e-5)
    for x, y in zip(ga, gb):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


def test_gradient_after_combining_has_one_qkv_matmul_per_direction():
    mod = block()
    fused = T.Sequential([COMBINE, REORDER_DCE])(mod)
    plain, combined_adjoint = T.Gradient()(mod), T.Gradient()(fused)
    adj = combined_adjoint["main_adjoint"]
    # forward x @ W_qkv, data gradient d_qkv @ W_qkv, weight gradient T(d_qkv) @ x: one matmul each
    assert qkv_matmuls(adj) == 3
    assert (count(plain["main_adjoint"], "matmul"), count(adj, "matmul")) == (24, 18)
    assert_same_adjoint(plain, combined_adjoint)


def test_combining_an_adjoint_combines_the_weight_gradients():
    plain = T.Gradient()(block())
    out = COMBINE(plain)
    adj = out["main_adjoint"]
    values = {b.var.name_hint: b.value for b in adj.bindings}
    items = [values[f"w{n}_adjoint"] for n in "qkv"]
    assert all(isinstance(i, aj.TupleGetItem) for i in items) and len({i.tuple.name_hint for i in items}) == 1
    weight_grads = [b for b in adj.bindings if isinstance(b.value, aj.Call) and b.value.op == "matmul"
                    and b.var.type.shape == (3 * HIDDEN, HIDDEN)]
    assert len(weight_grads) == 1
    # the forward projection is combined too: 24 matmuls become 20
    assert count(adj, "matmul") == 20
    assert_same_adjoint(plain, out)
    aj.assert_structural_equal(COMBINE(out), out)
