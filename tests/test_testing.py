"""aj.testing: gradient checks that pass on correct float32 graphs at their
defaults (finite differences of a float64 copy, tolerances by dtype), catch
wrong gradients in full and directional mode, say where in their message,
and keep the library's frames out of pytest's traceback."""

import os
import subprocess
import sys

import numpy as np
import pytest

import adjoint as aj
from adjoint.testing import check_gradients, check_numerical_grads, numerical_grads

op = aj.op


def mlp() -> aj.Module:
    """The newcomer's case: a tanh MLP, log_softmax, mean, in float32."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (8, 16), "float32")
    w1, b1 = bb.param("w1", (16, 32), "float32"), bb.param("b1", (32,), "float32")
    w2, b2 = bb.param("w2", (32, 10), "float32"), bb.param("b2", (10,), "float32")
    return bb.finish(op.mean(op.log_softmax(op.tanh(x @ w1 + b1) @ w2 + b2, axis=-1)))


MLP = mlp()


def mlp_inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.type.shape).astype(np.float32) for p in MLP["main"].params]


def float64_forward(mod: aj.Module, name: str = "main"):
    return aj.build(aj.transform.ConvertDType("float64")(mod))[name]


def float32_grads(mod: aj.Module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return list(aj.build(aj.transform.Gradient()(mod))["main_adjoint"](*inputs)[1])


def test_mlp_passes_at_the_defaults_over_100_seeds():
    for seed in range(100):
        grads = check_gradients(MLP, "main", mlp_inputs(seed))
        assert [g.dtype for g in grads] == [np.float32] * 5


def test_mlp_passes_in_directional_mode_over_100_seeds():
    for seed in range(100):
        check_gradients(MLP, "main", mlp_inputs(seed), mode="directional", seed=seed)


def wrong(grads: list[np.ndarray], k: int, index: tuple, by: float) -> list[np.ndarray]:
    out = [g.copy() for g in grads]
    out[k][index] += by
    return out


def test_a_wrong_element_is_caught_and_named():
    inputs = mlp_inputs(0)
    grads = float32_grads(MLP, inputs)
    bad = wrong(grads, 1, (3, 7), 0.5 * float(np.abs(grads[1]).max()))
    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(float64_forward(MLP), inputs, bad)
    message = str(e.value)
    assert "1 of 1002 elements" in message
    assert "worst: input 1, element (3, 7)" in message
    assert f"analytic {bad[1][3, 7]:.9g}" in message
    numeric = aj.testing.numerical_grads(float64_forward(MLP), inputs, which=[1])[0]
    assert f"numeric {numeric[3, 7]:.9g}" in message
    # the table: a row per input with its element count, failures and max relative error
    rows = {line.split()[0]: line.split() for line in message.splitlines()[3:-1]}
    assert message.splitlines()[-1].startswith("(rel err: |analytic - numeric| / max(|numeric|, atol / rtol)")
    assert rows["1"][1:3] == ["512", "1"] and float(rows["1"][3]) > 0.1
    assert rows["0"][1:3] == ["128", "0"] and float(rows["0"][3]) < 1e-4


def wrong_tanh_vjp_grads(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The MLP's grads from an adjoint whose tanh VJP forgot a square:
    g * (1 - |tanh|) where g * (1 - tanh**2) is right."""
    text = aj.transform.Gradient()(MLP).script()
    assert text.count("= square(lv_2)") == 1
    broken = aj.parse(text.replace("= square(lv_2)", "= abs(lv_2)"))
    return list(aj.build(broken)["main_adjoint"](*inputs)[1])


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_a_wrong_vjp_is_caught(mode):
    inputs = mlp_inputs(1)
    forward = float64_forward(MLP)
    check_numerical_grads(forward, inputs, float32_grads(MLP, inputs), mode=mode)
    with pytest.raises(aj.GradientCheckError, match="gradient check failed"):
        check_numerical_grads(forward, inputs, wrong_tanh_vjp_grads(inputs), mode=mode)


