"""``fg.to_dot`` and ``sess.explain(format="dot")``: the DOT text parses (a small checker of the
Graphviz syntax used, below), draws what it says (name scopes as clusters, only what the fetches
need, fused kernels as boxes, the eager tape back to its leaves), and ``fg.render_dot`` draws it
with the graphviz package or says what to install."""
from __future__ import annotations

import re
import shutil
import sys

import numpy as np
import pytest

import fastgraph as fg

# ---- a checker of DOT's syntax (the subset fastgraph writes: Graphviz's grammar otherwise) ----
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(->|[{}\[\];=,])|([A-Za-z0-9_.]+))', re.S)


def _tokens(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m and m.end() > pos, f"DOT: cannot read {text[pos:pos + 40]!r}"
        quoted, punct, word = m.groups()
        out.append(("id", _unquote(quoted)) if quoted is not None else
                   ("p", punct) if punct is not None else ("id", word))
        pos = m.end()
    return out


def _unquote(q):
    body = q[1:-1]
    assert not re.search(r'(?<!\\)(?:\\\\)*"', body), f"unescaped quote in {q!r}"
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), body)


class _Parsed:
    def __init__(self):
        self.nodes: dict = {}      # name -> attributes
        self.edges: list = []      # (src, dst, attributes)
        self.cluster_of: dict = {}  # node -> the innermost cluster holding it
        self.parent: dict = {}     # cluster -> enclosing cluster (None: the graph)


def parse_dot(text) -> _Parsed:
    """Parse ``digraph ID { stmts }``; an error names what it could not read."""
    toks, out = _tokens(text), _Parsed()
    i = 0

    def peek():
        assert i < len(toks), "DOT: ended early"
        return toks[i]

    def expect(kind, value=None):
        nonlocal i
        assert i < len(toks), f"DOT: ended early, expected {value or kind}"
        k, v = toks[i]
        assert k == kind and (value is None or v == value), f"DOT: expected {value or kind}, " \
                                                            f"got {v!r}"
        i += 1
        return v

    def attrs():
        nonlocal i
        got = {}
        expect("p", "[")
        while peek() != ("p", "]"):
            key = expect("id")
            expect("p", "=")
            got[key] = expect("id")
            if peek() == ("p", ","):
                i += 1
        expect("p", "]")
        return got

    def stmts(cluster):
        nonlocal i
        while peek() != ("p", "}"):
            k, v = peek()
            if k == "id" and v == "subgraph":
                i += 1
                name = expect("id")
                out.parent[name] = cluster
                expect("p", "{")
                stmts(name)
                expect("p", "}")
                continue
            name = expect("id")
            if peek() == ("p", "="):            # a graph attribute
                i += 1
                expect("id")
            elif peek() == ("p", "->"):
                i += 1
                dst = expect("id")
                a = attrs() if peek() == ("p", "[") else {}
                out.edges.append((name, dst, a))
            else:
                a = attrs() if peek() == ("p", "[") else {}
                if name not in ("node", "edge", "graph"):
                    assert name not in out.nodes, f"DOT: node {name!r} declared twice"
                    out.nodes[name] = a
                    out.cluster_of[name] = cluster
            expect("p", ";")

    expect("id", "digraph")
    expect("id")
    expect("p", "{")
    stmts(None)
    expect("p", "}")
    assert i == len(toks), "DOT: text after the graph"
    for src, dst, _ in out.edges:
        assert src in out.nodes and dst in out.nodes, f"DOT: edge {src} -> {dst} to no node"
    return out


def test_the_checker_refuses_broken_dot():
    for bad in ('digraph g { "a" -> ; }', 'digraph g { "a [label=1]; }', 'graph g { a; }',
                'digraph g { "a" -> "b"; }', 'digraph g { a [label="x"]; '):
        with pytest.raises(AssertionError):
            parse_dot(bad)


# ---- static graphs -------------------------------------------------------------------------------
def _model():
    g = fg.Graph()
    with g.as_default():
        x = fg.placeholder(fg.float64, [None, 4], name="x")
        with fg.name_scope("layer"):
            w = fg.Variable(np.ones((4, 3)), name="W")
            with fg.name_scope("act"):
                h = fg.tanh(fg.matmul(x, w)) * 2.0 + 1.0
        loss = fg.reduce_sum(fg.exp(h) * h, name="loss")
        unused = fg.compat.v1.sin(x, name="unused")
    return g, x, w, loss, unused


