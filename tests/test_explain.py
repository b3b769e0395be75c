"""pass_.explain(mod): the output is pass_(mod) and the counts say what the
C++ passes did. Golden reports for the 2-layer MLP's adjoint (raw Gradient,
then SimplifyGradient) and for each pass on its own kind of input; HTML
that parses; and a property over random programs: the module equals the
pass's output, and the counts are zero exactly when the pass changed
nothing."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, note

import adjoint as aj
from adjoint import pattern as P
from programs import programs
from test_combine_parallel_matmul import linear_branches
from test_pattern_rewriter import REWRITERS
from test_reassociate_matmul import function, lora

T = aj.transform
op = aj.op


def torch_layout_mlp() -> aj.Module:
    """sum(relu(x @ w1.T + b1) @ w2.T + b2): weights as torch.nn.Linear holds them."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (64, 128), "float32")
    w1, b1 = bb.param("w1", (256, 128), "float32"), bb.param("b1", (256,), "float32")
    w2, b2 = bb.param("w2", (10, 256), "float32"), bb.param("b2", (10,), "float32")
    h = op.relu(x @ op.permute_dims(w1) + b1)
    return bb.finish(op.sum(h @ op.permute_dims(w2) + b2))


MLP = torch_layout_mlp()
RAW = T.Gradient(simplify=False)(MLP)


def explained(pass_: T.Pass, mod: aj.Module) -> str:
    """The report's text, once its module is checked to be pass_(mod)."""
    report = pass_.explain(mod)
    aj.assert_structural_equal(report.module, pass_(mod))
    return str(report)


def test_mlp_raw_adjoint_then_simplify_gradient_golden():
    assert explained(T.Gradient(simplify=False), MLP) == "Gradient: adjoint bindings x25"
    report = T.SimplifyGradient().explain(RAW)
    assert str(report) == (
        "SimplifyGradient: fold_permutes x3, matmul_of_broadcast_scalar_lhs x1, matmul_of_broadcast_scalar_rhs x1, "
        "transpose_of_broadcast x1, transpose_of_matmul x1, bindings removed x5")
    assert report.counts == {"SimplifyGradient": {
        "fold_permutes": 3, "matmul_of_broadcast_scalar_lhs": 1, "matmul_of_broadcast_scalar_rhs": 1,
        "transpose_of_broadcast": 1, "transpose_of_matmul": 1, "bindings removed": 5}}
    names = {name for name, _ in T.SimplifyGradient.rules}
    assert set(report.counts["SimplifyGradient"]) - {"bindings removed"} <= names
    assert report.changed


def test_gradient_reports_each_stage():
    assert explained(T.Gradient(), MLP).splitlines() == [
        "Gradient: adjoint bindings x25",
        "SimplifyGradient: fold_permutes x3, matmul_of_broadcast_scalar_lhs x1, matmul_of_broadcast_scalar_rhs x1, "
        "transpose_of_broadcast x1, transpose_of_matmul x1",
        "EliminateCommonSubexpr: no changes",
        "DeadCodeElimination: bindings removed x5",
    ]


def test_gradient_counts_values_it_binds_once():
    # d(sum(exp(x*x)))/dx: the two products exp(x*x) * x of the adjoint are one value
    mod = aj.parse('''@function
def main(x: Tensor((3,), "float64")) -> Tensor((), "float64"):
    y: Tensor((3,), "float64") = multiply(x, x)
    e: Tensor((3,), "float64") = exp(y)
    s: Tensor((), "float64") = sum(e)
    return s
''')
    report = T.Gradient().explain(mod)
    assert report.counts["SimplifyGradient"] == {"binary_of_broadcast_lhs": 1, "multiply_by_ones_lhs": 1}
    assert report.counts["EliminateCommonSubexpr"] == {"bindings merged": 1}


def test_gradient_reports_merged_bindings_on_an_eliminate_common_subexpr_line():
    # the two halves of sum(tanh(x*w)) + sum(tanh(x*w)) and their adjoints are one value each; the second
    # half's broadcast ones are merged with the first's as they are bound, so each rule fires once
    bb = aj.FunctionBuilder("main")
    x, w = bb.param("x", (3,), "float32"), bb.param("w", (3,), "float32")
    mod = bb.finish(op.sum(op.tanh(x * w)) + op.sum(op.tanh(x * w)))
    assert explained(T.Gradient(), mod).splitlines() == [
        "Gradient: adjoint bindings x22",
        "SimplifyGradient: binary_of_broadcast_lhs x1, multiply_by_ones_lhs x1",
        "EliminateCommonSubexpr: bindings merged x8",
        "DeadCodeElimination: bindings removed x2",
    ]


