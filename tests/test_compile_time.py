"""aj.analysis.computable_at_compile_time: the weights, then the bindings that
depend only on weights and constants and whose shapes the weights fix, in
binding order; constant-only values without num_input; bad num_input; and
(Hypothesis) that the set is exactly the bindings whose uses (for an item of
a tuple literal, its field's) are in it and whose symbols the weights bind."""

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


def test_a_shape_from_the_inputs_is_not_known_at_compile_time():
    bb = aj.FunctionBuilder("main", num_input=1)
    x, w = bb.param("x", ("n", 2), F64), bb.param("w", ("m", 2), F64)
    by_n = aj.op.zeros(("n", 2), F64, name="by_n")
    by_m = aj.op.zeros(("m", 2), F64, name="by_m")
    static = aj.op.zeros((2,), F64, name="static")
    wsum = aj.op.sum(w, axis=0, name="wsum")
    w_n = aj.op.add(by_n, wsum, name="w_n")
    mixed = aj.op.add(x, w_n, name="mixed")
    m_sum = aj.op.sum(by_m, name="m_sum")
    f = bb.finish((mixed, m_sum, static))["main"]
    # by_n and w_n have n rows, a dim of the input x
    assert names(aj.analysis.computable_at_compile_time(f)) == ["w", "by_m", "static", "wsum", "m_sum"]


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
    weight_symbols = {d for p in params[num_input:] for d in p.type.shape if isinstance(d, str) and d.isidentifier()}
    assert [id(v) for v in computable[:weights]] == [id(p) for p in params[num_input:]]
    assert [id(v) for v in computable[weights:]] == [id(b.var) for b in bindings if id(b.var) in ids]
    held = [b.var for b in bindings]  # alive, so an item's tuple var is the same object
    values = {id(v): b.value for v, b in zip(held, bindings)}
    for b in bindings:
        if id(b.var) in ids:
            assert all(id(u) in ids for u in uses(b.value, values)), b.var.name_hint
            assert symbols(b.var.type) <= weight_symbols, b.var.name_hint
        else:
            fixed = symbols(b.var.type) <= weight_symbols
            assert not fixed or not all(id(u) in ids for u in uses(b.value, values)), b.var.name_hint


def symbols(t: aj.Type) -> set[str]:
    if t.is_tuple:
        return set().union(*map(symbols, t.fields))
    return {s for d in t.shape if isinstance(d, str) for s in aj.Dim(d).symbols}


def uses(e: aj.Expr, values: dict) -> list[aj.Var]:
    """The vars an expr uses, through tuples and calls; an item of a tuple
    literal (written inline, or bound to a var: `values` maps id(var) to its
    value) uses what the field it reads uses."""
    if isinstance(e, aj.Var):
        return [e]
    if isinstance(e, aj.Call):
        return [u for a in e.args for u in uses(a, values)]
    if isinstance(e, aj.Tuple):
        return [u for a in e.fields for u in uses(a, values)]
    if isinstance(e, aj.TupleGetItem):
        read = field(e, values)
        return uses(e.tuple if read is None else read, values)
    return []


def field(item: aj.TupleGetItem, values: dict) -> aj.Expr | None:
    """The field of the tuple literal an item reads, seen through vars bound
    to tuples, to items and to other vars; None when the tuple is another value."""
    e = item.tuple
    while not isinstance(e, aj.Tuple):
        if isinstance(e, aj.TupleGetItem):
            e = field(e, values)
        elif isinstance(e, aj.Var) and id(e) in values:
            e = values[id(e)]
        else:
            return None
        if e is None:
            return None
    return e.fields[item.index]
