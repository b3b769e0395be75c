"""``P.Rewriter``: rewrite rules as passes (``Module -> Module``), written as
text (``from_text``, ``from_module``: a C++ rule per match) or as a pattern
and a Python function (``from_pattern``: ``rewrite_call``'s machinery).
Rewriters combine with ``|`` into one C++ rule set, tried in order at each
call of one rewrite."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import _core
from ..errors import Error
from ..ir import Module, parse
from ..transform import Pass
from .patterns import Captures, Pattern, _P, _pattern_arg
from .patterns import _check_name
from .rewrite_call import _ops_make_calls, _python_rule, rule_name_of, verified_rewrite

__all__ = ["Rewriter"]

_R = _core._rewriter

# Rounds of rewriting before rules that keep firing are a TransformError
# (as for rewrite_call).
_MAX_ROUNDS = 8


class _PythonRule:
    """A pattern and the Python function that rewrites what it matches."""

    __slots__ = ("name", "pattern", "fn")

    def __init__(self, name: str, pattern: Pattern, fn: Callable[[Any, Captures], Any]):
        self.name = name
        self.pattern = pattern
        self.fn = fn

    @property
    def before_after(self) -> str:
        return f"{self.pattern!r} -> {getattr(self.fn, '__qualname__', self.name)}"

    def renamed(self, name: str) -> "_PythonRule":
        return _PythonRule(name, self.pattern, self.fn)


def _unique_names(rules: Sequence[Any]) -> tuple[Any, ...]:
    """The rules, a name taken by an earlier rule suffixed " #2", " #3", ..."""
    taken: set[str] = set()
    out = []
    for rule in rules:
        name, k = rule.name, 1
        while name in taken:
            k += 1
            name = f"{rule.name} #{k}"
        taken.add(name)
        out.append(rule if name == rule.name else rule.renamed(name))
    return tuple(out)


def _name_arg(name: Any, default: str) -> str:
    if name is None:
        return default
    if not isinstance(name, str) or not name:
        raise Error(f"Rewriter: name= must be a non-empty str, got {name!r}")
    return _check_name(name, "Rewriter: name=")


class Rewriter(Pass):
    """Rewrite rules as a pass: ``rewriter(mod)`` returns ``mod`` with every
    call a rule matches rewritten, to a fixed point, and the bindings left
    dead removed from the functions that changed (``mod`` itself is never
    changed). Make one with ``from_text``, ``from_module`` or
    ``from_pattern``; ``a | b`` tries a's rules, then b's, at each call.

    Rules are named (``name=``, else the text of a text rule and the
    function's name for a Python one); errors name the rule and the binding.
    ``rules`` lists ``(name, "pattern -> replacement")``."""

    name = "Rewriter"

    def __init__(self, rules: Sequence[Any] = ()) -> None:
        if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
            raise Error(f"Rewriter: expected a list of rules, got {type(rules).__name__}; make rewriters with "
                        "Rewriter.from_text, from_module or from_pattern")
        for rule in rules:
            if not isinstance(rule, (_R.Rule, _PythonRule)):
                raise Error(f"Rewriter: {rule!r} is not a rule; make rewriters with Rewriter.from_text, "
                            "from_module or from_pattern")
        self._rules = _unique_names(rules)

    @classmethod
    def from_text(cls, text: str, name: str | None = None) -> "Rewriter":
        """The rule of a module in the text format holding two functions of
        one signature, ``pattern`` and ``replacement``: every call that looks
        like the pattern's returned value (seen through its bindings; each
        param matches any value, a param used twice one value twice, attrs
        and constants must be equal) becomes the replacement's returned
        value, its params standing for what the pattern's matched.

        The params' types are not read: the replacement's calls are made
        afresh from the matched values, through their ops' type rules. Where
        that fails or gives another type than the matched call's, the rule
        does not fire (so ``astype(x, "float32") -> x`` fires only on float32
        x). An aj.ParseError for bad text; an aj.Error naming what differs
        when the functions are missing, their param counts differ, a pattern
        param is unused, or the pattern returns no call."""
        if not isinstance(text, str):
            raise Error(f"Rewriter.from_text: expected a str, got {type(text).__name__}")
        return cls.from_module(parse(text), name)

    @classmethod
    def from_module(cls, mod: Module, name: str | None = None) -> "Rewriter":
        """``from_text`` on a module already parsed or built."""
        if not isinstance(mod, Module):
            raise Error(f"Rewriter.from_module: expected an aj.Module, got {type(mod).__name__}")
        rule = _R.rule_from_module(mod, "rule")
        return cls([rule.renamed(_name_arg(name, rule.before_after))])

    @classmethod
    def from_pattern(cls, pattern: Pattern, fn: Callable[[Any, Captures], Any], name: str | None = None) -> "Rewriter":
        """The rule rewriting each call ``pattern`` matches to ``fn(expr,
        captures)``, as ``P.rewrite_call`` does: an expr built with ``aj.op``,
        or ``expr`` itself or None for no rewrite. A replacement of another
        type than the call's is an aj.TypeInferenceError naming the binding;
        an exception in ``fn`` propagates. A pattern that matches no call
        rewrites nothing."""
        pattern = _pattern_arg(pattern, "Rewriter.from_pattern")
        if not callable(fn):
            raise Error(f"Rewriter.from_pattern: the rewriter must be callable, got {type(fn).__name__}")
        return cls([_PythonRule(_name_arg(name, rule_name_of(fn)), pattern, fn)])

    @property
    def rules(self) -> list[tuple[str, str]]:
        """``(name, "pattern -> replacement")`` for each rule, in the order they are tried."""
        return [(rule.name, rule.before_after) for rule in self._rules]

    def __or__(self, other: Any) -> "Rewriter":
        if not isinstance(other, Rewriter):
            raise Error(f"Rewriter | {type(other).__name__}: a rewriter combines only with another P.Rewriter")
        return Rewriter(self._rules + other._rules)

    def __ror__(self, other: Any) -> "Rewriter":
        raise Error(f"{type(other).__name__} | Rewriter: a rewriter combines only with another P.Rewriter")

    def transform(self, mod: Module) -> Module:
        rules = [self._core_rule(rule) for rule in self._rules
                 if not isinstance(rule, _PythonRule) or _P.can_match_call(rule.pattern._plain)]
        if not rules:
            return mod
        if all(isinstance(rule, _R.Rule) for rule in rules):
            return _R.rewrite(mod, rules, _MAX_ROUNDS)
        with _ops_make_calls():
            out = _R.rewrite(mod, rules, _MAX_ROUNDS)
        python_rules = [rule.name for rule in self._rules if isinstance(rule, _PythonRule)]
        return out if out is mod else verified_rewrite("Rewriter", python_rules, out)

    @staticmethod
    def _core_rule(rule: Any) -> Any:
        return _python_rule(rule.pattern, rule.fn, rule.name) if isinstance(rule, _PythonRule) else rule

    def __repr__(self) -> str:
        lines = [before_after if name == before_after else f"{name}: {before_after}"
                 for name, before_after in self.rules]
        return "P.Rewriter([" + "".join(f"\n    {line}," for line in lines) + ("\n])" if lines else "])")
