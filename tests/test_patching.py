"""patchify / unpatchify / PatchEmbed: shapes, round trip, Conv2d == Linear∘patchify, errors."""

import pytest
import torch

pytest.importorskip("hypothesis", reason="property tests need hypothesis (pip install hypothesis, a [dev] extra)")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from minivit import PatchEmbed, conv_weight_as_linear, patchify, unpatchify  # noqa: E402


def test_patchify_shape_and_order():
    x = torch.arange(2 * 3 * 32 * 48, dtype=torch.float32).reshape(2, 3, 32, 48)
    p = patchify(x, 16)
    assert p.shape == (2, 2 * 3, 16 * 16 * 3)  # (B, N, P*P*C)
    # patch 1 is row 0, column 1; its first value is pixel (0, 16), channel 0, then channel 1.
    assert p[0, 1, 0] == x[0, 0, 0, 16] and p[0, 1, 1] == x[0, 1, 0, 16]
    # by hand with reshape/permute
    b, c, h, w = x.shape
    by_hand = x.reshape(b, c, h // 16, 16, w // 16, 16).permute(0, 2, 4, 3, 5, 1).reshape(b, -1, 16 * 16 * c)
    assert torch.equal(p, by_hand)


@settings(max_examples=40, deadline=None)
@given(
    b=st.integers(1, 3),
    c=st.integers(1, 4),
    gh=st.integers(1, 5),
    gw=st.integers(1, 5),
    p=st.integers(1, 8),
)
def test_round_trip(b, c, gh, gw, p):
    x = torch.randn(b, c, gh * p, gw * p)
    patches = patchify(x, p)
    assert patches.shape == (b, gh * gw, p * p * c)
    assert torch.equal(unpatchify(patches, p, (gh * p, gw * p)), x)


def test_patch_embed_equals_linear_on_patchify(gen):
    embed = PatchEmbed(image_size=(32, 64), patch_size=8, in_channels=3, dim=24)
    x = torch.randn(2, 3, 32, 64, generator=gen)
    out = embed(x)
    assert out.shape == (2, 4 * 8, 24) and embed.grid_size == (4, 8) and embed.num_patches == 32
    linear = torch.nn.functional.linear(patchify(x, 8), conv_weight_as_linear(embed.proj.weight), embed.proj.bias)
    torch.testing.assert_close(out, linear, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "x, p, message",
    [
        (torch.zeros(1, 3, 30, 32), 16, "image size 30x32 is not divisible by patch size 16"),
        (torch.zeros(3, 32, 32), 16, r"expected a 4-D tensor \(B, C, H, W\), got shape \(3, 32, 32\)"),
        ("not a tensor", 16, "expected a torch.Tensor"),
    ],
)
def test_patchify_errors(x, p, message):
    with pytest.raises(ValueError, match=message):
        patchify(x, p)


def test_unpatchify_errors():
    with pytest.raises(ValueError, match=r"expected \(B, 4, P\*P\*C\) patches"):
        unpatchify(torch.zeros(1, 5, 48), 4, 8)
    with pytest.raises(ValueError, match="expected a 3-D tensor"):
        unpatchify(torch.zeros(5, 48), 4, 8)


def test_patch_embed_errors():
    embed = PatchEmbed(32, 8, 3, 16)
    with pytest.raises(ValueError, match=r"expected 3 channels"):
        embed(torch.zeros(1, 1, 32, 32))
    with pytest.raises(ValueError, match="expected images of size 32x32, got 64x64"):
        embed(torch.zeros(1, 3, 64, 64))
    with pytest.raises(ValueError, match="not divisible"):
        PatchEmbed(30, 8, 3, 16)
