"""The benchmark graphs, each built three ways from one description: as an
adjoint module, as NumPy code and as PyTorch code (when torch is installed).
Used by the executor and pass benchmarks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import adjoint as aj


@dataclass
class Graph:
    name: str
    module: aj.Module
    inputs: list[np.ndarray]
    numpy_fn: Callable[..., object]
    torch_fn: Callable[..., object] | None
    gemm_shapes: list[tuple[int, int, int]]  # (m, k, n) of every matmul, as 2-D GEMMs


def _np_log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def mlp(batch: int = 256, sizes: tuple[int, ...] = (784, 1024, 1024, 10), seed: int = 0) -> Graph:
    """relu MLP with a softmax cross-entropy loss, float32."""
    rng = np.random.default_rng(seed)
    bb = aj.FunctionBuilder("main", num_input=2)
    x = bb.param("x", (batch, sizes[0]), "float32")
    labels = bb.param("labels", (batch, sizes[-1]), "float32")
    weights, arrays = [], []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        weights.append((bb.param(f"w{i}", (a, b), "float32"), bb.param(f"b{i}", (b,), "float32")))
        arrays += [(rng.standard_normal((a, b)) / math.sqrt(a)).astype(np.float32),
                   (0.01 * rng.standard_normal(b)).astype(np.float32)]
    h = x
    for i, (w, b) in enumerate(weights):
        h = h @ w + b
        if i < len(weights) - 1:
            h = aj.op.relu(h)
    mod = bb.finish(aj.op.cross_entropy_with_logits(h, labels))
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    inputs = [xs, ys] + arrays

    def numpy_fn(x, labels, *params):
        h = x
        n = len(params) // 2
        for i in range(n):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < n - 1:
                h = np.maximum(h, 0)
        return -(labels * _np_log_softmax(h)).sum(axis=-1).mean()

    def make_torch():
        import torch

        def torch_fn(x, labels, *params):
            h = x
            n = len(params) // 2
            for i in range(n):
                h = h @ params[2 * i] + params[2 * i + 1]
                if i < n - 1:
                    h = torch.relu(h)
            return -(labels * torch.log_softmax(h, dim=-1)).sum(dim=-1).mean()

        return torch_fn

    shapes = [(batch, a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    return Graph("mlp", mod, inputs, numpy_fn, _maybe(make_torch), shapes)


def transformer_block(batch: int = 4, seq: int = 128, hidden: int = 512, heads: int = 8,
                      ffn: int = 2048, seed: int = 0, loss: bool = False, linear_wt: bool = True) -> Graph:
    """Pre-norm transformer block: layer_norm, QKV projections, softmax
    attention, output projection, layer_norm, gelu MLP, residuals; float32.
    Tokens are batch * seq rows of width hidden. With ``linear_wt`` (default)
    linear layers are written as PyTorch's nn.Linear computes them, x @ W.T
    with W of shape (out, in); otherwise x @ W with W of shape (in, out).
    With ``loss`` the module returns the sum of the block's output (a scalar
    to differentiate)."""
    rng = np.random.default_rng(seed)
    d = hidden // heads
    tokens = batch * seq
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", (tokens, hidden), "float32")
    def lin(i: int, o: int) -> tuple[int, int]:  # a weight's stored shape
        return (o, i) if linear_wt else (i, o)

    names = [("g1", (hidden,)), ("be1", (hidden,)), ("wq", lin(hidden, hidden)), ("wk", lin(hidden, hidden)),
             ("wv", lin(hidden, hidden)), ("wo", lin(hidden, hidden)), ("g2", (hidden,)), ("be2", (hidden,)),
             ("w1", lin(hidden, ffn)), ("w2", lin(ffn, hidden))]
    p = {n: bb.param(n, s, "float32") for n, s in names}
    arrays = []
    for n, s in names:
        if n.startswith("g"):
            arrays.append(np.ones(s, np.float32))
        elif n.startswith("be"):
            arrays.append(np.zeros(s, np.float32))
        else:
            fan_in = s[1] if linear_wt else s[0]
            arrays.append((rng.standard_normal(s) / math.sqrt(fan_in)).astype(np.float32))

    def heads_first(t):  # (tokens, hidden) -> (batch, heads, seq, d)
        return aj.op.permute_dims(aj.op.reshape(t, (batch, seq, heads, d)), axes=[0, 2, 1, 3])

    def linear(t, w):
        return t @ w.T if linear_wt else t @ w

    h = aj.op.layer_norm(x, p["g1"], p["be1"], axes=[-1])
    q, k, v = heads_first(linear(h, p["wq"])), heads_first(linear(h, p["wk"])), heads_first(linear(h, p["wv"]))
    scores = (q @ k.mT) * (1.0 / math.sqrt(d))
    attn = aj.op.softmax(scores, axis=-1) @ v
    merged = aj.op.reshape(aj.op.permute_dims(attn, axes=[0, 2, 1, 3]), (tokens, hidden))
    x2 = x + linear(merged, p["wo"])
    h2 = aj.op.layer_norm(x2, p["g2"], p["be2"], axes=[-1])
    out = x2 + linear(aj.op.gelu(linear(h2, p["w1"])), p["w2"])
    mod = bb.finish(aj.op.sum(out) if loss else out)
    xs = rng.standard_normal((tokens, hidden)).astype(np.float32)

    def numpy_fn(x, g1, be1, wq, wk, wv, wo, g2, be2, w1, w2):
        if linear_wt:
            wq, wk, wv, wo, w1, w2 = (w.T for w in (wq, wk, wv, wo, w1, w2))

        def ln(t, g, b):
            mu = t.mean(-1, keepdims=True)
            var = ((t - mu) ** 2).mean(-1, keepdims=True)
            return (t - mu) / np.sqrt(var + 1e-5) * g + b

        def hf(t):
            return t.reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)

        h = ln(x, g1, be1)
        q, k, v = hf(h @ wq), hf(h @ wk), hf(h @ wv)
        s = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1.0 / math.sqrt(d))
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(0, 2, 1, 3).reshape(tokens, hidden)
        x2 = x + a @ wo
        h2 = ln(x2, g2, be2) @ w1
        g = 0.5 * h2 * (1.0 + _erf(h2 / np.float32(math.sqrt(2.0))))
        return x2 + g.astype(np.float32) @ w2

    def make_torch():
        import torch

        def torch_fn(x, g1, be1, wq, wk, wv, wo, g2, be2, w1, w2):
            if linear_wt:
                wq, wk, wv, wo, w1, w2 = (w.T for w in (wq, wk, wv, wo, w1, w2))

            def hf(t):
                return t.reshape(batch, seq, heads, d).permute(0, 2, 1, 3)

            h = torch.nn.functional.layer_norm(x, (hidden,), g1, be1, 1e-5)
            q, k, v = hf(h @ wq), hf(h @ wk), hf(h @ wv)
            s = torch.softmax((q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d)), dim=-1)
            a = (s @ v).permute(0, 2, 1, 3).reshape(tokens, hidden)
            x2 = x + a @ wo
            h2 = torch.nn.functional.layer_norm(x2, (hidden,), g2, be2, 1e-5)
            return x2 + torch.nn.functional.gelu(h2 @ w1) @ w2

        return torch_fn

    bh = batch * heads
    shapes = [(tokens, hidden, hidden)] * 3 + [(seq, d, seq)] * bh + [(seq, seq, d)] * bh + \
        [(tokens, hidden, hidden), (tokens, hidden, ffn), (tokens, ffn, hidden)]
    name = "transformer" if linear_wt else "transformer_xw"
    return Graph(name, mod, [xs] + arrays, numpy_fn, _maybe(make_torch), shapes)


def qkv_groups(groups: int, tokens: int = 4, hidden: int = 8, dtype: str = "float32") -> aj.Module:
    """``groups`` separate QKV projections in one function, as nn.Linear
    writes them: for each group g, ``q = x_g @ wq_g.T`` (a permute_dims, then
    a matmul), the same for k and v, all on one input ``x_g`` of (tokens,
    hidden) with weights of (hidden, hidden); main returns every q, k and v
    in a tuple. What CombineParallelMatmul turns into one matmul per group
    (and ReorderPermuteDimsAfterConcat into one permute_dims per group)."""
    t = f'Tensor(({tokens}, {hidden}), "{dtype}")'
    w = f'Tensor(({hidden}, {hidden}), "{dtype}")'
    params, lines, outs = [], [], []
    for g in range(groups):
        params.append(f"x{g}: {t}")
        for name in "qkv":
            params.append(f"w{name}{g}: {w}")
            lines.append(f"    t{name}{g}: {w} = permute_dims(w{name}{g})")
            lines.append(f"    {name}{g}: {t} = matmul(x{g}, t{name}{g})")
            outs.append(f"{name}{g}")
    ret = f"Tuple({', '.join([t] * len(outs))})"
    text = "\n".join(["@function", f"def main({', '.join(params)}) -> {ret}:", *lines,
                      f"    return ({', '.join(outs)})", ""])
    return aj.parse(text)


def chain(n_ops: int = 1000, size: int = 8, seed: int = 0) -> Graph:
    """n_ops elementwise ops on tiny float32 tensors: measures per-op overhead."""
    rng = np.random.default_rng(seed)
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (size,), "float32")
    y = bb.param("y", (size,), "float32")
    h = x
    for i in range(n_ops):
        h = [aj.op.add, aj.op.multiply, aj.op.subtract, aj.op.maximum][i % 4](h, y)
    mod = bb.finish(h)
    xs, ys = rng.standard_normal(size).astype(np.float32), (0.5 + 0.01 * rng.random(size)).astype(np.float32)
    ops_np = [np.add, np.multiply, np.subtract, np.maximum]

    def numpy_fn(x, y):
        h = x
        for i in range(n_ops):
            h = ops_np[i % 4](h, y)
        return h

    def make_torch():
        import torch

        ops_t = [torch.add, torch.mul, torch.sub, torch.maximum]

        def torch_fn(x, y):
            h = x
            for i in range(n_ops):
                h = ops_t[i % 4](h, y)
            return h

        return torch_fn

    return Graph("chain1000", mod, [xs, ys], numpy_fn, _maybe(make_torch), [])


def _erf(x: np.ndarray) -> np.ndarray:
    """erf for the NumPy reference (NumPy has none): SciPy's ufunc when
    installed, else math.erf element by element (slow, but the same values)."""
    try:
        from scipy.special import erf
    except ImportError:
        from math import erf as scalar_erf

        return np.vectorize(scalar_erf, otypes=[x.dtype])(x)
    return erf(x).astype(x.dtype)


def _maybe(make: Callable[[], Callable[..., object]]) -> Callable[..., object] | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    return make()
