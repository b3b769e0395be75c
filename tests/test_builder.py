"""Building functions from Python: A-normal form, inferred types, unique
names, operator sugar, and errors for misuse."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import examples


def test_design_section5_example():
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 784), "float32")
    w = bb.param("w", (784, 10), "float32")
    mod = bb.finish(aj.op.sum(aj.op.relu(x @ w)))
    fn = mod["main"]
    assert fn.attrs == {"num_input": 1}
    assert fn.params[0].type.shape == ("n", 784)
    assert fn.bindings[0].value.op == "matmul"
    assert fn.bindings[0].var.type.shape == ("n", 10)
    aj.analysis.verify(mod)


def test_builder_matches_parsed_text():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), "float32")
    y = bb.param("y", (3, 3), "float32")
    lv1 = aj.op.permute_dims(x, name="lv1")
    lv2 = aj.op.permute_dims(y, name="lv2")
    lv3 = aj.op.matmul(lv1, lv2, name="lv3")
    mod = bb.finish(aj.op.sum(lv3, name="gv"))
    assert mod.script() == examples.TRANSPOSED_MATMUL


def test_operator_sugar():
    bb = aj.FunctionBuilder("f")
    x = bb.param("x", (2, 3), "float64")
    y = x * 2.0 + 1.0 - x / x
    z = (-y).T @ x
    s = z.sum(axis=[0], keepdims=True)
    mod = bb.finish(s)
    ops = [b.value.op for b in mod["f"].bindings]
    assert ops == ["multiply", "add", "divide", "subtract", "negative", "permute_dims", "matmul", "sum"]
    consts = [b.value.args[1] for b in mod["f"].bindings[:2]]
    assert all(isinstance(c, aj.Constant) and c.type.dtype == "float64" for c in consts)
    assert mod["f"].ret_type.shape == (1, 3)


def test_tuples_and_items():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (4, 6), "float32")
    parts = aj.op.split(x, 3, axis=1)
    a, b = parts[0], parts[2]
    c = aj.op.concat([a, b], axis=1)
    mod = bb.finish((c, (a, b)))
    fn = mod["main"]
    assert str(fn.ret_type) == 'Tuple(Tensor((4, 4), "float32"), Tuple(Tensor((4, 2), "float32"), Tensor((4, 2), "float32")))'
    aj.analysis.verify(mod)
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


def test_names_are_deduplicated():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    x2 = bb.param("x", (2,), "float32")
    a = aj.op.add(x, x2, name="x")
    assert [p.name_hint for p in bb._builder.params] == ["x", "x_1"]
    assert a.name_hint == "x_2"
    bb.finish(a)


def test_constants_from_numpy():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 2), "float32")
    c = np.array([[1, 2], [3, 4]], dtype=np.float32)
    mod = bb.finish(aj.op.add(x, c))
    const = mod["main"].bindings[0].value.args[1]
    np.testing.assert_array_equal(const.data, c)
    assert 'const([[1.0, 2.0], [3.0, 4.0]], "float32")' in mod.script()


@pytest.mark.parametrize("dtype, number", [
    ("int32", 2**32 + 5), ("int32", 2**31), ("int32", -2**31 - 1), ("int64", 2**63), ("int32", 2.5),
    ("int32", float("nan")), ("int64", float("inf")), ("int64", np.uint64(2**64 - 1)), ("bool", 2), ("bool", 0.5),
], ids=repr)
def test_a_number_its_operands_dtype_cannot_hold_is_an_error_naming_the_op(dtype, number):
    # regression: the number was cast: 2**32 + 5 became 5, 2.5 became 2, NaN INT_MIN
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), dtype)
    with pytest.raises(aj.TypeInferenceError, match=rf"op 'equal': the number .* does not fit dtype {dtype}"):
        aj.op.equal(x, number)


@pytest.mark.parametrize("dtype, number", [
    ("int32", 2**31 - 1), ("int32", -2**31), ("int64", 2**63 - 1), ("int32", 7.0), ("int32", np.int64(7)),
    ("int32", True), ("bool", 1), ("bool", 0.0), ("float32", 0.1), ("float32", 2**40), ("float64", float("nan")),
], ids=repr)
def test_a_number_its_operands_dtype_holds_is_a_constant_of_that_dtype(dtype, number):
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), dtype)
    mod = bb.finish(aj.op.equal(x, number))
    const = mod["main"].bindings[0].value.args[1]
    assert const.data.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(const.data, np.asarray(number).astype(dtype))


TYPE_ERRORS = [
    (lambda x: x @ x, aj.TypeInferenceError, r"matmul.*\(2, 3\)"),
    (lambda x: aj.op.sum(x, axis=[7]), aj.TypeInferenceError, "sum"),
    (lambda x: aj.op.add(x), aj.TypeInferenceError, "add"),
    (lambda x: aj.op.sum(x, bogus=1), aj.TypeInferenceError, "no attr 'bogus'|unexpected keyword"),
    (lambda x: aj.op.add(x, object()), aj.Error, "cannot use a value of type object"),
]


def test_index_arguments_take_ints_and_lists_as_numpy_does():
    """take's and index_add's indices and nll_loss's targets: an int or a list of ints is an int64
    array, as np.take(x, [1, -1], axis=1) takes it. A number took x's dtype (\"indices must be int32
    or int64, got float32\") and a list became a tuple of float32 scalars."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with aj.FunctionBuilder("main") as bb:
        p = bb.param("x", x.shape, "float32")
        outs = (aj.op.take(p, [1, -1], axis=1), aj.op.take(p, 2), aj.op.take(p, indices=[[0], [2]], axis=-1),
                aj.op.index_add(p, [0, 0], np.ones((2, 4), np.float32)), aj.op.nll_loss(p, [0, 3, 1]),
                aj.op.nll_loss_backward(aj.op.sum(p), p, [0, 3, 1]))
        mod = bb.finish(outs)
    got = aj.build(mod)["main"](x)
    want = (np.take(x, [1, -1], axis=1), x[2], np.take(x, [[0], [2]], axis=-1), x + np.array([[2], [0], [0]]),
            -(x[0, 0] + x[1, 3] + x[2, 1]) / 3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[5].shape == x.shape


@pytest.mark.parametrize("indices, message", [
    ([0.5], "op 'take': argument 'indices' must be int32 or int64, got float64"),
    ([], "op 'take': argument 'indices' must be int32 or int64, got float64"),
    ([[0, 1], [2]], r"op 'take': cannot make an array of \[\[0, 1\], \[2\]\]"),
    ([2**63], r"op 'take': Constant: unknown dtype 'uint64'"),
])
def test_index_arguments_numpy_refuses_name_the_op(indices, message):
    with aj.FunctionBuilder("main") as bb:
        p = bb.param("x", (3,), "float32")
        with pytest.raises(aj.Error, match=message):
            aj.op.take(p, indices)
    assert bb.status == "abandoned"


def test_numpy_bools_and_ints_are_attrs():
    """A NumPy bool (x.any(), arr[0] of a bool array) is a bool attr as a NumPy int is an int
    attr; it was "cannot use a value of type bool as an attr"."""
    with aj.FunctionBuilder("main") as bb:
        x = bb.param("x", (2, 3), "float32")
        kept = aj.op.sum(x, axis=[np.int64(1)], keepdims=np.bool_(True))
        dropped = aj.op.max(x, axis=np.int32(0), keepdims=np.array([False])[0])
        pooled = aj.op.avg_pool2d(aj.op.reshape(x, (1, 1, 2, 3)), [2], count_include_pad=np.True_)
        assert kept.type.shape == (2, 1) and dropped.type.shape == (3,) and pooled.type.shape == (1, 1, 1, 2)
        mod = bb.finish((kept, dropped, pooled))
    assert [b.value.attrs.get("keepdims") for b in mod["main"].bindings[:2]] == [True, False]
    assert mod["main"].bindings[-1].value.attrs["count_include_pad"] is True


@pytest.mark.parametrize("case", range(len(TYPE_ERRORS)))
def test_type_errors_name_the_op(case):
    call, error, message = TYPE_ERRORS[case]
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3), "float32")
    with pytest.raises(error, match=message):
        call(x)


