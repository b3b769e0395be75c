"""Optimizers as IR (adjoint.training.optim): every optimizer and option
against torch.optim's single-tensor implementation over 100 steps of a fixed
gradient sequence (float64 rtol 1e-9; float32 rtol 1e-5, with an atol at the
tensor's scale), golden printed
update functions of SGD and Adam, the state layout for all option
combinations (Hypothesis), and bad options and param types as aj.Errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjoint as aj
from adjoint.training import optim as O

PARAM_SHAPES = {"w": (3, 4), "b": (4,), "s": ()}
STEPS = 100
RTOL = {"float64": 1e-9, "float32": 1e-5}


def param_types(dtype: str) -> list[tuple[str, tuple, str]]:
    return [(name, shape, dtype) for name, shape in PARAM_SHAPES.items()]


def decaying(step: int) -> float:
    return 0.05 * 0.97**step


def warmup(step: int) -> float:
    return 1e-2 * min(1.0, (step + 1) / 10)


# (optimizer, options, lr: a float or a schedule, clip_grad_norm)
CASES = {
    "sgd": ("SGD", {}, 0.05, None),
    "sgd-momentum": ("SGD", {"momentum": 0.9}, 0.05, None),
    "sgd-dampening": ("SGD", {"momentum": 0.9, "dampening": 0.3}, 0.05, None),
    "sgd-nesterov": ("SGD", {"momentum": 0.9, "nesterov": True}, 0.05, None),
    "sgd-weight-decay": ("SGD", {"momentum": 0.5, "weight_decay": 0.1}, 0.05, None),
    "sgd-clip": ("SGD", {"momentum": 0.9}, 0.05, 1.0),
    "sgd-schedule": ("SGD", {"momentum": 0.9, "nesterov": True}, decaying, None),
    "adam": ("Adam", {}, 1e-2, None),
    "adam-weight-decay": ("Adam", {"weight_decay": 0.1}, 1e-2, None),
    "adam-amsgrad": ("Adam", {"amsgrad": True}, 1e-2, None),
    "adam-low-betas": ("Adam", {"betas": (0.3, 0.5), "eps": 1e-6}, 1e-2, None),
    "adam-clip-schedule": ("Adam", {}, warmup, 0.5),
    "adamw": ("AdamW", {}, 1e-2, None),
    "adamw-amsgrad": ("AdamW", {"weight_decay": 0.3, "amsgrad": True}, 1e-2, None),
    "rmsprop": ("RMSprop", {}, 1e-2, None),
    "rmsprop-centered": ("RMSprop", {"centered": True}, 1e-2, None),
    "rmsprop-momentum": ("RMSprop", {"momentum": 0.9, "weight_decay": 0.1}, 1e-2, None),
    "rmsprop-centered-momentum": ("RMSprop", {"centered": True, "momentum": 0.5, "alpha": 0.4}, 1e-2, None),
    "rmsprop-clip-schedule": ("RMSprop", {"momentum": 0.5}, decaying, 0.5),
}


def make_optimizer(case: str) -> O.Optimizer:
    name, options, lr, clip = CASES[case]
    return getattr(O, name)(lr=lr, clip_grad_norm=clip, **options)


def initial_params(dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(dtype) for shape in PARAM_SHAPES.values()]


def gradient_sequence(dtype: str) -> list[list[np.ndarray]]:
    """STEPS lists of grads, scaled so the global norm crosses the clip
    thresholds both ways over the sequence."""
    rng = np.random.default_rng(1)
    return [[(rng.standard_normal(shape) * rng.uniform(0.05, 1.0)).astype(dtype) for shape in PARAM_SHAPES.values()]
            for _ in range(STEPS)]


def atol(expected: np.ndarray) -> float:
    """0 in float64. In float32 an element that ends near zero by
    cancellation keeps the rounding error of the values it came from, so
    the tolerance there is rtol times the tensor's largest magnitude."""
    return 0.0 if expected.dtype == np.float64 else RTOL["float32"] * float(np.abs(expected).max())


