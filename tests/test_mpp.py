"""Masked patch prediction: colour codes, corruption statistics, the wrapped ViT, loss and a few training steps."""

import math

import pytest
import torch

from minivit import ViT
from minivit.mpp import (
    KEPT,
    MASKED,
    NOT_CORRUPTED,
    RANDOM,
    MaskedPatchPrediction,
    color_code_entropy,
    color_levels_to_code,
    corrupt_patches,
    decode_color_code,
    mpp_loss,
    patch_color_codes,
)
from tests.conftest import TINY, randomize_, synthetic, tiny_model

# ---- colour codes ----


def test_codes_are_a_bijection_onto_0_511():
    levels = torch.cartesian_prod(torch.arange(8), torch.arange(8), torch.arange(8))  # (512, 3) every triple
    codes = color_levels_to_code(levels)
    assert torch.equal(codes.sort().values, torch.arange(512))  # each code exactly once
    colours = decode_color_code(codes)  # (512, 3) bin centres
    assert ((colours > 0) & (colours < 1)).all()
    assert torch.equal((colours * 8).floor().long(), levels)  # decode inverts encode
    torch.testing.assert_close(colours[0], torch.tensor([0.0625, 0.0625, 0.0625]))


def constant_images(rgb, size=(8, 8)):
    return torch.tensor(rgb, dtype=torch.uint8).view(-1, 3, 1, 1).expand(-1, 3, *size).contiguous()


