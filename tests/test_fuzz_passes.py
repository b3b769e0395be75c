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
from adjoint.fuzz import passes_corpus, passes_pipeline, passes_train
from adjoint.fuzz.runner import Finding
from test_fuzz_findings import LIFTED_CONSTANT  # the program of that finding

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


def planted_finding(fuzzer, monkeypatch, passes: list, cls, change) -> Finding:
    """The finding of running ``passes`` when cls's pass returns change(what it returned)."""
    planted(monkeypatch, cls, change)
    with pytest.raises(Finding) as info:
        run(fuzzer, passes)
    return info.value


def test_a_wrong_result_is_a_finding(fuzzer, monkeypatch):
    finding = planted_finding(fuzzer, monkeypatch, [{"pass": "EliminateCommonSubexpr"}],
                              aj.transform.EliminateCommonSubexpr,
                              lambda mod: aj.parse(mod.script().replace("add(y, b)", "subtract(y, b)")))
    assert finding.kind == "wrong-result" and "main(...) differs" in finding.detail


def test_a_wrong_lifted_weight_is_a_finding(fuzzer, monkeypatch):
    def double_the_weights(mod):
        return aj.parse(mod.script().replace("wt: Tensor((4, 5), \"float32\") = permute_dims(w)",
                                             "w2: Tensor((5, 4), \"float32\") = add(w, w)\n"
                                             "    wt: Tensor((4, 5), \"float32\") = permute_dims(w2)"))

    finding = planted_finding(fuzzer, monkeypatch, [{"pass": "LiftTransformParams"}],
                              aj.transform.LiftTransformParams, double_the_weights)
    assert finding.kind == "wrong-result"


def test_an_output_that_does_not_verify_is_a_finding(fuzzer, monkeypatch):
    def drop_an_attr_check(mod):
        return mod.with_function("main", mod["main"].with_attr("num_input", 1).with_attr("frozen", "x"))

    finding = planted_finding(fuzzer, monkeypatch, [{"pass": "DeadCodeElimination"}],
                              aj.transform.DeadCodeElimination, drop_an_attr_check)
    assert finding.kind in ("invalid-output", "reparse")


def test_gradient_changing_the_original_function_is_a_finding(fuzzer, monkeypatch):
    spec = {"pass": "Gradient", "func_name": "main", "require_grads": None, "target_index": 0, "simplify": False}
    finding = planted_finding(
        fuzzer, monkeypatch, [spec], aj.transform.Gradient,
        lambda mod: mod.with_function("main", aj.parse(re.sub(r"(e2: [^=]*= )exp", r"\1tanh", mod.script()))["main"]))
    assert finding.kind == "gradient-changed"


def test_a_pass_that_is_not_its_own_fixed_point_is_a_finding(fuzzer, monkeypatch):
    count = iter(range(100))
    finding = planted_finding(
        fuzzer, monkeypatch, [{"pass": "DeadCodeElimination"}], aj.transform.DeadCodeElimination,
        lambda mod: mod if next(count) % 2 == 0 else aj.parse(re.sub(r"(\n    e2: .*)", r"\1\n    dead = tanh(z)",
                                                                        mod.script())))
    assert finding.kind == "fixed-point"


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
    used = {name for inp in inputs for spec in inp["passes"] for name in passes_pipeline.pass_names(spec)}
    assert used == set(passes_pipeline.PASSES) - {"Sequential"}
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
    finding = planted_finding(fuzzer, monkeypatch, [{"pass": "LiftTransformParams"}], aj.transform.LiftTransformParams,
                              lambda mod: aj.parse(mod.script().replace('frozen="b"', 'frozen="wt"')))
    assert finding.kind == "lift-frozen" and "want ['b']" in finding.detail


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


ATTENTION = next(t for t in passes_corpus.PASS_TEXTS if "softmax(sc" in t)  # a text of the corpus
FLOAT64_OF_FLOAT32 = ATTENTION.replace("o = matmul(p, x)", 'o = matmul(p, x, out_dtype="float64")')


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
    inp = {"base": 0, "mutations": [], "text": aj.transform.Gradient()(aj.parse(passes_corpus.PASS_TEXTS[-1])).script(),
           "passes": [{"pass": "ConvertDType", "dtype": "float64", "from_dtype": "float32"},
                      {"pass": "ConvertDType", "dtype": "float32", "from_dtype": "float64"}]}
    reached: list[str] = []
    assert fuzzer.run(inp, reached.append) == "ok"
    assert reached.count("compared after a dtype change") == 4


def test_a_lifted_constant_counts_as_frozen(fuzzer):
    # regression (seed 1, inputs 44335 and 74353, false findings): zeros(("n", 3)) with n a weight's dim
    # is lifted and reads no trained weight; the pass lists it in frozen, and the check wanted it not to
    text = LIFTED_CONSTANT.format(frozen=', frozen="y"')
    label, reached = run(fuzzer, [{"pass": "LiftTransformParams"}], text)
    assert label == "ok" and "frozen checked" in reached


