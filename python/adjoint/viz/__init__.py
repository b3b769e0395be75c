"""Pictures of adjoint programs: ``graph`` draws a function's dataflow graph as SVG."""

from .graph import GraphPicture, graph

__all__ = ["GraphPicture", "graph"]
