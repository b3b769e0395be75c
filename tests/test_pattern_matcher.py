"""The C++ pattern matcher and binding rewriter (cpp/src/pattern/,
cpp/src/transform/rewrite.cc), through their private bindings
``_core._pattern``: the vocabulary of DESIGN.md §5, captures, runs of any
length, wrong arguments, and the rewriter's replacement binding, type check
and non-convergence error."""

from __future__ import annotations

import pytest

import adjoint as aj
from adjoint._core import _pattern as P


def fn_of(body, params='a: Tensor((3, 4), "float32"), b: Tensor((3, 4), "float32")', ret="Tensor((3, 4), \"float32\")"):
    """A module whose main has these bindings and returns the last one."""
    lines = body.strip().splitlines()
    last = lines[-1].split(":")[0]
    text = "".join(f"    {line}\n" for line in lines)
    return aj.parse(f"@function\ndef main({params}) -> {ret}:\n{text}    return {last}\n")


def op(name, *args, **attrs):
    return P.is_op(name, list(args), attrs)


x, y = P.wildcard().named("x"), P.wildcard().named("y")
_ = P.wildcard


# ---- printing ----

def test_patterns_print_in_their_vocabulary():
    assert repr(op("permute_dims", op("permute_dims", x).named("inner"))) == "permute_dims((inner := permute_dims(x)))"
    assert repr(op("sum", _(), axis=1, keepdims=True)) == "sum(_, axis=[1], keepdims=True)"
    assert repr(P.repeated(op("exp", x), "xs", "n")) == '(xs := repeated(exp(x), count="n"))'
    assert repr((P.is_const() | ~P.is_var()).has_dtype("float32")) == '(const() | ~var()).has_dtype("float32")'
    assert repr((~x).has_shape((3, "n"))) == '(~x).has_shape((3, "n"))'
    assert repr(P.is_tuple_get_item(P.is_tuple([P.repeated(_())]), 0)) == "(repeated(_),)[0]"
    assert repr(_().has_attr({"axis": [0]})) == '_.has_attr({"axis": [0]})'


# ---- matching through bindings ----

MM = fn_of('''
ta: Tensor((4, 3), "float32") = permute_dims(a)
tb: Tensor((4, 3), "float32") = permute_dims(b)
m: Tensor((4, 4), "float32") = matmul(ta, permute_dims(tb))
s: Tensor((4, 1), "float32") = sum(m, axis=[1], keepdims=True)
t: Tuple(Tensor((4, 4), "float32"), Tensor((4, 1), "float32")) = (m, s)
u: Tensor((4, 1), "float32") = t[1]
c: Tensor((), "float32") = const(2.0, "float32")
k: Tensor((4, 1), "float32") = multiply(u, c)
alias: Tensor((4, 1), "float32") = k
r: Tensor((4, 1), "float32") = add(alias, u)
''', ret='Tensor((4, 1), "float32")')["main"]


def test_calls_are_matched_through_var_bindings_and_capture_the_var():
    got = P.match(op("matmul", op("permute_dims", x), op("permute_dims", y).named("tt")), MM, "m")
    assert got is not None
    assert got["x"].name_hint == "a" and got["tt"].name_hint == "lv"
    assert P.match(op("matmul", op("permute_dims", x), op("exp", y)), MM, "m") is None


def test_attrs_must_agree():
    assert P.match(op("sum", _(), axis=[1], keepdims=True), MM, "s") is not None
    assert P.match(op("sum", _(), axis=1), MM, "s") is not None  # coerced as the schema does
    assert P.match(op("sum", _(), keepdims=False), MM, "s") is None
    assert P.match(op("sum", _()).has_attr({"axis": [0]}), MM, "s") is None
    assert P.match((op("sum", _()) | op("mean", _())).has_attr({"keepdims": True}), MM, "s") is not None


def test_tuples_items_constants_vars_and_aliases():
    item = P.is_tuple_get_item(P.is_tuple([op("matmul", _(), _()), x]), 1)
    assert P.match(op("multiply", item, P.is_const()), MM, "k")["x"].name_hint == "s"
    assert P.match(op("multiply", P.is_tuple_get_item(_(), 0), _()), MM, "k") is None
    assert P.match(op("add", op("multiply", _(), _()), _()), MM, "r") is not None  # through `alias = k`
    assert P.match(op("permute_dims", P.is_var()), MM, "ta") is not None
    assert P.match(op("permute_dims", P.is_var("b")), MM, "ta") is None
    assert P.match(op("sum", P.is_var()), MM, "s") is None  # m is bound: not a var


