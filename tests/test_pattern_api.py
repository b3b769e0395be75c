"""The public pattern vocabulary, ``from adjoint import pattern as P``, used
as a user of TVM's relax.dpl would use it: each constructor matching and not
matching, what a match captures (by pattern object and by name, lists for
runs), the combinators, type and attr constraints, runs of 1 to 1,000
elements, ``match`` with and without a function, readable reprs, and bad
arguments named in their errors. Rewriting: test_pattern_rewrite_call.py."""

from __future__ import annotations

import operator
import re
import signal
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import adjoint as aj
from adjoint import pattern as P


def module(source: str) -> aj.Module:
    return aj.parse(textwrap.dedent(source))


def var(fn: aj.Function, name: str) -> aj.Var:
    """The param or bound var of fn with this name hint."""
    for v in [*fn.params, *(b.var for b in fn.bindings)]:
        if v.name_hint == name:
            return v
    raise LookupError(name)


def value(fn: aj.Function, name: str) -> aj.Expr:
    """What fn binds the var of this name hint to."""
    return next(b.value for b in fn.bindings if b.var.name_hint == name)


_ = P.wildcard

# ---- each constructor matching and not matching ----

# Every kind of value: params, calls, a tuple, an item, a constant, an alias; a symbolic dim.
KINDS = module('''
    @function
    def main(a: Tensor(("n", 4), "float64"), w: Tensor((4, 4), "float64")) -> Tensor(("n", 1), "float64"):
        e: Tensor(("n", 4), "float64") = exp(a)
        m: Tensor(("n", 4), "float64") = matmul(e, w)
        s: Tensor(("n", 1), "float64") = sum(m, axis=[1], keepdims=True)
        t: Tuple(Tensor(("n", 4), "float64"), Tensor(("n", 1), "float64")) = (m, s)
        u: Tensor(("n", 1), "float64") = t[1]
        k: Tensor((), "float64") = const(2.0, "float64")
        al: Tensor(("n", 1), "float64") = u
        r: Tensor(("n", 1), "float64") = multiply(al, k)
        return r
''')["main"]

CONSTRUCTORS = [
    # (pattern, var it is matched against in KINDS, whether it matches)
    (_(), "a", True),
    (_(), "t", True),
    (P.is_op("exp")(_()), "e", True),
    (P.is_op("exp")(_()), "m", False),
    (P.is_op("exp")(_()), "a", False),
    (P.is_op("matmul")(P.is_op("exp")(P.is_var()), P.is_var()), "m", True),
    (P.is_op("matmul")(P.is_var(), _()), "m", False),  # e is bound to exp(a): not a var bound to nothing
    (P.is_op("sum")(_(), axis=[1], keepdims=True), "s", True),
    (P.is_op("sum")(_(), axis=1), "s", True),  # coerced as the op's schema does: 1 is [1]
    (P.is_op("sum")(_(), axis=[0]), "s", False),
    (P.is_op("sum")(_(), keepdims=False), "s", False),
    (P.is_const(), "k", True),
    (P.is_const(), "a", False),
    (P.is_op("multiply")(_(), P.is_const()), "r", True),
    (P.is_var(), "a", True),
    (P.is_var(), "e", False),
    (P.is_var("w"), "w", True),
    (P.is_var("w"), "a", False),
    (P.is_tuple([_(), _()]), "t", True),
    (P.is_tuple([_()]), "t", False),
    (P.is_tuple([P.is_op("matmul")(_(), _()), P.is_op("sum")(_())]), "t", True),
    (P.is_tuple([P.is_op("sum")(_()), P.is_op("matmul")(_(), _())]), "t", False),
    (P.is_tuple_get_item(_(), 1), "u", True),
    (P.is_tuple_get_item(_(), 0), "u", False),
    (P.is_tuple_get_item(_()), "u", True),
    (P.is_tuple_get_item(P.is_tuple([_(), P.is_op("sum")(_())]), 1), "u", True),
    (P.is_tuple_get_item(_()), "m", False),
    (P.is_op("multiply")(P.is_tuple_get_item(_(), 1), _()), "r", True),  # through the alias al = u
    (P.is_op("log")(_()) | P.is_op("exp")(_()), "e", True),
    (P.is_op("log")(_()) | P.is_op("sum")(_()), "e", False),
    (P.is_op("exp")(_()) & _().has_shape(("n", 4)), "e", True),
    (P.is_op("exp")(_()) & _().has_dtype("float32"), "e", False),
    (~P.is_const(), "a", True),
    (~P.is_const(), "k", False),
    (_().has_dtype("float64"), "e", True),
    (_().has_dtype("float32"), "e", False),
    (_().has_dtype(np.float64), "e", True),
    (_().has_shape(("n", 4)), "e", True),
    (_().has_shape(["n", 1]), "s", True),
    (_().has_shape(("n", 1)), "e", False),
    (_().has_shape((3, 4)), "e", False),
    (_().has_shape(()), "k", True),
    (_().has_shape(("n", 4)), "t", False),  # a tuple has no shape
    (P.is_op("sum")(_()).has_attr({"axis": 1}), "s", True),
    (P.is_op("sum")(_()).has_attr({"axis": [1], "keepdims": True}), "s", True),
    (P.is_op("sum")(_()).has_attr({"keepdims": False}), "s", False),
    (_().has_attr({"keepdims": True}), "s", True),
    (_().has_attr({"axis": 1}), "s", True),  # coerced by the op of the call it meets
    (_().has_attr({"keepdims": True}), "e", False),  # exp has no keepdims
    (_().has_attr({"keepdims": True}), "a", False),  # a param has no attrs
]


@pytest.mark.parametrize("pattern, name, matches", CONSTRUCTORS, ids=[f"{p!r} on {n}" for p, n, _m in CONSTRUCTORS])
def test_each_constructor_matches_what_it_describes_and_nothing_else(pattern, name, matches):
    assert (pattern.match(var(KINDS, name), KINDS) is not None) == matches


