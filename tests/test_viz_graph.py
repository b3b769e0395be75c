"""aj.viz.graph: every picture is well-formed SVG; a 200-binding adjoint's
boxes and arrows lie inside the picture without overlapping, on both layout
engines; around/depth draw exactly the dependency cone; big graphs say what
they cut; things that are not functions are errors."""

import re
import shutil
import xml.etree.ElementTree as ET
from collections import deque

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import adjoint as aj
from adjoint import examples
from adjoint.viz import layout as viz_layout
from programs import programs

SVG = "{http://www.w3.org/2000/svg}"
ENGINES = ["python", pytest.param("dot", marks=pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz 'dot' is not installed"))]


def deep_mlp(layers: int) -> aj.Module:
    bb = aj.FunctionBuilder("main", num_input=1)
    x = bb.param("x", ("n", 16), "float32")
    h = x
    for i in range(layers):
        h = aj.op.tanh(h @ bb.param(f"w{i}", (16, 16), "float32"))
    return bb.finish(aj.op.sum(h))


def raw_adjoint(layers: int) -> aj.Function:
    return aj.transform.Gradient(simplify=False)(deep_mlp(layers))["main_adjoint"]


def parse_svg(picture) -> ET.Element:
    root = ET.fromstring(picture.svg)
    assert root.tag == SVG + "svg"
    return root


def node_names(picture) -> set[str]:
    """The var (or param) name each drawn box shows: its second line for ops, first for params."""
    names = set()
    for group in parse_svg(picture).iter(SVG + "g"):
        kind = (group.get("class") or "").split()
        if kind[:1] == ["node"]:
            lines = group.find(SVG + "title").text.split("\n")
            names.add(lines[0] if kind[1] == "param" else lines[-1] if kind[1] == "op" else kind[1])
    return names


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", text)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(examples.ALL))
def test_every_example_draws_as_svg_holding_its_vars(name, engine):
    fn = aj.parse(examples.ALL[name])["main"]
    picture = aj.viz.graph(fn, engine=engine)
    parse_svg(picture)
    assert picture.layout.engine == engine
    assert picture._repr_svg_() == picture.svg
    for param in fn.params:
        assert f">{param.name_hint}<" in picture.svg
    assert ">return<" in picture.svg
    assert picture.source.startswith("digraph")


def test_ops_show_their_attrs_and_values_their_shape_and_dtype():
    picture = aj.viz.graph(aj.parse(examples.TUPLES_AND_ATTRS)["main"], engine="python")
    for text in ["concat axis=0", "split indices_or_sections=[1] axis=1", "(2, 3) f64", "[0] (4, 1) f64"]:
        assert text in picture.svg
    picture = aj.viz.graph(aj.parse(examples.MLP_SYMBOLIC)["main"], engine="python")
    assert "(n, 784) f32" in picture.svg and "keepdims" not in picture.svg


def test_returned_values_flow_into_a_return_box():
    fn = raw_adjoint(2)
    picture = fn.show(engine="python")
    boxes = picture.layout.boxes.values()
    returned = {b.node.lines[-1] for b in boxes if b.node.returned}
    assert returned == {"lv_4", "x_adjoint", "w0_adjoint", "w1_adjoint"}
    output = next(b.node.id for b in boxes if b.node.kind == "output")
    assert len([r for r in picture.layout.routes if r.dst == output]) == 4


@pytest.fixture(scope="module")
def adjoint_200():
    fn = raw_adjoint(22)
    assert len(fn.bindings) >= 200
    return fn


def boxes_and_paths(root):
    """Node rects and edge paths in the SVG's own coordinates (one translate applies to all)."""
    shift = next(g for g in root.iter(SVG + "g") if g.get("transform"))
    dx, dy = numbers(shift.get("transform"))
    rects = [rect for g in root.iter(SVG + "g") if (g.get("class") or "").startswith("node ")
             for rect in g.iter(SVG + "rect")]
    boxes = [(float(r.get("x")) + dx, float(r.get("y")) + dy, float(r.get("width")), float(r.get("height")))
             for r in rects]
    paths = [[(x + dx, y + dy) for x, y in zip(*[iter(numbers(p.get("d")))] * 2)]
             for p in root.iter(SVG + "path") if p.get("class") == "edge"]
    return boxes, paths


@pytest.mark.parametrize("engine", ENGINES)
def test_a_200_binding_adjoint_fits_the_picture_without_overlaps(adjoint_200, engine):
    picture = aj.viz.graph(adjoint_200, engine=engine)
    root = parse_svg(picture)
    assert picture.caption is None
    x0, y0, width, height = numbers(root.get("viewBox"))
    boxes, paths = boxes_and_paths(root)
    constants = sum(isinstance(a, aj.Constant) for b in adjoint_200.bindings for a in b.value.args)
    assert len(boxes) == picture.node_count == len(adjoint_200.params) + len(adjoint_200.bindings) + constants + 1
    assert len(paths) == len(picture.layout.routes) > len(boxes)
    for x, y, w, h in boxes:
        assert x0 <= x and x + w <= x0 + width and y0 <= y and y + h <= y0 + height
    for path in paths:
        for x, y in path:
            assert x0 <= x <= x0 + width and y0 <= y <= y0 + height
    boxes.sort()
    for i, (x, y, w, h) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1:]:
            if x2 >= x + w:
                break
            assert y + h <= y2 or y2 + h2 <= y, f"boxes at ({x}, {y}) and ({x2}, {y2}) overlap"


def test_every_box_is_wide_and_tall_enough_for_its_text(adjoint_200):
    for box in aj.viz.graph(adjoint_200, engine="python").layout.boxes.values():
        sizes = viz_layout.line_sizes(box.node)
        assert all(viz_layout.text_width(t, s) < box.w for t, s in zip(box.node.lines, sizes))
        assert sum(s * viz_layout.LINE_HEIGHT for s in sizes) < box.h


def expected_cone(fn: aj.Function, name: str, depth) -> set[str]:
    """The names ``name`` depends on within ``depth`` hops, read from the printed text."""
    deps = {}
    for line in fn.script().splitlines():
        m = re.match(r"    (\w+): .* = (.*)$", line)
        if m:
            deps[m.group(1)] = set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(2)))
    dist, queue = {name: 0}, deque([name])
    while queue:
        n = queue.popleft()
        if depth is not None and dist[n] >= depth:
            continue
        for d in deps.get(n, ()):
            if (d in deps or d in {p.name_hint for p in fn.params}) and d not in dist:
                dist[d] = dist[n] + 1
                queue.append(d)
    return set(dist)


