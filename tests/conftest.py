"""Shared test helpers."""

import pytest
import torch


@pytest.fixture
def gen() -> torch.Generator:
    """A seeded generator, so tests never touch the global RNG."""
    return torch.Generator().manual_seed(0)


def randomize_(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Fill every parameter with N(0, 0.02) noise (zero-initialised heads would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return module
