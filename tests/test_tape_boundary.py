"""The tape's Python boundary: malformed objects raise, they do not crash the process.

The walker (``eager.tape.walk``) runs with bounds checks off and trusts the shape of what the recorder
built: one parent per input, each a ``TapeNode``, a Tensor or None, one VJP per input.  Every way
Python code could hand it something else is closed at the boundary, one line per case.  (Each of
these crashed the interpreter before the checks existed.)
"""
import numpy as np
import pytest

import fastgraph as fg
from fastgraph._core import G, Kernel, Slot, X1
from fastgraph._core import dispatch as _dispatch
from fastgraph.eager import tape as _tape
from fastgraph.eager.autograd import _ENGINE


def _x():
    return fg.tensor(np.ones(3), requires_grad=True)


def _walk_int_root():
    _tape.walk([5], [np.ones(3)], False, False, _ENGINE)


def _walk_fewer_roots():
    _tape.walk([], [np.ones(3)], False, False, _ENGINE)


def _tapenode_from_python():
    x = _x()
    node = (x * 2).grad_fn
    _tape.TapeNode(node.op, (x.data,), None, node.ans, (x, x))


def _set_grad_fn():
    x = _x()
    x.grad_fn = (x * 2).grad_fn


def _tensor_with_bad_grad_fn():
    fg.Tensor(np.ones(3), grad_fn=5)


def _set_parents():
    (_x() * 2).grad_fn.parents = ()


def _more_args_than_vjps():
    x = _x()
    _dispatch.apply(fg.tanh.op, (x, x), None)     # np.tanh(x, out) runs; tanh has one VJP


def _eager_vjp_naming_a_missing_input():
    fg.multiply.op.set_eager_vjps([Kernel(fg.multiply.op, G, Slot(2 + 5)), None])


def _eager_vjps_too_few():
    fg.multiply.op.set_eager_vjps([Kernel(fg.multiply.op, G, X1)])


def _set_eager_vjps():
    fg.multiply.op.eager_vjps = ()


def _apply_none_op():
    _dispatch.apply(None, (_x(),), None)


def _record_none_args():
    _tape.record(fg.tanh.op, None, None)


def _configure_not_a_tensor_class():
    _tape.configure(int, 0, None, None, None, {})


CASES = [
    (_apply_none_op, TypeError, "OpDef"),
    (_record_none_args, TypeError, "OpDef"),
    (_configure_not_a_tensor_class, TypeError, "TensorBase subclass"),
    (_walk_int_root, TypeError, "root must be"),
    (_walk_fewer_roots, ValueError, "gradient"),
    (_tapenode_from_python, TypeError, "cannot be created"),
    (_set_grad_fn, AttributeError, "not writable"),
    (_tensor_with_bad_grad_fn, TypeError, "grad_fn must be"),
    (_set_parents, AttributeError, "not writable"),
    (_more_args_than_vjps, TypeError, "argument"),
    (_eager_vjp_naming_a_missing_input, ValueError, "does not have"),
    (_eager_vjps_too_few, ValueError, "eager VJP"),
    (_set_eager_vjps, AttributeError, "not writable"),
]


@pytest.mark.parametrize("call, exc, match", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_malformed_tape_input_raises(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_a_replaced_vjp_table_too_short_raises_in_backward():
    x = _x()
    y = fg.tanh(x)
    old = fg.tanh.op.vjps
    try:
        fg.tanh.op.vjps = ()
        with pytest.raises(RuntimeError, match="no VJP rule"):
            y.sum().backward()
    finally:
        fg.tanh.op.vjps = old
    z = fg.tanh(x)
    z.sum().backward()
    np.testing.assert_allclose(x.grad, 1 - np.tanh(1.0) ** 2)


def test_empty_tapenode_repr():
    node = _tape.TapeNode.__new__(_tape.TapeNode)
    assert repr(node) == "<TapeNode (empty)>" and node.name() is None


def test_builtin_eager_vjps_still_valid():
    """The checks accept every op's own declaration (they run at import), and backward works."""
    x, y = _x(), fg.tensor(np.full(3, 2.0), requires_grad=True)
    (x * y).sum().backward()
    np.testing.assert_allclose(x.grad, 2.0)
    np.testing.assert_allclose(y.grad, 1.0)
