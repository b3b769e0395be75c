"""aj.analysis.estimate_flops and flops_by_op: the LoRA numbers of issue 13,
each op family's FLOP convention, ints for static shapes and canonical
polynomial text for symbolic ones, compile_time_free, dims substitution, counts
past int64 or past what a polynomial dim holds, bad arguments, and
(Hypothesis) that the total is the sum of the per-op counts."""

from __future__ import annotations

import pytest
from hypothesis import given

import adjoint as aj
from programs import programs

F64 = "float64"


def lora(num_input=None, factored=False) -> aj.Function:
    """x (n, 1), W (m, n), A (r, n), B (m, r): (W + B@A)@x, or W@x + B@(A@x)."""
    bb = aj.FunctionBuilder("main", num_input=num_input)
    x = bb.param("x", ("n", 1), F64)
    w, a, b = bb.param("W", ("m", "n"), F64), bb.param("A", ("r", "n"), F64), bb.param("B", ("m", "r"), F64)
    return bb.finish(w @ x + b @ (a @ x) if factored else (w + b @ a) @ x)["main"]


def one_call(build, *shapes, dtype=F64) -> aj.Function:
    """A function of params with the given shapes returning build(*params)."""
    bb = aj.FunctionBuilder("f")
    params = [bb.param(f"p{i}", s, dtype) for i, s in enumerate(shapes)]
    return bb.finish(build(*params))["f"]


def test_lora_merged_costs_m_n_times_2r_plus_3():
    flops = aj.analysis.estimate_flops(lora())
    assert flops == "2*m*n*r + 3*m*n"
    assert aj.Dim(flops) == aj.Dim("m*n*(2*r + 3)")


def test_lora_factored():
    assert aj.Dim(aj.analysis.estimate_flops(lora(factored=True))) == aj.Dim("2*m*n + 2*n*r + 2*m*r + m")


def test_lora_merged_with_weights_free_costs_the_last_matmul():
    assert aj.analysis.estimate_flops(lora(num_input=1), compile_time_free=True) == "2*m*n"
    # Without num_input every param is an input: nothing is free.
    assert aj.analysis.estimate_flops(lora(), compile_time_free=True) == "2*m*n*r + 3*m*n"
    assert aj.analysis.estimate_flops(lora(num_input=1, factored=True), compile_time_free=True) == \
        aj.analysis.estimate_flops(lora(factored=True))


@pytest.mark.parametrize("a, b, flops", [
    ((3, 4), (4, 5), 2 * 3 * 4 * 5),
    ((7, 3, 4), (4, 5), 2 * 7 * 3 * 4 * 5),          # batch on one side
    ((2, 7, 3, 4), (7, 4, 5), 2 * 2 * 7 * 3 * 4 * 5),  # broadcast batch
    ((4,), (4, 5), 2 * 4 * 5),                       # vector @ matrix
    ((3, 4), (4,), 2 * 3 * 4),
])
def test_matmul_is_2abc_batch_included(a, b, flops):
    assert aj.analysis.estimate_flops(one_call(aj.op.matmul, a, b)) == flops


@pytest.mark.parametrize("op", [aj.op.exp, aj.op.tanh, aj.op.relu, aj.op.negative, lambda x: aj.op.astype(x, "float32")])
def test_unary_is_one_per_output_element(op):
    assert aj.analysis.estimate_flops(one_call(op, (3, 5))) == 15


@pytest.mark.parametrize("op", [aj.op.add, aj.op.multiply, aj.op.maximum, aj.op.less])
def test_binary_is_one_per_output_element_after_broadcasting(op):
    assert aj.analysis.estimate_flops(one_call(op, (3, 1), (1, 5))) == 15


@pytest.mark.parametrize("op", [aj.op.sum, aj.op.mean, aj.op.max, aj.op.min, aj.op.variance])
def test_reductions_are_one_per_input_element(op):
    assert aj.analysis.estimate_flops(one_call(lambda x: op(x, axis=1), (3, 5))) == 15
    assert aj.analysis.estimate_flops(one_call(op, ("n", 5))) == "5*n"


