"""The ``np.fft`` op table: one line per case of a transform of ``fastgraph.numpy.fft``.

Each :class:`FFTCase` names the transform, its input (shape, real or complex) and ``call(fft)``:
the call written with an ``fft`` module's positional arguments (``a, n, axis, norm`` or
``a, s, axes, norm``), which NumPy's ``np.fft``, fastgraph's ``fg.fft``, HIPS autograd's
``autograd.numpy.fft``, ``jax.numpy.fft`` and ``torch.fft`` all read the same way.
``autograd``: HIPS autograd differentiates the case (it raises for odd lengths of the real
transforms, and differs for ``rfftn`` with a padded ``s``: finite differences decide there).
``tests/test_fft_table.py`` runs it.
"""
from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import numpy as np

__all__ = ["FFTCase", "CASES", "make_input"]


@dataclasses.dataclass(frozen=True)
class FFTCase:
    name: str                 # unique pytest id
    op: str                   # the transform
    call: Callable            # call(fft_module)(x)
    shape: tuple
    complex_input: bool
    autograd: bool = True     # HIPS autograd differentiates it
    order2: bool = False      # also check second derivatives

    def __repr__(self) -> str:
        return f"FFTCase({self.name!r})"


def make_input(case, dtype=np.complex128):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    x = rng.standard_normal(case.shape)
    if case.complex_input:
        return (x + 1j * rng.standard_normal(case.shape)).astype(dtype)
    return x.astype(np.float32 if np.dtype(dtype) == np.complex64 else np.float64)


CASES: list[FFTCase] = []


def case(name, call, shape, complex_input=True, op=None, **kw):
    CASES.append(FFTCase(name, op or name.split("_")[0], call, shape, complex_input, **kw))


case("fft", lambda f: lambda x: f.fft(x), (4, 6), order2=True)
case("fft_real", lambda f: lambda x: f.fft(x), (6,), complex_input=False)
case("fft_pad", lambda f: lambda x: f.fft(x, 8, 0, "ortho"), (4, 6))
case("fft_cut", lambda f: lambda x: f.fft(x, 4, -1, "forward"), (3, 6))
case("ifft", lambda f: lambda x: f.ifft(x), (4, 6))
case("ifft_pad", lambda f: lambda x: f.ifft(x, 7, 0, "ortho"), (4, 6))
case("fft2", lambda f: lambda x: f.fft2(x), (4, 6))
case("fft2_s", lambda f: lambda x: f.fft2(x, (5, 4), (0, 1), "ortho"), (4, 6))
case("ifft2", lambda f: lambda x: f.ifft2(x), (2, 4, 6))
case("fftn", lambda f: lambda x: f.fftn(x), (3, 4, 2))
case("fftn_axes", lambda f: lambda x: f.fftn(x, (3, 8), (0, 2), "forward"), (3, 4, 5))
case("ifftn", lambda f: lambda x: f.ifftn(x), (3, 4))
case("ifftn_s", lambda f: lambda x: f.ifftn(x, (2, 6), (0, 1), "ortho"), (3, 4))
case("rfft", lambda f: lambda x: f.rfft(x), (4, 6), complex_input=False, order2=True)
case("rfft_odd", lambda f: lambda x: f.rfft(x, 7, -1, "ortho"), (3, 6), complex_input=False,
     autograd=False)
case("rfft2", lambda f: lambda x: f.rfft2(x), (4, 6), complex_input=False)
case("rfftn", lambda f: lambda x: f.rfftn(x), (2, 3, 4), complex_input=False)
case("rfftn_s", lambda f: lambda x: f.rfftn(x, (4, 8), (0, 1), "forward"), (4, 6),
     complex_input=False, autograd=False)
case("irfft", lambda f: lambda x: f.irfft(x), (3, 4), order2=True)
case("irfft_odd", lambda f: lambda x: f.irfft(x, 9), (3, 4), autograd=False)
case("irfft_cut", lambda f: lambda x: f.irfft(x, 4, -1, "ortho"), (3, 5))
case("irfft2", lambda f: lambda x: f.irfft2(x), (4, 4))
case("irfftn", lambda f: lambda x: f.irfftn(x), (2, 3, 4))
case("irfftn_s", lambda f: lambda x: f.irfftn(x, (5, 7), (0, 1), "forward"), (4, 4),
     autograd=False)
case("fftshift", lambda f: lambda x: f.fftshift(x), (4, 5))
case("fftshift_axis", lambda f: lambda x: f.fftshift(x, 1), (4, 5), complex_input=False)
case("ifftshift", lambda f: lambda x: f.ifftshift(x), (5, 3))
