"""How IR objects, executables and passes show themselves: a plain ``repr``
that is the program's text (short for big functions: the first and last
bindings and how many were cut), and ``_repr_html_`` for Jupyter: the text
highlighted with Pygments' Python lexer, long signatures one param per line,
types dimmed, each function collapsible (a ``<details>``). Neither ever raises: what cannot be
shown is said instead, and a module that does not verify says why."""

from __future__ import annotations

import html
import inspect
from dataclasses import dataclass
from typing import Callable, Iterable

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, String, Token

from . import _core

REPR_LIMIT, REPR_HEAD, REPR_TAIL = 40, 10, 10  # repr: a function over 40 bindings shows 10 + 10
HTML_LIMIT, HTML_HEAD, HTML_TAIL = 400, 200, 100  # HTML: one over 400 shows 200 + 100
LINE_LIMIT = 2000  # characters of one line shown (a big constant prints on one line)
WRAP_WIDTH = 100  # a longer signature shows one param per line
PROBLEMS_SHOWN = 5

# ---- the text of a function, cut to size ----


@dataclass
class FunctionText:
    """A function's printed lines: decorator, signature, the bindings shown
    (a comment line where some were cut) and the return line."""

    name: str
    decorator: str
    signature: str
    body: list[str]
    ret: str
    num_params: int
    num_bindings: int
    num_cut: int


def function_text(name: str, fn: _core.Function, limit: int, head: int, tail: int) -> FunctionText:
    """The lines of ``fn.script()``; over ``limit`` bindings, the first
    ``head`` and the last ``tail`` with a comment saying how many were cut."""
    lines = fn.script().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    decorator, signature, body, ret = lines[0], lines[1], lines[2:-1], lines[-1]
    cut = 0
    if len(body) > limit:
        cut = len(body) - head - tail
        note = f"    # ... {cut:,} of {len(body):,} bindings not shown ..."
        body = body[:head] + [note] + body[len(body) - tail:]
    return FunctionText(name, clip_line(decorator), clip_line(signature), [clip_line(b) for b in body], clip_line(ret),
                        len(fn.params), len(lines) - 3, cut)


def clip_line(line: str) -> str:
    """The line, or its first LINE_LIMIT characters and how many more there are."""
    if len(line) <= LINE_LIMIT:
        return line
    return f"{line[:LINE_LIMIT]} ... ({len(line) - LINE_LIMIT:,} more characters)"


def _plain(ft: FunctionText) -> str:
    return "\n".join([ft.decorator, ft.signature, *ft.body, ft.ret])


def problems(mod: _core.Module) -> list[str]:
    """What the verifier says is wrong with ``mod`` (nothing for a well-formed one)."""
    try:
        return [] if _core.well_formed(mod) else list(_core.verify_problems(mod))
    except Exception as e:  # noqa: BLE001 - display says what went wrong rather than raising
        return [f"the verifier failed: {type(e).__name__}: {e}"]


def _problem_lines(found: list[str]) -> list[str]:
    lines = [f"does not verify: {p}" for p in found[:PROBLEMS_SHOWN]]
    if len(found) > PROBLEMS_SHOWN:
        lines.append(f"... and {len(found) - PROBLEMS_SHOWN} more problems")
    return lines


def _never_raises(what: str) -> Callable:
    """Turns an exception of a display function into a line saying so."""

    def wrap(show: Callable) -> Callable:
        def shown(obj, *args):
            try:
                return show(obj, *args)
            except Exception as e:  # noqa: BLE001
                text = f"<{what} that could not be shown: {type(e).__name__}: {e}>"
                return f"<pre>{_esc(text)}</pre>" if show.__name__.endswith("html") else text

        shown.__name__, shown.__doc__ = show.__name__, show.__doc__
        return shown

    return wrap


# ---- plain reprs ----