# ---- text rules (P.Rewriter.from_text) as passes ----

def rules_text() -> str:
    return next(t for t in passes_corpus.PASS_TEXTS if "negative(gt)" in t or "negative(g3)" in t)


@pytest.mark.parametrize("rule", sorted(set(passes_pipeline.RULES) - {"multiply_commutes"}))
def test_each_text_rule_is_sound_and_its_own_fixed_point(fuzzer, rule):
    rewrote = False
    for text in passes_corpus.PASS_TEXTS[-2:]:  # the texts the rules are for, float32 and float64
        label, reached = run(fuzzer, [{"pass": "Rewriter", "rules": [rule]}], text)
        assert label == "ok" and "compared" in reached and "fixed point" in reached
        rewrote |= "rule rewrote" in reached
    assert rewrote


def test_rules_that_never_stop_are_a_label_and_not_a_fixed_point_check(fuzzer):
    batch_norm = next(t for t in passes_corpus.PASS_TEXTS if "multiply(gamma, inv)" in t)
    label, reached = run(fuzzer, [{"pass": "Rewriter", "rules": ["multiply_commutes"]}], batch_norm)
    assert label == "aj.TransformError" and "pass refused" in reached
    label, _ = run(fuzzer, [{"pass": "Rewriter", "rules": ["transpose_of_matmul", "matmul_of_transposes"]}],
                   rules_text())
    assert label == "aj.TransformError"
    looping = {"pass": "Rewriter", "rules": ["matmul_of_transposes", "transpose_of_matmul"]}
    assert not passes_pipeline.fixed_point(looping)
    assert passes_pipeline.fixed_point({"pass": "Rewriter", "rules": ["relu_relu", "transpose_of_matmul"]})


def test_rules_in_a_sequential_and_joined_with_or(fuzzer):
    spec = {"pass": "Sequential", "passes": [{"pass": "Rewriter", "rules": ["double_negative", "sum_of_halves"]},
                                             {"pass": "DeadCodeElimination"}]}
    assert " | " in passes_pipeline.pass_code(spec)
    label, reached = run(fuzzer, [spec], rules_text())
    assert label == "ok" and "compared" in reached


def test_an_unsound_text_rule_is_a_finding(fuzzer, monkeypatch):
    wrong = passes_pipeline._rule('x: Tensor((2, 2), "float32")', "    return relu(relu(x))", "    return x")
    monkeypatch.setitem(passes_pipeline.RULES, "relu_relu", wrong)
    with pytest.raises(Finding) as info:
        run(fuzzer, [{"pass": "Rewriter", "rules": ["relu_relu"]}], rules_text())
    assert info.value.kind == "wrong-result"


def test_an_exact_rule_is_compared_at_the_tight_tolerance():
    assert not passes_pipeline.rounds({"pass": "Rewriter", "rules": ["double_negative", "fold_permutes"]})
    assert passes_pipeline.rounds({"pass": "Rewriter", "rules": ["double_negative", "sum_of_halves"]})
    assert passes_pipeline.rounds({"pass": "Sequential", "passes": [{"pass": "ReassociateMatmul", "dim_bounds": None}]})


# ---- training one step, on the function and on it lifted ----

def train(optimizer: str = "sgd", func_name: str = "main") -> dict:
    return {"pass": "Train", "func_name": func_name, "optimizer": optimizer, "seed": 7}


@pytest.mark.parametrize("optimizer", sorted(passes_pipeline.OPTIMIZERS))
def test_one_training_step_agrees_lifted_and_not(fuzzer, optimizer):
    # w frozen: wt is lifted from it alone and frozen too; b is trained and passes through
    label, reached = run(fuzzer, [train(optimizer)], MLP.replace('frozen="b"', 'frozen="w"'))
    assert label == "ok"
    for stage in ("trained", "trainer compared", "trained lifted", "trained weight compared"):
        assert stage in reached, stage
    assert reached.count("trainer compared") == 2  # on main and on main as lifted


def test_training_after_passes_and_on_a_lifted_module(fuzzer):
    label, reached = run(fuzzer, [{"pass": "LiftTransformParams"}, train(),
                                  {"pass": "Sequential", "passes": [{"pass": "EliminateCommonSubexpr"}, train()]}])
    assert label == "ok" and reached.count("trained") == 2


def test_training_a_function_without_weights_is_a_label(fuzzer):
    label, reached = run(fuzzer, [train(), {"pass": "DeadCodeElimination"}],
                         MLP.replace('(num_input=1, frozen="b")', ""))
    assert label == "ok" and "train skipped" in reached
    label, reached = run(fuzzer, [train(func_name="nothing")])
    assert label == "aj.FunctionNotFoundError" and "pass refused" in reached


