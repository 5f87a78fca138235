"""The [class] token and position embeddings (paper §3.1, Eq. 1, §3.2, Appendix D.4).

Eq. 1:  z_0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos,   E_pos ∈ R^{(N+1)×D}

The model (`minivit.vit.ViT`) owns the learnable parameters `cls_token`
(1, 1, D) and `pos_embed` (1, N+1, D) under timm's names; this module holds the
pure functions around them:

- `prepend_class_token`: (B, N, D) -> (B, N+1, D).
- `sincos_pos_embed_2d`: the fixed 2D sine-cosine alternative (Appendix D.4).
- `resize_pos_embed`: "we perform 2D interpolation of the pre-trained position
  embeddings, according to their location in the original image" (§3.2), used
  to fine-tune at a higher resolution; same algorithm as timm's
  `resample_abs_pos_embed` (bicubic, antialiased).
- `pos_embed_similarity`: cosine similarity of each patch's embedding with all
  others, laid out on the grid (the paper's Fig. 7, centre).

Introduced in 02_class_token_and_positions.ipynb.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange, repeat


def _grid(grid: int | tuple[int, int]) -> tuple[int, int]:
    g = (grid, grid) if isinstance(grid, int) else (int(grid[0]), int(grid[1]))
    if min(g) < 1:
        raise ValueError(f"a grid must be positive (rows, cols), got {grid!r}")
    return g


def prepend_class_token(tokens: torch.Tensor, cls_token: torch.Tensor) -> torch.Tensor:
    """(B, N, D) patch tokens and a (1, 1, D) [class] token -> (B, N+1, D), the class token first."""
    if tokens.ndim != 3 or cls_token.shape != (1, 1, tokens.shape[-1]):
        raise ValueError(
            f"expected tokens (B, N, D) and cls_token (1, 1, D), got {tuple(tokens.shape)} and {tuple(cls_token.shape)}"
        )
    cls = repeat(cls_token, "1 1 d -> b 1 d", b=tokens.shape[0])  # (B, 1, D)
    return torch.cat([cls, tokens], dim=1)  # (B, N+1, D)


def sincos_pos_embed_2d(dim: int, grid: int | tuple[int, int], temperature: float = 10000.0) -> torch.Tensor:
    """Fixed 2D sine-cosine position embedding, (rows*cols, D), row-major like `patchify`.

    Half of D encodes the row, half the column; each half is the 1D
    sine-cosine code of "Attention Is All You Need" (D must be divisible by 4).
    """
    gh, gw = _grid(grid)
    if dim % 4:
        raise ValueError(f"dim must be divisible by 4 for a 2D sine-cosine embedding, got {dim}")
    ys, xs = torch.meshgrid(torch.arange(gh, dtype=torch.float32), torch.arange(gw, dtype=torch.float32), indexing="ij")
    omega = 1.0 / temperature ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4))  # (D/4,)
    ys = ys.flatten()[:, None] * omega[None]  # (N, D/4)
    xs = xs.flatten()[:, None] * omega[None]  # (N, D/4)
    return torch.cat([ys.sin(), ys.cos(), xs.sin(), xs.cos()], dim=1)  # (N, D)


def resize_pos_embed(
    pos_embed: torch.Tensor,
    old_grid: int | tuple[int, int],
    new_grid: int | tuple[int, int],
    num_prefix_tokens: int = 1,
    mode: str = "bicubic",
    antialias: bool = True,
    align_corners: bool = False,
) -> torch.Tensor:
    """2D-interpolate position embeddings to a new patch grid (§3.2).

    pos_embed: (1, num_prefix_tokens + old_h*old_w, D) -> (1, num_prefix_tokens + new_h*new_w, D).
    The prefix ([class]) embeddings are kept as they are; the patch embeddings
    are laid out on their (old_h, old_w) grid, resized to (new_h, new_w) and
    flattened row-major again. Identity when the grid does not change.

    Conventions: the default -- bicubic, antialiased, patch *centres* aligned
    (`align_corners=False`) -- is timm's `resample_abs_pos_embed` and DeiT's. The
    paper's authors' code (`vit_jax/checkpoint.py`, `interpolate_posembed`) calls
    `scipy.ndimage.zoom(grid, zoom, order=1)`: linear, with the *corner* patches
    aligned; `mode="bilinear", antialias=False, align_corners=True` reproduces it.
    """
    if mode not in ("bicubic", "bilinear"):
        raise ValueError(f"mode must be 'bicubic' or 'bilinear', got {mode!r}")
    old_h, old_w = _grid(old_grid)
    new_h, new_w = _grid(new_grid)
    if pos_embed.ndim != 3 or pos_embed.shape[0] != 1:
        raise ValueError(f"expected pos_embed of shape (1, tokens, D), got {tuple(pos_embed.shape)}")
    expected = num_prefix_tokens + old_h * old_w
    if pos_embed.shape[1] != expected:
        raise ValueError(
            f"pos_embed has {pos_embed.shape[1]} tokens but old_grid {old_h}x{old_w} with "
            f"{num_prefix_tokens} prefix token(s) needs {expected}"
        )
    if (old_h, old_w) == (new_h, new_w):
        return pos_embed
    prefix, patches = pos_embed[:, :num_prefix_tokens], pos_embed[:, num_prefix_tokens:]
    grid = rearrange(patches, "1 (h w) d -> 1 d h w", h=old_h).float()  # (1, D, old_h, old_w)
    grid = F.interpolate(grid, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=align_corners)
    patches = rearrange(grid, "1 d h w -> 1 (h w) d").to(pos_embed.dtype)  # (1, new_h*new_w, D)
    return torch.cat([prefix, patches], dim=1)  # (1, prefix + new_h*new_w, D)


def pos_embed_similarity(
    pos_embed: torch.Tensor, grid: int | tuple[int, int], num_prefix_tokens: int = 1
) -> torch.Tensor:
    """Cosine similarity between patch position embeddings, (rows, cols, rows, cols).

    Entry [i, j] is a (rows, cols) map: how similar the embedding of patch
    (i, j) is to every other patch's -- one tile of the paper's Fig. 7 (centre).
    """
    gh, gw = _grid(grid)
    pe = pos_embed.detach().reshape(-1, pos_embed.shape[-1])[num_prefix_tokens:].float()  # (N, D)
    if pe.shape[0] != gh * gw:
        raise ValueError(f"expected {gh * gw} patch embeddings for a {gh}x{gw} grid, got {pe.shape[0]}")
    pe = F.normalize(pe, dim=-1)
    sim = pe @ pe.T  # (N, N)
    return rearrange(sim, "(h1 w1) (h2 w2) -> h1 w1 h2 w2", h1=gh, h2=gh)  # (rows, cols, rows, cols)


def init_pos_embed_(pos_embed: torch.Tensor, std: float = 0.02) -> torch.Tensor:
    """In place: N(0, std²), not truncated -- the paper's JAX code (`nn.initializers.normal(stddev=0.02)`)."""
    with torch.no_grad():
        return torch.nn.init.normal_(pos_embed, mean=0.0, std=std)


__all__ = [
    "prepend_class_token",
    "sincos_pos_embed_2d",
    "resize_pos_embed",
    "pos_embed_similarity",
    "init_pos_embed_",
]