def test_sequential_reports_each_pass_and_numbers_repeats():
    seq = T.Sequential([T.Gradient(simplify=False), T.Sequential([T.SimplifyGradient(), T.DeadCodeElimination()]),
                        T.EliminateCommonSubexpr(), T.DeadCodeElimination()])
    report = seq.explain(MLP)
    aj.assert_structural_equal(report.module, seq(MLP))
    assert list(report.counts) == ["Gradient", "SimplifyGradient", "DeadCodeElimination", "EliminateCommonSubexpr",
                                   "DeadCodeElimination #2"]
    assert report.lines()[2:] == ["DeadCodeElimination: no changes", "EliminateCommonSubexpr: no changes",
                                  "DeadCodeElimination: no changes"]


TWICE = '''@function
def main(x: Tensor((2, 2), "float64")) -> Tensor((2, 2), "float64"):
    a: Tensor((2, 2), "float64") = exp(x)
    b: Tensor((2, 2), "float64") = exp(x)
    dead: Tensor((2, 2), "float64") = log(x)
    c: Tensor((2, 2), "float64") = add(a, b)
    return c
'''


def test_cse_and_dce_golden():
    mod = aj.parse(TWICE)
    assert explained(T.EliminateCommonSubexpr(), mod) == "EliminateCommonSubexpr: bindings merged x1"
    assert explained(T.DeadCodeElimination(), mod) == "DeadCodeElimination: bindings removed x1"


TRANSPOSED_WEIGHT = '''@function(num_input=1)
def main(x: Tensor((2, 3), "float64"), w: Tensor((4, 3), "float64")) -> Tensor((2, 4), "float64"):
    wt: Tensor((3, 4), "float64") = permute_dims(w)
    y: Tensor((2, 4), "float64") = matmul(x, wt)
    return y
'''


def test_lift_transform_params_golden():
    mod = aj.parse('''@function(num_input=1)
def main(x: Tensor((2, 3), "float64"), w: Tensor((4, 3), "float64"), v: Tensor((2, 3), "float64")) -> Tensor((2, 3), "float64"):
    wt: Tensor((3, 4), "float64") = permute_dims(w)
    y: Tensor((2, 4), "float64") = matmul(x, wt)
    z: Tensor((2, 3), "float64") = add(x, v)
    return z
''')
    assert explained(T.LiftTransformParams(), mod) == \
        "LiftTransformParams: functions split x1, weights passed through x1"
    mod = aj.parse(TRANSPOSED_WEIGHT)
    assert explained(T.LiftTransformParams(), mod) == "LiftTransformParams: functions split x1, bindings lifted x1"


def test_combine_parallel_matmul_golden():
    mod = linear_branches([3, 5, 2], bias="own", act="relu")
    assert explained(T.CombineParallelMatmul(), mod) == \
        "CombineParallelMatmul: shared_lhs x1, bias x1, activation x1, branches combined x3"
    assert explained(T.CombineParallelMatmul(check=lambda lhs, rhs: False), mod) == "CombineParallelMatmul: no changes"


def test_reassociate_matmul_golden():
    chain = function({"x": (512, 512), "u": (512, 8), "v": (8, 512), "w": (512, 4)},
                     [("a", (512, 8), "matmul(x, u)"), ("b", (512, 512), "matmul(a, v)"),
                      ("c", (512, 4), "matmul(b, w)")])
    assert explained(T.ReassociateMatmul(), chain) == "ReassociateMatmul: matmul_chain x1, bindings removed x2"
    assert explained(T.ReassociateMatmul(), lora("factored", 4096, 4096, 16)) == \
        "ReassociateMatmul: low_rank_update x1, bindings removed x2"
    assert explained(T.ReassociateMatmul(), lora("expanded", 4096, 4096, 16)) == "ReassociateMatmul: no changes"