@pytest.mark.parametrize("shape, dtype, message", [((2,), "float16", "dtype"), ((-1,), "float32", "negative dim -1"),
                                                   ((aj.Dim(1) - 3,), "float32", "negative dim -2"),
                                                   ((1.5,), "float32", "a dim must be an int, a string or an aj.Dim")])
def test_param_errors_abandon_the_builder(shape, dtype, message):
    bb = aj.FunctionBuilder("main")
    with pytest.raises(aj.Error, match=message):
        bb.param("z", shape, dtype)
    assert bb.status == "abandoned" and bb not in aj.builder._stack()


def test_shapes_take_dims_as_ints_and_strings():
    bb = aj.FunctionBuilder("main")
    n = aj.Dim("n")
    x = bb.param("x", (n, aj.Dim(3)), "float32")
    y = aj.op.reshape(x, (n * 3,))
    z = aj.op.broadcast_to(aj.op.zeros((), "float32"), (2, n * 3))
    assert x.type.shape == ("n", 3) and y.type.shape == ("3*n",) and z.type.shape == (2, "3*n")
    mod = bb.finish(y + z)
    assert aj.build(mod)["main"](np.ones((2, 3), np.float32)).shape == (2, 6)


def test_ops_outside_a_builder_are_an_error():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    bb.finish(x)
    with pytest.raises(aj.Error, match="no active FunctionBuilder"):
        aj.op.zeros((2,), "float32")
    with pytest.raises(aj.TypeInferenceError, match="'x' belongs to FunctionBuilder 'main', which is finished"):
        aj.op.add(x, x)
    with pytest.raises(aj.Error, match="already finished"):
        bb.param("y", (2,), "float32")