def test_known_colours():
    images = constant_images([[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [128, 64, 32]])
    codes = patch_color_codes(images, patch_size=4)
    assert codes.shape == (6, 4)  # (B, N): 2 x 2 patches
    # code = 64 r + 8 g + b; 128/255 -> level 4, 64/255 -> 2, 32/255 -> 1
    expected = torch.tensor([0, 511, 7 * 64, 7 * 8, 7, 4 * 64 + 2 * 8 + 1])
    assert torch.equal(codes, expected[:, None].expand(6, 4))


def test_codes_follow_patchify_order_on_a_non_square_image():
    images = torch.zeros(1, 3, 8, 16, dtype=torch.uint8)  # a 2 x 4 grid of 4-pixel patches
    images[0, 2, 4:8, 8:12] = 255  # patch (row 1, column 2) is blue
    codes = patch_color_codes(images, 4)
    assert codes.shape == (1, 8) and codes[0, 1 * 4 + 2] == 7 and codes.sum() == 7


def test_uint8_and_float_inputs_give_the_same_codes(gen):
    images = torch.randint(0, 256, (16, 3, 16, 16), generator=gen, dtype=torch.uint8)
    # a red mean of exactly 1/8 (fourteen 3s and two 234s: 510 / (16 * 255)), a bin edge: level 1
    edge = torch.tensor([3] * 14 + [234] * 2, dtype=torch.uint8).view(4, 4)
    images[0] = 0
    images[0, 0, :4, :4] = edge
    codes = patch_color_codes(images, 4)
    assert codes[0, 0] == 64  # red level 1, not 0 (in float64, x / 255 averages to 0.12499999999999999)
    assert torch.equal(patch_color_codes(images.float() / 255, 4), codes)
    assert torch.equal(patch_color_codes(images.double() / 255, 4), codes)
    assert len(codes.unique()) > 20  # random images: varied targets, not a constant label (vit-pytorch#97)


def test_mean_exactly_one_half_falls_in_the_upper_bin():
    images = torch.zeros(1, 3, 4, 4, dtype=torch.uint8)
    images[0, 1, :, :2] = 255  # green mean exactly 0.5 -> level 4
    assert patch_color_codes(images, 4).item() == 4 * 8
    assert patch_color_codes(images.float() / 255, 4).item() == 4 * 8


@pytest.mark.parametrize(
    "images, message",
    [
        (torch.randn(2, 3, 8, 8), "look mean/std-normalised"),
        (torch.full((2, 3, 8, 8), 255.0), r"expected float images in \[0, 1\], got values up to 255"),
        (torch.zeros(2, 3, 8, 8, dtype=torch.int32), "expected uint8 or float images, got torch.int32"),
        (torch.zeros(2, 1, 8, 8, dtype=torch.uint8), r"expected 3 channels \(B, 3, H, W\)"),
        (torch.zeros(2, 3, 8, 6, dtype=torch.uint8), "not divisible by patch size 4"),
    ],
)
def test_color_code_errors(images, message):
    with pytest.raises(ValueError, match=message):
        patch_color_codes(images, 4)


def test_images_with_nan_are_named_as_such():
    images = torch.rand(2, 3, 8, 8)
    images[1, 0, 2, 3] = float("nan")
    with pytest.raises(ValueError, match=r"the images contain NaN \(1 of 384 values\)"):
        patch_color_codes(images, 4)


def test_decode_and_encode_errors():
    with pytest.raises(ValueError, match=r"colour codes must lie in 0..511 for 3 bits, got 0..512"):
        decode_color_code(torch.tensor([0, 512]))
    with pytest.raises(ValueError, match=r"expected integer levels \(..., 3\)"):
        color_levels_to_code(torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"levels must lie in 0..7"):
        color_levels_to_code(torch.tensor([[0, 8, 0]]))


def test_entropy_of_the_colour_marginal():
    assert color_code_entropy(torch.arange(512)) == pytest.approx(math.log(512))
    assert color_code_entropy(torch.full((10,), 7)) == 0.0
    assert color_code_entropy(torch.tensor([[3, 3], [9, 9]])) == pytest.approx(math.log(2))
    assert color_code_entropy(torch.tensor([1, 1, 1, 0])) == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    with pytest.raises(ValueError, match=r"colour codes must lie in 0..511"):
        color_code_entropy(torch.tensor([-1, 3]))


# ---- corruption ----


def test_corruption_rates_within_binomial_tolerance():
    b, n, d = 400, 64, 4
    tokens = torch.randn(b, n, d, generator=torch.Generator().manual_seed(1))
    out = corrupt_patches(tokens, torch.zeros(d), torch.Generator().manual_seed(2))
    assert torch.equal(out.mask.sum(1), torch.full((b,), 32))  # exactly round(0.5 N) per image
    assert torch.equal(out.mask, out.kind != NOT_CORRUPTED)
    selected = out.kind[out.mask]
    total = selected.numel()
    for kind, p in ((MASKED, 0.8), (RANDOM, 0.1), (KEPT, 0.1)):
        rate = (selected == kind).float().mean().item()
        assert abs(rate - p) < 5 * math.sqrt(p * (1 - p) / total), (kind, rate)  # 5 standard errors
    per_position = out.mask.float().mean(0)  # every position is chosen half of the time
    assert (per_position - 0.5).abs().max() < 5 * math.sqrt(0.25 / b)


@pytest.mark.parametrize("n, expected", [(9, 5), (4, 2), (1, 1)])
def test_corrupted_count_rounds_half_up(n, expected):
    out = corrupt_patches(torch.randn(3, n, 2), torch.zeros(2), torch.Generator().manual_seed(0), random_prob=0.0)
    assert torch.equal(out.mask.sum(1), torch.full((3,), expected))


def test_each_kind_does_what_it_says(gen):
    b, n, d = 8, 16, 6
    tokens = torch.randn(b, n, d, generator=gen)
    mask_token = torch.randn(d, generator=gen)
    out = corrupt_patches(tokens, mask_token, torch.Generator().manual_seed(3))
    kind = out.kind
    assert all((kind == k).any() for k in (NOT_CORRUPTED, MASKED, RANDOM, KEPT))
    same = (kind == NOT_CORRUPTED) | (kind == KEPT)
    assert torch.equal(out.tokens[same], tokens[same])  # untouched and kept: unchanged
    assert torch.equal(out.tokens[kind == MASKED], mask_token.expand(int((kind == MASKED).sum()), d))
    flat = tokens.reshape(b * n, d)
    own = torch.arange(b * n).view(b, n)
    other_image = 0
    for i, j in (kind == RANDOM).nonzero().tolist():
        matches = (flat == out.tokens[i, j]).all(1).nonzero().flatten().tolist()
        assert len(matches) == 1 and matches[0] != own[i, j]  # another patch's (uncorrupted) embedding
        other_image += matches[0] // n != i
    assert other_image > 0  # drawn from the whole batch, not only the same image


def test_corruption_is_reproducible_and_differentiable():
    tokens = torch.randn(4, 10, 3, requires_grad=True)
    mask_token = torch.zeros(1, 1, 3, requires_grad=True)
    a = corrupt_patches(tokens, mask_token, torch.Generator().manual_seed(5))
    b = corrupt_patches(tokens, mask_token, torch.Generator().manual_seed(5))
    c = corrupt_patches(tokens, mask_token, torch.Generator().manual_seed(6))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.kind, b.kind) and not torch.equal(a.kind, c.kind)
    a.tokens.sum().backward()
    assert mask_token.grad.abs().sum() > 0 and tokens.grad.abs().sum() > 0


