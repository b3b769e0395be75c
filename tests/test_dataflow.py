"""The dataflow index (analysis/dataflow.h), through the passes that read it:
liveness in DeadCodeElimination, relevance (forward dependence among the
live bindings) in Gradient, users in the executor's transpose folding,
definitions in the verifier, and the operand walk in EliminateCommonSubexpr.
Each test fails when the index gets its part wrong."""

import numpy as np
import pytest

import adjoint as aj

T = 'Tensor((2, 2), "float64")'
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


def binding_names(fn):
    return [b.var.name_hint for b in fn.bindings]


# ---- liveness: DeadCodeElimination ----


def test_dce_follows_tuples_tuple_items_and_aliases():
    mod = aj.parse(f"""\
@function
def main(a: {T}, b: {T}, c: {T}):
    t = (a, b)
    dead_t = (b, c)
    n = (t, c)
    inner = n[0]
    q = inner[1]
    al = q
    dead_alias = al
    dead_item = dead_t[0]
    r = multiply(al, a)
    dead = exp(r)
    return r
""")
    kept = aj.transform.DeadCodeElimination()(mod)["main"]
    assert binding_names(kept) == ["t", "n", "inner", "q", "al", "r"]


def test_dce_keeps_what_a_returned_tuple_expr_uses():
    mod = aj.parse(f"""\
@function
def main(a: {T}, b: {T}):
    x = add(a, b)
    y = exp(b)
    dead = exp(y)
    return (x, (a, y))
""")
    assert binding_names(aj.transform.DeadCodeElimination()(mod)["main"]) == ["x", "y"]


def test_dce_of_a_function_returning_a_param_drops_every_binding():
    mod = aj.parse(f"""\
@function
def main(a: {T}):
    x = exp(a)
    t = (x, a)
    return a
""")
    assert binding_names(aj.transform.DeadCodeElimination()(mod)["main"]) == []


def test_dce_keeps_a_chain_only_the_last_binding_reaches():
    # Each binding is used once, by the next one: the sweep must carry
    # "wanted" across the whole chain, not only one step back.
    lines = [f"@function\ndef main(a: {T}):", "    v0 = exp(a)"]
    lines += [f"    v{k} = add(v{k - 1}, a)" for k in range(1, 50)]
    lines += ["    unused = exp(v10)", "    return v49"]
    kept = aj.transform.DeadCodeElimination()(aj.parse("\n".join(lines) + "\n"))["main"]
    assert binding_names(kept) == [f"v{k}" for k in range(50)]


def test_dce_of_a_large_random_function_keeps_exactly_what_the_return_reaches():
    # Thousands of vars wanted at once, filed and removed in every order:
    # the liveness set grows many times and deletes from long runs of
    # neighbouring slots. Checked against liveness computed here.
    rng = np.random.default_rng(7)
    n = 20_000
    names = ["a", "b"] + [f"v{k}" for k in range(n)]
    uses = {}
    lines = [f"@function\ndef main(a: {T}, b: {T}):"]
    for k in range(n):
        lo = max(0, k + 2 - 3000) if k % 2 else 0  # half near their use, half anywhere before
        x, y = (names[int(i)] for i in rng.integers(lo, k + 2, size=2))
        uses[f"v{k}"] = (x, y)
        lines.append(f"    v{k} = add({x}, {y})")
    returned = sorted({f"v{int(k)}" for k in rng.integers(0, n, size=3000)}, key=lambda s: int(s[1:]))
    lines.append(f"    return ({', '.join(returned)})")
    wanted, live = set(returned), set()
    for k in reversed(range(n)):
        if f"v{k}" in wanted:
            live.add(f"v{k}")
            wanted.update(uses[f"v{k}"])
    kept = aj.transform.DeadCodeElimination()(aj.parse("\n".join(lines) + "\n"))["main"]
    assert binding_names(kept) == [f"v{k}" for k in range(n) if f"v{k}" in live]
    assert 0 < len(live) < n


# ---- relevance: Gradient ----

RELEVANCE = f"""\
@function
def main(x: {T}, w: {T}, u: {T}, k: Tensor((2, 2), "int64")) -> Tensor((), "float64"):
    y = exp(w)
    dead = exp(x)
    t = (x, y)
    a = t[0]
    b = t[1]
    z = multiply(a, b)
    out = sum(z)
    return out
"""


def adjoint_of(text, **options):
    return aj.transform.Gradient(**options)(aj.parse(text))


