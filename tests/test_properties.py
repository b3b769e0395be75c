"""Properties of every pass over random programs (programs.py), in float64:
each pass's output verifies and computes what its input computes; Gradient
agrees with torch.autograd and with central differences; ConvertDType's
float32 copy converts back exactly and, in float64 again, computes the same;
print/parse round-trips; structurally equal modules hash equal; passes that
should be are idempotent. The Hypothesis profile (conftest.py) sets the number of examples:
300 per property in CI, 20,000 with ADJOINT_HYPOTHESIS_PROFILE=long."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note

import adjoint as aj
from adjoint import training
from programs import programs

try:
    import torch

    import torch_programs
except ImportError:
    torch = None

T = aj.transform

GRADIENTS = [T.Gradient(), T.Gradient(simplify=False)]
# The passes that keep every function's signature. A new pass joins every property here.
OTHERS = [
    T.SimplifyGradient(),
    T.DeadCodeElimination(),
    T.EliminateCommonSubexpr(),
    T.ReorderPermuteDimsAfterConcat(),
    T.CombineParallelMatmul(),
    T.ReassociateMatmul(),
]
# ConvertDType changes dtypes (the programs are float64): its own property below.
TO_FLOAT32 = T.ConvertDType("float32", from_dtype="float64")
TO_FLOAT64 = T.ConvertDType("float64")
CONVERSIONS = [TO_FLOAT32, T.Sequential([TO_FLOAT32, TO_FLOAT64])]
# Every pass the properties run: each alone, the others in one pipeline, and each other after each Gradient.
PASSES = [*GRADIENTS, *OTHERS, T.Sequential(OTHERS), *(T.Sequential([g, p]) for g in GRADIENTS for p in OTHERS)]
# Passes that change nothing when run on their own output.
IDEMPOTENT = [T.SimplifyGradient(), T.DeadCodeElimination(), T.EliminateCommonSubexpr(), T.ReorderPermuteDimsAfterConcat(),
              T.CombineParallelMatmul(), T.ReassociateMatmul(), *CONVERSIONS]

# Passes that change signatures, each with its own property below.
LIFT = T.LiftTransformParams()

# Passes reorder float sums (SimplifyGradient turns matmuls into sums): results agree to rounding.
RTOL = 1e-9
# A program whose constants are rounded to float32 (by 6e-8 at most, relatively) computes what it did to this.
CONSTANTS_RTOL = 1e-4


def flat(out) -> list[np.ndarray]:
    """The arrays of a (nested tuple) result, in order."""
    return [a for o in out for a in flat(o)] if isinstance(out, tuple) else [np.asarray(out)]


def flat_torch(out) -> list:
    return [t for o in out for t in flat_torch(o)] if isinstance(out, tuple) else [out]


def assert_close(got, want, rtol: float, what: str) -> None:
    """Equal structure, shapes and dtypes; ints and bools equal; floats within
    rtol of each other, or of the largest element of the array."""
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} arrays, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{what}, array {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=f"{what}, array {i}")
            continue
        scale = max(1.0, float(np.abs(w).max(initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what}, array {i}")


def adjoint_values(mod: aj.Module, inputs: list[np.ndarray], simplify: bool = True):
    """(result, grads) of main's adjoint: all float params, the target field 0."""
    return aj.build(T.Gradient(simplify=simplify)(mod))["main_adjoint"](*inputs)


def float_params(prog) -> list[int]:
    return [i for i, p in enumerate(prog.mod["main"].params) if p.type.dtype == "float64"]


@given(programs())
def test_every_pass_output_verifies_and_computes_the_same(prog):
    # main's result, and the raw adjoint's (result, grads), which every adjoint must give
    text = prog.mod.script()
    want = aj.build(prog.mod)["main"](*prog.inputs)
    raw_adjoint = adjoint_values(prog.mod, prog.inputs, simplify=False)
    assert_close(raw_adjoint[0], want, RTOL, "the adjoint's result vs main's")
    main = prog.mod["main"]
    for p in PASSES:
        note(f"pass: {p!r}")
        out = p(prog.mod)
        aj.analysis.verify(out)
        kept = out["main"]
        assert ([q.type for q in kept.params], kept.ret_type, kept.attrs) == \
            ([q.type for q in main.params], main.ret_type, main.attrs), f"{p!r} changed main's signature or attrs"
        if p in GRADIENTS:
            aj.assert_structural_equal(kept, main)  # Gradient leaves the function as it was
        exe = aj.build(out)
        assert_close(exe["main"](*prog.inputs), want, RTOL, f"{p!r}: main")
        if "main_adjoint" in out:
            assert_close(exe["main_adjoint"](*prog.inputs), raw_adjoint, RTOL, f"{p!r}: main_adjoint")
    assert prog.mod.script() == text, "a pass changed its input module"


