"""aj.from_torch: torch modules imported through torch.export compute what
torch computes, forward and backward (float64, rtol 1e-7), at every batch
size when the batch is symbolic; unsupported ops are named with their
source line; weights move both ways with from_torch_state/to_torch_state."""

import collections

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional

import adjoint as aj  # noqa: E402
from adjoint.frontend.torch_names import param_name  # noqa: E402

RTOL, ATOL = 1e-7, 1e-10
BATCH = torch.export.Dim("batch")


class Weighted(nn.Module):
    """(inner(x) * w).sum() with fixed random w: a scalar whose gradient
    reaches every element of inner's output; w is broadcast over the batch."""

    def __init__(self, inner, out_shape, seed=1):
        super().__init__()
        self.inner = inner
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("w", torch.randn(tuple(out_shape), generator=g, dtype=torch.float64), persistent=False)

    def forward(self, x, y=None):
        return (self.inner(x) if y is None else self.inner(x, y)).mul(self.w).sum()


def as_float64(module, inputs):
    module = module.double().eval()
    return module, tuple(t.double() if t.is_floating_point() else t for t in inputs)


_BUILT = {}  # id(mod) -> (mod, executable): the fixtures' modules are built once


def run_adjoint(mod, module, inputs, func="main"):
    if id(mod) not in _BUILT or _BUILT[id(mod)][0] is not mod:
        _BUILT[id(mod)] = (mod, aj.build(mod))
    exe = _BUILT[id(mod)][1]
    return exe[func](*[t.numpy() for t in inputs], *aj.from_torch_state(module, mod).values())


def assert_forward(module, mod, inputs):
    out = run_adjoint(mod, module, inputs)
    with torch.no_grad():
        ref = module(*inputs)
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o, r.numpy(), rtol=RTOL, atol=ATOL)


def torch_gradients(module, inputs):
    """The loss, the gradients of the float inputs (in order) and {param name:
    gradient} of every parameter, by torch.autograd."""
    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    module.zero_grad()
    loss = module(*leaves)
    loss.backward()
    by_input = [t.grad for t in leaves if t.is_floating_point()]
    return loss.item(), by_input, {param_name(n): p.grad for n, p in module.named_parameters()}


def differentiate(weighted, inputs, dynamic_shapes=None):
    """weighted imported, with main_adjoint giving the gradients of its float
    inputs and its parameters (not of buffers such as BatchNorm's statistics),
    and the names of those params in order."""
    mod = aj.from_torch(weighted, inputs, dynamic_shapes=dynamic_shapes)
    fn = mod["main"]
    wanted = [p.name_hint for p in fn.params[:fn.attrs["num_input"]] if p.type.dtype.startswith("float")]
    wanted += [param_name(n) for n, _ in weighted.named_parameters()]
    return aj.transform.Gradient(require_grads=wanted)(mod), wanted


def assert_gradients(weighted, differentiated, inputs):
    """main_adjoint against torch.autograd, input and parameter by parameter."""
    grad_mod, wanted = differentiated
    loss, grads = run_adjoint(grad_mod, weighted, inputs, "main_adjoint")
    ref_loss, by_input, by_param = torch_gradients(weighted, inputs)
    np.testing.assert_allclose(loss, ref_loss, rtol=RTOL)
    ref = [*by_input, *(by_param[w] for w in wanted[len(by_input):])]
    assert len(grads) == len(ref)
    for name, grad, expected in zip(wanted, grads, ref):
        np.testing.assert_allclose(grad, expected.numpy(), rtol=RTOL, atol=ATOL, err_msg=name)


def positional_names(mod, n):
    return [p.name_hint for p in mod["main"].params[:n]]


# -- the four models ----------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
        self.pool, self.avg = nn.MaxPool2d(2), nn.AvgPool2d(2, stride=1)
        self.flatten, self.fc = nn.Flatten(), nn.Linear(6 * 1 * 1, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        return self.fc(self.flatten(self.avg(F.silu(self.conv2(x)))))


class GPTBlock(nn.Module):
    """Pre-norm decoder block: causal self-attention (sdpa with is_causal, and
    a tril-mask buffer with masked_fill), a GELU (tanh) MLP, residuals."""

    def __init__(self, d=8, heads=2, max_len=16):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool())

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        by_sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        scores = (q @ k.transpose(-2, -1)) / (C // self.heads) ** 0.5
        by_hand = scores.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(-1) @ v
        y = ((by_sdpa + by_hand) / 2).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def encoder(batch_first):
    torch.manual_seed(3)
    return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first)


MODELS = {  # name: (module, example input shape, batch axis)
    "mlp": (MLP, (3, 6), 0),
    "cnn": (CNN, (2, 3, 8, 8), 0),
    "encoder": (lambda: encoder(True), (2, 5, 8), 0),
    "encoder_seq_first": (lambda: encoder(False), (5, 2, 8), 1),
    "gpt_block": (GPTBlock, (2, 5, 8), 0),
}


def resized(shape, axis, batch):
    return tuple(batch if i == axis else s for i, s in enumerate(shape))


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    """The model, its weighted scalar, and both imported with a symbolic batch."""
    make, shape, axis = MODELS[request.param]
    torch.manual_seed(0)
    module, (x,) = as_float64(make(), (torch.randn(*shape),))
    dynamic = ({axis: BATCH},)
    mod = aj.from_torch(module, (x,), dynamic_shapes=dynamic)
    out_shape = module(x).shape
    weighted = Weighted(module, resized(out_shape, axis, 1)).eval()
    return module, mod, weighted, differentiate(weighted, (x,), dynamic), shape, axis


def test_model_imports_with_a_symbolic_batch(model):
    module, mod, _, _, shape, axis = model
    fn = mod["main"]
    assert fn.attrs["num_input"] == 1
    assert fn.params[0].type.shape[axis] == "batch"
    weights = [p.name_hint for p in fn.params[1:]]
    assert weights == [param_name(n) for n, _ in module.named_parameters()] + (
        ["causal"] if isinstance(module, GPTBlock) else [])


@pytest.mark.parametrize("batch", [2, 3])
def test_model_forward_equals_torch(model, batch):
    module, mod, _, _, shape, axis = model
    torch.manual_seed(batch)
    assert_forward(module, mod, (torch.randn(*resized(shape, axis, batch), dtype=torch.float64),))


@pytest.mark.parametrize("batch", [2, 3])
def test_model_gradients_equal_torch_autograd(model, batch):
    _, _, weighted, grad_mod, shape, axis = model
    torch.manual_seed(10 + batch)
    assert_gradients(weighted, grad_mod, (torch.randn(*resized(shape, axis, batch), dtype=torch.float64),))


# -- one small module per op family ---------------------------------------------------


class Fn(nn.Module):
    """A module computing fn(x[, y]) with a Linear in front, so parameters get gradients too."""

    def __init__(self, fn, features=6):
        super().__init__()
        self.fn, self.lin = fn, nn.Linear(features, features)

    def forward(self, x, y=None):
        x = self.lin(x) if x.is_floating_point() and x.shape[-1] == self.lin.in_features else x
        return self.fn(x) if y is None else self.fn(x, y)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def randint(high, *shape):
    return torch.randint(0, high, shape)


def causal_scores(x):
    q = x.view(2, 3, 2, 3).transpose(1, 2)
    return F.scaled_dot_product_attention(q, q * 0.5, q + 1.0, is_causal=True)


class MHA(nn.Module):
    def __init__(self, batch_first=True, need_weights=False):
        super().__init__()
        self.mha, self.need_weights = nn.MultiheadAttention(6, 2, batch_first=batch_first), need_weights

    def forward(self, x):
        out, weights = self.mha(x, x * 2.0, x, need_weights=self.need_weights)
        return out if weights is None else out + weights.sum()


