"""Arrays in and out of ``adjoint run``: the ``--inputs`` files (``.npy`` in
param order, ``NAME=X.npy``, ``.npz`` of arrays named after params) matched to
a function's params, and its results printed or saved as ``.npz``; and
CommandError, the one-line failure every command reports."""

from __future__ import annotations

import zipfile
from typing import Any

import numpy as np


class CommandError(Exception):
    """A failure the command line reports as ``where: message``, exit status 1."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def load_inputs(specs: list[str], params: list[str]) -> list[np.ndarray]:
    """The arrays for ``params``, in order: each plain ``X.npy`` fills the next
    param from the first, ``NAME=X.npy`` the param ``NAME``, and an ``.npz``
    each param one of its arrays is named after. Every param exactly once."""
    given: dict[str, np.ndarray] = {}
    positional = 0
    for spec in specs:
        name, path = split_spec(spec)
        loaded = load_file(path)
        if isinstance(loaded, dict):
            if name is not None:
                raise CommandError(spec, f"NAME=FILE takes a .npy file, {path} holds several arrays")
            for key, array in loaded.items():
                put(given, key, array, params, f"{path}[{key}]")
            continue
        if name is None:
            if positional >= len(params):
                raise CommandError(path, f"more inputs than the {len(params)} params ({', '.join(params)})")
            name = params[positional]
            positional += 1
        put(given, name, loaded, params, spec)
    missing = [p for p in params if p not in given]
    if missing:
        raise CommandError("--inputs", f"no input for param{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return [given[p] for p in params]


def split_spec(spec: str) -> tuple[str | None, str]:
    """``NAME=PATH`` -> (NAME, PATH); a path without a leading identifier and ``=`` -> (None, spec)."""
    name, eq, path = spec.partition("=")
    return (name, path) if eq and name.isidentifier() else (None, spec)


def put(given: dict[str, np.ndarray], name: str, array: np.ndarray, params: list[str], origin: str) -> None:
    if name not in params:
        raise CommandError(origin, f"the function has no param {name!r} (params: {', '.join(params)})")
    if name in given:
        raise CommandError(origin, f"param {name!r} is given twice")
    given[name] = array


#: How .npy files and .npz (zip) archives begin.
MAGICS = (b"\x93NUMPY", b"PK\x03\x04")


def load_file(path: str) -> np.ndarray | dict[str, np.ndarray]:
    """An array (``.npy``) or {name: array} (``.npz``); never unpickles."""
    try:
        with open(path, "rb") as f:
            if not f.read(6).startswith(MAGICS):
                raise CommandError(path, "not a .npy or .npz file")
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                return {key: loaded[key] for key in loaded.files}
        return loaded
    except FileNotFoundError as e:
        raise CommandError(path, "no such file") from e
    except OSError as e:
        if e.strerror is None:
            raise CommandError(path, f"cannot load a .npy or .npz array: {e}") from e
        raise CommandError(path, e.strerror.lower()) from e
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        raise CommandError(path, f"cannot load a .npy or .npz array: {e}") from e


def flat_results(result: Any, name: str = "result") -> list[tuple[str, np.ndarray]]:
    """(name, array) for each tensor of a result: ``result``, or ``result_0``,
    ``result_1_0``, ... through nested tuples."""
    if isinstance(result, tuple):
        return [item for i, field in enumerate(result) for item in flat_results(field, f"{name}_{i}")]
    return [(name, np.asarray(result))]


def format_results(result: Any) -> str:
    """Each tensor as ``name: shape (...), dtype`` followed by NumPy's printing of it."""
    blocks = [f"{name}: shape {array.shape}, {array.dtype}\n{np.array2string(array)}\n"
              for name, array in flat_results(result)]
    return "".join(blocks)


def save_results(result: Any, path: str) -> None:
    """An ``.npz`` at ``path`` (as given: no suffix added) with the arrays of ``flat_results``."""
    with open(path, "wb") as f:
        np.savez(f, **dict(flat_results(result)))
