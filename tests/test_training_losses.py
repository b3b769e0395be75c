"""The loss builders of adjoint.training against PyTorch's functions of the
same names: values and gradients (aj.transform.Gradient + aj.build against
torch autograd) for every loss, reduction and option, float64 at rtol 1e-9
and float32 at rtol 1e-5; Hypothesis over random shapes and options for
cross_entropy and binary_cross_entropy_with_logits; label_types; binding
options; and the error messages of bad input.

A "none" loss y is differentiated as sum(y * w) with a random w, so the
adjoint reaching the loss is not uniform."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint.training import losses as T

RNG = np.random.default_rng(16)
REDUCTIONS = ["mean", "sum", "none"]
RTOL = {"float64": 1e-9, "float32": 1e-5}
ATOL = {"float64": 1e-12, "float32": 1e-6}
TORCH_NAMES = {
    "mse": "mse_loss", "l1": "l1_loss", "huber": "huber_loss", "cross_entropy": "cross_entropy",
    "nll": "nll_loss", "binary_cross_entropy_with_logits": "binary_cross_entropy_with_logits",
}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# ---- inputs ----

def probabilities(shape, axis, dtype, rng=RNG):
    z = rng.standard_normal(shape)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(dtype)


def class_indices(pred_shape, index_dtype="int64", ignore_index=-100, ignored=0.0, rng=RNG):
    axis = 0 if len(pred_shape) == 1 else 1
    shape = pred_shape[:axis] + pred_shape[axis + 1:]
    t = rng.integers(0, pred_shape[axis], size=shape)
    t = np.where(rng.random(shape) < ignored, ignore_index, t)
    return np.asarray(t, dtype=index_dtype)


def log_probabilities(shape, dtype, rng=RNG):
    axis = 0 if len(shape) == 1 else 1
    return np.log(probabilities(shape, axis, "float64", rng)).astype(dtype)


def case_inputs(name, shape, dtype, target_kind="indices", index_dtype="int64", ignored=0.0, rng=RNG, **options):
    """[pred, target] arrays for a loss."""
    if name in ("mse", "l1", "huber"):
        return [rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)]
    if name == "binary_cross_entropy_with_logits":
        logits = (3 * rng.standard_normal(shape)).astype(dtype)
        target = rng.random(shape) if target_kind == "probabilities" else rng.integers(0, 2, shape)
        return [logits, np.asarray(target, dtype)]
    pred = rng.standard_normal(shape).astype(dtype) if name == "cross_entropy" else log_probabilities(shape, dtype, rng)
    if target_kind == "probabilities":
        return [pred, probabilities(shape, 0 if len(shape) == 1 else 1, dtype, rng)]
    return [pred, class_indices(shape, index_dtype, options.get("ignore_index", -100), ignored, rng)]


# ---- running a loss in adjoint and in torch ----

def loss_modules(loss, arrays, **options):
    """(value module, gradient module) of loss over params p, t (and pos_weight
    when an array); the gradient module's main is sum(loss * w) for "none"."""
    specs = [("p", arrays[0]), ("t", arrays[1])] + ([("pos_weight", arrays[2])] if len(arrays) > 2 else [])

    def build(weighted):
        bb = aj.FunctionBuilder("main")
        params = {n: bb.param(n, a.shape, a.dtype.name) for n, a in specs}
        if "pos_weight" in params:
            options["pos_weight"] = params["pos_weight"]
        y = loss(params["p"], params["t"], **options)
        if weighted and y.type.ndim > 0:
            y = aj.op.sum(y * bb.param("w", tuple(y.type.shape), y.type.dtype))
        return bb.finish(y)

    return build(False), build(True)


def run_adjoint(loss, arrays, weight_seed=0, **options):
    """(value, grads of the float pred and target, w) computed by adjoint
    (torch gives pos_weight no gradient)."""
    value_mod, grad_mod = loss_modules(loss, arrays, **dict(options))
    value = aj.build(value_mod)["main"](*arrays)
    w_params = [p for p in grad_mod["main"].params if p.name_hint == "w"]
    w = [np.random.default_rng(weight_seed).standard_normal(tuple(p.type.shape)).astype(value.dtype)
         for p in w_params]
    floats = [p.name_hint for p in grad_mod["main"].params[:2] if p.type.dtype.startswith("float")]
    adjoint = aj.transform.Gradient(require_grads=floats)(grad_mod)
    _, grads = aj.build(adjoint)["main_adjoint"](*arrays, *w)
    return value, list(grads), w


def run_torch(torch, name, arrays, w, **options):
    """(value, grads of the float arrays) of torch.nn.functional's loss."""
    tensors = [torch.tensor(a, requires_grad=a.dtype.kind == "f" and i < 2) for i, a in enumerate(arrays)]
    if len(tensors) > 2:
        options["pos_weight"] = tensors[2]
    if name == "huber" and "delta" in options:
        options["delta"] = float(options["delta"])
    if options.get("weight") is not None:
        options["weight"] = torch.tensor(np.array(options["weight"], arrays[0].dtype))
    options.pop("targets", None)
    value = getattr(torch.nn.functional, TORCH_NAMES[name])(tensors[0], tensors[1], **options)
    target = (value * torch.tensor(w[0])).sum() if w else value
    target.backward()
    return value.detach().numpy(), [t.grad.numpy() for t in tensors if t.requires_grad]


