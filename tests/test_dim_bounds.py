"""adjoint.dims.compare: deciding p <= q / p >= q for symbolic costs under
dim bounds (the decisions ReassociateMatmul needs), its soundness over
random polynomials and boxes, and the errors bad bounds raise."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adjoint as aj
from adjoint import Dim, _core, dims

# LoRA, x of shape (n, 1): (W + B@A)@x against W@x + B@(A@x), W (m, n), B (m, r), A (r, n).
LORA_MERGED = "2*m*n*r + 3*m*n"
LORA_FACTORED = "2*m*n + 2*n*r + 2*m*r + m"
LORA_FACTORED_COMPILE_TIME_FREE = "2*m*n"  # B@A folded at compile time: only W'@x is paid
LORA_BOUNDS = {"r": (1, 64), "m": (1024, None), "n": (1024, None)}

# A (a, b), B (b, c), C (c, d): (A@B)@C against A@(B@C).
LEFT_FIRST = "2*a*b*c + 2*a*c*d"
RIGHT_FIRST = "2*b*c*d + 2*a*b*d"


def test_lora_runtime_costs_depend_on_the_dims_without_bounds():
    assert dims.compare(LORA_FACTORED, LORA_MERGED) == "unknown"
    assert dims.compare(LORA_MERGED, LORA_FACTORED) == "unknown"


def test_lora_runtime_costs_are_settled_by_a_small_rank_and_large_matrices():
    assert dims.compare(LORA_FACTORED, LORA_MERGED, LORA_BOUNDS) == "<="
    assert dims.compare(LORA_MERGED, LORA_FACTORED, LORA_BOUNDS) == ">="


def test_lora_compile_time_free_cost_is_settled_without_bounds():
    assert dims.compare(LORA_FACTORED_COMPILE_TIME_FREE, LORA_FACTORED) == "<="
    assert dims.compare(LORA_FACTORED, LORA_FACTORED_COMPILE_TIME_FREE) == ">="


def test_chain_left_first_wins_when_the_outer_dims_are_small():
    bounds = {"a": (1, 16), "c": (1, 16), "b": (1024, None), "d": (1024, None)}
    assert dims.compare(LEFT_FIRST, RIGHT_FIRST, bounds) == "<="
    assert dims.compare(RIGHT_FIRST, LEFT_FIRST, bounds) == ">="


def test_chain_right_first_wins_when_the_inner_dims_are_small():
    bounds = {"b": (1, 16), "d": (1, 16), "a": (1024, None), "c": (1024, None)}
    assert dims.compare(LEFT_FIRST, RIGHT_FIRST, bounds) == ">="


def test_chain_with_fixed_dims_is_decided_exactly():
    # a, b, c, d = 1, 8, 2, 4: 32 + 16 against 128 + 64; a = d = 1, b = c = 8: 128 + 16 both.
    assert dims.compare(LEFT_FIRST, RIGHT_FIRST, {"a": (1, 1), "b": (8, 8), "c": (2, 2), "d": (4, 4)}) == "<="
    assert dims.compare(LEFT_FIRST, RIGHT_FIRST, {"a": (1, 1), "b": (8, 8), "c": (8, 8), "d": (1, 1)}) == "=="


@pytest.mark.parametrize("bounds", [None, {"a": (1, 8), "d": (1024, None)}, {"a": (1, 64), "b": (1, 64)}])
def test_chain_order_that_depends_on_the_dims_is_unknown(bounds):
    assert dims.compare(LEFT_FIRST, RIGHT_FIRST, bounds) == "unknown"
    assert dims.compare(RIGHT_FIRST, LEFT_FIRST, bounds) == "unknown"


def test_equal_polynomials_are_equal_whatever_the_bounds():
    assert dims.compare("2*n*(m + 1)", "2*m*n + 2*n") == "=="
    assert dims.compare(Dim("n") * "m", "m*n", {"n": (3, 7)}) == "=="


def test_polynomials_equal_on_every_point_of_the_box_are_equal():
    assert dims.compare("r**2 - 3*r + 2", 0, {"r": (1, 2)}) == "=="
    assert dims.compare("n*r", "2*n", {"r": (2, 2)}) == "=="


@pytest.mark.parametrize("p, q, expected", [(3, 5, "<="), (5, 3, ">="), (4, 4, "=="), (0, -1, ">=")])
def test_constants_are_decided_exactly(p, q, expected):
    assert dims.compare(p, q) == expected


@pytest.mark.parametrize("p, q, bounds, expected", [
    ("n - r", 0, {"r": (1, 64), "n": (64, None)}, ">="),     # an upper bound pays for a negative term
    ("n - r", 0, {"r": (1, 64), "n": (63, None)}, "unknown"),
    ("64*n - r*n", 0, {"r": (1, 64)}, ">="),
    ("m*n - m - n + 1", 0, None, ">="),                          # (m - 1)*(n - 1): the shift to low bounds
    ("n**2", "n", None, ">="),                                  # integer n >= 1
    ("n**2", "n", {"n": (0, None)}, ">="),                      # also at n = 0
    ("n", 1, {"n": (0, None)}, "unknown"),
])
def test_small_decisions(p, q, bounds, expected):
    assert dims.compare(p, q, bounds) == expected


@pytest.mark.parametrize("bounds, message", [
    ({"r": (5, 3)}, "'r': low bound 5 is greater than high bound 3"),
    ({"r": (-1, 3)}, "'r': low bound -1 is negative"),
    ({"r": (1.5, 3)}, "'r': low bound: expected an int, got float"),
    ({"r": (1, "8")}, "'r': high bound: expected an int, got str"),
    ({"r": (True, 3)}, "'r': low bound: expected an int, got bool"),
    ({"r": (1,)}, "'r': expected a pair"),
    ({"r": 4}, "'r': expected a pair"),
    ({"2*n": (1, 3)}, "'2*n' is not a symbol name"),
    ({"n m": (1, 3)}, "'n m' is not a symbol name"),
    ({7: (1, 3)}, "a symbol: expected a str, got int"),
    ([("r", (1, 3))], "expected a dict"),
])
def test_bad_bounds_are_errors_naming_the_symbol(bounds, message):
    with pytest.raises(aj.TransformError, match="^dim_bounds: .*" + message.replace("(", r"\(").replace("*", r"\*")):
        dims.compare("n", "r", bounds)


def test_unknown_symbol_is_an_error_naming_it_and_the_known_ones():
    with pytest.raises(aj.TransformError, match=r"ReassociateMatmul: dim_bounds: 'k' is not a symbol of the program "
                                                r"\(its symbols: m, n\)"):
        dims.check_bounds({"k": (1, 4)}, ["n", "m"], where="ReassociateMatmul: dim_bounds")
    with pytest.raises(aj.TransformError, match="symbols: expected an iterable of str, got int"):
        dims.check_bounds({"n": (1, 4)}, 3)


def test_check_bounds_normalizes():
    assert dims.check_bounds({"r": [1, 64], "n": (1024, None)}, {"r", "n"}) == {"n": (1024, None), "r": (1, 64)}
    assert dims.check_bounds(None) == {}


def test_bad_dims_are_errors():
    with pytest.raises(aj.TypeInferenceError):
        dims.compare("n / 2", "n")
    with pytest.raises(aj.TransformError, match="compare: q: expected a Dim, a dim string or an int, got list"):
        _core._dim_bounds.compare("n", [1])


def test_expansions_beyond_the_work_limit_are_unknown():
    # (1000 + t)**64 overflows 128 bits in the shift: no claim, no crash.
    assert dims.compare("n**64", "n**63", {"n": (1000, None)}) == "unknown"


# Random polynomials over a, b, c with small coefficients and exponents.
SYMBOLS = ["a", "b", "c"]
monomials = st.tuples(*[st.integers(0, 3) for _ in SYMBOLS])
polynomials = st.dictionaries(monomials, st.integers(-12, 12), max_size=5)
intervals = st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(0, 8))).map(
    lambda lw: (lw[0], None if lw[1] is None else lw[0] + lw[1]))
boxes = st.dictionaries(st.sampled_from(SYMBOLS), intervals)


def as_text(poly):
    terms = []
    for exps, coeff in poly.items():
        factors = [f"{s}**{e}" for s, e in zip(SYMBOLS, exps) if e]
        terms.append("*".join([f"({coeff})"] + factors))
    return " + ".join(terms) or "0"


def evaluate(poly, point):
    total = 0
    for exps, coeff in poly.items():
        term = coeff
        for s, e in zip(SYMBOLS, exps):
            term *= point[s] ** e
        total += term
    return total


def probe_points(box, extra):
    """Every corner of the box (an unbounded high capped at low + 40), then
    the points `extra` draws."""
    ranges = [box.get(s, (1, None)) for s in SYMBOLS]
    corners = [(low, low + 40 if high is None else high) for low, high in ranges]
    yield from (dict(zip(SYMBOLS, c)) for c in itertools.product(*corners))
    yield from extra


@st.composite
def cases(draw):
    p, q, box = draw(polynomials), draw(polynomials), draw(boxes)
    points = []
    for _ in range(20):
        point = {}
        for s in SYMBOLS:
            low, high = box.get(s, (1, None))
            point[s] = draw(st.integers(low, low + 1000 if high is None else high))
        points.append(point)
    return p, q, box, points


@given(cases())
def test_claimed_orders_hold_at_every_probed_point(case):
    p, q, box, points = case
    claim = dims.compare(as_text(p), as_text(q), box)
    for point in probe_points(box, points):
        vp, vq = evaluate(p, point), evaluate(q, point)
        assert claim not in ("<=", "==") or vp <= vq, (claim, point, vp, vq)
        assert claim not in (">=", "==") or vp >= vq, (claim, point, vp, vq)


@given(polynomials, polynomials, boxes)
def test_compare_is_symmetric(p, q, box):
    mirror = {"<=": ">=", ">=": "<=", "==": "==", "unknown": "unknown"}
    assert dims.compare(as_text(q), as_text(p), box) == mirror[dims.compare(as_text(p), as_text(q), box)]


@given(polynomials, st.dictionaries(monomials, st.integers(1, 12), min_size=1, max_size=5), boxes)
def test_adding_nonnegative_terms_is_proved_no_smaller(p, extra, box):
    q = {m: p.get(m, 0) + extra.get(m, 0) for m in set(p) | set(extra)}
    assert dims.compare(as_text(p), as_text(q), box) in ("<=", "==")
