"""``aj.viz.graph``: a picture (SVG) of a function's dataflow graph, and
:class:`GraphPicture`, what it returns (shown by Jupyter, saved as a file)."""

from __future__ import annotations

import os

from .. import _core
from ..errors import VizError
from . import dot, model, svg
from .layout import Layout, layout


class GraphPicture:
    """A drawn graph: ``svg`` (str), ``source`` (its DOT text), ``layout``
    (boxes and routes in pixels), ``node_count`` (of the whole function) and
    ``caption`` (set when only part is shown). Jupyter displays it."""

    def __init__(self, svg_text: str, source: str, drawn: Layout, node_count: int, caption: str | None):
        self.svg = svg_text
        self.source = source
        self.layout = drawn
        self.node_count = node_count
        self.caption = caption

    def _repr_svg_(self) -> str:
        return self.svg

    def save(self, path: str | os.PathLike) -> None:
        """Writes the SVG to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)

    def __repr__(self) -> str:
        shown = len(self.layout.boxes)
        return f"<GraphPicture {shown} of {self.node_count} nodes, engine={self.layout.engine}>"


def graph(fn, around: str | None = None, depth: int | None = None, collapse=None,
          engine: str = "auto", max_nodes: int = 300, *, function: str | None = None) -> GraphPicture:
    """Draws the dataflow graph of ``fn`` (an ``aj.Function``, or an
    ``aj.Module`` with ``function=`` naming one of its functions).

    Params and ops are boxes (an op with its attrs and the var it binds), each
    value an arrow labelled with its shape and dtype, returned values flow into
    a ``return`` box and their producers have a heavy border.

    - ``around="w_adjoint", depth=3``: only what that var depends on, up to
      ``depth`` hops (all of it when ``depth`` is None); ``depth`` alone counts
      from the returned values.
    - ``collapse``: var names (a list), a predicate on ``aj.Binding``, or a dict
      of box label to either; each group is drawn as one dashed box.
    - ``engine``: "dot" (Graphviz's program, must be on PATH), "python"
      (grandalf, pure Python) or "auto" (dot when present).
    - ``max_nodes``: a bigger graph shows the ``max_nodes`` nodes nearest the
      outputs (or ``around``) and says so in a caption.
    """
    fn = _function(fn, function)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise VizError(f"aj.viz.graph: depth must be a non-negative int or None, got {depth!r}")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise VizError(f"aj.viz.graph: max_nodes must be a positive int, got {max_nodes!r}")
    whole = model.build(fn)
    g = model.collapse(whole, model.collapse_groups(whole, fn, collapse))
    output = next(n for n, node in g.nodes.items() if node.kind == "output")
    sinks, near = [output], "the outputs"
    if around is not None:
        target = model.node_of(g, around, "around")
        g.nodes[target].highlighted = True
        sinks, near = [target], f"'{around}'"
    if around is not None or depth is not None:
        g = model.restrict(g, model.cone(g, sinks, depth))
    g = model.truncate(g, sinks, max_nodes, near)
    drawn = layout(g, engine)
    return GraphPicture(svg.render(drawn, g.caption), dot.source(g), drawn, len(whole.nodes), g.caption)


def _function(fn, name: str | None):
    if isinstance(fn, _core.Module):
        if name is None:
            raise VizError("aj.viz.graph: got an aj.Module; pass function=<name> "
                           f"(one of {', '.join(sorted(fn.functions))}) or the function itself")
        if name not in fn:
            raise VizError(f"aj.viz.graph: the module has no function '{name}' "
                           f"(it has {', '.join(sorted(fn.functions))})")
        return fn[name]
    if not isinstance(fn, _core.Function):
        what = type(fn).__name__ if fn is not None else "None"
        raise VizError(f"aj.viz.graph draws an aj.Function (or an aj.Module with function=...), got {what}")
    if name is not None:
        raise VizError("aj.viz.graph: function= applies to a Module; got a Function")
    return fn