def check_against_torch(torch, name, arrays, **options):
    loss = getattr(T, name)
    value, grads, w = run_adjoint(loss, arrays, **options)
    expected, expected_grads = run_torch(torch, name, arrays, w, **options)
    dtype = arrays[0].dtype.name
    assert value.dtype == arrays[0].dtype and value.shape == expected.shape
    np.testing.assert_allclose(value, expected, rtol=RTOL[dtype], atol=ATOL[dtype])
    assert len(grads) == len(expected_grads)
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=ATOL[dtype])


# ---- every loss x reduction x option, against torch ----

ELEMENTWISE = [("mse", {}), ("l1", {}), ("huber", {}), ("huber", {"delta": 0.5}), ("huber", {"delta": 2})]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("name, options", ELEMENTWISE)
def test_elementwise_losses_match_torch(torch, name, options, shape, reduction, dtype):
    check_against_torch(torch, name, case_inputs(name, shape, dtype), reduction=reduction, **options)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, options", ELEMENTWISE)
def test_elementwise_losses_at_ties_match_torch(torch, name, options, reduction, dtype):
    # pred == target in half the places (exactly, and at +-0): l1's gradient there is
    # PyTorch's sign(0) = 0, not abs's +1
    pred = np.array([1.5, -2.0, 0.0, -0.0, 3.0, 0.25], dtype)
    target = np.array([1.5, 1.0, 0.0, 0.0, -1.0, 0.25], dtype)
    check_against_torch(torch, name, [pred, target], reduction=reduction, **options)


CLASS_SHAPES = [(6,), (8, 5), (3, 4, 2), (2, 3, 2, 2)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25, 1.0])
def test_cross_entropy_with_class_indices_matches_torch(torch, label_smoothing, shape, reduction, dtype):
    arrays = case_inputs("cross_entropy", shape, dtype, ignored=0.3 if len(shape) > 1 else 0.0)
    check_against_torch(torch, "cross_entropy", arrays, reduction=reduction, label_smoothing=label_smoothing)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25, 1.0])
def test_cross_entropy_with_probabilities_matches_torch(torch, label_smoothing, shape, reduction, dtype):
    arrays = case_inputs("cross_entropy", shape, dtype, target_kind="probabilities")
    check_against_torch(torch, "cross_entropy", arrays, reduction=reduction, label_smoothing=label_smoothing)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ignore_index", [-100, 0, 2])
def test_cross_entropy_ignore_index_rows_are_left_out(torch, ignore_index, reduction):
    arrays = case_inputs("cross_entropy", (9, 4), "float64", ignore_index=ignore_index, ignored=0.4)
    check_against_torch(torch, "cross_entropy", arrays, reduction=reduction, ignore_index=ignore_index,
                        label_smoothing=0.1)


def test_cross_entropy_int32_indices(torch):
    arrays = case_inputs("cross_entropy", (5, 3), "float64", index_dtype="int32", ignored=0.3)
    check_against_torch(torch, "cross_entropy", [arrays[0], arrays[1].astype(np.int64)], label_smoothing=0.2)
    value, grads, _ = run_adjoint(T.cross_entropy, arrays, label_smoothing=0.2)
    value64, grads64, _ = run_adjoint(T.cross_entropy, [arrays[0], arrays[1].astype(np.int64)], label_smoothing=0.2)
    assert value == value64 and np.array_equal(grads[0], grads64[0])


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_mean_with_every_row_ignored_is_nan(torch, label_smoothing):
    pred = RNG.standard_normal((3, 4))
    target = np.full(3, -100, np.int64)
    value, _, _ = run_adjoint(T.cross_entropy, [pred, target], label_smoothing=label_smoothing)
    expected, _ = run_torch(torch, "cross_entropy", [pred, target], [], label_smoothing=label_smoothing)
    assert np.isnan(value) and np.isnan(expected)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
def test_nll_matches_torch(torch, shape, reduction, dtype):
    ignored = 0.3 if len(shape) > 1 else 0.0
    check_against_torch(torch, "nll", case_inputs("nll", shape, dtype, ignored=ignored), reduction=reduction)
    arrays = case_inputs("nll", shape, dtype, ignored=ignored, ignore_index=1)
    check_against_torch(torch, "nll", arrays, reduction=reduction, ignore_index=1)


