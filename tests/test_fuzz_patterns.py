"""The ``patterns`` fuzz target (python -m adjoint.fuzz patterns N): short
clean runs, the reference matcher on hand-written cases (it is the docs in
code, so it is tested on its own), and planted wrong answers reported as
findings, so that the check cannot pass silently."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import adjoint as aj
from adjoint import pattern as P
from adjoint.fuzz import patterns as fp
from adjoint.fuzz import patterns_check, patterns_graph, patterns_programs, patterns_reference, patterns_rules
from adjoint.fuzz.runner import Finding

TEXT = '''\
@function
def main(a: Tensor((2, 4), "float32"), b: Tensor((2, 4), "float32"), d: Tensor((4, 4), "float64")):
    e = exp(a)
    n = negative(e)
    s = add(a, b)
    t = add(b, a)
    c = concat((a, b), axis=1)
    cc = concat((a, a, a), axis=0)
    sp = split(c, 2, axis=1)
    s0 = sp[0]
    k = const(1.0, "float32")
    m = multiply(a, k)
    pd = permute_dims(d)
    r = sum(d, axis=[0])
    return (n, s, t, cc, s0, m, pd, r)
'''


@pytest.fixture(scope="module")
def fn():
    return aj.parse(TEXT)["main"]


def value(fn, name):
    return next(b.value for b in fn.bindings if b.var.name_hint == name)


def ref(nodes, fn, name, root=None):
    """The reference's captures of nodes[root] (default: the last) on binding `name`."""
    return patterns_reference.RefMatcher(nodes, fn).match(len(nodes) - 1 if root is None else root, value(fn, name))


W = {"k": "wildcard"}


def op(name, *children, **attrs):
    return {"k": "op", "op": name, "c": list(children), "attrs": attrs}


# ---- the reference matcher on hand-written cases


def test_reference_wildcard_op_and_looking_through_bindings(fn):
    nodes = [W, op("exp", 0), op("negative", 1)]
    caps = ref(nodes, fn, "n")
    assert caps["%0"].name_hint == "a" and caps["%1"].name_hint == "e"
    assert patterns_reference.RefMatcher(nodes, None).match(2, value(fn, "n")) is None  # without fn, e is only a var
    assert ref(nodes, fn, "s") is None


def test_reference_attrs_as_stored(fn):
    assert ref([W, op("permute_dims", 0, axes=None)], fn, "pd") is not None
    assert ref([W, op("permute_dims", 0, axes=[1, 0])], fn, "pd") is None
    assert ref([W, op("sum", 0, axis=0)], fn, "r") is not None  # read as sum reads it: [0]
    assert ref([W, op("sum", 0, keepdims=1)], fn, "r") is None  # an int is no bool


def test_reference_const_var_tuple_item(fn):
    assert ref([W, {"k": "const"}, op("multiply", 0, 1)], fn, "m") is not None
    assert ref([{"k": "var"}, W, op("multiply", 0, 1)], fn, "m") is not None
    assert ref([{"k": "var", "hint": "b"}, W, op("multiply", 0, 1)], fn, "m") is None
    assert ref([W, W, {"k": "tuple", "c": [0, 1]}, op("concat", 2)], fn, "c") is not None
    split = [W, op("split", 0)]
    assert ref(split + [{"k": "item", "c": [1], "index": 0}], fn, "s0") is not None
    assert ref(split + [{"k": "item", "c": [1], "index": 1}], fn, "s0") is None
    assert ref(split + [{"k": "item", "c": [1], "index": None}], fn, "s0") is not None


def test_reference_shared_object_and_names(fn):
    same = [W, op("add", 0, 0)]
    assert ref(same, fn, "s") is None  # add(a, b): one object, two values
    named = [{"k": "wildcard", "name": "x"}, {"k": "wildcard", "name": "x"}, op("add", 0, 1)]
    assert ref(named, fn, "s") is None
    caps = ref([W, W, op("add", 0, 1)], fn, "s")
    assert caps["%0"].name_hint == "a" and caps["%1"].name_hint == "b"


def test_reference_ordered_choice_without_backtracking(fn):
    # multiply(add(x, w) | add(w, x), exp(x)) on ... the docs' example, on add(b, a) here: t = add(b, a)
    nodes = [W, W, op("add", 0, 1), op("add", 1, 0), {"k": "or", "c": [2, 3]}]
    caps = ref(nodes, fn, "t")
    assert caps["%0"].name_hint == "b" and "%3" not in caps  # the right side took no part
    nodes = [W, {"k": "const"}, {"k": "or", "c": [1, 0]}, op("exp", 2), op("negative", 3)]
    caps = ref(nodes, fn, "n")
    assert "%1" not in caps and caps["%0"].name_hint == "a"


