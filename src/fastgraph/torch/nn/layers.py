"""The layers: linear, convolution, pooling, dropout, normalisation, embedding, shape
modules, and a module for every activation and loss of ``nn.functional``.  Each holds its
parameters as PyTorch does (same names, shapes, dtypes and default initialisation) and
computes with the registry's ops, so a PyTorch ``state_dict`` loads into it."""
from __future__ import annotations

import math

import numpy as np

from ... import nn_ops as N
from ... import ops as _F
from ...eager.grad_mode import no_grad
from ...static.graph import get_default_graph
from ...static.variables import assign as _assign
from ...static.variables import group
from .._functions import get_default_dtype
from . import functional as Fn
from . import init
from .module import Module, _binding_graph
from .parameter import Buffer, Parameter

__all__ = [
    "Identity", "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
    "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm",
    "GroupNorm", "Embedding", "Flatten", "Unflatten", "update_ops", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]

def _dtype(dtype) -> np.dtype:
    """A module's parameter dtype: ``torch.get_default_dtype()`` (float32) unless told."""
    if dtype is None:
        return np.dtype(get_default_dtype())
    dt = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    if dt.kind != "f":
        raise TypeError(f"module parameters must have a floating dtype, got {dt}")
    return dt


def _empty(shape, dtype) -> Parameter:
    return Parameter(np.empty(shape, _dtype(dtype)))


def _optional_parameters(module, present: bool, **arrays) -> None:
    """Registers ``arrays`` (name -> array, in order) as ``module``'s parameters when
    ``present`` (``bias=True``, ``affine=True``), else each name as None: PyTorch's way, so the
    attribute exists and reads None, and ``state_dict`` leaves it out."""
    for name, array in arrays.items():
        module.register_parameter(name, Parameter(array) if present else None)


def _tuple(v, n: int, what: str) -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{what} must be an int or a tuple of {n} ints, got {v!r}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, as in PyTorch)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