def class_weights(pred_shape, rng=RNG):
    """One weight per class of a prediction, as the tuple the option takes."""
    return tuple(rng.uniform(0.2, 3.0, pred_shape[0 if len(pred_shape) == 1 else 1]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
@pytest.mark.parametrize("target_kind", ["indices", "probabilities"])
def test_cross_entropy_with_class_weights_matches_torch(torch, target_kind, label_smoothing, shape, reduction, dtype):
    arrays = case_inputs("cross_entropy", shape, dtype, target_kind=target_kind, ignored=0.3 if len(shape) > 1 else 0)
    check_against_torch(torch, "cross_entropy", arrays, reduction=reduction, label_smoothing=label_smoothing,
                        weight=class_weights(shape))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
def test_nll_with_class_weights_matches_torch(torch, shape, reduction, dtype):
    arrays = case_inputs("nll", shape, dtype, ignored=0.3 if len(shape) > 1 else 0.0, ignore_index=1)
    check_against_torch(torch, "nll", arrays, reduction=reduction, ignore_index=1, weight=class_weights(shape))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_a_class_weight_var_matches_torch_and_gets_a_gradient(torch, reduction):
    pred, target = case_inputs("cross_entropy", (6, 4), "float64", ignored=0.3)
    weight = np.array(class_weights((6, 4)))
    bb = aj.FunctionBuilder("main")
    x, t, w = bb.param("x", (6, 4), "float64"), bb.param("t", (6,), "int64"), bb.param("w", (4,), "float64")
    loss = T.cross_entropy(x, t, weight=w, label_smoothing=0.2, reduction=reduction)
    mod = bb.finish(loss if reduction != "none" else aj.op.sum(aj.op.multiply(loss, np.arange(6.0))))
    expected = torch.nn.functional.cross_entropy(torch.tensor(pred), torch.tensor(target), weight=torch.tensor(weight),
                                                 label_smoothing=0.2, reduction=reduction)
    if reduction == "none":
        expected = (expected * torch.arange(6.0, dtype=torch.float64)).sum()
    np.testing.assert_allclose(aj.build(mod)["main"](pred, target, weight), expected.numpy(), rtol=1e-12)
    aj.testing.check_gradients(mod, "main", [pred, target, weight], require_grads=["x", "w"])


def test_class_weights_of_a_symbolic_class_count(torch):
    bb = aj.FunctionBuilder("main")
    x, t, w = bb.param("x", ("n", "c"), "float64"), bb.param("t", ("n",), "int64"), bb.param("w", ("c",), "float64")
    mod = bb.finish(T.cross_entropy(x, t, weight=w, label_smoothing=0.4))
    pred, target = case_inputs("cross_entropy", (5, 3), "float64", ignored=0.3)
    weight = np.array(class_weights((5, 3)))
    expected = torch.nn.functional.cross_entropy(torch.tensor(pred), torch.tensor(target), weight=torch.tensor(weight),
                                                 label_smoothing=0.4)
    np.testing.assert_allclose(aj.build(mod)["main"](pred, target, weight), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.05])
def test_weighted_mean_with_every_row_ignored_is_nan_with_a_zero_gradient(torch, label_smoothing):
    # found by Hypothesis: one class, the one target ignored; the mean's 1 / sum(w[y]) is infinite
    arrays = [np.array([0.3]), np.array(0)]
    check_against_torch(torch, "cross_entropy", arrays, ignore_index=0, label_smoothing=label_smoothing, weight=(1.0,))
    value, (grad,), _ = run_adjoint(T.cross_entropy, arrays, ignore_index=0, label_smoothing=label_smoothing,
                                    weight=(1.0,))
    assert np.isnan(value) and np.array_equal(grad, [0.0])


@pytest.mark.parametrize("weight, message", [
    ([1.0, 2.0], r"cross_entropy: weight has 2 entries, but input shape \(4, 3\) has 3 classes"),
    ([1.0, float("nan"), 2.0], r"weight must be None, a 1-D sequence of finite numbers \(one per class\) or an aj.Var"),
    ([[1.0, 2.0, 3.0]], r"weight must be None, a 1-D sequence"),
    ([True, False, True], r"weight must be None, a 1-D sequence"),
    ("abc", r"weight must be None, a 1-D sequence"),
    ([], r"weight must be None, a 1-D sequence"),
    ([[1.0], [1.0, 2.0]], r"cross_entropy: weight must be None, a 1-D sequence .*, got \[\[1.0\], \[1.0, 2.0\]\]$"),
    ([1.0, [2.0, 3.0], 4.0], r"weight must be None, a 1-D sequence"),
])
def test_bad_class_weights_name_the_problem(weight, message):
    bb = aj.FunctionBuilder("main")
    x, t = bb.param("x", (4, 3), "float64"), bb.param("t", (4,), "int64")
    with pytest.raises(aj.TypeInferenceError, match=message):
        T.cross_entropy(x, t, weight=weight)


@pytest.mark.parametrize("shape, dtype", [((4,), "float32"), ((3,), "float64"), ((1, 4), "float64")])
def test_a_class_weight_var_of_another_type_is_refused(shape, dtype):
    bb = aj.FunctionBuilder("main")
    x, t, w = bb.param("x", (2, 4), "float64"), bb.param("t", (2,), "int64"), bb.param("w", shape, dtype)
    with pytest.raises(aj.TypeInferenceError, match=r"nll: weight must be a float64 tensor of shape \(4,\), one "
                                                    r"per class of input shape \(2, 4\), got "):
        T.nll(x, t, weight=w)


POS_WEIGHTS = [None, 1.0, 2.5, "vector", "scalar var"]


def pos_weight_arrays(pos_weight, shape, dtype, rng=RNG):
    """(extra arrays, options) for a pos_weight case."""
    if pos_weight == "vector":
        return [rng.uniform(0.2, 3.0, shape[-1:]).astype(dtype)], {}
    if pos_weight == "scalar var":
        return [np.asarray(rng.uniform(0.2, 3.0), dtype)], {}
    return [], {} if pos_weight is None else {"pos_weight": pos_weight}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6,), (5, 3), (2, 3, 4)])
