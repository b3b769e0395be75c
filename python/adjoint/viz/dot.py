"""The DOT text of a graph picture (``GraphPicture.source``) and the layout
Graphviz's ``dot`` program makes of it, read back from ``-Tplain``."""

from __future__ import annotations

from ..errors import VizError
from .layout import Box, Layout, Route, box_size, label_point, links, plain_lines, run_dot
from .model import Graph

POINTS_PER_INCH = 72.0

_STYLE = {
    "param": 'shape=box, style="rounded,filled", fillcolor="#dbeafe"',
    "op": 'shape=box, style="filled", fillcolor="#ffffff"',
    "tuple": 'shape=box, style="filled", fillcolor="#f3f4f6"',
    "const": 'shape=box, style="rounded,filled", fillcolor="#f3f4f6"',
    "output": 'shape=box, style="rounded,filled", fillcolor="#1f2937", fontcolor="#ffffff"',
    "collapsed": 'shape=box, style="dashed,filled", fillcolor="#fef3c7"',
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def source(graph: Graph, for_layout: bool = False) -> str:
    """DOT text (network simplex capped: uncapped, dot takes a minute on a
    300-node adjoint) with each node's size fixed to the size its text needs (and
    arrowheads of ``layout.ARROW`` pixels, where the routes end). The text
    ``for_layout`` leaves out the caption and node text (``svg.render`` draws
    them), which keeps ``-Tplain`` one line per node."""
    out = ["digraph G {", "  rankdir=TB; nodesep=0.33; ranksep=0.55; mclimit=0.5; nslimit=2; nslimit1=2;",
           '  node [fontname="monospace", fontsize=12, fixedsize=true];',
           '  edge [fontname="monospace", fontsize=9, arrowsize=0.7];']
    if graph.caption and not for_layout:
        out.append(f"  label={_quote(graph.caption)}; labelloc=t;")
    for node_id, node in graph.nodes.items():
        w, h = box_size(node)
        extra = ", penwidth=2.5" if node.returned else ""
        extra += ', color="#ea580c", penwidth=2.5' if node.highlighted else ""
        text = "" if for_layout else chr(10).join(node.lines)
        out.append(f"  {node_id} [label={_quote(text)}, {_STYLE[node.kind]}, "
                   f"width={w / POINTS_PER_INCH:.4f}, height={h / POINTS_PER_INCH:.4f}{extra}];")
    for link in links(graph):  # labels are placed after layout: as dot labels they double its time
        label = f" [label={_quote(link.label)}]" if link.label and not for_layout else ""
        out.append(f"  {link.src} -> {link.dst}{label};")
    out.append("}")
    return "\n".join(out) + "\n"


def layout_with_dot(graph: Graph) -> Layout:
    text = run_dot(source(graph, for_layout=True))
    height = 0.0
    boxes: dict[str, Box] = {}
    routes: list[Route] = []
    try:
        for tokens in plain_lines(text):
            if tokens[0] == "graph":
                height = float(tokens[3]) * POINTS_PER_INCH
            elif tokens[0] == "node":
                x, y, w, h = (float(t) * POINTS_PER_INCH for t in tokens[2:6])
                boxes[tokens[1]] = Box(graph.nodes[tokens[1]], x, height - y, w, h)
            elif tokens[0] == "edge":
                routes.append(_edge(tokens, height))
        labels = {(link.src, link.dst): link.label for link in links(graph)}
        for r in routes:
            r.label = labels[(r.src, r.dst)]
            r.label_at = label_point(r.points, True) if r.label else None
    except (IndexError, ValueError, KeyError) as e:
        raise VizError(f"aj.viz.graph: unexpected output from Graphviz 'dot': {e}") from e
    return Layout(boxes, routes, "dot")


def _edge(tokens: list[str], height: float) -> Route:
    n = int(tokens[3])
    coords = [float(t) * POINTS_PER_INCH for t in tokens[4:4 + 2 * n]]
    points = [(coords[i], height - coords[i + 1]) for i in range(0, 2 * n, 2)]
    return Route(tokens[1], tokens[2], points, True, None, None)
