"""Train-time augmentation: random crop and flip on whole batches, on the batch's device; and, for the full
profile, RandAugment and batch MixUp/CutMix, using torchvision's implementations.

The batched crop and flip have no per-image Python loop: a crop is one gather with a random offset per
image, a flip one `torch.where`; reproducible from a `torch.Generator`. `minivit.data` re-exports them.
RandAugment comes two ways, with the same distribution: `BatchRandAugment` on a whole
uint8 batch on its device (`fit(augment=...)`; the full recipes use it), grouping the images by the operation
each drew; and `rand_augment`, a per-image pipeline for `fit(transform=..., workers=...)` (DataLoader worker
processes on the CPU). The recipes moved to the batched one because the per-image loader set the pace of the
full runs (measured on one H100 with 16 cores, 2026-11-27: about 3.5 s an epoch of CIFAR-10 whatever the model,
about 14,000 images/s from 14 workers). `mixup_cutmix` mixes a normalised batch on the device (`fit(mix=...)`);
`cutmix` is CutMix alone (the zoo's CutMix twin, notebook 08's protocol comparison).

Introduced in 03_transformer_encoder.ipynb (used by `minivit.train.fit`); the strong augmentation in
04_training_a_vit.ipynb.

Shape legend: B batch, C channels, H W height width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F


def _randint(high, n, generator, device):
    dev = generator.device if generator is not None else device
    return torch.randint(0, high, (n,), generator=generator, device=dev).to(device)


def _rand(n, generator, device):
    dev = generator.device if generator is not None else device
    return torch.rand(n, generator=generator, device=dev).to(device)


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
    flip = _rand(len(images), generator, images.device) < p  # (B,)
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
    runs it in DataLoader worker processes, each seeded from fit's seed. The full recipes use `BatchRandAugment`
    instead (the same distribution, on the GPU): this CPU pipeline set the pace of their runs (module docstring)."""
    from torchvision.transforms import v2
    if name not in _BASIC_PADDING:
        raise ValueError(f"unknown data set {name!r}; expected one of {sorted(_BASIC_PADDING)}")
    if num_ops < 0 or not 0 <= magnitude <= 30:
        raise ValueError(f"expected num_ops >= 0 and magnitude in [0, 30], got {num_ops} and {magnitude}")
    return v2.Compose([v2.RandomCrop(_SIDE[name], padding=_BASIC_PADDING[name]), v2.RandomHorizontalFlip(),
                       v2.RandAugment(num_ops=num_ops, magnitude=magnitude)])


# RandAugment's operations, in torchvision's order (`v2.RandAugment._AUGMENTATION_SPACE`): name, signed. A test
# checks the names, order and signs against torchvision's table, whose magnitudes `_magnitude` reads.
_RA_OPS = (("Identity", False), ("ShearX", True), ("ShearY", True), ("TranslateX", True), ("TranslateY", True),
           ("Rotate", True), ("Brightness", True), ("Color", True), ("Contrast", True), ("Sharpness", True),
           ("Posterize", False), ("Solarize", False), ("AutoContrast", False), ("Equalize", False))
_RA_BINS = 31  # torchvision's default num_magnitude_bins


@lru_cache(maxsize=None)
def _magnitude(op: str, magnitude: int, height: int, width: int) -> float:
    """The unsigned strength of `op` at bin `magnitude` for an image of height x width, from torchvision's table."""
    from torchvision.transforms import v2
    table = v2.RandAugment._AUGMENTATION_SPACE[op][0](_RA_BINS, height, width)
    return 0.0 if table is None else float(table[magnitude])


def apply_op(images: torch.Tensor, op: str, magnitude: float) -> torch.Tensor:
    """RandAugment's operation `op` at signed strength `magnitude` on a uint8 batch (B, C, H, W): the
    `torchvision.transforms.v2.functional` call that `v2.RandAugment` makes on one image (nearest
    interpolation, zero fill), made once on the whole batch."""
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as TF
    nearest = InterpolationMode.NEAREST
    shear = math.degrees(math.atan(magnitude))
    if op == "Identity":
        return images
    if op in ("ShearX", "ShearY"):
        return TF.affine(images, angle=0.0, translate=[0, 0], scale=1.0, interpolation=nearest, fill=None,
                         shear=[shear, 0.0] if op == "ShearX" else [0.0, shear], center=[0, 0])
    if op in ("TranslateX", "TranslateY"):
        return TF.affine(images, angle=0.0, scale=1.0, interpolation=nearest, shear=[0.0, 0.0], fill=None,
                         translate=[int(magnitude), 0] if op == "TranslateX" else [0, int(magnitude)])
    if op == "Rotate":
        return TF.rotate(images, angle=magnitude, interpolation=nearest, fill=None)
    adjust = {"Brightness": TF.adjust_brightness, "Color": TF.adjust_saturation, "Contrast": TF.adjust_contrast,
              "Sharpness": TF.adjust_sharpness}
    if op in adjust:
        return adjust[op](images, 1.0 + magnitude)
    if op == "Posterize":
        return TF.posterize(images, bits=int(magnitude))
    if op == "Solarize":
        return TF.solarize(images, threshold=255.0 * magnitude)  # 255: uint8's largest value
    if op == "AutoContrast":
        return TF.autocontrast(images)
    if op == "Equalize":
        return TF.equalize(images)
    raise ValueError(f"unknown RandAugment operation {op!r}; expected one of {[o for o, _ in _RA_OPS]}")


