"""The test-suite hook of conftest.py: every pass the tests call has its
output verified, so a pass that returns malformed IR fails where it ran."""

from __future__ import annotations

import pytest

import adjoint as aj
from conftest import verify_every_pass_output

T = aj.TensorType((2,), "float32")


class ReturnsAFreeVar(aj.transform.Pass):
    """A broken pass: its output's main adds a var no one binds."""

    name = "ReturnsAFreeVar"

    def transform(self, mod: aj.Module) -> aj.Module:
        x, y, v = aj.Var("x", T), aj.Var("y", T), aj.Var("v", T)
        return aj.Module({"main": aj.Function([x], [(v, aj.Call("add", [x, y]))], v)})


def module() -> aj.Module:
    return aj.parse('''
@function
def main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):
    y: Tensor((2,), "float32") = exp(x)
    return y
''')


def test_a_pass_returning_malformed_ir_fails_where_it_ran(pytestconfig):
    if pytestconfig.getoption("--no-verify-passes"):
        pytest.skip("pass outputs are not verified in this run (--no-verify-passes)")
    with pytest.raises(aj.VerifyError, match=r"output of aj\.transform\.ReturnsAFreeVar\(\).*'y'"):
        ReturnsAFreeVar()(module())


def test_the_hook_is_installed_once(pytestconfig):
    if pytestconfig.getoption("--no-verify-passes"):
        pytest.skip("pass outputs are not verified in this run (--no-verify-passes)")
    before = aj.transform.Pass.__call__
    assert before.verifies_output
    verify_every_pass_output()
    assert aj.transform.Pass.__call__ is before


def test_passes_inside_sequential_are_verified_too(pytestconfig):
    if pytestconfig.getoption("--no-verify-passes"):
        pytest.skip("pass outputs are not verified in this run (--no-verify-passes)")
    seq = aj.transform.Sequential([ReturnsAFreeVar(), aj.transform.DeadCodeElimination()])
    with pytest.raises(aj.VerifyError, match="ReturnsAFreeVar"):
        seq(module())
