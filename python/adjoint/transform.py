"""Passes: callables Module -> Module over immutable IR. The input module is
never changed; each pass returns a new one (or the same one when nothing
changes)."""

from __future__ import annotations

import textwrap
from abc import ABC, abstractmethod
from typing import Callable, Iterable, Sequence

import numpy as np

from . import _core
from .errors import TransformError
from .ir import Expr, Module, Var
from .pass_report import PassReport, explain


_INT32_MAX = 2**31 - 1


def _rules_docstring(summary: str, rules: Sequence[tuple[str, str]]) -> str:
    """A pass's docstring: its summary, then one item per rule of its table."""
    items = "\n".join(f"- ``{name}``: ``{before_after}``" for name, before_after in rules)
    return f"{textwrap.fill(summary, 76)}\n\n{items}\n"


class Pass(ABC):
    """A module-to-module transformation; call it on a module. The passes of
    ``aj.transform`` verify their input first: malformed IR (built through
    the Python API) is an ``aj.VerifyError`` naming the function and the
    var. A subclass's ``transform`` gets the module unverified (call
    ``aj.analysis.verify`` there when it needs well-formed IR)."""

    name = "Pass"

    def __call__(self, mod: Module) -> Module:
        if not isinstance(mod, Module):
            raise TransformError(f"{self.name} expects an aj.Module, got {type(mod).__name__}")
        return self.transform(mod)

    @abstractmethod
    def transform(self, mod: Module) -> Module:
        """The pass itself, on a module already checked to be one."""

    def explain(self, mod: Module) -> PassReport:
        """Runs the pass on ``mod`` and reports what it did: ``.module`` is
        ``self(mod)``, ``.counts`` how often each rule fired per pass (for
        Sequential, per pass it ran; for Gradient, per stage), and
        ``str(report)`` one line per pass: ``SimplifyGradient:
        transpose_of_matmul x3, bindings removed x4``."""
        return explain(self.name, lambda: self(mod))

    def __repr__(self) -> str:
        return f"aj.transform.{self.name}()"

    def _repr_html_(self) -> str:
        from .display import pass_html

        return pass_html(self)


class Gradient(Pass):
    """Adds ``<func_name>_adjoint`` with the params of ``func_name``, returning
    ``(result, (grad, ...))``: the adjoints of ``require_grads`` (names or vars
    of params or intermediate vars; all float params when None) of field
    ``target_index`` of the result (the result itself when it is not a tuple),
    which must be a float scalar. With ``simplify`` (the default) the adjoint
    goes through SimplifyGradient, EliminateCommonSubexpr and
    DeadCodeElimination; ``simplify=False`` keeps the raw reverse-mode form.
    The original function is left as it was.
    """

    name = "Gradient"

    def __init__(self, func_name: str = "main", require_grads: Sequence[str | Var] | str | Var | None = None,
                 target_index: int = 0, simplify: bool = True) -> None:
        if not isinstance(func_name, str):
            raise TransformError(f"Gradient: func_name must be a str, got {type(func_name).__name__}")
        if not isinstance(target_index, (int, np.integer)) or isinstance(target_index, (bool, np.bool_)):
            raise TransformError(f"Gradient: target_index must be an int, got {type(target_index).__name__}")
        if not 0 <= target_index <= _INT32_MAX:
            raise TransformError(f"Gradient: target_index {target_index} is out of range (a field index from 0)")
        if not isinstance(simplify, (bool, np.bool_)):
            raise TransformError(f"Gradient: simplify must be a bool, got {type(simplify).__name__}")
        self.func_name = func_name
        self.require_grads = None if require_grads is None else _names(require_grads)
        self.target_index = int(target_index)
        self.simplify = bool(simplify)

    def transform(self, mod: Module) -> Module:
        return _core.gradient(mod, self.func_name, self.require_grads, self.target_index, self.simplify)

    def __repr__(self) -> str:
        return (f"aj.transform.Gradient(func_name={self.func_name!r}, require_grads={self.require_grads!r}, "
                f"target_index={self.target_index}, simplify={self.simplify})")


class DeadCodeElimination(Pass):
    """Removes bindings whose values nothing returns or uses, in every function."""

    name = "DeadCodeElimination"

    def transform(self, mod: Module) -> Module:
        return _core.dead_code_elimination(mod)


class EliminateCommonSubexpr(Pass):
    """Binds identical pure values (same op, attrs and arguments) once, in every function."""

    name = "EliminateCommonSubexpr"

    def transform(self, mod: Module) -> Module:
        return _core.eliminate_common_subexpr(mod)


class SimplifyGradient(Pass):
    name = "SimplifyGradient"

    #: ``(name, "before -> after")`` for each rule, in the order they are tried:
    #: the C++ rule table itself.
    rules: list[tuple[str, str]] = [tuple(rule) for rule in _core.simplify_gradient_rules()]

    def transform(self, mod: Module) -> Module:
        return _core.simplify_gradient(mod)