def run_adjoint(opt: O.Optimizer, dtype: str) -> list[np.ndarray]:
    types = param_types(dtype)
    update = aj.build(opt.function(types))["update"]
    params, state = initial_params(dtype), opt.init_state(types)
    for step, grads in enumerate(gradient_sequence(dtype)):
        out = update(*params, *grads, *state, np.asarray(opt.lr_at(step), dtype))
        params, state = list(out[:len(params)]), list(out[len(params):])
    return params


def run_torch(case: str, dtype: str) -> list[np.ndarray]:
    torch = pytest.importorskip("torch")
    name, options, lr, clip = CASES[case]
    lr_at = lr if callable(lr) else (lambda step: lr)
    params = [torch.tensor(p, requires_grad=True) for p in initial_params(dtype)]
    opt = getattr(torch.optim, name)(params, lr=lr_at(0), foreach=False, **options)
    for step, grads in enumerate(gradient_sequence(dtype)):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g)
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip, foreach=False)
        opt.step()
    return [p.detach().numpy() for p in params]


# ---- the update rules against torch.optim ----

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch_optim_after_100_steps(case, dtype):
    expected = run_torch(case, dtype)
    got = run_adjoint(make_optimizer(case), dtype)
    for name, g, e in zip(PARAM_SHAPES, got, expected):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, rtol=RTOL[dtype], atol=atol(e), err_msg=f"{case}: param {name}")


def test_clipping_and_schedule_cases_do_clip_and_change_lr():
    grads = gradient_sequence("float64")
    norms = [np.sqrt(sum(float(np.sum(g * g)) for g in step)) for step in grads]
    assert min(norms) < 0.5 and max(norms) > 1.0
    assert make_optimizer("sgd-schedule").lr_at(50) < make_optimizer("sgd-schedule").lr_at(0)


def test_state_after_one_adam_step_matches_torch():
    torch = pytest.importorskip("torch")
    types = [("w", (3,), "float64")]
    opt = O.Adam(lr=0.1, amsgrad=True)
    w, g = np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, -1.0])
    out = aj.build(opt.function(types))["update"](w, g, *opt.init_state(types), np.asarray(0.1))
    tw = torch.tensor(w, requires_grad=True)
    topt = torch.optim.Adam([tw], lr=0.1, amsgrad=True, foreach=False)
    tw.grad = torch.tensor(g)
    topt.step()
    tstate = topt.state[tw]
    assert out[1] == 1 and out[1].dtype == np.int64
    for got, kind in zip(out[2:], ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]):
        np.testing.assert_allclose(got, tstate[kind].numpy(), rtol=1e-15, err_msg=kind)


# ---- golden printed IR ----

SGD_GOLDEN = """\
@function
def update(w: Tensor((3, 2), "float32"), b: Tensor((2,), "float32"), w_grad: Tensor((3, 2), "float32"), \
b_grad: Tensor((2,), "float32"), lr: Tensor((), "float32")) -> Tuple(Tensor((3, 2), "float32"), \
Tensor((2,), "float32")):
    lv: Tensor((3, 2), "float32") = multiply(lr, w_grad)
    w_1: Tensor((3, 2), "float32") = subtract(w, lv)
    lv_1: Tensor((2,), "float32") = multiply(lr, b_grad)
    b_1: Tensor((2,), "float32") = subtract(b, lv_1)
    return (w_1, b_1)
"""

