"""Fuzz target ``passes``: random pipelines of ``aj.transform`` passes on
valid programs.

An input is a valid program and a pipeline of one to six passes drawn from
everything ``aj.transform`` exports (``Sequential`` of one or two of them
too), text rules of ``P.Rewriter.from_text`` (``RULES``: SimplifyGradient's
in text and other sound identities, one or two joined with ``|``; rules that
never stop are refused with an ``aj.TransformError``) and ``TrainCheck``
(one ``T.Trainer`` step on a function and on it lifted, see there), with
random but valid options (``Gradient``'s function, required
grads, target index and ``simplify``; ``ReassociateMatmul``'s
``dim_bounds``; ``ConvertDType``'s two dtypes; ``CombineParallelMatmul``'s
``check``); a few options are bad on purpose. The program is a text of the
``parse`` target's corpus or of ``passes_corpus.PASS_TEXTS`` (parallel matmuls,
low-rank updates, matmul chains, concats of permuted fields, weights
transformed at compile time), taken as it is or mutated by the ``parse``
target's mutations until it parses and verifies (a bounded number of
tries), sometimes given a ``num_input`` attr and a ``frozen`` one naming
some of its weights (what LiftTransformParams and Trainer read).

After each pass: only ``aj.Error`` may come out (a pass refusing a program,
Gradient on a non-scalar result, is a label, and the pipeline goes on with
the module it had); the input module is left as it was; the output is an
``aj.Module`` that verifies, prints and parses back to a structurally
equal module with the same print and hash; DeadCodeElimination,
EliminateCommonSubexpr, SimplifyGradient, ConvertDType and
LiftTransformParams are their own fixed points; Gradient leaves the other
functions as they were; LiftTransformParams keeps ``num_input`` and gives
the lifted function a ``frozen`` attr naming exactly the weights its
``f_transform_params`` computes from frozen weights (and constants) alone. When a function's params are small concrete shapes
(symbols bound to 1..3), it is built and run on random inputs before the
pipeline, and after each pass the output module is built and run on the
same inputs and must give the same results (floats within a tolerance of
their dtype, loose after passes that may round otherwise, NaN and inf at
the same places; ints and bools exactly): through ``f_transform_params``
first after LiftTransformParams (its weights, then ``f`` on the inputs and
what it returned), with float arguments cast after ConvertDType (then
compared loosely where both are finite, and its results are the reference
from then on; a float64 result of float32 values gets float32's
tolerance). A
function Gradient adds is run too: its first output must be the
function's result, its results must be those of the adjoint made with the
other ``simplify`` (within the looser tolerance), and they are the
reference from then on.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any, Callable

import numpy as np

import adjoint as aj
from adjoint import pattern as P
from adjoint import training as T
from adjoint.fuzz import parse as fuzz_parse
from adjoint.fuzz.exec import summarize
from adjoint.fuzz.passes_compare import (COST_LIMIT, Track, _has_float, _has_float32, call, compare, cost, sensitive,
                                         small_inputs)
from adjoint.fuzz.passes_corpus import PASS_TEXTS
from adjoint.fuzz.runner import Finding, error_label

LABELS = ["ok", "ok, nothing run"]
REACHED = ["mutated", "attrs set", "pass ran", "pass refused", "verified", "round trip", "fixed point", "built",
           "compared", "compared after a dtype change", "lifted compared", "adjoint compared",
           "simplified gradient compared", "frozen checked", "rule rewrote", "trained", "trainer compared",
           "trainer refused", "trained lifted", "train lifted refused", "trained weight compared", "train skipped"]

#: pass name -> weight in a pipeline ("Rewriter": P.Rewriter.from_text rules; "Train": the TrainCheck below)
PASSES = {"DeadCodeElimination": 8, "EliminateCommonSubexpr": 8, "SimplifyGradient": 8, "Gradient": 14,
          "CombineParallelMatmul": 12, "ReorderPermuteDimsAfterConcat": 8, "LiftTransformParams": 12,
          "ReassociateMatmul": 12, "ConvertDType": 8, "Rewriter": 10, "Train": 6, "Sequential": 4}
#: passes documented as their own fixed point: run twice, they give what once gave (a Rewriter whose
#: rules stop too: one walk reaches its fixed point)
FIXED_POINT = {"DeadCodeElimination", "EliminateCommonSubexpr", "SimplifyGradient", "ConvertDType",
               "LiftTransformParams", "Rewriter"}
#: passes after which results may round otherwise (sums reassociated, matmuls combined, dtypes changed)
ROUNDING = {"SimplifyGradient", "CombineParallelMatmul", "ReassociateMatmul", "ConvertDType", "Rewriter"}


def _rule(params: str, pattern: str, replacement: str) -> str:
    """A text rule: pattern and replacement functions of one signature (the types are not read)."""
    return (f"@function\ndef pattern({params}):\n{pattern}\n\n"
            f"@function\ndef replacement({params}):\n{replacement}\n")


_M = 'Tensor((2, 2), "float32")'
#: text rules (P.Rewriter.from_text), each sound wherever its ops type-check with the matched call's type:
#: SimplifyGradient's in text (transposes as axes=[1, 0], which only a rank-2 tensor takes, so that a rank-3
#: match whose dims happen to agree cannot fire), identities, and replacements taking items of a split
RULES = {
    "fold_permutes": _rule(f"x: {_M}", "    return permute_dims(permute_dims(x))", "    return x"),
    "fold_transposes": _rule(f"x: {_M}", "    t = permute_dims(x, axes=[1, 0])\n    return permute_dims(t, axes=[1, 0])",
                             "    return x"),
    "transpose_of_matmul": _rule(f"a: {_M}, b: {_M}", "    return permute_dims(matmul(a, b), axes=[1, 0])",
                                 "    bt = permute_dims(b, axes=[1, 0])\n    at = permute_dims(a, axes=[1, 0])\n"
                                 "    return matmul(bt, at)"),
    "matmul_of_transposes": _rule(f"a: {_M}, b: {_M}",
                                  "    bt = permute_dims(b, axes=[1, 0])\n    at = permute_dims(a, axes=[1, 0])\n"
                                  "    return matmul(bt, at)", "    return permute_dims(matmul(a, b), axes=[1, 0])"),
    "drop_astype_float32": _rule(f"x: {_M}", '    return astype(x, "float32")', "    return x"),
    "drop_astype_float64": _rule(f"x: {_M}", '    return astype(x, "float64")', "    return x"),
    "double_negative": _rule(f"x: {_M}", "    return negative(negative(x))", "    return x"),
    "relu_relu": _rule(f"x: {_M}", "    return relu(relu(x))", "    return relu(x)"),
    "add_self": _rule(f"x: {_M}", "    return add(x, x)", '    return multiply(x, const(2.0, "float32"))'),
    "sum_of_permute": _rule(f"x: {_M}", "    return sum(permute_dims(x))", "    return sum(x)"),
    "sum_of_halves": _rule(f"x: {_M}", "    return sum(x)",
                           "    s = split(x, 2, axis=0)\n    h = add(s[0], s[1])\n    return sum(h)"),
    "concat_of_split": _rule(f"x: {_M}", "    s = split(x, 2, axis=0)\n    a = s[0]\n    b = s[1]\n"
                             "    return concat((a, b), axis=0)", "    return x"),
    "multiply_commutes": _rule(f"a: {_M}, b: {_M}", "    return multiply(a, b)", "    return multiply(b, a)"),
}
#: rules that never stop (alone, or with the other): the rewriter refuses them with an aj.TransformError
LOOPING = {("multiply_commutes",), ("transpose_of_matmul", "matmul_of_transposes")}
#: rules exact in floats (the others round otherwise)
EXACT_RULES = {"fold_permutes", "fold_transposes", "drop_astype_float32", "drop_astype_float64", "double_negative",
               "relu_relu", "add_self", "concat_of_split"}
#: optimizers of the Train check, by name: updates elementwise per weight, linear in the gradient (no Adam,
#: whose first step is lr * sign(grad) and so turns a rounding of a zero gradient into a whole step)
OPTIMIZERS = {"sgd": "T.SGD(lr=0.1)", "momentum": "T.SGD(lr=0.1, momentum=0.9)",
              "decay": "T.SGD(lr=0.05, weight_decay=0.01)"}
#: CombineParallelMatmul's check, by name
CHECKS = {"none": None, "yes": "lambda lhs, rhs: True", "no": "lambda lhs, rhs: False",
          "numpy": "lambda lhs, rhs: np.bool_(True)", "lhs only": "lambda lhs, rhs: isinstance(rhs, list)",
          "pairs": "lambda lhs, rhs: len(rhs if isinstance(rhs, list) else lhs) == 2"}
#: parse mutations that keep a text close to valid, with their weights
MUTATIONS = [("m_call", 30), ("m_attr", 8), ("m_line", 8), ("m_number", 6), ("m_string", 6), ("m_splice", 3),
             ("m_token", 4), ("m_shape", 2)]
MUTATION_TRIES = 12


def pass_code(spec: dict) -> str:
    """The Python expression making the pass of a pipeline entry (``aj`` and ``np`` in scope)."""
    name = spec["pass"]
    if name == "Sequential":
        return f"aj.transform.Sequential([{', '.join(pass_code(s) for s in spec['passes'])}])"
    if name == "Gradient":
        return (f"aj.transform.Gradient(func_name={spec['func_name']!r}, require_grads={spec['require_grads']!r}, "
                f"target_index={spec['target_index']}, simplify={spec['simplify']})")
    if name == "ReassociateMatmul":
        bounds = spec["dim_bounds"]
        return "aj.transform.ReassociateMatmul()" if bounds is None else \
            f"aj.transform.ReassociateMatmul(dim_bounds={ {k: tuple(v) for k, v in bounds.items()}!r})"
    if name == "ConvertDType":
        return f"aj.transform.ConvertDType({spec['dtype']!r}, from_dtype={spec['from_dtype']!r})"
    if name == "CombineParallelMatmul":
        check = CHECKS[spec["check"]]
        return "aj.transform.CombineParallelMatmul()" if check is None else \
            f"aj.transform.CombineParallelMatmul(check={check})"
    if name == "Rewriter":
        rules = [f"P.Rewriter.from_text({RULES[r]!r})" for r in spec["rules"]]
        return rules[0] if len(rules) == 1 else "(" + " | ".join(rules) + ")"
    if name == "Train":
        return (f"TrainCheck({spec['func_name']!r}, {OPTIMIZERS[spec['optimizer']]}, "
                f"seed={spec['seed']})")
    return f"aj.transform.{name}()"


def make_pass(spec: dict, reach: Callable[[str], None] | None = None) -> Any:
    """The pass of a pipeline entry (a TrainCheck reports its stages to ``reach``)."""
    def train_check(*args: Any, **kwargs: Any) -> TrainCheck:
        return TrainCheck(*args, **kwargs, reach=reach)

    return eval(pass_code(spec), {"aj": aj, "np": np, "P": P, "T": T,  # noqa: S307 (our own generated code)
                                  "TrainCheck": train_check})


def fixed_point(spec: dict) -> bool:
    """Whether an entry's pass is its own fixed point (a Rewriter of rules that stop)."""
    if spec["pass"] == "Rewriter":
        return not any(set(loop) <= set(spec["rules"]) for loop in LOOPING)
    return spec["pass"] in FIXED_POINT


