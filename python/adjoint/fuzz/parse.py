"""Fuzz target ``parse``: mutated texts for ``aj.parse``.

The seed corpus is valid text: the examples, hand-written texts using every
feature of the format, the printed programs of the ``exec`` target, and their
gradients and other passes' results. An input is one text of the corpus with
one to four mutations: chars, tokens and lines inserted, deleted, replaced,
duplicated or spliced in from another text; numbers replaced by extreme
values; strings by odd dtypes and dims; shapes made huge; expressions nested
deeply; unicode, NUL and surrogates; truncation; new call lines made from the
op schemas with random operands and attrs.

Whatever parses must print, parse back to a structurally equal module whose
print is the same text, and, if it verifies, build; functions with small
concrete shapes are also run. Only ``aj.Error`` may come out.
"""

from __future__ import annotations

import random
import re
from typing import Callable

import numpy as np

import adjoint as aj
from adjoint import examples
from adjoint.fuzz.inputs import COST_LIMIT, cost, small_inputs
from adjoint.fuzz.runner import Finding, error_label

LABELS = ["ok"]
REACHED = ["parsed", "round trip", "verified", "built", "ran"]

EXTRA_TEXTS = [
    '''\
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
    '''\
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
    '''
# comments, blank lines, no annotations, nested calls, positional attrs

@function
def main(x: Tensor((3, 4), "float32"), w: Tensor((5, 4), "float32")):
    # a comment in the body
    s = sum(x, [0])       # positional axis

    t = sum(x, axis=0, keepdims=False)
    y = matmul(x, permute_dims(w))
    q = add(s, t)
    return (y, q)
''',
    '''\
@function
def main(x: Tensor((4,), "float64")):
    y = add(x, const([nan, -nan, nan(0x1), -nan(0xfffffffffffff)], "float64"))
    z = multiply(y, const([inf, -inf, -0.0, 1e-308], "float64"))
    w = full((4,), -0.0, "float64")
    v = maximum(z, w)
    return v
''',
    '''\
@function
def main(x: Tensor((1, 2, 6, 6), "float32"), w: Tensor((4, 2, 3, 3), "float32"), t: Tensor((1,), "int64")):
    c = conv2d(x, w, strides=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)
    p = max_pool2d(c, [2, 2], strides=[2, 2], padding=[0, 0], ceil_mode=True)
    a = avg_pool2d(p, [2, 2], strides=[1, 1], count_include_pad=False)
    f = reshape(a, (1, -1))
    l = log_softmax(f, axis=-1)
    loss = nll_loss(l, t, reduction="sum", ignore_index=-100)
    return loss
''',
    '''\
@function
def main(x: Tensor((5, 3), "float32"), i: Tensor((2, 2), "int32"), g: Tensor((3,), "float32"), b: Tensor((3,), "float32")):
    e = take(x, i, axis=0)
    n = layer_norm(e, g, b, axes=[-1], epsilon=1e-05)
    s = softmax(n, axis=-1)
    m = mean(s, axis=None, keepdims=True)
    v = variance(x, axis=[0, 1])
    c = cumsum(x, axis=1)
    u = triu(c, 1)
    q = squeeze(expand_dims(u, axis=[0]), axis=[0])
    k = where(greater(q, const(0.0, "float32")), q, zeros_like(q))
    h = gelu(silu(sigmoid(tanh(k))))
    r = collapse_sum_to(h, (1, 3))
    o = astype(r, "float64")
    return (o, m, v)
''',
    '''\
@function
def main(x: Tensor(("n", 3), "float32"), y: Tensor(("n", 3), "float32")):
    lbl = softmax(y)
    ce = cross_entropy_with_logits(x, lbl)
    a = abs(x)
    r = rsqrt(add(a, full_like(a, 1.0)))
    p = power(r, const(2.0, "float32"))
    d = divide(p, square(r))
    s = subtract(sqrt(exp(d)), log(add(a, ones_like(a))))
    mn = minimum(sin(s), cos(s))
    z = index_add(x, const([0], "int64"), take(mn, const([0], "int64"), axis=0), axis=0)
    f = erf(negative(relu(z)))
    t = (f, ce)
    u = t[0]
    return (u, t[1])
''',
]


