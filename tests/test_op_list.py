"""The one list of ops (cpp/include/adjoint/op/op_list.def), the C++ registry
and the Python wrappers in aj.op agree: the registry holds exactly the listed
ops, in list order, each with the family the list gives it (the registry
also refuses, at import, an op defined by another family's file); aj.op
wraps every one of them, with the registry's schema as its signature, and
each wrapper emits a call of its own op."""

import inspect
import re
from pathlib import Path

import pytest

import adjoint as aj
import adjoint.op as op_module

OP_LIST = Path(__file__).resolve().parents[1] / "cpp" / "include" / "adjoint" / "op" / "op_list.def"


def listed_ops() -> list[tuple[str, str]]:
    """(family, name) of each AJ_OP line of op_list.def, in order."""
    return re.findall(r"^AJ_OP\((\w+), (\w+)\)$", OP_LIST.read_text(), re.M)


LISTED = listed_ops()
NAMES = [name for _, name in LISTED]


def test_the_list_names_each_op_once():
    assert len(LISTED) > 60
    assert len(set(NAMES)) == len(NAMES)


def test_the_registry_holds_exactly_the_listed_ops_in_list_order():
    assert list(aj._core.op_names()) == NAMES


@pytest.mark.parametrize("family,name", LISTED)
def test_each_op_is_defined_with_its_listed_family(family, name):
    assert aj._core.op_schema(name)["family"] == family


def test_each_family_is_a_file_of_cpp_src_op():
    src = OP_LIST.parents[3] / "src" / "op"
    for family in {f for f, _ in LISTED}:
        assert (src / f"{family}.cc").exists(), family


def test_aj_op_wraps_every_listed_op_and_nothing_else():
    assert aj.op.__all__ == NAMES
    for name in NAMES:
        assert callable(getattr(aj.op, name)), name
        assert getattr(aj.op, name).__name__ == name


@pytest.mark.parametrize("name", NAMES)
def test_each_wrapper_takes_the_schema_args_and_attrs(name):
    schema = aj._core.op_schema(name)
    params = inspect.signature(getattr(aj.op, name)).parameters
    assert list(params) == schema["args"] + [a["name"] for a in schema["attrs"]] + ["name"]
    for attr in schema["attrs"]:
        want = inspect.Parameter.empty if attr["required"] else attr["default"]
        assert params[attr["name"]].default == want, (name, attr["name"])


class _Recorder:
    """Stands in for the active builder: records what a wrapper emits."""

    def __init__(self):
        self.emitted = []

    def _emit_call(self, op_name, tensors, attrs, name):
        self.emitted.append((op_name, tensors, dict(attrs), name))
        return op_name


@pytest.mark.parametrize("name", NAMES)
def test_each_wrapper_emits_a_call_of_its_own_op(name, monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(op_module, "builder_for", lambda what, exprs: recorder)
    monkeypatch.setattr(op_module, "as_expr", lambda value, like: value)
    schema = aj._core.op_schema(name)
    args = [f"arg:{a}" for a in schema["args"]]
    required = {a["name"]: f"attr:{a['name']}" for a in schema["attrs"] if a["required"]}
    getattr(aj.op, name)(*args, **required, name="hint")
    assert recorder.emitted == [(name, args, required, "hint")]