SimplifyGradient.__doc__ = _rules_docstring(
    "Simplifies what reverse mode emits around matmul and transposes, in every function, then removes dead "
    "bindings. Each call is rewritten by the first of these rules that matches it, to a fixed point "
    '("T" is ``permute_dims`` swapping the last two axes):',
    SimplifyGradient.rules,
)


class ReorderPermuteDimsAfterConcat(Pass):
    name = "ReorderPermuteDimsAfterConcat"

    #: ``(name, "before -> after")`` for each rule: the C++ rule table itself.
    rules: list[tuple[str, str]] = [tuple(rule) for rule in _core.reorder_permute_dims_after_concat_rules()]

    def transform(self, mod: Module) -> Module:
        return _core.reorder_permute_dims_after_concat(mod)


ReorderPermuteDimsAfterConcat.__doc__ = _rules_docstring(
    "Moves permute_dims after a concat whose fields all permute their inputs the same way, for any number of "
    "fields, in every function, then removes dead bindings:",
    ReorderPermuteDimsAfterConcat.rules,
)


class LiftTransformParams(Pass):
    """For each function ``f`` with ``num_input``, adds
    ``f_transform_params(weights...)`` (after ``f``; ``f_transform_params_1``
    ... when the name is taken) returning a tuple of every weight-dependent
    value ``f`` can compute at compile time and needs, and of the weights
    ``f`` uses directly; ``f`` then takes ``(inputs..., transformed...)`` and
    keeps its ``num_input``. Running ``f_transform_params`` on the weights,
    then ``f`` on the inputs and its result, gives what ``f`` gave. Bindings
    that use no weight (``zeros((16,), "int32")``) are not lifted: they stay
    where they are used, in either function or both. A weight-dependent
    value of tuple type stays in ``f`` (whose params are tensors), computed
    there from lifted tensors. A value whose shape has a dim only weights
    give (``ones(("n",))`` with ``n`` a weight's dim) is lifted, and a weight
    passes through when ``f`` still needs a dim only it gives. Dead code is
    removed from both functions;
    functions without ``num_input`` are unchanged. Linear in the size of the
    module."""

    name = "LiftTransformParams"

    def transform(self, mod: Module) -> Module:
        return _core.lift_transform_params(mod)


class CombineParallelMatmul(Pass):
    name = "CombineParallelMatmul"

    #: ``(name, "before -> after")`` for each kind of rewrite: the C++ table itself.
    rules: list[tuple[str, str]] = [tuple(rule) for rule in _core.combine_parallel_matmul_rules()]

    def __init__(self, check: Callable[[Expr | list[Expr], list[Expr] | Expr], bool] | None = None) -> None:
        if check is not None and not callable(check):
            raise TransformError(f"CombineParallelMatmul: check must be callable or None, got {type(check).__name__}")
        self.check = check

    def transform(self, mod: Module) -> Module:
        return _core.combine_parallel_matmul(mod, self.check)

    def __repr__(self) -> str:
        return "aj.transform.CombineParallelMatmul()" if self.check is None else \
            f"aj.transform.CombineParallelMatmul(check={self.check!r})"


CombineParallelMatmul.__doc__ = _rules_docstring(
    "Combines matmuls that share an operand (a var) into one matmul over the concatenation of their other "
    "operands, followed by one split whose parts keep the branches' vars, in every function; any number of "
    "branches. Branches are grouped by the batch dims of their other operands (of rank >= 2) and their result "
    "dtype; a branch whose operand depends on another branch's result is left alone (settled in linear time: "
    "where the bindings' depths and heights cannot rule a path out, by sweeps over at most 4 bindings per "
    "binding in all; past that a possible path counts as one, and a second run may combine more). A bias add or an "
    "activation that every branch of a group has (as the only use of its result) goes before the split when "
    "the biases join, else stays on each branch. ``check(lhs, rhs)``, when given, may refuse a group by "
    "returning False: for matmuls sharing their LHS it is called as ``check(shared_lhs, [rhs, ...])``, for "
    "matmuls sharing their RHS as ``check([lhs, ...], shared_rhs)``. The rewrites:",
    CombineParallelMatmul.rules,
)


class ReassociateMatmul(Pass):
    name = "ReassociateMatmul"

    #: ``(name, "before <-> after")`` for each kind of rewrite: the C++ table itself.
    rules: list[tuple[str, str]] = [tuple(rule) for rule in _core.reassociate_matmul_rules()]

    def __init__(self, dim_bounds: dict[str, tuple[int, int | None]] | None = None) -> None:
        _core._dim_bounds.parse(dim_bounds, None, "ReassociateMatmul: dim_bounds")
        self.dim_bounds = None if dim_bounds is None else dict(dim_bounds)

    def transform(self, mod: Module) -> Module:
        return _core.reassociate_matmul(mod, self.dim_bounds)

    def __repr__(self) -> str:
        return "aj.transform.ReassociateMatmul()" if self.dim_bounds is None else \
            f"aj.transform.ReassociateMatmul(dim_bounds={self.dim_bounds!r})"