ADJOINT_2 = raw_adjoint(2)
PRINTED_NAMES = [p.name_hint for p in ADJOINT_2.params] + re.findall(r"(?m)^    (\w+): ", ADJOINT_2.script())


@settings(max_examples=40, deadline=None)
@given(around=st.sampled_from(PRINTED_NAMES),
       depth=st.one_of(st.none(), st.integers(0, 8)))
def test_around_and_depth_draw_exactly_the_dependency_cone(around, depth):
    picture = aj.viz.graph(ADJOINT_2, around=around, depth=depth, engine="python")
    assert node_names(picture) - {"const"} == expected_cone(ADJOINT_2, around, depth)
    highlighted = [b.node for b in picture.layout.boxes.values() if b.node.highlighted]
    assert [n.name for n in highlighted] == [around]


def test_depth_alone_counts_from_the_outputs():
    fn = aj.parse(examples.TRANSPOSED_MATMUL)["main"]
    assert node_names(aj.viz.graph(fn, depth=2, engine="python")) == {"output", "gv", "lv3"}


def test_a_graph_over_max_nodes_says_so_and_shows_the_nearest_nodes():
    fn = raw_adjoint(2)
    picture = aj.viz.graph(fn, max_nodes=10, engine="python")
    assert len(picture.layout.boxes) == 10
    caption = "27 nodes; showing the 10 nearest the outputs; use around=... or max_nodes=..."
    assert picture.caption == caption and caption in picture.svg
    assert "output" in node_names(picture) and "x" not in node_names(picture)
    around = aj.viz.graph(fn, around="w1_adjoint", max_nodes=3, engine="python")
    assert "nearest 'w1_adjoint'" in around.caption and "w1_adjoint" in node_names(around)


def test_a_1000_node_adjoint_shows_300_nodes_by_default():
    fn = raw_adjoint(100)
    picture = aj.viz.graph(fn, engine="python")
    assert picture.node_count > 1000 and len(picture.layout.boxes) == 300
    assert picture.caption.startswith(f"{picture.node_count:,} nodes; showing the 300 nearest the outputs")
    parse_svg(picture)


def test_collapse_folds_named_vars_into_one_box():
    fn = raw_adjoint(2)
    group = ["lv_5", "lv_6", "lv_9", "lv_10"]
    picture = aj.viz.graph(fn, collapse=group, engine="python")
    names = node_names(picture)
    assert not names & set(group) and "collapsed" in names
    box = next(b.node for b in picture.layout.boxes.values() if b.node.kind == "collapsed")
    assert box.lines[1].startswith("6 nodes: ")  # the two constants feeding only the group go with it
    ids = {b.node.id for b in picture.layout.boxes.values()}
    assert all(r.src in ids and r.dst in ids for r in picture.layout.routes)
    assert len(picture.layout.boxes) == picture.node_count - 5