def _corpus() -> list[str]:
    """Valid texts: examples, hand-written, exec's programs and passes' results."""
    from adjoint.fuzz.exec import PROGRAMS

    texts = list(examples.ALL.values()) + EXTRA_TEXTS
    mods = [aj.parse(t) for t in texts] + [p.module() for p in PROGRAMS]
    passes = [aj.transform.Gradient(), aj.transform.Gradient(simplify=False), aj.transform.EliminateCommonSubexpr(),
              aj.transform.DeadCodeElimination()]
    for mod in mods:
        texts.append(mod.script())
        for p in passes:
            try:
                texts.append(p(mod).script())
            except aj.Error:
                pass
    seen: set[str] = set()
    return [t for t in texts if not (t in seen or seen.add(t))]


TOKEN = re.compile(r'[A-Za-z_]\w*|\d+\.?\d*(?:[eE][-+]?\d+)?|"[^"\n]*"|#[^\n]*|\n|[ \t]+|.', re.S)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")
STRING = re.compile(r'"[^"\n]*"')
SHAPE = re.compile(r"Tensor\(\(([^()]*)\)")
NAME = re.compile(r"\b[a-z_][a-z0-9_]*\b")

ALPHABET = list('()[]{},:=.*+-_#@"\'\n\t 0123456789abcdefnxyTt') + [
    "\x00", "\r", "\x0c", "\x7f", "é", "ß", "中", "\u2028", "\u0085", "\ufeff", "\u200b", "\u0301", "\U0001F600",
    "\ud800", "\udfff", "\\", "$", "`", ";", "\x1b"]
EXTREMES = ["0", "-0", "1", "-1", "2", "-2", "3", "255", "256", "2147483647", "2147483648", "-2147483649",
            "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "-9223372036854775809", "18446744073709551616", "2305843009213693953", "1" + "0" * 40, "9" * 400,
            "1e308", "1e309", "-1e309", "1e-400", "4.9e-324", "3.4e38", "3.5e38", "nan", "-nan", "inf", "-inf",
            "nan(0x1)", "nan(0x7ffffffffffff)", "nan(0xfffffffffffffffff)", "0x7fffffffffffffff", "0xffffffffffffffff",
            "0b101", "1_000", "0.", ".5", "1e", "0x", "00012", "1.5", "-0.0", "True", "None", "1j", "(1)", "[]"]
STRINGS = ['"float32"', '"float64"', '"int32"', '"int64"', '"bool"', '"float16"', '"complex64"', '"uint8"', '""',
           '"n"', '"m"', '"n + m"', '"2*n"', '"n*n*n*n"', '"-n"', '"n - m"', '"2**3"', '"n n"', '"n*"', '"0"',
           '"-1"', '"9223372036854775807*n"', '"4611686018427387904*n*4"', '"é"', '"n\\x00"', '"sum"', '"mean"',
           '"none"', '"main"', '"' + "n+" * 300 + 'n"', '"' + "n*" * 70 + 'n"']
DIMS = ["0", "1", "2", "-1", "-2", "4294967296", "2305843009213693953", "9223372036854775807",
        "9223372036854775808", "18446744073709551616", '"n"', '"m"', '"n + 1"', '"2*n"', '"n*m"', '""', "1.5",
        "True", "None", "(2, 3)", "[2]"]
TYPE_NAMES = ["Tensor", "Tuple", "const", "function", "def", "return", "lambda", "None", "True", "False", "x",
              "main", "main_adjoint", "if", "for", "class", "import", "nan", "inf", "axis", "keepdims"]


def _ops() -> dict[str, dict]:
    return {name: aj._core.op_schema(name) for name in aj._core.op_names()}


