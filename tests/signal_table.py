"""The ``fastgraph.scipy.signal.convolve`` op table: SciPy's forms (``full valid same``, one to
three dimensions, either operand the larger) against ``scipy.signal.convolve``, and HIPS
autograd's ``axes``/``dot_axes`` form of a convolutional layer against autograd's; run by
``tests/test_special_table.py`` beside the special functions.
"""
from __future__ import annotations

import scipy.signal as ssig

import fastgraph.scipy.signal as fsig
from linalg_table import LinalgCase

__all__ = ["CASES"]

CASES: list[LinalgCase] = []


def _ag_convolve(*args, **kw):
    from autograd.scipy.signal import convolve
    return convolve(*args, **kw)


for _sa, _sb in (((5,), (3,)), ((3,), (6,)), ((4, 5), (2, 3)), ((2, 3), (3, 4)),
                 ((3, 2, 4), (2, 2, 2))):
    for _mode in ("full", "valid", "same"):
        _name = f"convolve_{len(_sa)}d_{'x'.join(map(str, _sa))}_{'x'.join(map(str, _sb))}_{_mode}"
        CASES.append(LinalgCase(
            _name, "signal.convolve",
            lambda a, b, m=_mode: fsig.convolve(a, b, mode=m),
            ((_sa, "real"), (_sb, "real")),
            lambda a, b, m=_mode: ssig.convolve(a, b, mode=m, method="direct"),
            None, (0, 1),
            autograd=lambda a, b, m=_mode: _ag_convolve(a, b, mode=m),
            order2=len(_sa) == 1))

# a convolutional layer: images (batch, channels, h, w) with filters (out, channels, kh, kw)
_LAYER = dict(axes=([2, 3], [2, 3]), dot_axes=([1], [1]))
for _mode in ("valid", "full"):
    CASES.append(LinalgCase(
        f"convolve_layer_{_mode}", "signal.convolve",
        lambda a, b, m=_mode: fsig.convolve(a, b, mode=m, **_LAYER),
        (((2, 2, 5, 5), "real"), ((3, 2, 3, 3), "real")),
        lambda a, b, m=_mode: _ag_convolve(a, b, mode=m, **_LAYER), None, (0, 1),
        autograd=lambda a, b, m=_mode: _ag_convolve(a, b, mode=m, **_LAYER),
        order2=_mode == "valid"))