@pytest.mark.parametrize("pos_weight", POS_WEIGHTS)
@pytest.mark.parametrize("target_kind", ["binary", "probabilities"])
def test_binary_cross_entropy_with_logits_matches_torch(torch, target_kind, pos_weight, shape, reduction, dtype):
    arrays = case_inputs("binary_cross_entropy_with_logits", shape, dtype, target_kind=target_kind)
    extra, options = pos_weight_arrays(pos_weight, shape, dtype)
    if "pos_weight" in options:  # torch takes a tensor only
        value, grads, w = run_adjoint(T.binary_cross_entropy_with_logits, arrays, reduction=reduction, **options)
        expected, expected_grads = run_torch(torch, "binary_cross_entropy_with_logits",
                                             arrays + [np.full(shape[-1:], options["pos_weight"], dtype)], w,
                                             reduction=reduction)
        np.testing.assert_allclose(value, expected, rtol=RTOL[dtype], atol=ATOL[dtype])
        for got, want in zip(grads, expected_grads):
            np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=ATOL[dtype])
        return
    check_against_torch(torch, "binary_cross_entropy_with_logits", arrays + extra, reduction=reduction)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6,), (5, 3), (2, 3, 4)])
@pytest.mark.parametrize("weight_kind", ["number", "trailing", "full", "leading ones"])
@pytest.mark.parametrize("pos_weight", [None, 2.5])
def test_binary_cross_entropy_with_logits_weight_matches_torch(torch, pos_weight, weight_kind, shape, reduction, dtype):
    arrays = case_inputs("binary_cross_entropy_with_logits", shape, dtype, target_kind="probabilities")
    weight = {"number": 0.7, "trailing": RNG.uniform(0.2, 3.0, shape[-1:]), "full": RNG.uniform(0.2, 3.0, shape),
              "leading ones": RNG.uniform(0.2, 3.0, (1,) * len(shape) + shape[-1:])}[weight_kind]
    if weight_kind == "leading ones":  # more dims than the input: refused, as the broadcast would change its shape
        with pytest.raises(aj.TypeInferenceError, match=r"weight shape \(1, .*\) does not broadcast to input shape"):
            run_adjoint(T.binary_cross_entropy_with_logits, arrays, weight=weight)
        return
    options = {"reduction": reduction, "weight": weight}
    extra = [] if pos_weight is None else [np.full(shape[-1:], pos_weight, dtype)]  # torch takes a tensor only
    value, grads, w = run_adjoint(T.binary_cross_entropy_with_logits, arrays, pos_weight=pos_weight, **options)
    expected, expected_grads = run_torch(torch, "binary_cross_entropy_with_logits", arrays + extra, w, **options)
    np.testing.assert_allclose(value, expected, rtol=RTOL[dtype], atol=ATOL[dtype])
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=ATOL[dtype])


def test_a_binary_cross_entropy_weight_var_matches_torch_and_gets_a_gradient(torch):
    x, y = case_inputs("binary_cross_entropy_with_logits", (4, 3), "float64")
    weight = RNG.uniform(0.2, 3.0, (3,))
    bb = aj.FunctionBuilder("main")
    xv, yv, wv = bb.param("x", (4, 3), "float64"), bb.param("y", (4, 3), "float64"), bb.param("w", (3,), "float64")
    mod = bb.finish(T.binary_cross_entropy_with_logits(xv, yv, weight=wv, pos_weight=1.5))
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(x), torch.tensor(y), weight=torch.tensor(weight), pos_weight=torch.full((3,), 1.5, dtype=torch.float64))
    np.testing.assert_allclose(aj.build(mod)["main"](x, y, weight), expected.numpy(), rtol=1e-12)
    aj.testing.check_gradients(mod, "main", [x, y, weight], require_grads=["x", "w"])


@pytest.mark.parametrize("weight", [[1.0, float("inf")], "abc", True, [], np.ones((2, 0)), [[1.0], [1.0, 2.0]],
                                    [10 ** 400, 1.0]])
def test_bad_binary_cross_entropy_weights_name_the_problem(weight):
    bb = aj.FunctionBuilder("main")
    x, y = bb.param("x", (4, 2), "float64"), bb.param("y", (4, 2), "float64")
    with pytest.raises(aj.TypeInferenceError, match="binary_cross_entropy_with_logits: weight must be None, finite "
                                                    "numbers that broadcast to the input or an aj.Var, got "):
        T.binary_cross_entropy_with_logits(x, y, weight=weight)


