"""aj.from_torch promotes operands of different dtypes as torch does
(torch.result_type), so an imported module computes torch's values in
torch's dtypes: Python numbers beside int tensors, mixed tensor dtypes,
true division, comparisons, and sums of bools and ints."""

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import adjoint as aj  # noqa: E402
from adjoint import _core  # noqa: E402
from adjoint.frontend import torch_ops  # noqa: E402
from adjoint.frontend.torch_promote import result_dtype  # noqa: E402

DTYPES = ["bool", "int32", "int64", "float32", "float64"]


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def imported(fn, *inputs):
    return aj.from_torch(Lambda(fn), inputs)


def assert_same_as_torch(fn, *inputs):
    """fn imported and run gives torch's values in torch's dtype."""
    out = aj.build(imported(fn, *inputs))["main"](*[t.numpy() for t in inputs])
    expected = fn(*inputs).numpy()
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def ops_of(mod):
    return [b.value.op for b in mod["main"].bindings if isinstance(b.value, aj.Call)]


# -- the rule, against torch.result_type ------------------------------------------------


def operand(kind, dtype):
    """(adjoint operand, torch operand) of a kind: a tensor with dims, a 0-d tensor or a Python number."""
    if kind == "number":
        value = {"bool": True, "int64": 2, "float32": 2.5}[dtype]
        return value, value
    shape = (2,) if kind == "tensor" else ()
    array = np.zeros(shape, dtype)
    return _core.Constant(array, None), torch.from_numpy(array)


OPERANDS = [(kind, d) for kind in ("tensor", "0-d") for d in DTYPES] + [("number", d) for d in
                                                                        ("bool", "int64", "float32")]


@pytest.mark.parametrize("first,second", list(itertools.product(OPERANDS, repeat=2)),
                         ids=lambda o: f"{o[0]}-{o[1]}")
def test_result_dtype_is_torch_result_type(first, second):
    (a, ta), (b, tb) = operand(*first), operand(*second)
    assert result_dtype("float32", a, b) == str(torch.result_type(ta, tb)).removeprefix("torch.")


# -- Python numbers beside int tensors ----------------------------------------------------

INTS = torch.tensor([0, 3, 4])

NUMBER_CASES = {
    "mul_float": lambda x: x * 0.5,
    "sub_float": lambda x: x - 0.5,
    "rsub_float": lambda x: 1.5 - x,
    "add_float": lambda x: x + 0.5,
    "pow_float": lambda x: x ** 0.5,
    "eq_float": lambda x: x == 3.2,
    "lt_float": lambda x: x < 3.5,
    "gt_negative_float": lambda x: x > -0.5,
    "where_float": lambda x: torch.where(x > 3, x, 0.5),
    "div_int": lambda x: x / 2,
    "add_int_alpha": lambda x: torch.add(x, 2, alpha=3),
    "pow_int": lambda x: x ** 2,
    "exp_of_int": lambda x: torch.exp(x),
    "bool_plus_int": lambda x: (x > 3) + 1,
    "ne_le_ge_float": lambda x: (x != 3.0).long() + (x <= 3.5) * 2 + (x >= 3.9) * 4,
    "bitwise_not_int": lambda x: ~x,
    "logical_not_int": lambda x: torch.logical_not(x),
    "logical_not_float": lambda x: torch.logical_not(x * 0.5),
    "bitwise_not_bool": lambda x: ~(x > 3),
}


@pytest.mark.parametrize("name", list(NUMBER_CASES))
def test_python_number_beside_an_int_tensor(name):
    assert_same_as_torch(NUMBER_CASES[name], INTS)


# -- tensors of different dtypes ----------------------------------------------------------

