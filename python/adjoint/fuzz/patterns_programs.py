"""The random functions of the ``patterns`` fuzz target's inputs
(``make_function``, ``FunctionMaker``): elementwise ops, matmul,
permute_dims, concat, split and its items, constants, tuples, float32 and
float64, some symbolic dims, and with ``targets`` the chains the rewrite
rules match. Kept as text in an input, so that it is made from (seed, k)
alone and a finding can be saved as a script; the pattern trees over them
are in ``patterns_trees``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

import adjoint as aj
from adjoint.pattern.rewrite_call import _ops_make_calls

UNARY = ["exp", "negative", "tanh", "relu"]
BINARY = ["add", "multiply", "subtract"]
#: op -> number of args, for the op patterns made over these functions (patterns_trees).
ARITY = {**{op: 1 for op in UNARY}, **{op: 2 for op in BINARY}, "matmul": 2, "permute_dims": 1, "concat": 1,
         "split": 1, "sum": 1}


def _dims(rng: random.Random, symbolic: bool) -> tuple:
    rank = rng.choice([1, 2, 2, 2, 3])
    return tuple(rng.choice(["n", 2, 4] if symbolic and rng.random() < 0.3 else [2, 4, 4, 3]) for _ in range(rank))


#: the kinds of value make_function draws, and their weights
KINDS = {"unary": 5, "binary": 6, "binary_const": 2, "matmul": 2, "permute": 2, "concat": 2, "split": 2, "sum": 1,
         "const": 1, "tuple": 1}
#: more of them when it is asked for targets: chains that the rewrite RULES match
TARGET_KINDS = {"negneg": 3, "permperm": 2, "mulone": 2, "splitcat": 2, "subself": 1, "permmatmul": 2}


def make_function(rng: random.Random, steps: int, symbolic: bool = True, float64: bool = True,
                  targets: bool = False, again: float = 0.0) -> str:
    """The text of a random valid function ``main``: ops drawn at random on
    the values made so far (an op whose types do not fit is skipped).
    ``targets``: more chains that the rewrite RULES match. ``again``: after
    each step, the chance of a call made before being made again (alike
    graph-pattern roots then have several bindings to take)."""
    maker = FunctionMaker(rng, symbolic, float64)
    kinds = {**KINDS, **(TARGET_KINDS if targets else {})}
    for _ in range(steps):
        maker.add(rng.choices(list(kinds), list(kinds.values()))[0])
        if again and rng.random() < again:
            maker.again()
    return maker.finish()


class FunctionMaker:
    """A random function being built: its params (one to three, float32 or
    sometimes float64 too), then a value of a drawn kind at each step on
    those made so far (``pool``, the recent ones more often)."""

    def __init__(self, rng: random.Random, symbolic: bool, float64: bool):
        self.rng = rng
        self.bb = aj.FunctionBuilder("main")
        dtypes = ["float32", "float64"] if float64 and rng.random() < 0.3 else ["float32"]
        shape = _dims(rng, symbolic)
        self.pool: list[Any] = []
        for i, name in enumerate("abc"[:rng.choice([1, 2, 2, 3])]):
            s = shape if i == 0 or rng.random() < 0.6 else _dims(rng, symbolic)
            self.pool.append(self.bb.param(name, s, rng.choice(dtypes)))
        self.values: list[Any] = []
        self.calls: list[Any] = []  # the calls bound so far (that ``again`` may bind again)

    def add(self, kind: str) -> None:
        """A value of the kind bound, unless its ops do not type-check."""
        try:
            with _ops_make_calls():  # calls as exprs: one that does not type-check leaves the builder usable
                v = self.step(kind)
        except aj.Error:
            return
        if v is None:
            return
        if isinstance(v, aj.Call):
            self.calls.append(v)
        if not isinstance(v, aj.Var):
            v = self.bb.emit(v)
        self.pool.append(v)
        self.values.append(v)

    def again(self) -> None:
        """A call made before, bound again: the same call, or (less often)
        its op on another value of its first arg's type."""
        if not self.calls:
            return
        call = self.rng.choice(self.calls)
        args = list(call.args)
        if self.rng.random() < 0.4 and isinstance(args[0], aj.Var) and args[0].type.is_tensor:
            args[0] = self.alike(args[0])
        try:
            with _ops_make_calls():
                v = getattr(aj.op, call.op)(*args, **call.attrs)
        except aj.Error:
            return
        self.values.append(self.bb.emit(v))

    def finish(self) -> str:
        """The function's text, returning one to three of the values made."""
        rng, values = self.rng, self.values
        if not values:
            values.append(self.bb.emit(_exp(self.pool[0])))
        outs = [v for v in values if v.type.is_tensor]
        outs = rng.sample(outs, min(len(outs), rng.choice([1, 1, 2, 3]))) or values[-1:]
        return self.bb.finish(outs[0] if len(outs) == 1 else aj.Tuple(outs))["main"].script()

    def tensors(self) -> list[Any]:
        return [v for v in self.pool if v.type.is_tensor and v.type.shape]

    def pick(self) -> Any:
        ts = self.tensors()
        return self.rng.choice(ts[-4:]) if self.rng.random() < 0.7 else self.rng.choice(ts)

    def alike(self, x: Any) -> Any:
        same = [v for v in self.tensors() if v.type == x.type]
        return self.rng.choice(same) if same and self.rng.random() < 0.85 else self.pick()

    def const(self, x: Any, value: float | None = None) -> Any:
        rng, t = self.rng, x.type
        shape = () if rng.random() < 0.5 or not all(isinstance(d, int) for d in t.shape) else t.shape[-1:]
        data = np.full(shape, value, t.dtype) if value is not None else \
            np.asarray(np.round(np.random.default_rng(rng.randrange(1 << 30)).standard_normal(shape), 2), t.dtype)
        return aj.Constant(data)

    def step(self, kind: str) -> Any:
        """One random value of the kind (an expr, or a var already bound), None for none."""
        x = self.pick()
        if kind in TARGET_KINDS:
            return self.rule_chain(kind, x)
        return self.plain_value(kind, x)

    def plain_value(self, kind: str, x: Any) -> Any:
        """A value of one of KINDS on x."""
        rng, bb = self.rng, self.bb
        if kind == "unary":
            v = getattr(aj.op, rng.choice(UNARY))(x)
        elif kind == "binary":
            y = self.alike(x)
            v = getattr(aj.op, rng.choice(BINARY))(*([x, y] if rng.random() < 0.8 else [y, x]))
        elif kind == "binary_const":
            c = self.const(x, rng.choice([None, 1.0]))
            if rng.random() < 0.3:
                c = bb.emit(c)
            v = getattr(aj.op, rng.choice(BINARY))(x, c)
        elif kind == "matmul":
            ys = [y for y in self.tensors() if len(y.type.shape) >= 2 and len(x.type.shape) >= 1
                  and y.type.shape[-2] == x.type.shape[-1] and y.type.dtype == x.type.dtype]
            y = rng.choice(ys) if ys else aj.op.permute_dims(x)
            v = aj.op.matmul(x, y)
        elif kind == "permute":
            axes = list(range(len(x.type.shape)))
            rng.shuffle(axes)
            v = aj.op.permute_dims(x, axes=axes if rng.random() < 0.4 else None)
        elif kind == "concat":
            y = self.alike(x)
            fields = [x, y] + ([self.alike(x)] if rng.random() < 0.3 else [])
            axis = rng.randrange(len(x.type.shape))
            t = bb.emit(aj.Tuple(fields)) if rng.random() < 0.25 else fields
            v = aj.op.concat(t, axis=axis)
        elif kind == "split":
            axes = _even_axes(x)
            if not axes:
                return None
            s = bb.emit(aj.op.split(x, 2, axis=rng.choice(axes)))
            self.pool.append(s)
            v = bb.emit(aj.TupleGetItem(s, rng.randrange(2)))
            if rng.random() < 0.5:
                self.pool.append(v)
                v = bb.emit(aj.TupleGetItem(s, rng.randrange(2)))
        elif kind == "sum":
            v = aj.op.sum(x, axis=[rng.randrange(len(x.type.shape))], keepdims=rng.random() < 0.5)
        elif kind == "const":
            v = bb.emit(self.const(x))
        elif kind == "tuple":
            t = bb.emit(aj.Tuple([x, self.alike(x)]))
            self.pool.append(t)
            v = bb.emit(aj.TupleGetItem(t, rng.randrange(2)))
        else:
            raise AssertionError(kind)
        return v

    def rule_chain(self, kind: str, x: Any) -> Any:
        """A chain of TARGET_KINDS on x, what a rewrite rule matches."""
        if kind == "negneg":
            return aj.op.negative(aj.op.negative(x))
        if kind == "permperm":
            return aj.op.permute_dims(aj.op.permute_dims(x))
        if kind == "mulone":
            return aj.op.multiply(x, aj.Constant(np.ones((), x.type.dtype)))
        if kind == "splitcat":
            axes = _even_axes(x)
            if not axes:
                return None
            axis = self.rng.choice(axes)
            s = aj.op.split(x, 2, axis=axis)
            return aj.op.concat([s[0], s[1]], axis=axis)
        if kind == "subself":
            return aj.op.subtract(x, x)
        if kind == "permmatmul":
            y = self.alike(x) if len(x.type.shape) == 2 else x
            return aj.op.permute_dims(aj.op.matmul(x, aj.op.permute_dims(y)))
        raise AssertionError(kind)


def _even_axes(x: Any) -> list[int]:
    """The axes of x of an even, known size: where it splits in two."""
    return [i for i, d in enumerate(x.type.shape) if isinstance(d, int) and d % 2 == 0]


def _exp(x: Any) -> Any:
    with _ops_make_calls():
        return aj.op.exp(x)