def test_reference_and_not_dtype_shape(fn):
    assert ref([W, {"k": "dtype", "c": [0], "dtype": "float64"}, op("permute_dims", 1)], fn, "pd") is not None
    assert ref([W, {"k": "dtype", "c": [0], "dtype": "float32"}, op("permute_dims", 1)], fn, "pd") is None
    assert ref([W, {"k": "shape", "c": [0], "shape": [2, 4]}, op("exp", 1)], fn, "e") is not None
    assert ref([W, {"k": "shape", "c": [0], "shape": [4, 2]}, op("exp", 1)], fn, "e") is None
    nodes = [W, {"k": "const"}, {"k": "not", "c": [1]}, {"k": "and", "c": [0, 2]}, op("multiply", 3, 3)]
    assert ref(nodes, fn, "m") is None  # multiply(a, k): k is a const
    caps = ref([W, {"k": "const"}, {"k": "not", "c": [1]}, op("multiply", 2, 0)], fn, "m")
    assert caps is not None and "%1" not in caps
    assert ref([W, {"k": "attr", "c": [0], "attrs": {"axis": 0}}, op("split", 1)], fn, "sp") is None
    assert ref([W, op("split", 0), {"k": "attr", "c": [1], "attrs": {"axis": 1}}], fn, "sp") is not None


def test_reference_runs(fn):
    run = [W, {"k": "repeated", "c": [0]}, {"k": "tuple", "c": [1]}, op("concat", 2)]
    caps = ref(run, fn, "cc")
    assert [v.name_hint for v in caps["%1"]] == ["a", "a", "a"] and len(caps["%0"]) == 3
    counted = [W, {"k": "repeated", "c": [0], "count": "n"}, {"k": "tuple", "c": [1]}, op("concat", 2),
               W, {"k": "repeated", "c": [4], "count": "n"}, {"k": "tuple", "c": [5]}, op("concat", 6)]
    m = patterns_reference.RefMatcher(counted, fn)
    assert m.match(3, value(fn, "c")) is not None
    # two runs in one list split evenly: concat((a, b)) as (run, run)
    two = [W, {"k": "repeated", "c": [0], "count": "n"}, W, {"k": "repeated", "c": [2], "count": "n"},
           {"k": "tuple", "c": [1, 3]}, op("concat", 4)]
    caps = ref(two, fn, "c")
    assert [v.name_hint for v in caps["%1"]] == ["a"] and [v.name_hint for v in caps["%3"]] == ["b"]
    empty = [W, {"k": "const"}, {"k": "repeated", "c": [1]}, op("exp", 0, 2)]
    assert ref(empty, fn, "e")["%2"] == []


def test_reference_agrees_with_the_docs_examples():
    mod = aj.parse('''
@function
def main(a: Tensor((2, 2), "float32"), b: Tensor((2, 2), "float32")) -> Tensor((2, 2), "float32"):
    g = add(a, b)
    e = exp(b)
    m = multiply(g, e)
    return m
''')
    fn = mod["main"]
    x, w = W, dict(W)
    nodes = [x, w, op("add", 0, 1), op("add", 1, 0), {"k": "or", "c": [2, 3]}, op("exp", 0), op("multiply", 4, 5)]
    assert ref(nodes, fn, "m") is None
    nodes = [x, w, op("add", 0, 1), op("exp", 0), op("multiply", 2, 3), op("add", 1, 0), op("exp", 0),
             op("multiply", 5, 6), {"k": "or", "c": [4, 7]}]
    assert ref(nodes, fn, "m")["%0"].name_hint == "b"


# ---- the target on its inputs


@pytest.mark.parametrize("seed", [0, 1])
def test_a_few_hundred_inputs_run_clean(seed):
    fuzzer = fp.Fuzzer(seed)
    reached: list[str] = []
    kinds = set()
    for k in range(250):
        inp = fuzzer.make(k)
        kinds.add(inp["kind"])
        try:
            fuzzer.run(inp, reached.append)
        except aj.Error:
            pass
    assert kinds == {"match", "rewrite", "graph"}
    for stage in ("matched", "matched on a var", "rewrite fired", "rewrite compared", "graph matched", "graph rewrote"):
        assert stage in reached, stage


def test_input_k_is_made_from_seed_and_k_alone():
    a, b = fp.Fuzzer(3), fp.Fuzzer(3)
    assert [a.make(k) for k in (0, 1, 50)] == [b.make(k) for k in (50, 1, 0)][::-1]
    assert a.make(7) != fp.Fuzzer(4).make(7)


def first(fuzzer, kind, cond=lambda inp: True):
    for k in range(2000):
        inp = fuzzer.make(k)
        if inp["kind"] == kind and cond(inp):
            return inp
    raise AssertionError(f"no {kind} input")


# ---- planted wrong answers


