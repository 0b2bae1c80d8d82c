"""Optimizers for static graphs (``fg.train``): each ``minimize(loss)`` returns one operation that
updates every variable at once (all new values are computed before any is committed).

Formulas shared by PyTorch and TensorFlow: momentum ``buf = m*buf + g; p -= lr*buf``; Adam with
``betas=(0.9, 0.999), eps=1e-8`` and bias correction.
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .gradients import gradients
from .variables import Variable, group

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer"]


class Optimizer:
    """Base class: ``compute_gradients``, ``apply_gradients``, ``minimize``."""

    def __init__(self, learning_rate, name: str):
        self.learning_rate = learning_rate
        self._name = name
        self._slots: dict = {}

    def compute_gradients(self, loss, var_list=None):
        if var_list is None:
            g = loss.graph
            var_list = list(g._trainable)
        var_list = list(var_list)
        if not var_list:
            raise ValueError("minimize: no variables to optimize")
        grads = gradients(loss, var_list)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, name=None):
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"{self._name}: no gradients provided for any variable "
                             f"({[v.name for _, v in grads_and_vars]})")
        graph = pairs[0][1].graph
        with graph.as_default(), graph.name_scope(self._name):
            updates = self._updates(pairs, graph)
            return group(*updates, name=name or "update")

    def minimize(self, loss, var_list=None, name=None):
        """One operation: compute the gradients of ``loss`` and update the variables."""
        return self.apply_gradients(self.compute_gradients(loss, var_list), name=name)

    def _slot(self, var, kind):
        key = (var, kind)
        s = self._slots.get(key)
        if s is None:
            s = self._slots[key] = Variable(np.zeros(var.shape, var.dtype),
                                            name=f"{var.name.replace('/', '_')}/{kind}",
                                            trainable=False)
        return s

    def _lr(self, var):
        lr = self.learning_rate
        return lr if not isinstance(lr, (int, float)) else var.dtype.type(lr)

    def _updates(self, pairs, graph):
        raise NotImplementedError


class GradientDescentOptimizer(Optimizer):
    """``p -= lr * g``."""

    def __init__(self, learning_rate, name="GradientDescent"):
        super().__init__(learning_rate, name)

    def _updates(self, pairs, graph):
        return [v.assign(v - self._lr(v) * g) for g, v in pairs]


class MomentumOptimizer(Optimizer):
    """``buf = momentum*buf + g; p -= lr*buf``."""

    def __init__(self, learning_rate, momentum, name="Momentum"):
        super().__init__(learning_rate, name)
        self.momentum = momentum

    def _updates(self, pairs, graph):
        ups = []
        for g, v in pairs:
            buf = self._slot(v, "momentum")
            new_buf = buf.assign(v.dtype.type(self.momentum) * buf + g)
            ups += [new_buf, v.assign(v - self._lr(v) * new_buf)]
        return ups


class AdamOptimizer(Optimizer):
    """Adam with bias correction (``beta1=0.9, beta2=0.999, epsilon=1e-8`` by default)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self._steps: dict = {}      # graph -> its step counter (TF1 keys these by graph too)

    def _updates(self, pairs, graph):
        step = self._steps.get(graph)
        if step is None:
            step = self._steps[graph] = Variable(np.float64(0.0), name="step", trainable=False)
        t = step.assign_add(1.0)
        ups = [t]
        b1 = np.float64(self.beta1)
        b2 = np.float64(self.beta2)
        for g, v in pairs:
            dt = v.dtype.type
            m = self._slot(v, "m")
            s = self._slot(v, "v")
            m_new = m.assign(dt(b1) * m + dt(1 - b1) * g)
            s_new = s.assign(dt(b2) * s + dt(1 - b2) * (g * g))
            c1 = F.astype(1.0 - F.power(b1, t), v.dtype)
            c2 = F.astype(1.0 - F.power(b2, t), v.dtype)
            step = self._lr(v) * (m_new / c1) / (F.sqrt(s_new / c2) + dt(self.epsilon))
            ups += [m_new, s_new, v.assign(v - step)]
        return ups
