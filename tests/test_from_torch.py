"""aj.from_torch: torch modules imported through torch.export compute what
torch computes, forward and backward (float64, rtol 1e-7), at every batch
size when the batch is symbolic; unsupported ops are named with their
source line; weights move both ways with from_torch_state/to_torch_state."""

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
        self.register_buffer("w", torch.randn(*out_shape, generator=g, dtype=torch.float64), persistent=False)

    def forward(self, x):
        return (self.inner(x) * self.w).sum()


def as_float64(module, inputs):
    module = module.double().eval()
    return module, tuple(t.double() if t.is_floating_point() else t for t in inputs)


def run_adjoint(mod, module, inputs, func="main"):
    exe = aj.build(mod)
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
    """The loss and {param name: gradient} of every float input and parameter, by torch.autograd."""
    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    module.zero_grad()
    loss = module(*leaves)
    loss.backward()
    names = [f"x{i}" for i in range(len(leaves))]
    grads = {n: t.grad for n, t in zip(names, leaves) if t.is_floating_point()}
    grads.update({param_name(n): p.grad for n, p in module.named_parameters()})
    return loss.item(), grads


def assert_gradients(weighted, grad_mod, inputs):
    """main_adjoint of grad_mod against torch.autograd, input and parameter by parameter."""
    loss, grads = run_adjoint(grad_mod, weighted, inputs, "main_adjoint")
    ref_loss, ref = torch_gradients(weighted, inputs)
    np.testing.assert_allclose(loss, ref_loss, rtol=RTOL)
    fn = grad_mod["main"]
    float_params = [p for p in fn.params if p.type.dtype.startswith("float")]
    assert len(grads) == len(float_params) == len(ref)
    for i, (param, grad) in enumerate(zip(float_params, grads)):
        key = f"x{i}" if i < fn.attrs["num_input"] else param.name_hint
        np.testing.assert_allclose(grad, ref[key].numpy(), rtol=RTOL, atol=ATOL, err_msg=param.name_hint)


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
    grad_mod = aj.transform.Gradient()(aj.from_torch(weighted, (x,), dynamic_shapes=dynamic))
    return module, mod, weighted, grad_mod, shape, axis


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
