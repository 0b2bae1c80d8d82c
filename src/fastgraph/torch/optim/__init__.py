"""``torch.optim``: fastgraph's optimizers (``fg.optim``, PyTorch's update formulas, parameter
groups and state dicts) and ``lr_scheduler``.

    >>> w = torch.zeros(3, requires_grad=True)
    >>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
"""
from ...eager.optim import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop
from . import lr_scheduler

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Optimizer", "lr_scheduler"]