class MaskedMHA(nn.Module):
    """Self-attention with a bool attn_mask (causal, no query without keys)
    and a bool key_padding_mask (torch turns them into float masks with
    masked_fill_ on a fresh zeros_like)."""

    def __init__(self, batch_first=True, need_weights=False):
        super().__init__()
        self.mha, self.need_weights = nn.MultiheadAttention(6, 2, batch_first=batch_first), need_weights
        self.register_buffer("causal", torch.ones(4, 4).triu(1).bool(), persistent=False)

    def forward(self, x, key_padding_mask):
        out, weights = self.mha(x, x, x, attn_mask=self.causal, key_padding_mask=key_padding_mask,
                                need_weights=self.need_weights)
        return out if weights is None else out + weights.sum()


class PaddedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = encoder(True)

    def forward(self, x, key_padding_mask):
        return self.layer(x, src_key_padding_mask=key_padding_mask)


def in_place_on_fresh_tensors(x):
    t = torch.zeros_like(x)
    t.add_(x).mul_(2.0)
    return t.masked_fill_(x > 0.5, -1.0) + torch.ones(6, dtype=torch.float32).add_(x[0])


PADDED = torch.tensor([[False] * 4, [False] * 3 + [True]])
torch.manual_seed(0)
OP_CASES = {  # name: (module, inputs)
    "relu": (Fn(torch.relu), (randn(4, 6),)),
    "gelu": (Fn(F.gelu), (randn(4, 6),)),
    "gelu_tanh": (Fn(lambda x: F.gelu(x, approximate="tanh")), (randn(4, 6),)),
    "silu_tanh_sigmoid": (Fn(lambda x: F.silu(x) + torch.tanh(x) * torch.sigmoid(x)), (randn(4, 6),)),
    "exp_log_sqrt_abs": (Fn(lambda x: torch.exp(x) + torch.log(x.abs() + 1) + torch.sqrt(x * x + 1)), (randn(4, 6),)),
    "softmax_log_softmax": (Fn(lambda x: F.softmax(x, 0) + F.log_softmax(x, -1)), (randn(4, 6),)),
    "layer_norm": (nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6)), (randn(2, 3, 6),)),
    "layer_norm_2d_no_affine": (Fn(lambda x: F.layer_norm(x, (3, 6), eps=1e-3)), (randn(2, 3, 6),)),
    "batch_norm_eval": (nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)), (randn(2, 2, 3, 3),)),
    "dropout_eval": (nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5)), (randn(4, 6),)),
    "embedding": (nn.Sequential(nn.Embedding(10, 6), nn.Linear(6, 3)), (randint(10, 2, 5),)),
    "conv2d_stride_dilation_no_bias": (nn.Conv2d(2, 4, 3, stride=2, padding=2, dilation=2, bias=False),
                                       (randn(2, 2, 7, 7),)),
    "conv2d_groups_same": (nn.Conv2d(4, 4, 3, padding="same", groups=2), (randn(1, 4, 5, 5),)),
    "max_pool2d": (nn.MaxPool2d(3, stride=2, padding=1), (randn(2, 3, 7, 7),)),
    "avg_pool2d": (nn.AvgPool2d(3, stride=2, padding=1), (randn(2, 3, 7, 7),)),
    "avg_pool2d_no_pad_count": (nn.AvgPool2d(2, padding=1, count_include_pad=False), (randn(1, 2, 5, 5),)),
    "adaptive_avg_pool2d": (nn.Sequential(nn.Conv2d(2, 3, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                            (randn(2, 2, 4, 4),)),
    "flatten_unflatten": (Fn(lambda x: x.flatten(1).unflatten(1, (2, 12))), (randn(2, 4, 6),)),
    "matmul_bmm_mm": (Fn(lambda x, y: (x @ y).bmm(y.transpose(1, 2)) + torch.mm(x[0], y[0]).sum()),
                      (randn(3, 4, 6), randn(3, 6, 4))),
    "addmm": (Fn(lambda x, y: torch.addmm(y, x, x.t(), beta=0.5, alpha=2.0)), (randn(4, 6), randn(4, 4))),
    "transpose_permute_view": (Fn(lambda x: x.transpose(0, 2).permute(1, 0, 2).reshape(6, -1).view(2, 3, 8)),
                               (randn(2, 4, 6),)),
    "squeeze_unsqueeze_expand": (Fn(lambda x: x.unsqueeze(1).expand(-1, 3, -1).squeeze(0).unsqueeze(-1)),
                                 (randn(1, 6),)),
    "arithmetic": (Fn(lambda x, y: torch.add(x, y, alpha=2.0) - torch.sub(y, x, alpha=0.5) * 3.0
                   + 1.0 / (x * x + 1) - (2.0 - y) / 4 + x ** 3 + y ** 2), (randn(4, 6), randn(6))),
    "pow_tensor_exponent": (Fn(lambda x, y: x.abs() ** y + 2 ** y + 0.5 ** x), (randn(4, 6), randn(4, 6))),
    "mean_sum": (Fn(lambda x: x.mean((0, 2), keepdim=True) + x.sum(1).sum(-1)[:, None, None] + x.mean()),
                 (randn(2, 3, 6),)),
    "amax_amin": (Fn(lambda x: x.amax(-1) - x.amin(0).sum()), (randn(4, 6),)),
    "split_chunk_select_slice": (Fn(lambda x: x.split(2, 1)[1] * x.chunk(3, 1)[2] + x[:, 1:3] - x[1, ::3][None]),
                                 (randn(4, 6),)),
    "negative_select_slice": (Fn(lambda x: x[-1] * x[:, -3:-1].sum() + x[:, ::4][:2, :1] + x[-2:, 5:]),
                              (randn(4, 6),)),
    "unbind_stack_free": (Fn(lambda x: x.unbind(0)[1] + x.unbind(0)[3]), (randn(4, 6),)),
    "masked_fill_tril_triu_where": (Fn(lambda x: x.tril(1).masked_fill(x.triu() > 0.5, -2.0)
                                       + torch.where(x > 0, x, x * 0.1)), (randn(6, 6),)),
    "constant_tensors": (Fn(lambda x: x * torch.tensor(3.0) + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
                            - x.masked_fill(x > 0, torch.tensor(2.0))), (randn(4, 6),)),
    "in_place_on_fresh_tensors": (Fn(in_place_on_fresh_tensors), (randn(4, 6),)),
    "creation": (Fn(lambda x: x + torch.ones(6, dtype=x.dtype) * 2 + torch.arange(6, dtype=x.dtype)
                    + torch.full((4, 6), 0.5, dtype=x.dtype) + torch.zeros_like(x)), (randn(4, 6),)),
    "cross_entropy": (Fn(lambda x, t: F.cross_entropy(x, t) + F.cross_entropy(x, t, reduction="sum")
                         + F.cross_entropy(x, t, ignore_index=1)), (randn(5, 6), randint(6, 5))),
    "cross_entropy_none_3d": (Fn(lambda x, t: F.cross_entropy(x.transpose(1, 2), t, reduction="none")),
                              (randn(2, 3, 6), randint(6, 2, 3))),
    "nll_loss": (Fn(lambda x, t: F.nll_loss(F.log_softmax(x, -1), t)), (randn(5, 6), randint(6, 5))),
    "sdpa_causal": (Fn(causal_scores), (randn(2, 3, 6),)),
    "sdpa_masks": (Fn(lambda x, m: F.scaled_dot_product_attention(x, x, x, attn_mask=m)
                      + F.scaled_dot_product_attention(x, x * 2, x, attn_mask=m > 0, scale=0.3)),
                   (randn(2, 4, 6), randn(4, 4))),
    "sdpa_fully_masked_rows": (Fn(lambda x, m: F.scaled_dot_product_attention(x, x, x, attn_mask=m)),
                               (randn(2, 4, 6), torch.tensor([[1.0, -np.inf], [-np.inf, -np.inf]]).repeat(2, 2))),
    "multihead_attention": (MHA(), (randn(2, 4, 6),)),
    "multihead_attention_weights_seq_first": (MHA(batch_first=False, need_weights=True), (randn(4, 2, 6),)),
    "multihead_attention_bool_masks": (MaskedMHA(), (randn(2, 4, 6), PADDED)),
    "multihead_attention_bool_masks_weights_seq_first": (MaskedMHA(batch_first=False, need_weights=True),
                                                         (randn(4, 2, 6), PADDED)),
    "encoder_key_padding_mask": (PaddedEncoder(), (randn(2, 5, 8), torch.tensor([[False] * 5,
                                                                                 [False] * 3 + [True] * 2]))),
    "clamp_clip_hardtanh_relu6": (Fn(lambda x: torch.clamp(x, -0.5, 0.7) + x.clamp(min=0.1) + x.clamp(max=0.2)
                                     + torch.clip(x, x * 0.5, x * 0.5 + 1) + F.hardtanh(x, -0.3, 0.4) + F.relu6(x * 4)),
                                  (randn(4, 6),)),
    "hardswish_hardsigmoid_leaky_relu": (Fn(lambda x: F.hardswish(x * 3) + F.hardsigmoid(x * 3)
                                            + F.leaky_relu(x, 0.2)), (randn(4, 6),)),
    "prelu": (nn.Sequential(nn.Conv2d(3, 3, 1), nn.PReLU(3), nn.PReLU()), (randn(2, 3, 2, 2),)),
    "elu_selu_celu": (Fn(lambda x: F.elu(x, 0.7) + F.selu(x) + F.celu(x, 0.5) + F.elu(x * 100)), (randn(4, 6),)),
    "softplus_mish_log_sigmoid": (Fn(lambda x: F.softplus(x, 2.0, 1.0) + F.softplus(x * 100) + F.mish(x)
                                     + F.logsigmoid(x * 100) + F.logsigmoid(x)), (randn(4, 6),)),
    "cat_stack": (Fn(lambda x: torch.cat([x, x * 2], 0).sum(0) + torch.stack([x, x + 1], -1).sum((0, 2))),
                  (randn(4, 6),)),
    "flip_roll_pad": (Fn(lambda x: torch.flip(x, [0, 1]) + torch.roll(x, (1, -2), (0, 1)) + torch.roll(x, 5)
                         + F.pad(x, (1, -1, -1, 1), value=0.5)), (randn(4, 6),)),
    "cumsum_var_std": (Fn(lambda x: torch.cumsum(x, 1) + x.var(-1, keepdim=True) + x.std(0)
                          + torch.var(x, 1, correction=0)[:, None] + x.var()), (randn(4, 6),)),
    "logsumexp_norm": (Fn(lambda x: torch.logsumexp(x, -1, keepdim=True) + F.normalize(x, dim=0)
                          + torch.linalg.vector_norm(x, 1, -1)[:, None] + x.norm(3) + x.abs().amax() * 0
                          + torch.linalg.vector_norm(x, float("inf"), 0)), (randn(4, 6),)),
    "max_min_overloads": (Fn(lambda x: x.max() + torch.max(x, x * 2) + x.max(1).values[:, None]
                             + x.min(0, keepdim=True)[0]), (randn(4, 6),)),
    "index_select_repeat": (Fn(lambda x: x.index_select(1, torch.tensor([0, 2, 2])).repeat(1, 2)
                               + x.repeat_interleave(2, 0)[:4, :6].sum() + x.repeat(2, 1, 1).sum(0)[:, :6]),
                            (randn(4, 6),)),
    "upsample_nearest": (nn.Sequential(nn.Conv2d(2, 2, 1), nn.Upsample(scale_factor=2), nn.Upsample(size=(8, 12))),
                         (randn(1, 2, 2, 3),)),
    # torch picks the sources by the scale factor when given: 2 rows to 6 by 3.4 is not each row thrice
    # (the import repeated them so)
    "upsample_nearest_scale_factor": (nn.Sequential(nn.Conv2d(2, 2, 1), nn.Upsample(scale_factor=(3.4, 2.0))),
                                      (randn(1, 2, 2, 3),)),
    "upsample_nearest_size_of_no_whole_factor": (nn.Sequential(nn.Conv2d(2, 2, 1), nn.Upsample(size=(3, 5))),
                                                 (randn(1, 2, 2, 3),)),  # was refused
    "floor_trunc_divide_remainder": (Fn(lambda x, y: torch.div(x, 0.3, rounding_mode="floor")
                                        + torch.div(x, y, rounding_mode="floor")
                                        + torch.remainder(x, 0.4) + x % y + torch.div(x, -0.2, rounding_mode="trunc")),
                                     (randn(4, 6), randn(4, 6).abs() + 0.5)),
    "conv1d": (nn.Sequential(nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
                             nn.Conv1d(6, 6, 3, padding="same", bias=False)), (randn(2, 4, 9),)),
    "instance_norm_running_statistics": (nn.Sequential(nn.Conv1d(4, 4, 1), nn.InstanceNorm1d(4, track_running_stats=True)),
                                         (randn(2, 4, 5),)),
    "group_norm_instance_norm": (nn.Sequential(nn.Conv1d(4, 4, 1), nn.GroupNorm(2, 4), nn.InstanceNorm1d(4, affine=True)),
                                 (randn(2, 4, 5),)),
}


@pytest.fixture(scope="module", params=list(OP_CASES))
def op_case(request):
    torch.manual_seed(0)
    module, inputs = as_float64(*OP_CASES[request.param])
    mod = aj.from_torch(module, inputs)
    with torch.no_grad():
        out_shape = module(*inputs).shape
    weighted = Weighted(module, out_shape).eval()
    return module, mod, weighted, differentiate(weighted, inputs), inputs


def test_op_forward_equals_torch(op_case):
    module, mod, _, _, inputs = op_case
    assert_forward(module, mod, inputs)


def test_op_gradients_equal_torch_autograd(op_case):
    _, _, weighted, grad_mod, inputs = op_case
    assert_gradients(weighted, grad_mod, inputs)


# -- errors ---------------------------------------------------------------------------


class Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, 0)  # the line the error names