@given(programs())
def test_lift_transform_params_computes_the_same(prog):
    # for main and its adjoints: <f>_transform_params on the weights, then <f>
    # on the inputs and that result, gives what <f> gave, to rounding: the
    # executor picks kernels by what else a function holds (a permute_dims
    # feeding only a matmul becomes the GEMM's transpose flag), and BLAS may
    # sum in another order then (a sum of a 32x32 GEMM was 1 ulp apart)
    for mod in [prog.mod, T.Gradient(simplify=False)(prog.mod), T.Gradient()(prog.mod)]:
        want = aj.build(mod)
        out = LIFT(mod)
        aj.analysis.verify(out)
        exe = aj.build(out)
        for name, fn in mod.functions.items():
            if "num_input" not in fn.attrs:
                assert aj.structural_equal(out[name], fn)
                continue
            n = fn.attrs["num_input"]
            lifted = out[name]
            # frozen may name lifted values made of constants alone, which training must not change
            assert {k: v for k, v in lifted.attrs.items() if k != "frozen"} == {
                k: v for k, v in fn.attrs.items() if k != "frozen"}
            assert set(lifted.frozen) <= {p.name_hint for p in lifted.params[n:]}
            assert [p.type for p in lifted.params[:n]] == [p.type for p in fn.params[:n]]
            assert not any(isinstance(b.value, aj.Call) and b.var in set(out[f"{name}_transform_params"].params)
                           for b in lifted.bindings)
            transformed = exe[f"{name}_transform_params"](*prog.inputs[n:])
            assert_close(exe[name](*prog.inputs[:n], *transformed), want[name](*prog.inputs), RTOL, f"lifted {name}")


def as_float64(out):
    """A (nested tuple) result with its float32 arrays as float64."""
    if isinstance(out, tuple):
        return tuple(as_float64(o) for o in out)
    out = np.asarray(out)
    return out.astype(np.float64) if out.dtype == np.float32 else out


@given(programs(int_divides=True))
def test_convert_dtype_round_trips_and_computes_the_same(prog):
    # main and its raw adjoint in float32 (down), and that module back in
    # float64 (up): down holds no float64 value, not even where ints divide
    # to float64; float32 -> float64 -> float32 gives down back exactly; up
    # has the input's signature and, on float32-valued inputs, computes what
    # the input computes but for its constants' rounding to float32; down runs,
    # giving float32 where the input gives float64 (its values are float32
    # arithmetic's: a comparison or an astype to int may flip, so not compared)
    for mod in [prog.mod, T.Gradient(simplify=False)(prog.mod)]:
        down = TO_FLOAT32(mod)
        assert '"float64"' not in down.script()
        up = TO_FLOAT64(down)
        aj.assert_structural_equal(TO_FLOAT32(up), down)
        inputs32 = [x.astype(np.float32) if x.dtype == np.float64 else x for x in prog.inputs]
        inputs = as_float64(tuple(inputs32))
        exe, exe32, exe64 = aj.build(mod), aj.build(down), aj.build(up)
        for name, fn in mod.functions.items():
            assert [p.type for p in up[name].params] == [p.type for p in fn.params] and up[name].ret_type == fn.ret_type
            assert all(p.type.dtype != "float64" for p in down[name].params)
            want = exe[name](*inputs)
            assert_close(exe64[name](*inputs), want, CONSTANTS_RTOL, f"{name} with float32 constants")
            assert [(a.shape, a.dtype) for a in flat(exe32[name](*inputs32))] == \
                [(a.shape, np.dtype(np.float32) if a.dtype == np.float64 else a.dtype) for a in flat(want)]