@pytest.mark.parametrize("pos_weight", [None, 3.0])
def test_binary_cross_entropy_with_logits_at_zero_and_far_out(torch, pos_weight):
    """Logits of 0 (a zero-initialized last layer: the kinks of max and abs meet
    there) and far from 0 (exp would overflow there if taken of a positive number)."""
    logits = np.array([0.0, 0.0, 0.0, -800.0, 800.0, -800.0, 800.0, 30.0])
    target = np.array([0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.25])
    options = {} if pos_weight is None else {"pos_weight": pos_weight}
    value, grads, w = run_adjoint(T.binary_cross_entropy_with_logits, [logits, target], reduction="none", **options)
    torch_options = {} if pos_weight is None else {"pos_weight": torch.full((8,), pos_weight, dtype=torch.float64)}
    x, y = torch.tensor(logits, requires_grad=True), torch.tensor(target, requires_grad=True)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(x, y, reduction="none", **torch_options)
    (expected * torch.tensor(w[0])).sum().backward()
    assert np.all(np.isfinite(value)) and all(np.all(np.isfinite(g)) for g in grads)
    np.testing.assert_allclose(value, expected.detach().numpy(), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(grads[0], x.grad.numpy(), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(grads[1], y.grad.numpy(), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_binary_cross_entropy_with_logits_keeps_tiny_losses(dtype):
    """Confidently correct logits have losses of log1p(exp(-|x|)), far below
    an ulp of 1: kept to full relative precision (not rounded to 0 as
    log(1 + exp(-|x|)) would), for positives and negatives alike."""
    logits = np.array([17.0, 30.0, -30.0, 60.0, -60.0], dtype)
    target = np.array([1.0, 1.0, 0.0, 1.0, 0.0], dtype)
    value, _, _ = run_adjoint(T.binary_cross_entropy_with_logits, [logits, target], reduction="none")
    want = np.log1p(np.exp(-np.abs(logits.astype(np.float64))))
    np.testing.assert_allclose(value, want, rtol=RTOL[dtype])


# ---- Hypothesis: random shapes and options ----

@st.composite
def class_problems(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(["indices", "probabilities"]))
    options = {
        "reduction": draw(st.sampled_from(REDUCTIONS)),
        "label_smoothing": draw(st.sampled_from([0.0, 0.05, 0.5, 1.0])),
    }
    if kind == "indices":
        options["ignore_index"] = draw(st.sampled_from([-100, 0, 1]))
    if draw(st.booleans()):
        classes = shape[0 if rank == 1 else 1]
        options["weight"] = tuple(draw(st.lists(st.floats(0.1, 3.0), min_size=classes, max_size=classes)))
    ignored = draw(st.sampled_from([0.0, 0.5])) if rank > 1 else 0.0
    return shape, kind, ignored, options


@settings(max_examples=60, deadline=None)
@given(class_problems(), st.sampled_from(["float64", "float32"]), st.integers(0, 2**32 - 1))
def test_cross_entropy_matches_torch_for_all_shapes_and_options(problem, dtype, seed):
    torch = pytest.importorskip("torch")
    shape, kind, ignored, options = problem
    rng = np.random.default_rng(seed)
    arrays = case_inputs("cross_entropy", shape, dtype, target_kind=kind, ignored=ignored, rng=rng, **options)
    with np.errstate(invalid="ignore"):
        check_against_torch(torch, "cross_entropy", arrays, **options)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=3), st.sampled_from(REDUCTIONS),
       st.sampled_from(POS_WEIGHTS), st.sampled_from(["binary", "probabilities"]),
       st.sampled_from(["float64", "float32"]), st.integers(0, 2**32 - 1))
def test_binary_cross_entropy_with_logits_matches_torch_for_all_shapes(shape, reduction, pos_weight, kind, dtype,
                                                                       seed):
    torch = pytest.importorskip("torch")
    shape, rng = tuple(shape), np.random.default_rng(seed)
    if pos_weight == "vector" and not shape:
        pos_weight = "scalar var"
    arrays = case_inputs("binary_cross_entropy_with_logits", shape, dtype, target_kind=kind, rng=rng)
    extra, options = pos_weight_arrays(pos_weight, shape, dtype, rng)
    if "pos_weight" in options:
        extra = [np.asarray(options.pop("pos_weight"), dtype)]
    check_against_torch(torch, "binary_cross_entropy_with_logits", arrays + extra, reduction=reduction)


# ---- symbolic dims ----

@pytest.mark.parametrize("n", [1, 5])
def test_cross_entropy_over_symbolic_batch_and_classes(torch, n):
    bb = aj.FunctionBuilder("main")
    x, t = bb.param("x", ("n", "c", 3), "float64"), bb.param("t", ("n", "c", 3), "float64")
    mod = bb.finish(T.cross_entropy(x, t, label_smoothing=0.3, reduction="none"))
    pred, target = case_inputs("cross_entropy", (n, 4, 3), "float64", target_kind="probabilities")
    expected = torch.nn.functional.cross_entropy(torch.tensor(pred), torch.tensor(target), label_smoothing=0.3,
                                                 reduction="none")
    np.testing.assert_allclose(aj.build(mod)["main"](pred, target), expected.numpy(), rtol=1e-9)


def test_nll_over_symbolic_dims(torch):
    bb = aj.FunctionBuilder("main")
    x, t = bb.param("x", ("n", 5, "d"), "float64"), bb.param("t", ("n", "d"), "int64")
    mod = bb.finish(T.nll(x, t, reduction="none"))
    pred, target = case_inputs("nll", (3, 5, 2), "float64")
    expected = torch.nn.functional.nll_loss(torch.tensor(pred), torch.tensor(target), reduction="none")
    np.testing.assert_allclose(aj.build(mod)["main"](pred, target), expected.numpy(), rtol=1e-9)


# ---- the ops emitted ----

def ops_of(loss, pred, target, **options):
    bb = aj.FunctionBuilder("main")
    y = loss(bb.param("p", *pred), bb.param("t", *target), **options)
    return [b.value.op for b in bb.finish(y)["main"].bindings]


def test_the_common_losses_take_few_ops():
    f64 = "float64"
    assert ops_of(T.mse, ((4, 3), f64), ((4, 3), f64)) == ["subtract", "square", "mean"]
    assert ops_of(T.cross_entropy, ((4, 3), f64), ((4,), "int64")) == ["log_softmax", "nll_loss"]
    assert ops_of(T.cross_entropy, ((4, 3), f64), ((4, 3), f64)) == ["cross_entropy_with_logits"]
    assert ops_of(T.nll, ((4, 3), f64), ((4,), "int64"), reduction="sum") == ["nll_loss"]
    assert ops_of(T.mse, ((4, 3), f64), ((4, 3), f64), reduction="none") == ["subtract", "square"]


# ---- the Loss object: binding options, repr, label_types ----

def test_bound_options_are_defaults_that_call_options_override(torch):
    smoothed = T.cross_entropy(label_smoothing=0.2, reduction="sum")
    assert smoothed.name == "cross_entropy" and smoothed.options == {"label_smoothing": 0.2, "reduction": "sum"}
    assert T.cross_entropy.options == {}
    assert repr(smoothed) == "<Loss cross_entropy(label_smoothing=0.2, reduction='sum')>"
    assert repr(smoothed(reduction="none")) == "<Loss cross_entropy(label_smoothing=0.2, reduction='none')>"
    arrays = case_inputs("cross_entropy", (6, 4), "float64", ignored=0.2)
    for options in ({}, {"reduction": "mean"}, {"label_smoothing": 0.0}):
        value, _, _ = run_adjoint(smoothed, arrays, **options)
        expected, _ = run_torch(torch, "cross_entropy", arrays, [], **{"label_smoothing": 0.2, "reduction": "sum",
                                                                      **options})
        np.testing.assert_allclose(value, expected, rtol=1e-9)


def test_label_types():
    with aj.FunctionBuilder("main") as bb:
        p2, p1 = bb.param("a", ("n", 10), "float32"), bb.param("b", (10,), "float64")
        p4 = bb.param("c", (2, 5, 3, 4), "float32")
        for loss in (T.mse, T.l1, T.huber(delta=2.0), T.binary_cross_entropy_with_logits):
            assert loss.label_types(p2.type) == [(("n", 10), "float32")]
        for loss in (T.cross_entropy, T.nll, T.cross_entropy(targets="indices")):
            assert loss.label_types(p2.type) == [(("n",), "int64")]
            assert loss.label_types(p1.type) == [((), "int64")]
            assert loss.label_types(p4.type) == [((2, 3, 4), "int64")]
        probs = T.cross_entropy(targets="probabilities")
        assert probs.label_types(p2.type) == [(("n", 10), "float32")]
        assert probs.label_types(p4.type) == [((2, 5, 3, 4), "float32")]
        scalar = bb.param("s", (), "float32")
        with pytest.raises(aj.TypeInferenceError, match=r"cross_entropy: input shape \(\) has no class axis"):
            T.cross_entropy.label_types(scalar.type)


@pytest.mark.parametrize("pred_type", [None, "float32", np.float32, 5])
def test_label_types_of_something_else_than_a_tensor_type_is_an_error(pred_type):
    with pytest.raises(aj.TypeInferenceError, match="^cross_entropy: label_types needs a tensor type, got "):
        T.cross_entropy.label_types(pred_type)


def test_label_types_of_an_object_whose_shape_is_not_a_tuple_is_an_error():
    odd = type("Odd", (), {"shape": 5, "dtype": "float32"})()
    with pytest.raises(aj.TypeInferenceError, match="^mse: label_types needs a tensor type, got "):
        T.mse.label_types(odd)


def test_targets_option_does_not_change_what_is_emitted(torch):
    """PyTorch tells the kind of target by its dtype; so does the loss."""
    arrays = case_inputs("cross_entropy", (5, 4), "float64", target_kind="probabilities")
    value, _, _ = run_adjoint(T.cross_entropy(targets="indices"), arrays)
    expected, _ = run_torch(torch, "cross_entropy", arrays, [])
    np.testing.assert_allclose(value, expected, rtol=1e-9)


# ---- bad input ----

def emit(loss, pred, target, **options):
    with aj.FunctionBuilder("main") as bb:
        return loss(bb.param("p", *pred), bb.param("t", *target), **options)


BAD = [
    (T.cross_entropy, ((8, 10), "float32"), ((8, 3), "int64"), {},
     "cross_entropy: target shape (8, 3) does not match input shape (8, 10) without its class axis (8,)"),
    (T.cross_entropy, ((8, 10), "float32"), ((8, 3), "float32"), {},
     "cross_entropy: target shape (8, 3) does not match input shape (8, 10)"),
    (T.cross_entropy, ((8, 10), "float32"), ((8, 10), "float64"), {},
     "cross_entropy: target dtype float64 does not match input dtype float32"),
    (T.cross_entropy, ((8, 10), "float32"), ((8,), "bool"), {},
     "cross_entropy: target dtype bool is neither class indices (int32 or int64) nor probabilities"),
    (T.cross_entropy, ((), "float32"), ((), "int64"), {},
     "cross_entropy: input shape () has no class axis"),
    (T.cross_entropy, ((8, 10), "int64"), ((8,), "int64"), {},
     "cross_entropy: input dtype int64 is not a float dtype (float32 or float64)"),
    (T.nll, (("n", 4, 3), "float64"), (("n", 4), "int64"), {},
     "nll: target shape (n, 4) does not match input shape (n, 4, 3) without its class axis (n, 3)"),
    (T.mse, ((4, 3), "float64"), ((4,), "float64"), {},
     "mse: target shape (4,) does not match input shape (4, 3)"),
    (T.l1, ((4, 3), "float64"), ((4, 3), "float32"), {},
     "l1: target dtype float32 does not match input dtype float64 (input shape (4, 3), target shape (4, 3))"),
    (T.huber, ((4, 3), "float64"), ((4, 3), "float64"), {"delta": 0},
     "huber: delta must be a finite number > 0, got 0"),
    (T.mse, ((4, 3), "float64"), ((4, 3), "float64"), {"reduction": "avg"},
     "mse: unknown reduction 'avg'; known: 'mean', 'sum', 'none'"),
    (T.mse, ((4, 3), "float64"), ((4, 3), "float64"), {"delta": 1.0},
     "mse: unknown option 'delta'; known: 'reduction'"),
    (T.cross_entropy, ((4, 3), "float64"), ((4,), "int64"), {"label_smoothing": 1.5},
     "cross_entropy: label_smoothing must be a number in [0, 1], got 1.5"),
    (T.cross_entropy, ((4, 3), "float64"), ((4,), "int64"), {"ignore_index": 1.0},
     "cross_entropy: ignore_index must be an int from -9223372036854775808 to 9223372036854775807, got 1.0"),
    (T.cross_entropy, ((4, 3), "float64"), ((4,), "int64"), {"targets": "onehot"},
     "cross_entropy: unknown targets 'onehot'; known: 'indices', 'probabilities'"),
    (T.binary_cross_entropy_with_logits, ((4, 3), "float64"), ((4, 3), "float64"), {"pos_weight": "2"},
     "binary_cross_entropy_with_logits: pos_weight must be None, an aj.Var or a finite number, got '2'"),
    (T.nll, ((4, 3), "float64"), ((4, 3), "float64"), {},
     "nll: target dtype float64 is not class indices (int32 or int64) (input shape (4, 3), target shape (4, 3))"),
    (T.huber, ((4, 3), "float64"), ((4, 3), "float64"), {"delta": np.bool_(True)},
     "huber: delta must be a finite number > 0, got "),
]


@pytest.mark.parametrize("loss, pred, target, options, message", BAD)
def test_bad_input_names_the_loss_and_the_shapes(loss, pred, target, options, message):
    with pytest.raises(aj.TypeInferenceError) as info:
        emit(loss, pred, target, **options)
    assert str(info.value).startswith(message)


def test_pos_weight_var_of_the_wrong_shape_or_dtype():
    for shape, dtype, message in [((4,), "float64", "pos_weight shape (4,) does not broadcast to input shape (5, 3)"),
                                  ((3,), "float32", "pos_weight must be a float64 tensor like the input")]:
        bb = aj.FunctionBuilder("main")
        p, t, w = bb.param("p", (5, 3), "float64"), bb.param("t", (5, 3), "float64"), bb.param("w", shape, dtype)
        with pytest.raises(aj.TypeInferenceError, match=message.replace("(", r"\(").replace(")", r"\)")):
            T.binary_cross_entropy_with_logits(p, t, pos_weight=w)


def test_numpy_scalars_are_numbers_for_options():
    bound = [T.huber(delta=np.float32(0.5)), T.cross_entropy(label_smoothing=np.float32(0.25), ignore_index=np.int64(0)),
             T.binary_cross_entropy_with_logits(pos_weight=np.float64(2))]
    assert [loss.options for loss in bound] == [{"delta": 0.5}, {"label_smoothing": 0.25, "ignore_index": 0},
                                                {"pos_weight": 2.0}]
    assert type(bound[1].options["ignore_index"]) is int


@pytest.mark.parametrize("loss, option, value, message", [
    (T.huber, "delta", 10 ** 400, "huber: delta must be a finite number > 0, got an int of 1329 bits"),
    (T.huber, "delta", float("inf"), "huber: delta must be a finite number > 0, got inf"),
    (T.binary_cross_entropy_with_logits, "pos_weight", 10 ** 400,
     "binary_cross_entropy_with_logits: pos_weight must be None, an aj.Var or a finite number, "
     "got an int of 1329 bits"),
    (T.binary_cross_entropy_with_logits, "pos_weight", -10 ** 5000,
     "binary_cross_entropy_with_logits: pos_weight must be None, an aj.Var or a finite number, "
     "got a negative int of 16610 bits"),
    (T.cross_entropy, "label_smoothing", 10 ** 400,
     "cross_entropy: label_smoothing must be a number in [0, 1], got an int of 1329 bits"),
], ids=["delta", "delta-inf", "pos_weight", "pos_weight-10**5000", "label_smoothing"])
def test_a_number_too_large_for_a_float_is_an_option_error_naming_it(loss, option, value, message):
    with pytest.raises(aj.TypeInferenceError) as info:
        loss(**{option: value})
    assert str(info.value) == message


@pytest.mark.parametrize("loss", [T.cross_entropy, T.nll])
@pytest.mark.parametrize("ignore_index, shown", [(2 ** 70, "1180591620717411303424"), (2 ** 63, "9223372036854775808"),
                                                 (-2 ** 63 - 1, "-9223372036854775809"),
                                                 (np.uint64(2 ** 64 - 1), "np.uint64(18446744073709551615)")],
                         ids=["2**70", "2**63", "-2**63-1", "uint64"])
def test_an_ignore_index_beyond_int64_is_an_error_naming_the_loss(loss, ignore_index, shown):
    message = (f"{loss.name}: ignore_index must be an int from -9223372036854775808 to 9223372036854775807, "
               f"got {shown}")
    bb = aj.FunctionBuilder("main")
    pred, target = bb.param("pred", (4, 2), "float32"), bb.param("target", (4,), "int64")
    with pytest.raises(aj.TypeInferenceError) as info:
        loss(pred, target, ignore_index=ignore_index)
    assert str(info.value) == message and bb.status == "abandoned"
    with pytest.raises(aj.TypeInferenceError) as info:
        loss(ignore_index=ignore_index)
    assert str(info.value) == message


@pytest.mark.parametrize("ignore_index", [2 ** 63 - 1, -2 ** 63])
@pytest.mark.parametrize("weight", [None, [1.0, 2.0]])
def test_an_ignore_index_at_the_ends_of_int64_ignores_nothing(ignore_index, weight):
    z, y = RNG.standard_normal((4, 2)), np.array([0, 1, 1, 0])
    values = [aj.build(loss_modules(T.cross_entropy, [z, y], ignore_index=i, weight=weight)[0])["main"](z, y)
              for i in (ignore_index, -100)]
    assert values[0] == values[1]


@pytest.mark.parametrize("option, known", [("reduction", "'mean', 'sum', 'none'"),
                                           ("targets", "'indices', 'probabilities'")])
@pytest.mark.parametrize("value", [np.array(["mean", "sum"]), np.str_("avg"), ["mean"], None, 1],
                         ids=["array", "np.str_", "list", "None", "int"])
def test_a_choice_option_that_is_not_a_known_str_is_an_error_naming_it(option, known, value):
    with pytest.raises(aj.TypeInferenceError, match=rf"^cross_entropy: unknown {option} .*; known: {known}$"):
        T.cross_entropy(**{option: value})


def test_a_numpy_str_is_a_choice():
    assert T.cross_entropy(reduction=np.str_("sum")).options == {"reduction": "sum"}
    assert type(T.cross_entropy(reduction=np.str_("sum")).options["reduction"]) is str


def test_bad_options_fail_when_bound():
    with pytest.raises(aj.TypeInferenceError, match="huber: unknown option 'beta'; known: 'reduction', 'delta'"):
        T.huber(beta=1.0)
    with pytest.raises(aj.TypeInferenceError, match="nll: unknown reduction 'batchmean'"):
        T.nll(reduction="batchmean")


def test_bad_arguments():
    bb = aj.FunctionBuilder("main")
    p = bb.param("p", (4, 3), "float64")
    with pytest.raises(aj.TypeInferenceError, match=r"mse takes \(pred, target\) and options by keyword; got 1"):
        T.mse(p)
    bb = aj.FunctionBuilder("main")
    p = bb.param("p", (4, 3), "float64")
    message = "mse: target must be a tensor var of a FunctionBuilder, got ndarray"
    with pytest.raises(aj.TypeInferenceError, match=message):
        T.mse(p, np.zeros((4, 3)))
    assert bb.status == "abandoned"
