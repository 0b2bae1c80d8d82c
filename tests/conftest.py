"""Shared test fixtures: every test starts with grad mode on and a fixed random seed."""
import numpy as np
import pytest

import fastgraph as fg


@pytest.fixture(autouse=True)
def _clean_state():
    fg.set_grad_enabled(True)
    fg.random.seed(0)
    reset = getattr(fg, "reset_default_graph", None)
    if reset is not None:
        reset()
    yield
    fg.set_grad_enabled(True)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