@pytest.mark.parametrize("build", [
    lambda x: aj.op.permute_dims(x),
    lambda x: aj.op.reshape(x, (15,)),
    lambda x: aj.op.concat([x, x], axis=0),
    lambda x: aj.op.zeros((16,), "int32"),
])
def test_data_movement_and_creation_are_free(build):
    assert aj.analysis.estimate_flops(one_call(build, (3, 5))) == 0


def test_static_shapes_give_an_int_symbolic_ones_a_str():
    static = one_call(lambda a, b: aj.op.sum(a @ b), (3, 4), (4, 2))
    assert aj.analysis.estimate_flops(static) == 2 * 3 * 4 * 2 + 6
    assert type(aj.analysis.estimate_flops(static)) is int
    assert aj.analysis.estimate_flops(one_call(aj.op.exp, ("n", 2))) == "2*n"


def test_no_calls_cost_nothing():
    assert aj.analysis.estimate_flops(one_call(lambda x: x, ("n",))) == 0


def test_flops_by_op_lists_each_op_called_in_order():
    assert aj.analysis.flops_by_op(lora()) == {"matmul": "2*m*n*r + 2*m*n", "add": "m*n"}
    assert aj.analysis.flops_by_op(lora(num_input=1), compile_time_free=True) == {"matmul": "2*m*n", "add": 0}
    moved = one_call(lambda x: aj.op.exp(aj.op.permute_dims(x)), (3, 5))
    assert aj.analysis.flops_by_op(moved) == {"permute_dims": 0, "exp": 15}


def test_dims_substitutes_symbol_values():
    f = lora()
    assert aj.analysis.estimate_flops(f, dims={"m": 8, "n": 4096, "r": 16}) == 8 * 4096 * (2 * 16 + 3)
    assert aj.analysis.estimate_flops(f, dims={"n": 2}) == "4*m*r + 6*m"
    assert aj.analysis.estimate_flops(f, dims={"r": 0}) == "3*m*n"
    assert aj.analysis.flops_by_op(f, dims={"m": 1, "n": 1, "r": 1}) == {"matmul": 4, "add": 1}
    assert aj.analysis.estimate_flops(f, dims={}) == "2*m*n*r + 3*m*n"


def test_bad_dims_are_errors_naming_the_symbol():
    f = lora()
    with pytest.raises(aj.Error, match="symbol 'k', which the function's shapes do not use"):
        aj.analysis.estimate_flops(f, dims={"k": 3})
    with pytest.raises(aj.Error, match=r'dims\["n"\] is -1'):
        aj.analysis.estimate_flops(f, dims={"n": -1})
    with pytest.raises(aj.Error, match=r'dims\["n"\]: expected an int, got str'):
        aj.analysis.flops_by_op(f, dims={"n": "4"})
    with pytest.raises(aj.Error, match="dims must be a dict"):
        aj.analysis.estimate_flops(f, dims=[("n", 4)])
    with pytest.raises(aj.Error, match="a symbol of dims: expected a str"):
        aj.analysis.estimate_flops(f, dims={1: 4})


def test_dims_that_make_a_dim_negative_are_errors_naming_it():
    f = aj.parse('''
@function
def main(x: Tensor(("n - 1",), "float32"), y: Tensor(("n - 5",), "float32")) -> Tensor(("n - 1",), "float32"):
    a: Tensor(("n - 1",), "float32") = exp(x)
    d: Tensor((), "float32") = matmul(y, y)
    return a
''')["main"]
    assert aj.analysis.estimate_flops(f, dims={"n": 5}) == 4
    for call in (aj.analysis.estimate_flops, aj.analysis.flops_by_op):
        with pytest.raises(aj.Error, match=r"with the given dims, the dim n - 1 of 'x' is -1; a dim is never negative"):
            call(f, dims={"n": 0})



