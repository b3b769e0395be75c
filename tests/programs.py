"""Hypothesis strategies for random adjoint programs, for test_properties.py.

programs() draws a Program: a module with one function, `main`, built through
aj.FunctionBuilder and aj.op from the whole op set (elementwise ops with
broadcasting, matmuls (parallel ones and low-rank updates too), shape ops, reductions, tuples, nn
ops, creation ops, constants, symbolic dims, weights by num_input, int and
bool values through the ops that take them, items of tuples written inline or
bound to vars, ops repeated; with int_divides=True, divides of ints and bools
too), the inputs to run it on (float64, and int64 indices) and the values of
its symbolic dims.
`main` returns a float64 scalar (the target Gradient differentiates), alone
or first in a tuple.

How: a Gen keeps the values built so far, each with an interval holding its
elements on the program's inputs. Each step draws an op generator from OPS,
which picks operands of the types its op accepts from the earlier values (or
makes a new leaf of the shape it needs: a param, a constant or a creation op),
emits the op and adds the result. The intervals keep every op on
well-conditioned values: log, sqrt, rsqrt, the divisor of divide and the base
of power see values >= 0.25 (an operand that is not is made so by exp), exp
sees |x| <= 2, and an operand above 100 in magnitude is scaled down first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import adjoint as aj

SIZES = [2, 3, 4]  # constant dims besides 1: each program uses one or two of them
BIG = [32, 40]  # dims of large matmuls (2 * 32**3 FLOPs and up)
SYMBOLS = ["n", "m"]  # symbolic dims, each worth 1 to 3 in a program
LIMIT = 100.0  # operands larger in magnitude are scaled down to 1
POSITIVE = 0.25  # the least value a domain-restricted operand sees
INT_LIMIT = 10_000.0  # larger ints are no op's operands (they would overflow)
SLICE_END = 2**63 - 1  # a slice bound past either end of any axis
FLOAT = "float64"
NUMERIC = (FLOAT, "int64", "int32")
ANY = NUMERIC + ("bool",)


@dataclass
class Value:
    """An expr of the function with bounds on its elements."""

    expr: aj.Expr
    lo: float
    hi: float
    used: bool = False  # an operand of a later op

    @property
    def shape(self) -> tuple:
        return self.expr.type.shape

    @property
    def ndim(self) -> int:
        return self.expr.type.ndim

    @property
    def dtype(self) -> str:
        return self.expr.type.dtype

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


class Program:
    """A drawn program: the module, its float64 (and int64 index) inputs in
    param order, its symbolic dims' values, and a way to build it again."""

    def __init__(self, mod: aj.Module, inputs: list[np.ndarray], dims: dict[str, int],
                 rebuild: Callable[[], aj.Module]) -> None:
        self.mod, self.inputs, self.dims, self.rebuild = mod, inputs, dims, rebuild

    def __repr__(self) -> str:
        with np.printoptions(precision=17, threshold=10**6):
            inputs = ",\n".join(f"    {a!r}" for a in self.inputs)
        return f"Program(dims={self.dims}, inputs=[\n{inputs}]):\n{self.mod.script()}"


