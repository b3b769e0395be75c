"""adjoint: training-graph compilation with a C++ core."""

import scipy_openblas32 as _scipy_openblas32  # noqa: F401  (loads OpenBLAS before _core)

from . import _core
from .errors import Error, ExecutionError, ParseError, TransformError, TypeInferenceError, VerifyError

__version__ = "0.1.0"