def abs_by_sqrt() -> aj.Module:
    """sum(sqrt(x * x)): its adjoint x / sqrt(x * x) is NaN at 0, where the differences give 0."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3,), "float32")
    return bb.finish(op.sum(op.sqrt(x * x)))


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_a_nan_gradient_fails_naming_the_element(mode):
    # regression: NaN compared as passing (nan > tolerance is False), in both modes
    with pytest.raises(aj.GradientCheckError) as e:
        check_gradients(abs_by_sqrt(), "main", [np.array([0.0, 1.0, -2.0], np.float32)], mode=mode)
    assert "input 'x' (0), element (0,): analytic nan" in str(e.value)
    check_gradients(abs_by_sqrt(), "main", [np.array([0.5, 1.0, -2.0], np.float32)], mode=mode)


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_all_nan_grads_fail(mode):
    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(_square_sum, [np.array([1.0, 2.0])], [np.full(2, np.nan)], mode=mode)
    assert "input 0, element (0,): analytic nan" in str(e.value)


def _step(x):
    """Infinite at x > 0, 0 elsewhere: its central difference at 0 is +inf."""
    return float(np.inf if x[0] > 0 else 0.0)


def test_infinities_pass_only_when_both_sides_are_the_same():
    check_numerical_grads(_step, [np.zeros(1)], [np.array([np.inf])])
    check_numerical_grads(_step, [np.zeros(1)], [np.array([np.inf])], mode="directional")
    for analytic in (-np.inf, 5.0, np.nan):
        for mode in ("full", "directional"):
            with pytest.raises(aj.GradientCheckError, match="gradient check failed"):
                check_numerical_grads(_step, [np.zeros(1)], [np.array([analytic])], mode=mode)
    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(_step, [np.zeros(1)], [np.array([5.0])])
    assert "(1 of them not finite)" in str(e.value) and "element (0,): analytic 5, numeric inf" in str(e.value)


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_a_nan_numeric_difference_fails(mode):
    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(lambda x: float("nan"), [np.ones(2)], [np.zeros(2)], mode=mode)
    lines = str(e.value).splitlines()
    if mode == "full":
        assert "element (0,): analytic 0, numeric nan" in lines[1]
    else:
        assert [line.split()[2:] for line in lines[2:-1]] == [["nan", "inf", "FAIL"]] * 3


def test_a_nan_numeric_element_leaves_the_default_atol_to_the_others():
    # the scale of atol is the largest finite |numeric|: one NaN element does not make it 1
    def f(x):  # NaN below x[0] = 0: the difference of x[0] at 0 is NaN, of x[1] 1000
        return float(np.sum(1000.0 * x)) + (np.nan if x[0] < 0 else 0.0)

    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(f, [np.array([0.0, 1.0])], [np.array([1000.0, 1000.0])])
    assert "1 of 2 elements exceed atol 0.01 + rtol 1e-05" in str(e.value)


def test_directional_message_lists_each_direction():
    inputs = mlp_inputs(2)
    with pytest.raises(aj.GradientCheckError) as e:
        check_numerical_grads(float64_forward(MLP), inputs, wrong_tanh_vjp_grads(inputs), mode="directional",
                              directions=4, seed=7)
    lines = str(e.value).splitlines()
    assert "of 4 random directions (seed 7)" in lines[0]
    assert lines[1].split() == ["direction", "analytic", "<grad,", "v>", "numeric", "rel", "err"]
    rows = [line.split() for line in lines[2:-1]]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    for r in rows:
        analytic, numeric, rel = float(r[1]), float(r[2]), float(r[3])
        # relative to |numeric|, or to atol / rtol when that is larger: above rtol exactly when failing
        assert rel <= abs(analytic - numeric) / abs(numeric) * 1.01
        assert rel > 2e-3 if r[4:] == ["FAIL"] else rel <= 4e-3
    assert any(r[4:] == ["FAIL"] for r in rows)


def million_element_module() -> aj.Module:
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (1000, 1000), "float32")
    return bb.finish(op.sum(op.tanh(x) * x))


def test_directional_mode_on_a_million_elements():
    mod = million_element_module()
    x = np.random.default_rng(3).standard_normal((1000, 1000)).astype(np.float32)
    (g,) = check_gradients(mod, "main", [x], mode="directional")
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(g, np.tanh(x64) + x64 * (1 - np.tanh(x64) ** 2), rtol=1e-5, atol=1e-6)
    # a VJP off by 1% on every element: caught
    with pytest.raises(aj.GradientCheckError, match="3 of 3 random directions"):
        check_numerical_grads(float64_forward(mod), [x], [g * np.float32(1.01)], mode="directional")


def test_float64_graphs_use_float64_tolerances():
    bb = aj.FunctionBuilder("f")
    a, b = bb.param("a", (3, 4), "float64"), bb.param("b", (4, 2), "float64")
    mod = bb.finish(op.sum(op.tanh(a @ b)))
    rng = np.random.default_rng(4)
    inputs = [rng.random((3, 4)), rng.random((4, 2))]
    grads = check_gradients(mod, "f", inputs)
    forward = aj.build(mod)["f"]
    # 1e-4 relative off: within float32's 2e-3, beyond float64's 1e-5
    check_numerical_grads(forward, inputs, [(g * (1 + 1e-4)).astype(np.float32) for g in grads])
    with pytest.raises(aj.GradientCheckError, match="rtol 1e-05"):
        check_numerical_grads(forward, inputs, [g * (1 + 1e-4) for g in grads])


def test_explicit_tolerances_in_the_design_order():
    inputs = mlp_inputs(5)
    forward = float64_forward(MLP)
    grads = float32_grads(MLP, inputs)
    check_numerical_grads(forward, inputs, grads, 1e-3, 1e-2, 1e-4)
    with pytest.raises(aj.GradientCheckError, match=r"atol 1e-12 \+ rtol 1e-12"):
        check_numerical_grads(forward, inputs, grads, 1e-6, 1e-12, 1e-12)


def test_int_inputs_pass_through_unchanged():
    bb = aj.FunctionBuilder("main")
    x, k = bb.param("x", (4,), "float32"), bb.param("k", (4,), "int32")
    mod = bb.finish(op.sum(op.exp(x) * op.astype(k, "float32")))
    (g,) = check_gradients(mod, "main", [np.linspace(-1, 1, 4, dtype=np.float32), np.arange(4, dtype=np.int32)])
    assert g.dtype == np.float32


@pytest.mark.parametrize("layout", ["fortran", "transposed", "strided"])
def test_inputs_of_any_layout(layout):
    # regression: differences of a non-C-contiguous input moved a copy of it, so all were 0
    a = np.arange(12.0).reshape(3, 4) - 5.0
    x = {"fortran": np.asfortranarray(a), "transposed": a.T.copy().T, "strided": np.repeat(a, 2, axis=1)[:, ::2]}[layout]
    assert not x.flags.c_contiguous
    (g,) = numerical_grads(lambda v: float(np.sum(v * v)), [x])
    np.testing.assert_allclose(g, 2 * a, rtol=1e-8)
    bb = aj.FunctionBuilder("main")
    p = bb.param("x", (3, 4), "float32")
    (g,) = check_gradients(bb.finish(op.sum(op.tanh(p) * p)), "main", [x.astype(np.float32, order="K")])
    np.testing.assert_allclose(g, np.tanh(a) + a * (1 - np.tanh(a) ** 2), rtol=1e-5, atol=1e-6)


def test_int_and_bool_inputs_are_differentiated_as_float64():
    # regression: an int input was moved by delta in place, so x + 1e-6 stayed x and 0.5 / 1e-6 came out
    seen = []

    def f(x, b):
        seen.append((x.dtype, b.dtype))
        return float(np.sum(x * x) + np.sum(b))

    gx, gb = numerical_grads(f, [np.array([1, 2, 3]), np.array([True, False])])
    np.testing.assert_allclose(gx, [2.0, 4.0, 6.0], rtol=1e-8)
    np.testing.assert_allclose(gb, [1.0, 1.0], rtol=1e-8)
    assert set(seen) == {(np.dtype(np.float64), np.dtype(np.float64))}
    check_numerical_grads(f, [np.array([1, 2, 3]), np.array([True, False])], [np.array([2.0, 4.0, 6.0]), np.ones(2)])
    # an input left out of which keeps its dtype
    (gx,) = numerical_grads(lambda x, k: float(np.sum(x * k)) if k.dtype == np.int32 else np.nan,
                            [np.ones(2), np.array([3, 4], np.int32)], which=[0])
    np.testing.assert_allclose(gx, [3.0, 4.0], rtol=1e-8)


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "elementwise"}, "mode must be one of ('full', 'directional'), got 'elementwise'"),
    ({"directions": 0}, "directions must be a positive int, got 0"),
    ({"directions": 2.5}, "directions must be a positive int, got 2.5"),
    ({"seed": -1}, "seed must be a non-negative int, got -1"),
    ({"delta": 0.0}, "delta must be None or a positive finite number, got 0.0"),
    ({"rtol": float("nan")}, "rtol must be None or a non-negative finite number, got nan"),
    ({"atol": "1e-3"}, "atol must be None or a non-negative finite number, got '1e-3'"),
])
def test_bad_options_are_errors(kwargs, message):
    with pytest.raises(aj.Error) as e:
        check_gradients(MLP, "main", mlp_inputs(0), **kwargs)
    assert message in str(e.value)


def test_bad_grads_are_errors():
    inputs = mlp_inputs(0)
    grads = float32_grads(MLP, inputs)
    forward = float64_forward(MLP)
    with pytest.raises(aj.Error, match="5 inputs but 4 grads"):
        check_numerical_grads(forward, inputs, grads[:4])
    with pytest.raises(aj.Error, match=r"grad of input 1 has shape \(32, 16\), the input \(16, 32\)"):
        check_numerical_grads(forward, inputs, [grads[0], grads[1].T, *grads[2:]])
    with pytest.raises(aj.Error, match="grad of input 4 is int64, expected float32 or float64"):
        check_numerical_grads(forward, inputs, [*grads[:4], np.zeros(10, np.int64)])
    with pytest.raises(aj.Error, match=r"must return a scalar, got shape \(3,\)"):
        check_numerical_grads(lambda x: x, [np.ones(3)], [np.ones(3)])


@pytest.mark.parametrize("returned, message", [
    # regression: these were a raw TypeError or ValueError from float()
    (None, "got None (NoneType)"),
    ("a", "got 'a' (str)"),
    (1j, "got 1j (complex)"),
    ([[1.0], [2.0, 3.0]], "got [[1.0], [2.0, 3.0]] (list)"),
    (np.array(["x"]), "got array(['x'], dtype='<U1') (ndarray)"),
])
@pytest.mark.parametrize("mode", ["full", "directional"])
def test_what_f_returns_if_not_a_real_scalar_is_an_error_naming_it(returned, message, mode):
    with pytest.raises(aj.Error) as e:
        check_numerical_grads(lambda x: returned, [np.ones(2)], [np.ones(2)], mode=mode)
    assert str(e.value) == f"gradient check: the function must return a real scalar, {message}"
    with pytest.raises(aj.Error, match="must return a real scalar"):
        numerical_grads(lambda x: returned, [np.ones(2)])


@pytest.mark.parametrize("mode", ["full", "directional"])
def test_an_int_past_float64_returned_by_f_is_an_error(mode):
    """It was Python's OverflowError from float()."""
    with pytest.raises(aj.Error) as e:
        check_numerical_grads(lambda x: 10**400, [np.ones(2)], [np.ones(2)], mode=mode)
    assert str(e.value).startswith("gradient check: the function returned 1000") and "too large for a float64" in str(e.value)


