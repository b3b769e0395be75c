"""Pictures and side-by-side views of modules and functions for notebooks."""

from .diff import diff