def test_context_manager_deactivates():
    with aj.FunctionBuilder("outer") as outer:
        x = outer.param("x", (2,), "float32")
        with aj.FunctionBuilder("inner") as inner:
            y = inner.param("y", (2,), "float32")
            inner_mod = inner.finish(aj.op.add(y, y))
        outer_mod = outer.finish(aj.op.multiply(x, x))
    assert inner_mod["inner"].bindings[0].value.op == "add"
    assert outer_mod["outer"].bindings[0].value.op == "multiply"


def test_module_api():
    mod = aj.parse(examples.TRANSPOSED_MATMUL + "\n" + examples.TRANSPOSED_MATMUL.replace("def main", "def g"))
    assert "main" in mod and "g" in mod and "h" not in mod
    assert list(mod) == ["main", "g"] and len(mod) == 2
    assert list(mod.functions) == ["main", "g"]
    with pytest.raises(aj.FunctionNotFoundError, match="h"):
        mod["h"]
    with pytest.raises(KeyError):
        mod["h"]
    fn = mod["main"].with_attr("num_input", 1)
    assert fn.attrs == {"num_input": 1} and mod["main"].attrs == {}
    mod2 = mod.with_function("main", fn)
    assert mod2["main"].attrs == {"num_input": 1} and mod["main"].attrs == {}
    assert "@function(num_input=1)" in mod2.script()
    assert "<pre>" in mod._repr_html_()


# ---- which builder a value belongs to --------------------------------------


@pytest.fixture(autouse=True)
def no_builder_left_active():
    """Every test, whatever error it provokes, leaves the active stack as it found it."""
    before = list(aj.builder._stack())
    yield
    assert aj.builder._stack() == before


def two_builders():
    f = aj.FunctionBuilder("f")
    x = f.param("x", (2,), "float32")
    g = aj.FunctionBuilder("g")
    y = g.param("y", (2,), "float32")
    return f, x, g, y


def test_a_value_of_another_builder_is_refused_at_the_op():
    f, x, g, y = two_builders()
    with pytest.raises(aj.TypeInferenceError) as info:
        aj.op.add(x, y)
    assert str(info.value) == "aj.op.add: 'y' was built by FunctionBuilder 'g', not 'f' (the builder of 'x')"
    assert f.status == "abandoned" and g.status == "active"
    assert aj.builder._stack()[-1] is g
    g.finish(y)


def test_the_other_order_names_the_other_builder():
    f, x, g, y = two_builders()
    with pytest.raises(aj.TypeInferenceError, match=r"^aj.op.multiply: 'x' was built by FunctionBuilder 'f', "
                                                     r"not 'g' \(the builder of 'y'\)$"):
        y * x
    assert g.status == "abandoned"
    f.finish(x)


def test_values_inside_a_tuple_are_checked():
    f, x, g, y = two_builders()
    with pytest.raises(aj.TypeInferenceError, match=r"aj.op.concat: 'y' was built by FunctionBuilder 'g', not 'f'"):
        aj.op.concat((x, x, y), axis=0)
    g.finish(y)


def test_builders_of_one_name_are_told_apart():
    f = aj.FunctionBuilder("main")
    x = f.param("x", (2,), "float32")
    g = aj.FunctionBuilder("main")
    y = g.param("y", (2,), "float32")
    with pytest.raises(aj.TypeInferenceError, match="'y' was built by another FunctionBuilder 'main', not 'main'"):
        aj.op.add(x, y)
    g.finish(y)


def test_an_op_goes_to_the_builder_of_its_values_not_the_innermost():
    f, x, g, y = two_builders()
    e = aj.op.exp(x)  # g is innermost, but x is f's
    z = aj.op.zeros((2,), "float32")  # no values: the innermost builder
    mod_g = g.finish(aj.op.add(y, z))
    mod_f = f.finish(e)
    assert [b.value.op for b in mod_f["f"].bindings] == ["exp"]
    assert [b.value.op for b in mod_g["g"].bindings] == ["zeros", "add"]
    aj.analysis.verify(mod_f)
    aj.analysis.verify(mod_g)