F32 = torch.tensor([1.5, -2.0, 0.25])
MIXED_CASES = {
    "float_plus_arange": (lambda x: x + torch.arange(3), (F32,)),
    "float_times_int": (lambda x, y: x * y, (F32, torch.tensor([1, 2, 3]))),
    "float_div_int": (lambda x, y: x / y, (F32, torch.tensor([1, 2, 3]))),
    "int_div_int": (lambda x, y: x / y, (torch.tensor([1, 2, 3]), torch.tensor([2, 2, 2]))),
    "bool_times_float": (lambda x: (x > 0) * x, (F32,)),
    "float32_plus_float64": (lambda x, y: x + y, (F32, F32.double())),
    "float_times_0d_int": (lambda x, y: x * y, (F32, torch.tensor(3))),
    "float32_times_0d_float64": (lambda x, y: x * y, (F32, torch.tensor(3.0, dtype=torch.float64))),
    "int_times_0d_float64": (lambda x, y: x * y, (torch.tensor([1, 2, 3]), torch.tensor(0.5, dtype=torch.float64))),
    "int32_plus_int64": (lambda x, y: x + y, (torch.tensor([1, 2, 3], dtype=torch.int32), torch.tensor([4, 5, 6]))),
    "maximum_float_int": (lambda x, y: torch.maximum(x, y), (F32, torch.tensor([1, -3, 0]))),
    "where_float32_float64": (lambda x, y: torch.where(x > 0, x, y), (F32, F32.double() * 3)),
    "lt_int_float": (lambda x, y: x < y, (torch.tensor([1, 2, 3]), torch.tensor([1.5, 1.5, 3.5]))),
    "pow_tensor_tensor": (lambda x, y: x ** y, (F32.abs(), F32)),
    "pow_int_float": (lambda x, y: x ** y, (torch.tensor([1, 2, 3]), F32.abs())),
    "pow_float_int": (lambda x, y: x ** y, (F32, torch.tensor([1, 2, 3]))),
    "pow_number_base": (lambda x: 2 ** x, (F32,)),
    "pow_int_number_base": (lambda x: 2.5 ** x, (torch.tensor([1, 2, 3]),)),
}


@pytest.mark.parametrize("name", list(MIXED_CASES))
def test_tensors_of_different_dtypes(name):
    fn, inputs = MIXED_CASES[name]
    assert_same_as_torch(fn, *inputs)


# -- reductions ---------------------------------------------------------------------------

REDUCTION_CASES = {
    "sum_of_bools": (lambda x: (x > 0).sum(), (F32,)),
    "sum_of_bools_axis": (lambda x: (x > 0).sum(1), (torch.tensor([[1.0, -1.0], [2.0, 3.0]]),)),
    "sum_of_int32": (lambda x: x.sum(0, keepdim=True), (torch.tensor([[1, 2], [3, 4]], dtype=torch.int32),)),
    "sum_with_dtype": (lambda x: x.sum(dtype=torch.float64), (F32,)),
    "sum_of_ints_with_dtype": (lambda x: x.sum(dtype=torch.float32), (torch.tensor([1, 2, 3]),)),
    "mean_with_dtype": (lambda x: x.mean(dtype=torch.float64), (F32,)),
}


@pytest.mark.parametrize("name", list(REDUCTION_CASES))
def test_reductions_accumulate_in_torch_dtype(name):
    fn, inputs = REDUCTION_CASES[name]
    assert_same_as_torch(fn, *inputs)


# -- no cast where none is needed, and the check of every node's dtype ----------------------


def test_operands_of_one_dtype_get_no_astype():
    mod = imported(lambda x, y: (x * 0.5 + y - 1) / 2 + torch.where(x > y, x, -y) + x ** 2 + y.sum(), F32, F32 * 2)
    assert "astype" not in ops_of(mod)


def test_an_int_operand_gets_one_astype():
    mod = imported(lambda x: x * 0.5, INTS)
    assert ops_of(mod) == ["astype", "multiply"]
    assert mod["main"].ret.type.dtype == "float32"


def test_a_translation_of_another_dtype_than_torch_is_an_error(monkeypatch):
    monkeypatch.setitem(torch_ops.OPS, "relu", lambda cx, a: aj.op.astype(a.self, "float64"))
    with pytest.raises(aj.Error, match=r"aten.relu.default' .*gives float64 where torch gives float32"):
        imported(torch.relu, F32)


# -- numbers that must stay exact ---------------------------------------------------------


