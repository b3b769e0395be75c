"""adjoint's exceptions. Every failure that Python input can cause is an
:class:`Error` subclass; errors found in text carry ``line`` and ``column``."""

from __future__ import annotations


class Error(Exception):
    """Base class of every adjoint error.

    Attributes ``line`` and ``column`` (1-based) and ``source_line`` are set
    when the error was found at a place in a text, else ``None``.
    """

    line: int | None = None
    column: int | None = None
    source_line: str | None = None


class ParseError(Error):
    """Text that is not valid adjoint text: syntax, unknown names, bad indentation."""


class TypeInferenceError(Error):
    """Shapes, dtypes, arity or attrs that an op's type rule rejects."""


class VerifyError(Error):
    """A module that is not well formed (see ``aj.analysis.verify``)."""


class ExecutionError(Error):
    """Inputs of the wrong count, dtype or shape given to an executable, or a run-time failure."""


class OutOfMemoryError(Error, MemoryError):
    """Memory for a constant, an input copy or a result could not be allocated."""


class TransformError(Error):
    """A pass asked to do something it cannot (unknown function, bad arguments)."""


class UnsupportedOpError(Error):
    """``aj.from_torch`` met a PyTorch op (or an op's option) it has no translation
    for; the message names the op and the Python source line it came from."""


class VizError(Error):
    """``aj.viz`` was given something it cannot draw: not a function, an
    unknown var name, a bad option, or a layout engine that is missing."""


class FunctionNotFoundError(Error, KeyError):
    """A module has no function of the name asked for."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StructuralMismatch(Error, AssertionError):
    """Raised by ``assert_structural_equal``: names the first difference."""


class GradientCheckError(Error, AssertionError):
    """Raised by ``aj.testing`` when analytic and numerical gradients disagree."""


__all__ = [
    "Error", "ParseError", "TypeInferenceError", "VerifyError", "ExecutionError", "OutOfMemoryError",
    "TransformError", "UnsupportedOpError", "VizError",
    "FunctionNotFoundError", "StructuralMismatch", "GradientCheckError",
]