def test_type_constraints():
    assert P.match(_().has_dtype("float32").has_shape((4, 1)), MM, "s") is not None
    assert P.match(_().has_dtype("float64"), MM, "s") is None
    assert P.match(_().has_shape((1, 4)), MM, "s") is None
    sym = fn_of('s: Tensor(("n",), "float32") = exp(a)', params='a: Tensor(("n",), "float32")',
                ret='Tensor(("n",), "float32")')["main"]
    assert P.match(op("exp", _().has_shape(("n",))), sym, "s") is not None
    assert P.match(op("exp", _().has_shape(("m",))), sym, "s") is None


def test_or_and_not():
    assert P.match(op("exp", _()) | op("sum", x), MM, "s")["x"].name_hint == "m"
    assert P.match(op("sum", _()) & _().has_shape((4, 1)), MM, "s") is not None
    assert P.match(~op("exp", _()), MM, "s") == {}
    assert P.match(~op("sum", _()), MM, "s") is None
    # the captures of a side that failed are dropped
    m = next(b.var for b in MM.bindings if b.var.name_hint == "m")
    assert P.match(op("sum", op("exp", x)) | op("sum", y), MM, "s") == {"y": m}


def test_a_name_used_twice_requires_one_value():
    f = fn_of('''
c: Tensor((3, 4), "float32") = add(a, a)
d: Tensor((3, 4), "float32") = add(a, b)
''')["main"]
    same = op("add", x, x)
    assert P.match(same, f, "c")["x"].name_hint == "a"
    assert P.match(same, f, "d") is None
    assert P.match(op("add", _(), _()), f, "d") is not None


# ---- runs ----

def concat_of(n, *, tuple_var=True):
    names = [f"x{i}" for i in range(n)]
    params = ", ".join(f'{v}: Tensor((2,), "float32")' for v in names)
    body = "".join(f'    e{i}: Tensor((2,), "float32") = exp({v})\n' for i, v in enumerate(names))
    fields = ", ".join(f"e{i}" for i in range(n)) + ("," if n == 1 else "")
    ttype = "Tuple(" + ", ".join('Tensor((2,), "float32")' for _ in names) + ")"
    if tuple_var:
        body += f"    t: {ttype} = ({fields})\n    c: Tensor(({2 * n},), \"float32\") = concat(t, axis=0)\n"
    else:
        body += f"    c: Tensor(({2 * n},), \"float32\") = concat(({fields}), axis=0)\n"
    return aj.parse(f"@function\ndef main({params}) -> Tensor(({2 * n},), \"float32\"):\n{body}    return c\n")["main"]


@pytest.mark.parametrize("n", [1, 2, 13, 100, 1000])
def test_repeated_matches_runs_of_any_length(n):
    fn = concat_of(n, tuple_var=n % 2 == 0)
    got = P.match(op("concat", P.is_tuple([P.repeated(op("exp", x).named("e"), "es")])), fn, "c")
    assert [v.name_hint for v in got["x"]] == [f"x{i}" for i in range(n)]  # a name inside a run: one per element
    assert [v.name_hint for v in got["es"]] == [f"e{i}" for i in range(n)]
    assert P.match(op("concat", P.is_tuple([P.repeated(op("log", x))])), fn, "c") is None


def test_runs_with_fixed_fields_around_them():
    fn = concat_of(5)
    head = P.is_tuple([op("exp", x), P.repeated(_(), "mid"), op("exp", y)])
    got = P.match(op("concat", head), fn, "c")
    assert got["x"].name_hint == "x0" and got["y"].name_hint == "x4" and len(got["mid"]) == 3
    assert P.match(op("concat", P.is_tuple([_()] * 6 + [P.repeated(_())])), fn, "c") is None


def test_two_runs_of_one_count_name_split_evenly_and_runs_of_one_name_agree():
    f = fn_of('''
t: Tuple(Tensor((3, 4), "float32"), Tensor((3, 4), "float32"), Tensor((3, 4), "float32"), Tensor((3, 4), "float32")) = (a, b, a, b)
u: Tuple(Tensor((3, 4), "float32"), Tensor((3, 4), "float32"), Tensor((3, 4), "float32")) = (a, b, a)
d: Tensor((9, 4), "float32") = concat(u, axis=0)
c: Tensor((12, 4), "float32") = concat(t, axis=0)
''', ret='Tensor((12, 4), "float32")')["main"]
    halves = P.is_tuple([P.repeated(_(), "h", "n"), P.repeated(_(), "h", "n")])
    assert [v.name_hint for v in P.match(op("concat", halves), f, "c")["h"]] == ["a", "b"]
    assert P.match(op("concat", halves), f, "d") is None  # 3 fields do not split in two
    counted = P.is_tuple([P.repeated(_(), "p", "n"), P.repeated(_(), "q", "n")])
    got = P.match(op("concat", counted), f, "c")
    assert [v.name_hint for v in got["p"]] == ["a", "b"] and [v.name_hint for v in got["q"]] == ["a", "b"]
    swapped = fn_of('''
t: Tuple(Tensor((3, 4), "float32"), Tensor((3, 4), "float32"), Tensor((3, 4), "float32"), Tensor((3, 4), "float32")) = (a, b, b, a)
c: Tensor((12, 4), "float32") = concat(t, axis=0)
''', ret='Tensor((12, 4), "float32")')["main"]
    assert P.match(op("concat", halves), swapped, "c") is None  # same count, other values
    assert P.match(op("concat", counted), swapped, "c") is not None


