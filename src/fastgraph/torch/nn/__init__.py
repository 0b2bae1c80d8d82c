"""``fastgraph.torch.nn``: PyTorch's ``torch.nn`` over fastgraph's ops -- ``Module`` (parameters,
buffers, submodules, ``train()``/``eval()``, ``state_dict``/``load_state_dict``, hooks),
``Parameter``, the containers, the layers (linear, convolution, pooling, dropout,
normalisation, embedding, recurrent), a module for every activation and loss,
``nn.functional`` (the registry's functions) and ``nn.init``.

A module runs eagerly on Tensors, inside an ``@fg.function`` trace (its parameters and buffers
are the plan's variables, read from and written to their own arrays) and on graph
placeholders (its parameters become Variables of the graph).

    >>> import fastgraph.torch.nn as nn
    >>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 10))
"""
from . import functional, init
from .activations import *  # noqa: F401,F403
from .activations import __all__ as _activations
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .loss import *  # noqa: F401,F403
from .loss import __all__ as _losses
from .module import Module
from .parameter import Buffer, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from . import utils  # noqa: F401

__all__ = (["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict",
            "ParameterList", "ParameterDict", "RNNBase", "RNN", "LSTM", "GRU", "RNNCell",
            "LSTMCell", "GRUCell", "functional", "init", "utils"] + _layers + _activations +
           _losses)
