"""Static mode (TensorFlow 1 semantics): graphs of symbolic ``Node``s, ``gradients``, ``Session``."""
from . import errors
from .errors import FailedPreconditionError, InvalidArgumentError, OpError
from .graph import Graph, get_default_graph, name_scope, reset_default_graph
from .node import Node
from .variables import (Variable, assign, assign_add, constant, global_variables,
                        global_variables_initializer, group, placeholder, trainable_variables,
                        variables_initializer)
from .gradients import gradients
from .session import InteractiveSession, Session, get_default_session
from . import train

__all__ = ["Graph", "Node", "get_default_graph", "reset_default_graph", "name_scope",
           "placeholder", "constant", "Variable", "gradients", "assign", "assign_add",
           "global_variables_initializer", "variables_initializer", "group",
           "trainable_variables", "global_variables", "Session", "InteractiveSession",
           "get_default_session", "train", "errors"]
