"""Random and mutated text fed to parse: only aj.Error subclasses may come
out, never a crash or another exception (5,000+ examples in all)."""

from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import examples
from test_roundtrip import DESIGN_EXAMPLES

SEEDS = list(DESIGN_EXAMPLES.values())
ALPHABET = st.sampled_from(list('()[]{},:=.*+-_#@"\'\n\t 0123456789abcdefnxyTtrue') + ["\x00", "é", "\u2028"])


def parse_or_error(text: str) -> None:
    try:
        mod = aj.parse(text)
    except aj.Error as e:
        assert str(e)
        return
    # Whatever parses prints, and the print parses back to an equal module.
    again = aj.parse(mod.script())
    aj.assert_structural_equal(again, mod)


@settings(max_examples=2000)
@given(st.text(max_size=300))
def test_random_text(text):
    parse_or_error(text)


@settings(max_examples=1000)
@given(st.binary(max_size=300))
def test_random_bytes_as_latin1(data):
    parse_or_error(data.decode("latin-1"))


mutation = st.tuples(st.sampled_from(["insert", "delete", "replace", "duplicate"]), st.floats(0, 1), ALPHABET)


@settings(max_examples=3000)
@given(st.sampled_from(SEEDS), st.lists(mutation, min_size=1, max_size=4))
def test_mutated_valid_text(seed, mutations):
    text = seed
    for kind, where, ch in mutations:
        i = int(where * len(text))
        if kind == "insert":
            text = text[:i] + ch + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + 1:]
        elif kind == "replace":
            text = text[:i] + ch + text[i + 1:]
        else:
            j = min(len(text), i + int(where * 40) + 1)
            text = text[:j] + text[i:j] + text[j:]
    parse_or_error(text)


@settings(max_examples=200)
@given(st.integers(1, 2000))
def test_deep_nesting_is_an_error_not_a_crash(depth):
    body = "add(x, " * depth + "x" + ")" * depth
    text = f'@function\ndef main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    y = {body}\n    return y\n'
    parse_or_error(text)
    parse_or_error(text.replace("add(x, ", "[", depth // 2))


def test_truncations_of_every_example():
    for seed in SEEDS + [examples.TRANSPOSED_MATMUL]:
        for i in range(len(seed)):
            parse_or_error(seed[:i])
