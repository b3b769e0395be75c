"""Random small inputs for a function and a rough bound on the work of
running it on them: what the ``parse`` and ``passes`` fuzz targets run a
function with, and how they skip a function too costly to run.
"""

from __future__ import annotations

import numpy as np

import adjoint as aj

#: a function is not run when its rough work (``cost``) is over this
COST_LIMIT = 2e7
#: nor when a param would have more elements than this
SIZE_LIMIT = 4096
#: ops whose work is more than one per element made
CONTRACTING_OPS = frozenset(["matmul", "conv2d", "conv2d_backward_data", "conv2d_backward_weight", "max_pool2d",
                             "avg_pool2d", "max_pool2d_backward", "avg_pool2d_backward"])


def small_inputs(fn: aj.Function, rng: np.random.Generator) -> list | None:
    """Random inputs when every param is a tensor of a small shape once its
    symbols are bound to 1..3, else None."""
    env: dict[str, int] = {}
    for p in fn.params:
        if not p.type.is_tensor:
            return None
        for d in p.type.shape:
            if isinstance(d, str) and d.isidentifier():
                env.setdefault(d, int(rng.integers(1, 4)))
    args = []
    for p in fn.params:
        t = p.type
        try:
            shape = tuple(d if isinstance(d, int) else int(aj.Dim(d).evaluate(env)) for d in t.shape)
        except aj.Error:
            return None
        if any(d < 0 or d > SIZE_LIMIT for d in shape) or int(np.prod(shape, dtype=object)) > SIZE_LIMIT:
            return None
        if t.dtype == "bool":
            args.append(np.asarray(rng.random(shape) < 0.5))
        elif t.dtype.startswith("int"):
            args.append(np.asarray(rng.integers(0, 3, shape).astype(t.dtype)))
        else:
            args.append(np.asarray(rng.standard_normal(shape).astype(t.dtype)))
    return args


def cost(fn: aj.Function, args: list) -> float:
    """A rough bound on a run's work, with the symbols as bound by ``args``:
    the elements each binding makes, plus, for an op that contracts (matmul,
    convolutions, pools), its operands' elements times its result's."""
    env: dict[str, int] = {}
    for p, a in zip(fn.params, args):
        for d, n in zip(p.type.shape, a.shape):
            if isinstance(d, str) and d.isidentifier():
                env[d] = n
    total = 0.0
    for b in fn.bindings:
        n = _elements(b.var.type, env)
        if n is None:
            return float("inf")
        total += n
        v = b.value
        if isinstance(v, aj.Call) and v.op in CONTRACTING_OPS:
            for a in v.args:
                m = _elements(a.type, env) if hasattr(a, "type") else None
                if m is None:
                    return float("inf")
                total += float(m) * max(1, n)
    return total


def _elements(t: aj.Type, env: dict) -> float | None:
    """Elements of a type with its symbols bound by env, None when one is not."""
    if t.is_tuple:
        parts = [_elements(f, env) for f in t.fields]
        return None if any(p is None for p in parts) else float(sum(parts))
    n = 1.0
    for d in t.shape:
        try:
            n *= d if isinstance(d, int) else aj.Dim(d).evaluate(env)
        except aj.Error:
            return None
    return n
