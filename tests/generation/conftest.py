"""Shared fixtures of the generator tests. torch is imported inside fixtures only: the procedural tests
(and a check that the learned generator's module imports without torch) must not pay for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny models train fastest on one thread (and OpenMP threads thrash on a busy machine)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
