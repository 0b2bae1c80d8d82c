"""The bridge: the one layer that knows both engines.

* :mod:`.function`: ``@fg.function``, which traces an eager-style function into a static graph
  and runs its compiled plan;
* :mod:`.transforms`: ``fg.grad``, ``fg.value_and_grad``, ``fg.jacobian`` and those built on
  them, which differentiate on the tape or symbolically, as their arguments need.

``fastgraph.eager`` and ``fastgraph.static`` sit side by side below it, neither importing the
other.
"""
