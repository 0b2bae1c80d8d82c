"""Compiled modules over arrays only: they import no other fastgraph module.

* :mod:`.elementwise`: an op's inner loop called directly on small float arrays, the VJP
  building blocks' loops, and the column sum of bias gradients.
"""