@_never_raises("aj.Module")
def module_repr(mod: _core.Module) -> str:
    """The module's text, each function over REPR_LIMIT bindings cut to its
    first and last bindings, after a comment per verifier problem."""
    texts = [_plain(function_text(n, f, REPR_LIMIT, REPR_HEAD, REPR_TAIL)) for n, f in mod.functions.items()]
    if not texts:
        return "<aj.Module: no functions>"
    notes = [f"# {line}" for line in _problem_lines(problems(mod))]
    return "\n".join([*notes, "\n\n".join(texts)])


@_never_raises("aj.Function")
def function_repr(fn: _core.Function) -> str:
    """The function's text, cut as in a module."""
    notes = [f"# {line}" for line in _problem_lines(problems(_core.Module({fn.name: fn})))]
    return "\n".join([*notes, _plain(function_text(fn.name, fn, REPR_LIMIT, REPR_HEAD, REPR_TAIL))])


def _free_vars(exprs: list[_core.Expr]) -> list[_core.Var]:
    """The vars ``exprs`` refer to, each once, in the order they first appear."""
    found: dict[int, _core.Var] = {}  # by id: the vars are kept alive here, so no id is reused
    stack = list(reversed(exprs))
    while stack:
        e = stack.pop()
        if isinstance(e, _core.Var):
            found.setdefault(id(e), e)
            continue
        children = e.args if isinstance(e, _core.Call) else e.fields if isinstance(e, _core.Tuple) else \
            [e.tuple] if isinstance(e, _core.TupleGetItem) else []
        stack.extend(reversed(children))
    return list(found.values())


def _printed(bindings: list, ret: _core.Expr, bound: _core.Var | None = None) -> list[str]:
    """The lines of a function printing ``bindings`` and ``ret``, the vars
    they use but ``bound`` as its params: so each var shows the name the
    printer gives it (its hint made an identifier, as in ``print(mod)``;
    distinct vars of one name told apart by a suffix)."""
    params = [v for v in _free_vars([value for _, value in bindings] + [ret]) if v is not bound]
    return _core.Function(params, bindings, ret).script().rstrip("\n").split("\n")


def _expr_text(expr: _core.Expr) -> str:
    """An expr as a binding's value prints, its vars named as the printer names them."""
    return clip_line(_printed([], expr)[-1].removeprefix("    return "))


@_never_raises("aj.Var")
def var_repr(var: _core.Var) -> str:
    """``x: Tensor(("n", 784), "float32")``"""
    return f"{_expr_text(var)}: {var.type}"


@_never_raises("aj.Expr")
def expr_repr(expr: _core.Expr) -> str:
    """``matmul(x, w): Tensor(("n", 10), "float32")``"""
    return f"{_expr_text(expr)}: {expr.type}"


@_never_raises("aj.Binding")
def binding_repr(binding: _core.Binding) -> str:
    """``lv: Tensor(("n", 10), "float32") = matmul(x, w)``"""
    var = binding.var
    return clip_line(_printed([(var, binding.value)], var, bound=var)[2].strip())


# ---- highlighting ----

_LEXER = PythonLexer(stripnl=False, ensurenl=False)
_CLASS_OF = {Keyword: "k", Name.Decorator: "d", Name.Function: "f", String: "s", Number: "m", Comment: "c"}
_CALLABLE = {Name, Name.Builtin, Name.Builtin.Pseudo}

