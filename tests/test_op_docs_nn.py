"""The reference text (op_schema(name)["doc"], each aj.op docstring) of the
manipulate and nn families: every op's entry has the agreed parts, explains
each attr, and its checkable claims hold: the NumPy and PyTorch code it names
gives the op's result on a float64 example (PyTorch's only where torch is
installed), its Dtypes line lists exactly the dtypes type inference accepts,
its FLOPs line agrees with the FLOP count, and the examples it gives hold."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

import adjoint as aj
from adjoint import _core
from conftest import build_op, run_op

FAMILIES = ("manipulate", "nn")
OPS = [n for n in _core.op_names() if _core.op_schema(n)["family"] in FAMILIES]
LABELS = ("Type:", "VJP:", "FLOPs:", "Dtypes:")
DTYPES = ("float32", "float64", "int32", "int64", "bool")
RNG = np.random.default_rng(15)


def doc(op: str) -> str:
    return _core.op_schema(op)["doc"]


def randn(*shape):
    return RNG.standard_normal(shape)


# One float64 example per op: its args (arrays; a list for a tuple argument)
# and attrs, chosen so PyTorch's equivalents accept them too.
x34 = randn(3, 4)
logits, probs = randn(3, 5), RNG.dirichlet(np.ones(5), size=3)
conv_x, conv_w = randn(2, 4, 7, 6), randn(6, 2, 3, 2)
conv_attrs = dict(strides=[2, 1], padding=[1, 2], dilation=[1, 2], groups=2)
conv_y = run_op("conv2d", conv_x, conv_w, **conv_attrs)
pool_x = randn(2, 3, 7, 8)
pool_attrs = dict(pool_size=[3, 2], strides=[2, 2], padding=[1, 1], ceil_mode=True)
EXAMPLES = {
    "permute_dims": ([randn(2, 3, 4)], dict(axes=[1, 2, 0])),
    "reshape": ([x34], dict(shape=[2, -1, 3])),
    "broadcast_to": ([randn(3, 1)], dict(shape=[2, 3, 4])),
    "collapse_sum_to": ([randn(2, 3, 4)], dict(shape=[3, 1])),
    "expand_dims": ([x34], dict(axis=[1])),
    "squeeze": ([randn(1, 3, 1)], dict(axis=[0])),
    "concat": ([[randn(2, 3), randn(4, 3)]], dict(axis=0)),
    "split": ([randn(7, 2)], dict(indices_or_sections=[2, 5])),
    "take": ([x34, np.array([3, 1, 0, 3], dtype="int64")], dict(axis=1)),
    "index_add": ([x34, np.array([2, 0, 2], dtype="int64"), randn(3, 3)], dict(axis=1)),
    "where": ([RNG.random((3, 1)) < 0.5, randn(1, 4), randn(3, 4)], {}),
    "cumsum": ([x34], dict(axis=0)),
    "triu": ([randn(2, 3, 4)], dict(k=-1)),
    "strided_slice": ([randn(5, 9)], dict(axes=[1], begin=[-8], end=[100], strides=[3])),
    "strided_slice_backward": ([randn(5, 3)], dict(shape=[5, 9], axes=[1], begin=[-8], end=[100], strides=[3])),
    "softmax": ([randn(3, 4, 2)], dict(axis=1)),
    "log_softmax": ([randn(3, 4, 2)], dict(axis=1)),
    "layer_norm": ([randn(2, 3, 4), randn(3, 4), randn(3, 4)], dict(axes=[1, 2], epsilon=1e-3)),
    "cross_entropy_with_logits": ([logits, probs], {}),
    "nll_loss": ([logits, np.array([4, -100, 0], dtype="int64")], dict(reduction="none")),
    "nll_loss_backward": ([np.array(1.5), logits, np.array([4, -100, 0], dtype="int64")], {}),
    "conv2d": ([conv_x, conv_w], conv_attrs),
    "conv2d_backward_data": ([randn(*conv_y.shape), conv_w], dict(data_shape=list(conv_x.shape), **conv_attrs)),
    "conv2d_backward_weight": ([randn(*conv_y.shape), conv_x], dict(weight_shape=list(conv_w.shape), **conv_attrs)),
    "max_pool2d": ([pool_x], pool_attrs),
    "max_pool2d_backward": ([randn(2, 3, 4, 5), pool_x], pool_attrs),
    "avg_pool2d": ([pool_x], dict(pool_attrs, count_include_pad=True)),
    "avg_pool2d_backward": ([randn(2, 3, 4, 5), pool_x], dict(pool_attrs, count_include_pad=True)),
}
# The args whose dtype must agree with the first one's (varied together when
# probing the dtypes the Dtypes line names for the first argument).
SAME_DTYPE = {"index_add": [0, 2], "layer_norm": [0, 1, 2], "cross_entropy_with_logits": [0, 1],
              "nll_loss_backward": [0, 1], "conv2d": [0, 1], "conv2d_backward_data": [0, 1],
              "conv2d_backward_weight": [0, 1], "max_pool2d_backward": [0, 1], "avg_pool2d_backward": [0, 1]}


def test_every_op_of_the_families_has_an_example():
    assert len(OPS) == 28
    assert sorted(EXAMPLES) == sorted(OPS)


# ---- the shape of each entry ----


@pytest.mark.parametrize("op", OPS)
def test_entry_has_the_agreed_parts(op):
    text = doc(op)
    paragraphs = text.split("\n\n")
    first = paragraphs[0]
    assert re.search(r"NumPy:\s+(none|`)", first) and re.search(r"PyTorch:\s+(none|`)", first), first
    assert first.index("NumPy:") < first.index("PyTorch:")
    labelled = paragraphs[-1].split("\n")
    assert [line.split(" ")[0] for line in labelled] == list(LABELS), labelled
    assert all(len(line) > len(label) + 2 for line, label in zip(labelled, LABELS))
    assert not any(line.startswith(LABELS) for p in paragraphs[:-1] for line in p.split("\n"))
    assert text == text.strip() and "\n\n\n" not in text


@pytest.mark.parametrize("op", OPS)
def test_entry_explains_every_attr_and_names_every_arg(op):
    schema = _core.op_schema(op)
    prose = doc(op)
    for name in [*schema["args"], *(a["name"] for a in schema["attrs"])]:
        assert re.search(rf"\b{name}\b", prose), f"{op}: '{name}' is not mentioned"


@pytest.mark.parametrize("op", OPS)
def test_docstring_is_the_entry(op):
    assert doc(op) in getattr(aj.op, op).__doc__


# ---- the NumPy and PyTorch code each entry names ----


def code_after(label: str, text: str) -> str | None:
    """The code span right after "label: " or "label: none (", if any."""
    m = re.search(rf"{label}:\s+(?:none\s+\()?`([^`]+)`", text)
    return m and " ".join(m.group(1).split())


def run_code(code: str, names: dict):
    """Runs code in names: the `out` it assigns, if it does, else the value
    of its last statement (an expression)."""
    tree = ast.parse(code.replace("; ", "\n"))
    *body, last = tree.body
    exec(compile(ast.Module(body, []), "<doc>", "exec"), names)
    if isinstance(last, ast.Expr):
        value = eval(compile(ast.Expression(last.value), "<doc>", "eval"), names)
    else:
        exec(compile(ast.Module([last], []), "<doc>", "exec"), names)
    return names["out"] if "out" in names else value


def example_names(op: str, convert) -> dict:
    """The example's args and attrs (defaults filled in) by name, arrays
    passed through convert and lists of ints made tuples."""
    schema = _core.op_schema(op)
    args, attrs = EXAMPLES[op]
    names = {a["name"]: a["default"] for a in schema["attrs"] if not a["required"]}
    names.update(attrs)
    names = {k: tuple(v) if isinstance(v, list) else v for k, v in names.items()}
    for name, value in zip(schema["args"], args):
        names[name] = [convert(v) for v in value] if isinstance(value, list) else convert(value)
    return names


def assert_same_result(got, want):
    if isinstance(got, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def ours(op: str):
    args, attrs = EXAMPLES[op]
    return run_op(op, *args, **attrs)


NUMPY_CODE = [op for op in OPS if code_after("NumPy", doc(op))]
TORCH_CODE = [op for op in OPS if code_after("PyTorch", doc(op))]


def test_the_code_named_covers_the_family():
    assert len(NUMPY_CODE) >= 19 and len(TORCH_CODE) >= 24


@pytest.mark.parametrize("op", NUMPY_CODE)
def test_numpy_code_gives_our_result(op):
    names = {"np": np, **example_names(op, np.asarray)}
    assert_same_result(ours(op), run_code(code_after("NumPy", doc(op)), names))


@pytest.mark.parametrize("op", TORCH_CODE)
def test_pytorch_code_gives_our_result(op):
    torch = pytest.importorskip("torch")
    names = {"torch": torch, **example_names(op, torch.from_numpy)}
    got = run_code(code_after("PyTorch", doc(op)), names)
    as_numpy = (lambda t: t.numpy()) if isinstance(got, torch.Tensor) else (lambda ts: [t.numpy() for t in ts])
    assert_same_result(ours(op), as_numpy(got))


# ---- the Dtypes line against type inference ----


def claimed_dtypes(op: str) -> set[str]:
    """The dtypes the Dtypes line names for the first argument: its first
    clause (before ";"), parentheticals dropped, "all" meaning every dtype."""
    line = doc(op).split("\n")[-1].removeprefix("Dtypes: ")
    clause = re.sub(r"\([^)]*\)", "", line.split(";")[0])
    return set(DTYPES) if re.search(r"\ball\b", clause) else {d for d in DTYPES if re.search(rf"\b{d}\b", clause)}


def accepts(op: str, dtype: str) -> bool:
    args, attrs = EXAMPLES[op]
    cast = list(args)
    for i in SAME_DTYPE.get(op, [0]):
        cast[i] = [a.astype(dtype) for a in args[i]] if isinstance(args[i], list) else args[i].astype(dtype)
    try:
        build_op(op, *cast, **attrs)
    except aj.TypeInferenceError:
        return False
    return True


@pytest.mark.parametrize("op", OPS)
def test_dtypes_line_lists_what_type_inference_accepts(op):
    assert claimed_dtypes(op), doc(op).split("\n")[-1]
    assert {d for d in DTYPES if accepts(op, d)} == claimed_dtypes(op)


# ---- the FLOPs line against the FLOP count ----


def window_names(op: str) -> dict:
    """N, C, O, OH, OW, KH, KW, groups of a conv2d or pool example."""
    args, attrs = EXAMPLES[op]
    result = ours(op)
    if op.startswith("conv2d"):
        data = conv_x.shape
        (o, _, kh, kw), (oh, ow) = conv_w.shape, conv_y.shape[2:]
        return dict(N=data[0], C=data[1], O=o, OH=oh, OW=ow, KH=kh, KW=kw, groups=attrs["groups"])
    (kh, kw), out = attrs["pool_size"], (result.shape if op.endswith("pool2d") else args[0].shape)
    return dict(N=out[0], C=out[1], OH=out[2], OW=out[3], KH=kh, KW=kw)


def claimed_flops(op: str) -> int:
    line = doc(op).split("\n")[-2].removeprefix("FLOPs: ")
    if line.startswith("0"):
        return 0
    if m := re.match(r"(one|\d+) per (element|target)(?: of (\w+))?", line):
        args, _ = EXAMPLES[op]
        names = dict(zip(_core.op_schema(op)["args"], args))
        counted = names[m.group(3)] if m.group(3) else names.get("targets", ours(op))
        return (1 if m.group(1) == "one" else int(m.group(1))) * np.size(counted)
    formula = line.split(" (")[0].split(",")[0]
    return int(eval(formula.replace("/", "//"), window_names(op)))


@pytest.mark.parametrize("op", OPS)
def test_flops_line_agrees_with_the_count(op):
    args, attrs = EXAMPLES[op]
    flops = aj.analysis.estimate_flops(build_op(op, *args, **attrs)["main"])
    assert int(flops) == claimed_flops(op)


# ---- examples and claims stated in the prose ----


def test_strided_slice_clamps_as_python_slices():
    x = np.arange(10.0)
    assert "x[100:-100:-3] of 10 elements is [9, 6, 3, 0]" in doc("strided_slice").replace("\n", " ")
    got = run_op("strided_slice", x, axes=[0], begin=[100], end=[-100], strides=[-3])
    np.testing.assert_array_equal(got, [9, 6, 3, 0])
    assert run_op("strided_slice", x, axes=[0], begin=[7], end=[2], strides=[1]).shape == (0,)
    end = 2**63 - 1
    np.testing.assert_array_equal(run_op("strided_slice", x, axes=[0], begin=[-3], end=[end]), x[-3:])


def test_take_counts_negative_indices_from_the_end_and_fails_out_of_range():
    np.testing.assert_array_equal(run_op("take", x34, np.array([-1, 0, -4]), axis=1), x34[:, [3, 0, 0]])
    with pytest.raises(aj.ExecutionError, match="index 3 is out of range for axis 0"):
        run_op("take", np.arange(3.0), np.array([3]))


def test_cumsum_keeps_int32_and_wraps():
    got = run_op("cumsum", np.array([2**31 - 1, 1], dtype="int32"))
    assert got.dtype == np.int32 and got[1] == -(2**31)


def test_nll_loss_labels_are_class_indices_and_mean_skips_ignored_rows():
    targets = np.array([4, -100, 0], dtype="int32")
    want = -(logits[0, 4] + logits[2, 0]) / 2
    np.testing.assert_allclose(run_op("nll_loss", logits, targets), want, rtol=1e-12)
    assert np.isnan(run_op("nll_loss", logits, np.full(3, -100)))
    with pytest.raises(aj.ExecutionError, match="out of range"):
        run_op("nll_loss", logits, np.array([5, 0, 0]))
    with pytest.raises(aj.TypeInferenceError):
        build_op("nll_loss", logits, probs)


def test_cross_entropy_takes_logits_where_tvm_takes_log_probabilities():
    """Ours on logits equals TVM's -sum(predictions * labels) / N on
    log_softmax(logits), and labels need not be one-hot."""
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    tvm = -(log_p * probs).sum() / logits.shape[0]
    np.testing.assert_allclose(run_op("cross_entropy_with_logits", logits, probs), tvm, rtol=1e-12)
    with pytest.raises(aj.TypeInferenceError):
        build_op("cross_entropy_with_logits", logits, np.array([4, 0, 1]))


def test_conv2d_four_int_padding_is_top_left_bottom_right():
    x, w = randn(1, 1, 4, 5), randn(1, 1, 2, 2)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 3), (2, 0)))
    np.testing.assert_allclose(run_op("conv2d", x, w, padding=[1, 2, 3, 0]), run_op("conv2d", padded, w), rtol=1e-12)


def test_pool_strides_default_to_one_and_padding_never_wins():
    x = -np.abs(randn(1, 1, 4, 4)) - 1
    assert run_op("max_pool2d", x, pool_size=[2]).shape == (1, 1, 3, 3)
    corner = run_op("max_pool2d", x, pool_size=[2], padding=[1])[0, 0, 0, 0]
    assert corner == x[0, 0, 0, 0]
    assert run_op("max_pool2d", x, pool_size=[1], padding=[1])[0, 0, 0, 0] == -np.inf


def test_avg_pool2d_divisor_counts_padding_only_when_asked():
    x = np.ones((1, 1, 2, 2))
    assert run_op("avg_pool2d", x, pool_size=[2], padding=[1])[0, 0, 0, 0] == 1.0
    assert run_op("avg_pool2d", x, pool_size=[2], padding=[1], count_include_pad=True)[0, 0, 0, 0] == 0.25


def test_max_pool2d_backward_sends_a_tie_to_the_first_tap():
    x = np.zeros((1, 1, 2, 2))
    got = run_op("max_pool2d_backward", np.ones((1, 1, 1, 1)), x, pool_size=[2])
    np.testing.assert_array_equal(got[0, 0], [[1, 0], [0, 0]])
    assert not _core.op_schema("max_pool2d_backward")["differentiable"]