# ---- wrong arguments ----

@pytest.mark.parametrize("make, words", [
    (lambda: P.is_op("no_such_op", [_()]), ["no op named 'no_such_op'"]),
    (lambda: op("matmul", _()), ["matmul", "takes 2 arg(s)", "x1, x2"]),
    (lambda: op("sum", _(), axes=[1]), ["sum", "no attr 'axes'", "axis, keepdims"]),
    (lambda: op("sum", _(), keepdims="yes"), ["sum", "keepdims"]),
    (lambda: P.repeated(_()) | _(), ["repeated(_)", "run", "is_tuple"]),
    (lambda: P.repeated(_()).has_dtype("float32"), ["repeated(_)", "has_dtype"]),
    (lambda: P.repeated(P.repeated(_())), ["element of repeated"]),
    (lambda: P.is_tuple([P.repeated(_()), P.repeated(_())]), ["two repeated runs", "count name"]),
    (lambda: P.is_tuple([_()]).has_shape((3,)), ["has_shape", "a tuple has no shape"]),
    (lambda: _().has_shape((3, -1)), ["has_shape", "negative"]),
    (lambda: P.is_const().has_attr({"axis": 1}), ["const().has_attr", "matches no call"]),
    (lambda: P.is_tuple([op("exp", x), P.repeated(op("exp", x))]), ["name 'x'", "inside and outside"]),
    (lambda: P.is_tuple([x, P.repeated(_(), "x")]), ["name 'x'"]),
    (lambda: _().named(""), ["must not be empty"]),
    (lambda: P.is_tuple_get_item(_(), -2), ["index must be >= 0"]),
])
def test_wrong_arguments_are_errors_naming_the_pattern(make, words):
    with pytest.raises(aj.Error) as e:
        make()
    for w in words:
        assert w in str(e.value), str(e.value)


def test_matching_in_a_malformed_function_is_a_verify_error():
    t = aj.TensorType((3,), "float32")
    a, v = aj.Var("a", t), aj.Var("v", t)
    fn = aj.Function([a], [(v, aj.Call("exp", [v]))], v)  # v used by its own binding
    with pytest.raises(aj.VerifyError):
        P.match(op("exp", x), fn, "v")


def test_a_run_cannot_be_matched_alone():
    with pytest.raises(aj.Error, match="run"):
        P.match(P.repeated(_()), MM, "s")


# ---- the rewriter ----

def call(name, *args, **attrs):
    return aj.Call(name, list(args), attrs)


def rewrite(mod, *rules, max_rounds=8):
    return aj.transform.DeadCodeElimination()(P.rewrite(mod, list(rules), max_rounds))


def rule(name, pattern, replace):
    return (name, f"{name} (a test rule)", pattern, replace)


def body(mod):
    return mod.script().split(":\n", 1)[1]


def test_nested_replacements_are_bound_call_by_call_and_rewritten_themselves():
    mod = fn_of('y: Tensor((3, 4), "float32") = abs(a)\nz: Tensor((3, 4), "float32") = negative(y)')
    out = rewrite(mod,
                  rule("abs_as_sqrt_of_square", op("abs", x), lambda r, m: call("sqrt", call("square", m["x"]))),
                  rule("square_as_multiply", op("square", x), lambda r, m: call("multiply", m["x"], m["x"])))
    assert body(out) == '''\
    lv: Tensor((3, 4), "float32") = multiply(a, a)
    y: Tensor((3, 4), "float32") = sqrt(lv)
    z: Tensor((3, 4), "float32") = negative(y)
    return z
'''


def test_patterns_see_the_bindings_the_rewrite_makes():
    mod = fn_of('y: Tensor((3, 4), "float32") = abs(a)\nz: Tensor((3, 4), "float32") = negative(y)')
    out = rewrite(mod,
                  rule("abs_as_exp_of_log", op("abs", x), lambda r, m: call("exp", call("log", m["x"]))),
                  rule("exp_of_log", op("exp", op("log", x)), lambda r, m: m["x"]))
    assert body(out) == '    z: Tensor((3, 4), "float32") = negative(a)\n    return z\n'


