"""The one grammar of dim strings (cpp/src/ir/dim_parse.cc), shared by aj.Dim,
shapes given from Python and the text format: Python's precedence
(-n**2 is -(n**2)), an error naming the string and the problem for what is not
an integer polynomial, and canonical text that parses back to the same dim."""

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import adjoint as aj
from adjoint import Dim

ENVS = [{"n": 0, "m": 1, "k": 2}, {"n": 3, "m": 2, "k": 5}, {"n": 7, "m": 4, "k": 1}]

# (dim string, its canonical text); Python evaluates each string to the same values.
PRECEDENCE = [
    ("2*n - n**2", "-n**2 + 2*n"),  # the case of issue 11
    ("-n**2", "-n**2"),  # unary minus binds looser than **
    ("-n**2 + 2*n", "-n**2 + 2*n"),
    ("(-n)**2", "n**2"),
    ("-n*m", "-m*n"),
    ("2*-n", "-2*n"),
    ("-2*n", "-2*n"),
    ("-1*n", "-n"),
    ("--n", "n"),
    ("n - -m", "m + n"),
    ("n - m - k", "-k - m + n"),  # left to right
    ("n - (m - k)", "k - m + n"),
    ("1 + 2*3", "7"),  # * over +
    ("(1 + 2)*3", "9"),
    ("2*n**3", "2*n**3"),  # ** over *
    ("2**3*n", "8*n"),
    ("(2*n)**3", "8*n**3"),
    ("(n + 1)**2", "n**2 + 2*n + 1"),
    ("n**0 + k**1", "k + 1"),
    ("n*m*k - 3*k*m*n + 4", "-2*k*m*n + 4"),
    ("-n**3*m + n*m**2 - 5", "-m*n**3 + m**2*n - 5"),
    ("\tn  +m ", "m + n"),
]


@pytest.mark.parametrize(("text", "canonical"), PRECEDENCE)
def test_dim_strings_follow_python_precedence(text, canonical):
    d = Dim(text)
    assert str(d) == canonical
    for env in ENVS:
        assert d.evaluate(env) == eval(text, {"__builtins__": {}}, dict(env))  # noqa: S307


@pytest.mark.parametrize(("text", "canonical"), PRECEDENCE)
def test_canonical_text_parses_back(text, canonical):
    assert Dim(canonical) == Dim(text)
    assert str(Dim(canonical)) == canonical


# (dim string, what the error says is wrong)
BAD = [
    ("n / 2", "'/': a dim is an integer polynomial, with no division"),
    ("n // 2", "no division"),
    ("n % 2", "no division"),
    ("2.5*n", "at offset 1: a float: a dim is an integer polynomial, with no floats"),
    (".5*n", "'.': a dim is an integer polynomial, with no floats"),
    ("n*1e3", "a float: a dim is an integer polynomial, with no floats"),
    ("1e-3*n", "with no floats"),
    ("2e*n", "expected an operator after 2, got 'e'"),
    ("n**-1", "negative exponent"),
    ("n**2**3", "chained '**'"),
    ("n**m", "'**' needs a non-negative integer exponent"),
    ("n**(2)", "'**' needs a non-negative integer exponent"),
    ("n**65", "exponent 65 is above 64"),
    ("3n", "expected an operator after 3, got 'n'"),
    ("n m", "unexpected 'm'"),
    ("n $ m", "unexpected '$'"),
    ("+n", "unexpected '+'"),
    ("n)", "unexpected ')'"),
    ("(n", "expected ')'"),
    ("n +", "unexpected end"),
    ("", "unexpected end"),
    ("n\n+ 1", "unexpected '\\x0a'"),
    ("n\u00e9", "unexpected '\\xc3'"),
    ("99999999999999999999*n", "integer 99999999999999999999... is above 2**63 - 1"),
    ("4611686018427387904*n*4", "too large"),
    ("(n**2)**33", "too large"),
    ("(" * 65 + "n" + ")" * 65, "nested deeper than 64 levels"),
    ("-" * 65 + "n", "nested deeper than 64 levels"),
]


def shown(text):
    """The dim string as an error message shows it."""
    return "".join(c if " " <= c <= "~" else "".join(f"\\x{b:02x}" for b in c.encode()) for c in text)


@pytest.mark.parametrize(("text", "why"), BAD)
def test_bad_dim_string_names_the_string_and_the_problem(text, why):
    with pytest.raises(aj.TypeInferenceError) as info:
        Dim(text)
    message = str(info.value)
    assert f'bad symbolic dim "{shown(text)}"' in message
    assert why in message


def test_bad_dim_in_a_python_shape_names_the_shape():
    with pytest.raises(aj.TypeInferenceError, match=r'TensorType.*bad symbolic dim "n / 2".*division'):
        aj.TensorType(("n / 2", 3), "float32")


def test_limits_allow_what_they_promise():
    assert Dim("(n + m)**64").symbols == ["m", "n"]
    assert Dim("(" * 64 + "n" + ")" * 64) == Dim("n")
    assert Dim("-" * 64 + "n") == Dim("n")
    assert str(Dim("-9223372036854775807*n")) == "-9223372036854775807*n"


def test_arithmetic_beyond_the_limits_is_a_type_error():
    with pytest.raises(aj.TypeInferenceError, match="degree 65, above 64"):
        Dim("n**64") * Dim("n")
    with pytest.raises(aj.TypeInferenceError, match="overflows"):
        Dim("-9223372036854775807*n") - Dim("n")  # a coefficient of -2**63 could not print back


# ---- the text format reads dim strings with the same grammar ----