# ---- linear -----------------------------------------------------------------------------------
class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)`` and bias from
    U(-1/sqrt(in_features), 1/sqrt(in_features)) (PyTorch's ``kaiming_uniform_(a=sqrt(5))``).

        >>> nn.Linear(3, 2)(fg.ones(4, 3, dtype=np.float32)).shape
        (4, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = _empty((self.out_features, self.in_features), dtype)
        _optional_parameters(self, bias, bias=np.empty(self.out_features, _dtype(dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):  # noqa: A002
        return N.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self._parameters['bias'] is not None}")


class Bilinear(Module):
    """``y_k = x1 @ weight[k] @ x2 + bias_k``; weight ``(out, in1, in2)``, bias ``(out,)``,
    both from U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        self.weight = _empty((out_features, in1_features, in2_features), dtype)
        _optional_parameters(self, bias, bias=np.empty(out_features, _dtype(dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self._parameters["bias"] is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return N.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self._parameters['bias'] is not None}")


# ---- convolutions -----------------------------------------------------------------------------
_PAD_MODES = {"zeros": None, "reflect": "reflect", "replicate": "replicate",
              "circular": "circular"}


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, output_padding=0) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups}) > 0")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {sorted(_PAD_MODES)}, got "
                             f"{padding_mode!r}")
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise ValueError(f"{name}: invalid padding string {padding!r}")
            self.padding = padding
        else:
            self.padding = _tuple(padding, n, "padding")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = _tuple(stride, n, "stride")
        self.dilation = _tuple(dilation, n, "dilation")
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.groups, self.padding_mode = int(groups), padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = _empty(shape, dtype)
        _optional_parameters(self, bias, bias=np.empty(out_channels, _dtype(dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self._parameters["bias"] is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _padded(self, x):
        """The input padded by ``padding_mode`` (then the convolution pads nothing)."""
        pads = []
        for p in reversed(self.padding):
            pads += [p, p]
        return N.pad(x, tuple(pads), mode=_PAD_MODES[self.padding_mode])

    def forward(self, input):  # noqa: A002
        conv = {1: N.conv1d, 2: N.conv2d, 3: N.conv3d}[self._n]
        if self.padding_mode != "zeros" and not isinstance(self.padding, str):
            return conv(self._padded(input), self.weight, self.bias, self.stride, 0,
                        self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else \
                f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._parameters["bias"] is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution of ``(N, C, L)`` (PyTorch's ``torch.nn.Conv1d``)."""
    _n = 1


class Conv2d(_ConvNd):
    """2-d convolution of ``(N, C, H, W)`` (PyTorch's ``torch.nn.Conv2d``): weight
    ``(out, in / groups, kh, kw)``, ``stride``, ``padding`` (ints, pairs, ``'same'``,
    ``'valid'``), ``dilation``, ``groups``, ``padding_mode``.

        >>> nn.Conv2d(1, 4, 3, padding=1)(fg.ones(2, 1, 8, 8, dtype=np.float32)).shape
        (2, 4, 8, 8)
    """
    _n = 2


class Conv3d(_ConvNd):
    """3-d convolution of ``(N, C, D, H, W)`` (PyTorch's ``torch.nn.Conv3d``)."""
    _n = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):  # noqa: A002
        if output_size is not None:
            raise NotImplementedError(f"{type(self).__name__}: output_size is not supported; "
                                      f"give output_padding")
        conv = {1: N.conv_transpose1d, 2: N.conv_transpose2d, 3: N.conv_transpose3d}[self._n]
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    self.output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution (PyTorch's ``torch.nn.ConvTranspose1d``)."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution, weight ``(in, out / groups, kh, kw)`` (PyTorch's
    ``torch.nn.ConvTranspose2d``)."""
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution (PyTorch's ``torch.nn.ConvTranspose3d``)."""
    _n = 3


# ---- pooling ----------------------------------------------------------------------------------
class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max pooling of ``(N, C, L)``."""
    _fn = N.max_pool1d


class MaxPool2d(_MaxPoolNd):
    """Max pooling of ``(N, C, H, W)`` (PyTorch's ``torch.nn.MaxPool2d``).

        >>> nn.MaxPool2d(2)(fg.ones(1, 1, 4, 4)).shape
        (1, 1, 2, 2)
    """
    _fn = N.max_pool2d


class MaxPool3d(_MaxPoolNd):
    """Max pooling of ``(N, C, D, H, W)``."""
    _fn = N.max_pool3d


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):  # noqa: A002
        fn = type(self)._fn
        if fn is N.avg_pool1d:
            if self.divisor_override is not None:
                raise TypeError("AvgPool1d has no divisor_override")
            return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                      self.count_include_pad)
        return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                  self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Average pooling of ``(N, C, L)``."""
    _fn = N.avg_pool1d

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Average pooling of ``(N, C, H, W)`` (PyTorch's ``torch.nn.AvgPool2d``)."""
    _fn = N.avg_pool2d


class AvgPool3d(_AvgPoolNd):
    """Average pooling of ``(N, C, D, H, W)``."""
    _fn = N.avg_pool3d


class _AdaptivePool(Module):
    _fn = None
    _max = False

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):  # noqa: A002
        if self._max:
            return type(self)._fn(input, self.output_size, self.return_indices)
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


def _adaptive(name, fn, is_max, doc):
    cls = type(name, (_AdaptivePool,), {"_fn": fn, "_max": is_max, "__doc__": doc})
    if not is_max:
        def __init__(self, output_size) -> None:
            _AdaptivePool.__init__(self, output_size)
        cls.__init__ = __init__
    return cls


AdaptiveAvgPool1d = _adaptive("AdaptiveAvgPool1d", N.adaptive_avg_pool1d, False,
                              "Average pooling of ``(N, C, L)`` to ``output_size``.")
AdaptiveAvgPool2d = _adaptive("AdaptiveAvgPool2d", N.adaptive_avg_pool2d, False,
                              "Average pooling of ``(N, C, H, W)`` to ``output_size`` "
                              "(PyTorch's ``torch.nn.AdaptiveAvgPool2d``).")
AdaptiveAvgPool3d = _adaptive("AdaptiveAvgPool3d", N.adaptive_avg_pool3d, False,
                              "Average pooling of ``(N, C, D, H, W)`` to ``output_size``.")
AdaptiveMaxPool1d = _adaptive("AdaptiveMaxPool1d", N.adaptive_max_pool1d, True,
                              "Max pooling of ``(N, C, L)`` to ``output_size``.")
AdaptiveMaxPool2d = _adaptive("AdaptiveMaxPool2d", N.adaptive_max_pool2d, True,
                              "Max pooling of ``(N, C, H, W)`` to ``output_size``.")
AdaptiveMaxPool3d = _adaptive("AdaptiveMaxPool3d", N.adaptive_max_pool3d, True,
                              "Max pooling of ``(N, C, D, H, W)`` to ``output_size``.")


# ---- dropout ----------------------------------------------------------------------------------
class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training (scaling the rest by
    ``1 / (1 - p)``); the identity in ``eval()``."""
    _fn = N.dropout


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` in training."""
    _fn = N.dropout1d


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` in training."""
    _fn = N.dropout2d


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` in training."""
    _fn = N.dropout3d


# ---- normalisation ----------------------------------------------------------------------------
def _buffer_update(var, value):
    """A buffer's in-place update in a graph: an assignment, run with every call of an
    ``fg.function`` step; in a graph run by a Session, listed for :func:`update_ops`."""
    op = _assign(var, value)
    var.graph.__dict__.setdefault("_module_updates", []).append(op)
    return op


def update_ops(graph=None):
    """The buffer updates (BatchNorm's running statistics) that modules called in training mode
    on ``graph``'s placeholders made, as one operation to run with the train op -- TensorFlow
    1's ``UPDATE_OPS`` idiom: ``sess.run([train, nn.update_ops()], feed)``.  (An ``fg.function``
    step runs them itself.)

        >>> train = fg.group(*updates, nn.update_ops())  # doctest: +SKIP
    """
    g = get_default_graph() if graph is None else graph
    return group(*g.__dict__.get("_module_updates", []))



class _NormBase(Module):
    """What batch and instance normalisation share (PyTorch's ``_NormBase``): the affine
    ``weight`` (ones) and ``bias`` (zeros) per feature, and the running statistics as buffers
    (``running_mean`` zeros, ``running_var`` ones, ``num_batches_tracked``), each None when
    switched off."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = _dtype(dtype)
        _optional_parameters(self, affine, weight=np.ones(num_features, dt),
                             bias=np.zeros(num_features, dt))
        stats = {"running_mean": np.zeros(num_features, dt),
                 "running_var": np.ones(num_features, dt),
                 "num_batches_tracked": np.zeros((), np.int64)}
        for name, value in stats.items():
            self.register_buffer(name, value if track_running_stats else None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self._buffers["running_mean"]._ndarray[...] = 0
            self._buffers["running_var"]._ndarray[...] = 1
            self._buffers["num_batches_tracked"]._ndarray[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self._parameters["weight"])
            init.zeros_(self._parameters["bias"])

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = (2, 3, 4)

    def forward(self, input):  # noqa: A002
        nd = len(input.shape)
        if nd not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected "
                             f"{' or '.join(f'{d}D' for d in self._dims)} input (got {nd}D "
                             f"input)")
        training = self.training or not self.track_running_stats
        momentum = self.momentum
        tracking = self.training and self.track_running_stats
        nbt = self._buffers.get("num_batches_tracked")
        if tracking and nbt is not None:
            if _binding_graph() is None:
                with no_grad():
                    nbt._ndarray[...] += 1
                nbt._bump_version()
            else:
                v = self.num_batches_tracked
                _buffer_update(v, v + 1)
            if momentum is None:     # the cumulative moving average
                momentum = 1.0 / float(nbt._ndarray) if _binding_graph() is None else None
        rm = self.running_mean if tracking or not training else None
        rv = self.running_var if tracking or not training else None
        if _binding_graph() is None or not tracking:
            return N.batch_norm(input, rm, rv, self.weight, self.bias, training,
                                0.0 if momentum is None else momentum, self.eps)
        return self._graph_training(input, rm, rv, momentum)

    def _graph_training(self, x, rm, rv, momentum):
        """Training in a graph: the running statistics are Variables, updated by assignments
        (run with every call of an ``fg.function`` step)."""
        y, mean, var = N.batch_norm_statistics(x, self.eps)
        shape = x.shape
        n = shape[0] * int(np.prod(shape[2:]))
        if momentum is None:
            nbt = _F.astype(self.num_batches_tracked + 1, rm.dtype)
            m = 1.0 / nbt
        else:
            m = float(momentum)
        _buffer_update(rm, (1 - m) * rm + m * _F.astype(mean, rm.dtype))
        _buffer_update(rv, (1 - m) * rv + m * _F.astype(var * (n / max(n - 1, 1)), rv.dtype))
        cshape = (1, -1) + (1,) * (len(shape) - 2)
        if self.weight is not None:
            y = y * _F.reshape(self.weight, cshape)
        if self.bias is not None:
            y = y + _F.reshape(self.bias, cshape)
        return y


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` (PyTorch's ``torch.nn.BatchNorm1d``):
    batch statistics in training (updating ``running_mean``/``running_var`` with
    ``momentum``), the running ones in ``eval()``."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` (PyTorch's ``torch.nn.BatchNorm2d``).

        >>> bn = nn.BatchNorm2d(3); bn(fg.randn(4, 3, 2, 2).astype(np.float32)).shape
        (4, 3, 2, 2)
    """
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)``."""
    _dims = (5,)


class LayerNorm(Module):
    """Normalisation over the last ``len(normalized_shape)`` axes, with an element-wise
    affine transform (weight ones, bias zeros)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps, self.elementwise_affine = float(eps), elementwise_affine
        dt = _dtype(dtype)
        _optional_parameters(self, elementwise_affine,
                             weight=np.ones(self.normalized_shape, dt))
        _optional_parameters(self, elementwise_affine and bias,
                             bias=np.zeros(self.normalized_shape, dt))

    def forward(self, input):  # noqa: A002
        return N.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalisation over groups of channels (``num_channels`` divisible by ``num_groups``)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        self.eps, self.affine = float(eps), affine
        dt = _dtype(dtype)
        _optional_parameters(self, affine, weight=np.ones(num_channels, dt),
                             bias=np.zeros(num_channels, dt))

    def forward(self, input):  # noqa: A002
        return N.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(_NormBase):
    _dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    def forward(self, input):  # noqa: A002
        nd = len(input.shape)
        if nd not in (self._dim + 1, self._dim + 2):
            raise ValueError(f"{type(self).__name__}: expected {self._dim + 1}D (unbatched) or "
                             f"{self._dim + 2}D (batched) input (got {nd}D input)")
        unbatched = nd == self._dim + 1
        x = _F.expand_dims(input, 0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        if use_input_stats and self.track_running_stats and _binding_graph() is not None:
            raise NotImplementedError(f"{type(self).__name__}: running statistics are updated "
                                      f"in eager code only (use track_running_stats=False in "
                                      f"graphs and fg.function)")
        y = N.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            use_input_stats, 0.1 if self.momentum is None else self.momentum,
                            self.eps)
        return _F.squeeze(y, 0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Each sample's channels of ``(N, C, L)`` normalised over ``L`` (PyTorch's defaults: no
    affine transform, no running statistics)."""
    _dim = 1


class InstanceNorm2d(_InstanceNorm):
    """Each sample's channels of ``(N, C, H, W)`` normalised over ``H, W``."""
    _dim = 2


class InstanceNorm3d(_InstanceNorm):
    """Each sample's channels of ``(N, C, D, H, W)`` normalised over ``D, H, W``."""
    _dim = 3


class LocalResponseNorm(Module):
    """Normalisation across ``size`` neighbouring channels (AlexNet's)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return N.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _PadNd(Module):
    _n, _mode = 2, "constant"

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        self.padding = (tuple(int(p) for p in padding) if isinstance(padding, (tuple, list))
                        else (int(padding),) * (2 * self._n))
        if len(self.padding) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or "
                             f"{2 * self._n} ints, got {padding!r}")
        self.value = value

    def forward(self, input):  # noqa: A002
        if self._mode == "constant":
            return N.pad(input, self.padding, mode="constant", value=self.value)
        return N.pad(input, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" and
                                    self.value else "")


def _pad_module(name, n, mode, zero=False):
    doc = (f"Pads the last {n} axes ({mode}"
           f"{', with zeros' if zero else ''}): ``padding`` an int or (left, right, ...).")
    attrs = {"_n": n, "_mode": mode, "__doc__": doc, "__module__": __name__}
    if zero:
        attrs["__init__"] = lambda self, padding: _PadNd.__init__(self, padding, 0.0)
    elif mode == "constant":
        attrs["__init__"] = lambda self, padding, value: _PadNd.__init__(self, padding, value)
    else:
        attrs["__init__"] = lambda self, padding: _PadNd.__init__(self, padding)
    return type(name, (_PadNd,), attrs)


for _n in (1, 2, 3):
    globals()[f"ZeroPad{_n}d"] = _pad_module(f"ZeroPad{_n}d", _n, "constant", zero=True)
    globals()[f"ConstantPad{_n}d"] = _pad_module(f"ConstantPad{_n}d", _n, "constant")
    globals()[f"ReflectionPad{_n}d"] = _pad_module(f"ReflectionPad{_n}d", _n, "reflect")
    globals()[f"ReplicationPad{_n}d"] = _pad_module(f"ReplicationPad{_n}d", _n, "replicate")
    globals()[f"CircularPad{_n}d"] = _pad_module(f"CircularPad{_n}d", _n, "circular")


class Embedding(Module):
    """A lookup table ``(num_embeddings, embedding_dim)`` from N(0, 1), the ``padding_idx``
    row zero (and without gradient)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = _empty((num_embeddings, embedding_dim), dtype)
            self.reset_parameters()
        else:
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._ndarray[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, **kwargs):
        from .parameter import as_array
        arr = np.array(as_array(embeddings))
        if arr.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        return cls(arr.shape[0], arr.shape[1], padding_idx, _weight=arr, _freeze=freeze,
                   **kwargs)

    def forward(self, input):  # noqa: A002
        return N.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


# ---- shapes -----------------------------------------------------------------------------------
def _prod(dims) -> int | None:
    n = 1
    for d in dims:
        if d is None:
            return None
        n *= d
    return n


def _known(shape) -> tuple:
    """A target shape for ``reshape`` with a graph's unknown dimension (None) as -1."""
    return tuple(-1 if d is None else d for d in shape)


class Flatten(Module):
    """Flattens axes ``start_dim`` to ``end_dim`` into one (by default all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        shape = tuple(input.shape)
        nd = len(shape)
        if nd == 0:
            return _F.reshape(input, (1,))
        s, e = self.start_dim % nd, self.end_dim % nd
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return input
        return _F.reshape(input, _known(shape[:s] + (_prod(shape[s:e + 1]),) + shape[e + 1:]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits axis ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        shape = tuple(input.shape)
        d = self.dim % len(shape)
        return _F.reshape(input, _known(shape[:d] + self.unflattened_size + shape[d + 1:]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


del Buffer, Fn
