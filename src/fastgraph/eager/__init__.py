"""Eager (define-by-run) mode: Tensor, tape recording, grad mode, transforms, optimizers."""
