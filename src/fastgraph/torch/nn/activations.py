"""A module for every activation of ``nn.functional`` (``ReLU``, ``GELU``, ``Softmax``...):
each stores its arguments and calls the function."""
from __future__ import annotations

import numpy as np

from ... import nn_ops as N
from . import functional as Fn
from .module import Module
from .parameter import Parameter

#: module name -> (function, its keyword arguments with PyTorch's defaults, in order)
ACTIVATIONS = {
    "ReLU": (Fn.relu, (("inplace", False),)),
    "ReLU6": (N.relu6, (("inplace", False),)),
    "LeakyReLU": (N.leaky_relu, (("negative_slope", 0.01), ("inplace", False))),
    "ELU": (N.elu, (("alpha", 1.0), ("inplace", False))),
    "SELU": (N.selu, (("inplace", False),)),
    "CELU": (N.celu, (("alpha", 1.0), ("inplace", False))),
    "GELU": (N.gelu, (("approximate", "none"),)),
    "SiLU": (N.silu, (("inplace", False),)),
    "Mish": (N.mish, (("inplace", False),)),
    "Sigmoid": (Fn.sigmoid, ()),
    "Tanh": (Fn.tanh, ()),
    "Softplus": (N.softplus, (("beta", 1.0), ("threshold", 20.0))),
    "Softsign": (N.softsign, ()),
    "Softshrink": (N.softshrink, (("lambd", 0.5),)),
    "Hardshrink": (N.hardshrink, (("lambd", 0.5),)),
    "Tanhshrink": (N.tanhshrink, ()),
    "Hardtanh": (N.hardtanh, (("min_val", -1.0), ("max_val", 1.0), ("inplace", False))),
    "Hardsigmoid": (N.hardsigmoid, (("inplace", False),)),
    "Hardswish": (N.hardswish, (("inplace", False),)),
    "LogSigmoid": (N.logsigmoid, ()),
    "GLU": (N.glu, (("dim", -1),)),
    "Softmax": (Fn.softmax, (("dim", None),)),
    "LogSoftmax": (Fn.log_softmax, (("dim", None),)),
    "Softmin": (Fn.softmin, (("dim", None),)),
    "Threshold": (Fn.threshold, (("threshold", None), ("value", None), ("inplace", False))),
}


class _Activation(Module):
    _fn = None
    _args: tuple = ()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        names = [k for k, _ in self._args]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} arguments")
        values = dict(self._args)
        values.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in values:
                raise TypeError(f"{type(self).__name__} got an unexpected keyword argument {k!r}")
            values[k] = v
        missing = [k for k, v in values.items() if v is None and k in ("threshold", "value")]
        if missing:
            raise TypeError(f"{type(self).__name__} missing required argument(s) {missing}")
        self._kw = {k: v for k, v in values.items() if k != "inplace" or
                    "inplace" in _signature_names(type(self)._fn)}
        self.__dict__.update({k: v for k, v in values.items()})

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, **self._kw)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._kw.items() if k != "inplace")


def _signature_names(fn) -> set:
    import inspect
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


for _name, (_fn, _args) in ACTIVATIONS.items():
    globals()[_name] = type(_name, (_Activation,), {
        "_fn": staticmethod(_fn), "_args": _args, "__module__": __name__,
        "__doc__": f"The module of ``nn.functional.{_fn.__name__}``: "
                   f"``{_name}({', '.join(f'{k}={v!r}' for k, v in _args)})``."})


class PReLU(Module):
    """``max(0, x) + weight * min(0, x)`` with a learnt slope per channel (or one shared),
    initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        from .layers import _dtype
        self.num_parameters = int(num_parameters)
        self.weight = Parameter(np.full(num_parameters, init, _dtype(dtype)))

    def forward(self, input):  # noqa: A002
        return N.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


__all__ = sorted(ACTIVATIONS) + ["PReLU"]