STYLE = (
    "<style>"
    ".aj-ir{font-family:var(--jp-code-font-family,SFMono-Regular,Menlo,Consolas,monospace);"
    "font-size:var(--jp-code-font-size,13px);line-height:1.45}"
    ".aj-ir pre{margin:.2em 0 .5em 0;padding:.3em .7em;background:transparent;color:inherit;white-space:pre;"
    "overflow-x:auto;border-left:2px solid rgba(128,128,128,.35)}"
    ".aj-ir summary{cursor:pointer}"
    ".aj-ir .aj-meta,.aj-ir .aj-t{opacity:.58}"
    ".aj-ir .aj-k{color:#a35fc9;font-weight:600}"
    ".aj-ir .aj-d{color:#b98a24}"
    ".aj-ir .aj-f{color:#2f8ad0;font-weight:600}"
    ".aj-ir .aj-o{color:#2f8ad0}"
    ".aj-ir .aj-s{color:#3f9c55}"
    ".aj-ir .aj-m{color:#cc6b33}"
    ".aj-ir .aj-c{color:#8c8c8c;font-style:italic}"
    ".aj-ir .aj-warn{border-left:3px solid #d9822b;padding:.2em .7em;margin:.2em 0;white-space:pre-wrap}"
    ".aj-ir .aj-doc{white-space:pre-wrap;font-family:inherit;margin:.3em 0}"
    ".aj-ir table{border-collapse:collapse;margin:.3em 0}"
    ".aj-ir td,.aj-ir th{text-align:left !important;padding:.15em .8em .15em 0;vertical-align:top;"
    "border-bottom:1px solid rgba(128,128,128,.25)}"
    "</style>"
)


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _class_of(ttype) -> str:
    while ttype not in _CLASS_OF and ttype is not Token:
        ttype = ttype.parent
    return _CLASS_OF.get(ttype, "")


def _token_classes(tokens: list) -> list[str]:
    """A CSS class per token: a name called (``matmul(``) is an op."""
    out = []
    for i, (ttype, _) in enumerate(tokens):
        called = ttype in _CALLABLE and i + 1 < len(tokens) and tokens[i + 1][1] == "("
        out.append("o" if called else _class_of(ttype))
    return out


def highlight(segments: list[tuple[str, bool]]) -> str:
    """HTML of the text of ``segments`` (text, is_type) lexed as Python,
    the type segments in a dimmed span."""
    text = "".join(s for s, _ in segments)
    tokens = list(_LEXER.get_tokens(text))
    if sum(len(v) for _, v in tokens) != len(text):
        tokens = [(Token.Text, text)]
    pieces: list[tuple[int, str, str]] = []  # (segment, class, text), neighbours of one class merged
    seg, seg_end, pos = -1, 0, 0
    for (_, value), cls in zip(tokens, _token_classes(tokens)):
        while value:
            while pos == seg_end:
                seg += 1
                seg_end += len(segments[seg][0])
            piece, value = value[:seg_end - pos], value[seg_end - pos:]
            pos += len(piece)
            if pieces and pieces[-1][:2] == (seg, cls):
                pieces[-1] = (seg, cls, pieces[-1][2] + piece)
            else:
                pieces.append((seg, cls, piece))
    out, dim = [], False
    for seg, cls, piece in pieces:
        if segments[seg][1] != dim:
            dim = segments[seg][1]
            out.append('<span class="aj-t">' if dim else "</span>")
        out.append(f'<span class="aj-{cls}">{_esc(piece)}</span>' if cls else _esc(piece))
    if dim:
        out.append("</span>")
    return "".join(out)


# ---- splitting printed lines into code and types ----