def test_name_scopes_are_nested_clusters_and_edges_follow_the_inputs():
    g, x, w, loss, unused = _model()
    d = parse_dot(fg.to_dot(loss))
    assert d.cluster_of["layer/W"] == "cluster_layer"
    assert d.cluster_of["layer/act/matmul"] == "cluster_layer/act"
    assert d.parent["cluster_layer/act"] == "cluster_layer"
    assert d.cluster_of["x"] is None and d.nodes["x"]["shape"] == "invhouse"
    assert d.nodes["layer/W"]["shape"] == "cylinder"
    assert ("x", "layer/act/matmul", {"label": "0"}) in d.edges
    assert ("layer/W", "layer/act/matmul", {"label": "1"}) in d.edges
    assert "(?, 4) float64" in d.nodes["x"]["label"]
    assert "unused" not in d.nodes                      # not needed by the fetch
    assert "unused" in parse_dot(fg.to_dot(g)).nodes    # the whole graph
    both = parse_dot(fg.to_dot({"loss": loss, "other": [unused]}))
    assert {"loss", "unused"} <= set(both.nodes)


def test_labels_are_escaped_and_scalars_show_their_value():
    g = fg.Graph()
    with g.as_default():
        s = fg.constant('say "hi" \\ bye', name="greeting")
        c = fg.constant(2.5, name="half")
        y = fg.equal(s, "x")
        z = fg.placeholder(fg.float64, [], name="z") * c
    d = parse_dot(fg.to_dot([y, z]))
    assert 'say "hi" \\ bye' in d.nodes["greeting"]["label"]
    assert "2.5" in d.nodes["half"]["label"]


def test_assignments_and_training_ops_draw():
    g = fg.Graph()
    with g.as_default():
        w = fg.Variable(np.zeros(2), name="w")
        loss = fg.reduce_sum((w - 1.0) ** 2)
        train = fg.train.GradientDescentOptimizer(0.1).minimize(loss)
    d = parse_dot(fg.to_dot(train))
    assert "w" in d.nodes and any(dst == train.name for _, dst, _ in d.edges)


# ---- compiled plans ----------------------------------------------------------------------------
def test_explain_as_dot_draws_fused_kernels_as_boxes():
    g, x, w, loss, _ = _model()
    with g.as_default(), fg.Session(graph=g) as sess:
        sess.run(fg.global_variables_initializer())
        text = sess.explain(loss, {x: np.ones((2, 4))}, format="dot")
        plain = sess.explain(loss, {x: np.ones((2, 4))})
        with pytest.raises(ValueError, match="'text' or 'dot'"):
            sess.explain(loss, {x: np.ones((2, 4))}, format="png")
    d = parse_dot(text)
    fused = [n for n, a in d.nodes.items() if a.get("shape") == "box"]
    assert fused and all(n in plain for n in fused)
    assert "tanh" in d.nodes[fused[0]]["label"] and "exp" in d.nodes[fused[0]]["label"]
    assert d.cluster_of["layer/W"] == "cluster_layer"
    assert any(dst == fused[0] for _, dst, _ in d.edges)


# ---- eager tapes ---------------------------------------------------------------------------------
def test_an_eager_tape_is_drawn_back_to_its_leaves():
    a = fg.tensor(np.ones(3), requires_grad=True)
    b = fg.tensor(np.arange(3.0))                     # no gradient: not drawn
    y = (fg.sin(a) * a + b).sum()
    d = parse_dot(fg.to_dot(y))
    ops = sorted(attrs["label"].split("\n")[0] for n, attrs in d.nodes.items()
                 if n.startswith("op"))
    assert ops == ["add", "multiply", "sin", "sum"]
    leaves = [n for n in d.nodes if n.startswith("leaf")]
    assert len(leaves) == 1 and "(3,) float64" in d.nodes[leaves[0]]["label"]
    assert sum(1 for s, _, _ in d.edges if s == leaves[0]) == 2      # sin and multiply
    assert list(parse_dot(fg.to_dot(fg.tensor(1.0))).nodes) == ["output"]


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="expected a Graph, graph nodes .* got int"):
        fg.to_dot(3)
    y = (fg.tensor(np.ones(2), requires_grad=True) * 2).sum()
    with pytest.raises(TypeError, match="not its grad_fn"):
        fg.to_dot(y.grad_fn)


# ---- rendering -----------------------------------------------------------------------------------
def test_render_without_graphviz_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(RuntimeError, match=r'pip install "fastgraph\[graphviz\]"'):
        fg.render_dot("digraph g { }", tmp_path / "g.svg")
    with pytest.raises(ValueError, match="format"):
        fg.render_dot("digraph g { }", tmp_path / "g")


def test_render_with_graphviz(tmp_path):
    pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    _, _, _, loss, _ = _model()
    out = fg.render_dot(fg.to_dot(loss), tmp_path / "loss.svg")
    assert "<svg" in open(out).read()