@dataclass(frozen=True)
class BatchRandAugment:
    """Pad-and-crop (1/8 of the side), flip, then RandAugment (Cubuk et al., 2020) on a uint8 batch (B, C, H, W),
    on its device. The same distribution as `rand_augment` (torchvision's `v2.RandAugment(num_ops, magnitude)`
    per image): in each of `num_ops` rounds every image draws its own operation, uniformly from the 14, and for a
    signed one its own sign (p 0.5); the images that drew the same (operation, sign) get it in one call. Called
    like `Augment`: `aug(images, generator=None)` (None: torch's RNG on the batch's device)."""
    dataset: str  # data set name: sets the crop's padding (`_BASIC_PADDING`)
    num_ops: int = 2  # RandAugment rounds per image (>= 0)
    magnitude: int = 9  # strength, a bin of 31 (0-30), the same for every operation

    def __post_init__(self):
        if self.dataset not in _BASIC_PADDING:
            raise ValueError(f"unknown data set {self.dataset!r}; expected one of {sorted(_BASIC_PADDING)}")
        if not isinstance(self.num_ops, int) or not isinstance(self.magnitude, int) or self.num_ops < 0 \
                or not 0 <= self.magnitude <= _RA_BINS - 1:
            raise ValueError(f"expected integers num_ops >= 0 and magnitude in [0, {_RA_BINS - 1}], "
                             f"got {self.num_ops!r} and {self.magnitude!r}")

    def __call__(self, images: torch.Tensor, generator=None) -> torch.Tensor:
        if images.ndim != 4 or images.dtype != torch.uint8:
            raise ValueError(f"expected a uint8 batch (B, C, H, W), got {images.dtype} {tuple(images.shape)}")
        images = random_flip(random_crop(images, _BASIC_PADDING[self.dataset], generator), 0.5, generator)
        B, _, H, W = images.shape
        signed = torch.tensor([s for _, s in _RA_OPS], device=images.device)  # (14,)
        for _ in range(self.num_ops):
            op = _randint(len(_RA_OPS), B, generator, images.device)  # (B,)
            negative = (_rand(B, generator, images.device) <= 0.5) & signed[op]  # (B,) as torchvision draws it
            group = op * 2 + negative  # (B,) one id per (operation, sign)
            order = group.argsort()  # (B,) the images of each group together, groups in id order
            counts = torch.bincount(group, minlength=2 * len(_RA_OPS)).tolist()  # one host sync a round
            out, start = images.clone(), 0
            for g, count in enumerate(counts):
                if count:
                    idx = order[start:start + count]  # (b,)
                    name = _RA_OPS[g // 2][0]
                    m = _magnitude(name, self.magnitude, H, W) * (-1.0 if g % 2 else 1.0)
                    out[idx] = apply_op(images[idx], name, m)
                    start += count
            images = out
        return images


def mixup_cutmix(num_classes: int, mixup_alpha: float = 0.8, cutmix_alpha: float = 1.0):
    """Batch mixing, one of MixUp (Zhang et al., 2018) or CutMix (Yun et al., 2019) per batch, torchvision's
    `transforms.v2`: `(x (B, C, H, W) float, y (B,) int) -> (mixed x, soft targets (B, K))`, drawing from
    torch's RNG. For `fit(mix=...)`."""
    from torchvision.transforms import v2
    if num_classes < 2 or mixup_alpha <= 0 or cutmix_alpha <= 0:
        raise ValueError(f"expected num_classes >= 2 and positive alphas, got {num_classes}, {mixup_alpha}, {cutmix_alpha}")
    return v2.RandomChoice([v2.MixUp(alpha=mixup_alpha, num_classes=num_classes),
                            v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes)])


def cutmix(num_classes: int, alpha: float = 1.0):
    """CutMix alone (Yun et al., 2019) on every batch, torchvision's `v2.CutMix`: `(x (B, C, H, W) float, y (B,)
    int) -> (mixed x, soft targets (B, K))`, drawing from torch's RNG. For `fit(mix=...)`; the zoo's CutMix twin of
    `vit-nano4-cifar10` trains with it (notebook 08 compares the two models' attention distances)."""
    from torchvision.transforms import v2
    if num_classes < 2 or not alpha > 0:
        raise ValueError(f"expected num_classes >= 2 and a positive alpha, got {num_classes}, {alpha}")
    return v2.CutMix(alpha=alpha, num_classes=num_classes)


MIXES = {"cutmix": cutmix, "mixup-cutmix": mixup_cutmix}  # by name, for recipes kept as plain data (the zoo)
