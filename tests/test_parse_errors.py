"""Bad texts: each gives the right aj.Error subclass, with the line and
column of the problem and the offending source line under a caret."""

import pytest

import adjoint as aj

HEAD = '@function\ndef main(x: Tensor((3, 3), "float32"), y: Tensor((3,), "float32")) -> Tensor((3, 3), "float32"):\n'


def body(*lines):
    """A module whose main has the given body lines (line 3 onward)."""
    return HEAD + "".join(f"    {ln}\n" for ln in lines)


P, T = aj.ParseError, aj.TypeInferenceError

# (id, text, error class, line of the problem)
BAD = [
    ("unknown_op", body("lv = foo(x)", "return lv"), P, 3),
    ("wrong_arity", body("lv = add(x)", "return lv"), T, 3),
    ("too_many_args", body("lv = permute_dims(x, x, x)", "return lv"), T, 3),
    ("unknown_attr", body("lv = sum(x, axes=[0])", "return x"), T, 3),
    ("bad_attr_kind", body('lv = sum(x, keepdims="yes")', "return x"), T, 3),
    ("attr_given_twice", body("lv = sum(x, [0], axis=[1])", "return x"), T, 3),
    ("shape_mismatch", body("a = concat((x, y))", "return x"), T, 3),
    ("broadcast_mismatch", body("lv = add(x, const([1.0, 2.0], \"float32\"))", "return lv"), T, 3),
    ("matmul_contraction", body("lv = matmul(y, permute_dims(const([[1.0, 2.0]], \"float32\")))", "return x"), T, 3),
    ("dtype_mismatch", body('lv = add(x, const(1, "int32"))', "return lv"), T, 3),
    ("undefined_var", body("lv = add(x, z)", "return lv"), P, 3),
    ("undefined_return", body("lv = add(x, x)", "return nothing"), P, 4),
    ("rebinding_param", body("x = add(x, x)", "return x"), P, 3),
    ("rebinding_var", body("lv = add(x, x)", "lv = add(lv, x)", "return lv"), P, 4),
    ("bad_dtype", body('lv: Tensor((3, 3), "float16") = add(x, x)', "return lv"), P, 3),
    ("bad_param_dtype", '@function\ndef main(x: Tensor((3,), "half")) -> Tensor((3,), "float32"):\n    return x\n', P, 2),
    ("unclosed_paren", body("lv = add(x, x", "return lv"), P, 3),
    ("unclosed_bracket", body("lv = sum(x, axis=[0)", "return x"), P, 3),
    ("bad_indentation", HEAD + "    lv = add(x, x)\n      lv2 = add(lv, x)\n    return lv2\n", P, 4),
    ("dedent_inside_body", HEAD + "    lv = add(x, x)\n  return lv\n", P, 4),
    ("missing_return", body("lv = add(x, x)"), P, 2),
    ("annotation_mismatch", body('lv: Tensor((4,), "float32") = add(x, x)', "return lv"), T, 3),
    ("return_type_mismatch", body("lv = sum(x)", "return lv"), T, 4),
    ("bad_symbolic_dim", '@function\ndef main(x: Tensor(("n +", 3), "float32")) -> Tensor((3,), "float32"):\n    return x\n', P, 2),
    ("missing_decorator", 'def main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    return x\n', P, 1),
    ("tuple_index_out_of_range", body("t = (x, x)", "u = t[5]", "return x"), T, 4),
    ("index_of_tensor", body("u = x[0]", "return x"), T, 3),
    ("concat_of_tensor", body("c = concat(x)", "return x"), T, 3),
    ("permute_axes_length", body("lv = permute_dims(x, axes=[0])", "return lv"), T, 3),
    ("sum_axis_out_of_range", body("lv = sum(x, axis=[5])", "return x"), T, 3),
    ("split_not_divisible", body("s = split(x, 2)", "return x"), T, 3),
    ("broadcast_to_incompatible", body("b = broadcast_to(x, (4, 4))", "return x"), T, 3),
    ("duplicate_function", body("return x") + "\n" + body("return x"), P, 6),
    ("duplicate_param", '@function\ndef main(x: Tensor((3,), "float32"), x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n    return x\n', P, 2),
    ("bad_number", body('c = const(1.2.3, "float32")', "return x"), P, 3),
    ("ragged_constant", body('c = const([[1.0, 2.0], [3.0]], "float32")', "return x"), P, 3),
    ("int_out_of_range", body('c = const(3000000000, "int32")', "return x"), P, 3),
    ("unterminated_string", body('lv: Tensor((3, 3), "float32 = add(x, x)', "return lv"), P, 3),
    ("stray_character", body("lv = add(x, x) $", "return lv"), P, 3),
    ("empty_body", '@function\ndef main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n', P, 3),
    ("missing_colon", '@function\ndef main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32")\n    return x\n', P, 2),
    ("untyped_param", '@function\ndef main(x) -> Tensor((3,), "float32"):\n    return x\n', P, 2),
    ("used_before_binding", body("a = add(x, b)", "b = add(x, x)", "return a"), P, 3),
    ("statement_after_return", body("return x", "lv = add(x, x)"), P, 4),
    ("syntax_error_read_ahead", body("a = add(x, add(x, x))", "b = add(x,, x)", "return a"), P, 4),
    ("missing_return_after_read_ahead", body("a = add(x, add(x, x))"), P, 2),
    ("negative_dim", '@function\ndef main(x: Tensor((-3,), "float32")) -> Tensor((3,), "float32"):\n    return x\n', P, 2),
]