ADAM_GOLDEN = """\
@function
def update(w: Tensor((3, 2), "float64"), w_grad: Tensor((3, 2), "float64"), step: Tensor((), "int64"), \
w_exp_avg: Tensor((3, 2), "float64"), w_exp_avg_sq: Tensor((3, 2), "float64"), lr: Tensor((), "float64")) \
-> Tuple(Tensor((3, 2), "float64"), Tensor((), "int64"), Tensor((3, 2), "float64"), Tensor((3, 2), "float64")):
    step_1: Tensor((), "int64") = add(step, const(1, "int64"))
    lv: Tensor((), "float64") = astype(step_1, "float64")
    lv_1: Tensor((), "float64") = power(const(0.75, "float64"), lv)
    lv_2: Tensor((), "float64") = subtract(const(1.0, "float64"), lv_1)
    lv_3: Tensor((), "float64") = divide(lr, lv_2)
    lv_4: Tensor((), "float64") = power(const(0.875, "float64"), lv)
    lv_5: Tensor((), "float64") = subtract(const(1.0, "float64"), lv_4)
    lv_6: Tensor((), "float64") = sqrt(lv_5)
    lv_7: Tensor((3, 2), "float64") = subtract(w_grad, w_exp_avg)
    lv_8: Tensor((3, 2), "float64") = multiply(lv_7, const(0.25, "float64"))
    w_exp_avg_1: Tensor((3, 2), "float64") = add(w_exp_avg, lv_8)
    lv_9: Tensor((3, 2), "float64") = multiply(w_exp_avg_sq, const(0.875, "float64"))
    lv_10: Tensor((3, 2), "float64") = multiply(w_grad, const(0.125, "float64"))
    lv_11: Tensor((3, 2), "float64") = multiply(lv_10, w_grad)
    w_exp_avg_sq_1: Tensor((3, 2), "float64") = add(lv_9, lv_11)
    lv_12: Tensor((3, 2), "float64") = sqrt(w_exp_avg_sq_1)
    lv_13: Tensor((3, 2), "float64") = divide(lv_12, lv_6)
    lv_14: Tensor((3, 2), "float64") = add(lv_13, const(1e-08, "float64"))
    lv_15: Tensor((3, 2), "float64") = multiply(lv_3, w_exp_avg_1)
    lv_16: Tensor((3, 2), "float64") = divide(lv_15, lv_14)
    w_1: Tensor((3, 2), "float64") = subtract(w, lv_16)
    return (w_1, step_1, w_exp_avg_1, w_exp_avg_sq_1)
"""


def test_golden_sgd_update_is_w_minus_lr_times_grad():
    mod = O.SGD(lr=0.1).function([("w", (3, 2), "float32"), ("b", (2,), "float32")])
    assert str(mod) == SGD_GOLDEN
    assert aj.structural_equal(aj.parse(SGD_GOLDEN), mod)


def test_golden_adam_update():
    # betas whose complements are exact binary fractions keep the constants short
    mod = O.Adam(lr=1e-3, betas=(0.75, 0.875)).function([("w", (3, 2), "float64")])
    assert str(mod) == ADAM_GOLDEN
    assert aj.structural_equal(aj.parse(ADAM_GOLDEN), mod)


# ---- no op the options do not need ----

def op_names(mod: aj.Module) -> list[str]:
    return [b.value.op for b in mod["update"].bindings if isinstance(b.value, aj.Call)]


@pytest.mark.parametrize("opt, absent", [
    (O.SGD(momentum=0.9), {"where", "equal", "astype"}),
    (O.Adam(), {"maximum", "minimum", "where"}),
    (O.RMSprop(), {"where", "maximum", "astype", "power"}),
])
def test_emits_no_op_the_options_do_not_need(opt, absent):
    names = op_names(opt.function([("w", (3,), "float64")]))
    assert not absent & set(names), names


def test_adam_without_weight_decay_never_reads_the_param_but_to_update_it():
    fn = O.Adam().function([("w", (3,), "float64")])["update"]
    w = fn.params[0]
    uses = [b for b in fn.bindings if isinstance(b.value, aj.Call) and any(a is w for a in b.value.args)]
    assert [b.value.op for b in uses] == ["subtract"]


def test_update_emits_into_the_callers_builder():
    opt = O.SGD(lr=0.5, momentum=0.9)
    bb = aj.FunctionBuilder("main")
    w, x = bb.param("w", (2,), "float64"), bb.param("x", (2,), "float64")
    buf, lr = bb.param("w.momentum_buffer", (2,), "float64"), bb.param("lr", (), "float64")
    grad = aj.op.multiply(x, 2.0)
    (new_w,), (new_buf,) = opt.update([w], [grad], [buf], lr)
    mod = bb.finish((new_w, new_buf))
    out = aj.build(mod)["main"](np.array([1.0, 2.0]), np.array([1.0, -1.0]), np.array([0.5, 0.5]), np.asarray(0.5))
    np.testing.assert_allclose(out[1], [0.45 + 2.0, 0.45 - 2.0])
    np.testing.assert_allclose(out[0], np.array([1.0, 2.0]) - 0.5 * out[1])


