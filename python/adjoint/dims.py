"""Symbolic dims compared under bounds: whether one size or FLOP cost is no
larger than another for every value its symbols may take. A pass choosing
between two forms of a program by cost asks ``compare`` and keeps its input
when the answer is ``"unknown"``.

Bounds are a dict ``{"r": (1, 64), "n": (1024, None)}``: per symbol an
integer interval ``[low, high]``, ``None`` for no upper bound. A symbol not
listed ranges over ``[1, inf)``; a listed low may be 0 but not negative.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Mapping, Optional, Union

from . import _core
from ._core import Dim
from .errors import TransformError

DimLike = Union[int, str, Dim]
DimBounds = Mapping[str, "tuple[int, Optional[int]]"]
Ordering = Literal["==", "<=", ">=", "unknown"]


def compare(p: DimLike, q: DimLike, dim_bounds: Optional[DimBounds] = None) -> Ordering:
    """``"<="`` if ``p <= q`` at every integer point within ``dim_bounds``,
    ``">="`` if ``p >= q`` everywhere, ``"=="`` if both, else ``"unknown"``.

    Sound but incomplete: a decided answer always holds; ``"unknown"`` means
    no proof was found (the method and its limits are in
    ``cpp/include/adjoint/analysis/dim_bounds.h``). Constants are decided
    exactly. Bad bounds are an ``aj.TransformError`` naming the symbol.

    >>> compare("2*m*n", "2*m*n + 2*n*r + m")
    '<='
    """
    return _core._dim_bounds.compare(p, q, dim_bounds)


def check_bounds(dim_bounds: Optional[DimBounds], symbols: Optional[Iterable[str]] = None,
                 where: str = "dim_bounds") -> dict[str, tuple[int, Optional[int]]]:
    """The bounds as ``{symbol: (low, high or None)}``. An entry that is not
    ``symbol -> (int, int or None)``, a negative low, low > high, or (when
    ``symbols`` is given) a symbol not among ``symbols`` is an
    ``aj.TransformError`` naming ``where`` and the symbol."""
    known = None
    if symbols is not None:
        if isinstance(symbols, (str, bytes)) or not isinstance(symbols, Iterable):
            raise TransformError(f"{where}: symbols: expected an iterable of str, got {type(symbols).__name__}")
        known = list(symbols)
    return _core._dim_bounds.parse(dim_bounds, known, where)


__all__ = ["compare", "check_bounds", "Ordering", "DimBounds", "DimLike"]