def _attr_value(rng: random.Random, kind: str) -> str:
    small = lambda: str(rng.choice([-3, -2, -1, 0, 1, 2, 3, 4]))  # noqa: E731
    if rng.random() < 0.15:
        return rng.choice(EXTREMES + STRINGS + DIMS)
    if kind == "a dtype" or kind == "a dtype or None":
        return rng.choice(STRINGS[:8] + (["None"] if "None" in kind else []))
    if kind in ("None or a list of ints", "a list of ints"):
        if "None" in kind and rng.random() < 0.3:
            return "None"
        return "[" + ", ".join(small() for _ in range(rng.randrange(0, 5))) + "]"
    if kind.startswith("a shape"):
        dims = [rng.choice(["1", "2", "3", "4", "0", "-1", '"n"']) for _ in range(rng.randrange(0, 5))]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    if kind == "an int":
        return small()
    if kind.startswith("an int or a list"):
        return small() if rng.random() < 0.5 else "[" + ", ".join(small() for _ in range(rng.randrange(0, 4))) + "]"
    if kind == "a bool":
        return rng.choice(["True", "False"])
    if kind == "a float":
        return rng.choice(["0.0", "1.0", "-1.5", "1e-05", "nan", "-inf", "3"])
    if kind == "a string":
        return rng.choice(['"mean"', '"sum"', '"none"', '"max"'])
    return small()


