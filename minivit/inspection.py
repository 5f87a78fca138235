"""Inspecting a trained ViT: attention rollout, mean attention distance, filter PCA (paper §4.5, App. D.7, D.8).

The paper looks inside ViT in three ways (§4.5):

- Fig. 7 (left), "RGB embedding filters (first 28 principal components)": the principal components of the
  patch-embedding filters E, `filter_principal_components`.
- Fig. 7 (centre), the cosine similarity of the learned position embeddings: `minivit.pos_embed_similarity`
  draws it; `pos_embed_grid_summary` puts numbers on it (neighbours vs far patches, same row/column,
  left-right mirror positions).
- Fig. 7 (right) and Fig. 11, the mean attention distance: "Attention distance was computed for 128 example
  images by averaging the distance between the query pixel and all other pixels, weighted by the attention
  weight. Each dot shows the mean attention distance across images for one of 16 heads at one layer."
  `mean_attention_distance` (per image with `per_image=True`), against `uniform_attention_distance`, the
  distance of a head that attends evenly to every patch.
- Fig. 6, attention maps from the output token to the input space, by Attention Rollout (App. D.8: "we
  averaged attention weights of ViT-L/16 across all heads and then recursively multiplied the weight matrices
  of all layers"): `attention_rollout`, then `class_token_map` to lay the [class] row out on the patch grid,
  and `ratio_to_uniform` to compare it with uniform attention (1 on every patch).

Attention maps come from `ViT.attention_maps(images)` (a list of L tensors (B, heads, T, T)), never from hooks
on private modules: hooks see nothing when attention is fused (jacobgil/vit-explain#23). `record_attention`
stacks them over a data set in batches.

Shape legend: B images, L layers, heads, T = N + 1 tokens with [class], N = h * w patches on an (h, w) grid,
P patch size, D width, C channels, k components.

Introduced in 08_inspecting_vit.ipynb.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from einops import rearrange
from torch import nn

from .embeddings import _grid, pos_embed_similarity


def _stack_maps(maps: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    """A list of L maps (B, heads, T, T) or a tensor (B, L, heads, T, T) -> float tensor (B, L, heads, T, T)."""
    if isinstance(maps, (list, tuple)):
        if not maps or not all(isinstance(m, torch.Tensor) and m.ndim == 4 for m in maps):
            got = [tuple(m.shape) if isinstance(m, torch.Tensor) else type(m).__name__ for m in maps]
            raise ValueError(f"expected a non-empty list of L attention maps (B, heads, T, T), got {got}")
        if len({m.shape for m in maps}) != 1:
            raise ValueError(f"expected L maps of one shape (B, heads, T, T), got {[tuple(m.shape) for m in maps]}")
        maps = torch.stack(list(maps), dim=1)  # (B, L, heads, T, T)
    if not isinstance(maps, torch.Tensor) or maps.ndim != 5 or maps.shape[-1] != maps.shape[-2]:
        shape = tuple(maps.shape) if isinstance(maps, torch.Tensor) else type(maps).__name__
        raise ValueError(f"expected attention maps (B, L, heads, T, T) or a list of L (B, heads, T, T), got {shape}")
    if not maps.is_floating_point():
        raise ValueError(f"expected floating-point attention weights, got {maps.dtype}")
    return maps.float()


def _check_tokens(num_tokens: int, grid: tuple[int, int], num_prefix_tokens: int) -> None:
    if num_tokens != num_prefix_tokens + grid[0] * grid[1]:
        raise ValueError(
            f"attention over T={num_tokens} tokens does not match a {grid[0]}x{grid[1]} grid with "
            f"{num_prefix_tokens} prefix token(s) (expected T={num_prefix_tokens + grid[0] * grid[1]})"
        )


def attention_rollout(maps: torch.Tensor | Sequence[torch.Tensor], add_residual: bool = True) -> torch.Tensor:
    """Attention Rollout (Abnar & Zuidema, 2020), as the paper uses it (App. D.8). -> (B, T, T).

    maps: (B, L, heads, T, T) or a list of L tensors (B, heads, T, T), layer 1 first.

    Per layer: average over heads, add the identity for the residual connection, renormalise every row
    to sum to 1 (each row divided by its own sum):  A_l = (mean_heads(W_l) + I) / rowsum.  Then
    joint = A_L ... A_2 A_1 (layer 1 applied first). Row i of the result: how much token i's output
    draws on each input token. This is `compute_joint_attention` of Abnar & Zuidema's code
    (samiraabnar/attention_flow, "A + I, then row-normalise"), and the authors' recipe for the paper's
    figures (google-research/vision_transformer#18, #27: identity for the residual, heads averaged,
    layers multiplied). For softmax rows (sum 1) this equals (A + I) / 2; renormalising instead of
    halving also keeps rows stochastic for maps whose rows do not sum to 1 (e.g. after thresholding).
    `add_residual=False` multiplies the row-normalised head averages alone.
    """
    a = _stack_maps(maps)
    if (a < 0).any():
        raise ValueError("attention weights must be non-negative (softmax outputs), got negative entries")
    a = a.mean(dim=2)  # (B, L, T, T): heads averaged
    if add_residual:
        a = a + torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)  # (B, L, T, T)
    sums = a.sum(dim=-1, keepdim=True)  # (B, L, T, 1): keepdim, so each row is divided by its own sum
    if (sums <= 0).any():
        raise ValueError("a row of the head-averaged attention sums to 0 and cannot be renormalised")
    a = a / sums  # (B, L, T, T), rows sum to 1
    joint = a[:, 0]  # (B, T, T)
    for layer in range(1, a.shape[1]):
        joint = a[:, layer] @ joint  # (B, T, T)
    return joint


def class_token_map(
    attention: torch.Tensor, grid_size: int | tuple[int, int], num_prefix_tokens: int = 1
) -> torch.Tensor:
    """The [class] token's row over the patches, on the patch grid: (B, T, T) -> (B, h, w).

    For a rollout this is the map of Fig. 6 (before it is resized and drawn over the image). Entries are
    the raw weights (they sum to 1 minus the weight on the prefix tokens); scale them for display.
    """
    gh, gw = _grid(grid_size)
    if not isinstance(attention, torch.Tensor) or attention.ndim != 3 or attention.shape[-1] != attention.shape[-2]:
        shape = tuple(attention.shape) if isinstance(attention, torch.Tensor) else type(attention).__name__
        raise ValueError(f"expected an attention matrix (B, T, T), e.g. from attention_rollout, got {shape}")
    _check_tokens(attention.shape[-1], (gh, gw), num_prefix_tokens)
    return rearrange(attention[:, 0, num_prefix_tokens:], "b (h w) -> b h w", h=gh)  # (B, h, w)


def ratio_to_uniform(maps: torch.Tensor) -> torch.Tensor:
    """Each map over the patch grid divided by its mean: (B, h, w) -> (B, h, w), 1 = uniform attention.

    A patch at 2 gets twice the share of the map's mass that uniform attention (the same share for every
    patch) would give it, at 0.5 half. The mass on prefix tokens ([class]) does not count: only how the map
    spreads over the patches. For drawing rollout maps on a diverging scale centred at 1.
    """
    if not isinstance(maps, torch.Tensor) or maps.ndim != 3:
        shape = tuple(maps.shape) if isinstance(maps, torch.Tensor) else type(maps).__name__
        raise ValueError(f"expected maps over the patch grid (B, h, w), e.g. from class_token_map, got {shape}")
    if (maps < 0).any():
        raise ValueError("expected non-negative maps (attention weights), got negative entries")
    mean = maps.mean(dim=(1, 2), keepdim=True)  # (B, 1, 1)
    if (mean <= 0).any():
        raise ValueError("a map is zero everywhere: it has no share to compare with uniform attention")
    return maps / mean  # (B, h, w)


def _patch_centre_distances(grid: tuple[int, int], patch_size: float) -> torch.Tensor:
    """(N, N) Euclidean distances in pixels between patch centres ((i + 0.5) P, (j + 0.5) P), row-major."""
    gh, gw = grid
    ys, xs = torch.meshgrid(torch.arange(gh) + 0.5, torch.arange(gw) + 0.5, indexing="ij")  # (h, w) each
    centres = torch.stack([ys.flatten(), xs.flatten()], dim=-1).double() * patch_size  # (N, 2)
    diff = centres[:, None, :] - centres[None, :, :]  # (N, N, 2)
    return diff.pow(2).sum(-1).sqrt().float()  # (N, N)


def mean_attention_distance(
    maps: torch.Tensor | Sequence[torch.Tensor],
    grid_size: int | tuple[int, int],
    patch_size: float,
    num_prefix_tokens: int = 1,
    renormalize: bool = True,
    per_image: bool = False,
) -> torch.Tensor:
    """Mean attention distance in pixels per layer and head (Fig. 7 right, Fig. 11): -> (L, heads).

    maps: (B, L, heads, T, T) or a list of L tensors (B, heads, T, T); grid_size (h, w) of the patches
    (non-square allowed); patch_size P in pixels. For every query patch, the attention-weighted mean of the
    Euclidean distances from its centre to every key patch's centre ((i + 0.5) P, (j + 0.5) P), then the
    mean over query patches and images.

    The [class] token (the first `num_prefix_tokens` tokens) has no place on the image: its row and column
    are dropped. With `renormalize=True` (default) each query row is then divided by its mass on the patch
    keys, so the weights sum to 1 again and the result is a weighted *mean*, as in the paper's description
    ("weighted by the attention weight"). The authors' code does not: the code mjlm posted for Fig. 11 in
    google-research/vision_transformer#162 takes `attn[..., 1:, 1:]` and sums distances times weights, with
    the comment that the weights "sum to 1 because they are the output of a softmax", which holds only
    before the [class] column is dropped. Without renormalising, attention to [class] silently counts as
    distance 0, so a head that attends mostly to [class] looks local. `renormalize=False` reproduces the
    authors' code (sayakpaul/probing-vits slices the same way).

    `per_image=True` keeps the images apart: -> (B, L, heads), whose mean over B is the (L, heads) result; the
    spread over images gives each head a standard error.
    """
    gh, gw = _grid(grid_size)
    if not patch_size > 0:
        raise ValueError(f"patch_size must be positive (pixels per patch), got {patch_size!r}")
    a = _stack_maps(maps)
    _check_tokens(a.shape[-1], (gh, gw), num_prefix_tokens)
    a = a[..., num_prefix_tokens:, num_prefix_tokens:]  # (B, L, heads, N, N): [class] row and column dropped
    if renormalize:
        a = a / a.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(a.dtype).tiny)  # rows sum to 1 over patches
    dist = _patch_centre_distances((gh, gw), patch_size).to(a.device)  # (N, N)
    per_query = torch.einsum("blhqk,qk->blhq", a, dist)  # (B, L, heads, N)
    return per_query.mean(dim=3) if per_image else per_query.mean(dim=(0, 3))  # (B, L, heads) or (L, heads)


def uniform_attention_distance(grid_size: int | tuple[int, int], patch_size: float) -> float:
    """The mean attention distance of uniform attention in pixels: every query spreads its weight evenly over all
    h * w patches (itself included), so this is the mean distance between the centres of two patches drawn at
    random from the (h, w) grid of P-pixel patches. It scales with P; `mean_attention_distance / this` is a head's
    distance as a share of uniform attention (1 = uniform), comparable between patch sizes on one grid."""
    gh, gw = _grid(grid_size)
    if not patch_size > 0:
        raise ValueError(f"patch_size must be positive (pixels per patch), got {patch_size!r}")
    return _patch_centre_distances((gh, gw), 1.0).double().mean().item() * patch_size


def filter_principal_components(weight: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Principal components of patch-embedding filters (Fig. 7 left): (D, C, P, P) -> (k, C, P, P), (k,).

    Each of the D filters is one sample (a vector of C*P*P numbers); the mean filter is subtracted
    and the centred (D, C*P*P) matrix is decomposed with `torch.linalg.svd`. Returns the first k
    components (orthonormal, unit norm, ordered by explained variance; each one's sign is fixed so that
    its largest-magnitude entry is positive) and their explained-variance ratios (sorted, sum <= 1).
    """
    if not isinstance(weight, torch.Tensor) or weight.ndim != 4:
        shape = tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise ValueError(f"expected patch-embedding filters (D, C, P, P), e.g. patch_embed.proj.weight, got {shape}")
    d = weight.shape[0]
    x = weight.detach().float().reshape(d, -1)  # (D, C*P*P)
    if not isinstance(k, int) or not 1 <= k <= min(x.shape):
        raise ValueError(f"k must be an int in [1, min(D, C*P*P)] = [1, {min(x.shape)}], got {k!r}")
    x = x - x.mean(dim=0, keepdim=True)  # (D, C*P*P): centred over the D filters
    _, s, vh = torch.linalg.svd(x, full_matrices=False)  # s (r,), vh (r, C*P*P), r = min(D, C*P*P)
    variance = s.pow(2)  # (r,), sorted descending
    if variance.sum() <= 0:
        raise ValueError("all filters are equal: there is no variance to decompose")
    components = vh[:k]  # (k, C*P*P)
    peak = components.gather(1, components.abs().argmax(dim=1, keepdim=True))  # (k, 1)
    components = components * torch.where(peak < 0, -1.0, 1.0)  # (k, C*P*P), deterministic signs
    return components.reshape(k, *weight.shape[1:]), variance[:k] / variance.sum()  # (k, C, P, P), (k,)


