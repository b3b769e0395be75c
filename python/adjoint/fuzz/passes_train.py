"""The ``passes`` fuzz target's checks of training and of what LiftTransformParams
freezes: ``TrainCheck``, a pipeline entry that trains one step of a function
and of it lifted and holds them to each other and to a ``T.Trainer``, and
``check_frozen``, which holds LiftTransformParams' ``frozen`` attr to the
weights its transform_params computes from frozen weights alone. Together
because both read which weights a lifted value comes from (``_deps``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, Iterable

import numpy as np

import adjoint as aj
from adjoint import training as T
from adjoint.fuzz.exec import summarize
from adjoint.fuzz.inputs import COST_LIMIT, cost, small_inputs
from adjoint.fuzz.passes_compare import Track, _has_float32, compare, sensitive
from adjoint.fuzz.runner import Finding


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
    leaves its frozen weights as they were (weights of symbolic dims too: the
    given arrays bind them); a Trainer refusing what its step took is a
    finding. SetupTrainer refusing the function (no weights, ints, every
    weight frozen)
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
        self._train_lifted(mod, inputs, label, weights, loss, new, track, where)
        return mod

    def _train_lifted(self, mod: aj.Module, inputs: list, label: np.ndarray, weights: list, loss: np.ndarray,
                      new: dict, track: Track, where: str) -> None:
        """The step on the function as LiftTransformParams lifts it, its weights
        made by f_transform_params: the function's loss, and its update of a
        trained weight passed through as it is; then its Trainer."""
        f = self.func_name
        ni = mod[f].attrs["num_input"]
        lifted = aj.transform.LiftTransformParams()(mod)
        tps = sorted(transform_params_names(f, (n for n in lifted.functions if n not in mod)), key=len)
        if not tps:
            return
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
            return
        self.reach("trained lifted")
        compare(lloss, loss, track, f"{where}: the loss of the lifted function, against the function's")
        names = [p.name_hint for p in mod[f].params[ni:]]
        self._compare_passed_through(tp, names, lnames, new, lnew, track, where)
        self._trainer(lifted, inputs, label, lgiven, lloss, lnew, llayout, replace(track, rounding=False), where)

    def _compare_passed_through(self, tp: aj.Function, names: list, lnames: list, new: dict, lnew: dict,
                                track: Track, where: str) -> None:
        """A trained weight that f_transform_params ``tp`` returns as it is, and
        that nothing else it returns reads, gets the same update through the
        lifted function (its gradient is the same)."""
        fields, reads = _returned_deps(tp, names)
        readers: dict[str, int] = {}
        for d in reads:
            for w in _flat(d):
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
        types = [(p.name_hint, given[p.name_hint].shape, p.type.dtype)  # symbolic dims bound, as a Trainer binds them
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
        except aj.Error as e:
            raise Finding("train-refused", f"{where}: T.Trainer refused weights its step takes: {e}", "trainer") from e
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
        lifted = transform_params_names(f, new)
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
        fields, reads = _returned_deps(tp, weights)
        lifted_weights = [p.name_hint for p in after.params[ni:]]
        if len(fields) != len(lifted_weights) or len(set(lifted_weights)) != len(lifted_weights):
            raise Finding("lift-signature", f"{where}: {f!r} takes weights {lifted_weights}, {tp.name!r} returns "
                                            f"{len(fields)} values", "weights")
        want = []
        for name, d in zip(lifted_weights, reads):
            if isinstance(d, list):
                continue  # a tuple: not a weight the executor takes
            if d <= frozen:  # frozen weights alone, or constants alone (zeros of a weight's dim): no trained weight
                want.append(name)
        got = list(after.frozen)
        if sorted(got) != sorted(want):
            raise Finding("lift-frozen", f"{where}: {f!r} as lifted has frozen={got}, want {want} (the weights "
                                         f"computed from frozen weights {sorted(frozen)} alone)\n--- output:\n"
                                         f"{out.script()}", "frozen")


def transform_params_names(f: str, names: Iterable[str]) -> list[str]:
    """The names, of ``names`` and in their order, that LiftTransformParams
    gives a function it lifts out of ``f`` (f_transform_params, a number
    after it when that is taken)."""
    return [n for n in names if re.fullmatch(re.escape(f) + r"_transform_params(_\d+)?", n)]


def _returned_deps(tp: aj.Function, weights: list[str]) -> tuple[list, list]:
    """The values a transform_params function returns (a tuple's fields), and
    the weights each reads (as ``_deps``), its params being ``weights``."""
    deps: dict[str, Any] = {p.name_hint: {w} for p, w in zip(tp.params, weights)}
    for b in tp.bindings:
        deps[b.var.name_hint] = _deps(b.value, deps)
    fields = list(tp.ret.fields) if isinstance(tp.ret, aj.Tuple) else [tp.ret]
    return fields, [_deps(value, deps) for value in fields]


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