def test_a_flipped_match_is_a_finding(monkeypatch):
    fuzzer = fp.Fuzzer(0)
    real = patterns_reference.RefMatcher.match

    def flipped(self, root, e):
        caps = real(self, root, e)
        return None if caps is not None else {}

    monkeypatch.setattr(patterns_reference.RefMatcher, "match", flipped)
    with pytest.raises(Finding) as info:
        fuzzer.run(first(fuzzer, "match"), lambda s: None)
    assert info.value.kind == "match"


def test_a_wrong_capture_is_a_finding(monkeypatch):
    fuzzer = fp.Fuzzer(0)
    real = patterns_reference.RefMatcher.match

    def shifted(self, root, e):
        caps = real(self, root, e)
        if caps:
            caps[f"%{root}"] = aj.Var("elsewhere", aj.TensorType((1,), "float32")) if hasattr(aj, "TensorType") \
                else None
        return caps

    monkeypatch.setattr(patterns_reference.RefMatcher, "match", shifted)
    with pytest.raises(Finding) as info:
        for k in range(200):
            inp = fuzzer.make(k)
            if inp["kind"] == "match":
                fuzzer.run(inp, lambda s: None)
    assert info.value.kind == "capture"


def test_a_wrong_rewrite_is_a_finding(monkeypatch):
    fuzzer = fp.Fuzzer(0)
    rule = patterns_rules.RULE_BY_NAME["negneg"]
    monkeypatch.setattr(rule, "text", rule.text.replace("    return x\n", "    return negative(x)\n"))
    inp = {"kind": "rewrite", "rules": ["negneg"], "text": '''\
@function
def main(a: Tensor((2, 2), "float32")) -> Tensor((2, 2), "float32"):
    n = negative(a)
    m = negative(n)
    return m
'''}
    with pytest.raises(Finding) as info:
        fuzzer.run(inp, lambda s: None)
    assert info.value.kind in ("rewrite-differs", "wrong-result")


def test_a_missed_or_invalid_graph_matching_is_a_finding(monkeypatch):
    fuzzer = fp.Fuzzer(0)
    inp = first(fuzzer, "graph")
    # the reference finds every root on every call: each walk now misses or invents matchings
    real = patterns_graph.GraphReference.valid
    monkeypatch.setattr(patterns_graph.GraphReference, "valid", lambda self, chosen: not real(self, chosen))
    found = 0
    for k in range(300):
        inp = fuzzer.make(k)
        if inp["kind"] != "graph":
            continue
        try:
            fuzzer.run(inp, lambda s: None)
        except Finding as f:
            assert f.kind.startswith("graph")
            found += 1
        except aj.Error:
            pass
    assert found > 10


def test_the_reference_matches_the_docs_roots():
    nodes = [W, op("exp", 0), op("negative", 0), {"k": "or", "c": [1, 2]}, W, op("add", 0, 4)]
    assert patterns_graph.reference_roots(nodes) == [3, 5]
    ctx, objs = patterns_graph.build_context(nodes, [])
    assert list(ctx.roots) == [objs[3], objs[5]]


def test_a_finding_is_saved_as_a_script_that_reruns_it(tmp_path):
    fuzzer = fp.Fuzzer(0)
    for kind in ("match", "rewrite", "graph"):
        inp = first(fuzzer, kind)
        [path] = fuzzer.save(inp, str(tmp_path / kind), "adjoint fuzz finding: x\nline two\n")
        ran = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("@function")


def test_rules_are_exact_both_ways():
    """Each rule, written as text and in Python, rewrites its own chain and keeps the values."""
    fuzzer = fp.Fuzzer(0)
    for rule in patterns_rules.RULES:
        if rule.loops:
            continue
        rng = __import__("random").Random(rule.name)
        text = patterns_programs.make_function(rng, 8, symbolic=False, targets=True)
        label = fuzzer.run({"kind": "rewrite", "rules": [rule.name], "text": text}, lambda s: None)
        assert label == "ok"
    assert np.isfinite(patterns_check.tol("float32"))


def test_the_reference_searches_a_waiting_run_after_the_root_it_waits_for():
    # docs: a repeated root no earlier root ties to is matched right after
    # the first later plain root an edge ties it to (its run then depends
    # on the roots before that one)
    nodes = [W, op("negative", 0), W, op("exp", 2), {"k": "repeated", "c": [3]}, W, op("exp", 5), W, op("relu", 7)]
    fn = aj.parse('''@function
def main(a: Tensor((4,), "float32")) -> Tensor((4,), "float32"):
    n: Tensor((4,), "float32") = negative(a)
    return n
''')["main"]
    assert patterns_graph.GraphReference(nodes, [(2, 8, None, False)], fn).order == [1, 6, 8, 4]
    assert patterns_graph.GraphReference(nodes, [], fn).order == [1, 4, 6, 8]
    assert patterns_graph.GraphReference(nodes, [(0, 3, None, False), (2, 8, None, False)], fn).order == [1, 4, 6, 8]
