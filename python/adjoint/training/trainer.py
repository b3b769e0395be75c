"""Trainer: a model, a loss and an optimizer compiled into one step function
whose params and optimizer state stay in place between steps.

The step function of ``train_step`` is built once with every param and state
input donated to its new value (``ExecFunction.donating``), so each step
writes the new values over the old buffers: no allocation per step for them,
``trainer.params`` are live read-only views, and a step that raises leaves
them as they were (the executor defers any write that could precede a
failure). Schedules need no rebuild: the learning rate is a run-time input.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .._casts import changed_value
from .._core import Dim
from ..errors import Error, ExecutionError
from ..ir import Module
from ..runtime import build
from ._checks import INT64_MAX, as_array, checked_flag, checked_int, checked_number, shown, try_array
from .append_loss import loss_name
from .init import checked_seed, init_params
from .step import SetupTrainer, checked_frozen, frozen_weights


class Trainer:
    """Trains ``mod[func_name]`` (inputs, then weights past ``num_input``)
    on ``loss`` (one of ``adjoint.training``'s losses, or a callable with
    ``label_types``) with ``optimizer`` (``T.SGD(lr=0.1)``, ``T.AdamW(...)``).

    ``params`` maps weight names to initial values (arrays of the weight's
    shape; a float dtype is converted); weights left out are initialized by
    ``init_params``. ``frozen`` names weights the step reads but does not
    train (no gradient, no update, no optimizer state); None, the default,
    means the weights the function's ``frozen`` attr lists (``aj.from_torch``
    lists a module's persistent buffers, such as a BatchNorm's running
    statistics), and () trains every weight. ``check_nan`` makes ``step``
    and ``fit`` raise an ``aj.ExecutionError`` naming the step whose loss is
    not finite.
    ``num_backbone_outputs`` and ``labels`` are AppendLoss's.
    """

    def __init__(self, mod: Module, loss: Callable[..., Any], optimizer: Any,
                 params: Mapping[str, Any] | None = None, *, func_name: str = "main",
                 num_backbone_outputs: int = 1, labels: Sequence[tuple] | None = None,
                 check_nan: bool = True, seed: int = 0, frozen: Iterable[str] | None = None) -> None:
        if not isinstance(mod, Module):
            raise Error(f"Trainer: expected an aj.Module, got {type(mod).__name__}")
        if params is not None and not isinstance(params, Mapping):
            raise Error(f"Trainer: params must map weight names to arrays (a dict), got {type(params).__name__}")
        seed = checked_seed("Trainer", seed)
        self.optimizer = optimizer
        self.check_nan = checked_flag("Trainer", "check_nan", check_nan)
        self._loss_name = loss_name(loss)
        self._func_name = func_name
        frozen = checked_frozen("Trainer", frozen)
        if func_name in mod:
            frozen = frozen_weights("Trainer", mod[func_name], func_name, frozen)
        setup = SetupTrainer.called_from("Trainer", loss, optimizer, func_name, num_backbone_outputs, labels=labels,
                                         frozen=frozen)
        self.module, self.layout = setup.with_layout(mod)
        self._exe = build(Module({func_name: self.module[func_name], "step": self.module["step"]}))
        step_fn = self.module["step"]
        self._param_types = [(p.name_hint, tuple(p.type.shape), p.type.dtype)
                             for p in step_fn.params[self.layout.param_index:self.layout.frozen_index]]
        self._frozen_types = [(p.name_hint, tuple(p.type.shape), p.type.dtype)
                              for p in step_fn.params[self.layout.frozen_index:self.layout.state_index]]
        model = self.module[func_name]
        self._weight_names = tuple(p.name_hint for p in model.params[model.attrs["num_input"]:])
        self._lr_dtype = np.dtype(step_fn.params[self.layout.lr_index].type.dtype)
        weights = self._initial_params(params, seed)
        # the initial values bind the weights' symbolic dims: state and checkpoints take their shapes
        self._param_types = [(n, weights[n].shape, d) for n, _, d in self._param_types]
        self._frozen_types = [(n, weights[n].shape, d) for n, _, d in self._frozen_types]
        self._params = [weights[name] for name, _, _ in self._param_types]
        self._frozen = [weights[name] for name, _, _ in self._frozen_types]
        self._state = [np.array(s, order="C") for s in optimizer.init_state(self._param_types)]
        self._step = self._exe["step"].donating(self._donations())
        self._count = 0
        self._lr_override: float | None = None

    # ---- what the trainer holds ----

    @property
    def params(self) -> Mapping[str, np.ndarray]:
        """The current weights by name, in the model's order, frozen ones
        too: read-only views of the buffers the steps update in place (so
        they follow training; copy to keep one)."""
        return _ReadOnlyViews(self._weights())

    @property
    def step_function(self) -> Any:
        """The compiled, donating ``step`` this trainer runs: its
        ``donations`` (which updates are written straight in) and
        ``last_run_stats`` (allocations and copies of the last step)."""
        return self._step

    @property
    def step_count(self) -> int:
        """How many steps have been taken (what a schedule is called with)."""
        return self._count

    @property
    def lr(self) -> float:
        """The learning rate of the next step: the optimizer's (its schedule
        at ``step_count``) unless set here; ``trainer.lr = None`` returns to it."""
        return self._lr_override if self._lr_override is not None else float(self.optimizer.lr_at(self._count))

    @lr.setter
    def lr(self, value: float | None) -> None:
        self._lr_override = None if value is None else _checked_lr("Trainer", value, "None (the optimizer's) or ")

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of the weights by name, then of the optimizer state by its
        names (``"w.exp_avg"``, ``"step"``), plus ``"step"`` (the step count)
        when the optimizer keeps none; ``np.savez(path, **trainer.state_dict())``
        saves it."""
        self._checkpoint_names("Trainer.state_dict")
        out = {n: a.copy() for n, a in self._weights().items()}
        out.update({n: a.copy() for n, a in zip(self.layout.state, self._state)})
        out.setdefault("step", np.array(self._count, dtype=np.int64))
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Loads what ``state_dict`` gave (or ``np.load`` of its savez file):
        every name must be there with its shape, and nothing else; all is
        checked before anything is written."""
        who = "Trainer.load_state_dict"
        if not isinstance(state, Mapping):
            raise Error(f"{who}: expected a mapping of names to arrays (what state_dict gives), "
                        f"got {type(state).__name__}")
        expected = self._checkpoint_names(who)[:len(self._weight_names) + len(self._state)]
        names = set(state.keys())
        missing = [n for n in expected if n not in names]
        extra = sorted(map(str, names - set(expected) - {"step"}))
        if missing or extra:
            what = f"missing {missing[0]!r}" if missing else f"unexpected {extra[0]!r}"
            raise Error(f"{who}: {what} (expected {', '.join(expected)})")
        targets = list(self._weights().values()) + self._state
        arrays = [_checked_array(state[n], t, who, f"'{n}'") for n, t in zip(expected, targets)]
        count = _checked_count(state["step"], who) if "step" in names else self._count
        values = [_cast(a, t, who, f"'{n}'") for a, n, t in zip(arrays, expected, targets)]
        for target, value in zip(targets, values):
            np.copyto(target, value)
        self._count = count

    # ---- training ----

    def step(self, *batch: Any, lr: float | None = None) -> float:
        """One training step on ``batch`` (the model's inputs, then the labels):
        the loss before the update, as a float."""
        n_in, n_lab = len(self.layout.inputs), len(self.layout.labels)
        if len(batch) != n_in + n_lab:
            names = ", ".join(self.layout.inputs + self.layout.labels)
            raise ExecutionError(f"Trainer.step takes {n_in + n_lab} arrays ({names}), got {len(batch)}")
        rate = self.lr if lr is None else _checked_lr("Trainer.step", lr)
        arrays = self._inputs(batch, "Trainer.step")
        self._check_labels(arrays)
        args = [*arrays, *self._params, *self._frozen, *self._state, np.asarray(rate, dtype=self._lr_dtype)]
        try:
            out = self._step(*args)
        except ExecutionError as e:
            raise self._explained(e) from None
        loss = float(out[0])
        self._count += 1
        if self.check_nan and not math.isfinite(loss):
            raise ExecutionError(f"Trainer: the loss of step {self._count} is {loss} (the params hold that "
                                 f"step's update); Trainer(..., check_nan=False) trains on")
        return loss

    def fit(self, batches: Iterable[Any] | Callable[[], Iterable[Any]], epochs: int = 1,
            progress: bool = False) -> list[float]:
        """Steps over every batch ``(inputs..., labels...)`` of ``batches``
        ``epochs`` times and returns the losses. ``batches`` is re-iterable (a
        list) or a callable returning the batches of one epoch (to shuffle);
        ``progress`` shows a tqdm bar with the running loss."""
        checked_int("Trainer.fit", "epochs", epochs, low=0)
        if not callable(batches) and not isinstance(batches, Iterable):
            raise Error(f"Trainer.fit: batches must be an iterable of batches or a callable returning one epoch's, "
                        f"got {type(batches).__name__}")
        if epochs > 1 and not callable(batches) and iter(batches) is batches:  # type: ignore[arg-type]
            raise Error("Trainer.fit: batches is an iterator, which one epoch uses up; pass a list or a callable "
                        "returning the batches of an epoch")
        bar = _progress_bar(checked_flag("Trainer.fit", "progress", progress))
        losses: list[float] = []
        for epoch in range(epochs):
            epoch_batches = batches() if callable(batches) else batches
            if not isinstance(epoch_batches, Iterable):
                raise Error(f"Trainer.fit: batches() must return an iterable of batches, "
                            f"got {type(epoch_batches).__name__}")
            shown = bar(epoch_batches, desc=f"epoch {epoch + 1}/{epochs}") if bar else epoch_batches
            for batch in shown:
                losses.append(self.step(*batch) if isinstance(batch, (tuple, list)) else self.step(batch))
                if bar:
                    shown.set_postfix(loss=f"{losses[-1]:.4g}")
        return losses

    def predict(self, *inputs: Any) -> Any:
        """The model's outputs for ``inputs`` with the current weights."""
        n_in = len(self.layout.inputs)
        if len(inputs) != n_in:
            raise ExecutionError(f"Trainer.predict takes {n_in} array(s) ({', '.join(self.layout.inputs)}), "
                                 f"got {len(inputs)}")
        return self._exe[self._func_name](*self._inputs(inputs, "Trainer.predict"), *self._weights().values())

    def __repr__(self) -> str:
        sizes = sum(int(np.prod(shape)) for _, shape, _ in self._param_types)
        frozen = f" and {len(self._frozen)} frozen" if self._frozen else ""
        return (f"Trainer({self._func_name}: {len(self._params)} weights ({sizes:,} values){frozen}, loss "
                f"{self._loss_name}, {self.optimizer!r}, step {self._count})")

    # ---- helpers ----

    def _weights(self) -> dict[str, np.ndarray]:
        """Every weight's buffer by name, in the model's order (trained and frozen)."""
        by_name = dict(zip(self.layout.params + self.layout.frozen, self._params + self._frozen))
        return {name: by_name[name] for name in self._weight_names}

    def _checkpoint_names(self, who: str) -> list[str]:
        """The names of state_dict's entries: weights, optimizer state, then
        the trainer's "step" unless the optimizer counts steps itself; an
        error when a weight's name is also another entry's."""
        names = list(self._weight_names) + list(self.layout.state)
        names += [] if "step" in self.layout.state else ["step"]
        for name in self._weight_names:
            if names.count(name) > 1:
                raise Error(f"{who}: the weight '{name}' has the name of another entry of the state dict (the "
                            f"optimizer state and the step count are saved beside the weights); rename the weight")
        return names

    def _donations(self) -> dict[int, int]:
        first_param, first_state = self.layout.param_index, self.layout.state_index
        n_params = len(self.layout.params)
        pairs = {first_param + i: 1 + i for i in range(n_params)}
        pairs.update({first_state + j: 1 + n_params + j for j in range(len(self.layout.state))})
        return pairs

    def _initial_params(self, given: Mapping[str, Any] | None, seed: int) -> dict[str, np.ndarray]:
        given = dict(given or {})
        names = list(self._weight_names)
        unknown = sorted(set(given) - set(names), key=shown)
        if unknown:
            raise Error(f"Trainer: params has {shown(unknown[0])}, which is not a weight of '{self._func_name}' "
                        f"(its weights: {', '.join(names)})")
        initial = init_params(self.module[self._func_name], seed=seed, skip=set(given))
        types = self._param_types + self._frozen_types
        arrays = {name: as_array("Trainer", f"param '{name}'", given[name] if name in given else initial[name])
                  for name, _, _ in types}
        env = _bound_symbols(types, arrays)
        out = {}
        for name, shape, dtype in types:
            out[name] = _as_value(arrays[name], _Spec(_concrete(shape, env), dtype), "Trainer", f"param '{name}'")
        return out

    def _inputs(self, arrays: Iterable[Any], who: str) -> list[np.ndarray]:
        step_fn = self.module["step"]
        out = []
        for value, p in zip(arrays, step_fn.params):
            a = as_array(who, f"'{p.name_hint}'", value, ExecutionError)
            want = np.dtype(p.type.dtype)
            if a.dtype != want and np.can_cast(a.dtype, want, "same_kind"):
                a, changed = changed_value(a, want)
                if changed is not None:  # 1e40 into float32, 2**40 into int32: no longer the value given
                    raise ExecutionError(f"{who}: '{p.name_hint}' holds {changed!r}, which {want.name} (its "
                                         f"param's dtype) does not hold (a cast would change it)")
            out.append(a)
        return out

    def _check_labels(self, arrays: list[np.ndarray]) -> None:
        """Each label array against its param: an error naming the loss and both shapes."""
        params = self.module["step"].params
        symbols: dict[str, int] = {}
        for a, p in zip(arrays, params[:len(self.layout.inputs)]):
            for d, n in zip(p.type.shape, a.shape):
                if isinstance(d, str):
                    symbols.setdefault(d, n)
        for i, name in enumerate(self.layout.labels):
            a, t = arrays[len(self.layout.inputs) + i], params[len(self.layout.inputs) + i].type
            want = tuple(symbols.get(d, d) if isinstance(d, str) else d for d in t.shape)
            fits = a.ndim == len(want) and all(isinstance(w, str) or w == n for w, n in zip(want, a.shape))
            if not fits or a.dtype != np.dtype(t.dtype):
                raise ExecutionError(f"{self._loss_name}: label '{name}' has shape {a.shape} and dtype {a.dtype}, "
                                     f"expected shape {want} and dtype {t.dtype}")

    def _explained(self, error: ExecutionError) -> ExecutionError:
        """An executor error about a label param, prefixed with the loss's name."""
        text = str(error)
        for label in self.layout.labels:
            if f"param '{label}'" in text:
                return ExecutionError(f"{self._loss_name}: labels: {text}")
        return error


def _checked_lr(who: str, value: Any, alternatives: str = "") -> float:
    return checked_number(who, "lr", value, low=0.0, alternatives=alternatives)


def _checked_count(value: Any, who: str) -> int:
    """A saved step count: a whole number from 0 to 2**63 - 1 (the int64 of
    an optimizer's step), as a scalar or 0-d array."""
    a = try_array(value)
    count = _whole(a) if a is not None and a.ndim == 0 else None
    if count is None or not 0 <= count <= INT64_MAX:
        raise Error(f"{who}: 'step' must be a whole number >= 0 (the step count, below 2**63), got {shown(value)}")
    return count


def _whole(a: np.ndarray) -> int | None:
    """A 0-d int array's value, or a float one's when finite and whole; else None."""
    if a.dtype.kind in "iu":
        return int(a)
    if a.dtype.kind == "f" and np.isfinite(a) and float(a).is_integer():
        return int(a)
    return None


def _bound_symbols(types: list, arrays: Mapping[str, np.ndarray]) -> dict[str, int]:
    """The value of each symbol a weight's dim is alone ("n" of ("n", 4)),
    from the initial arrays; an error naming both weights when two disagree."""
    env: dict[str, int] = {}
    first: dict[str, str] = {}
    for name, shape, _ in types:
        a = arrays[name]
        if a.ndim != len(shape):
            continue  # _as_value names the shape
        for d, n in zip(shape, a.shape):
            if not isinstance(d, str) or Dim(d).symbols != [d]:
                continue
            if d in env and env[d] != n:
                raise Error(f"Trainer: param '{name}' has shape {a.shape}, giving its dim '{d}' the value {n}, "
                            f"but param '{first[d]}' gave {d} = {env[d]}")
            env.setdefault(d, n)
            first.setdefault(d, name)
    return env


def _concrete(shape: tuple, env: Mapping[str, int]) -> tuple:
    """``shape`` with each symbolic dim whose symbols ``env`` binds evaluated."""
    return tuple(Dim(d).evaluate(env) if isinstance(d, str) and set(Dim(d).symbols) <= env.keys() else d
                 for d in shape)


class _Spec:
    def __init__(self, shape: tuple, dtype: str) -> None:
        self.shape, self.dtype = shape, np.dtype(dtype)


def _as_value(value: Any, like: Any, who: str, what: str) -> np.ndarray:
    """``value`` as a new C-contiguous array of ``like``'s shape and dtype
    (a symbolic dim left in the shape, such as "n**2" when no weight gives n
    alone, takes any size: the step's executor binds and checks it)."""
    return _cast(_checked_array(value, like, who, what), like, who, what)


def _checked_array(value: Any, like: Any, who: str, what: str) -> np.ndarray:
    """``value`` as an array of ``like``'s shape and of a dtype that casts to
    ``like``'s under NumPy's same_kind rule; an ``aj.Error`` naming ``what`` else."""
    a = as_array(who, what, value)
    shape = tuple(like.shape)
    if a.ndim != len(shape) or any(not isinstance(d, str) and d != n for d, n in zip(shape, a.shape)):
        raise Error(f"{who}: {what} has shape {a.shape}, expected {shape}")
    if a.dtype != like.dtype and not np.can_cast(a.dtype, like.dtype, "same_kind"):
        raise Error(f"{who}: {what} has dtype {a.dtype}, expected {like.dtype}")
    return a


def _cast(a: np.ndarray, like: Any, who: str, what: str) -> np.ndarray:
    """A new C-contiguous copy of ``a`` in ``like``'s dtype; an ``aj.Error``
    naming ``what`` when the cast would change a value (1e40 into float32)."""
    if a.dtype != like.dtype:
        a, changed = changed_value(a, like.dtype)
        if changed is not None:
            raise Error(f"{who}: {what} holds {changed!r}, which {like.dtype.name} does not (a cast would change it)")
    return np.array(a, dtype=like.dtype, order="C", copy=True)


class _ReadOnlyViews(Mapping[str, np.ndarray]):
    """Name -> read-only view of a live buffer."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays

    def __getitem__(self, name: str) -> np.ndarray:
        view = self._arrays[name].view()
        view.flags.writeable = False
        return view

    def __iter__(self):  # type: ignore[override]
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{n!r}: array{a.shape} {a.dtype}" for n, a in self._arrays.items()) + "}"


def _progress_bar(progress: bool) -> Any:
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise Error("Trainer.fit(progress=True) needs tqdm: pip install tqdm") from None
    return tqdm