def test_unsupported_op_names_the_op_and_the_source_line():
    import inspect

    line = inspect.getsourcelines(Cumprod.forward)[1] + 1
    with pytest.raises(aj.UnsupportedOpError) as info:
        aj.from_torch(Cumprod(), (torch.randn(3),))
    message = str(info.value)
    assert "aten.cumprod.default" in message
    assert f"test_from_torch.py:{line}: return torch.cumprod(x, 0)" in message


class BoolAndIntOps(nn.Module):
    def forward(self, x):
        positive = x > 0
        counts = torch.cumsum(positive.int(), 0) + torch.cat([positive.int(), torch.ones(4, 1, dtype=torch.int32)], 1)[:, :6]
        ints = (x * 10).int()
        divided = (torch.div(ints, 3, rounding_mode="trunc") + torch.div(ints, -3, rounding_mode="trunc") + ints // 3
                   + ints % -3 + (x // 0.3).int())
        return (positive.any(-1), (x > -3).all(), x.any(), counts, torch.clamp(counts, 1, 2), x.argmax(-1),
                x.argmin(), x.argmax(0, keepdim=True), x.max(1).indices, x.min(0)[1], divided)


def test_bool_and_int_results_of_any_all_cumsum_cat_clamp_argmax_divide_equal_torch():
    x = torch.randn(4, 6).masked_fill(torch.eye(4, 6).bool(), 0.0)
    x[2, 3] = x[2, 5] = x[2].max() + 1  # a tie: the first index, as torch gives
    mod = aj.from_torch(BoolAndIntOps(), (x,))
    got = aj.build(mod)["main"](x.numpy())
    for g, want in zip(got, BoolAndIntOps()(x)):
        assert g.dtype == want.numpy().dtype and np.array_equal(g, want.numpy())


SPECIAL_VALUE_CASES = {  # where a composition of adjoint's ops could give NaN or inf where torch does not
    "logsumexp": lambda x: torch.logsumexp(x, -1),
    "clamp_hardtanh": lambda x: torch.clamp(x, -0.5, 0.7) + F.hardtanh(x),
    "clamp_hardtanh_min_past_max": lambda x: torch.clamp(x, 0.7, -0.5) + torch.ops.aten.hardtanh(x, 0.7, -0.5),
    "leaky_relu_elu": lambda x: F.leaky_relu(x) + F.elu(x),
    "softplus_mish_log_sigmoid": lambda x: F.softplus(x) + F.mish(x) + F.logsigmoid(x),
    "var_of_one": lambda x: x[:, :1].var(-1),
    "normalize_norm": lambda x: F.normalize(x, dim=-1) + torch.linalg.vector_norm(x, 2, -1, keepdim=True),
}


class Plain(nn.Module):
    """fn(x), with no parameters."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


# torch warns that var of one element has no degree of freedom (its NaN is the point of the case)
@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")
@pytest.mark.parametrize("name", list(SPECIAL_VALUE_CASES))
def test_infinities_nans_and_zero_rows_equal_torch(name):
    f = SPECIAL_VALUE_CASES[name]
    x = torch.tensor([[-np.inf, -np.inf, -np.inf], [1.0, np.inf, 0.0], [1.0, 2.0, np.nan], [0.0, 0.0, 0.0]],
                     dtype=torch.float64)
    got = aj.build(aj.from_torch(Plain(f), (x,)))["main"](x.numpy())
    np.testing.assert_allclose(got, f(x).numpy(), rtol=1e-12)


EMPTY = torch.zeros(2, 0, dtype=torch.float64)
SCALAR = torch.tensor(-1.5, dtype=torch.float64)
EDGE_CASES = {  # name: (fn, input): empty tensors, 0-d tensors, dim=[]
    "any_all_of_nothing": (lambda x: (x.any(), x.all(), x.any(-1), x.all(1, keepdim=True), (x > 0).any(0)), EMPTY),
    "any_all_dim_empty_list": (lambda x: (torch.any(x, dim=[]), torch.all(x, dim=[])),
                               torch.tensor([[0.0, 1.0], [np.nan, -2.0]])),
    "logsumexp_of_nothing": (lambda x: (torch.logsumexp(x, 1), torch.logsumexp(x, 1, keepdim=True)), EMPTY),
    "reductions_of_a_0d_tensor": (lambda x: (*x.max(0), x.argmin(-1), torch.logsumexp(x, 0), x.var(0, correction=0),
                                             torch.linalg.vector_norm(x, 1, 0), x.any(0), x.amax(0)), SCALAR),
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_empty_and_0d_tensors_equal_torch(name):
    """They were an ExecutionError (any/all and logsumexp of zero elements),
    a TypeInferenceError (dim 0 of a 0-d tensor) or reduced every dim (any
    and all with dim=[], which torch reads as none)."""
    f, x = EDGE_CASES[name]
    got = aj.build(aj.from_torch(Plain(f), (x,)))["main"](x.numpy())
    for g, want in zip(got, f(x)):
        assert g.dtype == want.numpy().dtype and g.shape == want.shape
        np.testing.assert_array_equal(g, want.numpy())


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
def test_std_over_a_dynamic_batch_counts_it_when_run():
    """var/std with a correction over a symbolic dim were refused; a batch
    of 1 gives torch's NaN."""
    module = Plain(lambda x: x.std(0) + x.var(correction=2) + x.var((0, 1), keepdim=True)[0])
    mod = aj.from_torch(module, (randn(3, 4),), dynamic_shapes=({0: BATCH},))
    for batch in (1, 2, 5):
        x = randn(batch, 4)
        np.testing.assert_allclose(aj.build(mod)["main"](x.numpy()), module(x).numpy(), rtol=1e-12)


def test_gradient_of_the_norm_of_a_zero_vector_is_zero_as_in_torch():
    x = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]], dtype=torch.float64, requires_grad=True)
    f = Plain(lambda x: torch.linalg.vector_norm(x, 2, -1).sum() + torch.linalg.vector_norm(x, 3, -1).sum())
    f(x).backward()
    mod = aj.transform.Gradient()(aj.from_torch(f, (x.detach(),)))
    _, (grad,) = aj.build(mod)["main_adjoint"](x.detach().numpy())
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=1e-12)


