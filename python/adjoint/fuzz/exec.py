"""Fuzz target ``exec``: small valid programs (elementwise, matmuls,
reductions, reshapes, tuples, symbolic dims, conv2d and pools, take and
nll_loss with int inputs, a gradient), each called with arguments that are
wrong or odd in every way: shape, rank, 0-size and huge (zero-stride) dims,
negative strides, slices, Fortran order, unaligned memory, big-endian and
every other NumPy dtype, Python scalars, lists and objects, argument count,
keyword arguments, read-only memory, NaN and inf, inconsistent symbols.

Each argument is made by a line of Python (``HELPERS`` defines the helpers
it uses), so a finding is saved as a script that re-creates the call.

The oracle mirrors the executable's contract: an argument is valid when it is
an ndarray of the param's dtype (any layout or byte order) or something
NumPy converts to one, and the shapes fit the params with consistent
symbols. A valid call must return results of the declared types, equal to
the results for C-contiguous copies of the arguments and, for programs with
a NumPy reference, to the reference; an invalid one must raise
``aj.ExecutionError`` (or ``aj.OutOfMemoryError``). The arguments must be
left as they were.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import adjoint as aj
from adjoint._casts import param_array
from adjoint.fuzz.runner import Finding, error_label

LABELS = ["ok", "ok, checked against NumPy"]
REACHED = ["valid calls", "invalid calls", "compared to contiguous copies", "checked against NumPy"]

HELPERS = '''\
import numpy as np
from numpy.lib.stride_tricks import as_strided


def rand(seed, shape, dtype, low=-5, high=5):
    """Random data: normal floats, ints in [low, high) or bools; an array
    for every shape (for shape () NumPy gives a scalar, which the input
    variants below cannot view as a buffer)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if np.dtype(dtype).kind in "iu":
        return np.asarray(rng.integers(low, high, shape).astype(dtype))
    return np.asarray(rng.standard_normal(shape).astype(dtype))


def readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def unaligned(a):
    """a's values in memory one byte past an aligned address."""
    if a.dtype.hasobject:
        return a.copy()
    u = np.frombuffer(bytearray(a.nbytes + 1), dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    u[...] = a
    return u


def reversed_view(a):
    """a's values seen through negative strides."""
    rev = (slice(None, None, -1),) * a.ndim
    return np.ascontiguousarray(a[rev])[rev]


def every_other(a):
    """a's values seen through a step-2 slice of a bigger array."""
    if a.ndim == 0:
        return a
    b = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    b[..., ::2] = a
    return b[..., ::2]


def big_endian(a):
    return a.astype(a.dtype.newbyteorder(">"))


def broadcast_first(a):
    """a's first element everywhere, through zero strides (read-only)."""
    if a.size == 0 or a.ndim == 0:
        return a
    return np.broadcast_to(a.reshape(-1)[:1].reshape((1,) * a.ndim), a.shape)


def convert_to(a, kind):
    """a as another kind of object (where it can be): a list, a tuple, a
    memoryview, an np.matrix, a masked array, an ArrayLike, a scalar."""
    try:
        if kind == "list":
            return a.tolist()
        if kind == "tuple":
            return tuple(a.tolist()) if a.ndim else a.tolist()
        if kind == "memoryview":
            return memoryview(np.ascontiguousarray(a))
        if kind == "matrix":
            return np.asmatrix(a)
        if kind == "masked":
            return np.ma.masked_array(a)
        if kind == "array_like":
            return ArrayLike(a)
        if kind == "item":
            return a.item()
        if kind == "scalar":
            return a[()]
    except Exception:  # this kind cannot hold a (a memoryview of datetimes, a 3-D matrix): left as it is
        pass
    return a


def zero_strides(value, shape, dtype):
    """A big logical array in one element of memory."""
    return as_strided(np.array([value], dtype), shape=shape, strides=(0,) * len(shape))


def bool_bytes(a, byte):
    """A bool array whose True elements hold the byte `byte`, not 1."""
    try:
        return (np.asarray(a).astype(bool).astype(np.uint8) * np.uint8(byte)).view(np.bool_)
    except (TypeError, ValueError):
        return a


def as_dtype(a, dtype):
    """a cast to dtype, or zeros of dtype where NumPy cannot cast."""
    try:
        return a.astype(dtype)
    except Exception:  # NumPy refuses some casts with a RuntimeError (datetime64 -> S8) or others
        return np.zeros(a.shape, dtype)


def with_specials(a, seed):
    """a with some elements NaN, inf, -inf, -0.0, the largest or the tiniest."""
    a = np.array(a)
    if a.size and a.dtype.kind == "f":
        rng = np.random.default_rng(seed)
        info = np.finfo(a.dtype)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, info.max, -info.max, info.tiny, info.smallest_subnormal], a.dtype)
        idx = rng.integers(0, a.size, max(1, a.size // 3))
        a.reshape(-1)[idx] = rng.choice(specials, len(idx))
    return a


def with_int_extremes(a, seed):
    """a with some elements the smallest, the largest, -1, 0 or 2**31."""
    a = np.array(a)
    if a.size and a.dtype.kind in "iu":
        rng = np.random.default_rng(seed)
        info = np.iinfo(a.dtype)
        specials = np.array([info.min, info.max, -1 if info.min else 1, 0, min(2**31, info.max)], a.dtype)
        idx = rng.integers(0, a.size, max(1, a.size // 3))
        a.reshape(-1)[idx] = rng.choice(specials, len(idx))
    return a


def nested_list(depth):
    x = 1.0
    for _ in range(depth):
        x = [x]
    return x


class ArrayLike:
    """Not an ndarray; NumPy converts it through __array__."""
    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else np.asarray(self.a).astype(dtype)


class BadArray:
    """__array__ raises."""
    def __array__(self, dtype=None, copy=None):
        raise ValueError("BadArray.__array__ refuses")


class BadSequence:
    """A sequence whose items raise."""
    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise RuntimeError("BadSequence.__getitem__ refuses")
'''


# ---------------------------------------------------------------- programs


@dataclass
class Program:
    name: str
    params: list[tuple[str, tuple, str]]
    body: Callable[..., Any]
    ref: Callable[..., Any] | None = None
    ints: dict[str, tuple[int, int]] = field(default_factory=dict)  # data ranges of int params
    data_ok: Callable[..., bool] | None = None  # whether valid data must run (indices in range)
    order_free: bool = True  # NaN/inf/huge values give the reference's result (no reassociated sums)
    gradient: bool = False

    def module(self) -> aj.Module:
        bb = aj.FunctionBuilder("main")
        vs = [bb.param(n, s, d) for n, s, d in self.params]
        mod = bb.finish(self.body(*vs))
        return aj.transform.Gradient()(mod) if self.gradient else mod

    @property
    def func(self) -> str:
        return "main_adjoint" if self.gradient else "main"


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _nll_ref(pred, t):
    lp = _log_softmax(pred)
    keep = t != -100
    picked = lp[np.arange(len(t)), np.where(keep, t, 0)]
    return (-np.where(keep, picked, 0).sum() / keep.sum()).astype(pred.dtype)


def _layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(1e-5)) * g + b


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _conv2d_ref(x, w, stride=2, pad=1):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("ncij,ocij->no", patch, w)
    return out


def _mlp_grad_ref(x, w):
    t = np.tanh(x @ w)
    d = 1 - t * t
    return t.sum(dtype=x.dtype), (d @ w.T, x.T @ d)


op = aj.op
PROGRAMS = [
    Program("add_broadcast", [("x", (3, 4), "float32"), ("y", (4,), "float32")], lambda x, y: x + y, lambda x, y: x + y),
    Program("unary_f64", [("x", (2, 3), "float64")], lambda x: op.tanh(op.exp(x)), lambda x: np.tanh(np.exp(x))),
    Program("matmul", [("a", (3, 4), "float32"), ("b", (4, 5), "float32")], lambda a, b: a @ b, lambda a, b: a @ b,
            order_free=False),
    Program("batched_matmul", [("a", (2, 3, 4), "float64"), ("b", (2, 4, 5), "float64")], lambda a, b: a @ b,
            lambda a, b: a @ b, order_free=False),
    Program("vector_matmul", [("v", (4,), "float32"), ("b", (2, 4, 3), "float32")], lambda v, b: op.matmul(v, b),
            lambda v, b: v @ b, order_free=False),
    Program("symbolic_mlp", [("x", ("n", 4), "float32"), ("w", (4, 3), "float32")],
            lambda x, w: op.sum(op.relu(x @ w), axis=[1]), lambda x, w: np.maximum(x @ w, 0).sum(1), order_free=False),
    Program("symbolic_pair", [("x", ("n", 3), "float64"), ("y", ("n", 3), "float64"), ("z", ("m",), "float64")],
            lambda x, y, z: (x * y, op.sum(z)), lambda x, y, z: (x * y, z.sum()), order_free=False),
    Program("compound_dim", [("x", ("n + 1", 2), "float64"), ("y", ("n", 2), "float64")],
            lambda x, y: op.concat([x, y], axis=0), lambda x, y: np.concatenate([x, y], 0)),
    Program("reductions", [("x", (3, 4, 5), "float32")],
            lambda x: (op.sum(x, axis=[1]), op.mean(x, axis=[0, 2], keepdims=True), op.max(x, axis=[2]), op.min(x),
                       op.variance(x, axis=[1])),
            lambda x: (x.sum(1), x.mean((0, 2), keepdims=True), x.max(2), x.min(), x.var(1)), order_free=False),
    Program("reshape_permute", [("x", (2, 3, 4), "float32")],
            lambda x: op.permute_dims(op.reshape(x, (4, 6)), axes=[1, 0]), lambda x: x.reshape(4, 6).T),
    Program("concat_split", [("a", (2, 3), "float64"), ("b", (2, 3), "float64")],
            lambda a, b: op.split(op.concat([a, b], axis=1), [2], axis=1),
            lambda a, b: tuple(np.split(np.concatenate([a, b], 1), [2], 1))),
    Program("conv2d", [("x", (1, 2, 5, 5), "float32"), ("w", (3, 2, 3, 3), "float32")],
            lambda x, w: op.conv2d(x, w, strides=[2, 2], padding=[1, 1]), _conv2d_ref, order_free=False),
    Program("pools", [("x", (1, 2, 6, 6), "float64")],
            lambda x: (op.max_pool2d(x, [2, 2], strides=[2, 2]), op.avg_pool2d(x, [2, 2], strides=[2, 2])),
            lambda x: (x.reshape(1, 2, 3, 2, 3, 2).max((3, 5)), x.reshape(1, 2, 3, 2, 3, 2).mean((3, 5))),
            order_free=False),
    Program("take", [("x", (5, 3), "float32"), ("idx", ("k",), "int64")], lambda x, i: op.take(x, i, axis=0),
            lambda x, i: np.take(x, i, axis=0), ints={"idx": (-5, 5)},
            data_ok=lambda x, i: bool(np.all((i >= -5) & (i < 5)))),
    Program("take_axis1_int32", [("x", (2, 4), "float64"), ("idx", (3,), "int32")], lambda x, i: op.take(x, i, axis=1),
            lambda x, i: np.take(x, i, axis=1), ints={"idx": (-4, 4)},
            data_ok=lambda x, i: bool(np.all((i >= -4) & (i < 4)))),
    Program("nll_loss", [("pred", ("b", 5), "float32"), ("t", ("b",), "int64")],
            lambda p, t: op.nll_loss(op.log_softmax(p, axis=-1), t), _nll_ref, ints={"t": (0, 5)},
            data_ok=lambda p, t: bool(np.all(((t >= 0) & (t < 5)) | (t == -100))), order_free=False),
    Program("softmax_layer_norm", [("x", (2, 5), "float32"), ("g", (5,), "float32"), ("b", (5,), "float32")],
            lambda x, g, b: (op.softmax(x, axis=-1), op.layer_norm(x, g, b, axes=[-1])),
            lambda x, g, b: (_softmax(x), _layer_norm(x, g, b)), order_free=False),
    Program("where", [("c", (3, 4), "bool"), ("a", (3, 4), "float32"), ("b", (4,), "float32")],
            lambda c, a, b: op.where(c, a, b), lambda c, a, b: np.where(c, a, b)),
    Program("int32_ops", [("a", (4,), "int32"), ("b", (4,), "int32")],
            lambda a, b: (a + b, op.maximum(a, b), a * b), lambda a, b: (a + b, np.maximum(a, b), a * b),
            ints={"a": (-1000, 1000), "b": (-1000, 1000)}),
    Program("astype", [("a", (2, 3), "int64")], lambda a: op.astype(a, "float64") * 2.0,
            lambda a: a.astype(np.float64) * 2.0),
    Program("scalar_param", [("s", (), "float64"), ("x", (3,), "float64")], lambda s, x: s * x, lambda s, x: s * x),
    Program("cumsum_triu", [("x", (4, 4), "float64")], lambda x: (op.cumsum(x, axis=1), op.triu(x, 1)),
            lambda x: (np.cumsum(x, 1), np.triu(x, 1)), order_free=False),
    Program("gradient_mlp", [("x", ("n", 4), "float32"), ("w", (4, 3), "float32")],
            lambda x, w: op.sum(op.tanh(x @ w)), _mlp_grad_ref, gradient=True, order_free=False),
    Program("zero_size", [("x", (0, 3), "float32")], lambda x: op.sum(x, axis=[0]), lambda x: x.sum(0)),
    Program("compare", [("a", (3, 4), "float32"), ("b", (3, 4), "float32")],
            lambda a, b: (op.less(a, b), op.equal(a, b)), lambda a, b: (a < b, a == b)),
    Program("gradient_conv2d", [("x", (1, 1, 4, 4), "float64"), ("w", (2, 1, 2, 2), "float64")],
            lambda x, w: op.sum(op.conv2d(x, w)), gradient=True, order_free=False),
    Program("broadcast_collapse", [("x", (3, 1), "float32")],
            lambda x: op.collapse_sum_to(op.broadcast_to(x, (3, 4)), (1, 4)),
            lambda x: np.broadcast_to(x, (3, 4)).sum(0, keepdims=True), order_free=False),
    Program("power_divide", [("a", (3,), "float64"), ("b", (3,), "float64")],
            lambda a, b: (op.power(a, b), a / b), lambda a, b: (np.power(a, b), a / b)),
    Program("expand_squeeze", [("x", (3, 1, 4), "float32")], lambda x: op.expand_dims(op.squeeze(x, axis=[1]), 0),
            lambda x: x.squeeze(1)[None]),
    Program("bool_ops", [("a", (5,), "bool"), ("b", (5,), "bool")], lambda a, b: (op.equal(a, b), op.where(a, b, a)),
            lambda a, b: (a == b, np.where(a, b, a))),
]

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "longdouble", "complex64", "complex128", "clongdouble", "object", "U8", "S8", "datetime64[ns]",
          "timedelta64[s]", "V8", "f4,i4", ">f4", ">f8", ">i4", ">i8", "<f8", "=i4", ">u8", ">c8"]

OBJECTS = ["None", "object()", "'abc'", "b'abc'", "{}", "{'a': 1}", "set()", "(lambda: 0)", "BadArray()",
           "BadSequence()", "Ellipsis", "slice(1)", "int", "2**100", "-2**63", "2**63", "1j", "float('nan')", "True",
           "1.5", "0", "[[1.0], [1.0, 2.0]]", "[None, 1.0]", "[]", "[[]]", "()", "nested_list(40)", "nested_list(100)",
           "ArrayLike(None)", "ArrayLike('x')", "bytearray(24)", "memoryview(b'abcdefgh')", "np.float32(1.5)",
           "np.int64(-1)", "np.bool_(True)", "np.array(None)", "np.array([1, 'a'], dtype=object)", "range(4)",
           "iter([1.0, 2.0])", "np.ma.masked_array([1.0, 2.0], mask=[True, False])", "np.datetime64('2020-01-01')"]

WRONG_NAMES = ["zz", "", " x", "X", "é", "x\x00", "a b", "main", "__class__", "self", "\ud800"]


# ---------------------------------------------------------------- inputs


@dataclass
class Arg:
    """How one argument is made: random data of a shape and dtype, then wraps."""
    shape: tuple
    dtype: str
    seed: int
    low: int = -5
    high: int = 5
    wraps: list[str] = field(default_factory=list)  # array -> array, templates with {} for the array so far
    final: str | None = None  # a convert_to kind, applied last
    code: str | None = None  # the whole expression, when not random data (then no wraps)

    def expr(self) -> str:
        if self.code is not None:
            return self.code
        if np.dtype(self.dtype).kind in "iu":
            text = f"rand({self.seed}, {self.shape!r}, {self.dtype!r}, {self.low}, {self.high})"
        else:
            text = f"rand({self.seed}, {self.shape!r}, {self.dtype!r})"
        for w in self.wraps:
            text = w.replace("{}", text)
        if self.final:
            text = f"convert_to({text}, {self.final!r})"
        return text


class Fuzzer:
    def __init__(self, seed: int):
        self.seed = seed
        self.programs = {p.name: p for p in PROGRAMS}
        self.compiled: dict[str, Any] = {}
        self.ns: dict[str, Any] = {}
        exec(HELPERS, self.ns)  # noqa: S102 (our own helper source)

    # ---- making input k ----

    def make(self, k: int) -> dict:
        rng = random.Random(f"exec:{self.seed}:{k}")
        prog = rng.choice(PROGRAMS)
        symbols: dict[str, int] = {}
        for _, shape, _ in prog.params:
            for d in shape:
                if isinstance(d, str) and d.isidentifier():
                    symbols.setdefault(d, rng.choice([1, 2, 3, 4, 7]))
        args = [Arg(self._shape(shape, symbols), dtype, rng.randrange(2**31), *prog.ints.get(name, (-5, 5)))
                for name, shape, dtype in prog.params]
        call = {"args": [f"a{i}" for i in range(len(args))], "kwargs": []}
        variants = []
        for _ in range(rng.choices([1, 2, 3], [70, 25, 5])[0]):
            family = rng.choices(list(VARIANTS), [VARIANTS[f][0] for f in VARIANTS])[0]
            variants.append(VARIANTS[family][1](rng, prog, args, call, symbols))
        return {"program": prog.name, "variants": variants, "args": [a.expr() for a in args],
                "call_args": call["args"], "call_kwargs": call["kwargs"]}

    @staticmethod
    def _shape(shape: tuple, symbols: dict[str, int]) -> tuple:
        return tuple(d if isinstance(d, int) else int(aj.Dim(d).evaluate(symbols)) for d in shape)

    def describe(self, inp: dict) -> str:
        return f"{inp['program']}: {', '.join(inp['variants'])}"

    def group(self, inp: dict) -> str:
        return f"{inp['program']}: {inp['variants'][0].split('(')[0]}"

    # ---- running it ----

    def function(self, name: str) -> tuple[Any, aj.Type]:
        """The compiled function of a program, and its declared result type."""
        if name not in self.compiled:
            prog = self.programs[name]
            mod = prog.module()
            self.compiled[name] = (aj.build(mod)[prog.func], mod[prog.func].ret_type)
        return self.compiled[name]

    def values(self, inp: dict) -> tuple[list, list, dict]:
        ns = dict(self.ns)
        made = []
        for i, code in enumerate(inp["args"]):
            ns[f"a{i}"] = eval(code, ns)  # noqa: S307 (our own generated code)
            made.append(ns[f"a{i}"])
        args = [eval(code, ns) for code in inp["call_args"]]  # noqa: S307
        kwargs = {name: eval(code, ns) for name, code in inp["call_kwargs"]}  # noqa: S307
        return made, args, kwargs

    def run(self, inp: dict, reach: Callable[[str], None]) -> str:
        prog = self.programs[inp["program"]]
        fn, ret_type = self.function(prog.name)
        made, args, kwargs = self.values(inp)
        judged = judge(prog, args, kwargs)
        before = [snapshot(v) for v in made]
        try:
            out = fn(*args, **kwargs)
        except aj.Error as e:
            label = error_label(e)
            self._check_unchanged(made, before)
            said = f"{type(e).__name__}: {e}"
            if judged.valid:
                reach("valid calls")
                if not isinstance(e, aj.OutOfMemoryError) and not judged.huge and judged.data_ok:
                    raise Finding("rejected-valid", f"a valid call raised {said}", f"{type(e).__name__}")
            else:
                reach("invalid calls")
                if type(e) not in (aj.ExecutionError, aj.OutOfMemoryError):
                    raise Finding("error-class", f"invalid because {judged.reason}; raised {said} (want ExecutionError)",
                                  type(e).__name__)
            return label
        if not judged.valid:
            raise Finding("accepted-invalid", f"invalid because {judged.reason}, but it returned {summarize(out)}",
                          judged.reason.split(":")[0])
        reach("valid calls")
        self._check_unchanged(made, before)
        check_types(out, ret_type, judged.env, "result")
        if judged.huge:
            return "ok"
        canonical = [np.array(np.asarray(a), dtype=a.dtype.newbyteorder("="), order="C") for a in judged.arrays]
        if not all(_ready(v, a) for v, a in zip(judged.given, judged.arrays)):
            try:
                again = fn(*canonical)
            except aj.Error as e:
                raise Finding("layout-mismatch", f"the call worked, but on C-contiguous copies it raised "
                                                 f"{type(e).__name__}: {e}") from None
            compare(out, again, "layout-mismatch", "the same call on C-contiguous copies", tight=True)
            reach("compared to contiguous copies")
        specials = any(a.dtype.kind == "f" and not np.all(np.isfinite(a)) or
                       a.dtype.kind == "f" and a.size and np.max(np.abs(a)) > 1e30 for a in canonical)
        odd_bools = any(a.dtype.kind == "b" and np.any(a.view(np.uint8) > 1) for a in canonical)
        if prog.ref is None or odd_bools or (specials and not prog.order_free):
            return "ok"
        want = prog.ref(*canonical)
        compare(out, want, "wrong-result", "the NumPy reference", tight=False)
        reach("checked against NumPy")
        return "ok, checked against NumPy"

    def _check_unchanged(self, made: list, before: list) -> None:
        for i, (v, b) in enumerate(zip(made, before)):
            if b is not None and snapshot(v) != b:
                raise Finding("input-modified", f"argument a{i} was changed by the call")

    # ---- the reproducer ----

    def save(self, inp: dict, stem: str, header: str) -> list[str]:
        prog = self.programs[inp["program"]]
        text = prog.module().script()
        lines = ["# " + line if line else "#" for line in header.splitlines()]
        call = ", ".join(inp["call_args"] + (["**kwargs"] if inp["call_kwargs"] else []))
        code = "\n".join(inp["args"] + inp["call_args"] + [c for _, c in inp["call_kwargs"]])
        body = [
            *lines, "", helpers_for(code), "import adjoint as aj", "",
            f"TEXT = '''\\\n{text}'''", f"fn = aj.build(aj.parse(TEXT))[{prog.func!r}]",
            *[f"a{i} = {code}" for i, code in enumerate(inp["args"])],
            "kwargs = {" + ", ".join(f"{n!r}: {c}" for n, c in inp["call_kwargs"]) + "}",
            f"print(fn({call}))", "",
        ]
        path = stem + ".py"
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(body))
        return [path]


def helpers_for(code: str) -> str:
    """The part of HELPERS that `code` uses: the imports and each helper it
    names, directly or through another helper."""
    imports, *blocks = HELPERS.strip("\n").split("\n\n\n")
    named = {re.match(r"(?:def|class) (\w+)", b).group(1): b for b in blocks}
    used: set[str] = set()
    text = code
    while True:
        new = {n for n in named if n not in used and re.search(rf"\b{n}\b", text)}
        if not new:
            break
        used |= new
        text += "".join(named[n] for n in new)
    return "\n\n\n".join([imports] + [b for n, b in named.items() if n in used]) + "\n\n"


# ---------------------------------------------------------------- the oracle


@dataclass
class Judged:
    valid: bool
    reason: str = ""
    given: list = field(default_factory=list)  # the argument given for each param
    arrays: list = field(default_factory=list)  # each converted as the executable converts it
    env: dict = field(default_factory=dict)
    huge: bool = False
    data_ok: bool = True


def judge(prog: Program, args: list, kwargs: dict) -> Judged:
    """Whether the call is valid under the executable's contract, and the arrays it then reads."""
    params = prog.params
    names = [n for n, _, _ in params]
    if len(args) > len(params):
        return Judged(False, f"count: {len(args)} positional arguments for {len(params)} params")
    given: list = list(args) + [_MISSING] * (len(params) - len(args))
    for key, value in kwargs.items():
        if names.count(key) != 1:
            return Judged(False, f"keyword: no single param named {key!r}")
        i = names.index(key)
        if given[i] is not _MISSING:
            return Judged(False, f"keyword: {key!r} given twice")
        given[i] = value
    if any(g is _MISSING for g in given):
        return Judged(False, "count: a param is missing")
    arrays = []
    for (name, _, dtype), value in zip(params, given):
        if value is None:
            return Judged(False, f"kind: {name} is None")
        if isinstance(value, np.ndarray):
            if value.dtype.name != dtype:
                return Judged(False, f"dtype: {name} is {value.dtype.name}, not {dtype}")
            arrays.append(value)
            continue
        try:
            array = param_array(value, dtype)  # cast only when no number changes, as the executor does
        except MemoryError:
            return Judged(False, f"memory: {name} does not fit")
        except Exception as e:  # noqa: BLE001 (NumPy cannot convert it: the call must refuse it)
            return Judged(False, f"kind: NumPy cannot make a {dtype} array of {name}: {type(e).__name__}")
        if isinstance(array, str):
            return Judged(False, f"kind: {name}: {array}")
        arrays.append(array)
    env: dict[str, int] = {}
    for (name, shape, _), a in zip(params, arrays):
        if a.ndim != len(shape):
            return Judged(False, f"rank: {name} has rank {a.ndim}, not {len(shape)}")
        for d, got in zip(shape, a.shape):
            if isinstance(d, str) and d.isidentifier():
                env.setdefault(d, got)
    for (name, shape, _), a in zip(params, arrays):
        for axis, (d, got) in enumerate(zip(shape, a.shape)):
            want = d if isinstance(d, int) else int(aj.Dim(d).evaluate(env))
            if want != got:
                return Judged(False, f"shape: {name} dim {axis} is {got}, not {d} = {want}")
    huge = any(a.size > 2**22 for a in arrays)
    ok = prog.data_ok(*arrays) if prog.data_ok and not huge else True
    return Judged(True, given=given, arrays=arrays, env=env, huge=huge, data_ok=ok)


_MISSING = object()


def _ready(value: Any, array: np.ndarray) -> bool:
    return value is array and array.flags.c_contiguous and array.flags.aligned and array.dtype.isnative


def snapshot(v: Any) -> bytes | None:
    if isinstance(v, np.ndarray) and v.dtype.kind != "O" and v.size <= 1_000_000:
        return np.asarray(v).tobytes() + repr((v.shape, v.strides, v.dtype.str)).encode()
    return None


def summarize(out: Any) -> str:
    if isinstance(out, tuple):
        return "(" + ", ".join(summarize(o) for o in out) + ")"
    if isinstance(out, np.ndarray):
        return f"array{out.shape} {out.dtype}"
    return type(out).__name__


def check_types(out: Any, t: aj.Type, env: dict, where: str) -> None:
    if t.is_tuple:
        if not isinstance(out, tuple) or len(out) != len(t.fields):
            raise Finding("wrong-type", f"{where} is {summarize(out)}, not {t}")
        for i, (o, ft) in enumerate(zip(out, t.fields)):
            check_types(o, ft, env, f"{where}[{i}]")
        return
    shape = tuple(d if isinstance(d, int) else int(aj.Dim(d).evaluate(env)) for d in t.shape)
    if not isinstance(out, np.ndarray) or out.dtype.name != t.dtype or out.shape != shape:
        raise Finding("wrong-type", f"{where} is {summarize(out)}, not {shape} {t.dtype}")


def compare(got: Any, want: Any, kind: str, what: str, tight: bool, where: str = "result") -> None:
    if isinstance(want, tuple):
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, kind, what, tight, f"{where}[{i}]")
        return
    want = np.asarray(want)
    if got.dtype.kind != "f":
        if got.shape != want.shape or not np.array_equal(got, want.astype(got.dtype)):
            raise Finding(kind, f"{where} differs from {what}:\ngot  {got!r}\nwant {want!r}", where)
        return
    if tight:
        tol = dict(rtol=1e-6, atol=1e-6) if got.dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)
    else:
        # Sums in another order (BLAS blocking, pairwise) and 1 - tanh**2 near 0 differ by rounding
        # relative to the largest values, not to each element: the atol scales with them.
        finite = np.abs(want[np.isfinite(want)]) if want.size else want
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        tol = dict(rtol=2e-4, atol=2e-4 * scale) if got.dtype == np.float32 else dict(rtol=1e-9, atol=1e-9 * scale)
    try:
        np.testing.assert_allclose(got, want.astype(got.dtype), equal_nan=True, **tol)
    except AssertionError as e:
        raise Finding(kind, f"{where} differs from {what}:{e}", where) from None


# ---------------------------------------------------------------- variants
# Each takes (rng, program, args, call, symbols), changes the args (how each
# is made) or the call (which are passed by position, which by keyword), and
# returns its name for the description.


def _pick(rng: random.Random, args: list[Arg]) -> int | None:
    """An arg still made from random data (not replaced by an object or an alias)."""
    choices = [i for i, a in enumerate(args) if a.code is None]
    return rng.choice(choices) if choices else None


ARRAY_WRAPS = ["readonly({})", "np.asfortranarray({})", "reversed_view({})", "every_other({})", "unaligned({})",
               "big_endian({})", "broadcast_first({})"]
FINALS = ["list", "tuple", "memoryview", "matrix", "masked", "array_like", "item", "scalar"]


def v_layout(rng, prog, args, call, symbols) -> str:
    i = _pick(rng, args)
    if i is None:
        return "layout(none)"
    a = args[i]
    picked = [rng.choice(ARRAY_WRAPS) for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
    a.wraps += picked
    names = [p.split("(")[0] for p in picked]
    if not picked or rng.random() < 0.3:
        a.final = rng.choice(FINALS)
        names.append(a.final)
    return f"layout({'+'.join(names)} {prog.params[i][0]})"


def v_alias(rng, prog, args, call, symbols) -> str:
    """One object passed for two params (a later one gets an earlier one's argument)."""
    if len(args) < 2:
        return "alias(none)"
    target = rng.randrange(1, len(args))
    same = [j for j in range(target) if args[j].shape == args[target].shape and args[j].dtype == args[target].dtype]
    i = rng.choice(same) if same else rng.randrange(target)
    args[target] = Arg(args[i].shape, args[i].dtype, 0, code=f"a{i}")
    return f"alias({prog.params[target][0]}={prog.params[i][0]})"


def v_values(rng, prog, args, call, symbols) -> str:
    i = _pick(rng, args)
    if i is None:
        return "values(none)"
    a = args[i]
    kind = np.dtype(a.dtype).kind
    if kind == "f":
        a.wraps.append(f"with_specials({{}}, {rng.randrange(2**31)})")
        return f"specials({prog.params[i][0]})"
    if kind in "iu":
        a.wraps.append(f"with_int_extremes({{}}, {rng.randrange(2**31)})")
        return f"int_extremes({prog.params[i][0]})"
    a.wraps.append(f"bool_bytes({{}}, {rng.choice([2, 3, 127, 128, 255])})")
    return f"bool_bytes({prog.params[i][0]})"


def v_shape(rng, prog, args, call, symbols) -> str:
    i = _pick(rng, args)
    if i is None:
        return "shape(none)"
    a = args[i]
    pname, pshape, _ = prog.params[i]
    kind = rng.choice(["rank_plus", "rank_minus", "wrong_dim", "zero_dim", "symbols", "huge", "huge", "scalar"])
    shape = list(a.shape)
    if kind == "rank_plus":
        shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2]))
    elif kind == "rank_minus" and shape:
        shape.pop(rng.randrange(len(shape)))
    elif kind == "wrong_dim" and shape:
        j = rng.randrange(len(shape))
        shape[j] = max(0, shape[j] + rng.choice([-1, 1, 2, 100]))
    elif kind == "zero_dim" and shape:
        j = rng.randrange(len(shape))
        d = pshape[j] if j < len(pshape) else None
        if isinstance(d, str) and d.isidentifier():  # every param using the symbol gets 0: a valid call
            _set_symbol(prog, args, symbols, d, 0)
            return f"zero_dim({d})"
        shape[j] = 0
    elif kind == "symbols":
        syms = [d for _, s, _ in prog.params for d in s if isinstance(d, str)]
        if syms:
            d = rng.choice(syms)
            for j, (_, s, _) in enumerate(prog.params):
                if d in s and rng.random() < 0.5:
                    args[j].shape = tuple(x + 1 if pd == d else x for pd, x in zip(s, args[j].shape))
            return f"symbols({d})"
        shape = shape + [1]
    elif kind == "huge":
        return _huge(rng, prog, args, symbols, i)
    elif kind == "scalar":
        a.code = rng.choice(["1.5", "np.float32(1.5)", "np.array(2.0)", "0", "True"])
        return f"scalar({pname})"
    a.shape = tuple(shape)
    return f"{kind}({pname})"


def _set_symbol(prog, args, symbols, sym: str, value: int) -> None:
    symbols[sym] = value
    for j, (_, s, _) in enumerate(prog.params):
        if any(isinstance(d, str) and sym in d for d in s):
            args[j].shape = Fuzzer._shape(s, symbols)


def _huge(rng, prog, args, symbols, i) -> str:
    """Zero-stride arrays: a symbol made huge for every param using it (valid),
    or one dim of one param made huge (invalid)."""
    e = rng.choice([16, 18, 20, 22, 33, 40, 48, 56, 60])  # up to 2**22 runs; from 2**33 a copy cannot fit
    pname, pshape, _ = prog.params[i]
    syms = [d for d in pshape if isinstance(d, str) and d.isidentifier()]
    if syms and rng.random() < 0.7:
        _set_symbol(prog, args, symbols, syms[0], 2**e)
        changed = [j for j, (_, s, _) in enumerate(prog.params) if any(isinstance(d, str) and syms[0] in d for d in s)]
        what = f"{syms[0]}=2**{e}"
    else:
        if not args[i].shape:
            args[i].shape = (1,)
        shape = list(args[i].shape)
        shape[rng.randrange(len(shape))] = 2**e
        args[i].shape = tuple(shape)
        changed = [i]
        what = f"{pname}:2**{e}"
    for j in changed:
        a = args[j]
        itemsize = np.dtype(a.dtype).itemsize
        size = int(np.prod([max(d, 1) for d in a.shape], dtype=object))
        if size * itemsize >= 2**62:  # NumPy's limit on an array's byte size
            a.shape = tuple(min(d, 2**40) for d in a.shape)
        value = "True" if a.dtype == "bool" else "1"
        a.code = f"zero_strides({value}, {a.shape!r}, {a.dtype!r})"
    return f"huge({what})"


def v_dtype(rng, prog, args, call, symbols) -> str:
    i = _pick(rng, args)
    if i is None:
        return "dtype(none)"
    dt = rng.choice(DTYPES)
    args[i].wraps.append(f"as_dtype({{}}, {dt!r})")
    if rng.random() < 0.3:
        args[i].wraps.append(rng.choice(["unaligned({})", "np.asfortranarray({})", "reversed_view({})"]))
    return f"dtype({dt} {prog.params[i][0]})"


def v_object(rng, prog, args, call, symbols) -> str:
    i = rng.randrange(len(args))
    args[i].code = rng.choice(OBJECTS)
    return f"object({args[i].code} {prog.params[i][0]})"


def v_call(rng, prog, args, call, symbols) -> str:
    names = [n for n, _, _ in prog.params]
    pos, kw = call["args"], call["kwargs"]
    kind = rng.choice(["too_few", "too_many", "kwargs_all", "kwargs_tail", "kwargs_wrong_name", "kwargs_twice",
                       "kwargs_extra"])
    if kind == "too_few" and (pos or kw):
        (pos if pos else kw).pop()
    elif kind == "too_many":
        pos.append(rng.choice(["a0", "None", "1.0"]))
    elif kind in ("kwargs_all", "kwargs_tail") and pos:
        t = len(pos) if kind == "kwargs_all" else rng.randrange(1, len(pos) + 1)
        moved = [(names[j], pos[j]) for j in range(len(pos) - t, min(len(pos), len(names)))]
        if kind == "kwargs_all":
            rng.shuffle(moved)
        del pos[len(pos) - t:]
        kw[:0] = moved
    elif kind == "kwargs_wrong_name":
        value = pos.pop() if pos else "a0"
        kw.append((rng.choice(WRONG_NAMES), value))
    elif kind == "kwargs_twice":
        kw.append((names[0], "a0"))
    else:
        kw.append((rng.choice(WRONG_NAMES), "a0"))
    return kind


VARIANTS: dict[str, tuple[int, Callable[..., str]]] = {
    "layout": (30, v_layout),
    "alias": (4, v_alias),
    "values": (10, v_values),
    "shape": (20, v_shape),
    "dtype": (12, v_dtype),
    "object": (9, v_object),
    "call": (15, v_call),
}