class Unary(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def assert_exactly_torch(fn, *inputs, dynamic_shapes=None):
    """fn imported and run gives torch's values bit for bit, in torch's dtype."""
    module = Lambda(fn) if dynamic_shapes is None else Unary(fn)
    mod = aj.from_torch(module, inputs, dynamic_shapes=dynamic_shapes)
    out = aj.build(mod)["main"](*[t.numpy() for t in inputs])
    expected = fn(*inputs).numpy()
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


I64 = torch.tensor([0, -1, 5])
FULL_CASES = {
    "full_2_53_plus_1": lambda x: x + torch.full((3,), 2**53 + 1),
    "full_int64_max": lambda x: x - torch.full((3,), 2**63 - 1),
    "full_int64_min": lambda x: x + torch.full((3,), -2**63),
    "new_full": lambda x: x.new_full((2, 3), 2**62 + 1),
    "full_like": lambda x: torch.full_like(x, 2**60 + 3),
    "scalar_tensor": lambda x: x + torch.scalar_tensor(2**62 + 1, dtype=torch.int64),
    "full_0d": lambda x: torch.full((), 2**53 + 3),
}


@pytest.mark.parametrize("name", list(FULL_CASES))
def test_full_of_a_large_int_is_exact(name):
    """op.full's fill is a float64 attr: 2**53 + 1 would become 2**53 and
    2**63 - 1 would be out of range."""
    assert_exactly_torch(FULL_CASES[name], I64)


def test_full_of_a_large_int_with_a_dynamic_size():
    assert_exactly_torch(lambda x: x + torch.full_like(x, 2**62 + 1), torch.tensor([1, 2, 3]),
                         dynamic_shapes=({0: torch.export.Dim("n")},))


FULL_OVERFLOWS = {
    "full": (lambda x: x + torch.full((3,), 1e40), "aten.full.default", "full"),
    "full_like": (lambda x: torch.full_like(x, -1e40), "aten.full_like.default", "full_like"),
    "new_full": (lambda x: x.new_full((2,), 3.4028235e38), "aten.new_full.default", "new_full"),
    "scalar_tensor": (lambda x: x * torch.scalar_tensor(1e40), "aten.scalar_tensor.default", "scalar_tensor"),
}


@pytest.mark.parametrize("name", list(FULL_OVERFLOWS))
def test_full_of_a_float_past_float32_is_an_error(name):
    """torch refuses it when it runs; the import made it inf."""
    fn, op_name, node = FULL_OVERFLOWS[name]
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(F32)
    with pytest.raises(aj.Error, match=rf"{op_name}' \(node '{node}', from .*test_from_torch_dtypes.py:\d+: .*\): "
                                       r"the fill value -?[\d.e+]+ does not fit float32, the dtype of the result"):
        imported(fn, F32)


def test_full_of_float32s_largest_and_infinities_is_as_torch():
    assert_exactly_torch(lambda x: x + torch.full((3,), 3.4028234663852886e38), F32)
    assert_exactly_torch(lambda x: torch.full_like(x, float("-inf")), F32)
    assert_exactly_torch(lambda x: x.double() + torch.full((3,), 1e40, dtype=torch.float64), F32)


MASK = torch.tensor([True, False, True])
MASKED_FILL_CASES = {
    "int64_max": (lambda x, m: x.masked_fill(m, 2**63 - 1), I64),
    "int32_max": (lambda x, m: x.masked_fill(m, 2**31 - 1), I64.int()),
    "float_into_int_truncates": (lambda x, m: x.masked_fill(m, -2.5), I64.int()),
    "any_number_into_bool": (lambda x, m: x.masked_fill(m, 2), MASK.logical_not()),
    "nan_into_bool": (lambda x, m: x.masked_fill(m, float("nan")), MASK.logical_not()),
    "minus_inf_into_float32": (lambda x, m: x.masked_fill(m, float("-inf")), F32),
    "float32_max": (lambda x, m: x.masked_fill(m, 3.4028234663852886e38), F32),
    "0d_constant": (lambda x, m: x.masked_fill(m, torch.tensor(2**31 - 1)), I64.int()),
    "0d_float_constant_into_int": (lambda x, m: x.masked_fill(m, torch.tensor(7.75)), I64),
}


@pytest.mark.parametrize("name", list(MASKED_FILL_CASES))
def test_masked_fill_converts_its_value_as_torch(name):
    fn, x = MASKED_FILL_CASES[name]
    assert_exactly_torch(fn, x, MASK)


MASKED_FILL_OVERFLOWS = {
    "int32": (lambda x, m: x.masked_fill(m, 2**40), I64.int(), "1099511627776 does not fit int32"),
    "int64": (lambda x, m: x.masked_fill(m, 2**63), I64, "9223372036854775808 does not fit int64"),
    "float32": (lambda x, m: x.masked_fill(m, 1e40), F32, "1e.40 does not fit float32"),
    "0d_constant": (lambda x, m: x.masked_fill(m, torch.tensor(2**40)), I64.int(), "1099511627776 does not fit int32"),
}


@pytest.mark.parametrize("name", list(MASKED_FILL_OVERFLOWS))
def test_masked_fill_value_that_does_not_fit_is_an_error(name):
    """torch refuses such a value when it runs ("value cannot be converted to
    type int without overflow"); the import did not, and wrapped it."""
    fn, x, message = MASKED_FILL_OVERFLOWS[name]
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(x, MASK)
    with pytest.raises(aj.Error, match=rf"aten.masked_fill.* \(node 'masked_fill', from .*test_from_torch_dtypes.py:"
                                       rf"\d+: .*\): the fill value {message}, the dtype of the tensor it fills"):
        imported(fn, x, MASK)


PAD_CASES = {  # F.pad's value (a float in its schema) converted to the padded tensor's dtype as torch converts it
    "float_into_int_truncates": (lambda x: torch.nn.functional.pad(x, (2, 1), value=-2.7), I64.int()),
    "any_number_into_bool": (lambda x: torch.nn.functional.pad(x, (1, 1), value=2), MASK),
    "float32_max_and_inf": (lambda x: torch.nn.functional.pad(x, (1, 0), value=3.4028234663852886e38)
                            + torch.nn.functional.pad(x, (0, 1), value=float("inf")), F32),
}


@pytest.mark.parametrize("name", list(PAD_CASES))
def test_pad_converts_its_value_as_torch(name):
    fn, x = PAD_CASES[name]
    assert_exactly_torch(fn, x)


PAD_OVERFLOWS = {
    "float32": (1e40, F32, "1e.40 does not fit float32"),
    "int32": (2**40, I64.int(), r"1099511627776.0 does not fit int32"),
}


@pytest.mark.parametrize("name", list(PAD_OVERFLOWS))
def test_pad_value_that_does_not_fit_is_an_error(name):
    """torch refuses it; the import padded with inf, or wrapped it."""
    value, x, message = PAD_OVERFLOWS[name]

    def fn(x):
        return torch.nn.functional.pad(x, (1, 1), value=value)

    with pytest.raises(RuntimeError, match="without overflow"):
        fn(x)
    with pytest.raises(aj.Error, match=rf"aten.(constant_pad_nd|pad).* \(node '.*', from .*test_from_torch_dtypes.py:"
                                       rf"\d+: .*\): the fill value {message}, the dtype of the tensor it fills"):
        imported(fn, x)


I32 = torch.tensor([1, -3, 7, 2**31 - 1], dtype=torch.int32)
WRAP_CASES = {  # torch converts a Python int to an int32 tensor's dtype by wrapping it
    "add": lambda x: x + 2**31,
    "radd": lambda x: 2**32 + 5 + x,
    "sub": lambda x: x - 2**40,
    "rsub": lambda x: 2**40 - x,
    "rsub_alpha": lambda x: torch.rsub(x, 2**33 + 1, alpha=3),
    "mul": lambda x: x * (2**33 + 3),
    "add_alpha": lambda x: torch.add(x, 2**20, alpha=2**20),
    "sub_alpha": lambda x: torch.sub(x, 2**31 - 1, alpha=-5),
    "lt": lambda x: x < 2**40,
    "ge": lambda x: x >= -2**31 - 1,
    "eq": lambda x: x == 2**32 + 1,
}


@pytest.mark.parametrize("name", list(WRAP_CASES))
def test_int_number_past_the_tensor_dtype_wraps_as_in_torch(name):
    """The import refused them ("the number 2147483648 does not fit dtype int32")."""
    assert_exactly_torch(WRAP_CASES[name], I32)


INT_NUMBER_REFUSALS = {  # torch refuses these numbers too ("value cannot be converted ... without overflow")
    "alpha": (lambda x: torch.add(x, 1, alpha=2**40), r"aten.add.Tensor' \(node 'add', .*alpha=1099511627776 does "
                                                      r"not fit int32, the dtype it computes in"),
    "alpha_of_a_tensor": (lambda x: torch.add(x, x, alpha=2**40), r"aten.add.Tensor' \(node 'add', .*alpha="
                                                                  r"1099511627776 does not fit int32"),
    "where": (lambda x: torch.where(x > 0, x, 2**40), r"aten.where.ScalarOther' \(node 'where', .*the number "
                                                      r"1099511627776 does not fit int32, the dtype of the result"),
}


@pytest.mark.parametrize("name", list(INT_NUMBER_REFUSALS))
def test_int_number_torch_refuses_is_an_error(name):
    fn, message = INT_NUMBER_REFUSALS[name]
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(I32)
    with pytest.raises(aj.Error, match=message):
        imported(fn, I32)


BOOLS = torch.tensor([[True, False, True], [False, False, True]])
BOOL_REDUCTION_CASES = {
    "amax_axis": lambda m: m.amax(dim=1),
    "amin_axis": lambda m: m.amin(dim=0),
    "amax_all": lambda m: m.amax(),
    "amin_keepdim": lambda m: m.amin(dim=-1, keepdim=True),
    "amax_of_a_comparison": lambda m: (m.long() > 0).amax(dim=(0, 1)),
}


@pytest.mark.parametrize("name", list(BOOL_REDUCTION_CASES))
def test_amax_amin_of_bools(name):
    """torch gives any/all as bool; the import refused (op 'max' takes numbers)."""
    assert_exactly_torch(BOOL_REDUCTION_CASES[name], BOOLS)


F32_EDGES = torch.tensor([0.0, 1e-10, -1.0, 3e38])
FLOAT32_OVERFLOW_CASES = {  # torch takes a Python float past float32's range as inf
    "add": lambda x: x + 1e40,
    "mul": lambda x: x * 1e40,
    "div": lambda x: x / 1e40,
    "sub_rounds_to_max": lambda x: x - 3.40282356e38,
    "lt": lambda x: x < 1e40,
    "pow": lambda x: x.abs() ** 1e40,
    "rsub": lambda x: -1e39 - x,
    "alpha_times_number": lambda x: torch.add(x, 2e38, alpha=2.0),
}


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", list(FLOAT32_OVERFLOW_CASES))
def test_float_number_past_float32_is_inf_as_in_torch(name):
    """NumPy's RuntimeWarning (overflow encountered in cast) leaked from the
    constant's cast; under -W error it was an aj.Error."""
    assert_exactly_torch(FLOAT32_OVERFLOW_CASES[name], F32_EDGES)


FLOAT32_OVERFLOW_REFUSALS = {  # torch refuses these ("value cannot be converted to type float without overflow")
    "where": (lambda x: torch.where(x > 0, x, 1e40), r"the number 1e\+40 does not fit float32, the dtype of the result"),
    "alpha": (lambda x: torch.add(x, x, alpha=1e40), r"alpha=1e\+40 does not fit float32"),
}


@pytest.mark.parametrize("name", list(FLOAT32_OVERFLOW_REFUSALS))
def test_float_number_torch_refuses_is_an_error(name):
    fn, message = FLOAT32_OVERFLOW_REFUSALS[name]
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(F32_EDGES)
    with pytest.raises(aj.Error, match=message):
        imported(fn, F32_EDGES)