KINK_X = torch.tensor([[-3.0, -1.0, 0.0, 1.0, 3.0, 6.0], [2.0, 2.0, -0.5, 2.0, 0.0, 2.0]], dtype=torch.float64)
KINK_CASES = {  # torch's gradient where the op has a kink or a tie, at the points of KINK_X
    # hardtanh, relu6, hardsigmoid and hardswish give 0 at a bound, clamp passes it: they were all clamp's
    "clamp": lambda x: torch.clamp(x, -1.0, 3.0) + x.clamp(min=0.0),
    "hardtanh": lambda x: F.hardtanh(x, -1.0, 3.0) + F.hardtanh(x / 3),
    "relu6": lambda x: F.relu6(x),
    "hardsigmoid_hardswish": lambda x: F.hardsigmoid(x) + F.hardswish(x),
    "log_sigmoid": lambda x: F.logsigmoid(x),  # 1/2 at 0; was 1
    "leaky_relu_elu_softplus": lambda x: F.leaky_relu(x, 0.1) + F.elu(x, 0.7) + F.softplus(x, 1.0, 2.0),
    # max/min along a dim send a tie's gradient to the index they give; max() and amax split it
    "max_min_dim_ties": lambda x: x.max(1).values + x.min(1, keepdim=True)[0][:, 0] + x.amax(1) + x.max(),
    # |x| has gradient 0 at 0 in norms (it was 1), also for an ord below 1 (it was inf)
    "norms_at_zero": lambda x: torch.linalg.vector_norm(x, 1, -1) + torch.linalg.vector_norm(x, float("-inf"), -1)
    + torch.linalg.vector_norm(x, float("inf"), -1) + torch.linalg.vector_norm(x, 0.5, -1)
    + torch.linalg.vector_norm(x, 3, -1),
    "std_of_equal_entries": lambda x: x[:, 1:4:2].std(-1) + x.std(-1),  # 0 where the std is 0 (was NaN)
}


@pytest.mark.parametrize("name", list(KINK_CASES))
def test_gradients_at_kinks_and_ties_equal_torch_autograd(name):
    f = KINK_CASES[name]
    with torch.no_grad():
        weighted = Weighted(Plain(f), f(KINK_X).shape).eval()
    assert_gradients(weighted, differentiate(weighted, (KINK_X,)), (KINK_X,))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_but_constant_are_errors_naming_the_mode(mode):
    with pytest.raises(aj.UnsupportedOpError, match=f"with mode='{mode}' \\(only 'constant'\\) is not supported"):
        aj.from_torch(Fn(lambda x: F.pad(x, (1, 1), mode=mode)), (torch.randn(2, 3, 6),))


