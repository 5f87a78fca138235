"""The reference answers that the nbgrader kit's locked cells use, so that the students' copy does not spell them out.

    from minivit.references import authors_resize, authors_resize_mistakes, hide_highest

- `authors_resize(pos_embed, old_grid, new_grid)`: assignment B, part 3. The position embeddings resized in the
  convention of the paper's own code (`scipy.ndimage.zoom(order=1)` in `vit_jax/checkpoint.py`): the [class] entry
  kept, the patch grid interpolated linearly along each axis with the first and last entries of the two grids pinned
  together, not antialiased. `authors_resize_mistakes()` lists what its known mistakes compute, with their hints.
- `hide_highest(images, scores, k, patch_size)`: assignment C, part 3. A copy of the images with each image's `k`
  highest-scored patches set to 0.

The package is public, so these are a student's answers too: each assignment's checks refuse this module inside the
part it answers (B part 3, C part 3), as they refuse the package's other ready-made solutions (`minivit.grading`).
Tooling for `assignments/`, not part of the course's notebooks.
"""

from __future__ import annotations

import functools

import torch

from .embeddings import resize_pos_embed
from .patching import patchify, unpatchify

__all__ = ["authors_resize", "authors_resize_mistakes", "hide_highest"]

_AUTHORS = dict(mode="bilinear", antialias=False, align_corners=True)


def authors_resize(pos_embed: torch.Tensor, old_grid: tuple[int, int], new_grid: tuple[int, int]) -> torch.Tensor:
    """`(1, 1 + h*w, D) -> (1, 1 + h'*w', D)` in the authors' convention (see the module's docstring)."""
    return resize_pos_embed(pos_embed, old_grid, new_grid, **_AUTHORS)


def authors_resize_mistakes() -> list[tuple]:
    """(function, hint) pairs: what the known mistakes of B part 3 compute (each with `authors_resize`'s signature)
    and the hint a check gives when an answer equals one of them."""
    def other(**changes):
        return functools.partial(resize_pos_embed, **{**_AUTHORS, **changes})

    centres = "the patch centres are aligned (align_corners=False): that is timm's convention, part 1's"
    cubic = "cubic: the authors' zoom is linear (order=1), bilinear on the grid"
    return [
        (other(align_corners=False), centres),
        (other(align_corners=False, antialias=True), centres),
        (resize_pos_embed, "that is part 1's convention (timm's: bicubic, centres aligned)"),
        (other(mode="bicubic"), cubic),
        (other(mode="bicubic", antialias=True), cubic),
        (other(antialias=True), "antialiased: scipy.ndimage.zoom does not antialias"),
    ]


def hide_highest(images: torch.Tensor, scores: torch.Tensor, k: int, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) images and (B, N) scores, one per patch row by row -> a copy of the images with each image's
    `k` highest-scored patches set to 0."""
    patches = patchify(images, patch_size)  # (B, N, P*P*C), row by row
    top = scores.topk(k, dim=1).indices  # (B, k)
    patches = patches.scatter(1, top[..., None].expand(-1, -1, patches.shape[-1]), 0.0)  # (B, N, P*P*C)
    return unpatchify(patches, patch_size, tuple(images.shape[-2:]))  # (B, C, H, W)