def test_one_real_number_of_any_type_is_a_scalar():
    from fractions import Fraction

    for returned in (np.float32(2), np.array([[2]]), True, Fraction(2), np.array(2.0, dtype=object)):
        (g,) = numerical_grads(lambda x: returned, [np.ones(1)])
        assert g.tolist() == [0.0]


def _square_sum(a):
    return float(np.sum(a ** 2))


@pytest.mark.parametrize("call, message", [
    # regression: these were IndexError, ZeroDivisionError and TypeError, and a negative delta was taken
    (lambda x: numerical_grads(_square_sum, [x], which=[3]), "numerical_grads: which holds 3, not the index of one of the 1 inputs"),
    (lambda x: numerical_grads(_square_sum, [x], which=0), "numerical_grads: which must be a list of input indices, got int"),
    (lambda x: numerical_grads(_square_sum, [x], delta=0), "numerical_grads: delta must be None or a positive finite number, got 0"),
    (lambda x: numerical_grads(_square_sum, [x], delta=-1e-6), "delta must be None or a positive finite number, got -1e-06"),
    (lambda x: numerical_grads(_square_sum, None), "numerical_grads: inputs must be a list of arrays, got NoneType"),
    (lambda x: numerical_grads(None, [x]), "numerical_grads: f must be callable, got NoneType"),
    (lambda x: check_numerical_grads(None, [x], [x]), "check_numerical_grads: f must be callable, got NoneType"),
    (lambda x: check_numerical_grads(_square_sum, None, [x]), "check_numerical_grads: inputs must be a list of arrays"),
    (lambda x: check_numerical_grads(_square_sum, [x], None), "check_numerical_grads: grads must be a list of arrays"),
    (lambda x: numerical_grads(_square_sum, [x, x * 1j]), "numerical_grads: input 1 is complex128; finite differences need real numbers"),
    (lambda x: numerical_grads(_square_sum, [x, [[1], [2, 3]]]), "numerical_grads: input 1 is not an array"),
    (lambda x: check_numerical_grads(_square_sum, [x.astype(str)], [x]), "check_numerical_grads: input 0 is <U32; finite differences need"),
    # regression: an array given as the inputs was taken as the list of its rows, and f called with each element
    (lambda x: numerical_grads(_square_sum, x), "numerical_grads: inputs must be a list of arrays, one per input, got an ndarray of shape (2,); give one input as [x]"),
    (lambda x: check_numerical_grads(_square_sum, x, [x]), "check_numerical_grads: inputs must be a list of arrays, one per input, got an ndarray"),
])
def test_bad_arguments_of_the_finite_difference_checks_are_errors(call, message):
    with pytest.raises(aj.Error) as e:
        call(np.array([1.0, 2.0]))
    assert message in str(e.value)