@given(programs())
def test_reassociate_matmul_never_costs_more(prog):
    # each rewrite is proved no costlier for every dim >= 1, and dead code only
    # leaves: at the program's dims the output's FLOPs (compile-time work
    # free) are at most the input's
    out = T.ReassociateMatmul()(prog.mod)
    before, after = (aj.analysis.estimate_flops(m["main"], compile_time_free=True) for m in (prog.mod, out))
    note(f"FLOPs: {before} -> {after}")
    assert aj.Dim(after).evaluate(prog.dims) <= aj.Dim(before).evaluate(prog.dims)


# Ops whose adjoint depends on which of two mathematically equal values
# rounding made larger (ties of max and maximum, comparisons, the sign of a
# zero): the gradients of the vars they use are not compared with torch's.
TIE_BREAKING = {"max", "min", "maximum", "minimum", "max_pool2d", "relu", "abs", "where", "less", "greater",
                "equal", "astype"}


def vars_of(e) -> list:
    if isinstance(e, aj.Var):
        return [e]
    if isinstance(e, aj.Call):
        return [v for a in e.args for v in vars_of(a)]
    if isinstance(e, aj.Tuple):
        return [v for f in e.fields for v in vars_of(f)]
    if isinstance(e, aj.TupleGetItem):
        return vars_of(e.tuple)
    return []


def tie_free_vars(fn: aj.Function) -> list:
    """The float vars fn binds on which no TIE_BREAKING op depends."""
    tied = set()
    for b in reversed(fn.bindings):
        if b.var in tied or (isinstance(b.value, aj.Call) and b.value.op in TIE_BREAKING):
            tied.update(vars_of(b.value))
    return [b.var for b in fn.bindings
            if b.var not in tied and b.var.type.is_tensor and b.var.type.dtype == "float64"]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@given(programs())
def test_gradient_agrees_with_torch_autograd(prog):
    # the default Gradient (all float params), and one also asked for the float
    # vars main binds
    fn = prog.mod["main"]
    tensors = [torch.tensor(a, requires_grad=a.dtype == np.float64) for a in prog.inputs]
    out, bound = torch_programs.run(fn, tensors, prog.dims)
    loss = out[0] if isinstance(out, tuple) else out
    params = [fn.params[i] for i in float_params(prog)]
    inner = tie_free_vars(fn)
    wrt = [tensors[i] for i in float_params(prog)] + [bound[v] for v in inner]
    torch_grads = torch.autograd.grad(loss, wrt, allow_unused=True) if wrt else []
    want = [np.zeros(t.shape) if g is None else g.numpy() for t, g in zip(wrt, torch_grads)]
    for required in (None, params + inner):
        result, grads = aj.build(T.Gradient(require_grads=required)(prog.mod))["main_adjoint"](*prog.inputs)
        assert_close(result, tuple(t.detach().numpy() for t in flat_torch(out)), 1e-7, "result vs torch")
        assert_close(grads, tuple(want[:len(grads)]), 1e-7, f"grads of {required or 'params'} vs torch.autograd")


DELTA = 1e-6
SAMPLES = 24  # elements per param checked by central differences


def central_differences(f, inputs: list[np.ndarray], i: int, elements: np.ndarray, delta: float) -> np.ndarray:
    """(f(x + d) - f(x - d)) / 2d for the given flat elements of input i."""
    xs = [np.array(x, copy=True) for x in inputs]
    flat_x = xs[i].reshape(-1)
    out = np.empty(len(elements))
    for n, j in enumerate(elements):
        orig = flat_x[j]
        flat_x[j] = orig + delta
        hi = float(f(*xs))
        flat_x[j] = orig - delta
        lo = float(f(*xs))
        flat_x[j] = orig
        out[n] = (hi - lo) / (2 * delta)
    return out


