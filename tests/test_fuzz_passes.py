"""The oracle of the ``passes`` fuzz target (python -m adjoint.fuzz passes N):
a pass planted with a bug (a wrong result, an output that does not verify,
a changed original function, a wrong lifted weight) is a finding; a pass
refusing a program is a label; the calling conventions of
LiftTransformParams and Gradient are followed. The short clean run and the
determinism of input k are in test_fuzz_scripts.py, with the other targets."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import adjoint as aj
from adjoint.fuzz import passes as fuzz_passes
from adjoint.fuzz.runner import Finding

MLP = '''\
@function(num_input=1, frozen="b")
def main(x: Tensor((3, 4), "float32"), w: Tensor((5, 4), "float32"), b: Tensor((5,), "float32")):
    wt = permute_dims(w)
    y = matmul(x, wt)
    z = add(y, b)
    e = exp(z)
    e2 = exp(z)
    s = add(e, e2)
    l = sum(s)
    return l
'''


@pytest.fixture(scope="module")
def fuzzer() -> fuzz_passes.Fuzzer:
    return fuzz_passes.Fuzzer(0)


def run(fuzzer, passes: list[dict], text: str = MLP) -> tuple[str, list[str]]:
    reached: list[str] = []
    label = fuzzer.run({"base": 0, "mutations": [], "text": text, "passes": passes}, reached.append)
    return label, reached


def test_a_correct_pipeline_is_ok_and_compares_through_each_convention(fuzzer):
    label, reached = run(fuzzer, [{"pass": "EliminateCommonSubexpr"},
                                  {"pass": "Gradient", "func_name": "main", "require_grads": None, "target_index": 0,
                                   "simplify": True},
                                  {"pass": "LiftTransformParams"},
                                  {"pass": "ConvertDType", "dtype": "float64", "from_dtype": "float32"}])
    assert label == "ok"
    for stage in ("compared", "adjoint compared", "lifted compared", "compared after a dtype change", "fixed point"):
        assert stage in reached, stage


def test_a_pass_refusing_the_program_is_a_label_and_the_pipeline_goes_on(fuzzer):
    label, reached = run(fuzzer, [{"pass": "Gradient", "func_name": "main", "require_grads": None, "target_index": 3,
                                   "simplify": True},
                                  {"pass": "DeadCodeElimination"}])
    assert label == "aj.TransformError"
    assert reached.count("pass refused") == 1 and "compared" in reached


def planted(monkeypatch, cls, change) -> None:
    """cls's pass returns change(what it returned), unverified (conftest
    makes every pass verify its output: here the fuzzer must)."""
    transform = cls.transform
    monkeypatch.setattr(cls, "__call__", lambda self, mod: change(transform(self, mod)))


def test_a_wrong_result_is_a_finding(fuzzer, monkeypatch):
    planted(monkeypatch, aj.transform.EliminateCommonSubexpr,
            lambda mod: aj.parse(mod.script().replace("add(y, b)", "subtract(y, b)")))
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "EliminateCommonSubexpr"}])
    assert info.value.kind == "wrong-result" and "main(...) differs" in info.value.detail


def test_a_wrong_lifted_weight_is_a_finding(fuzzer, monkeypatch):
    def double_the_weights(mod):
        return aj.parse(mod.script().replace("wt: Tensor((4, 5), \"float32\") = permute_dims(w)",
                                             "w2: Tensor((5, 4), \"float32\") = add(w, w)\n"
                                             "    wt: Tensor((4, 5), \"float32\") = permute_dims(w2)"))

    planted(monkeypatch, aj.transform.LiftTransformParams, double_the_weights)
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "LiftTransformParams"}])
    assert info.value.kind == "wrong-result"


def test_an_output_that_does_not_verify_is_a_finding(fuzzer, monkeypatch):
    def drop_an_attr_check(mod):
        return mod.with_function("main", mod["main"].with_attr("num_input", 1).with_attr("frozen", "x"))

    planted(monkeypatch, aj.transform.DeadCodeElimination, drop_an_attr_check)
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "DeadCodeElimination"}])
    assert info.value.kind in ("invalid-output", "reparse")


def test_gradient_changing_the_original_function_is_a_finding(fuzzer, monkeypatch):
    planted(monkeypatch, aj.transform.Gradient,
            lambda mod: mod.with_function("main", aj.parse(re.sub(r"(e2: [^=]*= )exp", r"\1tanh", mod.script()))["main"]))
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "Gradient", "func_name": "main", "require_grads": None, "target_index": 0,
                      "simplify": False}])
    assert info.value.kind == "gradient-changed"


def test_a_pass_that_is_not_its_own_fixed_point_is_a_finding(fuzzer, monkeypatch):
    count = iter(range(100))
    planted(monkeypatch, aj.transform.DeadCodeElimination,
            lambda mod: mod if next(count) % 2 == 0 else aj.parse(re.sub(r"(\n    e2: .*)", r"\1\n    dead = tanh(z)",
                                                                            mod.script())))
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "DeadCodeElimination"}])
    assert info.value.kind == "fixed-point"


def test_a_finding_is_saved_as_the_program_and_a_script_running_the_pipeline(fuzzer, tmp_path):
    inp = fuzzer.make(5)
    files = fuzzer.save(inp, str(tmp_path / "f"), "adjoint fuzz finding: wrong-result\ntarget passes\n")
    assert [f[-3:] for f in files] == [".aj", ".py"]
    assert (tmp_path / "f.aj").read_text() == inp["text"]
    ran = subprocess.run([sys.executable, files[1]], capture_output=True, text=True, timeout=60)
    assert ran.stdout.startswith("@function") or "aj.errors" in ran.stderr or "adjoint.errors" in ran.stderr, ran.stderr
    assert "# adjoint fuzz finding: wrong-result" in (tmp_path / "f.py").read_text()


def test_inputs_use_every_pass_and_programs_with_weights(fuzzer):
    inputs = [fuzzer.make(k) for k in range(300)]
    used = {name for inp in inputs for spec in inp["passes"] for name in fuzz_passes.pass_names(spec)}
    assert used == set(fuzz_passes.PASSES) - {"Sequential"}
    assert any(spec["pass"] == "Sequential" for inp in inputs for spec in inp["passes"])
    assert all(1 <= len(inp["passes"]) <= 6 for inp in inputs)
    assert sum("num_input=" in inp["text"] for inp in inputs) > 50
    assert sum("frozen=" in inp["text"] for inp in inputs) > 20
    assert sum(bool(inp["mutations"]) for inp in inputs) > 100
    for inp in inputs[:50]:
        aj.analysis.verify(aj.parse(inp["text"]))


def test_a_lifted_function_with_a_wrong_frozen_attr_is_a_finding(fuzzer, monkeypatch):
    # b is frozen and passes through: the lifted main must list it (and nothing computed from w)
    label, reached = run(fuzzer, [{"pass": "LiftTransformParams"}])
    assert label == "ok" and "frozen checked" in reached
    planted(monkeypatch, aj.transform.LiftTransformParams,
            lambda mod: aj.parse(mod.script().replace('frozen="b"', 'frozen="wt"')))
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "LiftTransformParams"}])
    assert info.value.kind == "lift-frozen" and "want ['b']" in info.value.detail


def test_an_adjoint_unlike_the_one_made_with_the_other_simplify_is_a_finding(fuzzer, monkeypatch):
    spec = {"pass": "Gradient", "func_name": "main", "require_grads": ["w", "b"], "target_index": 0, "simplify": True}
    label, reached = run(fuzzer, [spec])
    assert label == "ok" and "simplified gradient compared" in reached
    transform = aj.transform.Gradient.transform

    def grads_swapped_unsimplified(self, mod):
        if self.simplify:
            return transform(self, mod)
        return transform(aj.transform.Gradient(require_grads=self.require_grads[::-1], simplify=False), mod)

    monkeypatch.setattr(aj.transform.Gradient, "transform", grads_swapped_unsimplified)
    with pytest.raises(Finding) as info:
        run(fuzzer, [spec])
    assert info.value.kind == "wrong-result" and "with simplify=False, against simplify=True" in info.value.detail


def test_a_mutation_leaving_no_function_is_no_program(fuzzer):
    # regression: a mutated text with no function left verified, and picking a function for Gradient
    # or for the attrs raised IndexError (seed 0, input 157796, a false finding)
    assert fuzz_passes._valid("# every line deleted but a comment\n") is None
    assert fuzz_passes._valid(MLP) is not None
    inp = fuzzer.make(157796)
    assert len(aj.parse(inp["text"])) >= 1


FLOAT64_OF_FLOAT32 = '''\
@function(num_input=1)
def main(x: Tensor((2, 3, 4), "float32"), wq: Tensor((4, 4), "float32"), wk: Tensor((4, 4), "float32")):
    q = matmul(x, wq)
    k = matmul(x, wk)
    kt = permute_dims(k, axes=[0, 2, 1])
    s = matmul(q, kt)
    c = const(0.5, "float32")
    sc = multiply(s, c)
    p = softmax(sc, axis=-1)
    o = matmul(p, x, out_dtype="float64")
    l = sum(o)
    return l
'''


def test_a_float64_result_of_float32_values_is_compared_at_float32_tolerance(fuzzer):
    # regression (seed 0, input 112090, a false finding): matmul(..., out_dtype="float64") of float32
    # values, reassociated, differed from the first run by 3e-8 relative, over float64's tolerance
    label, reached = run(fuzzer, [{"pass": "SimplifyGradient"}, {"pass": "ReassociateMatmul", "dim_bounds": None},
                                  {"pass": "LiftTransformParams"}], FLOAT64_OF_FLOAT32)
    assert label == "ok" and "lifted compared" in reached


def test_results_in_float64_after_convert_dtype_are_the_new_reference(fuzzer):
    # regression (seed 0, input 209264, a false finding): a softmax's gradient in float64 differed from
    # the float32 one by 0.7% at an element (float32 cancellation), over the tolerance; the float64
    # results are then the reference, so converting back compares against them
    inp = {"base": 0, "mutations": [], "text": aj.transform.Gradient()(aj.parse(fuzz_passes.PASS_TEXTS[-1])).script(),
           "passes": [{"pass": "ConvertDType", "dtype": "float64", "from_dtype": "float32"},
                      {"pass": "ConvertDType", "dtype": "float32", "from_dtype": "float64"}]}
    reached: list[str] = []
    assert fuzzer.run(inp, reached.append) == "ok"
    assert reached.count("compared after a dtype change") == 4


def test_a_lifted_constant_counts_as_frozen(fuzzer):
    # regression (seed 1, inputs 44335 and 74353, false findings): zeros(("n", 3)) with n a weight's dim
    # is lifted and reads no trained weight; the pass lists it in frozen, and the check wanted it not to
    text = '''\
@function(num_input=1, frozen="y")
def main(x: Tensor((3,), "float64"), w: Tensor(("n", 3), "float64"), y: Tensor(("n", 3), "float64")):
    z = zeros(("n", 3), "float64")
    a = add(x, z)
    b = add(a, w)
    c = add(b, y)
    return c
'''
    label, reached = run(fuzzer, [{"pass": "LiftTransformParams"}], text)
    assert label == "ok" and "frozen checked" in reached