def _match_end(text: str, open_at: int) -> int:
    """The index past the bracket closing the one at ``open_at`` (strings skipped)."""
    depth, i, quoted = 0, open_at, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced brackets in {text[:80]!r}")


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and strings."""
    items, start, i = [], 0, 0
    while i < len(text):
        c = text[i]
        if c in "([\"":
            i = _match_end(text, i) if c != '"' else _string_end(text, i)
            continue
        if c == ",":
            items.append(text[start:i].strip())
            start = i + 1
        i += 1
    tail = text[start:].strip()
    return items + [tail] if tail else items


def _string_end(text: str, at: int) -> int:
    i = at + 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _typed(item: str) -> list[tuple[str, bool]]:
    """``name: T`` as the name and the dimmed annotation."""
    name, sep, ty = item.partition(": ")
    return [(name, False), (sep + ty, True)] if sep else [(item, False)]


def binding_segments(line: str) -> list[tuple[str, bool]]:
    """``    lv: T = value`` with ``: T`` dimmed (a comment or other line as is)."""
    colon = line.find(": ")
    if colon < 0 or line.lstrip().startswith(("#", "return ")):
        return [(line, False)]
    try:
        end = _match_end(line, line.index("(", colon))
    except ValueError:
        return [(line, False)]
    return [(line[:colon], False), (line[colon:end], True), (line[end:], False)]


def _wrap_type(ty: str, indent: str, used: int) -> str:
    """A tuple type too long for the line, one field per line, nested as needed."""
    if used + len(ty) <= WRAP_WIDTH or not ty.startswith("Tuple(") or not ty.endswith(")"):
        return ty
    inner = indent + "    "
    fields = "".join(f"{inner}{_wrap_type(f, inner, len(inner) + 1)},\n" for f in _split_top(ty[6:-1]))
    return f"Tuple(\n{fields}{indent})"


def signature_segments(signature: str) -> list[tuple[str, bool]]:
    """``def f(x: T, ...) -> R:``, one param per line when longer than
    WRAP_WIDTH, the annotations dimmed."""
    try:
        open_at = signature.index("(")
        close = _match_end(signature, open_at)
    except ValueError:
        return [(signature + "\n", False)]
    head, params, ret = signature[:open_at + 1], _split_top(signature[open_at + 1:close - 1]), signature[close:]
    if not (ret.startswith(" -> ") and ret.endswith(":")):
        return [(signature + "\n", False)]
    ret_type = ret[4:-1]
    if len(signature) <= WRAP_WIDTH:
        segs: list[tuple[str, bool]] = [(head, False)]
        for i, p in enumerate(params):
            segs += ([(", ", False)] if i else []) + _typed(p)
        return segs + [(")", False), (" -> " + ret_type, True), (":\n", False)]
    segs = [(head + "\n", False)]
    for p in params:
        segs += [("    ", False), *_typed(p), (",\n", False)]
    return segs + [(")", False), (" -> " + _wrap_type(ret_type, "", 5), True), (":\n", False)]


def _function_segments(ft: FunctionText, body: bool = True) -> list[tuple[str, bool]]:
    segs = [(ft.decorator + "\n", False), *signature_segments(ft.signature)]
    if body:
        for line in ft.body:
            segs += [*binding_segments(line), ("\n", False)]
        segs.append((ft.ret, False))
    return segs


# ---- HTML ----


def _box(*parts: str) -> str:
    return f'<div class="aj-ir">{STYLE}{"".join(parts)}</div>'


def _pre(segments: list[tuple[str, bool]]) -> str:
    return f"<pre>{highlight(segments)}</pre>"


def _warnings(found: list[str]) -> str:
    if not found:
        return ""
    return f'<div class="aj-warn">\u26a0 {_esc(chr(10).join(_problem_lines(found)))}</div>'


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _function_details(ft: FunctionText) -> str:
    meta = f"{_plural(ft.num_params, 'param')} \u00b7 {_plural(ft.num_bindings, 'binding')}"
    if ft.num_cut:
        meta += f" \u00b7 {ft.num_cut:,} not shown"
    summary = f'<summary><b>{_esc(ft.name)}</b> <span class="aj-meta">{meta}</span></summary>'
    return f'<details open="">{summary}{_pre(_function_segments(ft))}</details>'


def _html_text(name: str, fn: _core.Function) -> FunctionText:
    return function_text(name, fn, HTML_LIMIT, HTML_HEAD, HTML_TAIL)


@_never_raises("aj.Module")
def module_html(mod: _core.Module) -> str:
    """The module highlighted, one collapsible block per function."""
    parts = [_function_details(_html_text(n, f)) for n, f in mod.functions.items()]
    return _box(_warnings(problems(mod)), *(parts or ['<span class="aj-meta">aj.Module: no functions</span>']))


@_never_raises("aj.Function")
def function_html(fn: _core.Function) -> str:
    return _box(_warnings(problems(_core.Module({fn.name: fn}))), _function_details(_html_text(fn.name, fn)))


@_never_raises("aj.Var")
def var_html(var: _core.Var) -> str:
    return _box(_pre([(_expr_text(var), False), (f": {var.type}", True)]))


@_never_raises("aj.Expr")
def expr_html(expr: _core.Expr) -> str:
    return _box(_pre([(_expr_text(expr), False), (f": {expr.type}", True)]))


@_never_raises("aj.Binding")
def binding_html(binding: _core.Binding) -> str:
    return _box(_pre(binding_segments(binding_repr(binding))))


@_never_raises("aj.Type")
def type_html(ty: _core.Type) -> str:
    return _box(_pre([(str(ty), True)]))


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:g} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _exec_details(ef: _core.ExecFunction) -> str:
    fn = ef.function
    ft = function_text(ef.name, fn, 0, 0, 0)
    meta = _plural(ef.num_instructions, "instruction")
    if ef.pool_bytes:
        meta += f" \u00b7 pool {_bytes(ef.pool_bytes)}"
    num_input = fn.attrs.get("num_input")
    if num_input is not None:
        meta += f" \u00b7 {_plural(num_input, 'input')} then {_plural(len(fn.params) - num_input, 'weight')}"
    summary = f'<summary><b>{_esc(ef.name)}</b> <span class="aj-meta">{meta}</span></summary>'
    return f'<details open="">{summary}{_pre(_function_segments(ft, body=False))}</details>'


@_never_raises("aj.ExecFunction")
def exec_function_html(ef: _core.ExecFunction) -> str:
    """A compiled function: its signature and its plan's size."""
    return _box(_exec_details(ef))


