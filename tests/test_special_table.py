"""The special-function and distribution op tables (``special_table``, ``stats_table``), case
by case: SciPy's values for NumPy
and Tensor inputs, float32 kept, gradients against central finite differences, PyTorch or HIPS
autograd, second order, static graphs and ``fg.function`` against eager (``table_runner``'s
checks, as ``test_linalg_table`` runs them), and the arguments without a gradient.
"""
from __future__ import annotations

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.scipy.special as fgs
from optable import as_list, case_params, close, leaf_tensors, make_inputs
from special_table import CASES as SPECIAL_CASES, FUNCTIONS, KEEP_FLOAT32
from stats_table import CASES as STATS_CASES, STATS_FUNCTIONS
from table_runner import (check_function_equals_eager, check_grad_matches_autograd,
                          check_grad_matches_finite_differences, check_grad_matches_torch,
                          check_second_order_matches_finite_differences,
                          check_static_equals_eager)

from signal_table import CASES as SIGNAL_CASES
from integrate_table import CASES as ODE_CASES

CASES = SPECIAL_CASES + STATS_CASES + SIGNAL_CASES + ODE_CASES


def test_table_covers_every_function():
    covered = {c.op for c in CASES}
    assert not set(FUNCTIONS) - covered, sorted(set(FUNCTIONS) - covered)
    assert set(FUNCTIONS) <= set(fgs.__all__)
    assert not set(fgs.__all__) - covered, sorted(set(fgs.__all__) - covered)
    assert not set(STATS_FUNCTIONS) - covered, sorted(set(STATS_FUNCTIONS) - covered)
    import fastgraph.scipy.stats as fst
    for family in fst.__all__:
        for method in getattr(fst, family).__all__:
            assert f"{family}.{method}" in covered, f"{family}.{method} has no case"


@pytest.mark.parametrize("case", case_params(CASES))
def test_numpy_in_gives_scipys_result_and_tensors_the_same_values(case):
    arrays = make_inputs(case, np.float64)
    refs = as_list(case.ref(*arrays))
    plain = as_list(case.fn(*arrays))
    outs = as_list(case.fn(*leaf_tensors(case, arrays)))
    assert len(plain) == len(refs) == len(outs)
    for p, o, r in zip(plain, outs, refs):
        assert not isinstance(p, fg.Tensor)
        # (the distributions are compositions: SciPy's values up to rounding)
        rtol = 1e-14 if case in SPECIAL_CASES else 1e-11 * case.tol
        np.testing.assert_allclose(p, r, rtol=rtol, atol=0, err_msg=f"{case.name}: NumPy in")
        assert np.shape(p) == np.shape(r)
        np.testing.assert_array_equal(o.data, p, err_msg=f"{case.name}: Tensors")


@pytest.mark.parametrize("case", case_params(CASES))
def test_float32_stays_float32(case):
    arrays = make_inputs(case, np.float32)
    ref32 = as_list(case.ref(*arrays))
    outs = as_list(case.fn(*leaf_tensors(case, arrays)))
    for o, r in zip(outs, ref32):
        # fastgraph keeps float32 where SciPy's value is float64 (the distributions,
        # polygamma, multigammaln)
        keep = case.op in KEEP_FLOAT32 or case not in SPECIAL_CASES
        expected = np.float32 if keep else np.asarray(r).dtype
        assert o.dtype == expected, f"{case.name}: {o.dtype}"
        close(o.data, r, 1e-5, 1e-5, f"{case.name} float32")


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: not c.zero_grad))
def test_grad_matches_finite_differences(case):
    check_grad_matches_finite_differences(case)


def test_piecewise_constant_gammasgn_has_zero_gradient():
    x = fg.tensor(np.array([-1.5, 0.5, 2.5]), requires_grad=True)
    fg.sum(fgs.gammasgn(x) * x).backward()
    np.testing.assert_array_equal(x.grad.data, fgs.gammasgn(x.data))


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.torch is not None))
def test_grad_matches_torch(case):
    check_grad_matches_torch(case)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.autograd is not None))
def test_grad_matches_autograd(case):
    check_grad_matches_autograd(case)


@pytest.mark.parametrize("case", case_params(CASES, predicate=lambda c: c.order2
                                             and not c.zero_grad))
def test_second_order_matches_finite_differences(case):
    check_second_order_matches_finite_differences(case)


@pytest.mark.parametrize("case", case_params(CASES))
def test_static_equals_eager(case):
    check_static_equals_eager(case, values=(1e-12, 1e-14), grads=(1e-10, 1e-12))


def _traced(case) -> bool:
    # the distributions' other methods are the same compositions as their log densities
    return not case.zero_grad and (case in SPECIAL_CASES or case.order2)


@pytest.mark.parametrize("case", case_params(CASES, predicate=_traced))
def test_function_equals_eager(case):
    check_function_equals_eager(case, values=(1e-12, 1e-14), grads=(1e-10, 1e-12))