class Fuzzer:
    def __init__(self, seed: int):
        self.seed = seed
        self.corpus = _corpus()
        self.tokens = sorted({t for text in self.corpus for t in TOKEN.findall(text) if t.strip()})
        self.types = {text: _var_types(text) for text in self.corpus}  # text -> var name -> (shape, dtype)
        self.ops = _ops()
        self.mutators: list[tuple[int, Callable[[random.Random, str], tuple[str, str]]]] = [
            (6, self.m_char), (4, self.m_chunk), (3, self.m_splice), (8, self.m_token), (6, self.m_line),
            (6, self.m_number), (5, self.m_string), (4, self.m_shape), (3, self.m_nest), (2, self.m_truncate),
            (2, self.m_unicode), (6, self.m_attr), (20, self.m_call),
        ]

    # ---- making input k ----

    def make(self, k: int) -> dict:
        rng = random.Random(f"parse:{self.seed}:{k}")
        base = rng.randrange(len(self.corpus))
        text = self.corpus[base]
        names = []
        for _ in range(rng.choices([1, 2, 3, 4], [50, 25, 15, 10])[0]):
            mutate = rng.choices([m for _, m in self.mutators], [w for w, _ in self.mutators])[0]
            text, name = mutate(rng, text)
            names.append(name)
        return {"base": base, "mutations": names, "text": text}

    def describe(self, inp: dict) -> str:
        return f"corpus text {inp['base']} with {', '.join(inp['mutations'])}"

    def group(self, inp: dict) -> str:
        return ""

    def m_char(self, rng, text):
        i = rng.randrange(len(text) + 1)
        kind = rng.choice(["insert", "delete", "replace"])
        if kind == "insert":
            return text[:i] + rng.choice(ALPHABET) + text[i:], "char insert"
        j = min(len(text), i + rng.choice([1, 1, 1, 2, 5, 20]))
        if kind == "delete":
            return text[:i] + text[j:], "char delete"
        return text[:i] + rng.choice(ALPHABET) + text[i + 1:], "char replace"

    def m_chunk(self, rng, text):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randrange(1, 80))
        at = rng.randrange(len(text) + 1)
        return text[:at] + text[i:j] + text[at:], "chunk duplicate"

    def m_splice(self, rng, text):
        other = rng.choice(self.corpus)
        i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        a, b = sorted(rng.randrange(len(other) + 1) for _ in range(2))
        return text[:i] + other[a:b] + text[j:], "splice"

    def m_token(self, rng, text):
        toks = TOKEN.findall(text)
        if not toks:
            return text, "token none"
        i = rng.randrange(len(toks))
        kind = rng.choice(["delete", "duplicate", "swap", "replace", "replace", "name"])
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "replace":
            toks[i] = rng.choice(self.tokens)
        else:
            toks[i] = rng.choice(TYPE_NAMES + list(self.ops))
        return "".join(toks), f"token {kind}"

    def m_line(self, rng, text):
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        kind = rng.choice(["delete", "duplicate", "swap", "splice", "indent", "dedent"])
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        elif kind == "swap":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "splice":
            lines.insert(i, rng.choice(rng.choice(self.corpus).split("\n")))
        elif kind == "indent":
            lines[i] = rng.choice([" ", "\t", "    ", "        ", " " * 1000]) + lines[i]
        else:
            lines[i] = lines[i].lstrip(" ") if rng.random() < 0.5 else lines[i][1:]
        return "\n".join(lines), f"line {kind}"

    def _replace_match(self, rng, text, pattern, values, name):
        found = list(pattern.finditer(text))
        if not found:
            return text, f"{name} none"
        m = rng.choice(found)
        return text[:m.start()] + rng.choice(values) + text[m.end():], name

    def m_number(self, rng, text):
        return self._replace_match(rng, text, NUMBER, EXTREMES, "number")

    def m_string(self, rng, text):
        return self._replace_match(rng, text, STRING, STRINGS, "string")

    def m_shape(self, rng, text):
        found = list(SHAPE.finditer(text))
        if not found:
            return text, "shape none"
        m = rng.choice(found)
        rank = rng.choice([0, 1, 2, 3, 4, 8, 33, 64, 65, 200])
        dims = [rng.choice(DIMS) if rng.random() < 0.5 else str(rng.randrange(1, 5)) for _ in range(rank)]
        body = ", ".join(dims) + ("," if rank == 1 else "")
        return text[:m.start(1)] + body + text[m.end(1):], f"shape rank {rank}"

    def m_nest(self, rng, text):
        found = [m for m in re.finditer(r"\(([a-z_][a-z0-9_]*)[,)]", text)]
        if not found:
            return text, "nest none"
        m = rng.choice(found)
        depth = int(2 ** rng.uniform(0, 12))
        kind = rng.choice(["call", "tuple", "list", "parens", "index"])
        v = m.group(1)
        if kind == "call":
            op = rng.choice(["exp", "negative", "relu", "sum", "permute_dims"])
            e = f"{op}(" * depth + v + ")" * depth
        elif kind == "tuple":
            e = "(" * depth + v + ",)" * depth
        elif kind == "list":
            e = "[" * depth + v + "]" * depth
        elif kind == "parens":
            e = "(" * depth + v + ")" * depth
        else:
            e = "(" * depth + v + ",)[0]" * depth
        return text[:m.start(1)] + e + text[m.end(1):], f"nest {kind} {depth}"

    def m_truncate(self, rng, text):
        return text[:rng.randrange(len(text) + 1)], "truncate"

    def m_unicode(self, rng, text):
        names = list(NAME.finditer(text))
        if names and rng.random() < 0.5:
            m = rng.choice(names)
            new = rng.choice(["é", "x\u0301", "ｘ", "ℌ", "x\u200b", "\U0001d4b3", "ǅ", "_" * 300, "x" * 10000])
            return text.replace(m.group(0), new) if rng.random() < 0.5 else text[:m.start()] + new + text[m.end():], \
                "unicode name"
        kind = rng.choice(["crlf", "cr", "bom", "nul", "tabs"])
        if kind == "crlf":
            return text.replace("\n", "\r\n"), "unicode crlf"
        if kind == "cr":
            return text.replace("\n", "\r"), "unicode cr"
        if kind == "bom":
            return "\ufeff" + text, "unicode bom"
        if kind == "nul":
            i = rng.randrange(len(text) + 1)
            return text[:i] + "\x00" + text[i:], "unicode nul"
        return text.replace("    ", "\t"), "unicode tabs"

    def m_attr(self, rng, text):
        calls = list(re.finditer(r"\b([a-z_0-9]+)\(([^()\n]*)\)\n", text))
        if not calls:
            return text, "attr none"
        m = rng.choice(calls)
        schema = self.ops.get(m.group(1))
        if schema and schema["attrs"] and rng.random() < 0.8:
            a = rng.choice(schema["attrs"])
            name, value = a["name"], _attr_value(rng, a["kind"])
        else:
            name, value = rng.choice(["axis", "keepdims", "axes", "shape", "zz", "dtype", "x"]), rng.choice(EXTREMES)
        return text[:m.end(2)] + f", {name}={value}" + text[m.end(2):], f"attr {name}"

    def m_call(self, rng, text):
        """A new binding: a random op on vars of the function, with random attrs."""
        returns = [m for m in re.finditer(r"\n(    return )([^\n]*)", text)]
        if not returns:
            return text, "call none"
        ret = rng.choice(returns)
        func_start = text.rfind("\ndef ", 0, ret.start())
        if func_start < 0:
            return text, "call none"
        head = text[func_start:ret.start()]
        names = sorted(set(re.findall(r"(?:^|[(,]\s*|\n    )([a-z_][a-z0-9_]*)(?=\s*:|\s*=)", head)) - {"axis"})
        if not names:
            return text, "call none"
        op = rng.choice(list(self.ops))
        schema = self.ops[op]
        types = self.types.get(text, {})
        first = rng.choice(names)
        # operands of the first one's type where the corpus text tells types: more calls pass the type rules
        alike = [n for n in names if n in types and types.get(n) == types.get(first)] or [first]
        pick = lambda: rng.choice(alike) if rng.random() < 0.7 else rng.choice(names)  # noqa: E731
        args = []
        for i, _ in enumerate(schema["args"]):
            if op == "concat" or (rng.random() < 0.05):
                args.append("(" + ", ".join(pick() for _ in range(rng.randrange(1, 4))) + ",)")
            else:
                args.append(first if i == 0 else pick())
        if rng.random() < 0.1:
            args.append(rng.choice(names))  # one too many
        attrs = []
        for a in schema["attrs"]:
            if a["required"] or rng.random() < 0.4:
                attrs.append(f"{a['name']}={_attr_value(rng, a['kind'])}")
        var = f"fz{rng.randrange(100)}"
        line = f"\n    {var} = {op}({', '.join(args + attrs)})"
        if rng.random() < 0.3:
            return text[:ret.start()] + line + text[ret.start():], f"call {op}"
        # return the new var, without the function's return annotation
        def_end = text.find("\n", func_start + 1)
        head = re.sub(r"\) -> .*:$", "):", text[func_start:def_end]) if def_end > 0 else ""
        if not head:
            return text, "call none"
        return (text[:func_start] + head + text[def_end:ret.start()] + line + f"\n    return {var}" + text[ret.end():],
                f"call {op}")

    # ---- running it ----

    def run(self, inp: dict, reach: Callable[[str], None]) -> str:
        text = inp["text"]
        try:
            mod = aj.parse(text)
        except aj.Error as e:
            return error_label(e)
        reach("parsed")
        printed = mod.script()
        try:
            again = aj.parse(printed)
        except aj.Error as e:
            raise Finding("reparse", f"the printed module does not parse: {type(e).__name__}: {e}\n--- printed:\n{printed}",
                          type(e).__name__) from None
        if not aj.structural_equal(mod, again):
            raise Finding("roundtrip", f"parse(print(m)) differs from m:\n{aj.structural_diff(mod, again)}\n"
                                       f"--- printed:\n{printed}")
        if again.script() != printed:
            raise Finding("print-unstable", f"print(parse(print(m))) != print(m)\n--- first:\n{printed}\n"
                                            f"--- second:\n{again.script()}")
        if aj.structural_hash(mod) != aj.structural_hash(again):
            raise Finding("hash", "structurally equal modules with different structural_hash")
        reach("round trip")
        try:
            aj.analysis.verify(mod)
        except aj.Error as e:
            return error_label(e)
        reach("verified")
        try:
            exe = aj.build(mod)
        except aj.Error as e:
            return error_label(e)
        reach("built")
        rng = np.random.default_rng(len(text))
        ran = False
        for name, fn in list(mod.functions.items())[:3]:
            args = small_inputs(fn, rng)
            if args is None or cost(fn, args) > COST_LIMIT:
                continue
            try:
                exe[name](*args)
            except aj.Error as e:
                return error_label(e)
            ran = True
        if ran:
            reach("ran")
        return "ok"

    # ---- the reproducer ----

    def save(self, inp: dict, stem: str, header: str) -> list[str]:
        aj_path, txt_path = stem + ".aj", stem + ".txt"
        with open(aj_path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(inp["text"])
        with open(txt_path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(header)
            f.write(f"\nThe text is in {aj_path} (UTF-8, lone surrogates kept; read it exactly with\n"
                    f"open(path, encoding='utf-8', errors='surrogatepass', newline='').read()), and as a literal:\n"
                    f"{inp['text']!r}\n")
        return [aj_path, txt_path]


def _var_types(text: str) -> dict[str, tuple]:
    """The type of each param and bound var of a valid text, by name (later functions win)."""
    out: dict[str, tuple] = {}
    for fn in aj.parse(text).functions.values():
        for v in list(fn.params) + [b.var for b in fn.bindings]:
            t = v.type
            out[v.name_hint] = (t.shape, t.dtype) if t.is_tensor else (str(t),)
    return out