def test_dims_that_overflow_a_dim_are_errors_naming_it():
    # regression: it said "the FLOP count n**2 overflows int64", of a function with no call
    f = aj.parse("""
@function
def main(x: Tensor(("n*n", "m"), "float32")) -> Tensor(("n*n", "m"), "float32"):
    return x
""")["main"]
    for call in (aj.analysis.estimate_flops, aj.analysis.flops_by_op):
        with pytest.raises(aj.TypeInferenceError, match=r"^" + call.__name__ + r": with the given dims, the dim n\*\*2 "
                           rf"of 'x' overflows int64: it is {2**80}$"):
            call(f, dims={"n": 2**40})
    assert aj.analysis.estimate_flops(f, dims={"n": 2**31}) == 0

def test_terms_past_int64_that_cancel_count_what_they_sum_to():
    """exp over (m, k, m - k) counts k*m**2 - k**2*m: at m = 3e6, k = m - 1
    each term is past int64 but the count is 9e12; it was an overflow."""
    f = one_call(aj.op.exp, ("m", "k", "m - k"))
    m, k = 3_000_000, 2_999_999
    assert aj.analysis.estimate_flops(f, dims={"m": m, "k": k}) == m * k * (m - k) == 8_999_997_000_000
    assert aj.analysis.estimate_flops(f, dims={"m": m}) == "-3000000*k**2 + 9000000000000*k"
    with pytest.raises(aj.TypeInferenceError, match=r"the FLOP count k\*m\*\*2 - k\*\*2\*m overflows int64 with the "
                       rf"given dims at binding 0 'lv' \(exp\): it is {2**97}$"):
        aj.analysis.estimate_flops(f, dims={"m": 2**33, "k": 2**32})


def test_terms_past_128_bits_that_cancel_count_the_call_with_the_values_in_its_shapes():
    """(m - k)**3 expanded has terms of m**3 = 2**126 and more at rank 6:
    the count of an exp over ("m - k",) * 6 at m = 2**42, k = m - 1 is 1,
    and was an overflow error."""
    f = one_call(aj.op.exp, ("m - k",) * 6)
    assert aj.analysis.estimate_flops(f, dims={"m": 2**42, "k": 2**42 - 1}) == 1
    assert aj.analysis.flops_by_op(f, dims={"m": 4194304, "k": 4194303}) == {"exp": 1}
    with pytest.raises(aj.TypeInferenceError, match="overflows int64 with the given dims at binding 0 'lv' \\(exp\\)"):
        aj.analysis.estimate_flops(f, dims={"m": 2**42, "k": 2**41})


def test_a_zero_dim_makes_its_terms_zero_and_a_sum_of_minus_2_to_the_127_is_an_error():
    # regression: k**3*m**3*n at n = 0 overflowed before reaching the 0; a
    # sum of exactly -2**127 crashed the process printing it
    f = one_call(aj.op.exp, ("k**3*m**3*n",))
    assert aj.analysis.estimate_flops(f, dims={"k": 2**22, "m": 2**22, "n": 0}) == 0
    g = one_call(aj.op.exp, ("n - 2*k**3",))
    with pytest.raises(aj.TypeInferenceError, match=rf"the dim -2\*k\*\*3 \+ n of 'p0' overflows int64: it is {-2**127}$"):
        aj.analysis.estimate_flops(g, dims={"k": 2**42})


def test_overflowing_counts_are_errors():
    huge = one_call(aj.op.matmul, (2**21, 2**21), (2**21, 2**21))
    with pytest.raises(aj.TypeInferenceError, match=r"overflows int64 at binding 0 'lv' \(matmul\)"):
        aj.analysis.estimate_flops(huge)
    big = one_call(aj.op.exp, ("n", "n"))
    with pytest.raises(aj.TypeInferenceError, match=r"the FLOP count n\*\*2 overflows int64 with the given dims"):
        aj.analysis.estimate_flops(big, dims={"n": 2**40})



def many_exps(n: int) -> aj.Function:
    """exp of n params x_i of shape (a_i, 4): a count of n terms 4*a_i."""
    params = ", ".join(f'x{i}: Tensor(("a{i}", 4), "float32")' for i in range(n))
    body = "\n".join(f"    v{i} = exp(x{i})" for i in range(n))
    return aj.parse(f"@function\ndef main({params}):\n{body}\n    return v0\n")["main"]