def test_tuples_and_items_are_seen_through():
    mod = fn_of('''
t: Tuple(Tensor((3, 4), "float32"), Tensor((3, 4), "float32")) = (a, b)
q: Tensor((3, 4), "float32") = t[1]
e: Tensor((3, 4), "float32") = exp(q)
''')
    item = P.is_tuple_get_item(P.is_tuple([_(), x]), 1)
    out = rewrite(mod, rule("exp_of_second", op("exp", item), lambda r, m: call("exp", m["x"])))
    assert body(out) == '    e: Tensor((3, 4), "float32") = exp(b)\n    return e\n'


def test_rules_are_tried_in_order_and_only_on_calls_of_their_root_ops():
    mod = fn_of('y: Tensor((3, 4), "float32") = sin(a)\nz: Tensor((3, 4), "float32") = cos(y)')
    seen = []

    def to_tanh(root, m):
        seen.append(root.op)
        return call("tanh", m["x"])

    out = rewrite(mod,
                  rule("sin_or_cos", op("sin", x) | op("cos", x), to_tanh),
                  rule("never_reached", op("sin", x), lambda r, m: call("exp", m["x"])))
    assert seen == ["sin", "cos"]
    assert "tanh(a)" in out.script() and "exp" not in out.script()


def test_declining_leaves_the_call():
    mod = fn_of('y: Tensor((3, 4), "float32") = sin(a)')
    for decline in (lambda r, m: None, lambda r, m: r):
        out = P.rewrite(mod, [rule("declines", op("sin", x), decline)], 8)
        aj.assert_structural_equal(out, mod)


def test_a_replacement_of_another_type_names_the_binding_and_both_types():
    mod = fn_of('s: Tensor((3, 1), "float32") = sum(a, axis=[1], keepdims=True)', ret='Tensor((3, 1), "float32")')
    before = mod.script()
    with pytest.raises(aj.TypeInferenceError) as e:
        P.rewrite(mod, [rule("sum_as_itself", op("sum", x), lambda r, m: m["x"])], 8)
    msg = str(e.value)
    assert "'sum_as_itself'" in msg and "'s'" in msg
    assert 'Tensor((3, 4), "float32")' in msg and 'Tensor((3, 1), "float32")' in msg
    assert mod.script() == before


def test_rules_that_undo_each_other_are_a_transform_error_naming_them():
    mod = fn_of('y: Tensor((3, 4), "float32") = sin(a)')
    with pytest.raises(aj.TransformError) as e:
        P.rewrite(mod, [rule("sin_to_cos", op("sin", x), lambda r, m: call("cos", m["x"])),
                        rule("cos_to_sin", op("cos", x), lambda r, m: call("sin", m["x"]))], 8)
    msg = str(e.value)
    assert "fixed point" in msg and "'y'" in msg and "sin_to_cos" in msg and "cos_to_sin" in msg


def test_a_rule_that_grows_its_own_match_is_a_transform_error():
    mod = fn_of('y: Tensor((3, 4), "float32") = exp(a)')
    with pytest.raises(aj.TransformError, match="exp_of_exp"):
        P.rewrite(mod, [rule("exp_of_exp", op("exp", x), lambda r, m: call("exp", call("exp", m["x"])))], 8)


def test_an_exception_in_a_replacement_propagates_and_the_module_is_unchanged():
    mod = fn_of('y: Tensor((3, 4), "float32") = sin(a)')
    before = mod.script()

    def fails(root, m):
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        P.rewrite(mod, [rule("fails", op("sin", x), fails)], 8)
    assert mod.script() == before


@pytest.mark.parametrize("rules, words", [
    ([rule("twice", op("sin", x), lambda r, m: None), rule("twice", op("cos", x), lambda r, m: None)], ["'twice'", "two rules"]),
    ([rule("on_const", P.is_const(), lambda r, m: None)], ["'on_const'", "matches no call"]),
    ([rule("on_run", P.repeated(_()), lambda r, m: None)], ["'on_run'", "run"]),
    ([rule("", op("sin", x), lambda r, m: None)], ["no name"]),
])
def test_bad_rules_are_errors_naming_them(rules, words):
    with pytest.raises(aj.Error) as e:
        P.rewrite(fn_of('y: Tensor((3, 4), "float32") = sin(a)'), rules, 8)
    for w in words:
        assert w in str(e.value), str(e.value)
