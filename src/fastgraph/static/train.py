"""Optimizers for static graphs (``fg.train``), with TensorFlow 1's update formulas, slots and
defaults: each ``minimize(loss)`` returns one operation that updates every variable at once
(all new values are computed from the values at the start of the run, then committed), and
increments ``global_step`` when one is given.

===================  =====================================================================
GradientDescent      ``var -= lr * g``
Momentum             ``accum = momentum * accum + g``; ``var -= lr * accum`` (Nesterov:
                     ``var -= lr * g + lr * momentum * accum``)
Adam                 ``m += (g - m) (1 - beta1)``; ``v += (g^2 - v) (1 - beta2)``;
                     ``var -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)``
RMSProp              ``ms += (g^2 - ms) (1 - decay)`` (``ms`` starts at 1);
                     ``mom = momentum * mom + lr * g / sqrt(ms + eps)``; ``var -= mom``
                     (centered: ``mg += (g - mg) (1 - decay)``, ``ms - mg^2`` under the root)
Adagrad              ``accum += g^2`` (starts at 0.1); ``var -= lr * g / sqrt(accum)``
Adadelta             ``accum = rho accum + (1 - rho) g^2``;
                     ``update = sqrt(accum_update + eps) / sqrt(accum + eps) * g``;
                     ``var -= lr * update``; ``accum_update = rho accum_update + (1 - rho)
                     update^2``
===================  =====================================================================
"""
from __future__ import annotations

import numpy as np

from .. import ops as F
from .gradients import gradients
from .graph import get_default_graph
from .node import NODE_TYPES
from .variables import Variable, group

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "RMSPropOptimizer", "AdagradOptimizer", "AdadeltaOptimizer",
           "get_or_create_global_step", "get_global_step", "create_global_step",
           "exponential_decay"]

GLOBAL_STEP = "global_step"


class Optimizer:
    """Base class: ``compute_gradients``, ``apply_gradients``, ``minimize`` (TensorFlow 1's)."""

    def __init__(self, learning_rate, name: str, use_locking=False):
        self.learning_rate = learning_rate
        self._name = name
        self._slots: dict = {}
        self._non_slots: dict = {}

    def get_name(self) -> str:
        return self._name

    def compute_gradients(self, loss, var_list=None, **_ignored_tf_options):
        """``[(gradient, variable), ...]`` of ``loss`` for ``var_list`` (default: the graph's
        trainable variables); a gradient is ``None`` where the loss does not depend on the
        variable.

            >>> grads_and_vars = opt.compute_gradients(loss)
        """
        if type(loss) not in NODE_TYPES:
            raise TypeError(f"{self._name}: the loss must be a graph node, got "
                            f"{type(loss).__name__}")
        if var_list is None:
            var_list = list(loss.graph._trainable)
        var_list = list(var_list)
        if not var_list:
            raise ValueError("minimize: no variables to optimize")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"{self._name}: var_list holds a {type(v).__name__}, not a "
                                f"Variable")
        grads = gradients(loss, var_list)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One operation that applies the gradients (and adds 1 to ``global_step``, when
        given).  Pairs whose gradient is ``None`` are left out; none at all is an error.

            >>> capped = [(fg.clip_by_value(g, -1., 1.), v) for g, v in grads_and_vars]
            >>> train = opt.apply_gradients(capped, global_step=step)
        """
        grads_and_vars = list(grads_and_vars)
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"{self._name}: no gradients provided for any variable "
                             f"({[v.name for _, v in grads_and_vars]})")
        graph = pairs[0][1].graph
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"{self._name}: apply_gradients got a {type(v).__name__} where "
                                f"a Variable belongs")
            if v.graph is not graph:
                raise ValueError(f"{self._name}: variable {v.name!r} belongs to another graph")
        if global_step is not None:
            _check_step(global_step, graph)
        with graph.as_default(), graph.name_scope(self._name):
            updates = self._updates(pairs, graph)
            if global_step is not None:
                updates.append(global_step.assign_add(1))
            return group(*updates, name=name or "update")

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=None,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """One operation: compute the gradients of ``loss``, update the variables and add 1 to
        ``global_step`` (when given).

            >>> train = fg.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
        """
        if grad_loss is not None:
            raise NotImplementedError("minimize: grad_loss is not supported")
        return self.apply_gradients(self.compute_gradients(loss, var_list),
                                    global_step=global_step, name=name)

    # ---- slots -----------------------------------------------------------------------------
    def _slot(self, var, kind, init=0.0):
        key = (var, kind)
        s = self._slots.get(key)
        if s is None:
            s = self._slots[key] = Variable(np.full(var.shape, init, var.dtype),
                                            name=f"{var.name.replace('/', '_')}/{kind}",
                                            trainable=False)
        return s

    def get_slot(self, var, name):
        """The slot variable ``name`` (``"m"``, ``"v"``, ``"rms"``, ``"momentum"``,
        ``"accumulator"``...) this optimizer keeps for ``var``, or ``None``."""
        return self._slots.get((var, name))

    def get_slot_names(self) -> list:
        return sorted({kind for _, kind in self._slots})

    def _non_slot(self, graph, kind, init, dtype):
        """A variable of this optimizer's own, one per graph (Adam's ``beta1_power``)."""
        key = (graph, kind)
        v = self._non_slots.get(key)
        if v is None:
            v = self._non_slots[key] = Variable(np.array(init, dtype), name=kind,
                                                trainable=False)
        return v

    def _lr(self, var):
        return self._hyper(self.learning_rate, var)

    @staticmethod
    def _hyper(value, var):
        """A hyperparameter in the variable's dtype (a graph value is cast to it)."""
        if type(value) in NODE_TYPES:
            return value if value.dtype == var.dtype else F.astype(value, var.dtype)
        return var.dtype.type(value)

    def _updates(self, pairs, graph) -> list:
        raise NotImplementedError