def test_a_count_of_more_terms_than_a_dim_holds_says_so_and_dims_count_it():
    # regression: "overflows int64", and dims= could not help: the symbolic sum was made first
    f = many_exps(257)
    assert aj.Dim(aj.analysis.estimate_flops(many_exps(256))) == aj.Dim(" + ".join(f"4*a{i}" for i in range(256)))
    for call in (aj.analysis.estimate_flops, aj.analysis.flops_by_op):
        with pytest.raises(aj.TypeInferenceError, match=r"the FLOP count summed up to binding 256 'v256' \(exp\) "
                           r"is a polynomial too large to represent \(symbolic dim has 257 terms, more than 256\); "
                           r"give dims= values for its symbols"):
            call(f)
    dims = {f"a{i}": 2 for i in range(257)}
    assert aj.analysis.estimate_flops(f, dims=dims) == 257 * 8
    assert aj.analysis.flops_by_op(f, dims=dims) == {"exp": 257 * 8}
    assert aj.analysis.estimate_flops(f, dims={f"a{i}": 2 for i in range(1, 257)}) == "4*a0 + 2048"


def test_a_count_of_degree_above_64_says_so_and_dims_count_it():
    # regression: an exp of a rank-65 tensor of symbolic dims has degree 65
    shape = tuple(f"s{i}" for i in range(65))
    f = one_call(aj.op.exp, shape)
    with pytest.raises(aj.TypeInferenceError, match=r"the FLOP count at binding 0 'lv' \(exp\) is a polynomial too "
                       r"large to represent \(symbolic dim product has degree 65, above 64\); give dims="):
        aj.analysis.estimate_flops(f)
    assert aj.analysis.estimate_flops(f, dims={s: 2 if s == "s0" else 1 for s in shape}) == 2
    assert aj.analysis.flops_by_op(f, dims={s: 3 for s in shape[1:9]} | {s: 1 for s in shape[9:]}) == \
        {"exp": f"{3**8}*s0"}
    wider = one_call(aj.op.exp, shape + ("s65",))
    with pytest.raises(aj.TypeInferenceError, match=r"at binding 0 'lv' \(exp\) with the given dims is a polynomial "
                       r"too large to represent \(symbolic dim product has degree 65"):
        aj.analysis.estimate_flops(wider, dims={"s0": 1})
    with pytest.raises(aj.TypeInferenceError, match=r"overflows int64 with the given dims at binding 0 'lv' \(exp\)"):
        aj.analysis.estimate_flops(f, dims={s: 2 for s in shape})

def test_bad_arguments_are_errors():
    with pytest.raises(aj.Error, match="estimate_flops: expected an aj.Function, got Module"):
        aj.analysis.estimate_flops(aj.Module({"main": lora()}))
    with pytest.raises(aj.Error, match="compile_time_free: expected a bool"):
        aj.analysis.estimate_flops(lora(), compile_time_free=1)
    with pytest.raises(aj.VerifyError, match="num_input: 9 is outside"):
        aj.analysis.flops_by_op(lora().with_attr("num_input", 9))


@given(programs())
def test_total_is_the_sum_of_the_per_op_counts(program):
    f = program.mod["main"]
    for free in (False, True):
        by_op = aj.analysis.flops_by_op(f, compile_time_free=free)
        total = aj.Dim(0)
        for count in by_op.values():
            total = total + aj.Dim(count)
        assert total == aj.Dim(aj.analysis.estimate_flops(f, compile_time_free=free))
        assert set(by_op) == {b.value.op for b in f.bindings if isinstance(b.value, aj.Call)}
        dims = {s: v for s, v in program.dims.items() if s in symbols(f)}
        assert aj.analysis.estimate_flops(f, free, dims) == total.evaluate(program.dims)


def symbols(f: aj.Function) -> set[str]:
    """The symbols of f's param and binding types."""
    def of(t: aj.Type) -> set[str]:
        if t.is_tuple:
            return set().union(*map(of, t.fields))
        return {s for d in t.shape if isinstance(d, str) for s in aj.Dim(d).symbols}
    return set().union(*(of(v.type) for v in [*f.params, *(b.var for b in f.bindings)]))
