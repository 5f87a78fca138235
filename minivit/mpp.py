"""Masked patch prediction: the paper's self-supervised pretext task (§4.6, App. B.1.2).

§4.6: "We also perform a preliminary exploration on masked patch prediction for self-supervision,
mimicking the masked language modeling task used in BERT." App. B.1.2: "we corrupt 50% of patch
embeddings by either replacing their embeddings with a learnable [mask] embedding (80%), a random other
patch embedding (10%) or just keeping them as is (10%). [...] Finally, we predict the 3-bit, mean color
(i.e., 512 colors in total) of every corrupted patch using their respective patch representations."

- `patch_color_codes`: the targets. Per patch, the mean of each channel of the *un-normalised* pixels
  (uint8 0..255, or float in [0, 1]), quantised to 3 bits (8 levels), combined into one class in 0..511:
  code = 64 r + 8 g + b (the three levels read as an octal number, red first). Normalised inputs are
  refused (lucidrains/vit-pytorch#97: targets computed from normalised inputs gave constant labels).
  `decode_color_code` maps codes back to colours for display.
- `corrupt_patches`: BERT's corruption, applied to patch embeddings x_p E before E_pos is added.
- `MaskedPatchPrediction(vit)`: wraps a `minivit.ViT` (its `patch_embed`, [class] token, `pos_embed`,
  blocks and final norm via `ViT.forward_tokens`) and adds a learnable [mask] embedding and a
  Linear(D, 512) colour head; `mpp_loss` is the cross-entropy over the corrupted positions. The ViT is
  shared, not copied: after pre-training, fine-tune `mpp.vit` itself (its own head is never used here).
- `color_code_entropy`: the entropy of the empirical colour-class marginal, the loss of a model that
  predicts the marginal and ignores the image (a baseline besides ln 512).

Our choices where the paper says nothing: exactly max(1, round(0.5 N)) patches are corrupted per image
(as BERT's reference data code fixes the number of predictions per sequence), and each of them gets its
kind independently with probabilities 0.8 / 0.1 / 0.1; a "random other patch embedding" is drawn
uniformly from all other patches of the batch (any image, any position except the patch itself), like
BERT's random word drawn from the whole vocabulary rather than the same sentence.

Shape legend: B batch, C = 3 channels, H W image size, P patch size, N patches, D width, K = 512 colours.

Introduced in 09_masked_patch_prediction.ipynb.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .patching import check_images, patchify

NOT_CORRUPTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3  # the values of `Corruption.kind`
_EDGE_TOLERANCE = 1e-6  # see patch_color_codes


def _levels(bits: int) -> int:
    if not isinstance(bits, int) or isinstance(bits, bool) or not 1 <= bits <= 8:
        raise ValueError(f"bits must be an int in [1, 8], got {bits!r}")
    return 2**bits


def color_levels_to_code(levels: torch.Tensor, bits: int = 3) -> torch.Tensor:
    """Per-channel levels (..., 3) in 0..2^bits - 1 -> one colour class (...): r L² + g L + b, L = 2^bits."""
    n = _levels(bits)
    if not isinstance(levels, torch.Tensor) or levels.shape[-1:] != (3,) or levels.is_floating_point():
        shape = f"{levels.dtype} {tuple(levels.shape)}" if isinstance(levels, torch.Tensor) else type(levels).__name__
        raise ValueError(f"expected integer levels (..., 3) (red, green, blue), got {shape}")
    if levels.numel() and (levels.min() < 0 or levels.max() >= n):
        raise ValueError(f"levels must lie in 0..{n - 1} for {bits} bits, got {levels.min()}..{levels.max()}")
    r, g, b = levels.long().unbind(-1)
    return (r * n + g) * n + b  # (...)


def decode_color_code(codes: torch.Tensor, bits: int = 3) -> torch.Tensor:
    """Colour classes (...) -> (..., 3) RGB in [0, 1], the centre (level + 0.5) / 2^bits of each channel's bin."""
    n = _levels(bits)
    if not isinstance(codes, torch.Tensor) or codes.is_floating_point():
        got = codes.dtype if isinstance(codes, torch.Tensor) else type(codes).__name__
        raise ValueError(f"expected integer colour codes, got {got}")
    if codes.numel() and (codes.min() < 0 or codes.max() >= n**3):
        raise ValueError(f"colour codes must lie in 0..{n**3 - 1} for {bits} bits, got {codes.min()}..{codes.max()}")
    codes = codes.long()
    levels = torch.stack([codes // (n * n), codes // n % n, codes % n], dim=-1)  # (..., 3)
    return (levels.float() + 0.5) / n  # (..., 3)


def patch_color_codes(images: torch.Tensor, patch_size: int, bits: int = 3) -> torch.Tensor:
    """The prediction targets: (B, 3, H, W) un-normalised images -> (B, N) colour classes in 0..2^(3 bits) - 1.

    Accepts uint8 images (0..255) or float images in [0, 1]; raises a ValueError for anything else, in
    particular for normalised images (negative values). Patches are in `patchify`'s row-major order.
    Each channel's mean m in [0, 1] falls in level floor(2^bits m) (the top level includes 1.0).
    Bin edges are lowered by 1e-6 so that a mean lying on an edge up to float rounding (e.g. x / 255
    of uint8 pixels) falls in the upper bin, as it does in exact arithmetic: uint8 images and the same
    images divided by 255 (float32 or float64) give the same codes; half-precision pixels are too coarse for that.
    """
    n = _levels(bits)
    check_images(images, patch_size, channels=3)
    if images.numel() == 0:
        raise ValueError(f"expected a non-empty batch of images, got shape {tuple(images.shape)}")
    if images.dtype == torch.uint8:
        x = images.double() / 255  # (B, 3, H, W) in [0, 1]
    elif images.is_floating_point():
        nans = int(torch.isnan(images).sum())
        if nans:
            raise ValueError(f"the images contain NaN ({nans:,} of {images.numel():,} values): expected uint8 "
                             "0..255 or float pixels in [0, 1]")
        lo, hi = images.min().item(), images.max().item()
        if lo < 0:
            raise ValueError(
                f"expected un-normalised images (uint8 0..255 or float in [0, 1]), got values down to {lo:.3g}: "
                "these look mean/std-normalised; compute colour targets from the raw pixels"
            )
        if hi > 1:
            raise ValueError(f"expected float images in [0, 1], got values up to {hi:.3g} (divide by 255, or pass uint8)")
        x = images.double()  # (B, 3, H, W)
    else:
        raise ValueError(f"expected uint8 or float images, got {images.dtype}")
    patches = rearrange(patchify(x, patch_size), "b n (pp c) -> b n pp c", c=3)  # (B, N, P*P, 3)
    means = patches.mean(dim=2)  # (B, N, 3) in [0, 1]
    levels = (means * n + _EDGE_TOLERANCE).floor().clamp(0, n - 1).long()  # (B, N, 3)
    return color_levels_to_code(levels, bits)  # (B, N)


def color_code_entropy(codes: torch.Tensor, num_colors: int = 512) -> float:
    """Entropy in nats of the empirical distribution of colour classes in `codes` (any shape)."""
    if not isinstance(codes, torch.Tensor) or codes.is_floating_point() or codes.numel() == 0:
        raise ValueError("expected a non-empty integer tensor of colour codes")
    if codes.min() < 0 or codes.max() >= num_colors:
        raise ValueError(f"colour codes must lie in 0..{num_colors - 1}, got {codes.min()}..{codes.max()}")
    p = torch.bincount(codes.flatten().long(), minlength=num_colors).double() / codes.numel()  # (K,)
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def _check_rates(mask_ratio: float, mask_prob: float, random_prob: float) -> None:
    if not 0 < mask_ratio <= 1:
        raise ValueError(f"mask_ratio must be in (0, 1], got {mask_ratio!r}")
    if mask_prob < 0 or random_prob < 0 or mask_prob + random_prob > 1:
        raise ValueError(f"mask_prob and random_prob must be >= 0 with a sum <= 1, got {mask_prob!r} and {random_prob!r}")


class Corruption(NamedTuple):
    """What `corrupt_patches` returns."""

    tokens: torch.Tensor  # (B, N, D) corrupted patch embeddings
    mask: torch.Tensor  # (B, N) bool: corrupted, i.e. predicted, positions (kind != NOT_CORRUPTED)
    kind: torch.Tensor  # (B, N) int64: NOT_CORRUPTED, MASKED, RANDOM or KEPT


def corrupt_patches(
    tokens: torch.Tensor,
    mask_token: torch.Tensor,
    generator: torch.Generator | None = None,
    mask_ratio: float = 0.5,
    mask_prob: float = 0.8,
    random_prob: float = 0.1,
) -> Corruption:
    """BERT-style corruption of patch embeddings (App. B.1.2): (B, N, D) -> `Corruption`.

    In every image exactly max(1, round(mask_ratio N)) positions are chosen uniformly (round half up);
    each chosen one independently becomes the [mask] embedding `mask_token` ((D,) or (1, 1, D)) with
    probability `mask_prob`, a random other patch embedding with probability `random_prob` (drawn
    uniformly from the B N - 1 other patches of the batch, before corruption), or stays as it is. All
    chosen positions are predicted. Random numbers come from `generator` (reproducible; it may live on
    another device than `tokens`), else from the global RNG. Differentiable in `tokens` and `mask_token`.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3 or not tokens.is_floating_point():
        shape = f"{tokens.dtype} {tuple(tokens.shape)}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise ValueError(f"expected float patch embeddings (B, N, D), got {shape}")
    b, n, d = tokens.shape
    if not isinstance(mask_token, torch.Tensor) or tuple(mask_token.shape) not in ((d,), (1, 1, d)):
        shape = tuple(mask_token.shape) if isinstance(mask_token, torch.Tensor) else type(mask_token).__name__
        raise ValueError(f"expected a mask token of shape ({d},) or (1, 1, {d}), got {shape}")
    _check_rates(mask_ratio, mask_prob, random_prob)
    if random_prob > 0 and b * n < 2:
        raise ValueError("a random other patch embedding needs at least 2 patches in the batch")
    device = generator.device if generator is not None else tokens.device
    k = max(1, math.floor(mask_ratio * n + 0.5))
    chosen = torch.rand(b, n, generator=generator, device=device).argsort(dim=1)[:, :k]  # (B, k)
    selected = torch.zeros(b, n, dtype=torch.bool, device=device).scatter_(1, chosen, True)  # (B, N)
    u = torch.rand(b, n, generator=generator, device=device)  # (B, N): which kind, for the selected
    kind = torch.full((b, n), KEPT, dtype=torch.long, device=device)
    kind[u < mask_prob + random_prob] = RANDOM
    kind[u < mask_prob] = MASKED
    kind[~selected] = NOT_CORRUPTED
    own = torch.arange(b * n, device=device).view(b, n)  # (B, N) flat index of every patch
    if b * n > 1:
        other = torch.randint(0, b * n - 1, (b, n), generator=generator, device=device)  # (B, N)
        source = other + (other >= own).long()  # (B, N): uniform over the other B N - 1 patches
    else:
        source = own
    kind, source = kind.to(tokens.device), source.to(tokens.device)
    random_tokens = tokens.reshape(b * n, d)[source]  # (B, N, D)
    out = torch.where((kind == RANDOM)[..., None], random_tokens, tokens)  # (B, N, D)
    out = torch.where((kind == MASKED)[..., None], mask_token.reshape(d).to(tokens.dtype), out)  # (B, N, D)
    return Corruption(out, kind != NOT_CORRUPTED, kind)


class MPPOutput(NamedTuple):
    """What `MaskedPatchPrediction.forward` returns."""

    logits: torch.Tensor  # (B, N, K) colour-class logits for every patch
    mask: torch.Tensor  # (B, N) bool: the corrupted positions, the only ones the loss uses
    kind: torch.Tensor  # (B, N) int64: NOT_CORRUPTED, MASKED, RANDOM or KEPT


class MaskedPatchPrediction(nn.Module):
    """Masked patch prediction around a `minivit.ViT`: (B, C, H, W) float images -> `MPPOutput`.

    Parameters: `vit` (the wrapped ViT, shared), `mask_token` (1, 1, D) (the learnable [mask] embedding,
    N(0, 0.02) truncated like the position embedding) and `color_head` Linear(D, 2^(3 bits)),
    zero-initialised like the ViT's linear head, so the first loss is exactly ln 512.

        mpp = MaskedPatchPrediction(vit)
        out = mpp(normalize(images, "cifar10"), generator=g)
        loss = mpp_loss(out.logits, patch_color_codes(images, vit.config.patch_size), out.mask)
    """

    def __init__(self, vit: nn.Module, mask_ratio: float = 0.5, mask_prob: float = 0.8, random_prob: float = 0.1,
                 bits: int = 3):
        super().__init__()
        if not hasattr(vit, "forward_tokens") or not hasattr(vit, "patch_embed"):
            raise ValueError(f"expected a minivit.ViT (with patch_embed and forward_tokens), got {type(vit).__name__}")
        _check_rates(mask_ratio, mask_prob, random_prob)
        self.vit = vit
        dim = vit.pos_embed.shape[-1]
        self.mask_ratio, self.mask_prob, self.random_prob, self.bits = mask_ratio, mask_prob, random_prob, bits
        self.num_colors = _levels(bits) ** 3
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dim))  # (1, 1, D)
        self.color_head = nn.Linear(dim, self.num_colors)
        nn.init.trunc_normal_(self.mask_token, std=0.02, a=-0.04, b=0.04)
        nn.init.zeros_(self.color_head.weight)
        nn.init.zeros_(self.color_head.bias)

    def forward(self, images: torch.Tensor, generator: torch.Generator | None = None) -> MPPOutput:
        """Normalised float images (B, C, H, W) -> logits (B, N, K) for every patch, the corrupted mask and kinds."""
        if not isinstance(images, torch.Tensor) or not images.is_floating_point():
            got = images.dtype if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"expected float images (B, C, H, W) as the ViT takes them (normalised), got {got}")
        tokens = self.vit.patch_embed(images)  # (B, N, D)
        corrupted = corrupt_patches(tokens, self.mask_token, generator, self.mask_ratio, self.mask_prob,
                                    self.random_prob)
        features = self.vit.forward_tokens(corrupted.tokens)  # (B, N+1, D)
        logits = self.color_head(features[:, self.vit.num_prefix_tokens :])  # (B, N, K)
        return MPPOutput(logits, corrupted.mask, corrupted.kind)


def mpp_loss(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the corrupted positions only: logits (B, N, K), targets (B, N) integer colour
    classes in 0..K-1 (checked where the mask is set), mask (B, N) bool with at least one True -> ()."""
    if logits.ndim != 3 or targets.shape != logits.shape[:2] or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"expected logits (B, N, K), targets (B, N) and mask (B, N), got {tuple(logits.shape)}, "
            f"{tuple(targets.shape)} and {tuple(mask.shape)}"
        )
    if mask.dtype != torch.bool or targets.is_floating_point() or targets.dtype == torch.bool:
        raise ValueError(f"expected integer targets and a bool mask, got {targets.dtype} and {mask.dtype}")
    k = logits.shape[-1]
    used = targets[mask]
    if used.numel() == 0:
        raise ValueError("expected a boolean mask with at least one corrupted position")
    lo, hi = torch.stack([used.min(), used.max()]).tolist()  # one device sync for both
    if lo < 0 or hi >= k:
        raise ValueError(f"expected colour classes in 0..{k - 1} (the {k} logits of each patch) at the corrupted "
                         f"positions, got targets {lo}..{hi}")
    return F.cross_entropy(logits[mask], used.long())


__all__ = [
    "NOT_CORRUPTED",
    "MASKED",
    "RANDOM",
    "KEPT",
    "color_levels_to_code",
    "decode_color_code",
    "patch_color_codes",
    "color_code_entropy",
    "Corruption",
    "corrupt_patches",
    "MPPOutput",
    "MaskedPatchPrediction",
    "mpp_loss",
]