def test_a_lifted_function_training_to_another_loss_is_a_finding(fuzzer, monkeypatch):
    def double_the_weights(mod):
        return aj.parse(mod.script().replace("wt: Tensor((4, 5), \"float32\") = permute_dims(w)",
                                             "w2: Tensor((5, 4), \"float32\") = add(w, w)\n"
                                             "    wt: Tensor((4, 5), \"float32\") = permute_dims(w2)"))

    finding = planted_finding(fuzzer, monkeypatch, [train()], aj.transform.LiftTransformParams, double_the_weights)
    assert finding.kind == "wrong-result" and "the loss of the lifted function" in finding.detail


def test_a_frozen_weight_changed_by_a_step_is_a_finding(fuzzer, monkeypatch):
    from adjoint import training as T

    params = T.Trainer.params

    def nudged(self):
        return {n: (v + 1 if n in self.layout.frozen else v) for n, v in params.fget(self).items()}

    monkeypatch.setattr(T.Trainer, "params", property(nudged))
    with pytest.raises(Finding) as info:
        run(fuzzer, [train()])
    assert info.value.kind == "train-frozen" and "'b'" in info.value.detail


def test_a_trained_weight_updated_otherwise_when_lifted_is_a_finding(fuzzer, monkeypatch):
    step = passes_train.TrainCheck._step

    def lifted_moves_b_further(self, mod, inputs, label, given, where):
        loss, new, layout = step(self, mod, inputs, label, given, where)
        if "main_transform_params" in mod:  # main as lifted: b moves twice as far
            new["b"] = 2 * new["b"] - given["b"]
        return loss, new, layout

    monkeypatch.setattr(passes_train.TrainCheck, "_step", lifted_moves_b_further)
    with pytest.raises(Finding) as info:
        run(fuzzer, [train()], MLP.replace('frozen="b"', 'frozen="w"'))
    assert info.value.kind == "wrong-result" and "as updated through the lifted function" in info.value.detail


def test_a_trainer_updating_otherwise_than_its_step_is_a_finding(fuzzer, monkeypatch):
    from adjoint import training as T

    step = T.Trainer.step

    def twice_the_lr(self, *args, **kwargs):
        return step(self, *args, lr=2 * self.lr)

    monkeypatch.setattr(T.Trainer, "step", twice_the_lr)
    with pytest.raises(Finding) as info:
        run(fuzzer, [train()], MLP.replace('frozen="b"', 'frozen="w"'))
    assert info.value.kind == "wrong-result" and "as the Trainer updates it, against its step" in info.value.detail


@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_weights_of_symbolic_dims_train_by_step_and_trainer(fuzzer, optimizer):
    # the LoRA text's a: (6, "r"), b: ("r", 5): the given arrays bind r for the step's state and the Trainer
    lora = next(t for t in passes_corpus.PASS_TEXTS if '"r"' in t)
    label, reached = run(fuzzer, [train(optimizer)], lora)
    assert label == "ok" and "trained" in reached and "trained lifted" in reached
    assert reached.count("trainer compared") == 2  # the function and the function lifted


def test_a_trainer_refusing_what_its_step_took_is_a_finding(fuzzer, monkeypatch):
    from adjoint import training as T

    def refuse(*args, **kwargs):
        raise aj.Error("no")

    monkeypatch.setattr(T, "Trainer", refuse)
    with pytest.raises(Finding) as info:
        run(fuzzer, [train()])
    assert info.value.kind == "train-refused"


def test_a_step_freezing_other_weights_than_the_attr_is_a_finding(fuzzer, monkeypatch):
    from adjoint import training as T

    with_layout = T.SetupTrainer.with_layout

    def nothing_frozen(self, mod):
        self.frozen = ()
        return with_layout(self, mod)

    monkeypatch.setattr(T.SetupTrainer, "with_layout", nothing_frozen)
    with pytest.raises(Finding) as info:
        run(fuzzer, [train()])
    assert info.value.kind == "train-layout"


def test_a_saved_pipeline_with_rules_and_training_runs(fuzzer, tmp_path):
    inp = {"base": 0, "mutations": [], "text": MLP,
           "passes": [{"pass": "Rewriter", "rules": ["add_self", "fold_permutes"]}, train("momentum")]}
    files = fuzzer.save(inp, str(tmp_path / "f"), "adjoint fuzz finding: wrong-result\ntarget passes\n")
    ran = subprocess.run([sys.executable, files[1]], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout.startswith("@function"), ran.stderr


def test_inputs_use_every_text_rule_and_train_with_weights(fuzzer):
    inputs = [fuzzer.make(k) for k in range(600)]
    leaves = [leaf for inp in inputs for spec in inp["passes"] for leaf in passes_pipeline.leaf_specs(spec)]
    assert {r for leaf in leaves if leaf["pass"] == "Rewriter" for r in leaf["rules"]} == set(passes_pipeline.RULES)
    assert {leaf["optimizer"] for leaf in leaves if leaf["pass"] == "Train"} == set(passes_pipeline.OPTIMIZERS)
    assert any(leaf["pass"] == "Train" for spec in (s for inp in inputs for s in inp["passes"])
               if spec["pass"] == "Sequential" for leaf in spec["passes"])
