"""``fg.layers``: TensorFlow 1's ``tf.layers`` -- ``dense``, ``conv2d`` and ``flatten`` build a
layer on a graph value, creating its Variables (``<layer>/kernel``, ``<layer>/bias``) in the
graph, initialised as TensorFlow does by default (the kernel from Glorot's uniform
distribution, drawn from ``fg.random.seed``'s generator; the bias zeros).  Run
``fg.global_variables_initializer()`` before using them.

    >>> x = fg.placeholder(fg.float32, (None, 4))
    >>> h = fg.layers.dense(x, 8, activation=fg.nn.relu)
    >>> [v.name for v in fg.trainable_variables()]
    ['dense/kernel', 'dense/bias']
"""
from __future__ import annotations

import math

import numpy as np

from . import nn as _nn
from . import ops as _F
from ._core import random_state
from .static.graph import get_default_graph
from .static.node import NODE_TYPES, as_node
from .static.variables import Variable

__all__ = ["dense", "conv2d", "flatten"]


def _scope(name, base: str) -> str:
    """A fresh layer name per graph: ``dense``, ``dense_1``, ... (or ``name`` if given)."""
    g = get_default_graph()
    used = g.__dict__.setdefault("_layer_names", set())
    if name is not None:
        if name in used:
            raise ValueError(f"fg.layers: a layer named {name!r} exists already in this graph "
                             f"(variable sharing with reuse= is not supported)")
        used.add(name)
        return name
    i, cand = 0, base
    while cand in used:
        i += 1
        cand = f"{base}_{i}"
    used.add(cand)
    return cand


def _glorot_uniform(shape, fan_in, fan_out, dtype):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return random_state.generator().uniform(-limit, limit, shape).astype(dtype)


def _initial(init, shape, dtype, default):
    if init is None:
        return default()
    if callable(init):
        return np.asarray(init(shape, dtype=dtype), dtype)
    return np.broadcast_to(np.asarray(init, dtype), shape).copy()


def _graph_value(inputs, what: str):
    if type(inputs) not in NODE_TYPES:
        if hasattr(inputs, "grad_fn"):
            raise TypeError(f"fg.layers.{what} builds graph layers and got an eager Tensor; "
                            f"use fastgraph.torch.nn's modules for eager code")
        inputs = as_node(inputs)
    return inputs


def _float_dtype(x):
    dt = np.dtype(x.dtype)
    return dt if dt.kind == "f" else np.dtype(np.float32)


def dense(inputs, units: int, activation=None, use_bias: bool = True, kernel_initializer=None,
          bias_initializer=None, trainable: bool = True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)``, ``kernel`` ``(in, units)`` (TensorFlow 1's
    ``tf.layers.dense``; the last axis is the features)."""
    if reuse:
        raise NotImplementedError("fg.layers.dense: reuse= (variable sharing) is not supported")
    x = _graph_value(inputs, "dense")
    n_in = x.shape[-1] if x.shape else None
    if n_in is None:
        raise ValueError(f"fg.layers.dense: the last dimension of the inputs must be known, got "
                         f"shape {x.shape}")
    scope, dt = _scope(name, "dense"), _float_dtype(x)
    shape = (int(n_in), int(units))
    kernel = Variable(_initial(kernel_initializer, shape, dt,
                               lambda: _glorot_uniform(shape, shape[0], shape[1], dt)),
                      name=f"{scope}/kernel", trainable=trainable)
    y = _F.matmul(x, kernel) if len(x.shape) == 2 else _F.tensordot(x, kernel, 1)
    if use_bias:
        bias = Variable(_initial(bias_initializer, (int(units),), dt,
                                 lambda: np.zeros(int(units), dt)),
                        name=f"{scope}/bias", trainable=trainable)
        y = y + bias
    return y if activation is None else activation(y)


def conv2d(inputs, filters: int, kernel_size, strides=(1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate=(1, 1), activation=None,
           use_bias: bool = True, kernel_initializer=None, bias_initializer=None,
           trainable: bool = True, name=None, reuse=None):
    """2-d convolution layer (TensorFlow 1's ``tf.layers.conv2d``): ``kernel``
    ``(kh, kw, in, filters)``, ``padding`` ``'valid'`` or ``'same'``, channels last by
    default."""
    if reuse:
        raise NotImplementedError("fg.layers.conv2d: reuse= (variable sharing) is not supported")
    x = _graph_value(inputs, "conv2d")
    fmt = {"channels_last": "NHWC", "channels_first": "NCHW"}.get(data_format)
    if fmt is None:
        raise ValueError(f"fg.layers.conv2d: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    c_in = x.shape[3] if fmt == "NHWC" else x.shape[1]
    if c_in is None:
        raise ValueError("fg.layers.conv2d: the number of input channels must be known")
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    scope, dt = _scope(name, "conv2d"), _float_dtype(x)
    shape = (int(kh), int(kw), int(c_in), int(filters))
    rf = kh * kw
    kernel = Variable(_initial(kernel_initializer, shape, dt,
                               lambda: _glorot_uniform(shape, c_in * rf, filters * rf, dt)),
                      name=f"{scope}/kernel", trainable=trainable)
    y = _nn.conv2d(x, kernel, strides, padding.upper(), data_format=fmt,
                   dilations=dilation_rate)
    if use_bias:
        bias = Variable(_initial(bias_initializer, (int(filters),), dt,
                                 lambda: np.zeros(int(filters), dt)),
                        name=f"{scope}/bias", trainable=trainable)
        y = y + (bias if fmt == "NHWC" else _F.reshape(bias, (-1, 1, 1)))
    return y if activation is None else activation(y)


def flatten(inputs, name=None, data_format: str = "channels_last"):
    """Every axis but the batch one flattened (TensorFlow 1's ``tf.layers.flatten``; with
    ``channels_first`` the features are reordered to channels last first, as TensorFlow
    does)."""
    x = _graph_value(inputs, "flatten") if type(inputs) in NODE_TYPES or not hasattr(
        inputs, "grad_fn") else inputs
    shape = tuple(x.shape)
    if data_format == "channels_first" and len(shape) > 2:
        x = _F.transpose(x, (0,) + tuple(range(2, len(shape))) + (1,))
        shape = tuple(x.shape)
    rest = shape[1:]
    n = -1 if any(d is None for d in rest) else int(np.prod(rest))
    return _F.reshape(x, (-1 if shape[0] is None else shape[0], n))