def test_tuple_indexing_goes_to_the_builder_of_the_tuple():
    f, x, g, y = two_builders()
    halves = aj.op.split(x, 2)  # f's tuple, while g is innermost
    first = halves[0]
    mod_f = f.finish(first)
    assert [type(b.value).__name__ for b in mod_f["f"].bindings] == ["Call", "TupleGetItem"]
    aj.analysis.verify(g.finish(y))


def test_explicit_emit_and_finish_refuse_values_of_another_builder():
    f, x, g, y = two_builders()
    with pytest.raises(aj.TypeInferenceError, match=r"FunctionBuilder 'g'.emit: 'x' was built by FunctionBuilder 'f'"):
        g.emit(aj.Tuple([y, x]))
    assert g.status == "abandoned"
    with pytest.raises(aj.Error, match=r"FunctionBuilder 'f'.finish: 'y' belongs to FunctionBuilder 'g', which was abandoned"):
        f.finish((x, y))
    assert f.status == "abandoned" and f not in aj.builder._stack()


def test_a_value_of_a_finished_builder_is_refused():
    f = aj.FunctionBuilder("f")
    x = f.param("x", (2,), "float32")
    f.finish(x)
    with aj.FunctionBuilder("g") as g:
        y = g.param("y", (2,), "float32")
        with pytest.raises(aj.TypeInferenceError) as info:
            aj.op.add(y, x)
    assert str(info.value) == "aj.op.add: 'x' belongs to FunctionBuilder 'f', which is finished"
    assert g.status == "abandoned"


def test_finish_verifies_and_names_a_free_var():
    free = aj.Var("stray", aj.TensorType((2,), "float32"))
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    with pytest.raises(aj.VerifyError, match=r"FunctionBuilder 'main'.finish: .*'stray'.*free var"):
        bb.finish(aj.op.add(x, free))
    assert bb.status == "abandoned" and bb not in aj.builder._stack()


@pytest.mark.parametrize("method", ["emit", "finish"])
def test_a_value_that_is_no_expr_abandons_the_builder(method):
    bb = aj.FunctionBuilder("main")
    bb.param("x", (2,), "float32")
    with pytest.raises(aj.Error, match="cannot use a value of type str as an expr"):
        getattr(bb, method)("nope")
    assert bb.status == "abandoned" and bb not in aj.builder._stack()


def test_finish_verifies_num_input():
    bb = aj.FunctionBuilder("main", num_input=3)
    x = bb.param("x", (2,), "float32")
    with pytest.raises(aj.VerifyError, match=r"attr num_input: 3 is outside \[0, 1\]"):
        bb.finish(x)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "multiply", "exp"]), st.integers(0, 99), st.integers(0, 99)),
                max_size=16))
def test_ops_land_in_the_builder_of_their_values(steps):
    # Two builders, ops on values drawn from both: an op on one builder's
    # values is emitted there; mixing, or touching an abandoned builder's
    # values, raises and abandons the builder the op went to (its first
    # value's); the builders left finish into verified functions.
    builders = [aj.FunctionBuilder("a"), aj.FunctionBuilder("b")]
    pool = [(bb.param("p", (2,), "float32"), k) for k, bb in enumerate(builders)]
    emitted, dead = [0, 0], set()
    for op, i, j in steps:
        (u, owner_u), (v, owner_v) = pool[i % len(pool)], pool[j % len(pool)]
        args, owners = ([u], {owner_u}) if op == "exp" else ([u, v], {owner_u, owner_v})
        if owners & dead or len(owners) > 1:
            error = aj.Error if owners & dead else aj.TypeInferenceError
            with pytest.raises(error, match="abandoned after an error" if owners & dead else "was built by"):
                getattr(aj.op, op)(*args)
            dead.add(owner_u)
        else:
            pool.append((getattr(aj.op, op)(*args), owner_u))
            emitted[owner_u] += 1
    for k, bb in enumerate(builders):
        assert bb.status == ("abandoned" if k in dead else "active")
        if k not in dead:
            mod = bb.finish([value for value, owner in pool if owner == k][-1])
            assert len(mod[bb.name].bindings) == emitted[k]
            aj.analysis.verify(mod)


# ---- abandoned builders ----------------------------------------------------


