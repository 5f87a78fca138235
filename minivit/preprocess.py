"""Your own image -> a model's input: resize, crop, channels and the data set's normalisation.

What timm's `resolve_data_config` + `create_transform` and torchvision's `weights.transforms()` do for their
models, for a minivit model and the data set it was trained on. Introduced for instructors (the notebooks load
their images with `minivit.data`); 08_inspecting_vit.ipynb draws attention over images, the natural place to try
one of your own:

    prep = Preprocess.for_model(model, "imagenette")   # 128 x 128, RGB, ImageNet's mean and std
    x = prep("grace_hopper.jpg")                       # (1, 3, 128, 128) float, normalised
    logits = model(x.to(device))
    prep.config                                         # {'input_size': (3, 128, 128), 'mean': ..., 'crop': 'center'}

Accepted images: a path (read with PIL), a PIL image, a uint8 tensor (C, H, W) or (B, C, H, W) in 0..255, a
float tensor in [0, 1]. Steps, in order: to float [0, 1]; to the model's channels (RGB -> grey by ITU-R 601
luma, as PIL's "L"; grey -> RGB by repetition); resize so the shorter side fits, antialiased bilinear (as
`ImageDataset.resized`), then a centre crop to (H, W) (`crop=False` stretches the whole image to (H, W)
instead); then `(x - mean) / std` with `minivit.data.NORMALIZATION[dataset]` (or your own `mean` and `std`,
e.g. 0.5 for timm's ImageNet-21k ViT weights, see their `pretrained_cfg`).

Shape legend: B batch, C channels, H W image size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2: PIL's RGB -> "L"


def load_image(path: str | os.PathLike) -> torch.Tensor:
    """An image file (JPEG, PNG, WebP, ... anything PIL reads) -> uint8 (3, H, W), RGB."""
    from PIL import Image
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no image file at {path}")
    with Image.open(path) as im:
        return _from_pil(im)


def _from_pil(im) -> torch.Tensor:
    return torch.from_numpy(np.array(im.convert("RGB"))).permute(2, 0, 1).contiguous()  # (3, H, W) uint8


def _as_float_batch(image) -> torch.Tensor:
    """Any accepted image -> float32 (B, C, H, W) in [0, 1]."""
    if isinstance(image, (str, os.PathLike)):
        image = load_image(image)
    elif not isinstance(image, torch.Tensor):
        from PIL import Image
        if not isinstance(image, Image.Image):
            raise TypeError(f"expected a path, a PIL image or a tensor (C, H, W) / (B, C, H, W), got "
                            f"{type(image).__name__}")
        image = _from_pil(image)
    if image.ndim == 3:
        image = image.unsqueeze(0)  # (1, C, H, W)
    if image.ndim != 4:
        raise ValueError(f"expected an image tensor (C, H, W) or (B, C, H, W), got shape {tuple(image.shape)}")
    if image.dtype == torch.uint8:
        return image.float() / 255
    if not image.is_floating_point():
        raise ValueError(f"expected uint8 (0..255) or float ([0, 1]) images, got {image.dtype}")
    lo, hi = image.min().item(), image.max().item()
    if lo < -1e-3 or hi > 1 + 1e-3:
        raise ValueError(f"expected float images in [0, 1], got values in [{lo:.3g}, {hi:.3g}] "
                         "(divide 0..255 images by 255; do not pass images normalised already)")
    return image.float()


@dataclass(frozen=True)
class Preprocess:
    """A callable: image -> float32 (B, C, H, W) ready for a model of `image_size` and `in_channels`."""

    image_size: int | tuple[int, int]  # (H, W) of the model's input
    mean: tuple[float, ...]  # per channel, [0, 1] units
    std: tuple[float, ...]
    in_channels: int = 3  # the model's C: 1 (grey) or 3 (RGB)
    crop: bool = True  # True: shorter side to size, centre crop; False: stretch to (H, W)

    def __post_init__(self):
        size = self.image_size
        hw = (size, size) if isinstance(size, int) else tuple(int(v) for v in size)
        if len(hw) != 2 or min(hw) < 1:
            raise ValueError(f"image_size must be a positive int or (H, W), got {size!r}")
        object.__setattr__(self, "image_size", hw)
        mean, std = tuple(float(v) for v in self.mean), tuple(float(v) for v in self.std)
        if len(mean) != self.in_channels or len(std) != self.in_channels or min(std) <= 0:
            raise ValueError(f"expected {self.in_channels} means and {self.in_channels} positive stds, got {mean} "
                             f"and {std}")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)

    @classmethod
    def for_model(cls, model, dataset: str, crop: bool = True) -> "Preprocess":
        """The input a minivit model (its `config`: image size, channels) trained on `dataset` expects, with
        that data set's `minivit.data.NORMALIZATION`."""
        from .checkpoint import unwrap
        from .data import NORMALIZATION
        config = getattr(unwrap(model), "config", None)
        if config is None or not hasattr(config, "image_hw"):
            raise ValueError(f"expected a minivit ViT (with a config), got {type(model).__name__}; build "
                             "Preprocess(image_size=..., mean=..., std=..., in_channels=...) yourself")
        if dataset not in NORMALIZATION:
            raise ValueError(f"unknown data set {dataset!r}; expected one of {sorted(NORMALIZATION)} (or build "
                             "Preprocess(image_size=..., mean=..., std=...) with your own statistics)")
        mean, std = NORMALIZATION[dataset]
        if len(mean) != config.in_channels:
            raise ValueError(f"the model takes {config.in_channels} channel(s) but {dataset} has {len(mean)}")
        return cls(config.image_hw, mean, std, config.in_channels, crop)

    @property
    def config(self) -> dict:
        """timm's data-config keys: input_size (C, H, W), mean, std, interpolation, crop."""
        return {"input_size": (self.in_channels, *self.image_size), "mean": self.mean, "std": self.std,
                "interpolation": "bilinear", "crop": "center" if self.crop else "none"}

    def __call__(self, image) -> torch.Tensor:
        """image (a path, a PIL image, (C, H, W) or (B, C, H, W) uint8 or float [0, 1]) -> float32 (B, C, H, W)."""
        from torchvision.transforms.v2.functional import center_crop, resize
        x = _as_float_batch(image)  # (B, C, H0, W0) in [0, 1]
        c = x.shape[1]
        if c == 3 and self.in_channels == 1:
            x = torch.einsum("bchw,c->bhw", x, torch.tensor(LUMA, device=x.device)).unsqueeze(1)  # (B, 1, H0, W0)
        elif c == 1 and self.in_channels == 3:
            x = x.expand(-1, 3, -1, -1)  # (B, 3, H0, W0)
        elif c != self.in_channels:
            raise ValueError(f"expected images with 1 or 3 channels for a {self.in_channels}-channel model, got {c}")
        h, w = self.image_size
        if self.crop:
            scale = max(h / x.shape[-2], w / x.shape[-1])  # the shorter side (relative to the target) fits
            size = [max(h, round(x.shape[-2] * scale)), max(w, round(x.shape[-1] * scale))]
            x = center_crop(resize(x, size, antialias=True), [h, w])  # (B, C, H, W)
        else:
            x = resize(x, [h, w], antialias=True)  # (B, C, H, W)
        x = x.clamp(0, 1)
        mean = torch.tensor(self.mean, device=x.device).view(-1, 1, 1)  # (C, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(-1, 1, 1)
        return (x - mean) / std  # (B, C, H, W)


def preprocess(image, model, dataset: str, crop: bool = True) -> torch.Tensor:
    """`Preprocess.for_model(model, dataset, crop)(image)`: one call from your image to the model's input."""
    return Preprocess.for_model(model, dataset, crop)(image)


__all__ = ["LUMA", "Preprocess", "load_image", "preprocess"]
