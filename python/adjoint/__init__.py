"""adjoint: training-graph compilation with a C++ core.

Build tensor graphs in Python (``aj.FunctionBuilder``, ``aj.op``) or text
(``aj.parse``), transform them with passes, and run them on the CPU.
"""

import scipy_openblas32 as _scipy_openblas32  # noqa: F401  (loads OpenBLAS before _core)

from . import _core
from ._core import Dim
from .errors import (
    Error,
    ExecutionError,
    FunctionNotFoundError,
    GradientCheckError,
    OutOfMemoryError,
    ParseError,
    StructuralMismatch,
    TransformError,
    TypeInferenceError,
    UnsupportedOpError,
    VerifyError,
)
from .ir import (
    Binding,
    Call,
    Constant,
    Expr,
    Function,
    Module,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    assert_structural_equal,
    parse,
    structural_diff,
    structural_equal,
    structural_hash,
)
from .builder import FunctionBuilder
from . import analysis, dims, op, pattern, testing, transform, viz
from .runtime import build
from .frontend import from_torch, from_torch_state, to_torch_state

__version__ = "0.1.0"


def blas_info() -> dict:
    """The linked BLAS: provider, OpenBLAS configuration and thread count."""
    return dict(_core.blas_info())


def set_num_threads(n: int) -> None:
    """Sets how many threads adjoint's BLAS calls use (also read from OPENBLAS_NUM_THREADS)."""
    _core.set_num_threads(n)


__all__ = [
    "Error", "ExecutionError", "FunctionNotFoundError", "GradientCheckError", "OutOfMemoryError", "ParseError", "StructuralMismatch",
    "TransformError", "TypeInferenceError", "UnsupportedOpError", "VerifyError",
    "Binding", "Call", "Constant", "Dim", "Expr", "Function", "Module", "TensorType", "Tuple",
    "TupleGetItem", "TupleType", "Type", "Var",
    "assert_structural_equal", "parse", "structural_diff", "structural_equal", "structural_hash",
    "FunctionBuilder", "analysis", "dims", "op", "pattern", "testing", "transform", "build", "blas_info", "set_num_threads",
    "from_torch", "from_torch_state", "to_torch_state",
]
