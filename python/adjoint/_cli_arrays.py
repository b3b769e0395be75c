"""Arrays in and out of ``adjoint run``: the ``--inputs`` files (``NAME=X.npy``,
``.npz`` of arrays named after params, plain ``.npy`` for the params left,
in order) matched to a function's params, and its results printed or saved
as ``.npz``; and CommandError, the one-line failure every command reports."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import zipfile
from typing import Any, BinaryIO, Iterator

import numpy as np
from numpy.lib import format as npy_format

#: The file name that means stdin.
STDIN = "-"

#: Characters a name shows escaped, so that a line naming it stays one line:
#: C0 and C1 controls (a newline, a carriage return, ESC, ...), DEL and the
#: line and paragraph separators.
UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def stdin_bytes() -> bytes:
    """All of stdin; a CommandError naming ``<stdin>`` when it is closed (the
    shell's ``<&-``: Python then has no sys.stdin) or cannot be read."""
    if sys.stdin is None:
        raise CommandError(STDIN, "closed")
    try:
        return sys.stdin.buffer.read()
    except OSError as e:
        raise CommandError(STDIN, (e.strerror or str(e)).lower()) from e


def display_name(path: str) -> str:
    """How a message names ``path``: ``<stdin>`` for ``-``; else the name
    read as UTF-8 (whatever the file-system encoding Python read it with),
    with its control characters escaped as in Python (``\\n``, ``\\x1b``).
    The bytes that are not UTF-8 stay as surrogates, to be written as those
    bytes."""
    if path == STDIN:
        return "<stdin>"
    try:
        path = os.fsencode(path).decode("utf-8", "surrogateescape")
    except UnicodeError:
        pass
    return UNSHOWN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), path)


class CommandError(Exception):
    """A failure the command line reports as ``where: message``, exit status 1."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def load_inputs(specs: list[str], params: list[str]) -> list[np.ndarray]:
    """The arrays for ``params``, in order: ``NAME=X.npy`` fills the param
    ``NAME``, an ``.npz`` each param one of its arrays is named after, and
    the plain ``X.npy`` files, in the order given, the params left (in
    param order), wherever they stand among the others. Every param exactly
    once."""
    given: dict[str, np.ndarray] = {}
    plain: list[tuple[str, np.ndarray]] = []
    for spec in specs:
        name, path = split_spec(spec)
        loaded = load_file(path)
        if isinstance(loaded, dict):
            if name is not None:
                raise CommandError(spec, f"NAME=FILE takes a .npy file, and {display_name(path)} is an .npz: give it "
                                         f"without NAME= and its arrays fill the params they are named after")
            for key, array in loaded.items():
                put(given, key, array, params, f"{display_name(path)}[{key}]")
        elif name is None:
            plain.append((path, loaded))
        else:
            put(given, name, loaded, params, spec)
    fill_in_order(given, plain, params)
    missing = [p for p in params if p not in given]
    if missing:
        raise CommandError("--inputs", f"no input for param{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return [given[p] for p in params]


def fill_in_order(given: dict[str, np.ndarray], plain: list[tuple[str, np.ndarray]], params: list[str]) -> None:
    """Gives the plain files' arrays to the params not in ``given``, in order."""
    left = [p for p in params if p not in given]
    if len(plain) > len(left):
        path = plain[len(left)][0]
        if len(left) == len(params):
            raise CommandError(path, f"more inputs than the {len(params)} params ({', '.join(params)})")
        if not left:
            raise CommandError(path, f"no param is left for a plain file: NAME=FILE and .npz inputs give every "
                                     f"param ({', '.join(params)})")
        raise CommandError(path, f"more plain inputs than params left for them ({', '.join(left)}): plain files "
                                 f"fill, in order, the params no NAME=FILE or .npz gives")
    given.update((name, array) for name, (_, array) in zip(left, plain))


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


#: How .npy files and .npz (zip) archives begin: a zip's first entry, or the
#: end record that is all of an empty one (np.savez of no arrays, as run -o
#: writes for a function returning an empty tuple).
NPY_MAGIC, ZIP_MAGIC, EMPTY_ZIP_MAGIC = b"\x93NUMPY", b"PK\x03\x04", b"PK\x05\x06"
ARRAY_MAGICS = (NPY_MAGIC, ZIP_MAGIC, EMPTY_ZIP_MAGIC)


