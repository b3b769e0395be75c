"""Draws a :class:`Layout` as SVG: boxes with their text, edges as polylines
or Bézier curves ending in arrowheads, value labels, and the caption."""

from __future__ import annotations

from html import escape

from .layout import (ARROW, LABEL_SIZE, LINE_HEIGHT, PAD_Y, Layout, Route, line_sizes, text_width)

MARGIN = 12.0
CAPTION_SIZE = 12.0
FONT = "monospace"

_FILL = {"param": "#dbeafe", "op": "#ffffff", "tuple": "#f3f4f6", "const": "#f3f4f6",
         "output": "#1f2937", "collapsed": "#fef3c7"}
_ROUNDED = {"param", "const", "output"}


def bounds(layout: Layout) -> tuple[float, float, float, float]:
    """The smallest rectangle (x0, y0, x1, y1) holding every box, route and label."""
    xs, ys = [], []
    for b in layout.boxes.values():
        xs += [b.left, b.left + b.w]
        ys += [b.top, b.top + b.h]
    for r in layout.routes:
        xs += [p[0] for p in r.points]
        ys += [p[1] for p in r.points]
        if r.label_at:
            half = text_width(r.label, LABEL_SIZE) / 2 + 2
            xs += [r.label_at[0] - half, r.label_at[0] + half]
            ys += [r.label_at[1] - LABEL_SIZE, r.label_at[1] + LABEL_SIZE]
    if not xs:
        return 0.0, 0.0, 0.0, 0.0
    return min(xs), min(ys), max(xs), max(ys)


def render(layout: Layout, caption: str | None) -> str:
    x0, y0, x1, y1 = bounds(layout)
    top = CAPTION_SIZE * 2 if caption else 0.0
    width = max(x1 - x0, text_width(caption or "", CAPTION_SIZE)) + 2 * MARGIN
    height = y1 - y0 + 2 * MARGIN + top
    dx, dy = MARGIN - x0, MARGIN + top - y0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="{FONT}">',
           '<defs><marker id="aj-arrow" viewBox="0 0 10 10" refX="0" refY="5" '
           f'markerUnits="userSpaceOnUse" markerWidth="{ARROW}" markerHeight="{ARROW}" orient="auto">'
           '<path d="M0,0 L10,5 L0,10 z" fill="#4b5563"/></marker></defs>',
           f'<rect x="0" y="0" width="{width:.1f}" height="{height:.1f}" fill="#ffffff"/>']
    if caption:
        out.append(f'<text class="caption" x="{MARGIN}" y="{MARGIN + CAPTION_SIZE:.1f}" '
                   f'font-size="{CAPTION_SIZE}" fill="#b45309">{escape(caption)}</text>')
    out.append(f'<g transform="translate({dx:.1f},{dy:.1f})">')
    out += [_edge(r) for r in layout.routes]
    out += [_label(r) for r in layout.routes if r.label_at]
    out += [_box(b) for b in layout.boxes.values()]
    out.append("</g></svg>")
    return "\n".join(out)


def _path(r: Route) -> str:
    pts = [f"{x:.1f},{y:.1f}" for x, y in r.points]
    if r.bezier and len(pts) >= 4 and (len(pts) - 1) % 3 == 0:
        return "M" + pts[0] + "".join(" C" + " ".join(pts[i:i + 3]) for i in range(1, len(pts), 3))
    return "M" + " L".join(pts)


def _edge(r: Route) -> str:
    return (f'<path class="edge" data-src="{r.src}" data-dst="{r.dst}" d="{_path(r)}" '
            'fill="none" stroke="#4b5563" stroke-width="1.2" marker-end="url(#aj-arrow)"/>')


def _label(r: Route) -> str:
    x, y = r.label_at
    w = text_width(r.label, LABEL_SIZE) + 4
    return (f'<rect x="{x - w / 2:.1f}" y="{y - LABEL_SIZE * 0.75:.1f}" width="{w:.1f}" '
            f'height="{LABEL_SIZE * 1.4:.1f}" fill="#ffffff" fill-opacity="0.85"/>'
            f'<text class="edge-label" x="{x:.1f}" y="{y + LABEL_SIZE * 0.35:.1f}" font-size="{LABEL_SIZE}" '
            f'text-anchor="middle" fill="#6b7280">{escape(r.label)}</text>')


def _box(b) -> str:
    node = b.node
    stroke, width, dash = "#374151", 1.0, ""
    if node.returned:
        stroke, width = "#111827", 2.5
    if node.highlighted:
        stroke, width = "#ea580c", 2.5
    if node.kind == "collapsed" or node.inputs_hidden:
        dash = ' stroke-dasharray="4,3"'
    radius = 6 if node.kind in _ROUNDED else 0
    title = escape("\n".join(node.lines))
    out = [f'<g class="node {node.kind}" id="{node.id}"><title>{title}</title>',
           f'<rect x="{b.left:.1f}" y="{b.top:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="{radius}" '
           f'fill="{_FILL[node.kind]}" stroke="{stroke}" stroke-width="{width}"{dash}/>']
    sizes = line_sizes(node)
    y = b.top + PAD_Y
    for i, (text, size) in enumerate(zip(node.lines, sizes)):
        y += size * LINE_HEIGHT
        colour = "#ffffff" if node.kind == "output" else ("#111827" if i == 0 else "#6b7280")
        weight = ' font-weight="bold"' if i == 0 else ""
        out.append(f'<text x="{b.x:.1f}" y="{y - size * 0.35:.1f}" font-size="{size}" text-anchor="middle" '
                   f'fill="{colour}"{weight}>{escape(text)}</text>')
    out.append("</g>")
    return "".join(out)