def pos_embed_grid_summary(
    pos_embed: torch.Tensor, grid_size: int | tuple[int, int], num_prefix_tokens: int = 1, far: float = 4.0
) -> dict[str, float]:
    """Numbers for a position-embedding similarity map (Fig. 7 centre), over pairs of distinct patches.

    pos_embed: (1, num_prefix_tokens + h*w, D). From `minivit.pos_embed_similarity`, the mean cosine
    similarity
    - to the 4 grid neighbours ("neighbour") vs to patches at grid distance >= `far` ("far");
    - to patches in the same row or column ("same_row_col") vs all others ("other");
    - the Pearson correlation between similarity and Euclidean grid distance ("corr_distance"; negative
      when nearer patches are more similar);
    - between left-right mirror positions (r, c) and (r, w-1-c) ("mirror"), vs pairs in the same row at the
      same column distance that are not mirrors ("mirror_control": the mean at each distance, weighted as the
      mirror pairs at that distance; the corner distance w-1 has no such pair and is left out), and between
      top-bottom mirror positions (r, c) and (h-1-r, c) ("mirror_vertical": the same distances on a square
      grid, and the same border/centre roles). A left-right symmetry shows as mirror > mirror_control and
      mirror > mirror_vertical. What makes it is an open question: random horizontal flips are one hypothesis,
      which 08_inspecting_vit.ipynb's exercise 4 tests by retraining without them.
      "mirror_control" is NaN on grids less than 4 patches wide, which have no such pair.
    """
    gh, gw = _grid(grid_size)
    n = gh * gw
    sim = pos_embed_similarity(pos_embed, (gh, gw), num_prefix_tokens).reshape(n, n)  # (N, N)
    rows, cols = torch.arange(n) // gw, torch.arange(n) % gw  # (N,) each
    dist = ((rows[:, None] - rows[None]) ** 2 + (cols[:, None] - cols[None]) ** 2).float().sqrt()  # (N, N)
    distinct = ~torch.eye(n, dtype=torch.bool)  # (N, N)
    same_row, same_col = rows[:, None] == rows[None], cols[:, None] == cols[None]  # (N, N) each
    line = (same_row | same_col) & distinct  # (N, N)
    groups = {"neighbour": dist == 1, "far": dist >= far, "same_row_col": line, "other": distinct & ~line}
    empty = [name for name, m in groups.items() if not m.any()]
    if empty:
        raise ValueError(f"a {gh}x{gw} grid has no pairs for {empty} (far={far}); use a larger grid or a smaller far")
    summary = {name: sim[m].mean().item() for name, m in groups.items()}
    summary["corr_distance"] = torch.corrcoef(torch.stack([sim[distinct], dist[distinct]]))[0, 1].item()
    mirror = same_row & (cols[:, None] + cols[None] == gw - 1) & distinct  # (N, N): (r, c) ~ (r, w-1-c)
    vertical = same_col & (rows[:, None] + rows[None] == gh - 1) & distinct  # (N, N): (r, c) ~ (h-1-r, c)
    col_dist = (cols[:, None] - cols[None]).abs()  # (N, N)
    controls, weights = [], []
    for d in col_dist[mirror].unique().tolist():
        control = same_row & ~mirror & distinct & (col_dist == d)  # same row, same distance, not mirrored
        if control.any():
            controls.append(sim[control].mean())
            weights.append((mirror & (col_dist == d)).sum())
    summary["mirror"] = sim[mirror].mean().item()  # not empty: a grid with "other" pairs is >= 2 wide and high
    summary["mirror_control"] = ((torch.stack(controls) * torch.stack(weights)).sum() / torch.stack(weights).sum()
                                 ).item() if controls else float("nan")
    summary["mirror_vertical"] = sim[vertical].mean().item()
    return summary


