"""The entries of a ``passes`` fuzz pipeline: which passes it draws and how
often (``PASSES``), their options by name (the text rules ``RULES``, the
Train check's ``OPTIMIZERS``, CombineParallelMatmul's ``CHECKS``), what
each promises (its own fixed point, exact or rounding otherwise), and how
an entry, plain data in an input, becomes the Python code of its pass
(``pass_code``, also written into reproducers) and the pass
(``make_pass``). Apart from the target so that what a pipeline may hold
reads in one place.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import adjoint as aj
from adjoint import pattern as P
from adjoint import training as T
from adjoint.fuzz.passes_train import TrainCheck

#: pass name -> weight in a pipeline ("Rewriter": P.Rewriter.from_text rules; "Train": passes_train's TrainCheck)
PASSES = {"DeadCodeElimination": 8, "EliminateCommonSubexpr": 8, "SimplifyGradient": 8, "Gradient": 14,
          "CombineParallelMatmul": 12, "ReorderPermuteDimsAfterConcat": 8, "LiftTransformParams": 12,
          "ReassociateMatmul": 12, "ConvertDType": 8, "Rewriter": 10, "Train": 6, "Sequential": 4}
#: passes documented as their own fixed point: run twice, they give what once gave (a Rewriter whose
#: rules stop too: one walk reaches its fixed point)
FIXED_POINT = {"DeadCodeElimination", "EliminateCommonSubexpr", "SimplifyGradient", "ConvertDType",
               "LiftTransformParams", "Rewriter"}
#: passes after which results may round otherwise (sums reassociated, matmuls combined, dtypes changed)
ROUNDING = {"SimplifyGradient", "CombineParallelMatmul", "ReassociateMatmul", "ConvertDType", "Rewriter"}


def _rule(params: str, pattern: str, replacement: str) -> str:
    """A text rule: pattern and replacement functions of one signature (the types are not read)."""
    return (f"@function\ndef pattern({params}):\n{pattern}\n\n"
            f"@function\ndef replacement({params}):\n{replacement}\n")


_M = 'Tensor((2, 2), "float32")'
#: text rules (P.Rewriter.from_text), each sound wherever its ops type-check with the matched call's type:
#: SimplifyGradient's in text (transposes as axes=[1, 0], which only a rank-2 tensor takes, so that a rank-3
#: match whose dims happen to agree cannot fire), identities, and replacements taking items of a split
RULES = {
    "fold_permutes": _rule(f"x: {_M}", "    return permute_dims(permute_dims(x))", "    return x"),
    "fold_transposes": _rule(f"x: {_M}", "    t = permute_dims(x, axes=[1, 0])\n    return permute_dims(t, axes=[1, 0])",
                             "    return x"),
    "transpose_of_matmul": _rule(f"a: {_M}, b: {_M}", "    return permute_dims(matmul(a, b), axes=[1, 0])",
                                 "    bt = permute_dims(b, axes=[1, 0])\n    at = permute_dims(a, axes=[1, 0])\n"
                                 "    return matmul(bt, at)"),
    "matmul_of_transposes": _rule(f"a: {_M}, b: {_M}",
                                  "    bt = permute_dims(b, axes=[1, 0])\n    at = permute_dims(a, axes=[1, 0])\n"
                                  "    return matmul(bt, at)", "    return permute_dims(matmul(a, b), axes=[1, 0])"),
    "drop_astype_float32": _rule(f"x: {_M}", '    return astype(x, "float32")', "    return x"),
    "drop_astype_float64": _rule(f"x: {_M}", '    return astype(x, "float64")', "    return x"),
    "double_negative": _rule(f"x: {_M}", "    return negative(negative(x))", "    return x"),
    "relu_relu": _rule(f"x: {_M}", "    return relu(relu(x))", "    return relu(x)"),
    "add_self": _rule(f"x: {_M}", "    return add(x, x)", '    return multiply(x, const(2.0, "float32"))'),
    "sum_of_permute": _rule(f"x: {_M}", "    return sum(permute_dims(x))", "    return sum(x)"),
    "sum_of_halves": _rule(f"x: {_M}", "    return sum(x)",
                           "    s = split(x, 2, axis=0)\n    h = add(s[0], s[1])\n    return sum(h)"),
    "concat_of_split": _rule(f"x: {_M}", "    s = split(x, 2, axis=0)\n    a = s[0]\n    b = s[1]\n"
                             "    return concat((a, b), axis=0)", "    return x"),
    "multiply_commutes": _rule(f"a: {_M}, b: {_M}", "    return multiply(a, b)", "    return multiply(b, a)"),
}
#: rules that never stop (alone, or with the other): the rewriter refuses them with an aj.TransformError
LOOPING = {("multiply_commutes",), ("transpose_of_matmul", "matmul_of_transposes")}
#: rules exact in floats (the others round otherwise)
EXACT_RULES = {"fold_permutes", "fold_transposes", "drop_astype_float32", "drop_astype_float64", "double_negative",
               "relu_relu", "add_self", "concat_of_split"}
#: optimizers of the Train check, by name: updates elementwise per weight, linear in the gradient (no Adam,
#: whose first step is lr * sign(grad) and so turns a rounding of a zero gradient into a whole step)
OPTIMIZERS = {"sgd": "T.SGD(lr=0.1)", "momentum": "T.SGD(lr=0.1, momentum=0.9)",
              "decay": "T.SGD(lr=0.05, weight_decay=0.01)"}
#: CombineParallelMatmul's check, by name
CHECKS = {"none": None, "yes": "lambda lhs, rhs: True", "no": "lambda lhs, rhs: False",
          "numpy": "lambda lhs, rhs: np.bool_(True)", "lhs only": "lambda lhs, rhs: isinstance(rhs, list)",
          "pairs": "lambda lhs, rhs: len(rhs if isinstance(rhs, list) else lhs) == 2"}


def pass_code(spec: dict) -> str:
    """The Python expression making the pass of a pipeline entry (``aj`` and ``np`` in scope)."""
    name = spec["pass"]
    if name == "Sequential":
        return f"aj.transform.Sequential([{', '.join(pass_code(s) for s in spec['passes'])}])"
    if name == "Gradient":
        return (f"aj.transform.Gradient(func_name={spec['func_name']!r}, require_grads={spec['require_grads']!r}, "
                f"target_index={spec['target_index']}, simplify={spec['simplify']})")
    if name == "ReassociateMatmul":
        bounds = spec["dim_bounds"]
        return "aj.transform.ReassociateMatmul()" if bounds is None else \
            f"aj.transform.ReassociateMatmul(dim_bounds={ {k: tuple(v) for k, v in bounds.items()}!r})"
    if name == "ConvertDType":
        return f"aj.transform.ConvertDType({spec['dtype']!r}, from_dtype={spec['from_dtype']!r})"
    if name == "CombineParallelMatmul":
        check = CHECKS[spec["check"]]
        return "aj.transform.CombineParallelMatmul()" if check is None else \
            f"aj.transform.CombineParallelMatmul(check={check})"
    if name == "Rewriter":
        rules = [f"P.Rewriter.from_text({RULES[r]!r})" for r in spec["rules"]]
        return rules[0] if len(rules) == 1 else "(" + " | ".join(rules) + ")"
    if name == "Train":
        return (f"TrainCheck({spec['func_name']!r}, {OPTIMIZERS[spec['optimizer']]}, "
                f"seed={spec['seed']})")
    return f"aj.transform.{name}()"


def make_pass(spec: dict, reach: Callable[[str], None] | None = None) -> Any:
    """The pass of a pipeline entry (a TrainCheck reports its stages to ``reach``)."""
    def train_check(*args: Any, **kwargs: Any) -> TrainCheck:
        return TrainCheck(*args, **kwargs, reach=reach)

    return eval(pass_code(spec), {"aj": aj, "np": np, "P": P, "T": T,  # noqa: S307 (our own generated code)
                                  "TrainCheck": train_check})


def fixed_point(spec: dict) -> bool:
    """Whether an entry's pass is its own fixed point (a Rewriter of rules that stop)."""
    if spec["pass"] == "Rewriter":
        return not any(set(loop) <= set(spec["rules"]) for loop in LOOPING)
    return spec["pass"] in FIXED_POINT


def rounds(spec: dict) -> bool:
    """Whether an entry's passes may round results otherwise."""
    return any(leaf["pass"] in ROUNDING and not (leaf["pass"] == "Rewriter" and set(leaf["rules"]) <= EXACT_RULES)
               for leaf in leaf_specs(spec))


def leaf_specs(spec: dict) -> list[dict]:
    """The entries an entry runs (a Sequential's, in order)."""
    return [leaf for s in spec["passes"] for leaf in leaf_specs(s)] if spec["pass"] == "Sequential" else [spec]


def pass_names(spec: dict) -> list[str]:
    """The passes an entry runs (a Sequential's, in order)."""
    return [n for s in spec["passes"] for n in pass_names(s)] if spec["pass"] == "Sequential" else [spec["pass"]]