def test_convert_dtype_golden():
    mod = aj.parse('''@function
def main(x: Tensor((2,), "float32"), n: Tensor((2,), "int32")) -> Tensor((2,), "float32"):
    y: Tensor((2,), "float32") = multiply(x, const(2.0, "float32"))
    f: Tensor((2,), "float32") = astype(n, "float32")
    z: Tensor((2,), "float32") = add(y, f)
    return z
''')
    assert explained(T.ConvertDType(), mod) == \
        "ConvertDType: params converted x1, constants converted x1, bindings retyped x3, dtype attrs converted x1"
    assert explained(T.ConvertDType("float32", from_dtype="float64"), mod) == "ConvertDType: no changes"


def test_reorder_permute_dims_after_concat_golden():
    mod = aj.parse('''@function
def main(a: Tensor((2, 3), "float64"), b: Tensor((2, 3), "float64")) -> Tensor((6, 2), "float64"):
    ta: Tensor((3, 2), "float64") = permute_dims(a)
    tb: Tensor((3, 2), "float64") = permute_dims(b)
    t: Tuple(Tensor((3, 2), "float64"), Tensor((3, 2), "float64")) = (ta, tb)
    c: Tensor((6, 2), "float64") = concat(t, axis=0)
    return c
''')
    (rule, _), = T.ReorderPermuteDimsAfterConcat.rules
    assert explained(T.ReorderPermuteDimsAfterConcat(), mod) == \
        f"ReorderPermuteDimsAfterConcat: {rule} x1, bindings removed x3"


def test_rewriters_report_their_rules_by_name():
    combined = REWRITERS["exp_of_log"] | REWRITERS["add_self"]
    mod = aj.parse('''@function
def main(x: Tensor((3, 3), "float32")) -> Tensor((3, 3), "float32"):
    a: Tensor((3, 3), "float32") = log(x)
    b: Tensor((3, 3), "float32") = exp(a)
    c: Tensor((3, 3), "float32") = add(b, b)
    d: Tensor((3, 3), "float32") = add(c, c)
    return d
''')
    assert explained(combined, mod) == "Rewriter: exp_of_log x1, add_self x2, bindings removed x1"
    python_rule = P.Rewriter.from_pattern(P.is_op("exp")(P.wildcard()), lambda e, c: aj.op.sqrt(e.args[0]),
                                          name="exp_to_sqrt")
    assert explained(python_rule, mod) == "Rewriter: exp_to_sqrt x1"
    assert explained(P.Rewriter(), mod) == "Rewriter: no changes"


def test_html_is_a_table_that_parses():
    report = T.Sequential([T.Gradient(simplify=False), T.SimplifyGradient(), T.EliminateCommonSubexpr()]).explain(MLP)
    table = ET.fromstring(report._repr_html_())
    cells = ["".join(c.itertext()) for c in table.iter() if c.tag in ("th", "td")]
    for name, counts in report.sections:
        assert name in cells
        for what, n in counts.items():
            assert what in cells and str(n) in cells
    assert "no changes" in cells


def test_explain_of_a_non_module_is_an_error_naming_it():
    with pytest.raises(aj.TransformError, match="SimplifyGradient expects an aj.Module, got str"):
        T.SimplifyGradient().explain("main")


def test_counting_is_off_outside_explain():
    # a report holds only its own pass's counts, and the passes run alone after it count nothing anywhere
    first = T.DeadCodeElimination().explain(aj.parse(TWICE))
    T.EliminateCommonSubexpr()(aj.parse(TWICE))
    second = T.DeadCodeElimination().explain(aj.parse(TWICE))
    assert first.sections == second.sections == [("DeadCodeElimination", {"bindings removed": 1})]


PASSES = [T.Gradient(), T.Gradient(simplify=False), T.SimplifyGradient(), T.DeadCodeElimination(),
          T.EliminateCommonSubexpr(), T.ReorderPermuteDimsAfterConcat(), T.CombineParallelMatmul(),
          T.ReassociateMatmul(), T.LiftTransformParams(), T.ConvertDType("float32", from_dtype="float64"),
          REWRITERS["transpose_of_transpose"] | REWRITERS["multiply_by_one"]]


@given(programs())
def test_explain_gives_the_pass_output_and_counts_exactly_its_changes(prog):
    for pass_ in PASSES:
        note(f"pass: {pass_!r}")
        report = pass_.explain(prog.mod)
        out = pass_(prog.mod)
        aj.assert_structural_equal(report.module, out)
        assert report.changed == (not aj.structural_equal(out, prog.mod)), str(report)
