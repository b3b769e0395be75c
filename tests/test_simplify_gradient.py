"""SimplifyGradient, CSE and DCE: the adjoints Gradient emits around matmul
and transposes come out in the simple forms of DESIGN.md §6, and simplifying
never changes a result."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import examples

RNG = np.random.default_rng(7)


def unique_names(fn):
    """The function re-read from its printed text, where every var has its own name."""
    return aj.parse(fn.script())[fn.name]


def calls(fn, op=None):
    return [b for b in fn.bindings if isinstance(b.value, aj.Call) and (op is None or b.value.op == op)]


def bound(fn):
    return {b.var.name_hint: b.value for b in fn.bindings}


def is_t(value):
    return isinstance(value, aj.Call) and value.op == "permute_dims"


def check_simple_form(fn):
    """No permute_dims of a permute_dims, no permute_dims of a matmul of
    rank >= 2 operands, no identity permute/broadcast_to/reshape."""
    fn = unique_names(fn)
    defs = {b.var.name_hint: b.value for b in fn.bindings}
    for b in fn.bindings:
        v = b.value
        if not isinstance(v, aj.Call):
            continue
        arg = v.args[0] if v.args else None
        src = defs.get(arg.name_hint) if isinstance(arg, aj.Var) else None
        if v.op == "permute_dims":
            assert not is_t(src), f"{b.var.name_hint}: permute_dims of a permute_dims"
            assert not (isinstance(src, aj.Call) and src.op == "matmul" and all(a.type.ndim >= 2 for a in src.args)), \
                f"{b.var.name_hint}: permute_dims of a matmul"
            axes = v.attrs["axes"]
            assert axes is None or list(axes) != list(range(len(axes))), f"{b.var.name_hint}: identity permute_dims"
        if v.op in ("broadcast_to", "reshape", "collapse_sum_to"):
            assert v.type != arg.type, f"{b.var.name_hint}: identity {v.op}"


# g = lv3_adjoint; lv = T(g); lv1 = T(x) and lv2 = T(y) are the forward transposes:
# y_adjoint = matmul(T(g), T(x)) and x_adjoint = matmul(T(y), T(g)), as DESIGN.md §6.
EXAMPLE_ADJOINT = '''\
@function
def main_adjoint(x: Tensor((3, 3), "float32"), y: Tensor((3, 3), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((3, 3), "float32"), Tensor((3, 3), "float32"))):
    lv1: Tensor((3, 3), "float32") = permute_dims(x)
    lv2: Tensor((3, 3), "float32") = permute_dims(y)
    lv3: Tensor((3, 3), "float32") = matmul(lv1, lv2)
    gv: Tensor((), "float32") = sum(lv3)
    gv_adjoint: Tensor((), "float32") = ones((), "float32")
    lv3_adjoint: Tensor((3, 3), "float32") = broadcast_to(gv_adjoint, (3, 3))
    lv_1: Tensor((3, 3), "float32") = permute_dims(lv3_adjoint)
    y_adjoint: Tensor((3, 3), "float32") = matmul(lv_1, lv1)
    x_adjoint: Tensor((3, 3), "float32") = matmul(lv2, lv_1)
    return (gv, (x_adjoint, y_adjoint))
'''


def test_design_example_golden():
    mod = aj.transform.Gradient()(aj.parse(examples.TRANSPOSED_MATMUL))
    fn = mod["main_adjoint"]
    text = fn.script()
    assert text == EXAMPLE_ADJOINT, text
    mm = calls(fn, "matmul")
    assert len(mm) == 3  # the forward one and the two adjoints, nothing else


def test_design_example_numerics():
    mod = aj.transform.Gradient()(aj.parse(examples.TRANSPOSED_MATMUL))
    x, y = RNG.standard_normal((3, 3)).astype(np.float32), RNG.standard_normal((3, 3)).astype(np.float32)
    val, (gx, gy) = aj.build(mod)["main_adjoint"](x, y)
    g = np.ones((3, 3), np.float32)
    np.testing.assert_allclose(val, (x.T @ y.T).sum(), rtol=1e-5)
    np.testing.assert_allclose(gx, y.T @ g.T, rtol=1e-5)  # grad_a = matmul(T(b), T(g))
    np.testing.assert_allclose(gy, g.T @ x.T, rtol=1e-5)  # grad_b = matmul(T(g), T(a))


PATTERNS = {
    # out = matmul(a, T(b)): grad_a = matmul(g, b), grad_b = matmul(T(g), a)
    "a_Tb": (lambda a, b: a @ b.T, (4, 3), (5, 3), [("a", "matmul", ["g", "b"]), ("b", "matmul", ["T(g)", "a"])]),
    # out = matmul(T(a), b): grad_a = matmul(b, T(g)), grad_b = matmul(a, g)
    "Ta_b": (lambda a, b: a.T @ b, (3, 4), (3, 5), [("a", "matmul", ["b", "T(g)"]), ("b", "matmul", ["a", "g"])]),
    # out = matmul(T(a), T(b)): grad_a = matmul(T(b), T(g)), grad_b = matmul(T(g), T(a))
    "Ta_Tb": (lambda a, b: a.T @ b.T, (3, 4), (5, 3), [("a", "matmul", ["T(b)", "T(g)"]), ("b", "matmul", ["T(g)", "T(a)"])]),
}


def describe(fn, expr, g_name):
    """An operand as 'g', 'T(g)', 'a', 'T(a)', ... following permute_dims bindings."""
    defs = bound(fn)
    name = expr.name_hint
    value = defs.get(name)
    if name == g_name:
        return "g"
    if is_t(value):
        inner = value.args[0].name_hint
        inner_val = defs.get(inner)
        if inner == g_name:
            return "T(g)"
        if inner in ("a", "b"):
            return f"T({inner})"
        return f"T({describe(fn, value.args[0], g_name)})" if inner_val is not None else f"T({inner})"
    return name


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_three_forward_patterns_come_out_simple(name):
    f, sa, sb, expected = PATTERNS[name]
    bb = aj.FunctionBuilder("main")
    a = bb.param("a", sa, "float64")
    b = bb.param("b", sb, "float64")
    out = f(a, b)
    mod = bb.finish(aj.op.sum(out, name="gv"))
    adj = unique_names(aj.transform.Gradient()(mod)["main_adjoint"])
    ret_grads = adj.ret.fields[1].fields
    # g is the adjoint of the matmul's result: the broadcast of the seed
    g_name = next(b.var.name_hint for b in adj.bindings if isinstance(b.value, aj.Call) and b.value.op == "broadcast_to")
    defs = bound(adj)
    for (param, op, operands), grad in zip(expected, ret_grads):
        value = defs[grad.name_hint]
        assert value.op == op, adj.script()
        got = [describe(adj, arg, g_name) for arg in value.args]
        assert got == operands, f"grad of {param}: {got} != {operands}\n{adj.script()}"
    check_simple_form(adj)
    x, y = RNG.standard_normal(sa), RNG.standard_normal(sb)
    simple = aj.build(aj.transform.Gradient()(mod))["main_adjoint"](x, y)
    raw = aj.build(aj.transform.Gradient(simplify=False)(mod))["main_adjoint"](x, y)
    for s, r in zip(simple[1], raw[1]):
        np.testing.assert_allclose(s, r, rtol=1e-12)


# ---- the property over random graphs ----

op_steps = st.lists(st.tuples(st.sampled_from(["matmul", "permute", "add", "swap"]), st.integers(0, 30), st.integers(0, 30)),
                    min_size=1, max_size=12)


def random_graph(steps, batched, n=3):
    shape = (2, n, n) if batched else (n, n)
    bb = aj.FunctionBuilder("main")
    vals = [bb.param("x", shape, "float64"), bb.param("y", shape, "float64")]
    for op, i, j in steps:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        if op == "matmul":
            vals.append(a @ b)
        elif op == "add":
            vals.append(a + b)
        elif op == "swap":
            vals.append(a.mT)
        else:
            vals.append(aj.op.permute_dims(a, axes=[0, 2, 1]) if batched else aj.op.permute_dims(a))
    return bb.finish(aj.op.sum(vals[-1])), shape


# n = 40 makes every matmul large enough for matmul_of_broadcast_scalar
@settings(max_examples=150, deadline=None)
@given(op_steps, st.booleans(), st.sampled_from([3, 40]))
def test_property_simplified_adjoints_are_simple_and_equal(steps, batched, n):
    mod, shape = random_graph(steps, batched, n)
    simple = aj.transform.Gradient()(mod)
    aj.analysis.verify(simple)
    check_simple_form(simple["main_adjoint"])
    raw = aj.transform.Gradient(simplify=False)(mod)
    x, y = RNG.standard_normal(shape), RNG.standard_normal(shape)
    s_val, s_grads = aj.build(simple)["main_adjoint"](x, y)
    r_val, r_grads = aj.build(raw)["main_adjoint"](x, y)
    np.testing.assert_allclose(s_val, r_val, rtol=1e-10)
    for s, r in zip(s_grads, r_grads):  # sums in another order: rounding relative to the largest value
        np.testing.assert_allclose(s, r, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(r).max())))
    # Gradient simplified only the adjoint; simplifying it again changes nothing
    again = aj.transform.SimplifyGradient()(simple)
    aj.assert_structural_equal(again["main_adjoint"], simple["main_adjoint"])
    once = aj.transform.SimplifyGradient()(mod)
    aj.assert_structural_equal(aj.transform.SimplifyGradient()(once), once)  # idempotent on any module


# ---- deep chains: one walk, linear in their depth ----

def matmul_chain(layers, n=8):
    """sum(x @ w0 @ w1 @ ...): the adjoint's grad of each w_k is matmul(T(h),
    g) for h = x @ w0 @ ... @ w_k-1, and transpose_of_matmul pushes that T
    down to T(x)."""
    bb = aj.FunctionBuilder("main")
    h = bb.param("x", (4, n), "float64")
    for k in range(layers):
        h = h @ bb.param(f"w{k}", (n, n), "float64")
    return bb.finish(aj.op.sum(h))


def transposed_chain(layers, n=4):
    """v = (v @ w).T, again and again: each layer transposes a matmul of the
    transpose before it."""
    bb = aj.FunctionBuilder("main")
    v, w = bb.param("x", (n, n), "float64"), bb.param("w", (n, n), "float64")
    for _ in range(layers):
        v = (v @ w).T
    return bb.finish(aj.op.sum(v))


def check_deep_form(fn):
    """check_simple_form, and every permute_dims is of a param."""
    check_simple_form(fn)
    params = set(fn.params)
    assert all(b.value.args[0] in params for b in calls(fn, "permute_dims")), fn.script()


def op_counts(fn):
    return collections.Counter(b.value.op for b in calls(fn))


@pytest.mark.parametrize("layers", [3, 128, 129, 1000, 10_000])
def test_gradient_of_a_deep_matmul_chain(layers):
    # Up to 128 layers this was the result, with each layer's transpose
    # pushed down the whole chain again ((layers - 1) * layers / 2
    # rewrites); from 129 on a TransformError ("replacements nest too deep").
    report = aj.transform.Gradient().explain(matmul_chain(layers))
    assert report.counts["SimplifyGradient"]["transpose_of_matmul"] == layers - 1
    adj = report.module["main_adjoint"]
    # the forward chain, its transposed copy from T(x), and two grads a layer
    assert op_counts(adj) == {"matmul": 4 * layers - 1, "permute_dims": layers + 1,
                              "sum": 1, "ones": 1, "broadcast_to": 1}
    check_deep_form(adj)


@pytest.mark.parametrize("layers", [3, 1000])
def test_simplify_gradient_on_a_deep_raw_adjoint(layers):
    # without Gradient's sharing: still one rewrite a layer, and no copy of
    # the transposed chain per layer (there were (layers - 1) * layers / 2 matmuls more)
    raw = aj.transform.Gradient(simplify=False)(matmul_chain(layers))
    report = aj.transform.SimplifyGradient().explain(raw)
    assert report.counts["SimplifyGradient"]["transpose_of_matmul"] == layers - 1
    assert op_counts(report.module["main_adjoint"])["matmul"] == 4 * layers - 1
    check_deep_form(report.module["main_adjoint"])


@pytest.mark.parametrize("layers", [3, 128, 1000])
def test_a_deep_chain_of_transposed_matmuls(layers):
    # T(t) for a t = T(m) already rewritten into a matmul folds into m: one
    # transpose_of_matmul and one fold a layer, where each layer transposed
    # the chain below it back to its start (and 128 layers nested too deep)
    mod = transposed_chain(layers)
    report = aj.transform.SimplifyGradient().explain(mod)
    assert {k: report.counts["SimplifyGradient"][k] for k in ("transpose_of_matmul", "fold_permutes")} == \
        {"transpose_of_matmul": layers, "fold_permutes": layers - 1}
    assert op_counts(report.module["main"])["matmul"] == layers
    check_deep_form(report.module["main"])
    report = aj.transform.Gradient().explain(mod)
    assert report.counts["SimplifyGradient"]["transpose_of_matmul"] == 2 * layers - 1
    check_simple_form(report.module["main_adjoint"])


@pytest.mark.parametrize("chain, layers", [(matmul_chain, 6), (transposed_chain, 7)])
def test_deep_chains_simplified_compute_what_they_did(chain, layers):
    mod = chain(layers)
    inputs = [RNG.standard_normal(p.type.shape) for p in mod["main"].params]
    for simple, raw in [(aj.transform.Gradient()(mod), aj.transform.Gradient(simplify=False)(mod)),
                        (aj.transform.SimplifyGradient()(mod), mod)]:
        for name in raw.functions:
            got, want = aj.build(simple)[name](*inputs), aj.build(raw)[name](*inputs)
            for g, w in zip(flat(got), flat(want)):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(w).max())))


def flat(out):
    return [a for o in out for a in flat(o)] if isinstance(out, tuple) else [np.asarray(out)]


# ---- matmul against a broadcast scalar (the seed of a sum or mean loss) ----

LINEAR_LOSS = '''\
@function
def main(x: Tensor(({m}, {k}), "{dtype}"), w: Tensor(({n}, {k}), "{dtype}")) -> Tensor((), "{dtype}"):
    lv: Tensor(({k}, {n}), "{dtype}") = permute_dims(w)
    lv1: Tensor(({m}, {n}), "{dtype}") = matmul(x, lv)
    gv: Tensor((), "{dtype}") = {loss}(lv1)
    return gv
'''


def linear_loss(loss="sum", m=64, k=32, n=48, dtype="float32"):
    return aj.parse(LINEAR_LOSS.format(loss=loss, m=m, k=k, n=n, dtype=dtype))

# d sum(x @ w.T) / dx = ones @ w: every row is the column sums of w (and
# likewise for w); no GEMM, no transpose
LINEAR_SUM_ADJOINT = '''\
@function
def main_adjoint(x: Tensor((64, 32), "float32"), w: Tensor((48, 32), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((64, 32), "float32"), Tensor((48, 32), "float32"))):
    lv: Tensor((32, 48), "float32") = permute_dims(w)
    lv1: Tensor((64, 48), "float32") = matmul(x, lv)
    gv: Tensor((), "float32") = sum(lv1)
    lv_1: Tensor((1, 32), "float32") = sum(w, axis=[-2], keepdims=True)
    x_adjoint: Tensor((64, 32), "float32") = broadcast_to(lv_1, (64, 32))
    lv_2: Tensor((1, 32), "float32") = sum(x, axis=[-2], keepdims=True)
    w_adjoint: Tensor((48, 32), "float32") = broadcast_to(lv_2, (48, 32))
    return (gv, (x_adjoint, w_adjoint))
'''

# mean: each row or column sum is scaled by 1 / 3072, then broadcast
LINEAR_MEAN_ADJOINT = '''\
@function
def main_adjoint(x: Tensor((64, 32), "float32"), w: Tensor((48, 32), "float32")) -> Tuple(Tensor((), "float32"), Tuple(Tensor((64, 32), "float32"), Tensor((48, 32), "float32"))):
    lv: Tensor((32, 48), "float32") = permute_dims(w)
    lv1: Tensor((64, 48), "float32") = matmul(x, lv)
    gv: Tensor((), "float32") = mean(lv1)
    lv_1: Tensor((1, 32), "float32") = sum(w, axis=[-2], keepdims=True)
    lv_2: Tensor((1, 32), "float32") = multiply(lv_1, const(0.00032552084, "float32"))
    x_adjoint: Tensor((64, 32), "float32") = broadcast_to(lv_2, (64, 32))
    lv_3: Tensor((1, 32), "float32") = sum(x, axis=[-2], keepdims=True)
    lv_4: Tensor((1, 32), "float32") = multiply(lv_3, const(0.00032552084, "float32"))
    w_adjoint: Tensor((48, 32), "float32") = broadcast_to(lv_4, (48, 32))
    return (gv, (x_adjoint, w_adjoint))
'''


@pytest.mark.parametrize("loss, golden", [("sum", LINEAR_SUM_ADJOINT), ("mean", LINEAR_MEAN_ADJOINT)])
def test_matmul_of_broadcast_seed_becomes_sums(loss, golden):
    adj = aj.transform.Gradient()(linear_loss(loss))["main_adjoint"]
    assert adj.script() == golden, adj.script()
    x, w = RNG.standard_normal((64, 32)), RNG.standard_normal((48, 32))
    scale = 1.0 if loss == "sum" else 1.0 / (64 * 48)
    _, (gx, gw) = aj.build(aj.transform.Gradient()(linear_loss(loss, dtype="float64")))["main_adjoint"](x, w)
    np.testing.assert_allclose(gx, scale * np.ones((64, 48)) @ w, rtol=1e-12)
    np.testing.assert_allclose(gw, scale * np.ones((48, 64)) @ x, rtol=1e-12)


def test_the_adjoint_of_a_mean_squared_error_written_with_power():
    # docs/passes/SimplifyGradient.md: regression, `** 2` (power by a constant)
    # left a broadcast seed, an unfolded 2.0 - 1.0 and a power by it
    bb = aj.FunctionBuilder("main")
    x, w, y = bb.param("x", (2, 3), "float32"), bb.param("w", (3, 4), "float32"), bb.param("y", (2, 4), "float32")
    mod = bb.finish(aj.op.mean((x @ w - y) ** 2))
    adjoint = aj.transform.Gradient(require_grads=["w"])(mod)["main_adjoint"]
    assert [b.value.op for b in adjoint.bindings] == [
        "matmul", "subtract", "power", "mean", "multiply", "multiply", "permute_dims", "matmul"]
    assert 'lv_1_adjoint: Tensor((2, 4), "float32") = multiply(const(0.125, "float32"), lv_4)' in str(adjoint)
    assert 'lv_4: Tensor((2, 4), "float32") = multiply(lv_1, const(2.0, "float32"))' in str(adjoint)


def test_small_matmul_of_broadcast_seed_stays_a_matmul():
    # 2 * 8 * 6 * 4 FLOPs: one matmul instruction beats a sum and a broadcast
    adj = unique_names(aj.transform.Gradient()(linear_loss(m=8, k=4, n=6))["main_adjoint"])
    assert len(calls(adj, "matmul")) == 3 and len(calls(adj, "broadcast_to")) == 1  # the seed's
    check_simple_form(adj)


@st.composite
def broadcast_scalar_matmuls(draw):
    """matmul(a, b) with a or b a broadcast scalar: batch dims that broadcast
    against each other, the scalar of any rank up to its side's, from ones or
    from a param, the other operand given as it is or transposed."""
    m, k, n = (draw(st.sampled_from([1, 3, 24, 40, 64])) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    def side_batch():
        dims = batch[draw(st.integers(0, len(batch))):]
        return tuple(d if draw(st.booleans()) else 1 for d in dims)
    sa, sb = side_batch() + (m, k), side_batch() + (k, n)
    seed_side = draw(st.sampled_from("ab"))
    s_rank = draw(st.integers(0, len(sa if seed_side == "a" else sb)))
    return sa, sb, seed_side, s_rank, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(broadcast_scalar_matmuls())
def test_property_matmul_with_a_broadcast_scalar_operand(case):
    sa, sb, seed_side, s_rank, from_ones, transposed = case
    bb = aj.FunctionBuilder("main")
    shape = sb if seed_side == "a" else sa
    if transposed:  # a param of the transposed shape, transposed back
        other = bb.param("other", shape[:-2] + (shape[-1], shape[-2]), "float64").mT
    else:
        other = bb.param("other", shape, "float64")
    c = bb.param("c", (1,) * s_rank, "float64")
    s = aj.op.ones((1,) * s_rank, "float64") if from_ones else c
    out = aj.op.broadcast_to(s, sa) @ other if seed_side == "a" else other @ aj.op.broadcast_to(s, sb)
    mod = bb.finish(out)
    simple = aj.transform.SimplifyGradient()(mod)
    flops = 2 * int(np.prod(out.type.shape)) * sa[-1]
    assert ("matmul" in simple.script()) == (flops < 2 * 32**3), simple.script()
    check_simple_form(simple["main"])
    inputs = [RNG.standard_normal(p.type.shape) for p in mod["main"].params]
    want = aj.build(mod)["main"](*inputs)
    np.testing.assert_allclose(aj.build(simple)["main"](*inputs), want, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(want).max()))
    aj.assert_structural_equal(aj.transform.SimplifyGradient()(simple), simple)


def test_matmul_with_an_out_dtype_or_symbolic_dims_is_kept():
    text = '''\
@function
def main(c: Tensor((), "float32"), b: Tensor(("n", 64), "float32"), d: Tensor((64, 64), "float32")) -> Tuple(Tensor((64, 64), "float32"), Tensor((64, 64), "float64")):
    a: Tensor((64, "n"), "float32") = broadcast_to(c, (64, "n"))
    r: Tensor((64, 64), "float32") = matmul(a, b)
    e: Tensor((64, 64), "float32") = broadcast_to(c, (64, 64))
    f: Tensor((64, 64), "float64") = matmul(e, d, out_dtype="float64")
    return (r, f)
'''
    mod = aj.parse(text)
    assert len(calls(aj.transform.SimplifyGradient()(mod)["main"], "matmul")) == 2


@pytest.mark.parametrize("x_shape, shape, moved", [
    ((1, 5), (4, 5), True),         # a row: T(x) is a reshape
    ((3, 1), (2, 3, 4), False),     # another rank: left alone
    ((2, 1, 1), (2, 6, 4), True),   # both last dims unit: T(x) is x
    ((1, 3, 1), (2, 3, 4), True),
    ((1, 3, 5), (2, 3, 5), False),  # a full matrix would be moved: left alone
])
def test_transpose_of_a_broadcast_row_or_column(x_shape, shape, moved):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", x_shape, "float64")
    mod = bb.finish(aj.op.broadcast_to(x, shape).mT)
    simple = aj.transform.SimplifyGradient()(mod)
    assert ("permute_dims" not in simple.script()) == moved, simple.script()
    check_simple_form(simple["main"])
    xs = RNG.standard_normal(x_shape)
    np.testing.assert_array_equal(aj.build(simple)["main"](xs), aj.build(mod)["main"](xs))


def test_standalone_passes():
    text = '''\
@function
def main(x: Tensor((2, 3), "float32")) -> Tensor((2, 3), "float32"):
    a = permute_dims(x)
    b = permute_dims(a)
    c = add(b, b)
    d = add(b, b)
    e = multiply(c, d)
    unused = exp(e)
    r = reshape(e, (2, 3))
    return r
'''
    mod = aj.parse(text)
    simplified = aj.transform.SimplifyGradient()(mod)
    assert [b.value.op for b in simplified["main"].bindings] == ["add", "add", "multiply"]
    cse = aj.transform.EliminateCommonSubexpr()(simplified)
    assert [b.value.op for b in cse["main"].bindings] == ["add", "multiply"]
    dce = aj.transform.DeadCodeElimination()(mod)
    assert "exp" not in dce.script() and "exp" in mod.script()
    pipeline = aj.transform.Sequential([aj.transform.SimplifyGradient(), aj.transform.EliminateCommonSubexpr()])
    aj.assert_structural_equal(pipeline(mod), cse)


def test_simplify_false_keeps_raw_form():
    raw = unique_names(aj.transform.Gradient(simplify=False)(aj.parse(examples.TRANSPOSED_MATMUL))["main_adjoint"])
    defs = bound(raw)
    stacked = [n for n, v in defs.items() if is_t(v) and is_t(defs.get(v.args[0].name_hint))]
    assert stacked, "the raw adjoint should still hold a transpose of a transpose"


def test_malformed_module_gives_verify_error():
    t = aj.TensorType((3,), "float32")
    x, a, b = aj.Var("x", t), aj.Var("a", t), aj.Var("b", t)
    fn = aj.Function([x], [(a, aj.Call("add", [x, b])), (b, aj.Call("add", [x, x]))], a)
    with pytest.raises(aj.VerifyError):
        aj.analysis.verify(aj.transform.SimplifyGradient()(aj.Module({"main": fn})))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_property_dce_keeps_exactly_what_the_result_needs(data):
    # Random DAGs of up to 300 bindings, each using one or two earlier values
    # (uses reach far back, so the set of wanted vars grows, shrinks and
    # wraps around); DCE must keep exactly the bindings the result reaches.
    n = data.draw(st.integers(1, 300))
    T = aj.TensorType((2,), "float32")
    x = aj.Var("x", T)
    vars_, bindings, uses = [x], [], {}
    for k in range(n):
        picks = data.draw(st.lists(st.integers(0, len(vars_) - 1), min_size=1, max_size=2))
        args = [vars_[i] for i in picks] if len(picks) == 2 else [vars_[picks[0]]] * 2
        v = aj.Var(f"v{k}", T)
        bindings.append((v, aj.Call("add", args)))
        uses[v.name_hint] = [a.name_hint for a in args]
        vars_.append(v)
    ret = vars_[data.draw(st.integers(1, len(vars_) - 1))] if n else x
    wanted, live = {ret.name_hint}, []
    for v, _ in reversed(bindings):
        if v.name_hint in wanted:
            live.append(v.name_hint)
            wanted.update(uses[v.name_hint])
    mod = aj.Module({"main": aj.Function([x], bindings, ret)})
    kept = aj.transform.DeadCodeElimination()(mod)["main"]
    assert [b.var.name_hint for b in kept.bindings] == live[::-1]