def load_file(path: str) -> np.ndarray | dict[str, np.ndarray]:
    """An array (``.npy``) or {name: array} (``.npz``) from the file at
    ``path``, or stdin for ``-``; never unpickles, and never allocates an
    array larger than the bytes that hold it (a header declaring more is an
    error before any allocation)."""
    try:
        with seekable_input(path) as (f, size):
            start = f.read(6)
            if not start.startswith(ARRAY_MAGICS):
                raise CommandError(path, "not a .npy or .npz file")
            f.seek(0)
            if start.startswith(NPY_MAGIC):
                check_npy_size(f, size, "")
            else:
                check_npz_sizes(f)
            f.seek(0)
            loaded = np.load(f, allow_pickle=False)
            if isinstance(loaded, np.lib.npyio.NpzFile):
                with loaded:
                    return npz_arrays(loaded)
            return loaded
    except FileNotFoundError as e:
        raise CommandError(path, "no such file") from e
    except OSError as e:
        if e.strerror is None:
            raise CommandError(path, f"cannot load a .npy or .npz array: {e}") from e
        raise CommandError(path, e.strerror.lower()) from e
    # RuntimeError: zipfile's for an encrypted entry or an unknown compression method
    except (ValueError, EOFError, zipfile.BadZipFile, MemoryError, RuntimeError) as e:
        raise CommandError(path, f"cannot load a .npy or .npz array: {e}") from e


@contextlib.contextmanager
def seekable_input(path: str) -> Iterator[tuple[BinaryIO, int]]:
    """The file at ``path`` open for reading, and its size: the file itself
    when it can seek (a .npz is read by seeking), else (``-`` for stdin, a
    pipe, a process substitution) all of its bytes, read into memory."""
    if path == STDIN:
        data = stdin_bytes()
        yield io.BytesIO(data), len(data)
        return
    with open(path, "rb") as f:
        if f.seekable():
            yield f, os.fstat(f.fileno()).st_size
        else:
            data = f.read()
            yield io.BytesIO(data), len(data)


def npz_arrays(archive: np.lib.npyio.NpzFile) -> dict[str, np.ndarray]:
    """{name: array} of an .npz; an entry that is not a .npy (np.load gives
    its raw bytes) is a ValueError naming it."""
    arrays = {key: archive[key] for key in archive.files}
    for key, value in arrays.items():
        if not isinstance(value, np.ndarray):
            raise ValueError(f"entry {key!r} is not a .npy array")
    return arrays


def check_npy_size(stream: BinaryIO, size: int, where: str) -> None:
    """A ValueError when the array the .npy header at the start of ``stream``
    declares takes more bytes than follow the header in ``size``."""
    version = npy_format.read_magic(stream)
    read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    shape, _, dtype = read_header(stream)
    need, have = math.prod(shape) * dtype.itemsize, size - stream.tell()
    if need > have:
        raise ValueError(f"{where}its header declares shape {shape} of {dtype} ({need:,} bytes), "
                         f"but {have:,} bytes follow the header")


def check_npz_sizes(f: BinaryIO) -> None:
    """check_npy_size of each .npy in the zip archive ``f``, by the size its
    entry declares (other members are left to np.load). By name, as np.load
    reads them: of two entries of one name, the last."""
    with zipfile.ZipFile(f) as archive:
        for name in dict.fromkeys(archive.namelist()):
            with archive.open(name) as member:
                if member.read(6) == NPY_MAGIC:
                    member.seek(0)
                    check_npy_size(member, archive.getinfo(name).file_size, f"{name}: ")


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
    """An ``.npz`` at ``path`` (as given: no suffix added) with the arrays of
    ``flat_results``; a failure to write it is a CommandError naming ``path``."""
    try:
        with open(path, "wb") as f:
            np.savez(f, **dict(flat_results(result)))
    except OSError as e:
        raise CommandError(path, (e.strerror or str(e)).lower()) from e
