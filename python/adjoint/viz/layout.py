"""Where each box and edge of a graph picture goes: box sizes from their
text, and two engines that place them top to bottom in layers, Graphviz's
``dot`` program (read back through its ``-Tplain`` output) and grandalf's
pure-Python Sugiyama layout. Both give a :class:`Layout` in pixels, y down,
that ``svg.render`` draws."""

from __future__ import annotations

import dataclasses
import math
import shlex
import shutil
import subprocess

from ..errors import VizError
from .model import Edge, Graph, Node

TITLE_SIZE = 12.0
TEXT_SIZE = 10.0
LABEL_SIZE = 9.0
CHAR_WIDTH = 0.6  # of the font size: the width of a monospace glyph
LINE_HEIGHT = 1.3
PAD_X, PAD_Y = 8.0, 5.0
ARROW = 7.0  # the arrowhead's length: routes end this far before the box
RANK_GAP = 40.0
NODE_GAP = 24.0
CORNER = 16.0  # the radius of a rounded bend in an arrow
LABEL_AT = 0.35  # how far along an arrow's first segment its label goes


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR_WIDTH


def line_sizes(node: Node) -> list[float]:
    return [TITLE_SIZE] + [TEXT_SIZE] * (len(node.lines) - 1)


def box_size(node: Node) -> tuple[float, float]:
    """The width and height that fit the node's lines with padding."""
    sizes = line_sizes(node)
    width = max(text_width(t, s) for t, s in zip(node.lines, sizes)) + 2 * PAD_X
    height = sum(s * LINE_HEIGHT for s in sizes) + 2 * PAD_Y
    return math.ceil(width), math.ceil(height)


@dataclasses.dataclass
class Box:
    node: Node
    x: float  # centre
    y: float
    w: float
    h: float

    @property
    def left(self) -> float:
        return self.x - self.w / 2

    @property
    def top(self) -> float:
        return self.y - self.h / 2


@dataclasses.dataclass
class Route:
    """An edge's path: a polyline through ``points`` or, when ``bezier``, a
    chain of cubic Bézier segments (1 + 3k points). ``label`` is drawn at ``label_at``."""

    src: str
    dst: str
    points: list[tuple[float, float]]
    bezier: bool
    label: str | None
    label_at: tuple[float, float] | None


@dataclasses.dataclass
class Layout:
    boxes: dict[str, Box]
    routes: list[Route]
    engine: str


@dataclasses.dataclass
class _Link:
    """One drawn arrow: every edge between the same two boxes, labelled with
    the values not labelled on an earlier arrow."""

    src: str
    dst: str
    label: str | None


def links(graph: Graph) -> list[_Link]:
    by_pair: dict[tuple[str, str], list[Edge]] = {}
    for e in graph.edges:
        by_pair.setdefault((e.src, e.dst), []).append(e)
    labelled: set[tuple] = set()
    result = []
    for (src, dst), edges in by_pair.items():
        texts = []
        for e in edges:
            if e.value not in labelled:
                labelled.add(e.value)
                if e.label not in texts:
                    texts.append(e.label)
        result.append(_Link(src, dst, ", ".join(texts) or None))
    return result


def dot_available() -> bool:
    return shutil.which("dot") is not None


def layout(graph: Graph, engine: str) -> Layout:
    """Lays ``graph`` out with ``engine``: "dot", "python" or "auto" (dot when on PATH)."""
    if engine not in ("auto", "dot", "python"):
        raise VizError(f"aj.viz.graph: engine must be 'auto', 'dot' or 'python', got {engine!r}")
    if engine == "dot" and not dot_available():
        raise VizError("aj.viz.graph: engine='dot' needs the Graphviz 'dot' program on PATH "
                       "(e.g. apt-get install graphviz); engine='python' needs nothing")
    from .dot import layout_with_dot

    if engine == "dot":
        return layout_with_dot(graph)
    if engine == "auto" and dot_available():
        try:
            return layout_with_dot(graph)
        except VizError:  # a dot that fails or times out: the pure-Python layout still draws
            pass
    return layout_with_grandalf(graph)


class _View:
    """grandalf's per-vertex and per-edge view: sizes in, positions out."""

    def __init__(self, w: float = 0.0, h: float = 0.0) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)
        self.path: list[tuple[float, float]] = []

    def setpath(self, points) -> None:
        self.path = list(points)