# ---- arguments without a gradient ------------------------------------------------------------
@pytest.mark.parametrize("fn, args, culprit", [
    (fgs.gammainc, (1.5, 2.0), "gammainc: no gradient with respect to a"),
    (fgs.gammaincc, (1.5, 2.0), "gammaincc: no gradient with respect to a"),
    (lambda a, x: fgs.betainc(a, 2.0, x), (1.5, 0.3), "betainc: no gradient with respect to a"),
    (lambda b, x: fgs.betainc(2.0, b, x), (1.5, 0.3), "betainc: no gradient with respect to b"),
    (fgs.iv, (1.5, 2.0), "iv: no gradient with respect to v"),
    (fgs.ive, (1.5, 2.0), "ive: no gradient with respect to v"),
])
def test_gradients_scipy_cannot_give_raise(fn, args, culprit):
    a = fg.tensor(args[0], requires_grad=True)
    x = fg.tensor(args[1], requires_grad=True)
    with pytest.raises(NotImplementedError, match=culprit):
        fn(a, x).backward()
    # held constant, the other argument's gradient is there
    x = fg.tensor(args[1], requires_grad=True)
    fn(args[0], x).backward()
    assert np.isfinite(x.grad.data) and x.grad.data != 0
    g = fg.Graph()
    with g.as_default():
        pa, px = fg.placeholder(np.float64, ()), fg.placeholder(np.float64, ())
        with pytest.raises(NotImplementedError, match=culprit):
            fg.gradients(fn(pa, px), [pa])


def test_integer_orders_carry_no_gradient():
    n = fg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    x = fg.tensor(np.array([0.7, 1.3]), requires_grad=True)
    fg.sum(fgs.jn(n, x) + fgs.yn(n, x)).backward()
    assert n.grad is None or not np.any(n.grad.data)
    assert np.all(x.grad.data != 0)


def test_multigammaln_checks_its_domain():
    with pytest.raises(ValueError, match="multigammaln"):
        fgs.multigammaln(fg.tensor(np.array([0.4, 3.0])), 2)
    with pytest.raises(ValueError, match="multigammaln"):
        fgs.multigammaln(3.0, 0)


def test_logsumexp_of_a_negative_sum_is_nan_without_return_sign():
    import scipy.special as sps
    a, b = np.array([1.0, 2.0]), np.array([1.0, -2.0])
    with np.errstate(invalid="ignore"):
        assert np.isnan(fgs.logsumexp(fg.tensor(a), b=b).data)
        assert np.isnan(sps.logsumexp(a, b=b))
    v, s = fgs.logsumexp(fg.tensor(a), b=b, return_sign=True)
    np.testing.assert_allclose([v.data, s.data], sps.logsumexp(a, b=b, return_sign=True))


def test_other_names_are_scipys():
    import scipy.special as sps
    assert fgs.i0e is sps.i0e and fgs.zeta is sps.zeta


# ---- fastgraph.scipy.stats: import forms and SciPy's own methods ---------------------------------
def test_stats_families_import_as_users_write_them():
    import importlib

    import scipy.stats as ss

    import fastgraph.scipy.stats.norm as norm
    from fastgraph.scipy.stats import multivariate_normal as mvn
    from fastgraph.scipy.stats.t import logpdf
    assert importlib.import_module("fastgraph.scipy.stats.gamma").logpdf is \
        fg.scipy.stats.gamma.logpdf
    assert logpdf is fg.scipy.stats.t.logpdf and mvn is fg.scipy.stats.multivariate_normal
    x = fg.tensor(np.array([0.3, -1.2]), requires_grad=True)
    fg.sum(norm.logpdf(x, 0.5, 2.0)).backward()
    np.testing.assert_allclose(x.grad.data, -(x.data - 0.5) / 4.0)
    # what fastgraph does not differentiate is SciPy's own
    np.testing.assert_array_equal(norm.rvs(size=3, random_state=0),
                                  ss.norm.rvs(size=3, random_state=0))
    assert norm.ppf(0.3) == ss.norm.ppf(0.3) and fg.scipy.stats.ttest_ind is ss.ttest_ind


def test_stats_gradients_scipy_cannot_give_raise():
    import fastgraph.scipy.stats as fst
    a = fg.tensor(2.0, requires_grad=True)
    with pytest.raises(NotImplementedError, match="gammainc: no gradient with respect to a"):
        fst.gamma.cdf(1.5, a).backward()
    with pytest.raises(NotImplementedError, match="allow_singular"):
        fst.multivariate_normal.logpdf(np.zeros(2), cov=np.eye(2), allow_singular=True)


def test_stats_outside_the_support_is_scipys_with_zero_gradient():
    import scipy.stats as ss

    import fastgraph.scipy.stats as fst
    x = np.array([-0.5, 0.5, 1.5])
    for family, args in (("beta", (2.0, 3.0)), ("uniform", ()), ("expon", ()), ("gamma", (2.0,))):
        t = fg.tensor(x, requires_grad=True)
        out = getattr(fst, family).logpdf(t, *args)
        np.testing.assert_allclose(out.data, getattr(ss, family).logpdf(x, *args), rtol=1e-12)
        fg.sum(fg.where(fg.isfinite(out), out, 0.0)).backward()
        assert np.all(np.isfinite(t.grad.data)), family
        assert t.grad.data[0] == 0, family
    k = np.array([-1.0, 2.0, 2.5])
    np.testing.assert_allclose(fst.poisson.logpmf(k, 1.5), ss.poisson.logpmf(k, 1.5), rtol=1e-12)
