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
``f_transform_params`` computes from frozen weights (and constants)
alone. When a function's params are small concrete shapes (symbols bound
to 1..3), it is built and run on random inputs before the
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

This module is the target the runner drives (``Fuzzer``: making input k,
running its pipeline, saving a reproducer); its parts are siblings:
``passes_corpus`` (the program texts), ``passes_pipeline`` (what an entry
may be and how it becomes a pass), ``passes_check`` (what each output must
be), ``passes_compare`` (running functions and comparing results) and
``passes_train`` (the Train check and LiftTransformParams' frozen attr).
"""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np

import adjoint as aj
from adjoint.fuzz import parse as fuzz_parse
from adjoint.fuzz.passes_check import check_output, check_results
from adjoint.fuzz.inputs import COST_LIMIT, cost, small_inputs
from adjoint.fuzz.passes_compare import Track, _has_float, sensitive
from adjoint.fuzz.passes_corpus import PASS_TEXTS
from adjoint.fuzz.passes_pipeline import CHECKS, LOOPING, OPTIMIZERS, PASSES, RULES, make_pass, pass_code, pass_names
from adjoint.fuzz.passes_train import TrainCheck
from adjoint.fuzz.runner import Finding, error_label

# what the runner reads, and TrainCheck, which the reproducers that save writes import from here
__all__ = ["LABELS", "REACHED", "Fuzzer", "TrainCheck"]

LABELS = ["ok", "ok, nothing run"]
REACHED = ["mutated", "attrs set", "pass ran", "pass refused", "verified", "round trip", "fixed point", "built",
           "compared", "compared after a dtype change", "lifted compared", "adjoint compared",
           "simplified gradient compared", "frozen checked", "rule rewrote", "trained", "trainer compared",
           "trained lifted", "train lifted refused", "trained weight compared", "train skipped"]

#: parse mutations that keep a text close to valid, with their weights
MUTATIONS = [("m_call", 30), ("m_attr", 8), ("m_line", 8), ("m_number", 6), ("m_string", 6), ("m_splice", 3),
             ("m_token", 4), ("m_shape", 2)]
MUTATION_TRIES = 12


# ---------------------------------------------------------------- the target


class Fuzzer:
    """The ``passes`` target as the runner drives it: input k made from
    (seed, k) alone, run, described and saved as a reproducer."""

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
            text, mod, mutations = self._mutated(rng, text, mod)
        if rng.random() < 0.3:
            text, mod, attrs = _with_attrs(rng, text, mod)
            if attrs:
                mutations.append(attrs)
        names = set(mod.functions)  # the functions as the pipeline goes (Gradient and LiftTransformParams add some)
        passes = [self._pass(rng, mod, names) for _ in range(rng.choices(range(1, 7), [20, 25, 20, 15, 10, 10])[0])]
        return {"base": base, "mutations": mutations, "text": text, "passes": passes}

    def _mutated(self, rng: random.Random, text: str, mod: aj.Module) -> tuple[str, aj.Module, list[str]]:
        """The text mutated by one or two of parse's MUTATIONS until it is valid,
        its module and the mutations' names (as it was, none, after MUTATION_TRIES)."""
        for _ in range(MUTATION_TRIES):
            new, names = text, []
            for _ in range(rng.choice([1, 1, 2])):
                mutate = getattr(self.parse, rng.choices([m for m, _ in MUTATIONS], [w for _, w in MUTATIONS])[0])
                new, name = mutate(rng, new)
                names.append(name)
            got = _valid(new)
            if got is not None:
                return new, got, names
        return text, mod, []

    def _pass(self, rng: random.Random, mod: aj.Module, names: set, nested: bool = False) -> dict:
        """A random pipeline entry, its options drawn for ``mod`` and the
        functions ``names`` the pipeline has by then (updated with those it adds)."""
        weights = {n: w for n, w in PASSES.items() if not (nested and n == "Sequential")}
        name = rng.choices(list(weights), list(weights.values()))[0]
        spec: dict[str, Any] = {"pass": name}
        if name == "Sequential":
            spec["passes"] = [self._pass(rng, mod, names, nested=True) for _ in range(rng.choice([1, 2]))]
        elif name == "Gradient":
            spec.update(_gradient_options(rng, mod, names))
            names.add(spec["func_name"] + "_adjoint")
        elif name == "ReassociateMatmul":
            spec["dim_bounds"] = _dim_bounds(rng, mod)
        elif name == "ConvertDType":
            dtype = rng.choice(["float32", "float64"])
            spec["dtype"] = dtype if rng.random() < 0.97 else "float16"
            spec["from_dtype"] = "float64" if dtype == "float32" else "float32"
        elif name == "CombineParallelMatmul":
            spec["check"] = rng.choices(list(CHECKS), [10, 2, 2, 1, 2, 2])[0]
        elif name == "LiftTransformParams":
            names |= {f + "_transform_params" for f in list(names) if f in mod and "num_input" in mod[f].attrs}
        elif name == "Rewriter":
            spec["rules"] = _rules(rng)
        elif name == "Train":
            spec.update(_train_options(rng, mod, names))
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
        """The input's pipeline run on its program, each output checked; the
        label of the first refusal (an aj.Error), else ok."""
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
            before = mod.script()
            try:
                out = make_pass(spec, reach)(mod)
            except aj.Error as e:  # the pass refused its options or the program
                reach("pass refused")
                label = label if label.startswith("aj.") else error_label(e)
                continue
            reach("pass ran")
            if mod.script() != before:
                raise Finding("input-changed", f"{where} changed its input module", spec["pass"])
            if not isinstance(out, aj.Module):
                raise Finding("not-a-module", f"{where} returned {type(out).__name__}", spec["pass"])
            check_output(spec, where, mod, out, reach)
            if tracks:
                tracks = check_results(spec, where, mod, out, tracks, reach)
            mod = out
        return label

    def _tracks(self, mod: aj.Module) -> dict[str, Track]:
        """The functions (of the first four) that build and run on small random
        inputs, with what they gave: the reference of the pipeline."""
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


def _gradient_options(rng: random.Random, mod: aj.Module, names: set) -> dict:
    """Gradient's options: mostly a function with a float scalar to
    differentiate, not differentiated yet; its target index; some of its
    vars as required grads, or None; ``simplify``."""
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
    return {"func_name": func, "require_grads": grads, "target_index": index, "simplify": rng.random() < 0.7}


def _dim_bounds(rng: random.Random, mod: aj.Module) -> dict | None:
    """ReassociateMatmul's dim_bounds: [low, high] of some of the module's symbols, or None."""
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
    return bounds


def _rules(rng: random.Random) -> list[str]:
    """A Rewriter's text rules: one or two, mostly of those that stop."""
    rules = rng.sample(sorted(RULES), rng.choice([1, 1, 2]))
    while any(set(loop) <= set(rules) for loop in LOOPING) and rng.random() < 0.9:
        rules = rng.sample(sorted(RULES), len(rules))
    return rules


def _train_options(rng: random.Random, mod: aj.Module, names: set) -> dict:
    """The Train check's options: mostly a function with weights (a num_input attr), an optimizer, a seed."""
    good = [f for f in sorted(names) if f in mod and "num_input" in mod[f].attrs]
    func = rng.choice(good) if good and rng.random() < 0.95 else rng.choice(sorted(names))
    return {"func_name": func, "optimizer": rng.choice(sorted(OPTIMIZERS)), "seed": rng.randrange(2**31)}


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