def _check_step(step, graph):
    if not isinstance(step, Variable):
        raise TypeError(f"global_step must be a Variable, got {type(step).__name__}")
    if step.graph is not graph:
        raise ValueError("global_step belongs to another graph than the variables")
    if step.dtype.kind not in "iu" or step.shape != ():
        raise TypeError(f"global_step must be an integer scalar Variable, got dtype "
                        f"{step.dtype} and shape {step.shape}")


class GradientDescentOptimizer(Optimizer):
    """``var -= lr * g``.

        >>> train = fg.train.GradientDescentOptimizer(0.5).minimize(loss)
    """

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate, name)

    def _updates(self, pairs, graph):
        return [v.assign(v - self._lr(v) * g) for g, v in pairs]


class MomentumOptimizer(Optimizer):
    """``accum = momentum * accum + g; var -= lr * accum`` (``use_nesterov``: ``var -= lr * g
    + lr * momentum * accum``).

        >>> fg.train.MomentumOptimizer(0.01, momentum=0.9).minimize(loss)
    """

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate, name)
        self.momentum = momentum
        self.use_nesterov = bool(use_nesterov)

    def _updates(self, pairs, graph):
        ups = []
        for g, v in pairs:
            buf = self._slot(v, "momentum")
            mom, lr = self._hyper(self.momentum, v), self._lr(v)
            new_buf = buf.assign(mom * buf + g)
            step = lr * g + lr * mom * new_buf if self.use_nesterov else lr * new_buf
            ups += [new_buf, v.assign(v - step)]
        return ups


class AdamOptimizer(Optimizer):
    """Adam (TensorFlow 1's form: the bias corrections fold into the step size, and
    ``epsilon`` is added to ``sqrt(v)`` uncorrected).

        >>> fg.train.AdamOptimizer(learning_rate=0.001, beta1=0.9, beta2=0.999,
        ...                        epsilon=1e-8).minimize(loss)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def _updates(self, pairs, graph):
        dtype = pairs[0][1].dtype
        b1_power = self._non_slot(graph, "beta1_power", self.beta1, dtype)
        b2_power = self._non_slot(graph, "beta2_power", self.beta2, dtype)
        ups = []
        for g, v in pairs:
            b1, b2, eps = (self._hyper(h, v) for h in (self.beta1, self.beta2, self.epsilon))
            p1, p2 = (p if p.dtype == v.dtype else F.astype(p, v.dtype)
                      for p in (b1_power, b2_power))
            lr = self._lr(v) * F.sqrt(1 - p2) / (1 - p1)
            m = self._slot(v, "m")
            s = self._slot(v, "v")
            m_new = m.assign(m + (g - m) * (1 - b1))
            s_new = s.assign(s + (g * g - s) * (1 - b2))
            ups += [m_new, s_new, v.assign(v - m_new * lr / (F.sqrt(s_new) + eps))]
        ups += [b1_power.assign(b1_power * dtype.type(self.beta1)),
                b2_power.assign(b2_power * dtype.type(self.beta2))]
        return ups


class RMSPropOptimizer(Optimizer):
    """RMSProp (TensorFlow 1's: the mean square starts at 1, ``epsilon`` is inside the square
    root, with optional momentum and centering).

        >>> fg.train.RMSPropOptimizer(0.001, decay=0.9, momentum=0.0, epsilon=1e-10)
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(learning_rate, name)
        self.decay, self.momentum, self.epsilon = decay, momentum, epsilon
        self.centered = bool(centered)

    def _updates(self, pairs, graph):
        ups = []
        for g, v in pairs:
            rho, mom_h, eps = (self._hyper(h, v) for h in (self.decay, self.momentum,
                                                            self.epsilon))
            ms = self._slot(v, "rms", 1.0)
            mom = self._slot(v, "momentum")
            ms_new = ms.assign(ms + (g * g - ms) * (1 - rho))
            ups.append(ms_new)
            denom = ms_new
            if self.centered:
                mg = self._slot(v, "mg")
                mg_new = mg.assign(mg + (g - mg) * (1 - rho))
                ups.append(mg_new)
                denom = ms_new - mg_new * mg_new
            mom_new = mom.assign(mom * mom_h + g * self._lr(v) / F.sqrt(denom + eps))
            ups += [mom_new, v.assign(v - mom_new)]
        return ups