@_never_raises("aj.Executable")
def executable_html(exe: _core.Executable) -> str:
    """Every compiled function of an executable, as ``exec_function_html``."""
    head = f'<div class="aj-meta">aj.Executable \u00b7 {_plural(len(exe.names), "function")}</div>'
    return _box(head, *(_exec_details(exe[n]) for n in exe.names))


@_never_raises("pass")
def pass_html(pass_: object) -> str:
    """A pass: its repr, its docstring and, when it has one, its rule table."""
    title = f"<div><b>{_esc(repr(pass_))}</b></div>"
    doc = inspect.getdoc(type(pass_)) or ""
    rules: Iterable = getattr(pass_, "rules", None) or []
    if rules:
        doc = doc.split("\n\n- ``", 1)[0]  # the rule items of the docstring are the table
    rows = "".join(f"<tr><td><code>{_esc(str(name))}</code></td><td><code>{highlight([(str(rule), False)])}"
                   "</code></td></tr>" for name, rule in rules)
    table = f"<table><tr><th>rule</th><th>rewrite</th></tr>{rows}</table>" if rows else ""
    return _box(title, f'<div class="aj-doc">{_esc(doc)}</div>' if doc else "", table)


def install() -> None:
    """Gives the core's classes these reprs and HTML displays."""
    shown = {
        _core.Module: (module_repr, module_html),
        _core.Function: (function_repr, function_html),
        _core.Var: (var_repr, var_html),
        _core.Binding: (binding_repr, binding_html),
    }
    for cls in (_core.Call, _core.Constant, _core.Tuple, _core.TupleGetItem):
        shown[cls] = (expr_repr, expr_html)
    for cls, (plain, rich) in shown.items():
        cls.__repr__ = plain
        cls._repr_html_ = rich
    _core.Type._repr_html_ = type_html
    _core.Executable._repr_html_ = executable_html
    _core.ExecFunction._repr_html_ = exec_function_html