def test_numerical_grads_of_the_inputs_in_which():
    x, y = np.array([1.0, 2.0]), np.array([3.0])
    (gy,) = numerical_grads(lambda a, b: float(np.sum(a * b)), [x, y], which=np.array([1]))
    np.testing.assert_allclose(gy, [3.0], rtol=1e-8)


def test_pytest_shows_only_the_callers_frame(tmp_path):
    # failing checks, run by pytest: each traceback holds the test's frame, none of aj.testing's
    test = tmp_path / "test_fails.py"
    test.write_text(
        "import numpy as np\n"
        "import adjoint as aj\n"
        "bb = aj.FunctionBuilder('main')\n"
        "x = bb.param('x', (3,), 'float32')\n"
        "mod = bb.finish(aj.op.sum(aj.op.exp(x)))\n"
        "f = aj.build(aj.transform.ConvertDType('float64')(mod))['main']\n"
        "def test_numerical_grads_directional():\n"
        "    aj.testing.check_numerical_grads(f, [np.ones(3)], [np.zeros(3)], mode='directional')\n"
        "def test_gradients_full():\n"
        "    aj.testing.check_gradients(mod, 'main', [np.ones(3, np.float32)], rtol=1e-12, atol=1e-14)\n"
    )
    # no short summary (-rN): under a CI variable pytest prints it untruncated, repeating each message
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider", str(test)],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120).stdout
    assert "2 failed" in out and out.count("GradientCheckError: gradient check failed") == 2, out
    assert "test_fails.py:8: GradientCheckError" in out and "test_fails.py:10: GradientCheckError" in out, out
    assert "testing.py" not in out, out
