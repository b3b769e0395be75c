"""aj.analysis.computable_at_compile_time: the weights, then the bindings that
depend only on weights and constants, in binding order; constant-only values
without num_input; bad num_input; and (Hypothesis) that the set is closed
under the uses of its bindings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import adjoint as aj
from programs import programs

F64 = "float64"


def names(vars_) -> list[str]:
    return [v.name_hint for v in vars_]


def mixed(num_input=1) -> aj.Function:
    """x an input, w and v weights; values from weights, constants, both."""
    bb = aj.FunctionBuilder("main", num_input=num_input)
    x, w, v = bb.param("x", (3, 3), F64), bb.param("w", (3, 3), F64), bb.param("v", (3, 3), F64)
    wt = aj.op.permute_dims(w, name="wt")
    zero = aj.op.zeros((3, 3), F64, name="zero")
    shifted = aj.op.add(zero, np.ones((3, 3)), name="shifted")
    both = aj.op.add(wt, shifted, name="both")
    xw = aj.op.matmul(x, both, name="xw")
    out = aj.op.add(xw, v, name="out")
    return bb.finish(out)["main"]


def test_weights_then_weight_and_constant_values_in_binding_order():
    assert names(aj.analysis.computable_at_compile_time(mixed())) == ["w", "v", "wt", "zero", "shifted", "both"]


def test_without_num_input_only_constant_only_values():
    f = mixed(num_input=None)
    assert names(aj.analysis.computable_at_compile_time(f)) == ["zero", "shifted"]


def test_num_input_bounds():
    assert names(aj.analysis.computable_at_compile_time(mixed(num_input=3))) == ["zero", "shifted"]
    assert names(aj.analysis.computable_at_compile_time(mixed(num_input=0))) == [
        "x", "w", "v", "wt", "zero", "shifted", "both", "xw", "out"]


def test_returns_the_function_s_own_vars():
    f = mixed()
    params = f.params
    assert aj.analysis.computable_at_compile_time(f)[0] is params[1]


@pytest.mark.parametrize("num_input, message", [
    (4, r"num_input: 4 is outside \[0, 3\], the param count"),
    (-1, r"num_input: -1 is outside \[0, 3\], the param count"),
    ("1", "num_input: must be an int"),
])
def test_bad_num_input_is_a_verify_error(num_input, message):
    f = mixed().with_attr("num_input", num_input)
    with pytest.raises(aj.VerifyError, match=message):
        aj.analysis.computable_at_compile_time(f)
    with pytest.raises(aj.VerifyError, match=message):
        aj.analysis.verify(aj.Module({"main": f}))


def test_bad_arguments_are_errors():
    with pytest.raises(aj.Error, match="computable_at_compile_time: expected an aj.Function, got None"):
        aj.analysis.computable_at_compile_time(None)


@given(programs())
def test_the_compile_time_set_is_closed(program):
    f = program.mod["main"]
    params, bindings = f.params, f.bindings  # held: a var keeps its Python object, so `is` and id() compare vars
    computable = aj.analysis.computable_at_compile_time(f)
    ids = {id(v) for v in computable}
    num_input = f.attrs.get("num_input", len(params))
    weights = len(params) - num_input
    assert [id(v) for v in computable[:weights]] == [id(p) for p in params[num_input:]]
    assert [id(v) for v in computable[weights:]] == [id(b.var) for b in bindings if id(b.var) in ids]
    for b in bindings:
        if id(b.var) in ids:
            assert all(id(u) in ids for u in uses(b.value)), b.var.name_hint
        elif b.value is not None:
            used = uses(b.value)
            assert used and not all(id(u) in ids for u in used), b.var.name_hint


def uses(e: aj.Expr) -> list[aj.Var]:
    """The vars an expr uses, through tuples and calls."""
    if isinstance(e, aj.Var):
        return [e]
    if isinstance(e, aj.Call):
        return [u for a in e.args for u in uses(a)]
    if isinstance(e, aj.Tuple):
        return [u for a in e.fields for u in uses(a)]
    if isinstance(e, aj.TupleGetItem):
        return uses(e.tuple)
    return []