def test_collapse_takes_a_predicate_and_labelled_groups():
    fn = raw_adjoint(2)
    transposes = lambda b: isinstance(b.value, aj.Call) and b.value.op == "permute_dims"  # noqa: E731
    picture = aj.viz.graph(fn, collapse={"transposes": transposes}, engine="python")
    box = next(b.node for b in picture.layout.boxes.values() if b.node.kind == "collapsed")
    assert box.lines == ["transposes", "4 nodes: permute_dims×4"]
    assert "permute_dims" not in picture.svg.replace("permute_dims×4", "")


def test_collapse_groups_must_be_disjoint_and_not_empty():
    fn = raw_adjoint(2)
    with pytest.raises(aj.VizError, match="lv_6 in two collapse groups"):
        aj.viz.graph(fn, collapse={"a": ["lv_5", "lv_6"], "b": ["lv_6"]})
    with pytest.raises(aj.VizError, match="group 'collapsed' names no var"):
        aj.viz.graph(fn, collapse=[])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs())
def test_every_random_program_and_its_adjoint_draw(program):
    mod = aj.transform.Gradient(simplify=False)(program.mod)
    for name in mod.functions:
        fn = mod[name]
        picture = aj.viz.graph(fn, engine="python")
        parse_svg(picture)
        drawn = {b.node.name for b in picture.layout.boxes.values()}
        assert set(re.findall(r"(?m)^    (\w+): ", fn.script())) <= drawn | set(picture_aliases(fn))


def picture_aliases(fn) -> list[str]:
    """Vars bound to a tuple item (of a var or of a tuple written inline) or
    another var: drawn as arrows, not boxes."""
    names = re.findall(r"(?m)^    (\w+): [^=]* = ((?:\w+|\(.*\))(?:\[\d+\])+|\w+)$", fn.script())
    return [name for name, _ in names]


def test_save_writes_the_svg(tmp_path):
    picture = aj.parse(examples.TRANSPOSED_MATMUL)["main"].show(engine="python")
    picture.save(tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text() == picture.svg
    assert "<GraphPicture 7 of 7 nodes, engine=python>" == repr(picture)


@pytest.mark.parametrize("thing, named", [(None, "None"), ("main", "str"), (aj.parse(examples.MLP_SYMBOLIC), "function="),
                                          (aj.Var("x", aj.TensorType((2,))), "Var"), (3, "int")])
def test_what_is_not_a_function_is_an_error_naming_it(thing, named):
    with pytest.raises(aj.VizError, match=named):
        aj.viz.graph(thing)


def test_a_module_draws_with_a_function_name():
    mod = aj.transform.Gradient()(deep_mlp(1))
    assert "x_adjoint" in aj.viz.graph(mod, function="main_adjoint", engine="python").svg
    with pytest.raises(aj.VizError, match="no function 'nope'.*main, main_adjoint"):
        aj.viz.graph(mod, function="nope")


def test_an_unknown_var_is_an_error_listing_close_names():
    fn = raw_adjoint(2)
    with pytest.raises(aj.VizError, match=r"around 'w1_adjiont' is not a var.*close names: w1_adjoint"):
        aj.viz.graph(fn, around="w1_adjiont")
    with pytest.raises(aj.VizError, match="collapse name 'lv_99'"):
        aj.viz.graph(fn, collapse=["lv_99"])


@pytest.mark.parametrize("options, message", [
    (dict(engine="neato"), "engine must be"), (dict(depth=-1), "depth must be"), (dict(depth=1.5), "depth must be"),
    (dict(max_nodes=0), "max_nodes must be"), (dict(around=3), "around must be a var name"),
    (dict(collapse="lv"), "collapse must be"), (dict(collapse=lambda b: 1 / 0), "predicate raised ZeroDivisionError"),
])
def test_bad_options_are_errors(options, message):
    with pytest.raises(aj.VizError, match=message):
        aj.viz.graph(raw_adjoint(1), **options)


def test_engine_dot_without_dot_on_path_is_an_error_and_auto_falls_back(monkeypatch):
    monkeypatch.setenv("PATH", "")
    fn = aj.parse(examples.TRANSPOSED_MATMUL)["main"]
    with pytest.raises(aj.VizError, match="needs the Graphviz 'dot' program"):
        aj.viz.graph(fn, engine="dot")
    assert aj.viz.graph(fn).layout.engine == "python"
