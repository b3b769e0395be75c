"""The checks of the training API's arguments: each gives the checked value
or raises the ``aj.Error`` subclass its caller names, with a message naming
the caller and the argument. A Python int too large for a float is a number
that is not finite.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..errors import Error, OutOfMemoryError

_NUMBER_TYPES = (int, float, np.integer, np.floating)
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
_SHOWN_INT_BITS = 128  # a longer int is described, not printed (Python refuses to print one of 4300 digits)
_SHOWN_CHARS = 200  # a longer repr is cut


def _as_float(value: Any) -> float | None:
    """``value`` as a float when it is a real number (Python's or NumPy's,
    not a bool), an int beyond float's range as +-inf; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, _NUMBER_TYPES):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def checked_number(who: str, what: str, value: Any, error: type[Error] = Error, *, low: float | None = None,
                   high: float | None = None, low_open: bool = False, high_open: bool = False,
                   alternatives: str = "") -> float:
    """``value`` as a finite float in the interval from ``low`` to ``high``
    (either end open); else ``error`` naming ``who`` and ``what``.
    ``alternatives`` (such as "None or ") lists what else the caller takes."""
    number = _as_float(value)
    above = number is not None and (low is None or (number > low if low_open else number >= low))
    below = number is not None and (high is None or (number < high if high_open else number <= high))
    if number is None or not math.isfinite(number) or not (above and below):
        kind = _number_kind(low, high, low_open, high_open)
        raise error(f"{who}: {what} must be {alternatives}{kind}, got {shown(value)}")
    return number


def _number_kind(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return "a finite number"


def checked_int(who: str, what: str, value: Any, error: type[Error] = Error, *, low: int | None = None,
                high: int | None = None) -> int:
    """``value`` as an int (Python's or NumPy's, not a bool) from ``low`` to
    ``high``; else ``error`` naming ``who`` and ``what``."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not whole or (low is not None and value < low) or (high is not None and value > high):
        raise error(f"{who}: {what} must be {_int_kind(low, high)}, got {shown(value)}")
    return int(value)


def _int_kind(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"an int from {low} to {high}"
    if low is not None:
        return f"an int >= {low}"
    return "an int" if high is None else f"an int <= {high}"


def checked_flag(who: str, what: str, value: Any, error: type[Error] = Error) -> bool:
    """``value``, True or False (Python's or NumPy's), as a bool; else
    ``error`` naming ``who`` and ``what`` (a truthy "no" or 2 is a mistake)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{who}: {what} must be True or False, got {shown(value)}")
    return bool(value)


def checked_shape(who: str, what: str, shape: Any, error: type[Error] = Error) -> tuple:
    """``shape`` as a tuple of ints from 0 to 2**63 - 1 (Python's or NumPy's,
    not bools) and symbol names; else ``error`` saying ``who``: ``what`` has it."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else None
    if dims is None or not all(isinstance(d, str) or _is_dim(d) for d in dims):
        raise error(f"{who}: {what} has shape {shown(shape)}; a shape is a tuple of ints >= 0 and symbol names")
    return tuple(d if isinstance(d, str) else int(d) for d in dims)


def _is_dim(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


def try_array(value: Any) -> np.ndarray | None:
    """``np.asarray(value)``, or None when NumPy makes no array of it (nested
    sequences of different lengths)."""
    try:
        return np.asarray(value)
    except ValueError:
        return None


def as_array(who: str, what: str, value: Any, error: type[Error] = Error) -> np.ndarray:
    """``np.asarray(value)``; else ``error`` naming ``who`` and ``what``."""
    array = try_array(value)
    if array is None:
        raise error(f"{who}: {what} must be an array (nested sequences of one length at each level), "
                    f"got {shown(value)}")
    return array


def allocated(who: str, what: str, shape: tuple, dtype: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()``, a new array of ``shape`` and ``dtype``; NumPy's failure to
    allocate it (a MemoryError, or a ValueError for a byte size past its
    limit) is an ``aj.OutOfMemoryError`` naming ``who`` and ``what``."""
    try:
        return make()
    except (MemoryError, ValueError) as e:
        raise OutOfMemoryError(f"{who}: {what} of shape {shape} {np.dtype(dtype).name} cannot be allocated "
                               f"({e})") from None


def shown(value: Any) -> str:
    """``value`` for a message: its repr, cut when long, or a description of a long int."""
    if isinstance(value, int) and value.bit_length() > _SHOWN_INT_BITS:
        return f"{'a negative' if value < 0 else 'an'} int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} holding an int too long to print"
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}..."