def rounds(spec: dict) -> bool:
    """Whether an entry's passes may round results otherwise."""
    return any(leaf["pass"] in ROUNDING and not (leaf["pass"] == "Rewriter" and set(leaf["rules"]) <= EXACT_RULES)
               for leaf in leaf_specs(spec))


def leaf_specs(spec: dict) -> list[dict]:
    """The entries an entry runs (a Sequential's, in order)."""
    return [leaf for s in spec["passes"] for leaf in leaf_specs(s)] if spec["pass"] == "Sequential" else [spec]


def pass_names(spec: dict) -> list[str]:
    """The passes an entry runs (a Sequential's, in order)."""
    return [n for s in spec["passes"] for n in pass_names(s)] if spec["pass"] == "Sequential" else [spec["pass"]]


# ---------------------------------------------------------------- the target


class Fuzzer:
    def __init__(self, seed: int):
        self.seed = seed
        self.parse = fuzz_parse.Fuzzer(seed)
        texts = list(self.parse.corpus)
        for text in PASS_TEXTS:
            mod = aj.parse(text)
            texts += [text, mod.script()]
            for p in (aj.transform.Gradient(), aj.transform.LiftTransformParams()):
                try:
                    texts.append(p(mod).script())
                except aj.Error:
                    pass
        seen: set[str] = set()
        self.corpus = []
        for t in texts:
            if t in seen:
                continue
            seen.add(t)
            try:
                aj.analysis.verify(aj.parse(t))
            except aj.Error:
                continue
            self.corpus.append(t)
            if t not in self.parse.types:
                self.parse.types[t] = fuzz_parse._var_types(t)
        self.parse.corpus = self.corpus  # splices draw from these texts too

    # ---- making input k ----

    def make(self, k: int) -> dict:
        rng = random.Random(f"passes:{self.seed}:{k}")
        base = rng.randrange(len(self.corpus))
        text, mutations = self.corpus[base], []
        mod = aj.parse(text)
        if rng.random() < 0.6:
            for _ in range(MUTATION_TRIES):
                new, names = text, []
                for _ in range(rng.choice([1, 1, 2])):
                    mutate = getattr(self.parse, rng.choices([m for m, _ in MUTATIONS], [w for _, w in MUTATIONS])[0])
                    new, name = mutate(rng, new)
                    names.append(name)
                got = _valid(new)
                if got is not None:
                    text, mod, mutations = new, got, names
                    break
        if rng.random() < 0.3:
            text, mod, attrs = _with_attrs(rng, text, mod)
            if attrs:
                mutations.append(attrs)
        names = set(mod.functions)  # the functions as the pipeline goes (Gradient and LiftTransformParams add some)
        passes = [self._pass(rng, mod, names) for _ in range(rng.choices(range(1, 7), [20, 25, 20, 15, 10, 10])[0])]
        return {"base": base, "mutations": mutations, "text": text, "passes": passes}

    def _pass(self, rng: random.Random, mod: aj.Module, names: set, nested: bool = False) -> dict:
        weights = {n: w for n, w in PASSES.items() if not (nested and n == "Sequential")}
        name = rng.choices(list(weights), list(weights.values()))[0]
        spec: dict[str, Any] = {"pass": name}
        if name == "Sequential":
            spec["passes"] = [self._pass(rng, mod, names, nested=True) for _ in range(rng.choice([1, 2]))]
        elif name == "Gradient":
            # mostly a function with a float scalar to differentiate, not differentiated yet
            targets = {f: _scalar_fields(mod[f].ret_type) for f in sorted(names)
                       if f in mod and f + "_adjoint" not in names}
            good = [f for f, fields in targets.items() if fields]
            func = rng.choice(good) if good and rng.random() < 0.9 else rng.choice(sorted(names))
            if rng.random() < 0.02:
                func = "no_such_function"
            fields = targets.get(func) or [0]
            index = rng.choice(fields) if rng.random() < 0.95 else rng.choice([0, 1, 2])
            if rng.random() < 0.5 or func not in mod:
                grads = None
            else:
                fn = mod[func]
                candidates = [p.name_hint for p in fn.params if _has_float(p.type)] + \
                             [b.var.name_hint for b in fn.bindings if _has_float(b.var.type)]
                grads = rng.sample(candidates, min(len(candidates), rng.randint(1, 3))) if candidates else None
                if grads and rng.random() < 0.03:
                    grads.append("no_such_var")
            spec.update(func_name=func, require_grads=grads, target_index=index, simplify=rng.random() < 0.7)
            names.add(func + "_adjoint")
        elif name == "ReassociateMatmul":
            symbols = _symbols(mod)
            bounds = None
            if rng.random() < 0.6 and symbols:
                bounds = {}
                for s in rng.sample(symbols, rng.randint(1, len(symbols))):
                    low = rng.choice([0, 1, 1, 2, 16, 1024])
                    high = rng.choice([None, low, low + 1, low + 64, 2**20])
                    bounds[s] = [low, high]
                if rng.random() < 0.03:
                    bounds["unused_symbol"] = [1, 2]
            spec["dim_bounds"] = bounds
        elif name == "ConvertDType":
            dtype = rng.choice(["float32", "float64"])
            spec["dtype"] = dtype if rng.random() < 0.97 else "float16"
            spec["from_dtype"] = "float64" if dtype == "float32" else "float32"
        elif name == "CombineParallelMatmul":
            spec["check"] = rng.choices(list(CHECKS), [10, 2, 2, 1, 2, 2])[0]
        elif name == "LiftTransformParams":
            names |= {f + "_transform_params" for f in list(names) if f in mod and "num_input" in mod[f].attrs}
        elif name == "Rewriter":
            # one rule or two, mostly of those that stop
            rules = rng.sample(sorted(RULES), rng.choice([1, 1, 2]))
            while any(set(loop) <= set(rules) for loop in LOOPING) and rng.random() < 0.9:
                rules = rng.sample(sorted(RULES), len(rules))
            spec["rules"] = rules
        elif name == "Train":
            # mostly a function with weights (a num_input attr)
            good = [f for f in sorted(names) if f in mod and "num_input" in mod[f].attrs]
            spec["func_name"] = rng.choice(good) if good and rng.random() < 0.95 else rng.choice(sorted(names))
            spec["optimizer"] = rng.choice(sorted(OPTIMIZERS))
            spec["seed"] = rng.randrange(2**31)
        return spec

    def save(self, inp: dict, stem: str, header: str) -> list[str]:
        """The program as a .aj file, and a script that runs the pipeline on it."""
        aj_path, py_path = stem + ".aj", stem + ".py"
        with open(aj_path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(inp["text"])
        lines = ["# " + line if line else "#" for line in header.splitlines()]
        body = [*lines, "", "import numpy as np", "", "import adjoint as aj", "from adjoint import pattern as P",
                "from adjoint import training as T", "from adjoint.fuzz.passes import TrainCheck", "",
                f"TEXT = {inp['text']!r}",
                "mod = aj.parse(TEXT)", "aj.analysis.verify(mod)",
                *[f"mod = {pass_code(s)}(mod)  # pass {i + 1}" for i, s in enumerate(inp["passes"])],
                "aj.analysis.verify(mod)", "print(mod.script())", ""]
        with open(py_path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write("\n".join(body))
        return [aj_path, py_path]

    def describe(self, inp: dict) -> str:
        mutated = f" with {', '.join(inp['mutations'])}" if inp["mutations"] else ""
        return f"corpus text {inp['base']}{mutated}; " + " -> ".join(
            "+".join(pass_names(s)) for s in inp["passes"])

    def group(self, inp: dict) -> str:
        return ""

    # ---- running it ----

    def run(self, inp: dict, reach: Callable[[str], None]) -> str:
        if inp["mutations"]:
            reach("mutated")
        mod = aj.parse(inp["text"])
        aj.analysis.verify(mod)
        if any(m.startswith("attrs") for m in inp["mutations"]):
            reach("attrs set")
        tracks = self._tracks(mod)
        label = "ok" if tracks else "ok, nothing run"
        for i, spec in enumerate(inp["passes"]):
            where = f"pass {i + 1} ({pass_code(spec)})"
            try:
                p = make_pass(spec, reach)
            except aj.Error as e:
                reach("pass refused")
                label = label if label.startswith("aj.") else error_label(e)
                continue
            before = mod.script()
            try:
                out = p(mod)
            except aj.Error as e:
                reach("pass refused")
                label = label if label.startswith("aj.") else error_label(e)
                continue
            reach("pass ran")
            if mod.script() != before:
                raise Finding("input-changed", f"{where} changed its input module", spec["pass"])
            if not isinstance(out, aj.Module):
                raise Finding("not-a-module", f"{where} returned {type(out).__name__}", spec["pass"])
            self._check_output(spec, where, mod, out, reach)
            if tracks:
                tracks = self._check_results(spec, where, mod, out, tracks, reach)
            mod = out
        return label

    def _tracks(self, mod: aj.Module) -> dict[str, Track]:
        try:
            exe = aj.build(mod)
        except aj.Error:
            return {}
        rng = np.random.default_rng(len(mod.script()))
        tracks = {}
        for name, fn in list(mod.functions.items())[:4]:
            args = small_inputs(fn, rng)
            if args is None or cost(fn, args) > COST_LIMIT:
                continue
            try:
                want = exe[name](*args)
            except aj.Error:
                continue
            tracks[name] = Track((), args, want, sensitive=sensitive(fn))
        return tracks

    def _check_output(self, spec: dict, where: str, mod: aj.Module, out: aj.Module, reach) -> None:
        name = spec["pass"]
        try:
            aj.analysis.verify(out)
        except aj.Error as e:
            raise Finding("invalid-output", f"{where} gave a module that does not verify: {type(e).__name__}: {e}\n"
                                            f"--- output:\n{_script(out)}", f"{name}: {type(e).__name__}") from None
        reach("verified")
        printed = out.script()
        try:
            again = aj.parse(printed)
        except aj.Error as e:
            raise Finding("reparse", f"{where}: its printed output does not parse: {type(e).__name__}: {e}\n"
                                     f"--- printed:\n{printed}", f"{name}: {type(e).__name__}") from None
        if not aj.structural_equal(out, again):
            raise Finding("roundtrip", f"{where}: parse(print(out)) differs from out:\n"
                                       f"{aj.structural_diff(out, again)}\n--- printed:\n{printed}", name)
        if again.script() != printed or aj.structural_hash(again) != aj.structural_hash(out):
            raise Finding("roundtrip", f"{where}: print or hash unstable\n--- printed:\n{printed}", name)
        reach("round trip")
        if name == "Rewriter" and not aj.structural_equal(out, mod):
            reach("rule rewrote")
        if fixed_point(spec):
            try:
                twice = make_pass(spec)(out)
            except aj.Error as e:
                raise Finding("fixed-point", f"{where}: a second run raised {type(e).__name__}: {e}\n"
                                             f"--- after one run:\n{printed}", name) from None
            if not aj.structural_equal(twice, out):
                raise Finding("fixed-point", f"{where}: a second run changed the module:\n"
                                             f"{aj.structural_diff(out, twice)}\n--- after one run:\n{printed}\n"
                                             f"--- after two:\n{_script(twice)}", name)
            reach("fixed point")
        if name == "LiftTransformParams":
            check_frozen(where, mod, again)
            reach("frozen checked")
        if name == "Gradient":
            adjoint = spec["func_name"] + "_adjoint"
            if set(out.functions) != set(mod.functions) | {adjoint} or adjoint in mod:
                raise Finding("gradient-functions", f"{where}: functions {sorted(mod.functions)} became "
                                                    f"{sorted(out.functions)}", name)
            for f in mod.functions:
                if not aj.structural_equal(mod[f], out[f]):
                    raise Finding("gradient-changed", f"{where} changed function {f!r}:\n"
                                                      f"{aj.structural_diff(mod[f], out[f])}", name)
        else:
            lost = [f for f in mod.functions if f not in out]
            if lost:
                raise Finding("function-lost", f"{where} dropped functions {lost}", name)

    def _check_results(self, spec: dict, where: str, mod: aj.Module, out: aj.Module, tracks: dict, reach) -> dict:
        names = pass_names(spec)
        rounding = rounds(spec)
        converted = "ConvertDType" in names
        new = [f for f in out.functions if f not in mod]
        updated = {f: Track(t.steps, t.args, t.want, t.converted or converted, t.rounding or rounding,
                            t.sensitive or sensitive(out[f])) for f, t in tracks.items() if f in out}
        # the functions the passes added, in the order they ran (a Sequential may differentiate, then lift)
        taken: set[str] = set()
        for leaf in leaf_specs(spec):
            if leaf["pass"] == "Gradient":
                g = leaf["func_name"]
                if g + "_adjoint" in new and g in updated and g + "_adjoint" not in updated:
                    t = updated[g]
                    updated[g + "_adjoint"] = Track(t.steps, t.args, None, t.converted, t.rounding,
                                                    t.sensitive or sensitive(out[g + "_adjoint"]))
            elif leaf["pass"] == "LiftTransformParams":
                for f in list(updated):
                    lifted = sorted((n for n in new if n not in taken and
                                     re.fullmatch(re.escape(f) + r"_transform_params(_\d+)?", n)), key=len)
                    if not lifted or "num_input" not in out[f].attrs:
                        continue
                    tp, ni, t = lifted[0], out[f].attrs["num_input"], updated[f]
                    taken.add(tp)
                    updated[tp] = Track(t.steps + (("weights", ni),), t.args, None, t.converted, t.rounding,
                                        t.sensitive or sensitive(out[tp]))
                    updated[f] = Track(t.steps + (("lift", ni, tp),), t.args, t.want, t.converted, t.rounding,
                                       t.sensitive)
        try:
            exe = aj.build(out)
        except aj.Error as e:
            raise Finding("build-refused", f"{where}: the input built, its output does not: {type(e).__name__}: {e}\n"
                                           f"--- output:\n{_script(out)}", f"{names[-1]}: {type(e).__name__}") from None
        reach("built")
        for f, t in updated.items():
            try:
                got = call(exe, out, f, t)
            except aj.Error as e:
                raise Finding("run-refused", f"{where}: function {f!r} ran before the pass, not after: "
                                             f"{type(e).__name__}: {e}\n--- output:\n{_script(out)}",
                              f"{names[-1]}: {type(e).__name__}") from None
            if t.want is None:  # new: its results are the reference from now on
                t.want, t.converted, t.float32 = got, False, _has_float32(out[f])
                base = updated.get(base_name(f)) if f.endswith("_adjoint") else None
                if base is not None and base.want is not None:
                    if not isinstance(got, tuple) or len(got) != 2:
                        raise Finding("wrong-result", f"{where}: {f!r} returned {summarize(got)}, not (result, grads)",
                                      "adjoint")
                    compare(got[0], base.want, base, f"{f}(...)[0], against {base_name(f)}'s result")
                    reach("adjoint compared")
                    if spec["pass"] == "Gradient":
                        self._other_simplify(spec, where, mod, f, t, got)
                        reach("simplified gradient compared")
                continue
            t.float32 = _has_float32(out[f])
            compare(got, t.want, t, f"{f}(...)")
            reach("compared after a dtype change" if t.converted else
                  "lifted compared" if any(s[0] == "lift" for s in t.steps) else "compared")
            if t.converted:  # the results in the new dtypes are the reference from now on
                t.want, t.converted = got, False
        return updated


    def _other_simplify(self, spec: dict, where: str, mod: aj.Module, f: str, t: Track, got: Any) -> None:
        """The adjoint made with the other ``simplify`` gives the same results
        (SimplifyGradient, EliminateCommonSubexpr and DeadCodeElimination on
        gradient code), within the tolerance of results rounded otherwise."""
        other = make_pass(dict(spec, simplify=not spec["simplify"]))
        try:
            out = other(mod)
        except aj.Error as e:
            raise Finding("simplify-refused", f"{where}: with simplify={not spec['simplify']} the pass raised "
                                              f"{type(e).__name__}: {e}", type(e).__name__) from None
        try:
            again = call(aj.build(out), out, f, t)
        except aj.Error as e:
            raise Finding("run-refused", f"{where}: {f!r} made with simplify={not spec['simplify']} does not run: "
                                         f"{type(e).__name__}: {e}\n--- output:\n{_script(out)}",
                          f"simplify: {type(e).__name__}") from None
        rounded = replace(t, want=got, rounding=True)
        compare(again, got, rounded, f"{f}(...) with simplify={not spec['simplify']}, against simplify={spec['simplify']}")


class TrainCheck:
    """A pipeline entry that trains one step and returns the module as it
    was: ``T.SetupTrainer``'s step on ``func_name`` with the MSE loss,
    ``optimizer`` and random small inputs, weights and labels (drawn from
    ``seed``; as ``small_inputs``), built and run without donation, and the
    same on the function as LiftTransformParams lifts it, its weights being
    ``f_transform_params`` of those. The loss (before the update) is the
    same; a trained weight that the lifted function takes as it is, and that
    nothing lifted reads, gets the same update (its gradient is the same);
    frozen weights, and the lifted ones computed from frozen weights and
    constants alone, are read and not updated. A ``T.Trainer`` (donating,
    its buffers updated in place) on each gives what its step gave and
    leaves its frozen weights as they were; a Trainer refusing weights of
    symbolic dims is counted ("trainer refused"). SetupTrainer refusing the
    function (no weights, ints, every weight frozen, state of symbolic dims)
    is an ``aj.Error``, as a pass refusing it; a refusal on the lifted
    function only is counted, not a finding (lifting may leave no trained
    weight, or a bool one)."""

    def __init__(self, func_name: str, optimizer: Any, seed: int = 0, reach: Callable[[str], None] | None = None):
        self.func_name, self.optimizer, self.seed = func_name, optimizer, seed
        self.reach = reach or (lambda stage: None)

    def __repr__(self) -> str:
        return f"TrainCheck({self.func_name!r}, {self.optimizer!r}, seed={self.seed})"

    def __call__(self, mod: aj.Module) -> aj.Module:
        f = self.func_name
        fn = mod[f]
        ni = fn.attrs.get("num_input")
        rng = np.random.default_rng(self.seed)
        args = small_inputs(fn, rng)
        if ni is None or args is None or cost(fn, args) > COST_LIMIT / 4:
            self.reach("train skipped")
            return mod
        pred = aj.build(mod)[f](*args)
        pred = pred[0] if isinstance(pred, tuple) else pred
        if not isinstance(pred, np.ndarray) or pred.dtype.kind != "f":
            self.reach("train skipped")
            return mod
        label = np.asarray(rng.standard_normal(pred.shape).astype(pred.dtype))
        inputs, weights = args[:ni], args[ni:]
        names = [p.name_hint for p in fn.params[ni:]]
        given = dict(zip(names, weights))
        track = Track((), [], None, rounding=True, sensitive=sensitive(fn), float32=_has_float32(fn))
        where = f"{self!r} on {f!r}"
        loss, new, layout = self._step(mod, inputs, label, given, where)
        self.reach("trained")
        self._trainer(mod, inputs, label, given, loss, new, layout, replace(track, rounding=False), where)
        lifted = aj.transform.LiftTransformParams()(mod)
        tps = sorted((n for n in lifted.functions if n not in mod and
                      re.fullmatch(re.escape(f) + r"_transform_params(_\d+)?", n)), key=len)
        if not tps:
            return mod
        tp = aj.parse(lifted.script())[tps[0]]  # distinct names
        got = aj.build(lifted)[tps[0]](*weights)
        values = list(got) if isinstance(got, tuple) else [got]
        lnames = [p.name_hint for p in lifted[f].params[ni:]]
        lgiven = dict(zip(lnames, values))
        where = f"{where}, lifted"
        try:
            lloss, lnew, llayout = self._step(lifted, inputs, label, lgiven, where)
        except aj.Error:
            if any(n not in lifted[f].frozen for n in lnames):
                self.reach("train lifted refused")
            return mod
        self.reach("trained lifted")
        compare(lloss, loss, track, f"{where}: the loss of the lifted function, against the function's")
        # a trained weight passed through as it is, read by nothing else lifted: the same gradient, the same update
        deps: dict[str, Any] = {p.name_hint: {w} for p, w in zip(tp.params, names)}
        for b in tp.bindings:
            deps[b.var.name_hint] = _deps(b.value, deps)
        fields = list(tp.ret.fields) if isinstance(tp.ret, aj.Tuple) else [tp.ret]
        readers: dict[str, int] = {}
        for value in fields:
            for w in _flat(_deps(value, deps)):
                readers[w] = readers.get(w, 0) + 1
        params = {p.name_hint: w for p, w in zip(tp.params, names)}
        for lname, value in zip(lnames, fields):
            if not isinstance(value, aj.Var) or value.name_hint not in params:
                continue
            w = params[value.name_hint]
            if readers.get(w) != 1 or w not in new or lname not in lnew:
                continue
            compare(lnew[lname], new[w], track, f"{where}: weight {w!r} as updated through the lifted function "
                                                 f"({lname!r}), against the function's update")
            self.reach("trained weight compared")
        self._trainer(lifted, inputs, label, lgiven, lloss, lnew, llayout, replace(track, rounding=False), where)
        return mod

    def _step(self, mod: aj.Module, inputs: list, label: np.ndarray, given: dict, where: str) -> tuple:
        """SetupTrainer's step, built without donation, run once: the loss, the
        trained weights as updated by name, and the step's layout. Its frozen
        weights are params it does not return (checked from its layout)."""
        stepped, layout = T.SetupTrainer(T.mse, self.optimizer, self.func_name).with_layout(mod)
        step = stepped["step"]
        names = [p.name_hint for p in mod[self.func_name].params[len(inputs):]]
        if sorted(layout.params + layout.frozen) != sorted(names) or set(layout.params) & set(layout.frozen):
            raise Finding("train-layout", f"{where}: the step trains {layout.params} and freezes {layout.frozen}; "
                                          f"the weights are {names}", "layout")
        if tuple(sorted(layout.frozen)) != tuple(sorted(mod[self.func_name].frozen)):
            raise Finding("train-layout", f"{where}: the step freezes {layout.frozen}, the function's attr "
                                          f"{mod[self.func_name].frozen}", "frozen")
        types = [(p.name_hint, tuple(p.type.shape), p.type.dtype)
                 for p in step.params[layout.param_index:layout.frozen_index]]
        state = self.optimizer.init_state(types)
        lr = np.asarray(self.optimizer.lr_at(0), dtype=step.params[layout.lr_index].type.dtype)
        args = [*inputs, label, *[given[n] for n in layout.params], *[given[n] for n in layout.frozen], *state, lr]
        out = aj.build(aj.Module({self.func_name: stepped[self.func_name], "step": step}))["step"](*args)
        if not isinstance(out, tuple) or len(out) != 1 + len(layout.params) + len(layout.state):
            raise Finding("train-layout", f"{where}: the step returned {summarize(out)} for {len(layout.params)} "
                                          f"weights and {len(layout.state)} state entries", "results")
        return out[0], dict(zip(layout.params, out[1:])), layout

    def _trainer(self, mod: aj.Module, inputs: list, label: np.ndarray, given: dict, loss: np.ndarray, new: dict,
                 layout: Any, track: Track, where: str) -> None:
        """A Trainer's step gives what the step did; it leaves frozen weights as they were."""
        try:
            trainer = T.Trainer(mod, T.mse, self.optimizer, params={n: a.copy() for n, a in given.items()},
                                func_name=self.func_name, check_nan=False)
        except aj.Error:
            self.reach("trainer refused")  # weights of symbolic dims
            return
        got = np.asarray(trainer.step(*inputs, label), dtype=loss.dtype)
        after = {n: np.array(v) for n, v in trainer.params.items()}
        compare(got, loss, track, f"{where}: the Trainer's loss, against its step's")
        for n in layout.params:
            compare(after[n], new[n], track, f"{where}: weight {n!r} as the Trainer updates it, against its step")
        for n in layout.frozen:
            if not _same(after[n], given[n]):
                raise Finding("train-frozen", f"{where}: frozen weight {n!r} changed:\ngot  {after[n]!r}\n"
                                              f"was  {given[n]!r}", "frozen")
        self.reach("trainer compared")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def check_frozen(where: str, mod: aj.Module, out: aj.Module) -> None:
    """LiftTransformParams' frozen attr: the weights of each lifted f that
    read no trained weight, only frozen weights and constants, as its
    f_transform_params computes them (a value of constants alone, lifted for
    a dim only weights give, is not trained either: training f did not
    change it); no attr when there are none; num_input kept. ``out`` is
    the printed output parsed back (distinct names in each function)."""
    new = [n for n in out.functions if n not in mod]
    for f, fn in mod.functions.items():
        lifted = [n for n in new if re.fullmatch(re.escape(f) + r"_transform_params(_\d+)?", n)]
        if "num_input" not in fn.attrs or not lifted or f not in out:
            continue
        ni, tp, after = fn.attrs["num_input"], out[lifted[0]], out[f]
        if after.attrs.get("num_input") != ni:
            raise Finding("lift-attrs", f"{where}: {f!r} had num_input={ni}, now {after.attrs.get('num_input')}",
                          "num_input")
        frozen = set(fn.frozen)
        weights = [p.name_hint for p in fn.params[ni:]]
        if len(tp.params) != len(weights):
            raise Finding("lift-signature", f"{where}: {tp.name!r} takes {len(tp.params)} params for {len(weights)} "
                                            f"weights", "transform_params")
        deps: dict[str, Any] = {p.name_hint: {w} for p, w in zip(tp.params, weights)}
        for b in tp.bindings:
            deps[b.var.name_hint] = _deps(b.value, deps)
        fields = tp.ret.fields if isinstance(tp.ret, aj.Tuple) else [tp.ret]
        lifted_weights = [p.name_hint for p in after.params[ni:]]
        if len(fields) != len(lifted_weights) or len(set(lifted_weights)) != len(lifted_weights):
            raise Finding("lift-signature", f"{where}: {f!r} takes weights {lifted_weights}, {tp.name!r} returns "
                                            f"{len(fields)} values", "weights")
        want = []
        for name, value in zip(lifted_weights, fields):
            d = _deps(value, deps)
            if isinstance(d, list):
                continue  # a tuple: not a weight the executor takes
            if d <= frozen:  # frozen weights alone, or constants alone (zeros of a weight's dim): no trained weight
                want.append(name)
        got = list(after.frozen)
        if sorted(got) != sorted(want):
            raise Finding("lift-frozen", f"{where}: {f!r} as lifted has frozen={got}, want {want} (the weights "
                                         f"computed from frozen weights {sorted(frozen)} alone)\n--- output:\n"
                                         f"{out.script()}", "frozen")


def _deps(e: Any, deps: dict) -> Any:
    """The weights an expr reads: a set, or a list of sets for a tuple."""
    if isinstance(e, aj.Var):
        return deps.get(e.name_hint, set())
    if isinstance(e, aj.Constant):
        return set()
    if isinstance(e, aj.Tuple):
        return [_deps(f, deps) for f in e.fields]
    if isinstance(e, aj.TupleGetItem):
        d = _deps(e.tuple, deps)
        return d[e.index] if isinstance(d, list) and e.index < len(d) else _flat(d)
    if isinstance(e, aj.Call):
        out: set = set()
        for a in e.args:
            out |= _flat(_deps(a, deps))
        return out
    return set()


def _flat(d: Any) -> set:
    return set().union(*[_flat(x) for x in d]) if isinstance(d, list) else d


def base_name(adjoint: str) -> str:
    return adjoint[:-len("_adjoint")]


def _scalar_fields(t: aj.Type) -> list[int]:
    """The target indices that give a float scalar: 0 for a scalar result, the fields of a tuple that are."""
    if t.is_tensor:
        return [0] if t.shape == () and t.dtype.startswith("float") else []
    return [i for i, f in enumerate(t.fields) if f.is_tensor and f.shape == () and f.dtype.startswith("float")]


def _symbols(mod: aj.Module) -> list[str]:
    """The symbols of the dims of the module's params and bindings."""
    found: set[str] = set()

    def visit(t: aj.Type) -> None:
        if t.is_tuple:
            for f in t.fields:
                visit(f)
            return
        for d in t.shape:
            if isinstance(d, str):
                found.update(aj.Dim(d).symbols)

    for fn in mod.functions.values():
        for v in list(fn.params) + [b.var for b in fn.bindings]:
            visit(v.type)
    return sorted(found)


def _valid(text: str) -> aj.Module | None:
    """The module of a text that parses and verifies and has a function to
    pass over (a mutation may delete every one), else None."""
    try:
        mod = aj.parse(text)
        aj.analysis.verify(mod)
    except aj.Error:
        return None
    return mod if len(mod) else None


def _with_attrs(rng: random.Random, text: str, mod: aj.Module) -> tuple[str, aj.Module, str]:
    """A function given a random num_input and a frozen attr naming some of
    its weights (the text and module as they were when that does not verify)."""
    name = rng.choice(sorted(mod.functions))
    fn = mod[name]
    n = len(fn.params)
    ni = rng.randint(0, n)
    fn = fn.with_attr("num_input", ni)
    weights = [p.name_hint for p in fn.params[ni:]]
    frozen = rng.sample(weights, rng.randint(0, len(weights))) if weights and rng.random() < 0.6 else []
    if frozen:
        fn = fn.with_attr("frozen", ", ".join(frozen))
    elif "frozen" in fn.attrs:
        fn = fn.with_attr("frozen", "")
    try:
        new_text = mod.with_function(name, fn).script()
        again = _valid(new_text)
    except aj.Error:
        again = None
    if again is None:
        return text, mod, ""
    return new_text, again, f"attrs(num_input={ni}, frozen={len(frozen)})"


def _script(mod: aj.Module) -> str:
    try:
        return mod.script()
    except Exception as e:  # noqa: BLE001 (the module cannot print: say so)
        return f"<cannot print: {type(e).__name__}: {e}>"