def test_an_op_error_abandons_the_builder():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2, 3), "float32")
    with pytest.raises(aj.TypeInferenceError, match="matmul"):
        x @ x
    assert bb.status == "abandoned" and bb not in aj.builder._stack()
    with pytest.raises(aj.Error, match=r"'x' belongs to FunctionBuilder 'main', which was abandoned after an error "
                                       r"\(TypeInferenceError: op 'matmul'.*\); create a new FunctionBuilder"):
        aj.op.exp(x)
    with pytest.raises(aj.Error, match="FunctionBuilder 'main' was abandoned after an error"):
        bb.param("y", (2,), "float32")
    with pytest.raises(aj.Error, match="no active FunctionBuilder"):
        aj.op.zeros((2,), "float32")  # no longer captured by the abandoned builder


def test_an_error_in_a_with_block_abandons_the_builder():
    with pytest.raises(ZeroDivisionError):
        with aj.FunctionBuilder("main") as bb:
            x = bb.param("x", (2,), "float32")
            1 / 0
    assert bb.status == "abandoned" and bb not in aj.builder._stack()
    with pytest.raises(aj.Error, match=r"abandoned after an error \(ZeroDivisionError: division by zero\)"):
        aj.op.exp(x)


def test_leaving_a_with_block_unfinished_deactivates():
    with aj.FunctionBuilder("main") as bb:
        bb.param("x", (2,), "float32")
    assert bb.status == "active" and bb not in aj.builder._stack()
    with pytest.raises(aj.Error, match="no active FunctionBuilder"):
        aj.op.zeros((2,), "float32")


def test_with_on_a_finished_builder_is_an_error():
    bb = aj.FunctionBuilder("main")
    bb.finish(bb.param("x", (2,), "float32"))
    with pytest.raises(aj.Error, match="FunctionBuilder 'main': the builder is finished; create a new one"):
        with bb:
            pass


def test_a_failed_notebook_cell_abandons_its_builders():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        kept = shell.run_cell("import adjoint as aj\nkeep = aj.FunctionBuilder('kept')")
        assert kept.success
        failed = shell.run_cell("bb = aj.FunctionBuilder('cell')\nx = bb.param('x', (2,), 'float32')\n1 / 0")
        assert isinstance(failed.error_in_exec, ZeroDivisionError)
        assert shell.user_ns["bb"].status == "abandoned"
        assert shell.user_ns["keep"].status == "active"  # made in a cell that ran well
        assert aj.builder._stack()[-1] is shell.user_ns["keep"]
        later = shell.run_cell("y = aj.op.exp(x)")
        assert isinstance(later.error_in_exec, aj.Error) and "abandoned after an error" in str(later.error_in_exec)
        done = shell.run_cell("keep.finish(keep.param('k', (2,), 'float32'))")
        assert done.success and shell.user_ns["keep"].status == "finished"
    finally:
        InteractiveShell.clear_instance()


# ---- function attrs --------------------------------------------------------


def test_an_unknown_function_attr_is_refused():
    with pytest.raises(aj.VerifyError, match=r"^FunctionBuilder 'main': unknown function attr 'num_inputs' "
                                             r"\(known: num_input, frozen, doc\)$"):
        aj.FunctionBuilder("main", num_inputs=1)
    bb = aj.FunctionBuilder("main", doc=3)  # known, of the wrong kind: the verifier's to judge, at finish
    with pytest.raises(aj.VerifyError, match="function 'main', attrs: function attr doc must be a string, got 3"):
        bb.finish(bb.param("x", (2,), "float32"))
    fn = aj.parse(examples.TRANSPOSED_MATMUL)["main"]
    with pytest.raises(aj.VerifyError, match="with_attr: unknown function attr 'inputs'"):
        fn.with_attr("inputs", 1)
    with pytest.raises(aj.VerifyError, match="Function: unknown function attr 'note'"):
        aj.Function(fn.params, [(b.var, b.value) for b in fn.bindings], fn.ret, {"note": "x"})


def test_an_unknown_function_attr_in_text_is_a_parse_error():
    text = examples.TRANSPOSED_MATMUL.replace("@function", "@function(num_inputs=1)")
    with pytest.raises(aj.ParseError, match=r"unknown function attr 'num_inputs' \(known: num_input, frozen, doc\)") as info:
        aj.parse(text)
    assert (info.value.line, info.value.column) == (1, 11)
    with pytest.raises(aj.ParseError, match="function attr doc must be a string, got 1") as info:
        aj.parse(examples.TRANSPOSED_MATMUL.replace("@function", "@function(doc=1)"))
    assert (info.value.line, info.value.column) == (1, 15)
    assert aj.parse(examples.TRANSPOSED_MATMUL.replace("@function", '@function(doc="a note")'))["main"].attrs == {
        "doc": "a note"}