def test_has_attr_of_one_op_on_a_call_of_another_is_no_match():
    # regression: the matcher read the attr at sum's index in exp's empty attrs (a segfault)
    sum_axis = P.is_op("sum")(_()).has_attr({"axis": 1})
    assert sum_axis.match(var(KINDS, "e"), KINDS) is None
    assert (sum_axis | P.is_op("exp")(_())).match(var(KINDS, "e"), KINDS) is not None
    assert sum_axis.match(var(KINDS, "s"), KINDS) is not None


def test_symbolic_shapes_compare_as_polynomials():
    fn = module('''
        @function
        def main(a: Tensor(("n", "m"), "float64"), b: Tensor(("n", "m"), "float64")) -> Tensor(("2*n", "m"), "float64"):
            c: Tensor(("2*n", "m"), "float64") = concat((a, b))
            return c
    ''')["main"]
    assert _().has_shape(("n + n", "m")).match(var(fn, "c"), fn) is not None
    assert _().has_shape(("n", "m")).match(var(fn, "c"), fn) is None
    assert _().has_shape(("2*m", "m")).match(var(fn, "c"), fn) is None


# ---- what a match captures ----

def test_captures_map_each_sub_pattern_object_and_each_name_to_what_it_matched():
    x = _(name="x")
    e = P.is_op("exp")(x)
    weight = P.is_var()
    mm = P.is_op("matmul")(e, weight, name="mm")
    got = mm.match(var(KINDS, "m"), KINDS)
    assert got[mm] is var(KINDS, "m") and got["mm"] is var(KINDS, "m")
    assert got[e] is var(KINDS, "e")  # the expr as written where it matched: the var, not exp(a)
    assert got[x] is var(KINDS, "a") and got["x"] is var(KINDS, "a")
    assert got[weight] is var(KINDS, "w")
    assert set(got) == {mm, e, x, weight, "x", "mm"} and len(got) == 6
    assert x in got and "x" in got and _() not in got and "y" not in got
    for missing in [_(), "y", 3, None]:
        with pytest.raises(KeyError):
            got[missing]


def test_captures_print_as_a_dict_of_patterns_and_names():
    x = _(name="x")
    got = P.is_op("exp")(x).match(var(KINDS, "e"), KINDS)
    assert repr(got) == ('Captures({exp(x): e: Tensor(("n", 4), "float64"), '
                         'x: a: Tensor(("n", 4), "float64"), '
                         "'x': a: Tensor((\"n\", 4), \"float64\")})")


def test_the_root_captures_the_call_when_a_call_is_matched():
    root = P.is_op("matmul")(_(), _())
    call = value(KINDS, "m")
    assert root.match(call, KINDS)[root] is call


SAME_AND_OTHER = '''
    @function
    def main(a: Tensor((2,), "float64"), b: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
        same: Tensor((2,), "float64") = add(a, a)
        other: Tensor((2,), "float64") = add(a, b)
        r: Tensor((2,), "float64") = multiply(same, other)
        return r
'''


def test_a_pattern_object_used_twice_matches_one_value():
    fn = module(SAME_AND_OTHER)["main"]
    x = _()
    twice = P.is_op("add")(x, x)
    assert twice.match(var(fn, "same"), fn)[x] is var(fn, "a")
    assert twice.match(var(fn, "other"), fn) is None
    by_name = P.is_op("add")(_(name="v"), _(name="v"))  # two objects, one name: one value as well
    assert by_name.match(var(fn, "same"), fn) is not None and by_name.match(var(fn, "other"), fn) is None


def test_two_objects_of_one_name_are_both_captured_with_their_sub_patterns():
    # regression: the sub-patterns of the second object named "x" were missing from the captures
    fn = module('''
        @function
        def main(a: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            e: Tensor((2,), "float64") = exp(a)
            r: Tensor((2,), "float64") = add(e, e)
            return r
    ''')["main"]
    inner_1, inner_2 = _(), _()
    exp_1, exp_2 = P.is_op("exp")(inner_1, name="x"), P.is_op("exp")(inner_2, name="x")
    root = P.is_op("add")(exp_1, exp_2)
    got = root.match(var(fn, "r"), fn)
    assert got[inner_1] is var(fn, "a") and got[inner_2] is var(fn, "a") and got[exp_2] is var(fn, "e")
    assert list(got) == [root, exp_1, inner_1, inner_2, "x"]  # the name's first object stands for it
    assert len(got) == 5 and repr(got).startswith("Captures({add((x := exp(_)), (x := exp(_))): r: Tensor(")


def test_or_keeps_the_first_side_that_matches_and_only_its_captures():
    x, y = _(name="x"), _(name="y")
    left, right = P.is_op("exp")(x), P.is_op("exp")(y)
    both = (left | right).match(var(KINDS, "e"), KINDS)
    assert left in both and x in both and right not in both and y not in both and "y" not in both
    second = (P.is_op("log")(y) | left).match(var(KINDS, "e"), KINDS)
    assert second[x] is var(KINDS, "a") and "y" not in second


ADD_THEN_EXP = module('''
    @function
    def main(a: Tensor((2, 3), "float32"), b: Tensor((2, 3), "float32")) -> Tensor((2, 3), "float32"):
        g: Tensor((2, 3), "float32") = add(a, b)
        e: Tensor((2, 3), "float32") = exp(b)
        m: Tensor((2, 3), "float32") = multiply(g, e)
        return m
''')


