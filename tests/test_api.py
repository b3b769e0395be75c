"""The public API contract of DESIGN.md §4-5: every name exists, every op of
§4 is registered with its facets, and the checked-in op stub matches the
registry."""

import inspect
from pathlib import Path

import adjoint as aj
from adjoint import _stubgen

DESIGN_OPS = """
add subtract multiply divide power maximum minimum equal less greater
negative exp log sqrt rsqrt sin cos tanh sigmoid relu gelu silu abs square astype
matmul
permute_dims reshape broadcast_to collapse_sum_to expand_dims squeeze concat split take where cumsum triu
sum mean max min variance
zeros ones full zeros_like ones_like full_like
softmax log_softmax layer_norm cross_entropy_with_logits nll_loss conv2d max_pool2d avg_pool2d
""".split()


def test_every_design_op_is_registered_with_type_rule_and_flops():
    names = set(aj._core.op_names())
    assert set(DESIGN_OPS) <= names
    for n in DESIGN_OPS:
        schema = aj._core.op_schema(n)
        assert schema["family"] in {"binary", "unary", "linalg", "manipulate", "reduce", "create", "nn"}
        assert callable(getattr(aj.op, n))


def test_no_gradient_ops_are_marked():
    for n in ["equal", "less", "greater", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like"]:
        assert aj._core.op_schema(n)["differentiable"] is False


def test_op_functions_carry_the_schema_signature():
    sig = inspect.signature(aj.op.sum)
    assert list(sig.parameters) == ["x", "axis", "keepdims", "name"]
    assert sig.parameters["axis"].default is None and sig.parameters["keepdims"].default is False
    assert "reshape(x, shape" in aj.op.reshape.__doc__


def test_design_section5_names_exist():
    for name in ["parse", "Module", "Function", "structural_equal", "assert_structural_equal", "structural_hash",
                 "FunctionBuilder", "build", "Error", "ParseError", "TypeInferenceError", "VerifyError",
                 "ExecutionError"]:
        assert hasattr(aj, name), name
    assert hasattr(aj.analysis, "well_formed") and hasattr(aj.analysis, "verify")
    for cls in [aj.ParseError, aj.TypeInferenceError, aj.VerifyError, aj.ExecutionError]:
        assert issubclass(cls, aj.Error)


def test_op_stub_is_in_sync_with_the_registry():
    stub = Path(aj.__file__).with_name("op.pyi")
    assert stub.exists(), "python/adjoint/op.pyi is missing: python -m adjoint._stubgen > python/adjoint/op.pyi"
    assert stub.read_text() == _stubgen.generate(), "regenerate: python -m adjoint._stubgen > python/adjoint/op.pyi"


def test_package_is_typed():
    assert Path(aj.__file__).with_name("py.typed").exists()
    assert Path(aj.__file__).with_name("_core.pyi").exists()