# ---- state layout, for all option combinations ----

OPTIMIZER_OPTIONS = st.one_of(
    st.builds(lambda m, d, wd: O.SGD(momentum=m, dampening=d, weight_decay=wd),
              st.sampled_from([0, 0.9]), st.sampled_from([0, 0.1]), st.sampled_from([0, 0.1])),
    st.builds(lambda cls, ams, wd: cls(amsgrad=ams, weight_decay=wd),
              st.sampled_from([O.Adam, O.AdamW]), st.booleans(), st.sampled_from([0, 0.1])),
    st.builds(lambda c, m: O.RMSprop(centered=c, momentum=m), st.booleans(), st.sampled_from([0, 0.5])),
)
PARAM_LISTS = st.lists(st.tuples(st.sampled_from(["w", "b", "gamma", "emb"]),
                                 st.lists(st.integers(1, 3), max_size=3).map(tuple)),
                       min_size=1, max_size=4, unique_by=lambda p: p[0])


@given(OPTIMIZER_OPTIONS, PARAM_LISTS, st.sampled_from(["float32", "float64"]))
def test_function_returns_params_then_state_of_the_declared_types(opt, params, dtype):
    types = [(name, shape, dtype) for name, shape in params]
    state_types = opt.state_types(types)
    fn = opt.function(types)["update"]
    names = [p.name_hint for p in fn.params]
    assert names == [n for n, _, _ in types] + [f"{n}_grad" for n, _, _ in types] + \
        [n for n, _, _ in state_types] + ["lr"]
    out_types = [(t.shape, t.dtype) for t in fn.ret.type.fields]
    assert out_types == [(tuple(s), d) for _, s, d in types + state_types]
    step_first = [n for n, _, _ in state_types[:1]] == ["step"]
    assert step_first == (isinstance(opt, O.Adam) or (isinstance(opt, O.SGD) and opt.momentum * opt.dampening != 0))
    for (name, shape, sdtype), array in zip(state_types, opt.init_state(types)):
        assert array.shape == shape and array.dtype == sdtype and not array.any(), name


def test_state_names_follow_torch():
    types = [("w", (2,), "float64"), ("b", (), "float64")]
    assert [n for n, _, _ in O.RMSprop(momentum=0.1, centered=True).state_types(types)] == [
        "w.square_avg", "w.momentum_buffer", "w.grad_avg", "b.square_avg", "b.momentum_buffer", "b.grad_avg"]
    assert [n for n, _, _ in O.AdamW(amsgrad=True).state_types(types)] == [
        "step", "w.exp_avg", "w.exp_avg_sq", "w.max_exp_avg_sq", "b.exp_avg", "b.exp_avg_sq", "b.max_exp_avg_sq"]
    assert O.SGD().state_types(types) == []


def test_lr_and_repr():
    assert O.Adam().lr_at(7) == 1e-3
    assert O.SGD(lr=decaying).lr_at(2) == decaying(2)
    assert repr(O.SGD(lr=0.1, momentum=0.9, clip_grad_norm=1.0)) == \
        "SGD(lr=0.1, momentum=0.9, dampening=0, nesterov=False, weight_decay=0, clip_grad_norm=1.0)"
    assert repr(O.AdamW()).startswith("AdamW(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01")


# ---- bad input ----