class AdagradOptimizer(Optimizer):
    """Adagrad: ``accum += g^2; var -= lr * g / sqrt(accum)``, the accumulator starting at
    ``initial_accumulator_value`` (0.1, TensorFlow 1's).

        >>> fg.train.AdagradOptimizer(0.1).minimize(loss)
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if not initial_accumulator_value > 0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(learning_rate, name)
        self.initial_accumulator_value = initial_accumulator_value

    def _updates(self, pairs, graph):
        ups = []
        for g, v in pairs:
            acc = self._slot(v, "accumulator", self.initial_accumulator_value)
            acc_new = acc.assign(acc + g * g)
            ups += [acc_new, v.assign(v - g * self._lr(v) * F.reciprocal(F.sqrt(acc_new)))]
        return ups


class AdadeltaOptimizer(Optimizer):
    """Adadelta (TensorFlow 1's, with its ``learning_rate`` factor, 0.001 by default).

        >>> fg.train.AdadeltaOptimizer(1.0, rho=0.95, epsilon=1e-6).minimize(loss)
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(learning_rate, name)
        self.rho, self.epsilon = rho, epsilon

    def _updates(self, pairs, graph):
        ups = []
        for g, v in pairs:
            rho, eps = self._hyper(self.rho, v), self._hyper(self.epsilon, v)
            acc = self._slot(v, "accum")
            acc_up = self._slot(v, "accum_update")
            acc_new = acc.assign(acc * rho + g * g * (1 - rho))
            update = F.sqrt(acc_up + eps) * F.reciprocal(F.sqrt(acc_new + eps)) * g
            ups += [acc_new, v.assign(v - update * self._lr(v)),
                    acc_up.assign(acc_up * rho + update * update * (1 - rho))]
        return ups


# ---- the global step -------------------------------------------------------------------------
def get_global_step(graph=None):
    """The graph's global step variable (named ``global_step``), or ``None``."""
    graph = graph or get_default_graph()
    for v in graph.variables:
        if v.name == GLOBAL_STEP:
            return v
    return None


def create_global_step(graph=None):
    """Make the graph's global step: an int64 scalar Variable named ``global_step``, starting at
    0, not trainable.  ``ValueError`` if there is one already."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default():
        return Variable(np.int64(0), name=GLOBAL_STEP, trainable=False)


def get_or_create_global_step(graph=None):
    """The graph's global step, made on first use (TensorFlow 1's
    ``tf.train.get_or_create_global_step``).

        >>> step = fg.train.get_or_create_global_step()
        >>> train = opt.minimize(loss, global_step=step)     # each run adds 1
    """
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` as a graph value
    (``staircase``: the exponent rounded down), TensorFlow 1's
    ``tf.train.exponential_decay``.

        >>> lr = fg.train.exponential_decay(0.1, step, 1000, 0.96, staircase=True)
    """
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    dt = np.dtype(np.float32) if isinstance(learning_rate, (int, float)) else \
        np.dtype(getattr(learning_rate, "dtype", np.float64))
    p = F.astype(global_step, dt) / dt.type(decay_steps)
    if staircase:
        p = F.floor(p)
    lr = learning_rate if type(learning_rate) in NODE_TYPES else dt.type(learning_rate)
    return lr * F.power(dt.type(decay_rate), p)