def test_gradient_of_unused_and_dead_only_params_is_zeros():
    mod = adjoint_of(f"""\
@function
def main(x: {T}, w: {T}, u: {T}) -> Tensor((), "float64"):
    dead = exp(w)
    out = sum(x)
    return out
""")
    x, w, u = rand(2, 2), rand(2, 2), rand(2, 2)
    _, (gx, gw, gu) = aj.build(mod)["main_adjoint"](x, w, u)
    np.testing.assert_array_equal(gx, np.ones((2, 2)))
    np.testing.assert_array_equal(gw, np.zeros((2, 2)))
    np.testing.assert_array_equal(gu, np.zeros((2, 2)))


def test_gradient_flows_through_tuples_and_tuple_items():
    mod = adjoint_of(RELEVANCE)
    x, w, u = rand(2, 2), rand(2, 2), rand(2, 2)
    k = np.zeros((2, 2), np.int64)
    out, (gx, gw, gu) = aj.build(mod)["main_adjoint"](x, w, u, k)
    np.testing.assert_allclose(out, np.sum(x * np.exp(w)), rtol=1e-12)
    np.testing.assert_allclose(gx, np.exp(w), rtol=1e-12)
    np.testing.assert_allclose(gw, x * np.exp(w), rtol=1e-12)
    np.testing.assert_array_equal(gu, np.zeros((2, 2)))


def test_gradient_emits_no_adjoint_for_values_that_do_not_depend_on_a_required_var():
    # Only x is required: y = exp(w) does not depend on it, and `dead` is not
    # live, so neither gets an adjoint, and no VJP of exp runs.
    fn = adjoint_of(RELEVANCE, require_grads=["x"], simplify=False)["main_adjoint"]
    names = binding_names(fn)
    assert "a_adjoint" in names
    for absent in ("y_adjoint", "w_adjoint", "dead_adjoint", "u_adjoint", "x_adjoint"):
        assert absent not in names
    assert sum(1 for b in fn.bindings if isinstance(b.value, aj.Call) and b.value.op == "exp") == 2
    x, w = rand(2, 2), rand(2, 2)
    _, (gx,) = aj.build(aj.Module({"main_adjoint": fn}))["main_adjoint"](x, w, rand(2, 2), np.zeros((2, 2), np.int64))
    np.testing.assert_allclose(gx, np.exp(w), rtol=1e-12)


def test_gradient_of_a_required_intermediate_var():
    mod = adjoint_of(f"""\
@function
def main(x: {T}) -> Tensor((), "float64"):
    h = exp(x)
    dead = exp(h)
    s = multiply(h, h)
    out = sum(s)
    return out
""", require_grads=["h", "dead", "x"])
    x = rand(2, 2)
    _, (gh, gdead, gx) = aj.build(mod)["main_adjoint"](x)
    np.testing.assert_allclose(gh, 2 * np.exp(x), rtol=1e-12)
    np.testing.assert_array_equal(gdead, np.zeros((2, 2)))
    np.testing.assert_allclose(gx, 2 * np.exp(2 * x), rtol=1e-12)


def test_gradient_of_an_intermediate_var_alone():
    # Nothing before h is required: what depends on h is relevant because h is.
    mod = adjoint_of(f"""\
@function
def main(x: {T}) -> Tensor((), "float64"):
    h = exp(x)
    s = multiply(h, h)
    t = (s, x)
    first = t[0]
    out = sum(first)
    return out
""", require_grads=["h"])
    x = rand(2, 2)
    _, (gh,) = aj.build(mod)["main_adjoint"](x)
    np.testing.assert_allclose(gh, 2 * np.exp(x), rtol=1e-12)


# ---- users: the executor's transpose folding ----


def transposed_module(use):
    """main(a, b) with t = permute_dims(b) used by a matmul and by `use`."""
    return aj.parse(f"""\
@function
def main(a: {T}, b: {T}):
    t = permute_dims(b)
    p = matmul(a, t)
{use}
""")


@pytest.mark.parametrize("use,result,folded", [
    ("    q = matmul(t, a)\n    r = add(p, q)\n    return r", lambda a, b: a @ b.T + b.T @ a, 1),
    ("    r = add(p, t)\n    return r", lambda a, b: a @ b.T + b.T, 0),
    ("    return (p, t)", lambda a, b: (a @ b.T, b.T), 0),
    ("    c = concat((p, t), axis=0)\n    return c", lambda a, b: np.concatenate([a @ b.T, b.T]), 0),
    ("    al = t\n    r = add(p, al)\n    return r", lambda a, b: a @ b.T + b.T, 0),
    ("    tt = (t, p)\n    s = tt[1]\n    return s", lambda a, b: a @ b.T, 0),
    ("    return p", lambda a, b: a @ b.T, 1),
])
def test_a_transpose_folds_into_gemm_only_when_every_use_is_a_matmul_operand(use, result, folded):
    fn = aj.build(transposed_module(use))["main"]
    a, b = rand(2, 2), rand(2, 2)
    got, want = fn(a, b), result(a, b)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert fn.num_folded_transposes == folded


