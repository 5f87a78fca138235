"""Train-time augmentation: random crop and flip on whole batches, on the batch's device; and, for the full
profile, per-image RandAugment and batch MixUp/CutMix, using torchvision's implementations.

The batched crop and flip have no per-image Python loop: a crop is one gather with a random offset per
image, a flip one `torch.where`; reproducible from a `torch.Generator`. `minivit.data` re-exports them.
`rand_augment` is a per-image pipeline for `fit(transform=..., workers=...)` (DataLoader worker
processes on the CPU); `mixup_cutmix` mixes a normalised batch on the device (`fit(mix=...)`).

Introduced in 03_transformer_encoder.ipynb (used by `minivit.train.fit`); the strong augmentation in
04_training_a_vit.ipynb.

Shape legend: B batch, C channels, H W height width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


def _randint(high, n, generator, device):
    dev = generator.device if generator is not None else device
    return torch.randint(0, high, (n,), generator=generator, device=dev).to(device)


def random_crop(images: torch.Tensor, padding: int, generator=None) -> torch.Tensor:
    """Zero-pad (B, C, H, W) by `padding` on each side, then crop H x W at a random offset per image."""
    if images.ndim != 4 or padding < 0:
        raise ValueError(f"expected images (B, C, H, W) and padding >= 0, got {tuple(images.shape)}, {padding}")
    if padding == 0:
        return images
    B, C, H, W = images.shape
    padded = F.pad(images, (padding,) * 4)  # (B, C, H+2p, W+2p)
    dy, dx = (_randint(2 * padding + 1, B, generator, images.device) for _ in range(2))  # (B,)
    rows = (dy[:, None] + torch.arange(H, device=images.device))[:, :, None]  # (B, H, 1)
    cols = (dx[:, None] + torch.arange(W, device=images.device))[:, None, :]  # (B, 1, W)
    b = torch.arange(B, device=images.device)[:, None, None]  # (B, 1, 1)
    return padded.permute(0, 2, 3, 1)[b, rows, cols].permute(0, 3, 1, 2).contiguous()  # (B, C, H, W)


def random_flip(images: torch.Tensor, p: float = 0.5, generator=None) -> torch.Tensor:
    """Mirror each image of (B, C, H, W) left-right with probability p."""
    if images.ndim != 4:
        raise ValueError(f"expected images (B, C, H, W), got shape {tuple(images.shape)}")
    dev = generator.device if generator is not None else images.device
    flip = (torch.rand(len(images), generator=generator, device=dev) < p).to(images.device)  # (B,)
    return torch.where(flip[:, None, None, None], images.flip(-1), images)


@dataclass(frozen=True)
class Augment:
    """Batched train-time augmentation of uint8 (B, C, H, W) on the batch's device."""
    padding: int = 0  # random-crop padding in pixels (0: no crop)
    flip: bool = False  # random left-right mirror with p = 0.5

    def __call__(self, images: torch.Tensor, generator=None) -> torch.Tensor:
        images = random_crop(images, self.padding, generator) if self.padding else images
        return random_flip(images, 0.5, generator) if self.flip else images


_BASIC_PADDING = {"cifar10": 4, "fashion-mnist": 2, "imagenette": 16}  # 1/8 of the side
_SIDE = {"cifar10": 32, "fashion-mnist": 28, "imagenette": 128}  # image side in pixels


POLICIES = ("basic", "flip", "none")


def make_augment(name: str, policy: str = "basic") -> Augment:
    """The augmentation `policy` for data set `name`.

    "basic": pad-and-crop by 1/8 of the side, then flip (the usual CIFAR recipe); "flip": mirror
    only (for runs of a few epochs, where crops cost more than they add); "none": identity.
    """
    if name not in _BASIC_PADDING:
        raise ValueError(f"unknown data set {name!r}; expected one of {sorted(_BASIC_PADDING)}")
    if policy not in POLICIES:
        raise ValueError(f"unknown augmentation policy {policy!r}; expected one of {POLICIES}")
    return {"basic": Augment(padding=_BASIC_PADDING[name], flip=True), "flip": Augment(flip=True),
            "none": Augment()}[policy]


# ---- Strong augmentation for the full profile (04_training_a_vit.ipynb): torchvision's own implementations ----


def rand_augment(name: str, num_ops: int = 2, magnitude: int = 9):
    """Per-image augmentation: pad-and-crop (1/8 of the side), flip, then RandAugment (Cubuk et al., 2020) with
    `num_ops` random operations of strength `magnitude` (of 31) -- all torchvision's `transforms.v2`. A callable
    on one uint8 image (C, H, W) -> uint8 (C, H, W), drawing from torch's RNG; `fit(transform=..., workers=...)`
    runs it in DataLoader worker processes, each seeded from fit's seed."""
    from torchvision.transforms import v2
    if name not in _BASIC_PADDING:
        raise ValueError(f"unknown data set {name!r}; expected one of {sorted(_BASIC_PADDING)}")
    if num_ops < 0 or not 0 <= magnitude <= 30:
        raise ValueError(f"expected num_ops >= 0 and magnitude in [0, 30], got {num_ops} and {magnitude}")
    return v2.Compose([v2.RandomCrop(_SIDE[name], padding=_BASIC_PADDING[name]), v2.RandomHorizontalFlip(),
                       v2.RandAugment(num_ops=num_ops, magnitude=magnitude)])


def mixup_cutmix(num_classes: int, mixup_alpha: float = 0.8, cutmix_alpha: float = 1.0):
    """Batch mixing, one of MixUp (Zhang et al., 2018) or CutMix (Yun et al., 2019) per batch, torchvision's
    `transforms.v2`: `(x (B, C, H, W) float, y (B,) int) -> (mixed x, soft targets (B, K))`, drawing from
    torch's RNG. For `fit(mix=...)`."""
    from torchvision.transforms import v2
    if num_classes < 2 or mixup_alpha <= 0 or cutmix_alpha <= 0:
        raise ValueError(f"expected num_classes >= 2 and positive alphas, got {num_classes}, {mixup_alpha}, {cutmix_alpha}")
    return v2.RandomChoice([v2.MixUp(alpha=mixup_alpha, num_classes=num_classes),
                            v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes)])