ReassociateMatmul.__doc__ = _rules_docstring(
    "Rewrites matmul expressions to the algebraically equal form that ``estimate_flops(fn, "
    "compile_time_free=True)`` counts cheapest, in every function, then removes dead bindings. A "
    "call costs its FLOPs, or nothing when its operands are all computable at compile time (weights, "
    "with ``num_input``): so ``(W + B@A) @ x`` is chosen when A and B are weights (its sum is then "
    "lifted by LiftTransformParams), ``W@x + B@(A@x)`` when they are inputs and the rank is small. With "
    "symbolic dims a form replaces the input only when it is cheaper for every dim value within "
    "``dim_bounds`` ({symbol: (low, high or None)}; dims are >= 1 without bounds); equal or undecided "
    "costs keep the input. Inner values of a form must be used by it alone; the add takes its operands "
    "in either order, operands may be batched, and a chain is followed 16 operands at a time; rounds repeat "
    "while one changes the function (a rewrite can make another form), at most 8. A bound "
    "that is not a (low, high) pair of ints with 0 <= low <= high is an ``aj.TransformError`` here, and "
    "a symbol no function of the module uses one when the pass runs. The rewrites:",
    ReassociateMatmul.rules,
)


class ConvertDType(Pass):
    """Every ``from_dtype`` value of a module as ``dtype`` ("float32" or
    "float64", names or NumPy dtypes), in every function: params, constants
    (their elements converted), the dtype attrs of calls that name
    ``from_dtype`` (``zeros(s, "float32")``, ``astype(x, "float32")``,
    matmul's ``out_dtype``; an astype to another dtype stays), and the type
    of every binding, inferred again; a ``divide`` of ints or bools (float64)
    takes its operands as float32 when float64 becomes float32. Int and bool
    values are left as they are, and a function with no ``from_dtype`` value
    is returned unchanged, so the pass is idempotent. ``ConvertDType("float64")`` gives a float64
    copy of a float32 module (for finite differences, as
    ``aj.testing.check_gradients`` takes them);
    ``ConvertDType("float32", from_dtype="float64")`` goes back (float64
    constants rounded to float32)."""

    name = "ConvertDType"

    def __init__(self, dtype: str | np.dtype = "float64", from_dtype: str | np.dtype = "float32") -> None:
        self.dtype = _float_dtype_name(dtype, "dtype")
        self.from_dtype = _float_dtype_name(from_dtype, "from_dtype")
        if self.dtype == self.from_dtype:
            raise TransformError(f"ConvertDType: dtype and from_dtype are both {self.dtype}")

    def transform(self, mod: Module) -> Module:
        return _core.convert_dtype(mod, self.dtype, self.from_dtype)

    def __repr__(self) -> str:
        return f"aj.transform.ConvertDType(dtype={self.dtype!r}, from_dtype={self.from_dtype!r})"


def _float_dtype_name(dtype: object, what: str) -> str:
    """"float32" or "float64" for a dtype name or a NumPy dtype, else a TransformError naming it."""
    name = dtype if isinstance(dtype, str) else None
    if name is None and isinstance(dtype, (np.dtype, type)):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in ("float32", "float64"):
        raise TransformError(f'ConvertDType: {what} must be "float32" or "float64", got {dtype!r}')
    return name


class Sequential(Pass):
    """Runs passes in order."""

    name = "Sequential"

    def __init__(self, passes: Iterable[Pass]) -> None:
        if isinstance(passes, (str, bytes)) or not hasattr(passes, "__iter__"):
            raise TransformError(f"Sequential: expected a list of passes, got {type(passes).__name__}")
        self.passes = list(passes)
        for p in self.passes:
            if isinstance(p, type):
                raise TransformError(f"Sequential: {p.__name__} is a class; give a pass made from it, "
                                     f"{p.__name__}(...)")
            if not callable(p):
                raise TransformError(f"Sequential: {p!r} is not a pass")

    def transform(self, mod: Module) -> Module:
        for p in self.passes:
            mod = p(mod)
            if not isinstance(mod, Module):
                raise TransformError(f"Sequential: {p!r} returned {type(mod).__name__}, not an aj.Module")
        return mod

    def __repr__(self) -> str:
        return f"aj.transform.Sequential({self.passes!r})"


def _names(require: Sequence[str | Var] | str | Var) -> list[str]:
    items = [require] if isinstance(require, (str, Var)) else list(require)
    out = []
    for r in items:
        if isinstance(r, Var):
            out.append(r.name_hint)
        elif isinstance(r, str):
            out.append(r)
        else:
            raise TransformError(f"Gradient: require_grads takes var names or aj.Var, got {type(r).__name__}")
    return out


__all__ = ["Pass", "Gradient", "DeadCodeElimination", "EliminateCommonSubexpr", "SimplifyGradient",
           "ReorderPermuteDimsAfterConcat", "LiftTransformParams", "CombineParallelMatmul", "ReassociateMatmul",
           "ConvertDType", "Sequential"]