def test_corruption_errors():
    with pytest.raises(ValueError, match=r"expected a mask token of shape \(3,\) or \(1, 1, 3\), got \(4,\)"):
        corrupt_patches(torch.zeros(1, 4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="sum <= 1"):
        corrupt_patches(torch.zeros(1, 4, 3), torch.zeros(3), mask_prob=0.8, random_prob=0.3)
    with pytest.raises(ValueError, match=r"mask_ratio must be in \(0, 1\]"):
        corrupt_patches(torch.zeros(1, 4, 3), torch.zeros(3), mask_ratio=0.0)
    with pytest.raises(ValueError, match=r"expected float patch embeddings \(B, N, D\)"):
        corrupt_patches(torch.zeros(4, 3), torch.zeros(3))
    with pytest.raises(ValueError, match="at least 2 patches"):
        corrupt_patches(torch.zeros(1, 1, 3), torch.zeros(3))


# ---- the model ----


def test_forward_tokens_is_forward_features_after_patch_embed(gen):
    model = randomize_(tiny_model(), seed=4).eval()
    x = torch.randn(2, 3, 8, 8, generator=gen)
    with torch.no_grad():
        torch.testing.assert_close(model.forward_tokens(model.patch_embed(x)), model.forward_features(x))
    with pytest.raises(ValueError, match=r"expected patch embeddings \(B, 4, 16\), got \(2, 5, 16\)"):
        model.forward_tokens(torch.zeros(2, 5, 16))


def test_wrapper_shares_the_vit_and_starts_at_ln_512(gen):
    vit = randomize_(tiny_model(), seed=5)
    torch.nn.init.zeros_(vit.head.weight)
    mpp = MaskedPatchPrediction(vit)
    assert mpp.vit is vit  # fine-tune this very object afterwards
    names = {name for name, _ in mpp.named_parameters()}
    assert {"mask_token", "color_head.weight", "color_head.bias", "vit.pos_embed", "vit.head.weight"} <= names
    assert mpp.mask_token.shape == (1, 1, TINY.dim) and mpp.color_head.out_features == 512
    images, _ = synthetic(6)
    out = mpp(images.float() / 255, generator=torch.Generator().manual_seed(0))
    assert out.logits.shape == (6, 4, 512) and out.mask.shape == (6, 4)
    assert torch.equal(out.mask.sum(1), torch.full((6,), 2))
    loss = mpp_loss(out.logits, patch_color_codes(images, TINY.patch_size), out.mask)
    assert loss.item() == pytest.approx(math.log(512), abs=1e-5)  # zero-initialised colour head


def test_gradients_reach_the_mask_token_and_the_vit_not_its_head(gen):
    vit = tiny_model()
    mpp = MaskedPatchPrediction(vit, mask_prob=1.0, random_prob=0.0)
    randomize_(mpp.color_head, seed=6)
    images, _ = synthetic(4)
    out = mpp(images.float() / 255, generator=torch.Generator().manual_seed(1))
    mpp_loss(out.logits, patch_color_codes(images, TINY.patch_size), out.mask).backward()
    for p in (mpp.mask_token, vit.patch_embed.proj.weight, vit.pos_embed, vit.cls_token,
              vit.blocks[0].attn.qkv.weight, vit.norm.weight, mpp.color_head.weight):
        assert p.grad is not None and p.grad.abs().sum() > 0
    assert vit.head.weight.grad is None  # the classification head plays no part in pre-training


def test_loss_uses_only_corrupted_positions(gen):
    logits = torch.randn(2, 5, 512, generator=gen)
    targets = torch.randint(0, 512, (2, 5), generator=gen)
    mask = torch.tensor([[True, False, True, False, False], [False, False, False, False, True]])
    expected = torch.nn.functional.cross_entropy(logits[mask], targets[mask])
    torch.testing.assert_close(mpp_loss(logits, targets, mask), expected)
    changed = logits.clone()
    changed[~mask] = 100.0
    torch.testing.assert_close(mpp_loss(changed, targets, mask), expected)
    with pytest.raises(ValueError, match="at least one corrupted position"):
        mpp_loss(logits, targets, torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"expected logits \(B, N, K\), targets \(B, N\) and mask \(B, N\)"):
        mpp_loss(logits, targets[:, :4], mask)


def test_loss_refuses_targets_outside_the_colour_classes(gen):
    logits = torch.randn(2, 5, 512, generator=gen)
    mask = torch.ones(2, 5, dtype=torch.bool)
    targets = torch.randint(0, 512, (2, 5), generator=gen)
    targets[1, 3] = 700
    with pytest.raises(ValueError, match=r"expected colour classes in 0..511 \(the 512 logits of each patch\) at the "
                                         r"corrupted positions, got targets \d+..700"):
        mpp_loss(logits, targets, mask)
    targets[1, 3] = -1
    with pytest.raises(ValueError, match=r"got targets -1..\d+"):
        mpp_loss(logits, targets, mask)
    mask[1, 3] = False  # an out-of-range target where nothing is predicted is not used
    assert torch.isfinite(mpp_loss(logits, targets, mask))
    with pytest.raises(ValueError, match="expected integer targets and a bool mask, got torch.float32"):
        mpp_loss(logits, targets.float(), mask)


def test_a_few_steps_lower_the_loss():
    vit = tiny_model(seed=7)
    mpp = MaskedPatchPrediction(vit)
    images, _ = synthetic(8, seed=1)
    x, targets = images.float() / 255, patch_color_codes(images, TINY.patch_size)
    opt = torch.optim.Adam(mpp.parameters(), lr=1e-2)

    def loss_now():
        out = mpp(x, generator=torch.Generator().manual_seed(0))  # the same corruption every step
        return mpp_loss(out.logits, targets, out.mask)

    first = loss_now().item()
    for _ in range(5):
        opt.zero_grad()
        loss = loss_now()
        loss.backward()
        opt.step()
    assert first == pytest.approx(math.log(512), abs=1e-5) and loss_now().item() < first - 1.0


def test_wrapper_input_errors():
    with pytest.raises(ValueError, match="expected a minivit.ViT"):
        MaskedPatchPrediction(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"mask_ratio must be in \(0, 1\], got 1.5"):
        MaskedPatchPrediction(ViT(TINY), mask_ratio=1.5)
    mpp = MaskedPatchPrediction(ViT(TINY))
    with pytest.raises(ValueError, match="expected float images"):
        mpp(torch.zeros(1, 3, 8, 8, dtype=torch.uint8))
