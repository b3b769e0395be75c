"""copy and pickle of modules, functions, vars and types: copies of immutable
nodes are the nodes themselves; a pickle goes through the text form and
reads back structurally equal (names, attrs, constants, symbolic dims), in
this process and through a multiprocessing pool of spawned processes."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import numpy as np
import pytest
from hypothesis import given, settings

import adjoint as aj
from adjoint import examples
from programs import programs
from test_display import MLP, chain, twice_bound_module, undefined_var_module
from test_roundtrip import DESIGN_EXAMPLES, deepest_tuple_chain

TEXTS = {**examples.ALL, **DESIGN_EXAMPLES, "mlp": MLP}


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def example_modules() -> dict[str, aj.Module]:
    """Every example module, and the adjoint of each that Gradient takes."""
    mods = {name: aj.parse(text) for name, text in TEXTS.items()}
    for name in ("transposed_matmul", "mlp_symbolic", "symbolic_and_attrs", "mlp"):
        mods[f"{name}_adjoint"] = aj.transform.Gradient()(mods[name])
        mods[f"{name}_raw_adjoint"] = aj.transform.Gradient(simplify=False)(mods[name])
    return mods


MODULES = example_modules()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_pickled_module_reads_back_structurally_equal(name):
    mod = MODULES[name]
    back = round_trip(mod)
    aj.assert_structural_equal(back, mod)
    assert back.script() == mod.script() and list(back) == list(mod)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_pickled_function_keeps_its_name_and_attrs(name):
    for fn in MODULES[name].functions.values():
        back = round_trip(fn)
        aj.assert_structural_equal(back, fn)
        assert (back.name, back.attrs) == (fn.name, fn.attrs)


def test_names_attrs_constants_and_symbolic_dims_survive():
    mod = MODULES["symbolic_and_attrs"]
    fn = round_trip(mod)["main"]
    assert fn.attrs == {"num_input": 1}
    assert [p.type.shape for p in fn.params] == [("n", 4096), ("m + n", 4), (4096, 4)]
    const = next(b.value for b in fn.bindings if isinstance(b.value, aj.Constant))
    assert const.data.dtype == np.float32 and const.data.tolist() == 1.5
    pair = round_trip(MODULES["two_functions_and_tuple_return"])
    assert list(pair) == ["main", "other"]
    np.testing.assert_array_equal(pair["main"].bindings[0].value.data, [[1.0, 2.0], [3.0, 4.0]])


def test_vars_and_types_pickle_by_value():
    x = aj.Var("x", aj.TensorType(("n", 784), "float32"))
    back = round_trip(x)
    assert back is not x and (back.name_hint, back.type) == ("x", x.type)
    for ty in (x.type, aj.TensorType((), "bool"), aj.TupleType([x.type, aj.TupleType([aj.TensorType((2,), "int64")])])):
        assert round_trip(ty) == ty


def test_the_deepest_tuple_types_pickle():
    # A type pickled as nested TupleType calls, which ran out of Python's
    # recursion limit from 249 tuples deep (the cap is 253).
    t = aj.TensorType((3, "n"), "float32")
    for _ in range(253):
        t = aj.TupleType([t])
    assert round_trip(t) == t
    assert round_trip(aj.Var("v", t)).type == t
    mod = deepest_tuple_chain((3, "n"))
    aj.assert_structural_equal(round_trip(mod), mod)


def test_a_type_sharing_its_fields_pickles_each_once():
    leaf = aj.TensorType((3,), "float32")
    t = leaf
    for _ in range(19):
        t = aj.TupleType([t, t])  # 2**19 tensors when written out, within the cap of 2**20 parts
    data = pickle.dumps(t)
    assert len(data) < 10_000
    back = pickle.loads(data)
    assert hash(back) == hash(t) and back == t
    for _ in range(19):
        assert len(back.fields) == 2 and back.fields[0] is back.fields[1]
        back = back.fields[0]
    assert back == leaf


def test_copies_of_immutable_nodes_are_the_nodes():
    mod = MODULES["mlp_adjoint"]
    fn = mod["main_adjoint"]
    binding = fn.bindings[0]
    # regression: bindings and dims were TypeError "cannot pickle 'adjoint._core.Binding' object"
    nodes = [mod, fn, fn.params[0], fn.params[0].type, fn.bindings[0].value, aj.Constant([1.0]),
             aj.Tuple([fn.params[0]]), aj.TupleGetItem(aj.Tuple([fn.params[0]]), 0), binding, aj.Dim("n"),
             aj.Dim("2*n + m"), aj.Dim(4)]
    for node in nodes:
        assert copy.copy(node) is node and copy.deepcopy(node) is node
    shallow = copy.deepcopy({"mod": mod, "fns": [fn], "binding": binding, "dims": [aj.Dim("n")]})
    assert shallow["mod"] is mod and aj.structural_equal(shallow["fns"][0], fn)
    assert shallow["binding"] is binding and shallow["dims"] == [aj.Dim("n")]


def test_an_executable_does_not_pickle_its_module_does():
    # as docs/jupyter.md says: pickle the module and build it again
    exe = aj.build(MODULES["transposed_matmul"])
    with pytest.raises(TypeError, match="cannot pickle 'adjoint._core.Executable' object"):
        pickle.dumps(exe)
    rebuilt = aj.build(round_trip(MODULES["transposed_matmul"]))
    inputs = [np.ones(p.shape, p.dtype) for p in exe["main"].signature.params]
    np.testing.assert_array_equal(rebuilt["main"](*inputs), exe["main"](*inputs))


@pytest.mark.parametrize("make", [undefined_var_module, twice_bound_module])
def test_a_module_that_does_not_verify_is_not_pickled(make):
    mod = make()
    with pytest.raises(aj.VerifyError, match="cannot pickle a module that does not verify: function 'main'"):
        pickle.dumps(mod)
    with pytest.raises(aj.VerifyError, match="cannot pickle function 'main' that does not verify"):
        pickle.dumps(mod["main"])


def test_a_100k_binding_module_pickles():
    mod = chain(100_000)
    back = round_trip(mod)
    aj.assert_structural_equal(back, mod)


@settings(max_examples=60)
@given(programs())
def test_random_modules_pickle_structurally_equal(program):
    for mod in (program.mod, aj.transform.Gradient(simplify=False)(program.mod)):
        aj.assert_structural_equal(round_trip(mod), mod)
        aj.assert_structural_equal(round_trip(mod["main"]), mod["main"])


def test_modules_go_through_a_spawned_process_pool_and_back():
    mods = [MODULES[n] for n in ("mlp", "symbolic_and_attrs", "transposed_matmul")]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        adjoints = pool.map(aj.transform.Gradient(), mods)
        parsed = pool.map(aj.parse, [m.script() for m in mods])
    for mod, adjoint, back in zip(mods, adjoints, parsed):
        aj.assert_structural_equal(adjoint, aj.transform.Gradient()(mod))
        aj.assert_structural_equal(back, mod)