# options torch.optim rejects, as (optimizer, options, what the message names)
REJECTED = [
    ("SGD", {"lr": -0.1}, "lr"),
    ("SGD", {"momentum": -0.5}, "momentum"),
    ("SGD", {"weight_decay": -1e-4}, "weight_decay"),
    ("SGD", {"nesterov": True}, "nesterov"),
    ("SGD", {"nesterov": True, "momentum": 0.9, "dampening": 0.1}, "nesterov"),
    ("Adam", {"lr": -1e-3}, "lr"),
    ("Adam", {"betas": (1.0, 0.999)}, "betas[0]"),
    ("Adam", {"betas": (0.9, -0.1)}, "betas[1]"),
    ("AdamW", {"betas": (0.9, 1.5)}, "betas[1]"),
    ("Adam", {"eps": -1e-8}, "eps"),
    ("AdamW", {"weight_decay": -0.01}, "weight_decay"),
    ("RMSprop", {"alpha": -0.9}, "alpha"),
    ("RMSprop", {"momentum": -0.9}, "momentum"),
    ("RMSprop", {"eps": -1.0}, "eps"),
]


@pytest.mark.parametrize("name, options, what", REJECTED)
def test_options_torch_rejects_are_errors_naming_the_option(name, options, what):
    with pytest.raises(aj.TransformError, match=rf"{name}: .*{what.replace('[', '.').replace(']', '.')}"):
        getattr(O, name)(**options)


@pytest.mark.parametrize("name, options, what", REJECTED)
def test_torch_rejects_the_same_options(name, options, what):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError):
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **options)


@pytest.mark.parametrize("make, message", [
    (lambda: O.SGD(lr=0.1, momentun=0.9), "SGD: unknown option 'momentun'"),
    (lambda: O.Adam(1e-3, (0.9, 0.99)), "Adam: lr is the only positional argument"),
    (lambda: O.Adam(betas=0.9), "Adam: betas must be a pair"),
    (lambda: O.RMSprop(alpha="0.9"), "RMSprop: alpha must be a finite number >= 0, got '0.9'"),
    (lambda: O.SGD(lr=float("nan")), r"SGD: lr must be a schedule callable\(step\) or a finite number >= 0, got nan"),
    (lambda: O.AdamW(clip_grad_norm=0.0), "AdamW: clip_grad_norm must be None or a finite number > 0, got 0.0"),
    (lambda: O.Adam(betas=(0.9, 1)), r"Adam: betas\[1\] must be a number in \[0, 1\), got 1"),
])
def test_bad_options(make, message):
    with pytest.raises(aj.Error, match=message):
        make()


# every number option, as (optimizer, option)
NUMBER_OPTIONS = [("SGD", "lr"), ("SGD", "momentum"), ("SGD", "dampening"), ("SGD", "weight_decay"),
                  ("SGD", "clip_grad_norm"), ("Adam", "eps"), ("Adam", "weight_decay"), ("AdamW", "lr"),
                  ("RMSprop", "alpha"), ("RMSprop", "eps"), ("RMSprop", "weight_decay"), ("RMSprop", "momentum")]


@pytest.mark.parametrize("value, shown", [(10 ** 400, "an int of 1329 bits"),
                                          (-10 ** 400, "a negative int of 1329 bits"),
                                          (10 ** 5000, "an int of 16610 bits"), (float("inf"), "inf"),
                                          (np.float64("-inf"), "np.float64(-inf)"), (True, "True")],
                         ids=["10**400", "-10**400", "10**5000", "inf", "np-inf", "True"])
@pytest.mark.parametrize("name, option", NUMBER_OPTIONS)
def test_an_option_that_is_not_a_finite_number_is_an_error_naming_it(name, option, value, shown):
    message = rf"{name}: {option} must be .*a finite number.*, got {re.escape(shown)}$"
    with pytest.raises(aj.TransformError, match=message):
        getattr(O, name)(**{option: value})


@pytest.mark.parametrize("betas, which", [((10 ** 400, 0.9), 0), ((0.9, -10 ** 400), 1), ((0.9, float("inf")), 1)])
def test_betas_too_large_for_a_float_are_errors_naming_them(betas, which):
    with pytest.raises(aj.TransformError, match=rf"Adam: betas\[{which}\] must be a number in \[0, 1\), got "):
        O.Adam(betas=betas)


