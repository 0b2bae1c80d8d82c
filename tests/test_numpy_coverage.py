"""NumPy's namespace, walked: every public name is in one group of ``fastgraph.numpy_coverage``
(differentiable, no gradient by nature, refused, not an array function), each function behaves
as its group says when called on a Tensor that requires grad, and docs/numpy-coverage.md is the
page the classification makes."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import fastgraph as fg
import fastgraph.numpy as fnp
from fastgraph import numpy_coverage as cov

PAGE = Path(__file__).resolve().parent.parent / "docs" / "numpy-coverage.md"


def test_every_public_name_is_in_exactly_one_group():
    table = cov.classify()
    assert set(table) == set(cov.public_names())
    unclassified = sorted(n for n, (group, _) in table.items() if group not in cov.GROUPS)
    assert not unclassified, f"classify these in fastgraph/numpy_coverage.py: {unclassified}"
    counts = {g: sum(1 for grp, _ in table.values() if grp == g) for g in cov.GROUPS}
    assert counts["differentiable"] > 200, counts


def test_a_name_listed_twice_or_listed_and_differentiable_is_refused(monkeypatch):
    monkeypatch.setitem(cov.REFUSED, "sorting", ("sort",))
    with pytest.raises(ValueError, match="np.sort is differentiable now"):
        cov.classify()
    monkeypatch.delitem(cov.REFUSED, "sorting")
    monkeypatch.setitem(cov.REFUSED, "again", ("argmax",))
    with pytest.raises(ValueError, match="np.argmax is listed twice"):
        cov.classify()


def test_the_page_is_current():
    text = PAGE.read_text()
    made_for = re.search(r"Generated for NumPy (\d+\.\d+)", text).group(1)
    if made_for != ".".join(np.__version__.split(".")[:2]):
        pytest.skip(f"the page is generated for NumPy {made_for}, this is {np.__version__}")
    assert text == cov.page(), "docs/numpy-coverage.md is stale: run " \
        "`PYTHONPATH=src python -m fastgraph.numpy_coverage --write`"


# ---- each function on a Tensor that requires grad does what its group says -----------------------
X = np.array([[0.75, -1.5, 2.25], [1.25, 0.5, -0.25]])
PATTERNS = (lambda t: (t,), lambda t: (t, t), lambda t: (t[0],), lambda t: (t[0], t[1]),
            lambda t: (t, 1), lambda t: (t[0, 0],))


#: no-gradient categories whose functions read a Tensor as a size or a string: a Tensor that
#: requires grad is refused as a conversion (its value would become a constant)
SIZES_AND_STRINGS = {"sizes, counts and windows", "strings, dates and business days",
                     "shapes, dtypes, flags and memory"}
#: NumPy's own errors for a Tensor argument: it asks for attributes ndarrays have
#: (``__dlpack__``, ``flags``) or casts floats to dates
NUMPY_OWN_ERRORS = {"from_dlpack": AttributeError, "isfortran": AttributeError,
                    "is_busday": TypeError}
#: results whose contents are unspecified (np.empty_like)
VALUE_FREE_CONTENTS = {"empty_like", "empty"}


def _floating(value) -> bool:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind in "fc"
    if isinstance(value, (list, tuple)):
        return any(_floating(v) for v in value)
    return isinstance(value, float)


def _plain_call(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return fn(*args)


def _probes():
    """``(name, group, args)``: the first argument pattern NumPy itself takes for each function."""
    out = []
    for name, (group, _) in sorted(cov.classify().items()):
        if group == "not an array function":
            continue
        fn = getattr(np, name)
        for pattern in PATTERNS:
            args = pattern(X.copy())     # (a fresh copy: some functions write into it)
            try:
                want = _plain_call(fn, args)
            except Exception:
                continue
            out.append((name, group, pattern, want))
            break
    return out


PROBES = _probes()


def test_enough_functions_are_probed():
    probed = {g: sum(1 for _, grp, _, _ in PROBES if grp == g) for g in cov.GROUPS}
    assert probed["differentiable"] > 150 and probed["no gradient"] > 40 and \
        probed["refused"] > 15, probed


@pytest.mark.parametrize("name,group,pattern,want", PROBES, ids=[p[0] for p in PROBES])
def test_each_function_on_a_tensor_does_what_its_group_says(name, group, pattern, want):
    t = fg.tensor(X.copy(), requires_grad=True)
    args = pattern(t)
    if name in NUMPY_OWN_ERRORS:
        with pytest.raises(NUMPY_OWN_ERRORS[name]):
            _plain_call(getattr(np, name), args)
        return
    if group == "differentiable":
        fn = getattr(np, name) if cov.routes_numpy_call(name) else getattr(fnp, name)
        try:
            got = _plain_call(fn, args)
        except (TypeError, ValueError) as e:
            # a Tensor where fastgraph takes plain values only (np.roll's shift, np.clip with
            # neither bound): refused naming the function
            assert name in str(e), f"np.{name}: {e}"
            return
        if _floating(want):
            pieces = got if isinstance(got, (list, tuple)) else [got]
            assert any(isinstance(p, fg.Tensor) and p.requires_grad for p in pieces), \
                f"np.{name} on a Tensor gave {type(got).__name__}"
    elif group == "no gradient":
        try:
            got = _plain_call(getattr(np, name), args)
        except RuntimeError as e:      # a size or a string made of a Tensor that requires grad
            assert cov.classify()[name][1] in SIZES_AND_STRINGS, f"np.{name}: {e}"
            assert "Can't convert a Tensor that requires grad" in str(e)
            return
        except TypeError as e:         # a size asked for with __index__ (NumPy 2.5): no float
            assert cov.classify()[name][1] in SIZES_AND_STRINGS, f"np.{name}: {e}"
            assert "only an integer Tensor of one element can be used as an index" in str(e)
            return
        assert not isinstance(got, fg.Tensor) or not got.requires_grad
        if name not in VALUE_FREE_CONTENTS:
            np.testing.assert_equal(got.data if isinstance(got, fg.Tensor) else got, want)
    else:
        if not _floating(want):
            return    # (a call whose result holds no floating values loses nothing)
        with pytest.raises((TypeError, RuntimeError), match="requires grad"):
            _plain_call(getattr(np, name), args)


def test_writers_into_an_array_refuse_tensors_that_require_grad_and_bump_versions():
    t = fg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    dst = np.zeros(3)
    with pytest.raises(TypeError, match="np.copyto: it writes the values into an array"):
        np.copyto(dst, t)
    assert not dst.any()                                  # nothing written
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad.*np.put"):
        np.put(t, 0, 5.0)
    plain = fg.tensor([3.0, 1.0, 2.0])
    y = fg.tensor(2.0, requires_grad=True) * plain        # the tape saves plain's data
    np.put(plain, 0, 5.0)
    np.testing.assert_array_equal(plain.data, [5.0, 1.0, 2.0])
    with pytest.raises(RuntimeError):
        fg.sum(y).backward()                              # the saved value changed
    with fg.no_grad():
        np.copyto(dst, t)
    np.testing.assert_array_equal(dst, [3.0, 1.0, 2.0])