def test_an_unused_transpose_is_not_folded():
    fn = aj.build(transposed_module("    unused = permute_dims(a)\n    return p"))["main"]
    assert fn.num_folded_transposes == 1  # t, not `unused`
    a, b = rand(2, 2), rand(2, 2)
    np.testing.assert_allclose(fn(a, b), a @ b.T, rtol=1e-12)


# ---- definitions: the verifier ----

T3 = aj.TensorType((3,), "float32")


def fn(params, bindings, ret):
    return aj.Module({"main": aj.Function(params, bindings, ret)})


def test_free_var_inside_a_tuple_argument():
    x, z, c = aj.Var("x", T3), aj.Var("z", T3), aj.Var("c", aj.TensorType((6,), "float32"))
    mod = fn([x], [(c, aj.Call("concat", [aj.Tuple([x, z])]))], c)
    with pytest.raises(aj.VerifyError, match=r"binding 0 'c': uses var 'z', which the function does not bind"):
        aj.analysis.verify(mod)


def test_tuple_item_of_a_later_tuple():
    x, q = aj.Var("x", T3), aj.Var("q", T3)
    t = aj.Var("t", aj.TupleType([T3, T3]))
    mod = fn([x], [(q, aj.TupleGetItem(t, 0)), (t, aj.Tuple([x, x]))], q)
    with pytest.raises(aj.VerifyError, match=r"binding 0 'q': uses var 't' before its binding \(binding 1 't'\)"):
        aj.analysis.verify(mod)


def test_var_used_in_its_own_binding():
    x, a = aj.Var("x", T3), aj.Var("a", T3)
    mod = fn([x], [(a, aj.Call("add", [x, a]))], a)
    with pytest.raises(aj.VerifyError, match=r"binding 0 'a': uses var 'a' before its binding \(binding 0 'a'\)"):
        aj.analysis.verify(mod)


def test_free_var_in_a_nested_returned_tuple():
    x, z = aj.Var("x", T3), aj.Var("z", T3)
    with pytest.raises(aj.VerifyError, match=r"the return value: uses var 'z'"):
        aj.analysis.verify(fn([x], [], aj.Tuple([x, aj.Tuple([x, z])])))


def test_var_of_another_function_is_free_here():
    x, y = aj.Var("x", T3), aj.Var("y", T3)
    a = aj.Var("a", T3)
    other = aj.Function([y], [(a, aj.Call("exp", [y]))], a)
    main = aj.Function([x], [], a)
    problems = aj.analysis.problems(aj.Module({"other": other, "main": main}))
    assert problems == ["function 'main', the return value: uses var 'a', which the function does not bind (a free var)"]


# ---- the operand walk: EliminateCommonSubexpr ----


def test_cse_shares_repeated_tuples_items_constants_and_the_calls_on_them():
    mod = aj.parse(f"""\
@function
def main(a: {T}, b: {T}):
    t1 = (a, b)
    t2 = (a, b)
    c1 = concat(t1, axis=0)
    c2 = concat(t2, axis=0)
    n1 = ((a, b), a)
    n2 = ((a, b), a)
    q1 = n1[0]
    q2 = n2[0]
    r1 = q1[1]
    r2 = q2[1]
    swapped = (b, a)
    other = n1[1]
    k1 = const(1.0, "float64")
    k2 = const(1.0, "float64")
    k3 = const(2.0, "float64")
    m1 = multiply(a, k1)
    m2 = multiply(a, k2)
    m3 = multiply(a, k3)
    out = (c1, c2, r1, r2, swapped, other, m1, m2, m3)
    return out
""")
    shared = aj.transform.EliminateCommonSubexpr()(mod)["main"]
    assert binding_names(shared) == ["t1", "c1", "n1", "q1", "r1", "swapped", "other", "k1", "k3", "m1", "m3", "out"]
    assert [f.name_hint for f in shared.bindings[-1].value.fields] == [
        "c1", "c1", "r1", "r1", "swapped", "other", "m1", "m1", "m3"]
    a, b = rand(2, 2), rand(2, 2)
    for got, want in zip(aj.build(aj.Module({"main": shared}))["main"](a, b), aj.build(mod)["main"](a, b)):
        np.testing.assert_array_equal(got, want)