@pytest.mark.parametrize("value", ["no", 0, 2, None], ids=["str", "0", "2", "None"])
@pytest.mark.parametrize("name, flag", [("SGD", "nesterov"), ("Adam", "amsgrad"), ("AdamW", "amsgrad"),
                                        ("RMSprop", "centered")])
def test_a_flag_that_is_not_a_bool_is_an_error_naming_it(name, flag, value):
    options = {flag: value, **({"momentum": 0.9} if name == "SGD" else {})}
    with pytest.raises(aj.TransformError, match=rf"^{name}: {flag} must be True or False, got {re.escape(repr(value))}"):
        getattr(O, name)(**options)


def test_numpy_bools_are_flags():
    assert O.SGD(momentum=0.9, nesterov=np.bool_(True)).nesterov is True
    assert O.Adam(amsgrad=np.bool_(False)).amsgrad is False
    assert O.RMSprop(centered=np.bool_(True)).centered is True


def test_a_schedule_giving_a_negative_lr_names_the_step():
    message = "SGD: the lr schedule's value at step 3 must be a finite number >= 0, got -0.1"
    with pytest.raises(aj.TransformError, match=message):
        O.SGD(lr=lambda step: 0.1 if step < 3 else -0.1).lr_at(3)


@pytest.mark.parametrize("value, shown", [(10 ** 400, "an int of 1329 bits"), (float("inf"), "inf"), (None, "None")])
def test_a_schedule_giving_no_finite_number_names_the_step(value, shown):
    with pytest.raises(aj.TransformError, match=rf"SGD: the lr schedule's value at step 0 must be .*, got {shown}$"):
        O.SGD(lr=lambda step: value).lr_at(0)


@pytest.mark.parametrize("step", [-1, True, 1.0, "0", None])
@pytest.mark.parametrize("lr", [0.1, lambda step: 0.1])
def test_lr_at_takes_a_step_that_is_an_int_from_0(lr, step):
    with pytest.raises(aj.TransformError, match=rf"^SGD.lr_at: step must be an int >= 0, got {re.escape(repr(step))}$"):
        O.SGD(lr=lr).lr_at(step)


def test_large_ints_that_fit_a_float_are_numbers():
    assert O.SGD(lr=2 ** 64).lr_at(0) == 2.0 ** 64
    assert O.SGD(lr=lambda step: 2 ** 64).lr_at(5) == 2.0 ** 64


@pytest.mark.parametrize("call", ["state_types", "function", "init_state"])
def test_non_float_params_are_type_errors(call):
    types = [("w", (3,), "float32"), ("idx", (3,), "int64")]
    with pytest.raises(aj.TypeInferenceError, match="Adam: param 'idx' has dtype int64; optimizers update float"):
        getattr(O.Adam(), call)(types)


@pytest.mark.parametrize("types, message", [
    ([("w", (3,), "float32"), ("b", (3,), "float64")], "params share one dtype .* 'w' is float32 but 'b' is float64"),
    ([("w", (3,), "float32"), ("w", (2,), "float32")], "param 'w' is given twice"),
    ([], "no params to update"),
    ([("w", (3,))], r"each param type is \(name, shape, dtype\)"),
    ([("w", 5, "float64")], r"param 'w' has shape 5; a shape is a tuple of ints >= 0 and symbol names"),
    ("w", "param types must be a list"),
    ([("w", (3,), "complex64")], "param 'w' has dtype complex64"),
])
def test_bad_param_types(types, message):
    with pytest.raises(aj.TypeInferenceError, match=message):
        O.SGD().function(types)


@pytest.mark.parametrize("shape, shown", [((-2,), r"\(-2,\)"), ((3, True), r"\(3, True\)"),
                                         ((2 ** 63,), r"\(9223372036854775808,\)"),
                                         ((np.int64(-1),), r"\(np.int64\(-1\),\)")])
@pytest.mark.parametrize("call", ["state_types", "init_state", "function"])
def test_negative_bool_or_too_large_dims_are_refused_naming_the_param(call, shape, shown):
    with pytest.raises(aj.TypeInferenceError, match=rf"^Adam: param 'w' has shape {shown}; a shape is a tuple of "
                                                    rf"ints >= 0 and symbol names$"):
        getattr(O.Adam(), call)([("w", shape, "float32")])


