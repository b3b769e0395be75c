"""The text format: print(parse(t)) == t for canonical text, and
non-canonical input (no annotations, nested calls, comments, positional
attrs) parses into the same structure as its canonical form."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adjoint as aj
from adjoint import examples

# Every example of DESIGN.md, as complete modules in canonical form.
DESIGN_EXAMPLES = {
    **examples.ALL,
    "pattern_a_tb": '''\
@function
def main(a: Tensor((4, 3), "float32"), b: Tensor((5, 3), "float32")) -> Tensor((), "float32"):
    lv: Tensor((3, 5), "float32") = permute_dims(b)
    out: Tensor((4, 5), "float32") = matmul(a, lv)
    gv: Tensor((), "float32") = sum(out)
    return gv
''',
    "pattern_ta_b": '''\
@function
def main(a: Tensor((3, 4), "float32"), b: Tensor((3, 5), "float32")) -> Tensor((), "float32"):
    lv: Tensor((4, 3), "float32") = permute_dims(a)
    out: Tensor((4, 5), "float32") = matmul(lv, b)
    gv: Tensor((), "float32") = sum(out)
    return gv
''',
    "symbolic_and_attrs": '''\
@function(num_input=1)
def main(x: Tensor(("n", 4096), "float32"), y: Tensor(("m + n", 4), "float32"), w: Tensor((4096, 4), "float32")) -> Tensor((), "float32"):
    lv: Tensor(("n", 4), "float32") = matmul(x, w)
    lv1: Tensor((4, "n"), "float32") = permute_dims(lv, axes=[1, 0])
    lv2: Tensor((4, 1), "float32") = sum(lv1, axis=[1], keepdims=True)
    lv3: Tensor((4, 4), "float32") = broadcast_to(lv2, (4, 4))
    c: Tensor((), "float32") = const(1.5, "float32")
    lv4: Tensor((4, 4), "float32") = multiply(lv3, c)
    z: Tensor((16,), "int32") = zeros((16,), "int32")
    o: Tensor((4, 4), "float32") = ones((4, 4), "float32")
    lv5: Tensor((4, 4), "float32") = add(lv4, o)
    gv: Tensor((), "float32") = sum(lv5)
    return gv
''',
    "two_functions_and_tuple_return": '''\
@function
def main(x: Tensor((2, 2), "float64")) -> Tuple(Tensor((), "float64"), Tuple(Tensor((2, 2), "float64"))):
    c: Tensor((2, 2), "float64") = const([[1.0, 2.0], [3.0, 4.0]], "float64")
    lv: Tensor((2, 2), "float64") = multiply(x, c)
    gv: Tensor((), "float64") = sum(lv)
    return (gv, (c,))

@function
def other(a: Tensor((6,), "int64"), b: Tensor((6,), "int64")) -> Tensor((6,), "bool"):
    s: Tuple(Tensor((3,), "int64"), Tensor((3,), "int64")) = split(a, 2)
    s0: Tensor((3,), "int64") = s[0]
    s1: Tensor((3,), "int64") = s[1]
    c: Tensor((6,), "int64") = concat((s1, s0))
    e: Tensor((6,), "bool") = equal(c, b)
    return e
''',
}


@pytest.mark.parametrize("name", sorted(DESIGN_EXAMPLES))
def test_print_of_parse_is_identity(name):
    text = DESIGN_EXAMPLES[name]
    mod = aj.parse(text)
    assert mod.script() == text
    assert str(mod) == text
    aj.analysis.verify(mod)
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


def test_design_section3_example_prints_as_written():
    mod = aj.parse(examples.TRANSPOSED_MATMUL)
    assert str(mod) == examples.TRANSPOSED_MATMUL
    fn = mod["main"]
    assert [p.name_hint for p in fn.params] == ["x", "y"]
    assert [b.var.name_hint for b in fn.bindings] == ["lv1", "lv2", "lv3", "gv"]
    assert fn.bindings[2].value.op == "matmul"
    assert fn.ret_type.shape == () and fn.ret_type.dtype == "float32"


def test_annotations_are_optional_and_inferred():
    text = '''
@function
def main(x: Tensor((3, 3), "float32"), y: Tensor((3, 3), "float32")) -> Tensor((), "float32"):
    lv1 = permute_dims(x)
    lv2 = permute_dims(y)
    lv3 = matmul(lv1, lv2)
    gv = sum(lv3)
    return gv
'''
    assert aj.parse(text).script() == examples.TRANSPOSED_MATMUL


def test_nested_calls_are_normalized_into_bindings():
    text = '''\
@function
def main(x: Tensor((2, 3), "float32"), w: Tensor((4, 3), "float32")) -> Tensor((2, 4), "float32"):
    y = matmul(x, permute_dims(w))
    return y
'''
    mod = aj.parse(text)
    fn = mod["main"]
    assert [b.value.op for b in fn.bindings] == ["permute_dims", "matmul"]
    assert fn.bindings[1].var.name_hint == "y"
    again = aj.parse(mod.script())
    aj.assert_structural_equal(again, mod)
    assert again.script() == mod.script()


def test_generated_names_avoid_names_bound_before_and_after():
    # The parser reads a body statement by statement; a nested call makes it
    # read the rest of the body ahead, so "lv" and "lv_1" (bound later) and
    # "lv_2" (bound before) are all skipped.
    text = '''\
@function
def main(x: Tensor((2, 2), "float32")) -> Tensor((2, 2), "float32"):
    lv_2 = add(x, x)
    a = add(multiply(x, x), multiply(lv_2, x))
    lv = add(a, x)
    lv_1 = add(lv, x)
    b = add(lv_1, subtract(lv_1, x))
    return b
'''
    fn = aj.parse(text)["main"]
    names = [b.var.name_hint for b in fn.bindings]
    assert names == ["lv_2", "lv_3", "lv_4", "a", "lv", "lv_1", "lv_5", "b"]
    assert len(set(names)) == len(names)
    assert aj.parse(aj.parse(text).script()).script() == aj.parse(text).script()


def test_functions_after_a_read_ahead_parse_alike():
    text = '''\
@function
def f(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):
    a = add(x, multiply(x, x))
    b = add(a, x)
    return b

@function
def g(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):
    a = add(x, x)
    return a
'''
    mod = aj.parse(text)
    assert [fn for fn, _ in mod.functions.items()] == ["f", "g"]
    assert [b.var.name_hint for b in mod["f"].bindings] == ["lv", "a", "b"]
    assert [b.var.name_hint for b in mod["g"].bindings] == ["a"]


def test_comments_blank_lines_positional_and_keyword_attrs():
    text = '''
# a comment before the module

@function
def main(x: Tensor((3, 4), "float32")) -> Tensor((4,), "float32"):
    # sum over rows
    s = sum(x, [0])       # positional axis

    t = sum(x, axis=0, keepdims=False)
    return t
'''
    mod = aj.parse(text)
    assert 'sum(x, axis=[0])' in mod.script()
    fn = mod["main"]
    assert fn.bindings[0].value.attrs == fn.bindings[1].value.attrs == {"axis": [0], "keepdims": False}


SIGNATURE = 'def main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    return x\n'


def test_function_attrs_print_in_one_order_however_given():
    canonical = '@function(num_input=1, doc="d")\n' + SIGNATURE
    parsed = aj.parse('@function(doc="d", num_input=1)\n' + SIGNATURE)
    bb = aj.FunctionBuilder("main", doc="d", num_input=1)
    built = bb.finish(bb.param("x", (2,), "float32"))
    by_attr = aj.parse("@function\n" + SIGNATURE)["main"].with_attr("doc", "d").with_attr("num_input", 1)
    made = aj.Function(by_attr.params, by_attr.bindings, by_attr.ret, {"doc": "d", "num_input": 1})
    for mod in (parsed, built, aj.Module({"main": by_attr}), aj.Module({"main": made})):
        assert mod.script() == canonical
        assert list(mod["main"].attrs) == ["num_input", "doc"]
        aj.assert_structural_equal(mod, parsed)
        assert aj.structural_hash(mod) == aj.structural_hash(parsed)


def test_noncanonical_constants_print_canonically():
    text = '''
@function
def main(x: Tensor((2, 2), "float32")) -> Tensor((2, 2), "float32"):
    y = add(x, const([[1, 2], [3, 4]], "float32"))
    return y
'''
    mod = aj.parse(text)
    assert 'const([[1.0, 2.0], [3.0, 4.0]], "float32")' in mod.script()
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


def test_float_literals_round_trip_exactly():
    vals = [0.1, 1e-05, 1.5e20, -2.5, 3.0, 1 / 3]
    body = "\n".join(f'    c{i} = const({v!r}, "float64")' for i, v in enumerate(vals))
    text = f'@function\ndef main(x: Tensor((), "float64")) -> Tensor((), "float64"):\n{body}\n    return c0\n'
    mod = aj.parse(text)
    got = [float(b.value.data) for b in mod["main"].bindings]
    assert got == vals
    for v in vals:
        assert f"const({v!r}, " in mod.script()


def test_duplicate_name_hints_print_uniquely():
    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (2,), "float32")
    a = aj.op.add(x, x, name="h")
    b = aj.op.add(a, x, name="h")
    mod = bb.finish(aj.op.add(a, b, name="h"))
    names = [b.var.name_hint for b in mod["main"].bindings]
    assert names == ["h", "h_1", "h_2"]
    aj.assert_structural_equal(aj.parse(mod.script()), mod)


def test_vars_sharing_a_hint_print_uniquely():
    t = aj.TensorType((2,), "float32")
    x = aj.Var("v", t)
    v1 = aj.Var("v", t)
    v2 = aj.Var("v", t)
    fn = aj.Function([x], [(v1, aj.Call("add", [x, x])), (v2, aj.Call("add", [v1, x]))], v2)
    mod = aj.Module({"main": fn})
    aj.analysis.verify(mod)
    text = mod.script()
    again = aj.parse(text)
    aj.assert_structural_equal(again, mod)
    assert again.script() == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_string_attrs_round_trip_whatever_they_hold(s):
    # Quotes, backslashes, newlines, tabs and control characters are escaped
    # when printed, and read back as they were.
    bb = aj.FunctionBuilder("main", doc=s)
    x = bb.param("x", (2,), "float32")
    mod = bb.finish(aj.op.exp(x))
    text = mod.script()
    again = aj.parse(text)
    assert again["main"].attrs["doc"] == s
    assert again.script() == text


def test_hex_escapes_in_strings():
    text = '@function(doc="a\\x41\\x0a")\ndef main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    return x\n'
    assert aj.parse(text)["main"].attrs["doc"] == "aA\n"
    with pytest.raises(aj.ParseError, match=r"needs two hex digits"):
        aj.parse(text.replace("\\x41", "\\xZ1"))


@pytest.mark.parametrize("written,index", [("0x1", 1), ("0X2", 2), ("-0x1", 2), ("0x0", 0), ("01", 1)])
def test_tuple_index_is_the_value_of_its_int(written, index):
    # A hex index means its value; t[0x1] used to read as t[0] (the index
    # was read in base 10, stopping at the 'x').
    text = '@function\ndef main(x: Tensor((3,), "float32"), z: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    t = (x, z, z)\n    a = t[{}]\n    return z\n'
    mod = aj.parse(text.format(written))
    assert mod["main"].bindings[1].value.index == index
    aj.assert_structural_equal(mod, aj.parse(text.format(index)))


@pytest.mark.parametrize("value,truth", [("0", False), ("1", True), ("-0", False), ("-0x0", False), ("0x1", True)])
def test_bool_constant_takes_0_and_1(value, truth):
    text = '@function\ndef main() -> Tensor((1,), "bool"):\n    c = const([{}], "bool")\n    return c\n'
    aj.assert_structural_equal(aj.parse(text.format(value)), aj.parse(text.format(truth)))


def const_module(value, dtype):
    return f'@function\ndef main() -> Tensor((2,), "{dtype}"):\n    c = const([{value}, 1.0], "{dtype}")\n    return c\n'


def parse_or_message(text):
    try:
        return aj.parse(text)
    except aj.ParseError as e:
        return str(e).splitlines()[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 0x10, 2**24 + 1, 2**24 + 3, 2**53 + 1, 2**64 + 2**40 + 1,
                               (2**24 - 1) << 104, ((2**25 - 1) << 103) - 1, (2**25 - 1) << 103, 2**1024])
def test_hex_int_in_a_float_constant_is_its_value(n, dtype):
    # const(0x10, "float32") used to say "value 0x10 is out of range": the
    # text was read as a decimal float. A hex int now rounds (ties to even)
    # and overflows as the same int written in decimal does.
    for sign in ("", "-"):
        hex_text, dec_text = const_module(f"{sign}{n:#x}", dtype), const_module(f"{sign}{n}", dtype)
        got, want = parse_or_message(hex_text), parse_or_message(dec_text)
        if isinstance(want, str):
            assert got == want.replace(f"{sign}{n}", f"{sign}{n:#x}")
        else:
            aj.assert_structural_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**1030), st.sampled_from(["float32", "float64"]))
def test_hex_and_decimal_ints_give_the_same_float_constant(n, dtype):
    got, want = parse_or_message(const_module(f"{n:#x}", dtype)), parse_or_message(const_module(str(n), dtype))
    if isinstance(want, str):
        assert got == want.replace(str(n), f"{n:#x}")
    else:
        aj.assert_structural_equal(got, want)


def test_hex_int_means_the_same_in_a_float_constant_and_a_float_attr():
    head = '@function\ndef main() -> Tensor((2,), "float32"):\n'
    attr = aj.parse(head + '    c = full((2,), 0x10, "float32")\n    return c\n')
    const = aj.parse(head + '    c = const([0x10, 0X1f], "float32")\n    return c\n')
    assert attr["main"].bindings[0].value.attrs["fill_value"] == 16.0
    assert const["main"].bindings[0].value.data.tolist() == [16.0, 31.0]


def doc_module(literal):
    return f'@function(doc={literal})\ndef main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    return x\n'


@pytest.mark.parametrize("escape,char", [("\\xff", "\u00ff"), ("\\xe9", "\u00e9"), ("\\x80", "\x80"),
                                         ("\\x9f", "\x9f"), ("\\xA0", "\xa0"), ("\\x7f", "\x7f")])
def test_hex_escape_is_the_code_point(escape, char):
    # \xNN is U+00NN, as in Python; it used to put the raw byte NN into the
    # string, which was invalid UTF-8 from 0x80 on (str(m) and attrs raised
    # UnicodeDecodeError).
    mod = aj.parse(doc_module(f'"a{escape}"'))
    assert mod["main"].attrs["doc"] == "a" + char
    text = str(mod)
    assert aj.parse(text)["main"].attrs["doc"] == "a" + char
    assert aj.parse(text).script() == text


def test_c1_controls_print_as_hex_escapes():
    bb = aj.FunctionBuilder("main", doc="\x85\x9f\xa0\u00e9\x00")
    x = bb.param("x", (2,), "float32")
    text = bb.finish(aj.op.exp(x)).script()
    assert '@function(doc="\\x85\\x9f\u00a0\u00e9\\x00")' in text


def written(s, quote, choices):
    """s as a string literal quoted with `quote`, each character written raw
    or escaped as choices (one draw per character) say, when both are allowed."""
    out = []
    for c, escape in zip(s, choices):
        raw_ok = c not in (quote, "\\", "\n") and (c == "\t" or not ("\x00" <= c < " " or c == "\x7f"))
        if raw_ok and not escape:
            out.append(c)
        elif c in ("\\", "'", '"'):
            out.append("\\" + c)
        elif c in "\n\t":
            out.append({"\n": "\\n", "\t": "\\t"}[c] if escape % 2 else f"\\x{ord(c):02x}")
        elif ord(c) < 256:
            out.append(f"\\x{ord(c):02x}" if escape % 2 else f"\\x{ord(c):02X}")
        else:
            out.append(c)
    return quote + "".join(out) + quote


SPECIAL = st.sampled_from(list("\"'\\\n\t\x00\x01\x1f\x7f\x80\x85\x9f\xa0\xff\u2028\ufeff\U0001f600\U0010ffff"))


@settings(max_examples=500, deadline=None)
@given(st.text(st.one_of(st.characters(codec="utf-8"), SPECIAL), max_size=40), st.sampled_from(["'", '"']),
       st.lists(st.integers(0, 2), min_size=40, max_size=40))
def test_written_strings_parse_to_their_value_and_print_back(s, quote, choices):
    # Any string, written with any mix of raw characters and escapes, reads
    # as itself; the print of the module parses to an equal module and
    # prints the same text again.
    mod = aj.parse(doc_module(written(s, quote, choices)))
    assert mod["main"].attrs["doc"] == s
    text = str(mod)
    again = aj.parse(text)
    aj.assert_structural_equal(again, mod)
    assert again["main"].attrs["doc"] == s
    assert again.script() == text


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 3), (2, 0, 5), (0, 0), (1, 0, 0)])
def test_empty_constants_keep_their_shape(shape):
    # Nested lists stop at the first zero dim, so the printer adds shape=
    # when a zero dim hides the dims after it.
    import numpy as np

    bb = aj.FunctionBuilder("main")
    x = bb.param("x", shape, "float32")
    mod = bb.finish(aj.op.add(x, aj.Constant(np.zeros(shape, np.float32))))
    text = mod.script()
    assert ("shape=" in text) == (0 in shape[:-1])
    again = aj.parse(text)
    aj.assert_structural_equal(again, mod)
    assert again.script() == text


@pytest.mark.parametrize("value,shape,reason", [
    ("[]", "(3, 0)", "does not match"),
    ("[[1.0]]", "(1, 2)", "does not match"),
    ("[]", "(0, -1)", "non-negative"),
    ("[]", "(0, \"n\")", "non-negative"),
    ("[]", "[0, 3]", "tuple of ints"),
])
def test_bad_constant_shape(value, shape, reason):
    text = (f'@function\ndef main(x: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n'
            f'    c = const({value}, "float32", shape={shape})\n    return x\n')
    with pytest.raises(aj.ParseError, match=reason) as info:
        aj.parse(text)
    assert info.value.line == 3


MAX_TUPLE_DEPTH = 253  # the deepest tuple type (docs/text-format.md, Types)


def deepest_tuple_chain(shape) -> aj.Module:
    """main(x) binding (x,), ((x,),), ... down to a type MAX_TUPLE_DEPTH deep."""
    bb = aj.FunctionBuilder("main")
    t = bb.param("x", shape, "float32")
    for _ in range(MAX_TUPLE_DEPTH):
        t = bb.emit(aj.Tuple([t]))
    return bb.finish(t)


@pytest.mark.parametrize("shape", [(3,), (3, "n"), ()])
def test_the_deepest_tuple_type_prints_as_text_that_parses_back(shape):
    # Its annotation, Tuple(...(Tensor((3,), "float32"))...), nests 256
    # levels: the parser's limit. A builder module one tuple deeper verified
    # but printed text the parser refused, so it neither round-tripped nor
    # pickled; that type is now refused when made (test_bad_inputs).
    mod = deepest_tuple_chain(shape)
    assert mod["main"].ret.type.is_tuple
    text = mod.script()
    assert "Tuple(" * MAX_TUPLE_DEPTH + "Tensor(" in text
    again = aj.parse(text)
    aj.assert_structural_equal(again, mod)
    assert again.script() == text


def test_the_deepest_tuple_annotation_of_empty_tuples_parses_back():
    annotation = "Tuple(" * (MAX_TUPLE_DEPTH - 1) + "Tuple()" + ")" * (MAX_TUPLE_DEPTH - 1)
    text = f"@function\ndef main(x: {annotation}) -> {annotation}:\n    return x\n"
    assert aj.parse(text).script() == text


MAX_TYPE_SIZE = 1 << 20  # the most parts of a type written out (docs/text-format.md, Types)


def type_at_the_size_cap() -> aj.Type:
    """(t, t, leaf) where t is leaf doubled 18 times, (leaf, leaf), ...: each t
    is 2**19 - 1 parts written out, so the whole is exactly MAX_TYPE_SIZE."""
    leaf = aj.TensorType((3, "n"), "float32")
    t = leaf
    for _ in range(18):
        t = aj.TupleType([t, t])
    return aj.TupleType([t, t, leaf])


def test_a_type_at_the_size_cap_prints_as_text_that_parses_back():
    # A type sharing its fields could be written out as 2**253 parts: its
    # text ran out of memory from about 2**36. The cap keeps every type that
    # can be made within about 25 MB of text; one part more is refused.
    ty = type_at_the_size_cap()
    assert str(ty).count("Tensor(") == MAX_TYPE_SIZE // 2 + 1
    with pytest.raises(aj.TypeInferenceError, match=f"{MAX_TYPE_SIZE + 1} parts written out"):
        aj.TupleType([*ty.fields, ty.fields[-1]])
    assert type_at_the_size_cap() == ty
    x = aj.Var("x", aj.TensorType((3,), "float32"))
    mod = aj.Module({"main": aj.Function([x, aj.Var("s", ty)], [], x)})
    text = mod.script()
    again = aj.parse(text)
    aj.assert_structural_equal(again, mod)
    assert again["main"].params[1].type == ty
