"""AppendLoss and train_step / SetupTrainer: the printed step of a 1-layer
model with SGD (golden: the update is w - lr * grad, nothing redundant), the
layout of step's params, several backbone outputs, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import adjoint as aj
from adjoint import training as T

LINEAR = '''@function(num_input=1)
def main(x: Tensor((4, 3), "float32"), w: Tensor((3, 2), "float32")) -> Tensor((4, 2), "float32"):
    y: Tensor((4, 2), "float32") = matmul(x, w)
    return y
'''

# forward, the loss, its adjoint (the seed of the mean folded into one
# scalar), the weight's grad as one GEMM, and SGD's w - lr * grad
LINEAR_SGD_STEP = '''@function
def step(x: Tensor((4, 3), "float32"), label: Tensor((4, 2), "float32"), w: Tensor((3, 2), "float32"), lr: Tensor((), "float32")) -> Tuple(Tensor((), "float32"), Tensor((3, 2), "float32")):
    y: Tensor((4, 2), "float32") = matmul(x, w)
    lv: Tensor((4, 2), "float32") = subtract(y, label)
    lv_1: Tensor((4, 2), "float32") = square(lv)
    lv_2: Tensor((), "float32") = mean(lv_1)
    lv_3: Tensor((4, 2), "float32") = multiply(lv, const(2.0, "float32"))
    lv_adjoint: Tensor((4, 2), "float32") = multiply(const(0.125, "float32"), lv_3)
    lv_4: Tensor((3, 4), "float32") = permute_dims(x)
    w_adjoint: Tensor((3, 2), "float32") = matmul(lv_4, lv_adjoint)
    lv_5: Tensor((3, 2), "float32") = multiply(lr, w_adjoint)
    w_1: Tensor((3, 2), "float32") = subtract(w, lv_5)
    return (lv_2, w_1)
'''


def test_golden_step_of_a_linear_model_with_sgd():
    step = T.train_step(aj.parse(LINEAR), T.mse, T.SGD(lr=0.1))["step"]
    assert step.script() == LINEAR_SGD_STEP, step.script()
    *_, scaled, update = step.bindings
    assert (scaled.value.op, update.value.op) == ("multiply", "subtract")
    assert [a.name_hint for a in scaled.value.args] == ["lr", "w_adjoint"]
    assert [a.name_hint for a in update.value.args] == ["w", scaled.var.name_hint]


def test_step_computes_the_loss_and_the_sgd_update():
    mod = T.train_step(aj.parse(LINEAR.replace("float32", "float64")), T.mse, T.SGD(lr=0.1))
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal((4, 3)), rng.standard_normal((4, 2)), rng.standard_normal((3, 2))
    loss, new_w = aj.build(mod)["step"](x, y, w, np.float64(0.1))
    np.testing.assert_allclose(loss, np.mean((x @ w - y) ** 2), rtol=1e-12)
    np.testing.assert_allclose(new_w, w - 0.1 * x.T @ (2 * (x @ w - y) / 8), rtol=1e-12)


def test_layout_orders_inputs_labels_params_state_lr():
    mod, layout = T.SetupTrainer(T.cross_entropy, T.Adam(lr=1e-3)).with_layout(aj.parse(LINEAR))
    assert layout == T.StepLayout(("x",), ("label",), ("w",), ("step", "w.exp_avg", "w.exp_avg_sq"))
    names = [p.name_hint for p in mod["step"].params]
    assert names == ["x", "label", "w", "step", "w_exp_avg", "w_exp_avg_sq", "lr"]
    assert layout.lr_index == 6 and mod["step"].params[1].type.dtype == "int64"
    assert set(mod.functions) == {"main", "step"}


def test_append_loss_keeps_num_input_and_returns_the_other_outputs():
    mod = aj.parse('''@function(num_input=1)
def main(x: Tensor(("n", 3), "float64"), w: Tensor((3, 2), "float64")) -> Tuple(Tensor(("n", 2), "float64"), Tensor((), "float64")):
    y: Tensor(("n", 2), "float64") = matmul(x, w)
    s: Tensor((), "float64") = sum(w)
    return (y, s)
''')
    out = T.AppendLoss("main", T.mse)(mod)
    fn = out["main_loss"]
    assert [p.name_hint for p in fn.params] == ["x", "label", "w"]
    assert fn.attrs["num_input"] == 2 and fn.params[1].type.shape == ("n", 2)
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    loss, s = aj.build(out)["main_loss"](x, y, w)
    np.testing.assert_allclose(loss, np.mean((x @ w - y) ** 2), rtol=1e-12)
    np.testing.assert_allclose(s, w.sum(), rtol=1e-12)


def test_append_loss_with_two_predictions_and_a_callable_loss():
    mod = aj.parse('''@function
def main(x: Tensor((3,), "float64")) -> Tuple(Tensor((3,), "float64"), Tensor((3,), "float64")):
    a: Tensor((3,), "float64") = exp(x)
    b: Tensor((3,), "float64") = sin(x)
    return (a, b)
''')

    def both(a, b, ta, tb):
        return T.mse(a, ta) + T.l1(b, tb)

    fn = T.AppendLoss("main", both, num_backbone_outputs=2, labels=[((3,), "float64")] * 2)(mod)["main_loss"]
    assert [p.name_hint for p in fn.params] == ["x", "label_0", "label_1"]
    x, ta, tb = np.array([0.1, 0.2, 0.3]), np.ones(3), np.zeros(3)
    got = aj.build(aj.Module({"f": fn}))["f"](x, ta, tb)
    np.testing.assert_allclose(got, np.mean((np.exp(x) - 1) ** 2) + np.mean(np.abs(np.sin(x))), rtol=1e-12)


def test_append_loss_takes_a_partial_of_a_loss_with_its_options():
    import functools

    smoothed = functools.partial(T.cross_entropy, label_smoothing=0.1)
    partial_fn = T.AppendLoss("main", smoothed)(aj.parse(LINEAR))["main_loss"]
    bound_fn = T.AppendLoss("main", T.cross_entropy(label_smoothing=0.1))(aj.parse(LINEAR))["main_loss"]
    assert aj.structural_equal(partial_fn, bound_fn)


def test_label_names_do_not_clash_with_params():
    mod = aj.parse(LINEAR.replace("x:", "label:").replace("(x, w)", "(label, w)"))
    fn = T.AppendLoss("main", T.mse)(mod)["main_loss"]
    assert [p.name_hint for p in fn.params] == ["label", "label_1", "w"]


@pytest.mark.parametrize("make, message", [
    (lambda m: T.AppendLoss("nope", T.mse)(m), "has no function 'nope'"),
    (lambda m: T.AppendLoss("main", T.mse(reduction="none"))(m), "must give a float scalar"),
    (lambda m: T.AppendLoss("main", lambda p, t: p, labels=[((4, 2), "float32")])(m), "must give a float scalar"),
    (lambda m: T.AppendLoss("main", lambda p, t: p)(m), "cannot tell what labels"),
    (lambda m: T.AppendLoss("main", lambda p, t: p, labels=[(5, 3)])(m),
     r"labels\[0\] of the loss '<lambda>' has shape 5; a shape is a tuple of ints >= 0 and symbol names"),
    (lambda m: T.AppendLoss("main", lambda p, t: p, labels=[5])(m), r"labels\[0\] .* must be a \(shape, dtype\) pair"),
    (lambda m: T.AppendLoss("main", T.mse, labels=[((-4, 2), "float32")])(m),
     r"AppendLoss: labels\[0\] of the loss 'mse' has shape \(-4, 2\); a shape is a tuple of ints >= 0"),
    (lambda m: T.train_step(m, T.mse, T.SGD(lr=1.0), labels=[((4, True), "float32")]),
     r"AppendLoss: labels\[0\] of the loss 'mse' has shape \(4, True\); a shape is a tuple of ints >= 0"),
    (lambda m: T.AppendLoss("main", lambda p, t: p, labels="abc")(m), "labels must be a list of"),
    (lambda m: T.train_step(m, T.mse, T.Adam), r"the class Adam; pass an instance"),
    (lambda m: T.AppendLoss("main", T.mse, num_backbone_outputs=2)(m), "returns 1 value"),
    (lambda m: T.train_step(m, T.mse, "sgd"), "must be an adjoint.training optimizer"),
    (lambda m: T.train_step(T.train_step(m, T.mse, T.SGD(lr=1.0)), T.mse, T.SGD(lr=1.0)), "already has a function 'step'"),
    (lambda m: T.train_step(aj.parse(LINEAR.replace("(num_input=1)", "")), T.mse, T.SGD(lr=1.0)), "has no num_input"),
    (lambda m: T.train_step(aj.parse(LINEAR.replace("num_input=1", "num_input=2")), T.mse, T.SGD(lr=1.0)),
     "no weights to train"),
])
def test_bad_setups_are_errors_naming_the_problem(make, message):
    with pytest.raises(aj.Error, match=message):
        make(aj.parse(LINEAR))


def test_label_type_mismatch_names_the_loss_and_both_shapes():
    with pytest.raises(aj.Error, match=r"cross_entropy.*\(4, 2\)"):
        T.AppendLoss("main", T.cross_entropy, labels=[((4, 2), "int64")])(aj.parse(LINEAR))


def test_every_random_program_step_verifies():
    # the step of a deeper model goes through every pass: it must verify and print back
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 6), "float32")
    ws = [bb.param(f"w{i}", (6, 6), "float32") for i in range(3)]
    h = x
    for w in ws:
        h = aj.op.gelu(h @ w)
    mod = T.train_step(bb.finish(h), T.mse, T.AdamW(lr=1e-3, clip_grad_norm=1.0))
    aj.analysis.verify(mod)
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


# ---- frozen weights: read by the step, not differentiated, not updated ----

SCALED = '''@function(num_input=1, frozen="scale", doc="A linear model.")
def main(x: Tensor((4, 3), "float64"), w: Tensor((3, 2), "float64"), scale: Tensor((2,), "float64")) -> Tensor((4, 2), "float64"):
    y: Tensor((4, 2), "float64") = matmul(x, w)
    z: Tensor((4, 2), "float64") = multiply(y, scale)
    return z
'''


def test_a_weight_the_frozen_attr_lists_is_read_by_the_step_and_not_trained():
    mod, layout = T.SetupTrainer(T.mse, T.Adam(lr=0.1)).with_layout(aj.parse(SCALED))
    assert layout == T.StepLayout(("x",), ("label",), ("w",), ("step", "w.exp_avg", "w.exp_avg_sq"), ("scale",))
    assert [p.name_hint for p in mod["step"].params] == ["x", "label", "w", "scale", "step", "w_exp_avg",
                                                        "w_exp_avg_sq", "lr"]
    assert (layout.param_index, layout.frozen_index, layout.state_index, layout.lr_index) == (2, 3, 4, 7)
    assert len(mod["step"].ret.type.fields) == 1 + 1 + 3  # the loss, the new w, the new state: no new scale
    assert "scale_adjoint" not in mod["step"].script()


def test_the_step_reads_the_frozen_weight_and_updates_only_the_others():
    rng = np.random.default_rng(0)
    x, y, w, scale = (rng.standard_normal(s) for s in [(4, 3), (4, 2), (3, 2), (2,)])
    step = aj.build(T.train_step(aj.parse(SCALED), T.mse, T.SGD(lr=0.1)))["step"]
    loss, new_w = step(x, y, w, scale, np.float64(0.1))
    err = (x @ w) * scale - y
    np.testing.assert_allclose(loss, np.mean(err ** 2), rtol=1e-12)
    np.testing.assert_allclose(new_w, w - 0.1 * x.T @ (2 * err * scale / 8), rtol=1e-12)


@pytest.mark.parametrize("frozen, params, kept", [
    (None, ("w",), ("scale",)),            # the frozen attr's
    ((), ("w", "scale"), ()),              # every weight trained
    (["w"], ("scale",), ("w",)),           # names given replace the attr's
    (["scale", "scale"], ("w",), ("scale",)),  # a name given twice is one weight
])
def test_frozen_names_the_weights_not_to_train(frozen, params, kept):
    _, layout = T.SetupTrainer(T.mse, T.SGD(lr=0.1), frozen=frozen).with_layout(aj.parse(SCALED))
    assert (layout.params, layout.frozen) == (params, kept)
    plain = aj.parse(SCALED.replace('frozen="scale"', 'frozen=""'))
    assert T.SetupTrainer(T.mse, T.SGD(lr=0.1)).with_layout(plain)[1].frozen == ()


@pytest.mark.parametrize("frozen, message", [
    (["nope"], r"train_step: frozen names 'nope', which is not a weight of 'main' \(its weights: w, scale\)"),
    (["x"], r"frozen names 'x', which is not a weight of 'main'"),     # an input
    ([3], r"frozen names 3, which is not a weight"),
    ("scale", r"frozen must be an iterable of weight names \(a list, not one string\), got 'scale'"),
    (5, "frozen must be an iterable of weight names"),
    (["w", "scale"], r"every weight of 'main' is frozen \(w, scale\); nothing is left to train"),
])
def test_a_bad_frozen_is_an_error_naming_it(frozen, message):
    with pytest.raises(aj.Error, match=message):
        T.train_step(aj.parse(SCALED), T.mse, T.SGD(lr=0.1), frozen=frozen)


def test_errors_of_the_step_begin_with_the_entry_point_called():
    """"every weight is frozen" and "no num_input" began with train_step:
    whichever of Trainer, train_step and SetupTrainer was called."""
    mod = aj.parse(SCALED)
    for who, make in [("Trainer", lambda: T.Trainer(mod, T.mse, T.SGD(lr=0.1), frozen=["w", "scale"])),
                      ("train_step", lambda: T.train_step(mod, T.mse, T.SGD(lr=0.1), frozen=["w", "scale"])),
                      ("SetupTrainer", lambda: T.SetupTrainer(T.mse, T.SGD(lr=0.1), frozen=["w", "scale"])(mod))]:
        with pytest.raises(aj.TransformError, match=f"^{who}: every weight of 'main' is frozen"):
            make()
    for who, make in [("Trainer", lambda: T.Trainer(mod, T.mse, T.SGD)),
                      ("train_step", lambda: T.train_step(mod, T.mse, T.SGD)),
                      ("SetupTrainer", lambda: T.SetupTrainer(T.mse, T.SGD))]:
        with pytest.raises(aj.Error, match=f"^{who}: optimizer is the class SGD; pass an instance"):
            make()
    with pytest.raises(aj.TransformError, match="^train_step: the module already has a function 'step'"):
        T.train_step(T.train_step(mod, T.mse, T.SGD(lr=0.1)), T.mse, T.SGD(lr=0.1))


def with_frozen_attr(text: str, frozen: str) -> aj.Module:
    """The module of `text` with its main's frozen attr set to `frozen`
    (the text format refuses a bad one; with_attr takes any string)."""
    mod = aj.parse(text)
    return mod.with_function("main", mod["main"].with_attr("frozen", frozen))


def test_a_frozen_attr_listing_a_name_that_is_no_weight_is_an_error_saying_what_to_do():
    mod = with_frozen_attr(SCALED, "scale, gone")
    with pytest.raises(aj.TransformError, match=r"the frozen attr of 'main' lists 'gone', which is not a weight "
                                                r"of 'main' \(its weights: w, scale\); pass frozen=\[...\]"):
        T.train_step(mod, T.mse, T.SGD(lr=0.1))
    with pytest.raises(aj.VerifyError, match="attr frozen: lists 'gone', which is not a param"):
        aj.analysis.verify(mod)


def test_a_frozen_attr_on_a_function_with_no_num_input_is_the_num_input_error():
    """Trainer checked the attr's names first, against every param: "lists
    'gone', which is not a weight of 'main' (its weights: x, w, scale)",
    an input among them and nothing on the missing num_input."""
    mod = with_frozen_attr(SCALED.replace("num_input=1, ", "").replace('frozen="scale"', 'frozen=""'), "gone")
    for make in (lambda: T.Trainer(mod, T.mse, T.SGD(lr=0.1)), lambda: T.train_step(mod, T.mse, T.SGD(lr=0.1))):
        with pytest.raises(aj.TransformError, match="function 'main' has no num_input, so its inputs cannot be told"):
            make()


INDEXED = '''@function(num_input=1)
def main(x: Tensor((4, 3), "float64"), w: Tensor((3, 2), "float64"), rows: Tensor((4,), "int64")) -> Tensor((4, 2), "float64"):
    y: Tensor((4, 2), "float64") = matmul(x, w)
    z: Tensor((4, 2), "float64") = take(y, rows, axis=0)
    return z
'''


def test_a_weight_with_no_gradient_must_be_frozen_and_is_named():
    # regression: the error came from the Gradient the step runs ("Gradient
    # of 'main_loss': cannot differentiate with respect to 'rows' ..."),
    # naming neither the entry point called nor what to do
    with pytest.raises(aj.TransformError, match=r"^train_step: weight 'rows' of 'main' is int64, which has no "
                                                r"gradient to train it by; freeze it \(frozen=\[\.\.\.\]"):
        T.train_step(aj.parse(INDEXED), T.mse, T.SGD(lr=0.1))
    _, layout = T.SetupTrainer(T.mse, T.SGD(lr=0.1), frozen=["rows"]).with_layout(aj.parse(INDEXED))
    assert (layout.params, layout.frozen) == (("w",), ("rows",))