@given(programs())
def test_gradient_agrees_with_central_differences(prog):
    exe = aj.build(T.Gradient()(prog.mod))
    _, grads = exe["main_adjoint"](*prog.inputs)
    forward = exe["main"]

    def target(*xs):
        out = forward(*xs)
        return out[0] if isinstance(out, tuple) else out

    scale = max(1.0, abs(float(target(*prog.inputs))))
    rng = np.random.default_rng(0)
    for i, g in zip(float_params(prog), grads):
        elements = np.arange(g.size) if g.size <= SAMPLES else rng.choice(g.size, SAMPLES, replace=False)
        analytic = g.reshape(-1)[elements]
        numeric = central_differences(target, prog.inputs, i, elements, DELTA)
        bad = np.abs(analytic - numeric) > 1e-5 * np.abs(numeric) + 1e-7 * scale
        if bad.any():
            # a kink or a jump (relu, max, where, astype to int) within DELTA of an
            # input moves a central difference; a smaller step steps off it
            fine = central_differences(target, prog.inputs, i, elements, DELTA / 16)
            bad &= np.abs(analytic - fine) > 1e-4 * np.abs(fine) + 1e-6 * scale
        assert not bad.any(), (f"param {i}, flat elements {elements[bad].tolist()}: analytic {analytic[bad]}, "
                               f"numeric {numeric[bad]}")


@given(programs())
def test_print_parse_round_trips(prog):
    for p in [None, *PASSES, *CONVERSIONS]:
        mod = prog.mod if p is None else p(prog.mod)
        text = mod.script()
        again = aj.parse(text)
        aj.assert_structural_equal(again, mod)
        assert again.script() == text, f"{p!r}: print(parse(text)) != text"


@given(programs())
def test_equal_modules_hash_equal(prog):
    again = prog.rebuild()
    aj.assert_structural_equal(again, prog.mod)
    assert aj.structural_hash(again) == aj.structural_hash(prog.mod)
    for p in [*PASSES, *CONVERSIONS]:
        out, out_again = p(prog.mod), p(again)
        aj.assert_structural_equal(out_again, out)
        reparsed = aj.parse(out.script())
        assert aj.structural_hash(out_again) == aj.structural_hash(out) == aj.structural_hash(reparsed), repr(p)


@given(programs())
def test_passes_are_idempotent(prog):
    inputs = [prog.mod, T.Gradient(simplify=False)(prog.mod), T.Gradient()(prog.mod)]
    for p in IDEMPOTENT:
        for mod in inputs:
            once = p(mod)
            aj.assert_structural_equal(p(once), once)


def _scaled(pred, label):
    """A loss for any float scalar prediction: pred * label."""
    return pred * label


_scaled.label_types = lambda t: [((), t.dtype)]


@given(programs())
def test_train_step_computes_the_loss_and_the_update(prog):
    # AppendLoss + train_step (SetupTrainer) over a program with float
    # weights: step's loss is main's result times the label, and its new
    # weights are w - lr * (the adjoint's grad), with SGD and with Adam's
    # first step (whose update is lr * grad / (|grad| + eps) per element)
    fn = prog.mod["main"]
    n = fn.attrs.get("num_input")
    weights = fn.params[n:] if n is not None else []
    if not weights or any(p.type.dtype != "float64" for p in weights):
        return
    with_loss = training.AppendLoss("main", _scaled)(prog.mod)
    grads = aj.build(T.Gradient("main_loss", require_grads=[p.name_hint for p in weights])(with_loss))
    label, lr = np.float64(0.75), np.float64(0.1)
    args = [*prog.inputs[:n], label, *prog.inputs[n:]]
    result, want_grads = grads["main_loss_adjoint"](*args)
    for opt in [training.SGD(lr=0.1), training.Adam(lr=0.1)]:
        mod = training.train_step(prog.mod, _scaled, opt)
        aj.analysis.verify(mod)
        state = opt.init_state([(p.name_hint, tuple(prog.inputs[n + i].shape), "float64") for i, p in enumerate(weights)])
        out = aj.build(mod)["step"](*args, *state, lr)
        loss, new = out[0], out[1:1 + len(weights)]
        assert_close(loss, result[0] if isinstance(result, tuple) else result, RTOL, f"{opt} loss")
        for w, g, got in zip(prog.inputs[n:], want_grads, new):
            step = lr * g if isinstance(opt, training.SGD) else lr * g / (np.abs(g) + 1e-8)
            assert_close(got, w - step, RTOL, f"{opt} update")