@pytest.mark.parametrize("text,cls,line", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_text_gives_located_error(text, cls, line):
    with pytest.raises(cls) as info:
        aj.parse(text)
    err = info.value
    assert isinstance(err, aj.Error)
    assert err.line == line, f"line {err.line} != {line}: {err}"
    assert err.column is not None and err.column >= 1
    msg = str(err)
    assert msg.startswith(f"{line}:{err.column}: "), msg
    src_line = text.split("\n")[line - 1] if line - 1 < len(text.split("\n")) else ""
    assert err.source_line == src_line
    lines = msg.split("\n")
    assert len(lines) >= 3 and lines[1] == src_line and lines[2].rstrip() == " " * (err.column - 1) + "^", msg


def error_of(text):
    with pytest.raises(aj.Error) as info:
        aj.parse(text)
    e = info.value
    return type(e), str(e), e.line, e.column, e.source_line


END_OF_LINE = [
    ("return_needs_value", '@function\ndef main() -> Tuple():\n    return\n', "3:11: 'return' needs a value"),
    ("expression_at_end", body("y = ", "return x"), "3:9: expected an expression, got end of line"),
    ("decorator_at_end", '@function(\n', "1:10: '(' was never closed"),
    ("string_at_end", '@function(doc="a\n', "1:15: unterminated string"),
    ("backslash_at_end", '@function(doc="a\\\n', "1:15: unterminated string"),
]


@pytest.mark.parametrize("text,first", [c[1:] for c in END_OF_LINE], ids=[c[0] for c in END_OF_LINE])
def test_errors_at_the_end_of_a_line(text, first):
    assert error_of(text)[1].splitlines()[0] == first


@pytest.mark.parametrize("text", [b[1] for b in BAD] + [c[1] for c in END_OF_LINE],
                         ids=[b[0] for b in BAD] + [c[0] for c in END_OF_LINE])
def test_crlf_line_endings_give_the_same_errors(text):
    # An error at the end of a line was one column too far right with \r\n
    # endings ('return' needs a value at 3:12 instead of 3:11): the
    # stripped \r was counted; and a string left open at the end of a line
    # was a "control character '\x0d'" or an "unsupported escape".
    assert error_of(text.replace("\n", "\r\n")) == error_of(text)


LINE_ONE = [
    ("unknown_decorator", "@functio\n", "1:2: unknown decorator '@functio' (expected @function)"),
    ("stray_character", "$\n", "1:1: unexpected character '$'"),
    ("unclosed", "@function(doc='\u00e9', \n", "1:10: '(' was never closed"),
]


@pytest.mark.parametrize("text", [b[1] for b in BAD + LINE_ONE] + [c[1] for c in END_OF_LINE],
                         ids=[b[0] for b in BAD + LINE_ONE] + [c[0] for c in END_OF_LINE])
def test_byte_order_mark_gives_the_same_errors(text):
    # A leading byte order mark is skipped: errors on line 1 were one
    # column too far right and their source_line began with U+FEFF.
    assert error_of("\ufeff" + text) == error_of(text)
    assert error_of("\ufeff" + text.replace("\n", "\r\n")) == error_of(text)


@pytest.mark.parametrize("text,first", [c[1:] for c in LINE_ONE], ids=[c[0] for c in LINE_ONE])
def test_errors_on_line_one(text, first):
    assert error_of(text)[1].splitlines()[0] == first


def test_at_least_25_bad_texts():
    assert len(BAD) >= 25


def test_messages_name_what_is_wrong():
    def msg(text):
        with pytest.raises(aj.Error) as info:
            aj.parse(text)
        return str(info.value).split("\n")[0]

    assert "foo" in msg(body("lv = foo(x)", "return lv"))
    assert "add" in msg(body("lv = add(x)", "return lv")) and "2" in msg(body("lv = add(x)", "return lv"))
    assert "z" in msg(body("lv = add(x, z)", "return lv"))
    assert "float16" in msg(body('lv: Tensor((3, 3), "float16") = add(x, x)', "return lv"))
    m = msg(body("a = concat((x, y))", "return x"))
    assert "concat" in m and "(3, 3)" in m and "(3,)" in m
    m = msg(body("lv = add(x, x)", "lv = add(lv, x)", "return lv"))
    assert "lv" in m and "3" in m  # names the var and where it was first bound


@pytest.mark.parametrize("op, hint", [
    ("expp", "(did you mean 'exp'?)"), ("Matmul", "(did you mean 'matmul'?)"),
    ("permute", "(did you mean 'permute_dims'?)"), ("frobnicate", None),
])
def test_an_unknown_op_near_a_known_one_is_named_in_the_message(op, hint):
    _, message, *_ = error_of(body(f"lv = {op}(x)", "return lv"))
    first = message.split("\n")[0]
    assert first.startswith(f"3:10: unknown op '{op}'")
    assert first.endswith(hint) if hint else first == f"3:10: unknown op '{op}'"


@pytest.mark.parametrize("call", ["R.exp(x)", "relax.exp(x)", "x.T"])
def test_a_dot_after_a_name_says_names_hold_none(call):
    _, message, line, column, _ = error_of(body(f"lv = {call}", "return lv"))
    assert (line, column) == (3, 10 + call.index("."))
    assert message.split("\n")[0].endswith("(names hold no dots: an op is called without a prefix such as TVM's 'R.' "
                                             "or 'relax.', as exp(x))")


def test_parse_rejects_non_text():
    with pytest.raises(aj.ParseError):
        aj.parse(b"@function")  # type: ignore[arg-type]


ITEMS = '@function\ndef main(x: Tensor((3,), "float32"), z: Tensor((2,), "float32")) -> Tensor((2,), "float32"):\n    t = (x, z, z)\n    a = t[{}]\n    return z\n'


@pytest.mark.parametrize("written,message", [
    ("0xff", "4:10: tuple index 255 out of range for a tuple of 3 fields"),
    ("0x40000001", "4:11: tuple index 0x40000001 is too large"),
    ("0x10000000000000000", "4:11: tuple index 0x10000000000000000 is too large"),
])
def test_bad_hex_tuple_index(written, message):
    # 0xff used to read as 0 (base 10, stopping at the 'x'): no error.
    with pytest.raises(aj.Error) as info:
        aj.parse(ITEMS.format(written))
    assert str(info.value).splitlines()[0] == message


@pytest.mark.parametrize("index", [-4, -5, -16])
def test_negative_tuple_index_out_of_range_is_named_as_written(index):
    # It used to be named after the size was added: t[-4] of 3 fields said
    # "tuple index -1 out of range". The builder names it as written too.
    with pytest.raises(aj.TypeInferenceError) as info:
        aj.parse(ITEMS.format(index))
    assert str(info.value).splitlines()[0] == f"4:10: tuple index {index} out of range for a tuple of 3 fields"
    with pytest.raises(aj.TypeInferenceError, match=f"^tuple index {index} out of range for a tuple of 3 fields$"):
        with aj.FunctionBuilder("main") as bb:
            x = bb.param("x", (3,), "float32")
            aj.Tuple([x, x, x])[index]


@pytest.mark.parametrize("value", ["-1", "-0x1", "2", "-2", "0x2", "18446744073709551616", "1.0"])
def test_bool_constant_refuses_what_is_not_0_or_1(value):
    # -1 and -0x1 used to read as True (the sign was ignored) while 2 and
    # -2 were refused.
    with pytest.raises(aj.ParseError) as info:
        aj.parse(body(f'c = const([True, {value}], "bool")', "return x"))
    assert str(info.value).splitlines()[0] == f"3:22: a bool constant holds True or False, got {value}"


NESTED = {  # a body whose value nests n levels deep, and the column of level n
    "parens": lambda n: (["v = " + "(" * n + "x" + ")" * n, "return x"], 8 + n),
    "calls": lambda n: (["v = " + "exp(" * n + "x" + ")" * n, "return x"], 5 + 4 * n),
    "lists": lambda n: (["v = " + "[" * n + "x" + "]" * n, "return x"], 8 + n),
    "mixed": lambda n: (["v = " + "exp([" * (n // 2) + "(" * (n % 2) + "x" + ")" * (n % 2) + "])" * (n // 2),
                         "return x"], 9 + 5 * (n // 2) if n % 2 else 5 + 5 * (n // 2)),
    "items": lambda n: (["t = (x,)", "v = t" + "[0]" * n, "return x"], 7 + 3 * n),
    "const_lists": lambda n: (['c = const(' + "[" * (n - 1) + "1.0" + "]" * (n - 1) + ', "float32")', "return x"],
                              13 + n),
}


@pytest.mark.parametrize("kind", NESTED)
def test_nesting_of_256_levels_is_accepted_and_257_refused(kind):
    # As the docs and the message say; 256 levels used to be refused too
    # ("nesting deeper than 256 levels"): the outermost expr counted as one.
    lines, _ = NESTED[kind](256)
    try:
        aj.parse(body(*lines))
    except aj.Error as e:
        assert "nesting" not in str(e)
    lines, column = NESTED[kind](257)
    with pytest.raises(aj.ParseError) as info:
        aj.parse(body(*lines))
    line = 3 + len(lines) - 2
    assert str(info.value).splitlines()[0] == f"{line}:{column}: nesting deeper than 256 levels"


@pytest.mark.parametrize("value", ["[" * 101 + "x" + "]" * 101, "(" * 101 + "x" + ",)" * 101])
def test_tuple_nested_deeper_than_an_expr_may_be_is_located(value):
    # A tuple of leaves is a leaf, so nested tuples are not bound to vars;
    # 101 levels were a TypeInferenceError with no line or column.
    with pytest.raises(aj.TypeInferenceError) as info:
        aj.parse(body(f"v = {value}", "return x"))
    assert str(info.value).splitlines()[0] == "3:9: Tuple: exprs nest deeper than 100 levels; bind the inner values to vars instead"
    assert (info.value.line, info.value.column) == (3, 9)
