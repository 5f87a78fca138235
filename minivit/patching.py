"""Images to patch sequences: `patchify`, `unpatchify` and `PatchEmbed` (paper §3.1, Eq. 1).

"[...] we reshape the image x ∈ R^{H×W×C} into a sequence of flattened 2D
patches x_p ∈ R^{N×(P²·C)}, where (H, W) is the resolution of the original
image, C is the number of channels, (P, P) is the resolution of each image
patch, and N = HW/P² is the resulting number of patches, which also serves as
the effective input sequence length for the Transformer. [...] we flatten the
patches and map to D dimensions with a trainable linear projection (Eq. 1)."
(§3.1) That projection is E.

`PatchEmbed` implements E as a Conv2d with kernel = stride = P, which is the
same linear map applied to every non-overlapping patch (tested equal to
`Linear(patchify(x))` with `conv_weight_as_linear`).

Shape legend: B batch, C channels, H W height width, P patch size,
N = HW/P² patches, D width.

Introduced in 01_patches.ipynb.
"""

from __future__ import annotations

import math

import torch
from einops import rearrange
from torch import nn

# The flattening order of one patch is (p1 p2 c): row, column, then channel.
PATCHIFY = "b c (h p1) (w p2) -> b (h w) (p1 p2 c)"
UNPATCHIFY = "b (h w) (p1 p2 c) -> b c (h p1) (w p2)"


def _pair(size: int | tuple[int, int]) -> tuple[int, int]:
    return (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))


def check_images(images: torch.Tensor, patch_size: int, channels: int | None = None) -> None:
    """Raise a ValueError unless `images` is (B, C, H, W) with H, W multiples of `patch_size`."""
    if not isinstance(images, torch.Tensor):
        raise ValueError(f"expected a torch.Tensor of shape (B, C, H, W), got {type(images).__name__}")
    if images.ndim != 4:
        raise ValueError(f"expected a 4-D tensor (B, C, H, W), got shape {tuple(images.shape)}")
    if patch_size < 1:
        raise ValueError(f"patch_size must be a positive int, got {patch_size}")
    _, c, h, w = images.shape
    if channels is not None and c != channels:
        raise ValueError(f"expected {channels} channels (B, {channels}, H, W), got shape {tuple(images.shape)}")
    if h % patch_size or w % patch_size:
        raise ValueError(
            f"image size {h}x{w} is not divisible by patch size {patch_size}; "
            f"expected H and W to be multiples of P (e.g. resize or crop to {h // patch_size * patch_size}x"
            f"{w // patch_size * patch_size})"
        )


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, P*P*C): cut into non-overlapping P x P patches, row by row, and flatten each."""
    check_images(images, patch_size)
    return rearrange(images, PATCHIFY, p1=patch_size, p2=patch_size)  # (B, N, P*P*C)


def unpatchify(patches: torch.Tensor, patch_size: int, image_size: int | tuple[int, int]) -> torch.Tensor:
    """(B, N, P*P*C) -> (B, C, H, W): the inverse of `patchify` for an image of `image_size` (H, W)."""
    if patches.ndim != 3:
        raise ValueError(f"expected a 3-D tensor (B, N, P*P*C), got shape {tuple(patches.shape)}")
    h, w = _pair(image_size)
    if h % patch_size or w % patch_size:
        raise ValueError(f"image size {h}x{w} is not divisible by patch size {patch_size}")
    gh, gw = h // patch_size, w // patch_size
    _, n, d = patches.shape
    if n != gh * gw or d % (patch_size * patch_size):
        raise ValueError(
            f"expected (B, {gh * gw}, P*P*C) patches for a {h}x{w} image with P={patch_size}, "
            f"got shape {tuple(patches.shape)}"
        )
    return rearrange(patches, UNPATCHIFY, h=gh, p1=patch_size, p2=patch_size)  # (B, C, H, W)


def lecun_normal_(weight: torch.Tensor) -> torch.Tensor:
    """In place: LeCun normal as JAX/Flax defines it (`variance_scaling(1, "fan_in", "truncated_normal")`).

    A standard normal truncated to [-2, 2], scaled so that the standard deviation is exactly 1/sqrt(fan_in);
    fan_in = weight[0].numel() (C*P*P for a conv filter, D_in for a Linear weight (D_out, D_in)).
    """
    std = math.sqrt(1.0 / weight[0].numel()) / 0.87962566103423978  # std of N(0, 1) truncated to [-2, 2]
    with torch.no_grad():
        return nn.init.trunc_normal_(weight, mean=0.0, std=1.0, a=-2.0, b=2.0).mul_(std)


def conv_weight_as_linear(weight: torch.Tensor) -> torch.Tensor:
    """Conv2d weight (D, C, P, P) -> Linear weight (D, P*P*C) in `patchify`'s flattening order."""
    return rearrange(weight, "d c p1 p2 -> d (p1 p2 c)")


class PatchEmbed(nn.Module):
    """The patch embedding E of Eq. 1: (B, C, H, W) -> (B, N, D).

    A Conv2d with kernel = stride = P (timm's name: `proj`), i.e. one shared
    linear map from each flattened P x P x C patch to D dimensions.
    """

    def __init__(self, image_size: int | tuple[int, int], patch_size: int, in_channels: int, dim: int):
        super().__init__()
        self.patch_size = patch_size
        self.stride = patch_size  # pixels between neighbouring tokens (as HybridEmbed.stride)
        self.in_channels = in_channels
        self.set_image_size(image_size)  # image_size (H, W), grid_size (H/P, W/P), num_patches N
        self.proj = nn.Conv2d(in_channels, dim, kernel_size=patch_size, stride=patch_size)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """LeCun-normal filters and zero bias, as the paper's JAX code initialises its embedding convolution."""
        lecun_normal_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def set_image_size(self, image_size: int | tuple[int, int]) -> None:
        """Accept images of another size (H, W) from now on: only the grid changes, N = HW/P².

        The projection's weights do not depend on the image size ("we keep the
        patch size the same, which results in a larger effective sequence
        length", §3.2). Call `ViT.set_image_size`, which also resizes the
        position embedding, rather than this method on its own.
        """
        h, w = _pair(image_size)
        p = self.patch_size
        if min(h, w) < p or h % p or w % p:
            raise ValueError(f"image size {h}x{w} is not divisible by patch size {p}; expected positive multiples of P")
        self.image_size = (h, w)
        self.grid_size = (h // p, w // p)
        self.num_patches = self.grid_size[0] * self.grid_size[1]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        check_images(images, self.patch_size, self.in_channels)
        if tuple(images.shape[-2:]) != self.image_size:
            raise ValueError(
                f"expected images of size {self.image_size[0]}x{self.image_size[1]}, got "
                f"{images.shape[-2]}x{images.shape[-1]}; to use another resolution call "
                f"model.set_image_size(({images.shape[-2]}, {images.shape[-1]})), which also resizes the "
                "position embedding"
            )
        x = self.proj(images)  # (B, D, H/P, W/P)
        return rearrange(x, "b d gh gw -> b (gh gw) d")  # (B, N, D)
