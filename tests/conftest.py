"""Shared test helpers."""

import os
from dataclasses import replace

import matplotlib

# No test fetches the course's published data archives (minivit.sources) from the internet or from a mirror the
# environment names: once the course's repository is set, a load with download=True would try its release first.
# Tests that fetch them serve them from 127.0.0.1 and set this themselves; port 9 (discard) is closed, so a fetch
# fails at once as "unreachable".
os.environ["MINIVIT_DATA_URL"] = "http://127.0.0.1:9/"

matplotlib.use("Agg")  # figures are drawn without a display; set before pyplot is imported anywhere

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from minivit.config import ViTConfig  # noqa: E402
from minivit.vit import ViT  # noqa: E402

# A ViT small enough to train in milliseconds: 8 x 8 images, 2 x 2 patches of 4 px, 3 classes.
TINY = ViTConfig(image_size=8, patch_size=4, in_channels=3, num_classes=3, dim=16, depth=1, heads=2, mlp_dim=32)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A browser test whose browser or tools are missing, under MINIVIT_REQUIRE_BROWSER=1, fails here, before its
    fixtures run (tests/browser.py decides; without that variable the test is skipped, saying why)."""
    from tests.browser import MARK
    mark = item.get_closest_marker(MARK)
    if mark is not None:
        pytest.fail(mark.kwargs["reason"], pytrace=False)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every figure a test opened (the minivit.viz tests draw many)."""
    yield
    plt.close("all")


@pytest.fixture
def gen() -> torch.Generator:
    """A seeded generator, so tests never touch the global RNG."""
    return torch.Generator().manual_seed(0)


def assert_layouts_agree(model: torch.nn.Module, layer: torch.nn.Module, x: torch.Tensor) -> None:
    """`model(x)` and its gradients are the same whether `layer.memory_format` is channels-last or NCHW (a speed
    choice of minivit.cnn and minivit.hybrid), and `layer` starts at channels-last."""
    assert layer.memory_format == torch.channels_last
    first_conv = next(m for m in layer.modules() if isinstance(m, torch.nn.Conv2d))
    seen = []  # whether the first convolution's input was channels-last, per run
    hook = first_conv.register_forward_pre_hook(
        lambda m, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last)))
    out, grads = {}, {}
    for fmt in (torch.channels_last, torch.contiguous_format):
        layer.memory_format = fmt
        model.zero_grad()
        out[fmt] = model(x)  # (B, K)
        out[fmt].square().sum().backward()
        grads[fmt] = [p.grad.clone() for p in model.parameters()]
    hook.remove()
    assert seen == [True, False]  # the attribute sets the layout the convolutions get
    torch.testing.assert_close(out[torch.channels_last], out[torch.contiguous_format])
    for a, b in zip(grads[torch.channels_last], grads[torch.contiguous_format]):
        torch.testing.assert_close(a, b)


def randomize_(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Fill every parameter with N(0, 0.02) noise (zero-initialised heads would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return module


def synthetic(n: int = 96, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 (n, 3, 8, 8) images whose class c has a bright channel c: learnable in a few steps."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % 3
    images = torch.randint(0, 100, (n, 3, 8, 8), generator=g)
    images[torch.arange(n), labels] += 120
    return images.to(torch.uint8), labels


def tiny_model(seed: int = 0, **overrides) -> ViT:
    """A fresh TINY ViT (any config field overridden), initialised from `seed`."""
    torch.manual_seed(seed)
    return ViT(replace(TINY, **overrides))