def test_group_norm_over_a_dynamic_dim_is_an_error_naming_it():
    length = torch.export.Dim("length")
    with pytest.raises(aj.UnsupportedOpError, match=r"group_norm.default' with dynamic channel and spatial dims "
                                                    r"\(4, 'length'\) is not supported"):
        aj.from_torch(nn.GroupNorm(2, 4), (torch.randn(2, 4, 5),), dynamic_shapes=({2: length},))


def test_dropout_in_training_mode_is_an_error():
    with pytest.raises(aj.UnsupportedOpError, match=r"aten.dropout.default' in training mode \(p=0.5\) is not "
                                                     r"supported \(node 'dropout', from .*\); call module.eval\(\) "
                                                     r"before importing$"):
        aj.from_torch(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train(), (torch.randn(1, 2),))


def test_log_sigmoid_forward_is_unsupported():
    """It returns (output, buffer); its translation gave the output alone,
    and getitem failed with a TypeInferenceError."""
    with pytest.raises(aj.UnsupportedOpError, match=r"op 'aten.log_sigmoid_forward.default' has no translation"):
        aj.from_torch(Plain(lambda x: torch.ops.aten.log_sigmoid_forward(x)[0]), (torch.randn(2, 3),))


def test_instance_norm_updating_running_statistics_is_an_error():
    """InstanceNorm(track_running_stats=True) in training mode normalizes by
    the input's statistics and updates its running ones in place; the import
    dropped the update."""
    with pytest.raises(aj.UnsupportedOpError, match=r"aten.instance_norm.default' in training mode with running "
                                                     r"statistics \(torch updates them in place\) is not supported "
                                                     r".*call module.eval\(\) before importing$"):
        aj.from_torch(nn.InstanceNorm1d(3, track_running_stats=True).train(), (torch.randn(2, 3, 4),))


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_with_batch_statistics_is_an_error(train):
    """Without running statistics a BatchNorm uses the batch's also in eval mode."""
    module = nn.BatchNorm1d(3, track_running_stats=False).train(train)
    with pytest.raises(aj.UnsupportedOpError, match=r"aten.batch_norm.default' with batch statistics \(training "
                                                     r"mode, or no running statistics\) is not supported \(node "
                                                     r"'batch_norm', from .*\); import a BatchNorm that has running "
                                                     r"statistics in eval mode \(module.eval\(\)\)$"):
        aj.from_torch(module, (torch.randn(4, 3),))


def test_in_place_op_is_an_error():
    with pytest.raises(aj.UnsupportedOpError, match=r"op 'aten.add_.Tensor' changes a tensor in place .*"
                                                     r"batchnorm.py:\d+: self.num_batches_tracked.add_\(1\).*"
                                                     r"a BatchNorm in training mode .*call module.eval\(\)"):
        aj.from_torch(nn.BatchNorm1d(3).train(), (torch.randn(4, 3),))


class SeenChange(nn.Module):
    """In-place ops whose change another node could see: of an input, and of a fresh tensor read twice."""

    def __init__(self, of_input):
        super().__init__()
        self.of_input = of_input

    def forward(self, x):
        if self.of_input:
            return x.mul_(2.0)
        t = x * 2.0
        u = t + 1.0
        return t.add_(1.0) + u


@pytest.mark.parametrize("of_input", [True, False])
def test_in_place_op_whose_change_could_be_seen_is_an_error(of_input):
    with pytest.raises(aj.UnsupportedOpError) as info:
        aj.from_torch(SeenChange(of_input), (torch.randn(3),))
    message = str(info.value)
    assert "changes a tensor in place" in message and "BatchNorm" not in message
    assert "imported only on a tensor made in the graph that nothing else reads" in message


def test_in_place_op_casts_to_the_dtype_of_the_tensor_it_changes():
    def fn(x):
        return torch.zeros(3).add_(x)  # float32 + float64, in float64, kept float32

    x = randn(3)
    mod = aj.from_torch(Fn(fn), (x,))
    out = aj.build(mod)["main"](x.numpy(), *aj.from_torch_state(Fn(fn), mod).values())
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, fn(x).numpy())


def test_embedding_padding_idx_is_an_error():
    with pytest.raises(aj.UnsupportedOpError, match="padding_idx=0"):
        aj.from_torch(nn.Embedding(5, 2, padding_idx=0), (torch.tensor([1, 0]),))


