"""Shared test helpers: random well-formed graphs built through the public
builder, a small module the pattern tests share, and Hypothesis settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import adjoint as aj

# The profile is ADJOINT_HYPOTHESIS_PROFILE's (or HYPOTHESIS_PROFILE's): "ci"
# (the default) runs 300 examples per property, "long" 20,000, "dev" 50 (the
# sanitizer run of .ci/sanitize uses it: there the examples check memory
# safety, which the main run's 300 per property already cover for meaning).
# Tests that set max_examples themselves keep their own count.
settings.register_profile(
    "ci", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("long", settings.get_profile("ci"), max_examples=20_000)
settings.register_profile("dev", settings.get_profile("ci"), max_examples=50)
settings.load_profile(os.environ.get("ADJOINT_HYPOTHESIS_PROFILE") or os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def exp_of_log_module():
    """main(a) = exp(log(a)) on (2, 3) float32: what a rule exp(log(y)) -> y
    rewrites, for the pattern tests' regressions."""
    return aj.parse('''@function
def main(a: Tensor((2, 3), "float32")) -> Tensor((2, 3), "float32"):
    l: Tensor((2, 3), "float32") = log(a)
    e: Tensor((2, 3), "float32") = exp(l)
    return e
''')


def pytest_addoption(parser):
    parser.addoption("--no-verify-passes", action="store_true",
                     help="do not verify the output of every pass the tests call (verified by default)")


def pytest_configure(config):
    if not config.getoption("--no-verify-passes", default=False):
        verify_every_pass_output()


def verify_every_pass_output():
    """Makes every aj.transform.Pass verify the module it returns, so that a
    pass producing malformed IR fails the test that called it (with the pass
    named) instead of a later, unrelated step."""
    call = aj.transform.Pass.__call__
    if getattr(call, "verifies_output", False):
        return

    def verified_call(self, mod):
        out = call(self, mod)
        try:
            aj.analysis.verify(out)
        except aj.VerifyError as e:
            raise aj.VerifyError(f"the output of {self!r} is malformed: {e}") from e
        return out

    verified_call.verifies_output = True
    aj.transform.Pass.__call__ = verified_call


# Ops that map two (4, 4) tensors, or one, to a (4, 4) tensor.
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide", "matmul"]
UNARY_SQUARE = ["permute_dims", "row_sum", "col_sum"]


def build_graph(steps, names=("x", "y"), prefix="lv", dtype="float32", name="main"):
    """Builds main(x, y) from `steps`: tuples (op, i, j) whose operands are
    earlier values by index (0 and 1 are the params). Returns the module."""
    bb = aj.FunctionBuilder(name)
    vals = [bb.param(names[0], (4, 4), dtype), bb.param(names[1], (4, 4), dtype)]
    for k, (op, i, j) in enumerate(steps):
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        hint = f"{prefix}{k}"
        if op in BINARY:
            v = getattr(aj.op, op)(a, b, name=hint)
        elif op == "permute_dims":
            v = aj.op.permute_dims(a, name=hint)
        elif op == "row_sum":
            v = aj.op.broadcast_to(aj.op.sum(a, axis=[1], keepdims=True), (4, 4), name=hint)
        else:
            v = aj.op.broadcast_to(aj.op.sum(a, axis=[0], keepdims=True), (4, 4), name=hint)
        vals.append(v)
    return bb.finish(aj.op.sum(vals[-1], name="out"))


def _params_for(bb, value, name):
    """Params mirroring `value`: an array gives one, a list gives a tuple of them."""
    if isinstance(value, (list, tuple)):
        return [_params_for(bb, v, f"{name}_{i}") for i, v in enumerate(value)]
    return bb.param(name, value.shape, value.dtype.name)


def _flatten(value):
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _flatten(v)]
    return [value]


def build_op(op, *args, **attrs):
    """A module whose main applies `op` to params shaped like `args` (arrays,
    or lists of arrays for tuple arguments such as concat's), with `attrs`."""
    bb = aj.FunctionBuilder("main")
    params = [_params_for(bb, a, f"a{i}") for i, a in enumerate(args)]
    return bb.finish(getattr(aj.op, op)(*params, **attrs))


def run_op(op, *args, **attrs):
    """Builds `op` over params shaped like `args` and runs it on them."""
    mod = build_op(op, *args, **attrs)
    return aj.build(mod)["main"](*_flatten(list(args)))


@pytest.fixture(autouse=True)
def no_builder_left_active():
    """Fails a test that leaves a FunctionBuilder active (unfinished outside a
    with block): the builder would take the ops of the tests after it in the
    same process, which then fail far from the cause."""
    yield
    left = aj.builder._deactivate_all()
    if left:
        pytest.fail(f"the test left active: {', '.join(left)}; finish it or build inside `with aj.FunctionBuilder(...)`")
