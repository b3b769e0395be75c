"""Pictures and side-by-side views of modules and functions for notebooks:
``graph`` draws a function's dataflow graph as SVG, ``diff`` aligns two
versions of a module binding by binding."""

from .diff import Diff, diff
from .graph import GraphPicture, graph

__all__ = ["Diff", "GraphPicture", "diff", "graph"]