def test_a_module_torch_cannot_export_is_an_aj_error():
    class DataDependent(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(aj.Error, match="torch.export could not export DataDependent"):
        aj.from_torch(DataDependent(), (torch.randn(3),))


def test_example_inputs_must_be_tensors():
    with pytest.raises(aj.Error, match="example_inputs must be a tensor or a tuple of tensors"):
        aj.from_torch(nn.Linear(2, 2), [np.zeros((1, 2))])


def test_one_tensor_given_for_two_inputs_is_an_error():
    """torch.export would read only the second input (x * 2 + y as y * 2 + y)."""
    t = torch.randn(3)
    with pytest.raises(aj.Error, match=r"example inputs 0 and 1 are the same tensor.*t.clone\(\)"):
        aj.from_torch(Fn(lambda x, y: x * 2 + y, features=3), (t, t))


def test_unsupported_dtype_is_an_error():
    with pytest.raises(aj.Error, match="dtype torch.float16"):
        aj.from_torch(nn.Linear(2, 2).half(), (torch.randn(1, 2).half(),))


class Buffered(nn.Module):
    """x + fn(buffer c), with an unused buffer of each dtype adjoint lacks beside."""

    def __init__(self, c, fn=lambda c: c, persistent=False):
        super().__init__()
        self.fn = fn
        self.register_buffer("c", c, persistent=persistent)
        for dtype in (torch.float16, torch.bfloat16, torch.uint8, torch.int8):
            name = str(dtype).removeprefix("torch.")
            self.register_buffer(f"unused_{name}", torch.ones(2, dtype=dtype))
            self.register_buffer(f"unused_np_{name}", torch.ones(2, dtype=dtype), persistent=False)

    def forward(self, x):
        return x + self.fn(self.c)


HALF_CONSTANT_CASES = {  # torch converts the float16/bfloat16 constant exactly: imported as float32
    "bfloat16_vector_float": (lambda x: x * torch.tensor([1.0, 2.5, -3.0], dtype=torch.bfloat16).float(),
                              torch.randn(2, 3)),
    "float16_0d_times_float32": (lambda x: x * torch.tensor(2.5, dtype=torch.float16), torch.randn(3)),
    "bfloat16_0d_beside_float64": (lambda x: torch.where(x > 0, x, torch.tensor(-0.1, dtype=torch.bfloat16)),
                                   torch.randn(3, dtype=torch.float64)),
    "float16_vector_beside_float32": (lambda x: x - torch.tensor([1.0, 1e-3, 6e4], dtype=torch.float16),
                                      torch.randn(2, 3)),
    "float16_compared_beside_float32": (lambda x: x < torch.tensor(0.1, dtype=torch.float16), torch.randn(3)),
    "float16_masked_fill": (lambda x: x.masked_fill(x > 0, torch.tensor(1e-3, dtype=torch.float16)),
                            torch.randn(3)),
    "bfloat16_to_int": (lambda x: x + torch.tensor([2.5, -7.0], dtype=torch.bfloat16).long(),
                        torch.tensor([1, 2])),
}


@pytest.mark.parametrize("name", list(HALF_CONSTANT_CASES))
def test_float16_and_bfloat16_constants_torch_converts_exactly(name):
    """torch.tensor(..., dtype=bfloat16) gave a raw TypeError (unsupported
    ScalarType BFloat16), a float16 one an aj.Error naming no node."""
    fn, x = HALF_CONSTANT_CASES[name]
    out = aj.build(aj.from_torch(Plain(fn), (x,)))["main"](x.numpy())
    expected = fn(x).numpy()
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_buffers_nothing_reads_are_not_converted():
    """Unused buffers of dtypes adjoint lacks (persistent or not) were converted, and refused."""
    module = Buffered(torch.arange(3.0), lambda c: c.float())
    mod = aj.from_torch(module, (torch.randn(3),))
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    assert_forward(module, mod, (torch.randn(3),))
    buffered_half = Buffered(torch.tensor([1.0, 0.5, 2.0], dtype=torch.bfloat16), lambda c: c.float())
    x = torch.randn(3)
    np.testing.assert_array_equal(aj.build(aj.from_torch(buffered_half, (x,)))["main"](x.numpy()),
                                  buffered_half(x).numpy())


HALF_CONSTANT_ERRORS = {  # name: (module, input, message)
    "uint8_buffer": (Buffered(torch.ones(3, dtype=torch.uint8)), torch.randn(3),
                     r"buffer 'c' \(read by node 'add', from .*test_from_torch.py:\d+: return x \+ self.fn\(self.c\)\) "
                     r"has dtype torch.uint8; adjoint has"),
    "float16_vector_beside_a_0d": (Buffered(torch.ones(3, dtype=torch.float16)), torch.randn(()),
                                   r"buffer 'c' has dtype torch.float16, which adjoint lacks; op 'aten.add.Tensor' "
                                   r"\(node 'add', from .*test_from_torch.py:\d+: return x \+ self.fn\(self.c\)\) "
                                   r"reads it where float32 would not give torch's values"),
    "float16_0d_beside_int": (Plain(lambda x: x * torch.tensor(0.5, dtype=torch.float16)), torch.tensor([1, 2]),
                              r"constant tensor 'lifted_tensor_0' has dtype torch.float16.* op 'aten.mul.Tensor' "
                              r"\(node 'mul', from .*test_from_torch.py:\d+: return self.fn\(x\)\)"),
    "bfloat16_relu": (Buffered(torch.ones(3, dtype=torch.bfloat16), torch.relu), torch.randn(3),
                      r"buffer 'c' has dtype torch.bfloat16.* op 'aten.relu.default' \(node 'relu'"),
    "returned": (Plain(lambda x: (x, torch.tensor([2.0], dtype=torch.float16))), torch.randn(3),
                 r"returns constant tensor 'lifted_tensor_0', of dtype torch.float16, which adjoint lacks"),
}


def test_an_input_of_a_dtype_adjoint_lacks_is_an_error_saying_where_it_comes_from():
    # the message had no "aj.from_torch:" where every other from_torch error has it
    x = torch.ones(2, dtype=torch.uint8)
    with pytest.raises(aj.Error, match=r"^aj\.from_torch: param '\w+' has dtype torch\.uint8; adjoint has "):
        aj.from_torch(Plain(lambda x: x + 1), (x,))


@pytest.mark.parametrize("name", list(HALF_CONSTANT_ERRORS))
def test_constant_of_a_dtype_adjoint_lacks_is_an_error_naming_it(name):
    module, x, message = HALF_CONSTANT_ERRORS[name]
    module(x)
    with pytest.raises(aj.Error, match=message):
        aj.from_torch(module, (x,))


# -- names, constants, options ---------------------------------------------------------


class Named(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.register_buffer("shift", torch.full((3,), 0.5), persistent=False)
        self.register_buffer("unused", torch.zeros(3))

    def forward(self, weight):  # an input named like a parameter would be
        return self.layers[1](self.layers[0](weight)) * self.scale + self.shift


def test_params_are_inputs_then_parameters_then_used_persistent_buffers():
    mod = aj.from_torch(Named(), (torch.randn(2, 3),), func_name="forward")
    fn = mod["forward"]
    assert fn.attrs["num_input"] == 1
    assert [p.name_hint for p in fn.params] == ["weight", "layers_0_weight", "layers_0_bias", "layers_1_weight",
                                                "layers_1_bias", "scale"]
    assert fn.attrs["frozen"] == "scale"  # the buffers training reads but does not update
    assert aj.parse(mod.script()).script() == mod.script()


def test_input_named_like_a_weight_is_renamed():
    class Clash(nn.Module):
        def __init__(self):
            super().__init__()
            self.x = nn.Parameter(torch.ones(2))

        def forward(self, x):
            return x * self.x

    assert [p.name_hint for p in aj.from_torch(Clash(), (torch.randn(2),))["main"].params] == ["x_1", "x"]


def test_tuple_output_and_several_inputs():
    class Two(nn.Module):
        def forward(self, a, b):
            return a + b, a * b

    module, inputs = as_float64(Two(), (torch.randn(2, 3), torch.randn(3)))
    mod = aj.from_torch(module, inputs)
    assert mod["main"].attrs["num_input"] == 2
    assert_forward(module, mod, inputs)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = (t.unflatten(-1, (2, 4)).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2)


def test_symbolic_dims_keep_torch_dim_names():
    module = CausalSelfAttention().double().eval()
    seq = torch.export.Dim("seq", min=2, max=64)
    mod = aj.from_torch(module, (randn(2, 5, 8),), dynamic_shapes={"x": {0: BATCH, 1: seq}})
    assert mod["main"].params[0].type.shape == ("batch", "seq", 8)
    assert mod["main"].ret.type.shape == ("batch", "seq", 8)
    for batch, length in [(1, 3), (3, 7)]:
        assert_forward(module, mod, (randn(batch, length, 8),))


class MaskedEncoder(nn.Module):
    """A float64 encoder layer given torch's float32 causal mask (torch's default dtype)."""

    def __init__(self):
        super().__init__()
        self.layer = encoder(True)

    def forward(self, x):
        return self.layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(x.shape[1]))


@pytest.mark.parametrize("case", ["sdpa", "encoder"])
def test_float32_attn_mask_beside_float64_queries(case):
    """torch adds a float32 mask to float64 scores in float64; the import
    refused the add of two dtypes."""
    if case == "sdpa":
        module = Fn(lambda q, m: F.scaled_dot_product_attention(q, q * 0.5, q, attn_mask=m))
        inputs = (randn(2, 3, 4), nn.Transformer.generate_square_subsequent_mask(3))
        assert inputs[1].dtype == torch.float32
    else:
        module, inputs = as_float64(MaskedEncoder(), (randn(2, 5, 8),))
    mod = aj.from_torch(module.eval(), inputs)
    assert mod["main"].ret.type.dtype == "float64"
    assert_forward(module, mod, inputs)


# -- weights both ways -------------------------------------------------------------------


def test_from_torch_state_gives_weights_in_param_order_and_dtype():
    module = Named()
    mod = aj.from_torch(module.double(), (randn(2, 3),))
    params = aj.from_torch_state(module.float().state_dict(), mod)  # float32 tensors into float64 params
    assert list(params) == [p.name_hint for p in mod["main"].params[1:]]
    assert all(a.dtype == np.float64 for a in params.values())
    np.testing.assert_array_equal(params["layers_1_bias"], module.layers[1].bias.detach().numpy())


def test_to_torch_state_moves_weights_back():
    module, (x,) = as_float64(MLP(), (torch.randn(3, 6),))
    mod = aj.from_torch(module, (x,))
    params = {name: value + 1.0 for name, value in aj.from_torch_state(module, mod).items()}
    other = MLP().double()
    other.load_state_dict(aj.to_torch_state(params, other))
    np.testing.assert_array_equal(other.fc2.weight.detach().numpy(), params["fc2_weight"])
    assert other.fc2.weight.dtype == torch.float64
    assert_forward(other, mod, (x,))  # runs mod with the weights taken back from `other`


def test_state_errors_name_the_param():
    module = MLP()
    mod = aj.from_torch(module, (torch.randn(3, 6),))
    state = module.state_dict()
    del state["fc2.bias"]
    with pytest.raises(aj.Error, match="no entry of the state dict becomes param 'fc2_bias'"):
        aj.from_torch_state(state, mod)
    state["fc2.bias"] = torch.zeros(7)
    with pytest.raises(aj.Error, match=r"param 'fc2_bias' has shape \(4,\), torch's 'fc2.bias' has \(7,\)"):
        aj.from_torch_state(state, mod)
    with pytest.raises(aj.Error, match="param 'nope' matches no entry"):
        aj.to_torch_state({"nope": np.zeros(2)}, module)
    with pytest.raises(aj.Error, match=r"param 'fc1_bias' has shape \(2,\)"):
        aj.to_torch_state({"fc1_bias": np.zeros(2)}, module)


BAD_STATE_CALLS = {  # name: (call taking (module, mod), the message)
    "state_none": (lambda m, mod: aj.from_torch_state(None, mod),
                   r"from_torch_state: torch_state must be a torch module or its state dict, got NoneType"),
    "mod_none": (lambda m, mod: aj.from_torch_state(m, None), r"mod must be an adjoint Module .*got NoneType"),
    "state_key_not_str": (lambda m, mod: aj.from_torch_state({1: torch.zeros(2)}, mod),
                          r"state dict's keys must be torch names \(str\), got 1"),
    "state_entry_none": (lambda m, mod: aj.from_torch_state({**m.state_dict(), "fc1.bias": None}, mod),
                         r"from_torch_state: the state dict's entry 'fc1.bias' is not a tensor or an array "
                         r"of numbers: None"),
    "params_none": (lambda m, mod: aj.to_torch_state(None, m), r"to_torch_state: params must be a dict .*NoneType"),
    "param_of_nones": (lambda m, mod: aj.to_torch_state({"fc1_bias": [None, None]}, m),
                       r"to_torch_state: param 'fc1_bias' is not a tensor or an array of numbers: \[None, None\]"),
    "param_ragged": (lambda m, mod: aj.to_torch_state({"fc1_bias": [[1.0], [2.0, 3.0]]}, m),
                     r"to_torch_state: param 'fc1_bias' is not an array of numbers"),
    "to_state_none": (lambda m, mod: aj.to_torch_state({"fc1_bias": np.zeros(16)}, None),
                      r"to_torch_state: torch_state must be a torch module or its state dict, got NoneType"),
    # entries that are tensors but not arrays of real numbers: were a raw TypeError, a raw
    # NotImplementedError, and (a complex tensor) the real part taken silently
    "state_entry_sparse": (lambda m, mod: aj.from_torch_state(
        {**m.state_dict(), "fc1.weight": m.fc1.weight.detach().to_sparse()}, mod),
        r"from_torch_state: the state dict's entry 'fc1.weight' is a sparse_coo tensor, not an array of numbers: "
        r"give t.to_dense\(\)"),
    "state_entry_meta": (lambda m, mod: aj.from_torch_state({**m.state_dict(), "fc1.bias": m.fc1.bias.to("meta")}, mod),
                         r"from_torch_state: the state dict's entry 'fc1.bias' is a meta tensor, which holds no values"),
    "state_entry_complex": (lambda m, mod: aj.from_torch_state(
        {**m.state_dict(), "fc1.bias": torch.full((16,), 1 + 2j)}, mod),
        r"entry 'fc1.bias' is a tensor of complex numbers \(torch.complex64\); adjoint's numbers are real"),
    "state_entry_complex_array": (lambda m, mod: aj.from_torch_state(
        {**m.state_dict(), "fc1.bias": np.full(16, 1 + 2j)}, mod),
        r"entry 'fc1.bias' is not a tensor or an array of numbers"),
    "param_complex": (lambda m, mod: aj.to_torch_state({"fc1_bias": torch.full((16,), 1j)}, m),
                      r"to_torch_state: param 'fc1_bias' is a tensor of complex numbers"),
    # values the cast to the entry's or param's dtype would change: were wrapped, or NaN made INT64_MIN
    "state_entry_past_float32": (lambda m, mod: aj.from_torch_state(
        {**m.state_dict(), "fc1.bias": np.full(16, 1e40)}, mod),
        r"from_torch_state: the state dict's entry 'fc1.bias' \(for param 'fc1_bias', float32\) holds 1e\+40, "
        r"which float32 does not \(a cast would change it\)"),
    "param_past_int32": (lambda m, mod: aj.to_torch_state({"w": np.array([1, 2**40])},
                                                          {"w": torch.zeros(2, dtype=torch.int32)}),
                         r"to_torch_state: param 'w' \(for torch's 'w', int32\) holds 1099511627776, which int32 "
                         r"does not \(a cast would change it\)"),
    "param_nan_into_int64": (lambda m, mod: aj.to_torch_state({"w": np.array([np.nan])},
                                                              {"w": torch.zeros(1, dtype=torch.int64)}),
                             r"param 'w' \(for torch's 'w', int64\) holds nan, which int64 does not"),
    "param_fraction_into_int64": (lambda m, mod: aj.to_torch_state({"w": np.array([2.5])},
                                                                   {"w": np.zeros(1, np.int64)}),
                                  r"param 'w' \(for torch's 'w', int64\) holds 2.5, which int64 does not"),
    "param_2_into_bool": (lambda m, mod: aj.to_torch_state({"w": np.array([2])}, {"w": torch.zeros(1, dtype=bool)}),
                          r"param 'w' \(for torch's 'w', bool\) holds 2, which bool does not"),
}


@pytest.mark.parametrize("name", list(BAD_STATE_CALLS))
def test_bad_state_arguments_are_errors_naming_them(name):
    call, message = BAD_STATE_CALLS[name]
    module = MLP()
    mod = aj.from_torch(module, (torch.randn(3, 6),))
    with pytest.raises(aj.Error, match=message):
        call(module, mod)


def test_state_dicts_of_numpy_arrays():
    module, (x,) = as_float64(MLP(), (torch.randn(3, 6),))
    mod = aj.from_torch(module, (x,))
    arrays = {name: t.numpy() for name, t in module.state_dict().items()}
    params = aj.from_torch_state(arrays, mod)
    np.testing.assert_array_equal(params["fc1_weight"], arrays["fc1.weight"])
    state = aj.to_torch_state({name: value * 2 for name, value in params.items()}, arrays)
    assert isinstance(state["fc2.bias"], torch.Tensor) and state["fc2.bias"].dtype == torch.float64
    np.testing.assert_array_equal(state["fc2.bias"].numpy(), arrays["fc2.bias"] * 2)


def test_state_values_that_fit_the_dtype_are_converted():
    state = aj.to_torch_state({"i": np.array([1.0, -2.0**63]), "b": np.array([1, 0]), "f": np.array([1e38, np.inf])},
                              {"i": torch.zeros(2, dtype=torch.int64), "b": torch.zeros(2, dtype=torch.bool),
                               "f": torch.zeros(2)})
    assert state["i"].tolist() == [1, -2**63] and state["b"].tolist() == [True, False]
    assert state["f"].dtype == torch.float32 and state["f"][1] == np.inf


def test_a_value_past_bfloat16s_range_is_an_error():
    """NumPy has no bfloat16, so the entry's values were checked against
    float32: 3.4e38, finite in float32, became inf in the bfloat16 entry."""
    with pytest.raises(aj.Error, match=r"aj.to_torch_state: param 'f' \(for torch's 'f', bfloat16\) holds "
                                       r"3.399\d*e\+38, which bfloat16 does not"):
        aj.to_torch_state({"f": np.array([1.0, 3.4e38], dtype=np.float32)}, {"f": torch.zeros(2, dtype=torch.bfloat16)})
    state = aj.to_torch_state({"f": np.array([1.5, -np.inf, 3.3e38], dtype=np.float32)},
                              {"f": torch.zeros(3, dtype=torch.bfloat16)})
    assert state["f"].dtype == torch.bfloat16 and state["f"][:2].tolist() == [1.5, -np.inf]
    assert torch.isfinite(state["f"][2])


# -- torch stays optional ------------------------------------------------------------------


def run_python(code):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_adjoint_does_not_import_torch():
    result = run_python("import sys, adjoint; print('torch' in sys.modules)")
    assert result.stdout.strip() == "False", result.stderr


def test_from_torch_without_torch_is_an_error_with_an_install_hint():
    result = run_python("import sys; sys.modules['torch'] = None\n"
                        "import adjoint as aj\n"
                        "try:\n    aj.from_torch(None, ())\n"
                        "except aj.Error as e:\n    print(e)")
    assert "needs PyTorch, which is not installed: pip install 'adjoint[torch]'" in result.stdout, result.stderr


def test_slice_with_a_dynamic_bound_is_an_error():
    class Prefix(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(16, 4))

        def forward(self, x):
            return x + self.table[: x.shape[0]]

    n = torch.export.Dim("n", max=16)
    with pytest.raises(aj.UnsupportedOpError, match=r"aten.slice.Tensor' with dynamic bounds .*"
                                                    r"return x \+ self.table\[: x.shape\[0\]\]"):
        aj.from_torch(Prefix(), (torch.randn(5, 4),), dynamic_shapes=({0: n},))


SIZE_AS_VALUE_CASES = {  # name: (forward, the message's start)
    "div": (lambda x: x / x.shape[0], r"op 'aten.div.Tensor' \(node 'div', from .*test_from_torch.py:\d+: .*\): "),
    "mul": (lambda x: x * x.shape[0], r"op 'aten.mul.Tensor' \(node 'mul'.*\): "),
    "full": (lambda x: x + torch.full((3,), x.shape[0]), r"op 'aten.full.default' \(node 'full'.*\): "),
    "masked_fill": (lambda x: x.masked_fill(x > 0, x.shape[0]), r"op 'aten.masked_fill.Scalar' \(node 'masked_fill'.*\): "),
    "output": (lambda x: (x, x.shape[0]), r"output 1 of forward \(node 'sym_size_int_1', from .*\): "),
}


@pytest.mark.parametrize("name", list(SIZE_AS_VALUE_CASES))
def test_dynamic_size_used_as_a_value_is_an_error(name):
    """It was an internal message ("an operand of type str has no dtype to
    promote", "output 1 is not a tensor (str)")."""
    forward, where = SIZE_AS_VALUE_CASES[name]
    with pytest.raises(aj.Error, match=where + r"the dynamic size batch \(x.shape\[i\] of a torch.export.Dim axis\) "
                                               r"used as a value is not supported"):
        aj.from_torch(Plain(forward), (torch.randn(4, 3),), dynamic_shapes=({0: BATCH},))


GOLDEN_LINEAR_GELU = """
@function(num_input=1)
def main(input: Tensor(("batch", 3), "float32"), p_0_weight: Tensor((2, 3), "float32"), p_0_bias: Tensor((2,), "float32")) -> Tensor(("batch", 2), "float32"):
    lv: Tensor((3, 2), "float32") = permute_dims(p_0_weight)
    lv_1: Tensor(("batch", 2), "float32") = matmul(input, lv)
    lv_2: Tensor(("batch", 2), "float32") = add(lv_1, p_0_bias)
    lv_3: Tensor(("batch", 2), "float32") = multiply(lv_2, lv_2)
    lv_4: Tensor(("batch", 2), "float32") = multiply(lv_3, lv_2)
    lv_5: Tensor(("batch", 2), "float32") = multiply(lv_4, const(0.044715, "float32"))
    lv_6: Tensor(("batch", 2), "float32") = add(lv_2, lv_5)
    lv_7: Tensor(("batch", 2), "float32") = multiply(lv_6, const(0.7978846, "float32"))
    lv_8: Tensor(("batch", 2), "float32") = tanh(lv_7)
    lv_9: Tensor(("batch", 2), "float32") = add(lv_8, const(1.0, "float32"))
    lv_10: Tensor(("batch", 2), "float32") = multiply(lv_2, const(0.5, "float32"))
    lv_11: Tensor(("batch", 2), "float32") = multiply(lv_10, lv_9)
    return lv_11
"""


def test_golden_linear_gelu_tanh_dropout():
    """nn.Linear is matmul(x, permute_dims(w)) + b (the form CombineParallelMatmul
    matches); GELU (tanh) is torch's formula; Dropout in eval mode is nothing."""
    module = nn.Sequential(nn.Linear(3, 2), nn.GELU(approximate="tanh"), nn.Dropout(0.1)).eval()
    mod = aj.from_torch(module, (torch.randn(4, 3),), dynamic_shapes=({0: BATCH},))
    aj.assert_structural_equal(mod, aj.parse(GOLDEN_LINEAR_GELU))
    assert mod.script().strip() == GOLDEN_LINEAR_GELU.strip()


def test_indexing_along_a_symbolic_batch():
    """x[1] on the symbolic axis (a take), slices of the static one (strided_slice)."""
    module = Fn(lambda x: x[1] + x[:, 1:4].sum(1, keepdim=True) + x[:, -1:]).double().eval()
    mod = aj.from_torch(module, (randn(3, 6),), dynamic_shapes=({0: BATCH},))
    ops = {b.value.op for b in mod["main"].bindings if isinstance(b.value, aj.Call)}
    assert {"take", "strided_slice"} <= ops
    for batch in (2, 5):
        assert_forward(module, mod, (randn(batch, 6),))


@pytest.mark.parametrize("inputs, item, kind", [((torch.randn(2), 3), 1, "int"), ([0.5], 0, "float"),
                                                ((torch.randn(2), np.zeros(2)), 1, "ndarray")])
def test_an_example_input_that_is_no_tensor_is_named(inputs, item, kind):
    # regression: a tuple holding a number said "... a tuple of tensors, got tuple"
    with pytest.raises(aj.Error, match=rf"but item {item} is of type {kind}, not a tensor"):
        aj.from_torch(nn.Linear(2, 2), inputs)


def test_the_output_keeps_the_nesting_forward_returns():
    # regression: the output was flattened, so (x, (y, [z])) came back as (x, y, z) and (x,) as x
    Pair = collections.namedtuple("Pair", "a b")

    class Nested(nn.Module):
        def forward(self, x):
            return x, (x * 2, [x + 1]), {"k": x - 1, "j": x * 3}, Pair(x, x * 4), (x,)

    mod = aj.from_torch(Nested(), (torch.randn(2),))
    x = np.array([1.0, 2.0], np.float32)
    a, (b, (c,)), (k, j), (pa, pb), (one,) = aj.build(mod)["main"](x)
    for got, want in [(a, x), (b, x * 2), (c, x + 1), (k, x - 1), (j, x * 3), (pa, x), (pb, x * 4), (one, x)]:
        np.testing.assert_array_equal(got, want)

    class One(nn.Module):
        def forward(self, x):
            return (x,)

    assert isinstance(aj.build(aj.from_torch(One(), (torch.randn(2),)))["main"](x), tuple)
