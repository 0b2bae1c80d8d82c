"""``RNN``, ``LSTM``, ``GRU`` (and their cells): PyTorch's recurrent layers, multi-layer,
bidirectional, ``batch_first``, with PyTorch's parameter names (``weight_ih_l0``,
``bias_hh_l1_reverse``...), gate order (LSTM ``i f g o``, GRU ``r z n``) and initialisation
(every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))), so a PyTorch
``state_dict`` loads into them.  Each step is written with fastgraph's ops: eager, static
and ``fg.function`` alike, differentiable through time."""
from __future__ import annotations

import math

import numpy as np

from ... import ops as _F
from . import init
from .layers import _dtype, _optional_parameters
from .module import Module
from .parameter import Parameter

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _linear(x, w, b):
    y = _F.matmul(x, _F.transpose(w))
    return y if b is None else y + b


def _cell(mode: str, xw, h, c, w_hh, b_hh):
    """One step: ``xw`` is the input's projection ``x @ w_ih.T + b_ih`` (computed for every
    step at once); returns the new ``(h, c)``."""
    hw = _linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return _F.tanh(xw + hw), None
    if mode == "RNN_RELU":
        return _F.relu(xw + hw), None
    if mode == "LSTM":
        i, f, g, o = _F.split(xw + hw, 4, axis=-1)
        c = _F.sigmoid(f) * c + _F.sigmoid(i) * _F.tanh(g)
        return _F.sigmoid(o) * _F.tanh(c), c
    xr, xz, xn = _F.split(xw, 3, axis=-1)
    hr, hz, hn = _F.split(hw, 3, axis=-1)
    r = _F.sigmoid(xr + hr)
    z = _F.sigmoid(xz + hz)
    n = _F.tanh(xn + r * hn)
    return (1 - z) * n + z * h, None


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM: proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1]")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size and num_layers must be greater than zero")
        self.mode, self.input_size, self.hidden_size = mode, int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = int(num_layers), bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        dt = _dtype(dtype)
        gates = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else hidden_size * dirs
                names = [("weight_ih" + sfx, (gates, in_size)),
                         ("weight_hh" + sfx, (gates, hidden_size))]
                if bias:
                    names += [("bias_ih" + sfx, (gates,)), ("bias_hh" + sfx, (gates,))]
                for name, shape in names:
                    self.register_parameter(name, Parameter(np.empty(shape, dt)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for p in self._parameters.values():
            init.uniform_(p, -std, std)

    def _params(self, layer: int, d: int):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx) if self.bias or "weight" in n else None  # noqa
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def forward(self, input, hx=None):  # noqa: A002
        name = type(self).__name__
        nd = len(input.shape)
        if nd not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {nd}D instead")
        batched = nd == 3
        x = input if batched else _F.expand_dims(input, 1 if not self.batch_first else 0)
        if self.batch_first:
            x = _F.swapaxes(x, 0, 1)
        steps, batch = x.shape[0], x.shape[1]
        if x.shape[2] != self.input_size:
            raise ValueError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[2]}")
        dirs = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        hshape = (self.num_layers * dirs, batch, self.hidden_size)
        h0 = c0 = None
        if hx is not None:
            h0, c0 = hx if lstm else (hx, None)
            if not batched:
                h0 = _F.expand_dims(h0, 1)
                c0 = None if c0 is None else _F.expand_dims(c0, 1)
            for v, what in ((h0, "hidden"), (c0, "cell")):
                if v is not None and tuple(v.shape) != hshape:
                    raise RuntimeError(f"{name}: Expected {what} size {hshape}, got "
                                       f"{tuple(v.shape)}")
        zeros = np.zeros((batch, self.hidden_size), self._parameters["weight_ih_l0"].dtype)
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._params(layer, d)
                k = layer * dirs + d
                h = zeros if h0 is None else h0[k]
                c = (zeros if c0 is None else c0[k]) if lstm else None
                xw = _linear(x, w_ih, b_ih)          # every step's input projection at once
                order = range(steps - 1, -1, -1) if d else range(steps)
                ys = [None] * steps
                for t in order:
                    h, c = _cell(self.mode, xw[t], h, c, w_hh, b_hh)
                    ys[t] = h
                outs.append(_F.stack(ys))
                hn.append(h)
                if lstm:
                    cn.append(c)
            x = outs[0] if dirs == 1 else _F.concatenate(outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                from ... import nn_ops as N
                x = N.dropout(x, self.dropout, True)
        out = _F.swapaxes(x, 0, 1) if self.batch_first else x
        h_n = _F.stack(hn)
        c_n = _F.stack(cn) if lstm else None
        if not batched:
            out = _F.squeeze(out, 1 if not self.batch_first else 0)
            h_n = _F.squeeze(h_n, 1)
            c_n = None if c_n is None else _F.squeeze(c_n, 1)
        return out, ((h_n, c_n) if lstm else h_n)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU with
    ``nonlinearity='relu'``); returns ``(output, h_n)``.

        >>> out, h = nn.RNN(3, 5, num_layers=2)(fg.randn(7, 2, 3).astype(np.float32))
        >>> out.shape, h.shape
        ((7, 2, 5), (2, 2, 5))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory; returns ``(output, (h_n, c_n))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit; returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, dtype=dtype)


class _CellBase(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        dt = _dtype(dtype)
        gates = _GATES[self._mode] * hidden_size
        self.weight_ih = Parameter(np.empty((gates, input_size), dt))
        self.weight_hh = Parameter(np.empty((gates, hidden_size), dt))
        _optional_parameters(self, bias, bias_ih=np.empty(gates, dt),
                             bias_hh=np.empty(gates, dt))
        std = 1.0 / math.sqrt(hidden_size)
        for p in self._parameters.values():
            if p is not None:
                init.uniform_(p, -std, std)

    def forward(self, input, hx=None):  # noqa: A002
        batched = len(input.shape) == 2
        x = input if batched else _F.expand_dims(input, 0)
        zeros = np.zeros((x.shape[0], self.hidden_size), self._parameters["weight_ih"].dtype)
        lstm = self._mode == "LSTM"
        if hx is None:
            h, c = zeros, (zeros if lstm else None)
        else:
            h, c = hx if lstm else (hx, None)
            if not batched:
                h = _F.expand_dims(h, 0)
                c = None if c is None else _F.expand_dims(c, 0)
        h, c = _cell(self._mode, _linear(x, self.weight_ih, self.bias_ih), h, c,
                     self.weight_hh, self.bias_hh)
        if not batched:
            h = _F.squeeze(h, 0)
            c = None if c is None else _F.squeeze(c, 0)
        return (h, c) if lstm else h


class RNNCell(_CellBase):
    """One step of ``RNN`` (``nonlinearity='tanh'`` or ``'relu'``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTMCell(_CellBase):
    """One step of ``LSTM``; returns ``(h, c)``."""
    _mode = "LSTM"


class GRUCell(_CellBase):
    """One step of ``GRU``."""
    _mode = "GRU"