@torch.no_grad()
def record_attention(
    model: nn.Module,
    images: torch.Tensor,
    batch_size: int = 64,
    preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None,
    max_bytes: int = 2**30,
) -> torch.Tensor:
    """`model.attention_maps` over many images, in batches: (B, C, H, W) -> (B, L, heads, T, T) float32 on the CPU.

    Runs in eval mode without gradients (the model's mode is restored afterwards); each batch is moved to
    the model's device, passed through `preprocess` if given (e.g. `lambda x: normalize(x, "cifar10")` for
    uint8 images), and its maps are copied back to the CPU. Raises a ValueError before filling more than
    `max_bytes` of CPU memory (default 1 GiB): record fewer images, or reduce each batch yourself.
    """
    if not hasattr(model, "attention_maps"):
        raise ValueError(f"expected a model with attention_maps(images) (a minivit.ViT), got {type(model).__name__}")
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or len(images) == 0:
        shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"expected a non-empty batch of images (B, C, H, W), got {shape}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = None
    try:
        for start in range(0, len(images), batch_size):
            x = images[start : start + batch_size].to(device)
            maps = torch.stack(model.attention_maps(preprocess(x) if preprocess else x), dim=1)  # (b, L, heads, T, T)
            if out is None:
                shape = (len(images), *maps.shape[1:])
                need = 4 * torch.Size(shape).numel()
                if need > max_bytes:
                    raise ValueError(
                        f"recording {shape} float32 attention maps needs {need / 2**20:.0f} MiB, more than "
                        f"max_bytes={max_bytes / 2**20:.0f} MiB; pass fewer images or raise max_bytes"
                    )
                out = torch.empty(shape, dtype=torch.float32)  # (B, L, heads, T, T)
            out[start : start + len(x)] = maps.float().cpu()
    finally:
        model.train(was_training)
    return out


__all__ = [
    "attention_rollout",
    "class_token_map",
    "mean_attention_distance",
    "filter_principal_components",
    "pos_embed_grid_summary",
    "ratio_to_uniform",
    "record_attention",
    "uniform_attention_distance",
]
