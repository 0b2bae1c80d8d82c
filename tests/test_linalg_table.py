"""The linear-algebra op table (``linalg_table``), case by case:

* values: plain NumPy in gives exactly NumPy's/SciPy's result, Tensors give the same values
  (float64 exactly, float32 kept float32 and close);
* first-order gradients against central finite differences (float64), PyTorch and, where
  PyTorch lacks the function, HIPS autograd;
* second order (``create_graph=True``) against finite differences of the first-order gradient;
* static graphs and ``fg.function`` traces equal eager values and gradients, and static shapes
  with unknown batch dimensions agree with the values run.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.scipy.linalg as spla
from linalg_table import CASES, FUNCTIONS
from optable import as_list, case_params, close, leaf_tensors, make_inputs
from table_runner import (check_function_equals_eager, check_grad_matches_autograd,
                          check_grad_matches_finite_differences, check_grad_matches_torch,
                          check_second_order_matches_finite_differences,
                          check_static_equals_eager)


# ---- coverage ------------------------------------------------------------------------------------
def test_table_covers_every_function():
    covered = {c.op for c in CASES}
    assert not set(FUNCTIONS) - covered, sorted(set(FUNCTIONS) - covered)
    for name in spla.__all__:
        assert name in covered or f"scipy.{name}" in covered, f"spla.{name} has no case"
    for name in ("cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "lstsq",
                 "matrix_power", "cond", "multi_dot"):
        assert name in fg.linalg.__all__ and callable(getattr(fg.linalg, name))


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_numpy_in_gives_numpys_result_and_tensors_the_same_values(case):
    arrays = make_inputs(case, np.float64)
    refs = as_list(case.ref(*arrays))
    plain = as_list(case.fn(*arrays))
    outs = as_list(case.fn(*leaf_tensors(case, arrays)))
    assert len(plain) == len(refs) == len(outs)
    for p, o, r in zip(plain, outs, refs):
        assert not isinstance(p, fg.Tensor)
        np.testing.assert_array_equal(p, r, err_msg=f"{case.name}: NumPy in")
        assert isinstance(o, fg.Tensor)
        np.testing.assert_array_equal(o.data, r, err_msg=f"{case.name}: Tensors")


@pytest.mark.parametrize("case", case_params(CASES))
def test_float32_stays_float32(case):
    arrays = make_inputs(case, np.float32)
    refs = as_list(case.ref(*[a.astype(np.float64) for a in arrays]))
    ts = leaf_tensors(case, arrays)
    outs = as_list(case.fn(*ts))
    ref32 = as_list(case.ref(*arrays))     # (SciPy's det of float32 is float64)
    for o, r, r32 in zip(outs, refs, ref32):
        if np.dtype(o.dtype).kind == "f":
            assert o.dtype == np.asarray(r32).dtype, f"{case.name}: {o.dtype}"
        close(o.data, r, 2e-4 * case.tol, 2e-4 * case.tol, f"{case.name} float32")
    if not case.zero_grad:
        sum(fg.sum(o) for o in outs if np.dtype(o.dtype).kind == "f").backward()
        for i in case.diff:
            assert ts[i].grad.dtype == np.float32


# ---- first order -------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_grad_matches_finite_differences(case):
    check_grad_matches_finite_differences(case)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.torch is not None))
def test_grad_matches_torch(case):
    check_grad_matches_torch(case)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.autograd is not None))
def test_grad_matches_autograd(case):
    check_grad_matches_autograd(case)


# ---- second order ------------------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.order2
                                             and not c.zero_grad))
def test_second_order_matches_finite_differences(case):
    check_second_order_matches_finite_differences(case)


# ---- static and traced ----------------------------------------------------------------------
@pytest.mark.parametrize("case", case_params(CASES))
def test_static_equals_eager(case):
    check_static_equals_eager(case, values=(1e-10, 1e-12), grads=(1e-9, 1e-11),
                              known_shapes=False)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: not c.zero_grad))
def test_function_equals_eager(case):
    check_function_equals_eager(case, values=(1e-10, 1e-12), grads=(1e-9, 1e-11))


@pytest.mark.parametrize("case", case_params(CASES))
def test_static_shapes_with_unknown_batch_dimensions(case):
    arrays = make_inputs(case, np.float64)
    g = fg.Graph()
    with g.as_default():
        # the leading (batch) axes of matrices unknown; vectors and scalars as they are
        phs = [fg.placeholder(a.dtype, (None,) * (a.ndim - 2) + a.shape[-2:] if a.ndim > 2
                              else a.shape) for a in arrays]
        outs = as_list(case.fn(*phs))
        with fg.Session() as sess:
            vals = sess.run(outs, dict(zip(phs, arrays)))
    for o, v in zip(outs, vals):
        assert o.shape is not None and len(o.shape) == np.ndim(v), (o.shape, np.shape(v))
        for d, n in zip(o.shape, np.shape(v)):
            assert d is None or d == n, (case.name, o.shape, np.shape(v))