def test_state_types_give_dims_as_ints():
    types = O.SGD(momentum=0.9).state_types([("w", (np.int64(3), "n"), "float32")])
    assert types == [("w.momentum_buffer", (3, "n"), "float32")] and type(types[0][1][0]) is int


@pytest.mark.parametrize("shape", [(2 ** 45,), (2 ** 40, 2 ** 40)])  # past any address space, or NumPy's byte limit
def test_state_too_large_to_allocate_is_an_out_of_memory_error_naming_it(shape):
    message = rf"^Adam.init_state: state 'w.exp_avg' of shape {re.escape(str(shape))} float64 cannot be allocated"
    with pytest.raises(aj.OutOfMemoryError, match=message):
        O.Adam().init_state([("w", shape, "float64")])


def test_init_state_needs_concrete_shapes():
    with pytest.raises(aj.TypeInferenceError, match=r"state 'w.exp_avg' has symbolic shape \('n', 3\)"):
        O.Adam().init_state([("w", ("n", 3), "float32")])


def update_args(bb, grad_dtype="float64", grad_shape=(3,), state_count=1, lr_dtype="float64"):
    w = bb.param("w", (3,), "float64")
    g = bb.param("g", grad_shape, grad_dtype)
    state = [bb.param(f"s{i}", (3,), "float64") for i in range(state_count)]
    return [w], [g], state, bb.param("lr", (), lr_dtype)


@pytest.mark.parametrize("mismatch, message", [
    ({"grad_shape": (4,)}, r"the grad of 'w' is \(4,\) float64, not \(3,\) float64"),
    ({"grad_dtype": "float32"}, r"the grad of 'w' is \(3,\) float32"),
    ({"state_count": 0}, r"expected 1 state tensors \(w.momentum_buffer\), got 0"),
    ({"lr_dtype": "float32"}, r"lr is \(\) float32, expected a float64 scalar"),
])
def test_update_rejects_mismatched_vars_and_abandons_their_builder(mismatch, message):
    bb = aj.FunctionBuilder("main")
    args = update_args(bb, **mismatch)
    with pytest.raises(aj.TypeInferenceError, match=rf"SGD.update: {message}"):
        O.SGD(momentum=0.9).update(*args)
    assert bb.status == "abandoned"


@pytest.mark.parametrize("which", ["params", "grads", "state"])
@pytest.mark.parametrize("value", [None, 5, "w"])
def test_update_takes_lists_of_vars_and_abandons_the_builder_otherwise(which, value):
    bb = aj.FunctionBuilder("main")
    params, grads, state, lr = update_args(bb, state_count=0)
    args = {"params": params, "grads": grads, "state": state, "lr": lr, which: value}
    with pytest.raises(aj.TypeInferenceError, match=rf"^SGD.update: {which} must be a list of vars, got "
                                                    rf"{type(value).__name__}$"):
        O.SGD().update(**args)
    assert bb.status == "abandoned"


def test_update_of_something_else_than_vars_shows_it():
    bb = aj.FunctionBuilder("main")
    params, grads, state, lr = update_args(bb, state_count=0)
    with pytest.raises(aj.TypeInferenceError, match="^optimizer update: expected tensor vars, got an int of 16610 bits$"):
        O.SGD().update([10 ** 5000], grads, state, lr)
    assert bb.status == "abandoned"


def test_update_takes_tuples_and_generators_of_vars():
    with aj.FunctionBuilder("main") as bb:
        params, grads, state, lr = update_args(bb, state_count=0)
        new_params, new_state = O.SGD().update(tuple(params), (g for g in grads), (), lr)
        assert len(new_params) == 1 and new_state == []


def test_update_with_more_grads_than_params():
    with pytest.raises(aj.TypeInferenceError, match="SGD.update: 1 params but 2 grads"):
        with aj.FunctionBuilder("main") as bb:
            params, grads, state, lr = update_args(bb)
            O.SGD().update(params, grads * 2, [], lr)