def broadcast(a: tuple, b: tuple) -> tuple | None:
    """NumPy broadcasting of two shapes of int or symbolic dims; None when
    the type rules would reject them."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def corners(f: Callable[[float, float], float], a: Value, b: Value) -> tuple[float, float]:
    """Bounds of f over two intervals, for f monotone in each argument."""
    vals = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return min(vals), max(vals)


def product(a: Value, b: Value) -> tuple[float, float]:
    return corners(lambda x, y: x * y, a, b)


class Gen:
    """The state of one program being drawn: the builder, the values so far
    (float and bool tensors), the params with their inputs, the dims."""

    def __init__(self, draw: Callable) -> None:
        self.draw = draw
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.env = {s: draw(st.integers(1, 3)) for s in SYMBOLS[: draw(st.integers(0, len(SYMBOLS)))]}
        # few distinct dims, so that shapes often match (square matmuls, reused values)
        self.palette = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=2, unique=True)) + [1]
        self.values: list[Value] = []
        self.tuples: list[aj.Expr] = []  # tuple-typed vars, for the returned tuple
        self.losses: list[aj.Expr] = []  # scalars the target adds, besides the unused values
        self.params: list[tuple[aj.Var, np.ndarray]] = []
        self.bound: set[str] = set()  # the symbols of the params' shapes
        self.calls: dict[aj.Var, tuple] = {}  # the op, args and attrs each var was emitted with

    # ---- dims and shapes ----

    def size(self, d) -> int:
        return d if isinstance(d, int) else aj.Dim(d).evaluate(self.env)

    def sizes(self, shape: tuple) -> tuple[int, ...]:
        return tuple(self.size(d) for d in shape)

    def dim(self, new: bool = False):
        """A constant dim or a symbol: one some param has (so the executor can
        bind it), or with `new` any symbol (for a new param)."""
        return self.draw(st.sampled_from(self.palette + sorted(self.env if new else self.bound)))

    def shape(self, lo: int = 0, hi: int = 3, new: bool = False) -> tuple:
        return tuple(self.dim(new) for _ in range(self.draw(st.integers(lo, hi))))

    def partner(self, shape: tuple, lead: bool = True) -> tuple:
        """A shape broadcasting with `shape`: its trailing dims, some set to 1,
        with a new leading dim when all are kept and `lead`."""
        keep = self.draw(st.integers(0, len(shape)))
        out = tuple(1 if self.draw(st.booleans()) else d for d in shape[len(shape) - keep:])
        if lead and keep == len(shape) and self.draw(st.booleans()):
            out = (self.dim(),) + out
        return out

    def axis(self, ndim: int) -> int:
        """An axis of a rank-ndim tensor, negative or not."""
        a = self.draw(st.integers(0, ndim - 1))
        return a - ndim if self.draw(st.booleans()) else a

    def axes(self, ndim: int, count: int | None = None) -> list[int]:
        """Distinct axes in any order: `count` of them, or from 1 to all."""
        lo, hi = (1, ndim) if count is None else (count, count)
        chosen = self.draw(st.lists(st.integers(0, ndim - 1), min_size=lo, max_size=hi, unique=True))
        return [a - ndim if self.draw(st.booleans()) else a for a in chosen]

    # ---- leaves ----

    def uniform(self, shape: tuple, positive: bool) -> np.ndarray:
        """Elements in [0.5, 2], or with either sign when not `positive`."""
        x = np.asarray(self.rng.uniform(0.5, 2.0, shape))
        return x if positive else x * self.rng.choice([-1.0, 1.0], shape)

    def array(self, shape: tuple, dtype: str, positive: bool) -> np.ndarray:
        """Random elements: floats as uniform(), ints in [-3, 3] (or [1, 3]), bools."""
        if dtype == FLOAT:
            return self.uniform(shape, positive)
        if dtype == "bool":
            return np.asarray(self.rng.random(shape) < 0.5)
        return np.asarray(self.rng.integers(1 if positive else -3, 4, shape), dtype=dtype)

    @staticmethod
    def range_of(dtype: str, positive: bool) -> tuple[float, float]:
        """The range array() draws from. Leaves take it as their bounds rather
        than their arrays' extremes: scaling by an extreme would put an element
        of an input exactly at 1, the kink of maximum(x, 1)."""
        if dtype == FLOAT:
            return (0.5, 2.0) if positive else (-2.0, 2.0)
        return (0.0, 1.0) if dtype == "bool" else (1.0, 3.0) if positive else (-3.0, 3.0)

    def leaf(self, shape: tuple, positive: bool = False, dtype: str = FLOAT) -> Value:
        """A new tensor of `shape`: a param (when its dims are constants or
        symbols), a constant (when they are constants) or a creation op (when
        the params bind its symbols)."""
        kinds = []
        if all(isinstance(d, int) or d in SYMBOLS for d in shape):
            kinds += ["param", "param"]
        if all(isinstance(d, int) for d in shape):
            kinds.append("constant")
        if all(isinstance(d, int) or set(aj.Dim(d).symbols) <= self.bound for d in shape):
            kinds.append("full")
        kind = self.draw(st.sampled_from(kinds))
        if kind == "param":
            array = self.array(self.sizes(shape), dtype, positive)
            return Value(self.param(shape, dtype, array), *self.range_of(dtype, positive))
        if kind == "constant":
            array = self.array(shape, dtype, positive)
            as_var = self.draw(st.booleans())
            expr = self.emit(aj.Constant(array)) if as_var else aj.Constant(array)
            return Value(expr, *self.range_of(dtype, positive))
        fill = self.draw(st.sampled_from([1.0, 0.5, 2.0] if positive else [1.0, -1.5, 0.0]))
        fill = float(int(fill)) if dtype.startswith("int") else float(fill != 0) if dtype == "bool" else fill
        if fill == 1.0:
            return Value(self.op("ones", shape, dtype), 1.0, 1.0)
        if fill == 0.0:
            return Value(self.op("zeros", shape, dtype), 0.0, 0.0)
        return Value(self.op("full", shape, fill, dtype), fill, fill)

    def param(self, shape: tuple, dtype: str, array: np.ndarray) -> aj.Var:
        var = self.bb.param(f"p{len(self.params)}", shape, dtype)
        self.params.append((var, array))
        self.bound.update(d for d in shape if isinstance(d, str))
        return var

    def indices(self, shape: tuple, array: np.ndarray) -> aj.Expr:
        """Int elements `array` as a tensor of `shape`: a constant, or an int64
        param when the shape is symbolic or by choice."""
        if all(isinstance(d, int) for d in shape) and self.draw(st.booleans()):
            return aj.Constant(array.astype(self.draw(st.sampled_from(["int64", "int32"]))))
        return self.param(shape, "int64", np.asarray(array, dtype=np.int64))

    def emit(self, expr: aj.Expr) -> aj.Var:
        return self.bb.emit(expr)

    def op(self, name: str, *args, **attrs) -> aj.Var:
        """Emits aj.op.<name>(*args, **attrs), recorded so that `repeat` can emit it again."""
        var = getattr(aj.op, name)(*args, **attrs)
        self.calls[var] = (name, args, attrs)
        return var

    # ---- operands ----

    def pick(self, ok: Callable[[Value], bool] = lambda v: True, dtypes: tuple = (FLOAT,)) -> Value | None:
        """An earlier value of one of `dtypes` satisfying ok (the latest shrink
        first, and half the time one of the last two), or None. Ints above
        INT_LIMIT are left alone: they cannot be scaled down."""
        options = [v for v in self.values
                   if v.dtype in dtypes and ok(v) and (v.dtype == FLOAT or v.bound <= INT_LIMIT)]
        if not options:
            return None
        recent = self.draw(st.booleans())  # one of the last two, to make long chains
        v = options[-1 - self.draw(st.integers(0, min(1, len(options) - 1) if recent else len(options) - 1))]
        v.used = True
        return v

    def operand(self, ok: Callable[[Value], bool] = lambda v: True, lo: int = 0, hi: int = 3,
                dtypes: tuple = (FLOAT,)) -> Value:
        """An earlier value of one of `dtypes` satisfying ok, or a float leaf of
        rank lo..hi (which must satisfy ok)."""
        v = self.pick(ok, dtypes) if self.draw(st.integers(0, 3)) else None
        return self.moderate(v if v is not None else self.leaf(self.shape(lo, hi, new=True)))

    def of_shape(self, shape: tuple, positive: bool = False, dtype: str = FLOAT) -> Value:
        """An earlier value of exactly `shape` and `dtype`, or a leaf of them."""
        v = self.pick(lambda v: v.shape == shape, (dtype,)) if self.draw(st.booleans()) else None
        v = self.moderate(v) if v is not None else self.leaf(shape, positive, dtype)
        return self.positive(v) if positive else v

    def moderate(self, v: Value) -> Value:
        """v, scaled down to magnitude 1 when it is float and may exceed LIMIT."""
        return self.scaled(v, 1.0) if v.bound > LIMIT and v.dtype == FLOAT else v

    def scaled(self, v: Value, limit: float) -> Value:
        """v, scaled down when its magnitude may exceed limit."""
        if v.bound <= limit:
            return v
        s = limit / v.bound
        return Value(self.op("multiply", v.expr, s), v.lo * s, v.hi * s)

    def positive(self, v: Value) -> Value:
        """v when it is at least POSITIVE, else exp of it scaled to [-1, 1]."""
        if v.lo >= POSITIVE and v.hi <= LIMIT:
            return v
        v = self.scaled(v, 1.0)
        return Value(self.op("exp", v.expr), math.exp(v.lo), math.exp(v.hi))

    def add(self, v: Value) -> Value:
        self.values.append(v)
        return v

    def rank4(self) -> Value:
        """An NCHW float value: an earlier one, a lower-rank one with unit dims
        added in front, or a leaf with spatial dims of 3 to 5."""
        how = self.draw(st.integers(0, 2))
        v = self.pick(lambda v: v.ndim == 4) if how == 0 else None
        if v is None and how == 1:
            low = self.pick(lambda v: 2 <= v.ndim <= 3)
            if low is not None:
                v = Value(self.op("expand_dims", low.expr, axis=list(range(4 - low.ndim))), low.lo, low.hi)
        if v is None:
            v = self.leaf((self.dim(new=True), self.draw(st.sampled_from([1, 2, 3])),
                           self.draw(st.sampled_from([3, 4, 5] + sorted(self.env))),
                           self.draw(st.sampled_from([4, 3, 5]))))
        return self.moderate(v)


# ---- op generators: each emits one op (or a few) into the Gen ----

def _monotone(f):
    return lambda lo, hi: (f(lo), f(hi))


# name: (what the operand must be: None, "small" (|x| <= 2) or "positive"; bounds of the result)
UNARY = {
    "negative": (None, lambda lo, hi: (-hi, -lo)),
    "exp": ("small", _monotone(math.exp)),
    "log": ("positive", _monotone(math.log)),
    "log1p": ("positive", _monotone(math.log1p)),
    "sqrt": ("positive", _monotone(math.sqrt)),
    "rsqrt": ("positive", lambda lo, hi: (1 / math.sqrt(hi), 1 / math.sqrt(lo))),
    "sin": (None, lambda lo, hi: (-1.0, 1.0)),
    "cos": (None, lambda lo, hi: (-1.0, 1.0)),
    "tanh": (None, _monotone(math.tanh)),
    "sigmoid": (None, lambda lo, hi: (0.0, 1.0)),
    "erf": (None, _monotone(math.erf)),
    "relu": (None, lambda lo, hi: (max(lo, 0.0), max(hi, 0.0))),
    "gelu": (None, lambda lo, hi: (-0.2 if lo < 0 else 0.0, max(hi, 0.0))),
    "silu": (None, lambda lo, hi: (-0.3 if lo < 0 else 0.0, max(hi, 0.0))),
    "abs": (None, lambda lo, hi: (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))),
    "square": (None, lambda lo, hi: (0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi), max(lo * lo, hi * hi))),
}


INT_UNARY = {"negative", "abs", "relu"}  # the unary ops that also take ints here


def unary(g: Gen, op: str) -> None:
    need, bounds = UNARY[op]
    x = g.operand(dtypes=NUMERIC if op in INT_UNARY else (FLOAT,))
    x = g.positive(x) if need == "positive" else g.scaled(x, 2.0) if need == "small" else x
    g.add(Value(g.op(op, x.expr), *bounds(x.lo, x.hi)))


def _divide(a: Value, b: Value) -> tuple[float, float]:
    return corners(lambda x, y: x / y, a, b)


# name: (bounds of the result, what the operands must be)
BINARY = {
    "add": (lambda a, b: (a.lo + b.lo, a.hi + b.hi), None),
    "subtract": (lambda a, b: (a.lo - b.hi, a.hi - b.lo), None),
    "multiply": (product, None),
    "divide": (_divide, "positive divisor"),
    "power": (lambda a, b: corners(lambda x, y: x**y, a, b), "positive base"),
    "maximum": (lambda a, b: (max(a.lo, b.lo), max(a.hi, b.hi)), None),
    "minimum": (lambda a, b: (min(a.lo, b.lo), min(a.hi, b.hi)), None),
}


INT_BINARY = {"add", "subtract", "maximum", "minimum"}  # the binary ops that also take ints here


def binary(g: Gen, op: str) -> None:
    """An arithmetic op of two broadcasting operands, one maybe a number."""
    bounds, need = BINARY[op]
    a = g.operand(dtypes=NUMERIC if op in INT_BINARY else (FLOAT,))
    how = g.draw(st.sampled_from(["value", "leaf", "number"]))
    b = g.pick(lambda v: broadcast(v.shape, a.shape) is not None, (a.dtype,)) if how == "value" else None
    if how == "number":
        number = g.draw(st.sampled_from([2.0, 0.5, -1.5] if a.dtype == FLOAT else [2.0, -1.0]))
        b = Value(aj.Constant(np.asarray(number, dtype=a.dtype)), number, number)
    elif b is None:
        b = g.leaf(g.partner(a.shape), dtype=a.dtype)
    b = g.moderate(b)
    if g.draw(st.booleans()):
        a, b = b, a
    if need == "positive divisor":
        b = g.positive(b)
    if need == "positive base":
        a, b = g.positive(a), g.scaled(b, 2.0)
    g.add(Value(g.op(op, a.expr, b.expr), *bounds(a, b)))


def int_divide(g: Gen) -> None:
    """divide of ints or bools, which gives float64 (np.divide's answer): a
    float value no float operand leads to. The divisor is nonzero: ints in
    [1, 3], 2 or -1, or True."""
    dtype = g.draw(st.sampled_from(["int32", "int64", "bool"]))
    a = g.pick(dtypes=(dtype,)) if g.draw(st.booleans()) else None
    a = a if a is not None else g.leaf(g.shape(new=True), dtype=dtype)
    shape = g.partner(a.shape)
    if dtype != "bool" and all(isinstance(d, int) or d in SYMBOLS for d in shape) and g.draw(st.booleans()):
        b = Value(g.param(shape, dtype, g.array(g.sizes(shape), dtype, positive=True)), 1.0, 3.0)
    else:
        number = True if dtype == "bool" else g.draw(st.sampled_from([2, -1]))
        b = Value(aj.Constant(np.asarray(number, dtype=dtype)), float(number), float(number))
    g.add(Value(g.op("divide", a.expr, b.expr), *_divide(a, b)))


def compare(g: Gen, op: str) -> None:
    """A bool comparison of two broadcasting values."""
    a = g.operand(dtypes=NUMERIC)
    b = g.of_shape(g.partner(a.shape), dtype=a.dtype)
    g.add(Value(g.op(op, a.expr, b.expr), 0.0, 1.0))


def transposed(g: Gen, x: Value) -> Value:
    """x with its last two axes swapped."""
    n = x.ndim
    axes = None if n == 2 and g.draw(st.booleans()) else list(range(n - 2)) + [n - 1, n - 2]
    return Value(g.op("permute_dims", x.expr, axes=axes), x.lo, x.hi)


def matmul(g: Gen) -> None:
    """matmul of 1-D, 2-D or batched operands; the second one often given as
    the transpose of a value, as Gradient and SimplifyGradient see them.
    Some are large enough for SimplifyGradient's matmul_of_broadcast_scalar."""
    if g.draw(st.integers(0, 5)):
        a, n = g.operand(lambda v: v.ndim >= 1, lo=1), g.dim()
    else:
        a, n = g.leaf((g.draw(st.sampled_from(BIG)), g.draw(st.sampled_from(BIG)))), g.draw(st.sampled_from(BIG))
    if a.ndim >= 2 and g.draw(st.integers(0, 2)) == 0:
        a = transposed(g, a)
    k = a.shape[-1]
    rank = g.draw(st.sampled_from([2, 1, 3]))
    if rank == 1:
        want = (k,)
    else:
        batch = g.partner(a.shape[:-2]) if a.ndim > 2 else g.shape(0, rank - 2)
        want = batch + (k, n)
    if len(want) >= 2 and g.draw(st.booleans()):
        b = transposed(g, g.of_shape(want[:-2] + (want[-1], want[-2])))
    else:
        b = g.of_shape(want)
    lo, hi = product(a, b)
    count = g.size(k)
    attrs = {"out_dtype": FLOAT} if g.draw(st.integers(0, 4)) == 0 else {}
    g.add(Value(g.op("matmul", a.expr, b.expr, **attrs), count * lo, count * hi))


def seeded_matmul(g: Gen) -> None:
    """A matmul of 2 * 32**3 FLOPs or more whose sum or mean the target adds,
    so that Gradient's seed reaches it as a broadcast scalar (which
    SimplifyGradient turns into sums); batched, its operands each a value,
    a transposed value or a broadcast scalar."""
    m, k, n = (g.draw(st.sampled_from(BIG)) for _ in range(3))
    batch = g.shape(0, 1)

    def operand(shape: tuple) -> Value:
        how = g.draw(st.sampled_from(["value", "transposed", "broadcast"]))
        if how == "broadcast":
            s = g.leaf((1,) * g.draw(st.integers(0, len(shape))))
            return Value(g.op("broadcast_to", s.expr, shape), s.lo, s.hi)
        if how == "transposed":
            return transposed(g, g.leaf(shape[:-2] + (shape[-1], shape[-2])))
        return g.leaf(shape)

    a = operand(g.partner(batch, lead=False) + (m, k))
    b = operand(g.partner(batch, lead=False) + (k, n))
    mm = g.op("matmul", a.expr, b.expr)
    g.losses.append(g.op(g.draw(st.sampled_from(["sum", "mean"])), mm))


ACTIVATIONS = ["relu", "gelu", "silu"]


def parallel_matmuls(g: Gen) -> None:
    """Two or three matmuls sharing an operand, as CombineParallelMatmul sees
    them: x @ w_i on one LHS (the w_i maybe transposed values, batched
    alike), or a_i @ w on one RHS; each branch maybe followed by a bias add
    (its own bias, one shared bias or a scalar, on either side) and an
    activation, on every branch or not."""
    if g.draw(st.booleans()):
        x = g.operand(lambda v: v.ndim >= 1, lo=1)
        batch = g.partner(x.shape[:-2]) if x.ndim > 2 else g.shape(0, 1)
        k = x.shape[-1]
        operands = []
        for _ in range(g.draw(st.integers(2, 3))):
            n = g.dim()
            w = transposed(g, g.of_shape(batch + (n, k))) if g.draw(st.booleans()) else g.of_shape(batch + (k, n))
            operands.append((x, w))
    else:
        w = g.operand(lambda v: v.ndim >= 1, lo=1)
        k = w.shape[-2] if w.ndim >= 2 else w.shape[0]
        operands = [(g.of_shape((g.dim(), k)), w) for _ in range(g.draw(st.integers(2, 3)))]
    # a bias the same for every branch: its width when the branches share it (rows of one RHS), else 1
    one_width = operands[0][1].ndim >= 2 and all(b is operands[0][1] for _, b in operands)
    bias = g.draw(st.sampled_from([None, "own", "shared", "scalar"]))
    act = g.draw(st.sampled_from([None, "same", "each"]))
    shared_bias = None
    for a, b in operands:
        lo, hi = product(a, b)
        count = g.size(k)
        y = Value(g.op("matmul", a.expr, b.expr), count * lo, count * hi)
        if bias is not None and g.draw(st.integers(0, 5)):  # now and then a branch without one
            if bias == "scalar":
                c = Value(aj.Constant(np.asarray(1.5)), 1.5, 1.5)
            elif bias == "shared":
                shared_bias = shared_bias or g.of_shape(y.shape[-1:] if one_width else (1,))
                c = shared_bias
            else:
                c = g.of_shape(y.shape[-1:])
            args = (y.expr, c.expr) if g.draw(st.booleans()) else (c.expr, y.expr)
            y = Value(g.op("add", *args), y.lo + c.lo, y.hi + c.hi)
        if act is not None:
            op = ACTIVATIONS[0] if act == "same" else g.draw(st.sampled_from(ACTIVATIONS))
            y = Value(g.op(op, y.expr), *UNARY[op][1](y.lo, y.hi))
        g.add(y)


def low_rank_update(g: Gen) -> None:
    """A full-rank term W plus a low-rank one applied to x, as
    ReassociateMatmul sees it: factored, (W + B@A) @ x or x @ (W + A@B), or
    expanded, W@x + B@(A@x) (the low-rank term bracketed either way); the
    add's operands in either order; x 1-D, 2-D or batched; the factors
    weights or inputs as num_input falls."""
    m, n, r = g.dim(), g.dim(), g.dim()
    left = g.draw(st.booleans())
    rank = g.draw(st.sampled_from([2, 1, 3]))
    other = g.dim()
    x_shape = {1: (n,), 2: (n, other), 3: (g.dim(), n, other)}[rank] if left else \
        {1: (m,), 2: (other, m), 3: (g.dim(), other, m)}[rank]
    x = g.of_shape(x_shape)
    w = g.of_shape((m, n))
    b, a = (g.of_shape((m, r)), g.of_shape((r, n))) if left else (g.of_shape((r, n)), g.of_shape((m, r)))

    def mm(p: Value, q: Value, count) -> Value:
        lo, hi = product(p, q)
        return Value(g.op("matmul", p.expr, q.expr), g.size(count) * lo, g.size(count) * hi)

    def plus(p: Value, q: Value) -> Value:
        p, q = (p, q) if g.draw(st.booleans()) else (q, p)
        return Value(g.op("add", p.expr, q.expr), p.lo + q.lo, p.hi + q.hi)

    inner = n if left else m
    if g.draw(st.booleans()):  # factored
        s = plus(w, mm(b, a, r) if left else mm(a, b, r))
        g.add(mm(s, x, inner) if left else mm(x, s, inner))
    elif left:
        term = mm(b, mm(a, x, n), r) if g.draw(st.booleans()) else mm(mm(b, a, r), x, n)
        g.add(plus(mm(w, x, n), term))
    else:
        term = mm(mm(x, a, m), b, r) if g.draw(st.booleans()) else mm(x, mm(a, b, r), m)
        g.add(plus(mm(x, w, m), term))


def permute_dims(g: Gen) -> None:
    x = g.operand(lambda v: v.ndim >= 2, lo=2, dtypes=ANY)
    n = x.ndim
    how = g.draw(st.sampled_from(["swap", "reverse", "any"]))
    if how == "reverse":
        axes = None
    elif how == "swap":
        axes = list(range(n - 2)) + [n - 1, n - 2]
    else:
        axes = [a - n if g.draw(st.booleans()) else a for a in g.draw(st.permutations(range(n)))]
    g.add(Value(g.op("permute_dims", x.expr, axes=axes), x.lo, x.hi))


def reshape(g: Gen) -> None:
    """Flatten, merge two adjacent dims, split a constant dim, or add a unit dim."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=ANY)
    shape = list(x.shape)
    how = g.draw(st.sampled_from(["flatten", "merge", "split", "unit"]))
    if how == "merge" and len(shape) >= 2:
        i = g.draw(st.integers(0, len(shape) - 2))
        merged = aj.Dim(shape[i]) * shape[i + 1]
        merged = merged.value if merged.is_const else str(merged)
        target = shape[:i] + [g.draw(st.sampled_from([-1, merged]))] + shape[i + 2:]
    elif how == "split" and any(d in (4, 2) for d in shape):
        i = shape.index(g.draw(st.sampled_from([d for d in shape if d in (4, 2)])))
        target = shape[:i] + [2, shape[i] // 2] + shape[i + 1:]
    elif how == "unit":
        i = g.draw(st.integers(0, len(shape)))
        target = shape[:i] + [1] + shape[i:]
    else:
        target = [-1]
    g.add(Value(g.op("reshape", x.expr, tuple(target)), x.lo, x.hi))


def expand_dims(g: Gen) -> None:
    x = g.operand(dtypes=ANY)
    count = g.draw(st.integers(1, 2))
    g.add(Value(g.op("expand_dims", x.expr, axis=g.axes(x.ndim + count, count)), x.lo, x.hi))


def squeeze(g: Gen) -> None:
    x = g.pick(lambda v: 1 in v.shape, ANY) if g.draw(st.booleans()) else None
    if x is None:
        x = g.leaf(g.shape(0, 2) + (1,) + g.shape(0, 1))
    units = [i for i, d in enumerate(x.shape) if d == 1]
    axis = None if g.draw(st.booleans()) else g.draw(st.lists(st.sampled_from(units), min_size=1, unique=True))
    g.add(Value(g.op("squeeze", x.expr, axis=axis), x.lo, x.hi))


def broadcast_to(g: Gen) -> None:
    """To a shape with unit dims widened and maybe a leading dim (or the same shape)."""
    x = g.operand(dtypes=ANY)
    target = tuple(g.dim() if d == 1 else d for d in x.shape)
    target = g.shape(0, 1) + target
    g.add(Value(g.op("broadcast_to", x.expr, target), x.lo, x.hi))


def collapse_sum_to(g: Gen) -> None:
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=NUMERIC)
    target = g.partner(x.shape, lead=False)
    count = math.prod(g.sizes(x.shape)) // math.prod(g.sizes(target))
    g.add(Value(g.op("collapse_sum_to", x.expr, target), count * x.lo, count * x.hi))


def reduce(g: Gen, op: str) -> None:
    """A reduction over all axes or some, keeping them or not."""
    x = g.operand(dtypes=NUMERIC if op in ("sum", "max", "min") else (FLOAT,))
    axis = None if x.ndim == 0 or g.draw(st.booleans()) else g.axes(x.ndim)
    keepdims = g.draw(st.booleans())
    sizes = g.sizes(x.shape)
    count = math.prod(sizes if axis is None else [sizes[a] for a in axis])
    lo, hi = {"sum": (count * x.lo, count * x.hi), "variance": (0.0, (x.hi - x.lo) ** 2 / 4)}.get(op, (x.lo, x.hi))
    g.add(Value(g.op(op, x.expr, axis=axis, keepdims=keepdims), lo, hi))


def concat(g: Gen) -> None:
    """Two or three tensors, the same one maybe twice, as a tuple var or inline."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=ANY)
    axis = g.axis(x.ndim)
    parts = [x]
    for _ in range(g.draw(st.integers(1, 2))):
        if g.draw(st.booleans()):
            parts.append(x)
        else:
            shape = list(x.shape)
            shape[axis] = g.dim()
            parts.append(g.of_shape(tuple(shape), dtype=x.dtype))
    fields = [p.expr for p in parts]
    tup = g.emit(aj.Tuple(fields)) if g.draw(st.booleans()) else fields
    g.add(Value(g.op("concat", tup, axis=axis), min(p.lo for p in parts), max(p.hi for p in parts)))


def split(g: Gen) -> None:
    """Into equal sections or at indices, keeping some of the parts."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=ANY)
    axis = g.axis(x.ndim)
    length = g.size(x.shape[axis])
    sections = [s for s in (1, 2, 3) if isinstance(x.shape[axis], int) and length % s == 0]
    if length >= 2 and g.draw(st.booleans()):
        spec = sorted(g.draw(st.lists(st.integers(1, length - 1), min_size=1, max_size=2, unique=True)))
    else:
        spec = g.draw(st.sampled_from(sections or [1]))
    parts = g.op("split", x.expr, spec, axis=axis)
    g.tuples.append(parts)
    count = len(parts.type.fields)
    for i in g.draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True)):
        g.add(Value(parts[i], x.lo, x.hi))


def tuple_item(g: Gen) -> None:
    """A field of a tuple of two or three earlier values (inputs and weights
    mixed): the tuple written inline ((a, b)[0]), nested inline in another
    (((a, b), c)[0][1]), or bound to a var first (t = (a, b); t[1])."""
    values = [g.operand(dtypes=ANY) for _ in range(g.draw(st.integers(2, 3)))]
    i = g.draw(st.integers(0, len(values) - 1))
    tup = aj.Tuple([v.expr for v in values])
    how = g.draw(st.sampled_from(["inline", "nested", "var"]))
    if how == "nested":
        tup = aj.Tuple([tup, g.operand(dtypes=ANY).expr])[0]
    elif how == "var":
        tup = g.emit(tup)
    g.add(Value(tup[i], values[i].lo, values[i].hi))


def strided_slice(g: Gen) -> None:
    """Python slices along some axes: bounds negative or past the end,
    strides negative too, never empty; a symbolic axis whole (forwards or
    backwards)."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=ANY)
    axes = g.axes(x.ndim)
    begin, end, strides = [], [], []
    for a in axes:
        d = x.shape[a]
        if not isinstance(d, int):
            forwards = g.draw(st.booleans())
            begin.append(0 if forwards else SLICE_END)
            end.append(SLICE_END if forwards else -SLICE_END)
            strides.append(1 if forwards else -1)
            continue
        step = g.draw(st.sampled_from([1, 2, 3, -1, -2]))
        start = g.draw(st.integers(0, d - 1))
        most = (d - 1 - start) // step + 1 if step > 0 else start // -step + 1
        stop = start + g.draw(st.integers(1, most)) * step
        begin.append(start - d if g.draw(st.booleans()) else start)
        end.append(-SLICE_END if stop < 0 else stop)
        strides.append(step)
    g.add(Value(g.op("strided_slice", x.expr, axes, begin, end, strides), x.lo, x.hi))


def take(g: Gen) -> None:
    """Indices of rank 0 to 2, negative ones too."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=ANY)
    axis = g.axis(x.ndim)
    length = g.size(x.shape[axis])
    shape = g.shape(0, 2)
    idx = g.indices(shape, np.asarray(g.rng.integers(-length, length, g.sizes(shape))))
    g.add(Value(g.op("take", x.expr, idx, axis=axis), x.lo, x.hi))


def where(g: Gen) -> None:
    """where(cond, a, b), cond a comparison or a bool constant, all three broadcasting."""
    a = g.operand(dtypes=ANY)
    cond = g.pick(lambda v: broadcast(v.shape, a.shape) is not None, ("bool",))
    if cond is None:
        shape = g.partner(a.shape)
        if all(isinstance(d, int) for d in shape) and g.draw(st.booleans()):
            cond = Value(aj.Constant(g.rng.random(shape) < 0.5), 0.0, 1.0)
        else:
            compare_to = g.of_shape(g.partner(shape, lead=False))
            cond = Value(g.op("greater", g.of_shape(shape).expr, compare_to.expr), 0.0, 1.0)
    joint = broadcast(cond.shape, a.shape)
    b = g.pick(lambda v: broadcast(v.shape, joint) is not None, (a.dtype,)) if g.draw(st.booleans()) else None
    b = g.moderate(b) if b is not None else g.leaf(g.partner(joint), dtype=a.dtype)
    args = (a, b) if g.draw(st.booleans()) else (b, a)
    g.add(Value(g.op("where", cond.expr, args[0].expr, args[1].expr), min(a.lo, b.lo), max(a.hi, b.hi)))


def astype(g: Gen) -> None:
    """Between float64, ints and bool (no gradient through non-floats), maybe
    back to float64."""
    x = g.operand(dtypes=ANY)
    dtype = g.draw(st.sampled_from([d for d in ANY if d != x.dtype] + [x.dtype]))
    if dtype == "bool":
        lo, hi = 0.0, 1.0
    elif dtype != FLOAT:
        lo, hi = float(math.trunc(x.lo)), float(math.trunc(x.hi))
    else:
        lo, hi = x.lo, x.hi
    y = g.add(Value(g.op("astype", x.expr, dtype), lo, hi))
    if dtype != FLOAT and g.draw(st.booleans()):
        g.add(Value(g.op("astype", y.expr, FLOAT), lo, hi))


def cumsum(g: Gen) -> None:
    x = g.operand(lambda v: v.ndim >= 1, lo=1, dtypes=NUMERIC)
    axis = g.axis(x.ndim)
    n = g.size(x.shape[axis])
    g.add(Value(g.op("cumsum", x.expr, axis=axis), min(x.lo, n * x.lo), max(x.hi, n * x.hi)))


def triu(g: Gen) -> None:
    x = g.operand(lambda v: v.ndim >= 2, lo=2, dtypes=ANY)
    g.add(Value(g.op("triu", x.expr, k=g.draw(st.integers(-1, 1))), min(x.lo, 0.0), max(x.hi, 0.0)))


def softmax(g: Gen, op: str) -> None:
    x = g.operand(lambda v: v.ndim >= 1, lo=1)
    axis = g.axis(x.ndim)
    if op == "softmax":
        g.add(Value(g.op("softmax", x.expr, axis=axis), 0.0, 1.0))
    else:
        n = g.size(x.shape[axis])
        g.add(Value(g.op("log_softmax", x.expr, axis=axis), -(x.hi - x.lo) - math.log(n), 0.0))


def layer_norm(g: Gen) -> None:
    """Over any axes, in any order; gamma and beta have x's dims at the axes."""
    x = g.operand(lambda v: v.ndim >= 1, lo=1)
    axes = g.axes(x.ndim)
    pshape = tuple(x.shape[a] for a in axes)
    gamma, beta = g.of_shape(pshape), g.of_shape(pshape)
    n = math.prod(g.sizes(pshape))
    z = Value(x.expr, -math.sqrt(n), math.sqrt(n))
    lo, hi = product(z, gamma)
    eps = g.draw(st.sampled_from([1e-5, 0.1]))
    y = g.op("layer_norm", x.expr, gamma.expr, beta.expr, axes=axes, epsilon=eps)
    g.add(Value(y, lo + beta.lo, hi + beta.hi))


def cross_entropy(g: Gen) -> None:
    logits = g.operand(lambda v: v.ndim in (1, 2), lo=1, hi=2)
    labels = g.of_shape(logits.shape)
    c = g.size(logits.shape[-1])
    bound = c * labels.bound * (logits.hi - logits.lo + math.log(c))
    g.add(Value(g.op("cross_entropy_with_logits", logits.expr, labels.expr), -bound, bound))


def nll_loss(g: Gen) -> None:
    """Int targets in [0, C), some maybe ignore_index 0 (never all of them)."""
    pred = g.operand(lambda v: v.ndim in (1, 2), lo=1, hi=2)
    c = g.size(pred.shape[-1])
    reduction = g.draw(st.sampled_from(["mean", "sum", "none"]))
    ignore = g.draw(st.sampled_from([-100, 0])) if c > 1 else -100
    array = np.asarray(g.rng.integers(0, c, g.sizes(pred.shape[:-1])))
    array.reshape(-1)[0] = max(array.reshape(-1)[0], 1) if c > 1 else 0
    targets = g.indices(pred.shape[:-1], array)
    rows = math.prod(g.sizes(pred.shape[:-1]))
    lo, hi = (-pred.hi, -pred.lo) if reduction != "sum" else (-rows * pred.hi, -rows * pred.lo)
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    g.add(Value(g.op("nll_loss", pred.expr, targets, reduction=reduction, ignore_index=ignore), lo, hi))


def _window(g: Gen, dim, k: int, pad: tuple[int, int], dilate: bool, ceil_mode: bool = False):
    """(stride, dilation) for a spatial dim with kernel k and padding (low,
    high) giving at least one window, each with an in-bounds tap; None when
    there is none. Symbolic dims take stride 1 (the type rules need it)."""
    length = g.size(dim)
    stride = 1 if not isinstance(dim, int) else g.draw(st.integers(1, 2))
    dilation = g.draw(st.integers(1, 2)) if dilate else 1
    span = length + pad[0] + pad[1] - dilation * (k - 1) - 1
    if span < 0:
        return None
    steps = -(-span // stride) if ceil_mode else span // stride
    if ceil_mode and steps * stride >= length + pad[0]:
        steps -= 1  # no window starts in the high padding (PyTorch's rule)
    for o in range(steps + 1):
        if not any(0 <= o * stride - pad[0] + j * dilation < length for j in range(k)):
            return None
    return stride, dilation


def conv2d(g: Gen) -> None:
    """NCHW data, OIHW weights, with strides, padding (1, 2 or 4 ints), dilation and groups."""
    x = g.rank4()
    channels = x.shape[1]
    divisors = [d for d in (1, 2, 3) if isinstance(channels, int) and channels % d == 0]
    groups = g.draw(st.sampled_from(divisors or [1]))
    kh, kw = g.draw(st.integers(1, 3)), g.draw(st.integers(1, 3))
    top, left, bottom, right = (g.draw(st.integers(0, 1)) for _ in range(4))
    hw = [_window(g, x.shape[2], kh, (top, bottom), True), _window(g, x.shape[3], kw, (left, right), True)]
    if None in hw:
        kh = kw = 1
        top = left = bottom = right = 0
        hw = [(1, 1), (1, 1)]
    padding = [top] if top == left == bottom == right else [top, left] if (top, left) == (bottom, right) \
        else [top, left, bottom, right]
    cin = channels if groups == 1 else channels // groups
    w = g.of_shape((groups * g.draw(st.integers(1, 2)), cin, kh, kw))
    lo, hi = product(x, w)
    taps = g.size(cin) * kh * kw
    y = g.op("conv2d", x.expr, w.expr, strides=[hw[0][0], hw[1][0]], padding=padding,
             dilation=[hw[0][1], hw[1][1]], groups=groups)
    g.add(Value(y, taps * min(lo, 0.0), taps * max(hi, 0.0)))


def pool2d(g: Gen, op: str) -> None:
    """max_pool2d (with dilation) or avg_pool2d, padding at most half the
    window (as PyTorch), ceil_mode on constant dims."""
    x = g.rank4()
    k = g.draw(st.integers(1, 3))
    pad = g.draw(st.integers(0, k // 2))
    ceil_mode = all(isinstance(d, int) for d in x.shape[2:]) and g.draw(st.booleans())
    dilate = op == "max_pool2d"
    hw = [_window(g, d, k, (pad, pad), dilate, ceil_mode) for d in x.shape[2:]]
    if None in hw:
        k, pad, ceil_mode, hw = 1, 0, False, [(1, 1), (1, 1)]
    attrs = dict(pool_size=[k], strides=[hw[0][0], hw[1][0]], padding=[pad], ceil_mode=ceil_mode)
    lo, hi = x.lo, x.hi
    if dilate:
        attrs["dilation"] = [hw[0][1], hw[1][1]]
    else:
        attrs["count_include_pad"] = g.draw(st.booleans())
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    g.add(Value(g.op(op, x.expr, **attrs), lo, hi))


def create(g: Gen, op: str) -> None:
    """zeros/ones/full of a shape, or the _like ops of a value."""
    fill = g.draw(st.sampled_from([1.5, -0.5]))
    value = {"ones": 1.0, "zeros": 0.0}.get(op.removesuffix("_like"), fill)
    extra = {"fill_value": fill} if op.startswith("full") else {}
    if op.endswith("_like"):
        g.add(Value(g.op(op, g.operand().expr, **extra), value, value))
    else:
        g.add(Value(g.op(op, g.shape(), **extra, dtype=FLOAT), value, value))


def repeat(g: Gen) -> None:
    """An earlier op emitted again, with the same args and attrs (CSE merges the two)."""
    v = g.pick(lambda v: v.expr in g.calls, ANY)
    if v is not None:
        name, args, attrs = g.calls[v.expr]
        g.add(Value(g.op(name, *args, **attrs), v.lo, v.hi))


def family(generator: Callable, ops) -> dict[str, Callable[[Gen], None]]:
    return {op: partial(generator, op=op) for op in ops}


# The generator of each op; a step draws one (the first ones shrink first).
OPS: dict[str, Callable[[Gen], None]] = {
    **family(binary, BINARY),
    **family(unary, UNARY),
    "matmul": matmul,
    "seeded_matmul": seeded_matmul,
    "parallel_matmuls": parallel_matmuls,
    "low_rank_update": low_rank_update,
    **family(reduce, ["sum", "mean", "max", "min", "variance"]),
    "permute_dims": permute_dims,
    "reshape": reshape,
    "broadcast_to": broadcast_to,
    "collapse_sum_to": collapse_sum_to,
    "expand_dims": expand_dims,
    "squeeze": squeeze,
    "concat": concat,
    "split": split,
    "tuple_item": tuple_item,
    "take": take,
    "strided_slice": strided_slice,
    **family(compare, ["less", "greater", "equal", "not_equal", "less_equal", "greater_equal"]),
    "where": where,
    "astype": astype,
    "cumsum": cumsum,
    "triu": triu,
    **family(softmax, ["softmax", "log_softmax"]),
    "layer_norm": layer_norm,
    "cross_entropy_with_logits": cross_entropy,
    "nll_loss": nll_loss,
    "conv2d": conv2d,
    **family(pool2d, ["max_pool2d", "avg_pool2d"]),
    **family(create, ["ones", "zeros", "full", "ones_like", "zeros_like", "full_like"]),
    "repeat": repeat,
}


# How often a step draws each op, relative to the others' 2: more often the
# ones the passes rewrite (SimplifyGradient works on matmuls and transposes,
# CombineParallelMatmul on parallel matmuls, ReassociateMatmul on low-rank
# updates and matmul chains, CSE on repeats, LiftTransformParams reads through
# tuple items), less often the creation ops (their results hold no gradient).
WEIGHTS = {"matmul": 24, "parallel_matmuls": 6, "low_rank_update": 4, "permute_dims": 12, "broadcast_to": 4, "reshape": 4, "sum": 4,
           "mean": 4, "ones": 1, "zeros": 1, "full": 1, "ones_like": 1, "zeros_like": 1, "full_like": 1, "repeat": 6,
           "tuple_item": 6}
STEPS = [op for op in OPS for _ in range(WEIGHTS.get(op, 2))]
# Ops only some properties draw, each with its weight: programs(int_divides=True).
INT_DIVIDES = {"int_divide": int_divide}
INT_DIVIDE_STEPS = ["int_divide"] * 12


def target(g: Gen) -> aj.Expr:
    """A float64 scalar that every value no op used feeds (so that Gradient
    goes through every op): the sum of their sums, means or weighted sums,
    and of the losses."""
    terms = [v for v in g.values if not v.used]
    if not terms and not g.losses:
        terms = [g.leaf(g.shape(new=True))]
    scalars = list(g.losses)
    for v in terms:
        if v.dtype != FLOAT:
            v = Value(g.op("astype", v.expr, FLOAT), v.lo, v.hi)
        how = g.draw(st.sampled_from(["sum", "mean", "weighted"]))
        if how == "weighted" and all(isinstance(d, int) for d in v.shape):
            scalars.append(g.op("sum", g.op("multiply", v.expr, aj.Constant(g.uniform(v.shape, positive=False)))))
        elif v.ndim == 0 and how == "sum" and isinstance(v.expr, aj.Var):
            scalars.append(v.expr)
        else:
            scalars.append(g.op("mean" if how == "mean" else "sum", v.expr))
    loss = scalars[0]
    for s in scalars[1:]:
        loss = g.op("add", loss, s)
    return loss


def generate(draw: Callable, int_divides: bool = False) -> tuple[aj.Module, Gen]:
    g = Gen(draw)
    ops, steps = ({**OPS, **INT_DIVIDES}, STEPS + INT_DIVIDE_STEPS) if int_divides else (OPS, STEPS)
    with aj.FunctionBuilder("main") as g.bb:
        for _ in range(draw(st.integers(1, 2))):
            g.add(g.leaf(g.shape(new=True)))
        for _ in range(draw(st.integers(1, 20))):
            ops[draw(st.sampled_from(steps))](g)
        loss = target(g)
        extras = [g.values[-1 - draw(st.integers(0, len(g.values) - 1))].expr
                  for _ in range(draw(st.integers(0, 2)) if g.values else 0)]
        if g.tuples and draw(st.booleans()):
            extras.append(g.tuples[-1])
        mod = g.bb.finish(aj.Tuple([loss, *extras]) if extras else loss)
    num_input = draw(st.one_of(st.none(), st.integers(0, len(g.params))))
    if num_input is not None:
        mod = aj.Module({"main": mod["main"].with_attr("num_input", num_input)})
    return mod, g


@st.composite
def programs(draw, int_divides: bool = False) -> Program:
    """A random Program (see the top of this file); with int_divides, some of
    its steps divide ints or bools (float64 results from int operands)."""
    record = []

    def recording(strategy):
        record.append(draw(strategy))
        return record[-1]

    mod, g = generate(recording, int_divides)

    def rebuild() -> aj.Module:
        replay = iter(record)
        return generate(lambda strategy: next(replay), int_divides)[0]

    return Program(mod, [a for _, a in g.params], dict(g.env), rebuild)
