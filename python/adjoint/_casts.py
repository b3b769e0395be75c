"""Casts that change no value: a value NumPy reads as one dtype converted to
another only when every number survives (a float may round to float32),
shared by the executor (an argument that is not a NumPy array),
``aj.Constant`` with a dtype, ``aj.from_torch_state``, the Trainer and the
exec fuzzer's judge of which calls are valid."""

from __future__ import annotations

from typing import Any

import numpy as np

_SHOWN_CHARS = 40  # a longer repr of a value is cut


def changed_value(array: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, Any]:
    """``array`` cast to ``dtype``, and the first value the cast changes (or
    None): a NaN, infinity or fraction into an int dtype or bool, a number
    past its range (2**40 into int32, 1e40 into float32), a number other
    than 0 and 1 into bool. A float rounded to a narrower float is not a
    change. ``array`` holds numbers (its dtype's kind is one of "biuf")."""
    if array.dtype == dtype or not array.size:
        return array.astype(dtype), None
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # a finite number past the dtype's range: inf, found below
            cast = array.astype(dtype)
        bad = np.isfinite(array) & ~np.isfinite(cast)
    else:
        low, high = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if array.dtype.kind == "f":  # float(2**63 - 1) is 2**63: compare with high + 1, exact as a float
            bad = ~np.isfinite(array) | (array != np.trunc(array)) | (array < float(low)) | (array >= float(high) + 1)
        else:
            bad = (array < low) | (array > high)
        with np.errstate(invalid="ignore"):  # NaN into an int: found above
            cast = array.astype(dtype)
    return cast, (array[bad].flat[0].item() if bad.any() else None)


def param_array(value: Any, dtype: str) -> np.ndarray | str:
    """A value given to the executor for a param of ``dtype`` that is not a
    NumPy array (a Python or NumPy scalar, nested lists, an object with
    ``__array__``) as a C-contiguous array of that dtype, read as NumPy reads
    it (``np.asarray``) and cast when the cast changes no value; else why
    not, for the caller's error message."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError) as e:  # ragged lists, an __array__ that fails
        return f"NumPy cannot read it as an array ({type(e).__name__}: {e})"
    if array.dtype.kind == "O" and all(_is_int(v) for v in array.flat):
        array, changed = _wide_ints(array, np.dtype(dtype))  # ints past int64 and uint64
        if changed is not None:
            return f"it holds {_short(changed)}, which {dtype} does not (a cast would change it)"
    if array.dtype.kind == "c" and array.size:
        return (f"it holds {_short(array.flat[0])}, a complex number, which {dtype} does not "
                f"(NumPy reads it as dtype {array.dtype})")
    if array.dtype.kind not in "biuf":
        what = f"{_short(array.flat[0])}, which is not a number" if array.size else "no numbers"
        return f"it holds {what} (NumPy reads it as dtype {array.dtype})"
    cast, changed = changed_value(array, np.dtype(dtype))
    if changed is not None:
        return f"it holds {_short(changed)}, which {dtype} does not (a cast would change it)"
    return np.require(cast, requirements="CA")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wide_ints(array: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, Any]:
    """An object array of Python ints, some past int64 and uint64 (else NumPy
    would have read an int dtype), as float64 for a float ``dtype``, and the
    first int no float holds; for another dtype, the first int it does not hold."""
    if dtype.kind != "f":
        low, high = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        return array, next(v for v in array.flat if not low <= v <= high)
    floats = np.empty(array.shape, np.float64)
    for i, v in enumerate(array.flat):
        try:
            floats.flat[i] = float(v)
        except OverflowError:
            return array, v
    return floats, None


def _short(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python prints
        return f"an int of {value.bit_length()} bits"
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."