def test_or_is_an_ordered_choice_that_later_patterns_do_not_go_back_on():
    # add(x, w) matches g with x = a, so the | keeps it, and exp(x) then
    # fails on exp(b): the match add(w, x) would give is not looked for, by
    # match, rewrite_call and Rewriter.from_pattern alike. Both orders are
    # tried when the choice is made over the whole
    fn = ADD_THEN_EXP["main"]
    x, w = _(), _()
    late = P.is_op("multiply")(P.is_op("add")(x, w) | P.is_op("add")(w, x), P.is_op("exp")(x))
    whole = (P.is_op("multiply")(P.is_op("add")(x, w), P.is_op("exp")(x))
             | P.is_op("multiply")(P.is_op("add")(w, x), P.is_op("exp")(x)))
    assert late.match(var(fn, "m"), fn) is None
    got = whole.match(var(fn, "m"), fn)
    assert got[x] is var(fn, "b") and got[w] is var(fn, "a")

    def zeros(expr, captures):
        return aj.op.zeros((2, 3), "float32")

    rewrites = [lambda p: P.rewrite_call(p, zeros, ADD_THEN_EXP),
                lambda p: P.Rewriter.from_pattern(p, zeros)(ADD_THEN_EXP)]
    for rewrite in rewrites:
        assert rewrite(late) is ADD_THEN_EXP
        assert [b.value.op for b in rewrite(whole)["main"].bindings] == ["zeros"]


def test_and_captures_both_sides():
    x, z = _(name="x"), _(name="z")
    got = (P.is_op("exp")(x) & z).match(var(KINDS, "e"), KINDS)
    assert got["x"] is var(KINDS, "a") and got["z"] is var(KINDS, "e")


def test_not_captures_nothing_under_it_and_compares_with_what_was_captured_before():
    y = _(name="y")
    negated = ~P.is_op("log")(y)
    got = negated.match(var(KINDS, "e"), KINDS)
    assert dict(got) == {negated: var(KINDS, "e")}
    fn = module(SAME_AND_OTHER)["main"]
    x = _()
    distinct = P.is_op("add")(x, ~x)
    assert distinct.match(var(fn, "other"), fn) is not None and distinct.match(var(fn, "same"), fn) is None


# Patterns that match some of KINDS's values and not others, combined at random.
ATOMS = [P.is_const(), P.is_var(), P.is_op("exp")(_()), _().has_dtype("float64"), _().has_shape(("n", 4)),
         P.is_tuple([_(), _()]), P.is_tuple_get_item(_()), P.is_op("sum")(_()).has_attr({"axis": 1})]
combined = st.recursive(
    st.sampled_from(ATOMS),
    lambda inner: st.one_of(st.builds(lambda p, q: p | q, inner, inner), st.builds(lambda p, q: p & q, inner, inner),
                            st.builds(lambda p: ~p, inner)),
    max_leaves=6)


@given(combined, combined, st.sampled_from(["a", "w", "e", "m", "s", "t", "u", "k", "al", "r"]))
def test_for_all_patterns_the_combinators_are_boolean_logic(p, q, name):
    def matches(pattern):
        return pattern.match(var(KINDS, name), KINDS) is not None

    assert matches(p | q) == (matches(p) or matches(q))
    assert matches(p & q) == (matches(p) and matches(q))
    assert matches(~p) != matches(p) and matches(~~p) == matches(p)
    assert matches(~(p | q)) == matches(~p & ~q)


# ---- runs: repeated ----

def concat_of_exps(n: int, *, bound_tuple: bool = False, odd_one: int | None = None) -> aj.Function:
    """main(p0..p{n-1}) = concat((exp(p0), ..., exp(p{n-1}))): the tuple in the
    call, or bound to a var; field odd_one is a log instead."""
    bb = aj.FunctionBuilder("main")
    ps = [bb.param(f"p{i}", (1, 2), "float64") for i in range(n)]
    fields = [(aj.op.log if i == odd_one else aj.op.exp)(p, name=f"e{i}") for i, p in enumerate(ps)]
    fields = bb.emit(aj.Tuple(fields), name="t") if bound_tuple else fields
    return bb.finish(aj.op.concat(fields, axis=0, name="c"))["main"]


@pytest.mark.parametrize("bound_tuple", [False, True], ids=["tuple in the call", "tuple bound to a var"])
@pytest.mark.parametrize("n", [1, 2, 13, 100, 1000])
def test_repeated_matches_runs_of_any_length_and_captures_lists(n, bound_tuple):
    fn = concat_of_exps(n, bound_tuple=bound_tuple)
    x = _(name="x")
    element = P.is_op("exp")(x)
    run = P.repeated(element, name="es")
    pattern = P.is_op("concat")(P.is_tuple([run]), axis=0)
    got = pattern.match(var(fn, "c"), fn)
    assert [v.name_hint for v in got["es"]] == [f"e{i}" for i in range(n)]
    assert got[run] == got["es"] and got[element] == got["es"]
    assert got[x] == got["x"] == list(fn.params)


