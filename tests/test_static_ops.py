"""Static mode over the op table: every op's value and gradient equal eager's (float64 and
float32), with the full pipeline and with every pass switched off."""
import numpy as np
import pytest

import fastgraph as fg
from optable import as_list, case_params, make_inputs


def _eager(case, arrays, ws):
    ts = [fg.tensor(a, requires_grad=(i in case.diff and a.dtype.kind == "f"))
          for i, a in enumerate(arrays)]
    outs = as_list(case.fn(*ts))
    vals = [np.asarray(o.data) for o in outs]
    loss = None
    for o, w in zip(outs, ws):
        if o.dtype.kind == "f" and o.requires_grad:
            term = (o * w).sum()
            loss = term if loss is None else loss + term
    grads = []
    if loss is not None:
        loss.backward()
    for i in case.diff:
        g = ts[i].grad
        grads.append(None if g is None else np.asarray(g.data))
    return vals, grads


def _static(case, arrays, ws, disable=()):
    fg.reset_default_graph()
    phs = [fg.placeholder(a.dtype, a.shape, name=f"a{i}") for i, a in enumerate(arrays)]
    outs = as_list(case.fn(*phs))
    loss = None
    for o, w in zip(outs, ws):
        if o.dtype.kind == "f":
            term = (o * w).sum()
            loss = term if loss is None else loss + term
    xs = [phs[i] for i in case.diff]
    grads = fg.gradients(loss, xs) if loss is not None else [None] * len(xs)
    feed = dict(zip(phs, arrays))
    with fg.Session(disable=disable) as sess:
        vals = sess.run(outs, feed)
        gvals = sess.run([g for g in grads if g is not None], feed)
    it = iter(gvals)
    return [np.asarray(v) for v in vals], [None if g is None else np.asarray(next(it))
                                           for g in grads]


def _weights(case, arrays):
    outs = [np.asarray(o.data) for o in as_list(case.fn(*[fg.tensor(a) for a in arrays]))]
    rng = np.random.default_rng(7)
    return [rng.standard_normal(np.shape(o)).astype(np.result_type(o))
            if np.result_type(o).kind == "f" else None for o in outs]


def _check(case, dtype, disable=()):
    arrays = make_inputs(case, dtype)
    ws = _weights(case, arrays)
    ev, eg = _eager(case, arrays, ws)
    sv, sg = _static(case, arrays, ws, disable)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(sv, ev):
        assert a.shape == b.shape
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, **tol)
    for a, b in zip(sg, eg):
        if a is None:   # unconnected in the graph: eager gives zeros or None
            assert b is None or not np.any(b)
            continue
        assert b is not None
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("case", case_params(predicate=lambda c: c.static))
def test_static_equals_eager(case):
    _check(case, np.float64)


@pytest.mark.parametrize("case", case_params(predicate=lambda c: c.static))
def test_static_equals_eager_float32(case):
    _check(case, np.float32)


@pytest.mark.parametrize("case", case_params(predicate=lambda c: c.static))
def test_static_all_passes_off(case):
    _check(case, np.float64, disable=("fold", "simplify", "merge", "buffers"))