def module_text(dim):
    """A module whose param, binding annotation and return type carry `dim`."""
    t = f'Tensor(("{dim}", 3), "float32")'
    return f"@function\ndef main(x: {t}) -> {t}:\n    y: {t} = exp(x)\n    return y\n"


def param_dim(mod):
    return Dim(mod["main"].params[0].type.shape[0])


def test_issue_11_negative_leading_term_round_trips():
    mod = aj.parse(module_text("2*n - n**2"))
    printed = str(mod)
    assert '"-n**2 + 2*n"' in printed
    again = aj.parse(printed)
    assert param_dim(again) == Dim("2*n - n**2") != Dim("n**2 + 2*n")
    aj.assert_structural_equal(again, mod)
    assert str(again) == printed


@pytest.mark.parametrize(("text", "canonical"), PRECEDENCE)
def test_text_and_python_read_dim_strings_alike(text, canonical):
    mod = aj.parse(module_text(text.replace("\t", "\\t")))
    assert param_dim(mod) == Dim(text)
    printed = canonical if canonical.isdigit() else f'"{canonical}"'
    assert f"def main(x: Tensor(({printed}, 3)" in str(mod)


@pytest.mark.parametrize(("text", "why"), [b for b in BAD if "\n" not in b[0]])
def test_text_reports_the_same_error_at_the_offending_byte(text, why):
    source = module_text(text)
    with pytest.raises(aj.TypeInferenceError) as expected:
        Dim(text)
    with pytest.raises(aj.ParseError) as info:
        aj.parse(source)
    err = info.value
    assert str(expected.value) in str(err) and why in str(err)
    line = source.splitlines()[1]
    assert err.line == 2 and err.source_line == line
    offset = int(re.search(r" at offset (\d+):", str(expected.value)).group(1))
    first = line.index('("') + 2  # 0-based index of the string's first byte
    assert err.column == first + offset + 1


def test_text_error_in_a_string_with_escapes_points_at_the_string():
    source = module_text("n \\x2f 2")  # "n / 2" written with an escape
    with pytest.raises(aj.ParseError, match=r'bad symbolic dim "n / 2" at offset 2: .*division') as info:
        aj.parse(source)
    assert info.value.column == source.splitlines()[1].index('("') + 2


def test_text_keeps_negative_constant_dims_out_of_types():
    with pytest.raises(aj.ParseError, match="dims must be non-negative, got -1"):
        aj.parse(module_text("n - n - 1"))


# ---- properties: random integer polynomials, written out, parsed and printed back ----

SYMBOLS = ["n", "m", "seq_len"]


def power_text(draw, name, p):
    """name**p written one of the ways Python reads as the same value."""
    ways = [f"{name}**{p}", f"({name})**{p}", f"{name} ** {p}"]
    if p <= 3:
        ways.append("*".join([name] * p))
    return draw(st.sampled_from(ways))


def term_text(draw, powers, magnitude):
    """|coefficient| times the symbols' powers, factors in a random order."""
    factors = [power_text(draw, name, p) for name, p in zip(SYMBOLS, powers) if p]
    if magnitude != 1 or not factors or draw(st.booleans()):
        factors.append(str(magnitude))
    return "*".join(draw(st.permutations(factors)))


def signed(draw, body, negative, first):
    """A term's text with its sign, as the first term or one after it."""
    if first:
        ways = [f"-{body}", f"-({body})", f"0 - {body}"] if negative else [body, f"({body})"]
    else:
        ways = [f" - {body}", f" + -{body}", f" + (-{body})"] if negative else [f" + {body}", f" - -{body}"]
    return draw(st.sampled_from(ways))


def expected_dim(terms):
    """The polynomial of {powers: coefficient}, by Dim arithmetic."""
    total = Dim(0)
    for powers, coeff in terms.items():
        term = Dim(abs(coeff))  # Dim(int) takes no negative ints
        for name, p in zip(SYMBOLS, powers):
            for _ in range(p):
                term = term * Dim(name)
        total = total - term if coeff < 0 else total + term
    return total


@st.composite
def written_polys(draw, coeffs):
    """(text, Dim): a random integer polynomial over SYMBOLS (powers up to 3,
    up to 6 terms) written with Python syntax, and the dim it denotes."""
    monomials = st.tuples(*[st.integers(0, 3)] * len(SYMBOLS))
    terms = draw(st.dictionaries(monomials, coeffs, min_size=1, max_size=6))
    text = "".join(
        signed(draw, term_text(draw, powers, abs(c)), c < 0, i == 0) for i, (powers, c) in enumerate(terms.items())
    )
    return text, expected_dim(terms)


def built_module(dim):
    """module_text(dim)'s module, made with the builder from Python."""
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (dim, 3), "float32")
    return bb.finish(aj.op.exp(x, name="y"))


envs = st.fixed_dictionaries({name: st.integers(0, 4) for name in SYMBOLS})


@given(written_polys(st.integers(-50, 50)), envs)
def test_dim_strings_denote_what_python_computes(poly, env):
    text, expected = poly
    d = Dim(text)
    assert d == expected
    assert d.evaluate(env) == eval(text, {"__builtins__": {}}, dict(env))  # noqa: S307


@given(written_polys(st.one_of(st.integers(-50, 50), st.integers(-(2**63) + 1, 2**63 - 1))))
def test_polynomial_dims_round_trip_through_module_text(poly):
    text, expected = poly
    assume(not expected.is_const or expected.value >= 0)  # a type holds no negative constant dim
    mod = aj.parse(module_text(text))
    assert param_dim(mod) == expected
    aj.assert_structural_equal(built_module(text), mod)
    printed = str(mod)
    again = aj.parse(printed)
    aj.assert_structural_equal(again, mod)
    assert str(again) == printed
    assert Dim(str(expected)) == expected