@pytest.mark.parametrize("n", [1, 2, 13, 100, 1000])
def test_a_run_fails_when_one_element_does_not_match(n):
    fn = concat_of_exps(n, odd_one=n // 2)
    assert P.is_op("concat")(P.is_tuple([P.repeated(P.is_op("exp")(_()))])).match(var(fn, "c"), fn) is None


def test_runs_take_what_the_single_patterns_around_them_leave():
    fn = concat_of_exps(5)
    first, last = _(name="first"), _(name="last")
    got = P.is_tuple([first, P.repeated(_(), name="middle"), last]).match(value(fn, "c").args[0], fn)
    assert got["first"].name_hint == "e0" and got["last"].name_hint == "e4"
    assert [v.name_hint for v in got["middle"]] == ["e1", "e2", "e3"]


def test_a_run_may_be_empty():
    fn = concat_of_exps(5)
    fields = value(fn, "c").args[0]
    assert P.is_tuple([_(), _(), P.repeated(_(), name="none"), _(), _(), _()]).match(fields, fn)["none"] == []
    assert P.is_tuple([_(), _(), _(), P.repeated(_()), _(), _(), _()]).match(fields, fn) is None


def test_repeated_as_call_args():
    fn = module('''
        @function
        def main(c: Tensor((2,), "bool"), a: Tensor((2,), "float64"), b: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            s: Tensor((2,), "float64") = add(a, b)
            r: Tensor((2,), "float64") = where(c, s, a)
            return r
    ''')["main"]
    both = P.is_op("add")(P.repeated(P.is_var(), name="xs"))
    assert both.match(var(fn, "s"), fn)["xs"] == [var(fn, "a"), var(fn, "b")]
    assert P.is_op("add")(_(), P.repeated(P.is_var(), name="xs")).match(var(fn, "s"), fn)["xs"] == [var(fn, "b")]
    assert P.is_op("where")(P.repeated(P.is_var())).match(var(fn, "r"), fn) is None  # s is bound to a call
    after_the_first = P.is_op("where")(_(), P.repeated(_(), name="xs")).match(var(fn, "r"), fn)
    assert after_the_first["xs"] == [var(fn, "s"), var(fn, "a")]


@pytest.mark.parametrize("n", [2, 100, 1000])
def test_two_runs_of_one_count_name_have_one_length(n):
    fn = concat_of_exps(n)
    t = value(fn, "c").args[0]
    halves = P.is_tuple([P.repeated(_(), name="a", count="k"), P.repeated(_(), name="b", count="k")])
    got = halves.match(t, fn)
    assert len(got["a"]) == len(got["b"]) == n // 2
    assert got["a"] + got["b"] == list(t.fields)
    odd = P.is_tuple([P.repeated(_(), count="k"), _(), P.repeated(_(), count="k")])
    assert odd.match(t, fn) is None


def test_runs_of_one_name_or_one_object_hold_the_same_values():
    fn = module('''
        @function
        def main(a: Tensor((2,), "float64"), b: Tensor((2,), "float64")) -> Tensor((8,), "float64"):
            twice: Tensor((8,), "float64") = concat((a, b, a, b))
            swapped: Tensor((8,), "float64") = concat((a, b, b, a))
            r: Tensor((8,), "float64") = add(twice, swapped)
            return r
    ''')["main"]
    named = P.is_op("concat")(P.is_tuple([P.repeated(_(), name="xs", count="k"),
                                          P.repeated(_(), name="xs", count="k")]))
    run = P.repeated(_(), count="k")
    one_object = P.is_op("concat")(P.is_tuple([run, run]))
    for pattern in [named, one_object]:
        assert pattern.match(var(fn, "twice"), fn) is not None
        assert pattern.match(var(fn, "swapped"), fn) is None
    assert named.match(var(fn, "twice"), fn)["xs"] == [var(fn, "a"), var(fn, "b")]


@given(st.integers(1, 80), st.data())
def test_for_all_lengths_a_run_captures_exactly_the_fields_it_spans(n, data):
    fn = concat_of_exps(n)
    fields = list(value(fn, "c").args[0].fields)
    before = data.draw(st.integers(0, n - 1), label="singles before the run")
    after = data.draw(st.integers(0, n - 1 - before), label="singles after the run")
    pattern = P.is_tuple([*(_() for _i in range(before)), P.repeated(_(), name="run"), *(_() for _i in range(after))])
    assert pattern.match(value(fn, "c").args[0], fn)["run"] == fields[before:n - after]


# ---- match: with and without a function ----

def test_match_sees_through_the_bindings_of_the_function_given_and_none_without():
    deep = P.is_op("matmul")(P.is_op("exp")(_()), _())
    shallow = P.is_op("matmul")(_(), _())
    m, call = var(KINDS, "m"), value(KINDS, "m")
    assert deep.match(m, KINDS) is not None and P.match(deep, m, KINDS) is not None
    assert deep.match(m) is None and shallow.match(m) is None  # without fn, m is only a var
    assert shallow.match(call) is not None and deep.match(call) is None
    assert deep.match(call, KINDS) is not None
    assert P.is_var().match(m) is not None and P.is_var().match(m, KINDS) is None  # a var stands for itself


def test_match_in_a_function_that_does_not_bind_the_expr_sees_a_var():
    other = module('''
        @function
        def f(q: Tensor((2,), "float64")) -> Tensor((2,), "float64"):
            r: Tensor((2,), "float64") = exp(q)
            return r
    ''')["f"]
    assert P.is_op("exp")(_()).match(var(other, "r"), KINDS) is None
    assert P.is_op("exp")(_()).match(var(other, "r"), other) is not None


# ---- repr: readable text ----

x_, y_ = _(name="x"), _(name="y")
REPRS = [
    (_(), "_"),
    (x_, "x"),
    (P.is_const(), "const()"),
    (P.is_var(), "var()"),
    (P.is_var("w"), 'var("w")'),
    (P.is_op("exp")(x_), "exp(x)"),
    (P.is_op("exp"), "is_op('exp')"),
    (P.is_op("exp")(x_, name="e"), "(e := exp(x))"),
    (P.is_op("sum")(x_, axis=1, keepdims=True), "sum(x, axis=[1], keepdims=True)"),
    (P.is_op("astype")(x_, dtype="float64"), 'astype(x, dtype="float64")'),
    (P.is_op("exp")(P.is_op("log")(x_)), "exp(log(x))"),
    (P.is_tuple([x_, _()]), "(x, _)"),
    (P.is_tuple([x_]), "(x,)"),
    (P.is_tuple([]), "()"),
    (P.is_tuple_get_item(x_, 1), "x[1]"),
    (P.is_tuple_get_item(x_), "x[?]"),
    (P.repeated(x_), "repeated(x)"),
    (P.repeated(_(), name="xs"), "(xs := repeated(_))"),
    (P.repeated(_(), name="xs", count="n"), '(xs := repeated(_, count="n"))'),
    (P.is_op("concat")(P.is_tuple([P.repeated(x_)]), axis=0), "concat((repeated(x),), axis=0)"),
    (x_ | P.is_const(), "(x | const())"),
    (x_ & P.is_var(), "(x & var())"),
    (~x_, "~x"),
    (P.is_op("exp")(x_) | P.is_op("log")(y_), "(exp(x) | log(y))"),
    (x_.has_dtype("float32"), 'x.has_dtype("float32")'),
    ((~x_).has_dtype("float32"), '(~x).has_dtype("float32")'),
    (x_.has_shape(("n", 4)), 'x.has_shape(("n", 4))'),
    (x_.has_shape([3, "2*n + m"]), 'x.has_shape((3, "m + 2*n"))'),
    (x_.has_shape(()), "x.has_shape(())"),
    (P.is_op("sum")(x_).has_attr({"axis": 1}), 'sum(x).has_attr({"axis": [1]})'),
    (_().has_attr({"keepdims": True}), '_.has_attr({"keepdims": True})'),
]


@pytest.mark.parametrize("pattern, text", REPRS, ids=[t for _p, t in REPRS])
def test_repr_is_the_pattern_as_written(pattern, text):
    assert repr(pattern) == text


@pytest.mark.parametrize("args, words", [
    ((1,), ["is_op('exp')", "argument 0", "int", "not a pattern"]),
    ((None,), ["argument 0", "NoneType"]),
    (("x",), ["argument 0", "str", "'x'"]),
    (([P.wildcard()],), ["argument 0", "list"]),
    ((np.float64(1.0),), ["argument 0", "float64"]),
], ids=["int", "None", "str", "list", "numpy scalar"])
def test_non_pattern_arguments_to_is_op_are_errors_naming_them(args, words):
    with pytest.raises(aj.Error) as info:
        P.is_op("exp")(*args)
    for w in words:
        assert w in str(info.value)


def test_an_expr_given_to_is_op_is_an_error_naming_it():
    with pytest.raises(aj.Error, match=r"argument 1 is Var \(w: Tensor"):
        P.is_op("matmul")(_(), var(KINDS, "w"))


KINDS_MODULE = aj.Module({"main": KINDS})

BAD_PATTERNS = [
    (lambda: P.is_op(3), ["is_op", "str", "int"]),
    (lambda: P.is_op("nosuch")(_()), ["no op named 'nosuch'"]),
    (lambda: P.is_op("exp")(_(), _()), ["exp", "takes 1 arg", "got 2"]),
    (lambda: P.is_op("sum")(_(), nosuch=1), ["'sum' has no attr 'nosuch'", "axis, keepdims"]),
    (lambda: P.is_op("sum")(_(), axis="a"), ["attr 'axis'", '"a"']),
    (lambda: P.is_op("sum")(_(), keepdims=1), ["keepdims", "bool"]),
    (lambda: P.is_tuple(_()), ["is_tuple", "list of patterns"]),
    (lambda: P.is_tuple([_(), 1]), ["is_tuple[1]", "int"]),
    (lambda: P.is_tuple_get_item(var(KINDS, "t"), 0), ["is_tuple_get_item", "Var"]),
    (lambda: P.is_tuple_get_item(_(), "0"), ["index", "str"]),
    (lambda: P.is_tuple_get_item(_(), True), ["index", "bool"]),
    # -1 is no wildcard (None is): it matched every item, t[0] included
    (lambda: P.is_tuple_get_item(_(), -1), ["index -1", "out of range", "None for any item"]),
    (lambda: P.is_tuple_get_item(_(), -2), ["index -2"]),
    (lambda: P.is_tuple_get_item(_(), 2**32 - 1), ["index 4294967295", "out of range"]),
    (lambda: P.is_tuple_get_item(_(), 2**40), ["index 1099511627776", "out of range"]),
    (lambda: P.is_tuple_get_item(_(), -2**40), ["out of range"]),
    (lambda: P.repeated(1), ["repeated", "int"]),
    (lambda: P.repeated(P.repeated(_())), ["element of repeated", "run"]),
    (lambda: P.repeated(_()) | _(), ["left side of |", "run"]),
    (lambda: P.is_tuple([P.repeated(_()), P.repeated(_())]), ["two repeated runs", "count name"]),
    (lambda: P.is_tuple([P.repeated(_(name="x")), _(name="x")]), ["'x'", "inside and outside a repeated run"]),
    (lambda: _() | 1, ["|", "int"]),
    (lambda: 1 | _(), ["|", "int"]),
    (lambda: None & _(), ["&", "NoneType"]),
    (lambda: _().has_shape("n"), ["has_shape", "tuple or list"]),
    (lambda: _().has_shape((-1,)), ["has_shape", "-1"]),
    (lambda: _().has_shape(("n +",)), ["has_shape", "n +"]),
    (lambda: _().has_dtype("float99"), ["has_dtype", "float99"]),
    (lambda: _().has_attr([1]), ["has_attr", "dict"]),
    (lambda: P.is_const().has_attr({"axis": 1}), ["const()", "matches no call"]),
    (lambda: P.is_tuple([_()]).has_dtype("float32"), ["a tuple has no dtype"]),
    (lambda: _(name=1), ["name=", "1"]),
    (lambda: _(name=""), ["name="]),
    (lambda: _(name="%x"), ["name=", "'%x'"]),
    (lambda: P.is_var(3), ["name=", "3"]),
    (lambda: P.repeated(_()).match(var(KINDS, "a")), ["match", "repeated(_)", "run"]),
    (lambda: _().match(3, KINDS), ["match", "aj.Expr", "int"]),
    (lambda: _().match(var(KINDS, "a"), KINDS_MODULE), ["match", "aj.Function", "Module"]),
]


@pytest.mark.parametrize("make, words", BAD_PATTERNS, ids=[" ".join(w) for _m, w in BAD_PATTERNS])
def test_bad_pattern_arguments_are_errors_naming_them(make, words):
    with pytest.raises(aj.Error) as info:
        make()
    for w in words:
        assert w in str(info.value)
    assert not re.search(r"%\d", str(info.value))  # no made-up capture names


def test_one_pattern_object_inside_and_outside_a_run_is_an_error_told_as_written():
    # regression: the message showed the made-up capture names ('%140...')
    element = _()
    pattern = P.is_op("concat")(P.is_tuple([P.repeated(element), element]))
    uses = [lambda: pattern.match(var(KINDS, "a")), lambda: P.rewrite_call(pattern, lambda e, c: None, KINDS_MODULE)]
    for use in uses:
        with pytest.raises(aj.Error, match=r"pattern concat\(\(repeated\(_\), _\)\): the pattern object _ is used "
                                           "both inside"):
            use()


def residual_blocks(n: int) -> tuple[P.Pattern, aj.Module]:
    """h_{k+1} = add(h_k, relu(h_k)) n times, as a module and as a pattern
    using each h_k object twice."""
    bb = aj.FunctionBuilder("main")
    v = bb.param("a", (2,), "float32")
    for _k in range(n):
        v = v + aj.op.relu(v)
    mod = bb.finish(v)
    h = _()
    for _k in range(n):
        h = P.is_op("add")(h, P.is_op("relu")(h))
    return h, mod


def test_a_pattern_object_nested_in_itself_many_times_is_matched_once_per_value():
    # regression: each object was matched (and its names checked and printed) once per path to it, 2**n paths here
    pattern, mod = residual_blocks(60)
    fn = mod["main"]
    got = pattern.match(fn.ret, fn)
    assert got is not None and got[pattern] is fn.ret
    different, _mod = residual_blocks(59)
    assert P.is_op("add")(different, P.is_op("exp")(different)).match(fn.ret, fn) is None
    text = repr(pattern)
    assert text.startswith("add(add(add(") and "..." in text and len(text) < 10_000
    assert P.rewrite_call(pattern, lambda e, c: None, mod) is mod


def add_chain(n: int) -> aj.Module:
    """main(x, b) = x + b + b + ... + b, n adds."""
    bb = aj.FunctionBuilder("main")
    x, b = bb.param("x", (3,), "float32"), bb.param("b", (3,), "float32")
    y = x
    for _k in range(n):
        y = aj.op.add(y, b)
    return bb.finish(y)


def or_of_two_uses(h):
    return P.is_op("add")(h, P.is_const()) | P.is_op("add")(h, P.is_var())


def not_then_use(h):
    return ~(h & P.is_const()) & h


def use_after_a_capture(h):
    return (h & P.is_const()) | (_() & h)


@pytest.mark.parametrize("grow", [or_of_two_uses, not_then_use, use_after_a_capture])
def test_a_pattern_object_both_sides_of_or_and_not_use_is_matched_once_per_value(grow):
    # regression: `|` and `~` dropped what the side they cut back matched,
    # h here, and the pattern after them matched h again: 2**n matches of
    # the innermost h (nested 22 deep: 2 s, doubling per level; 60 deep it
    # would never end)
    mod = add_chain(60)
    fn = mod["main"]
    inner = _()
    h = inner if grow is or_of_two_uses else P.is_op("add")(inner, _())
    for _k in range(60):
        h = grow(h)
    got = h.match(fn.ret, fn)
    want_inner = fn.params[0] if grow is or_of_two_uses else value(fn, fn.ret.name_hint).args[0]
    assert got[h] is fn.ret and got[inner] is want_inner
    assert P.rewrite_call(h, lambda e, c: None, mod) is mod
    assert P.Rewriter.from_pattern(h, lambda e, c: None)(mod) is mod


@pytest.mark.parametrize("shared_inside", [False, True], ids=["private", "shared inside"])
def test_a_pattern_object_matched_once_across_or_captures_what_it_matched_on_the_side_kept(shared_inside):
    # the object x: matched on the left side of |, dropped with it, and
    # taken again from the memo on the right; its sub-patterns with it
    fn = add_chain(3)["main"]
    w1, w2 = _(), _()
    x = P.is_op("add")(w1, w2)
    left, right = P.is_op("add")(x, P.is_const()), P.is_op("add")(x, w2 if shared_inside else P.is_var())
    either = left | right
    got = either.match(fn.ret, fn)
    y1, y2 = (b.var for b in fn.bindings[:2])
    want = {either: fn.ret, right: fn.ret, x: y2, w1: y1, w2: fn.params[1]}
    if not shared_inside:
        want[right._children[1]] = fn.params[1]
    assert {k: v for k, v in got.items() if isinstance(k, P.Pattern)}.keys() == want.keys()
    assert all(got[k] is v for k, v in want.items())


class _Stop(Exception):
    pass


def stopped_by_a_signal(work) -> bool:
    """Whether work() ended with the exception that a timer signal's handler
    raises 0.2 s in."""
    def stop(signum, frame):
        raise _Stop

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        work()
    except _Stop:
        return True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return False


def a_match_without_end(depth: int = 60) -> P.Pattern:
    """h = (h & s.has_dtype("float64")) | (_() & h), depth times, with one s:
    on a float32 value both sides match h, and the right one after a
    capture of its own, and s is used at every level, so neither way of the
    memo applies: 2**depth matches of the innermost h."""
    s = _()
    h = s
    for _k in range(depth):
        h = (h & s.has_dtype("float64")) | (_() & h)
    return h


@pytest.mark.parametrize("use", ["match", "rewrite_call", "Rewriter.from_pattern", "rewrite_bindings"])
def test_a_long_match_stops_at_a_signal(use):
    # regression: matching one expr did not look at Python's signals, so
    # Ctrl-C could not stop a match that takes long; this one would never end
    mod = add_chain(1)
    fn = mod["main"]
    h = a_match_without_end()
    with P.PatternContext() as ctx:
        a_match_without_end()
    works = {"match": lambda: h.match(fn.ret, fn),
             "rewrite_call": lambda: P.rewrite_call(h, lambda e, c: None, mod),
             "Rewriter.from_pattern": lambda: P.Rewriter.from_pattern(h, lambda e, c: None)(mod),
             "rewrite_bindings": lambda: P.rewrite_bindings(ctx, lambda m, b: {}, mod)}
    before = mod.script()
    assert stopped_by_a_signal(works[use])
    assert mod.script() == before


MAX_DEPTH = aj._core._pattern.MAX_DEPTH


def test_a_pattern_as_deep_as_allowed_builds_matches_and_rewrites_in_a_thread():
    # regression: Python's recursion limit was reached at about 500; a 30k
    # deep pattern then overflowed the C++ stack (a crash) when matched
    depth = MAX_DEPTH - 1  # exps around a wildcard
    with P.PatternContext() as ctx:  # its one root: the whole pattern
        pattern = _()
        for _k in range(depth):
            pattern = P.is_op("exp")(pattern)
    bb = aj.FunctionBuilder("main")
    v = bb.param("a", (2,), "float32")
    for _k in range(depth):
        v = aj.op.exp(v)
    mod = bb.finish(v)
    done = []

    def work():
        assert pattern.match(mod["main"].ret, mod["main"]) is not None
        assert P.rewrite_call(pattern, lambda e, c: None, mod) is mod
        assert P.rewrite_bindings(ctx, lambda m, b: {}, mod) is mod
        done.append(repr(pattern))

    thread = threading.Thread(target=work)  # a thread's stack, smaller than the main one's on some systems
    thread.start()
    thread.join()
    assert done and done[0].startswith("exp(exp(")


@pytest.mark.parametrize("deeper", [lambda p: P.is_op("exp")(p), lambda p: ~p, lambda p: p.has_dtype("float32"),
                                    lambda p: p & _(), lambda p: p | _(), lambda p: P.is_tuple([p])],
                         ids=["is_op", "not", "has_dtype", "and", "or", "is_tuple"])
def test_a_pattern_deeper_than_allowed_is_an_error_not_a_crash(deeper):
    pattern = _()
    for _k in range(MAX_DEPTH - 1):
        pattern = deeper(pattern)
    with pytest.raises(aj.Error, match=f"pattern: nests more than {MAX_DEPTH} levels deep"):
        deeper(pattern)


def test_a_pattern_object_shared_at_every_level_is_walked_once_per_object():
    # regression: building the graph pattern of add(h, h) nested 24 deep took
    # 3 s, doubling per level (each path to h was walked); nested 60 deep it
    # would never end
    h = _()
    alternatives = P.is_op("exp")(_())
    with P.PatternContext() as ctx:
        for _k in range(60):
            h = P.is_op("add")(h, h)
            alternatives = alternatives | alternatives
        h.used_by(alternatives)  # noqa: F841 (two roots tied by an edge)
    mod = aj.parse(textwrap.dedent("""
        @function
        def main(a: Tensor((2, 3), "float32")) -> Tensor((2, 3), "float32"):
            r: Tensor((2, 3), "float32") = relu(a)
            return r
    """))
    assert P.rewrite_bindings(ctx, lambda m, b: {}, mod) is mod


# ---- for all patterns: matching and rewriting succeed or raise aj.Errors ----

def built(make, *parts):
    """make(*parts), or the first pattern among parts when the vocabulary
    refuses the pattern (with an aj.Error: a name both inside and outside a
    run, has_attr on a pattern that matches no call, ...)."""
    try:
        return make(*parts)
    except aj.Error:
        return next(p for p in parts if isinstance(p, P.Pattern))


def refusable(make, *parts):
    return st.builds(built, st.just(make), *parts)


LEAVES = st.sampled_from([_, P.is_const, P.is_var, lambda: P.is_var("a"), lambda: _(name="x")]).map(lambda make: make())


def combinations(inner):
    return st.one_of(
        refusable(lambda a, op: P.is_op(op)(a), inner, st.sampled_from(["exp", "log", "permute_dims", "sum"])),
        refusable(lambda a, b, op: P.is_op(op)(a, b), inner, inner, st.sampled_from(["matmul", "add", "multiply"])),
        refusable(lambda element, fields: P.is_tuple([*fields, P.repeated(element)]), inner,
                  st.lists(inner, max_size=2)),
        refusable(P.is_tuple_get_item, inner, st.sampled_from([None, 0, 1, 5])),
        refusable(operator.or_, inner, inner),
        refusable(operator.and_, inner, inner),
        refusable(operator.invert, inner),
        refusable(P.Pattern.has_dtype, inner, st.sampled_from(["float64", "float32"])),
        refusable(P.Pattern.has_shape, inner, st.sampled_from([("n", 4), (), (2, 3)])),
        refusable(P.Pattern.has_attr, inner, st.sampled_from([{"axis": 1}, {"keepdims": True}, {"axes": [1, 0]}])),
    )


@given(st.recursive(LEAVES, combinations, max_leaves=8), st.randoms(use_true_random=False))
def test_for_all_patterns_matching_and_rewriting_give_results_or_aj_errors(pattern, rnd):
    note(repr(pattern))
    for name in ["a", "w", "e", "m", "s", "t", "u", "k", "al", "r"]:
        try:
            got = pattern.match(var(KINDS, name), KINDS)
        except aj.Error:
            continue
        assert got is None or repr(got).startswith("Captures(")

    def picks_a_capture(expr, captures):
        return rnd.choice([None, *(v for v in captures.values() if not isinstance(v, list))])

    try:
        out = P.rewrite_call(pattern, picks_a_capture, KINDS_MODULE)
    except aj.Error:
        return
    aj.analysis.verify(out)


@pytest.mark.parametrize("make, label", [(lambda: P.is_var("\ud800"), "is_var: name="),
                                         (lambda: P.repeated(_(), count="\ud800"), "repeated: count="),
                                         (lambda: P.repeated(_(), count=5), "repeated: count="),
                                         (lambda: _("\ud800"), "name=")])
def test_a_bad_name_is_an_error_naming_the_argument(make, label):
    # regression: a lone surrogate given to is_var or count= was pybind11's
    # TypeError, and count=5 was blamed on name=
    with pytest.raises(aj.Error, match=f"^{re.escape(label)}: "):
        make()


def _names_of(fn):
    return [p.name_hint for p in fn.params] + [b.var.name_hint for b in fn.bindings]


def test_the_vars_a_rewrite_binds_take_names_no_var_of_the_function_has():
    # regression: they were all named "lv", so the user's own lv printed as
    # lv_2 and Gradient(require_grads=["lv"]) found the name ambiguous
    mod = aj.parse(textwrap.dedent("""
        @function
        def main(x: Tensor((2, 3), "float32")) -> Tensor((), "float32"):
            lv: Tensor((2, 3), "float32") = exp(x)
            lv_1: Tensor((), "float32") = sum(lv)
            return lv_1
    """))
    a = _()
    out = P.rewrite_call(P.is_op("exp")(a), lambda e, c: aj.op.abs(aj.op.sqrt(aj.op.square(c[a]))), mod)
    assert _names_of(out["main"]) == ["x", "lv_2", "lv_3", "lv", "lv_1"]
    assert [b.value.op for b in out["main"].bindings] == ["square", "sqrt", "abs", "sum"]
    assert "lv: Tensor((2, 3), \"float32\") = abs(lv_3)" in str(out)
    aj.transform.Gradient("main", require_grads=["lv"])(out)


def test_fresh_names_fill_the_gaps_and_only_skip_names_of_their_own_form():
    # lv_01, lv_0, lv_x and a 40-digit suffix are not names the pass would
    # give, so they take nothing; lv and lv_2 are skipped, lv_1 and lv_3 used
    mod = aj.parse(textwrap.dedent("""
        @function
        def main(lv_01: Tensor((2,), "float32")) -> Tensor((2,), "float32"):
            lv: Tensor((2,), "float32") = exp(lv_01)
            lv_0: Tensor((2,), "float32") = exp(lv)
            lv_x: Tensor((2,), "float32") = exp(lv_0)
            lv_1234567890123456789012345678901234567890: Tensor((2,), "float32") = exp(lv_x)
            lv_2: Tensor((2,), "float32") = exp(lv_1234567890123456789012345678901234567890)
            return lv_2
    """))
    a = _()
    out = P.rewrite_call(P.is_op("exp")(a), lambda e, c: aj.op.abs(aj.op.sqrt(aj.op.square(c[a]))) if e.args[0].name_hint == "lv_x" else e, mod)
    assert _names_of(out["main"]) == ["lv_01", "lv", "lv_0", "lv_x", "lv_1", "lv_3",
                                      "lv_1234567890123456789012345678901234567890", "lv_2"]


def test_the_vars_rewrite_bindings_and_combine_parallel_matmul_bind_take_fresh_names():
    mod = aj.parse(textwrap.dedent("""
        @function
        def main(x: Tensor((2, 4), "float32"), w1: Tensor((4, 3), "float32"), w2: Tensor((4, 5), "float32")) -> Tuple(Tensor((2, 3), "float32"), Tensor((2, 5), "float32")):
            lv: Tensor((2, 3), "float32") = matmul(x, w1)
            lv_1: Tensor((2, 5), "float32") = matmul(x, w2)
            return (lv, lv_1)
    """))
    combined = aj.transform.CombineParallelMatmul()(mod)
    assert _names_of(combined["main"]) == ["x", "w1", "w2", "lv_2", "lv_3", "lv_4", "lv", "lv_1"]
    with P.PatternContext() as ctx:
        inp, w = _(), [_(), _()]
        mm = [P.is_op("matmul")(inp, wi) for wi in w]

    def combine(m, bindings):
        parts = aj.op.split(aj.op.matmul(m[inp], aj.op.concat([m[wi] for wi in w], axis=1)), [3], axis=1)
        return {m[p]: parts[i] for i, p in enumerate(mm)}

    by_hand = P.rewrite_bindings(ctx, combine, mod)
    names = _names_of(by_hand["main"])
    assert len(set(names)) == len(names) and names[-2:] == ["lv", "lv_1"]


def test_callbacks_nesting_without_end_are_an_error_not_a_crash():
    # regression: with Python's recursion limit raised, a rewriter running
    # rewrite_call on the module again overflowed the C++ stack at about
    # 2000 levels (Python's limit counts Python frames only)
    mod = aj.parse(textwrap.dedent("""
        @function
        def main(a: Tensor((2, 2), "float32")) -> Tensor((2, 2), "float32"):
            y: Tensor((2, 2), "float32") = matmul(a, a)
            return y
    """))
    pattern = P.is_op("matmul")(_(), _())
    depth = []

    def again(expr, captures):
        depth.append(1)
        return P.rewrite_call(pattern, again, mod)["main"].ret

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(aj.Error, match="a rewriter: Python callbacks nest more than 100 deep"):
            P.rewrite_call(pattern, again, mod)
    finally:
        sys.setrecursionlimit(limit)
    assert len(depth) == 100


def test_a_nul_in_a_name_is_shown_in_the_message_not_the_end_of_it():
    # regression: the message ended at the NUL ("there is no op named 'relu")
    with pytest.raises(aj.Error, match=r"there is no op named 'relu\\0 and more'"):
        P.is_op("relu\x00 and more")(_())


@pytest.mark.parametrize("name, hint", [
    ("relax.matmul", "(op names have no prefix such as TVM's 'relax.': 'matmul')"),
    ("relax.nn.softmax", "(op names have no prefix such as TVM's 'relax.': 'softmax')"),
    ("relax.nn.sofmax", "(did you mean 'softmax'?)"),
    ("matmull", "(did you mean 'matmul'?)"),
    ("xyzzy", "there is no op named 'xyzzy'"),
])
def test_an_unknown_op_name_is_an_error_pointing_to_the_op_meant(name, hint):
    with pytest.raises(aj.Error) as info:
        P.is_op(name)(_())
    assert str(info.value).endswith(hint)


def test_a_pattern_on_the_failed_side_of_an_or_is_not_captured_and_a_run_there_captures_an_empty_list():
    fn = aj.parse('@function\ndef main(a: Tensor((2, 2), "float32")):\n    e = exp(a)\n    return e\n')["main"]
    w, r = P.wildcard(), P.repeated(P.wildcard(), name="r")
    inside = P.is_op("negative")(w, name="inside")
    caps = (P.is_op("add")(r, inside) | P.is_op("exp")(P.wildcard())).match(fn.bindings[0].value, fn)
    assert caps.get(inside) is None and caps.get("inside") is None and inside not in caps
    assert caps.get(r) == [] and caps["r"] == []  # as when a run matches no element