def layout_with_grandalf(graph: Graph) -> Layout:
    from grandalf.graphs import Edge as GEdge, Graph as GGraph, Vertex
    from grandalf.layouts import SugiyamaLayout

    vertices = {}
    for node_id, node in graph.nodes.items():
        vertices[node_id] = Vertex(node_id)
        vertices[node_id].view = _View(*box_size(node))
    arrows = links(graph)
    gedges = []
    for link in arrows:
        edge = GEdge(vertices[link.src], vertices[link.dst])
        edge.view = _View()
        gedges.append(edge)
    g = GGraph(list(vertices.values()), gedges)
    offset = 0.0
    boxes: dict[str, Box] = {}
    for component in g.C:
        sug = SugiyamaLayout(component)
        sug.xspace, sug.yspace = NODE_GAP, RANK_GAP
        sug.init_all()
        sug.draw(1.5)
        placed = [v for v in component.sV]
        left = min(v.view.xy[0] - v.view.w / 2 for v in placed)
        right = max(v.view.xy[0] + v.view.w / 2 for v in placed)
        for v in placed:
            x, y = v.view.xy
            boxes[v.data] = Box(graph.nodes[v.data], x - left + offset, y, v.view.w, v.view.h)
        for e in component.sE:
            e.view.path = [(x - left + offset, y) for x, y in e.view.path]
        offset += right - left + 2 * NODE_GAP
    routes = [_route(boxes, link, edge.view.path) for link, edge in zip(arrows, gedges)]
    return Layout(boxes, routes, "python")


def _clip(box: Box, inside: tuple[float, float], outside: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from ``inside`` (the box's centre) to ``outside`` leaves the box."""
    dx, dy = outside[0] - inside[0], outside[1] - inside[1]
    scales = [s for s in ((box.w / 2 / abs(dx)) if dx else math.inf,
                          (box.h / 2 / abs(dy)) if dy else math.inf)]
    t = min(1.0, *scales)
    return inside[0] + dx * t, inside[1] + dy * t


def _route(boxes: dict[str, Box], link: _Link, path: list[tuple[float, float]]) -> Route:
    src, dst = boxes[link.src], boxes[link.dst]
    middle = path[1:-1]
    start = _clip(src, (src.x, src.y), middle[0] if middle else (dst.x, dst.y))
    end = _clip(dst, (dst.x, dst.y), middle[-1] if middle else (src.x, src.y))
    before = middle[-1] if middle else start
    length = math.hypot(end[0] - before[0], end[1] - before[1]) or 1.0
    k = min(ARROW, length / 2) / length
    end = (end[0] - (end[0] - before[0]) * k, end[1] - (end[1] - before[1]) * k)
    points = [start] + middle + [end]
    label_at = label_point(points, False) if link.label else None
    return Route(link.src, link.dst, smooth(points), True, link.label, label_at)


def smooth(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The polyline through ``points`` with its corners rounded, as cubic
    Bézier segments (1 + 3k points); unlike a spline through the points it
    never swings wide of them."""
    curve = [points[0]]

    def line_to(b):
        a = curve[-1]
        curve.extend([_lerp(a, b, 1 / 3), _lerp(a, b, 2 / 3), b])

    for prev, corner, nxt in zip(points, points[1:], points[2:]):
        before, after = math.dist(prev, corner), math.dist(corner, nxt)
        r = min(CORNER, before / 2, after / 2)
        a = _lerp(corner, prev, r / before) if before else corner
        b = _lerp(corner, nxt, r / after) if after else corner
        line_to(a)
        curve.extend([_lerp(a, corner, 2 / 3), _lerp(b, corner, 2 / 3), b])
    line_to(points[-1])
    return curve


def _lerp(a: tuple[float, float], b: tuple[float, float], t: float) -> tuple[float, float]:
    return a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t


def label_point(points: list[tuple[float, float]], bezier: bool) -> tuple[float, float]:
    """Where an arrow's label goes: ``LABEL_AT`` along its first segment, near
    the source, where arrows of different values are apart."""
    t = LABEL_AT
    if bezier and len(points) >= 4:
        weights = ((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3)
        return (sum(w * p[0] for w, p in zip(weights, points[:4])),
                sum(w * p[1] for w, p in zip(weights, points[:4])))
    (x0, y0), (x1, y1) = points[0], points[1]
    return x0 + (x1 - x0) * t, y0 + (y1 - y0) * t


def plain_lines(text: str) -> list[list[str]]:
    """``dot -Tplain`` output as token lists (strings may be quoted)."""
    return [shlex.split(line) for line in text.splitlines() if line.strip()]


def run_dot(source: str, fmt: str = "plain") -> str:
    try:
        done = subprocess.run(["dot", f"-T{fmt}"], input=source, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise VizError(f"aj.viz.graph: running Graphviz 'dot' failed: {e}") from e
    if done.returncode != 0:
        raise VizError(f"aj.viz.graph: Graphviz 'dot' failed: {done.stderr.strip()[:500]}")
    return done.stdout
