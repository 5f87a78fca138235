"""Patch figures: the patch grid, the patch sequence, sequence length vs patch size, embedding filters.

Introduced in 01_patches.ipynb.
"""

from __future__ import annotations

from ._common import _figure, _as_numpy, _draw_tiles


def plot_patch_grid(patches, grid_size: tuple[int, int], gap: float = 2.0, title: str | None = None,
                    width: float = 5.0):
    """Patches (N, P, P, C) or (N, P, P) with values in [0, 1], in row-major order, drawn on their
    (H/P, W/P) grid with `gap` pixels between them, `width` inches wide -> Figure with 1 axes.
    Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    p = _as_numpy(patches)
    gh, gw = grid_size
    if p.ndim not in (3, 4) or p.shape[0] != gh * gw:
        raise ValueError(f"expected patches (N, P, P[, C]) with N = {gh}*{gw} = {gh * gw}, got shape {p.shape}")
    fig, ax = plt.subplots(figsize=(width, width * gh / gw), layout="constrained")
    _draw_tiles(ax, p, gw, gap, cmap="gray" if p.ndim == 3 else None)
    ax.set_title(title or f"{gh} x {gw} = {gh * gw} patches of {p.shape[1]} x {p.shape[2]} pixels")
    return fig


def plot_patch_sequence(sequence, patch_size: int, num_show: int = 16, title: str | None = None):
    """The flattened patch sequence x_p (N, P*P*C) of Eq. 1, values in [0, 1], flattened in (p1 p2 c)
    order -> Figure with 2 axes (and a colour bar): the first `num_show` patches as a strip (each row
    shown as its P x P x C patch) and the whole (N, P*P*C) matrix as an image. Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    x = _as_numpy(sequence)
    if x.ndim != 2 or x.shape[1] % (patch_size * patch_size):
        raise ValueError(f"expected a sequence (N, P*P*C) with P={patch_size}, got shape {x.shape}")
    n, d = x.shape
    c = d // (patch_size * patch_size)
    k = min(num_show, n)
    strip = x[:k].reshape(k, patch_size, patch_size, c)
    strip = strip[..., 0] if c == 1 else strip
    fig, (ax_strip, ax_seq) = plt.subplots(2, 1, figsize=(9, 6.5), height_ratios=(1, 5), layout="constrained")
    _draw_tiles(ax_strip, strip, k, gap=patch_size / 8, cmap="gray" if c == 1 else None)
    ax_strip.set_title(f"the first {k} of N = {n} patches, in order x_p^1, x_p^2, ...")
    im = ax_seq.imshow(x, aspect="auto", cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax_seq.set(xlabel=f"position in the flattened patch, (p1 p2 c) order: P·P·C = {d} values",
               ylabel=f"patch index n (N = {n})")
    fig.colorbar(im, ax=ax_seq, label="pixel value", shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_patch_size_cost(patch_sizes, num_tokens, attention_cost, flops=None, image_size: int | None = None):
    """How sequence length and cost grow as the patch size P shrinks -> Figure with 2 axes.

    `num_tokens`: N per patch size; `attention_cost`: relative attention cost (e.g. N^2 / N_16^2);
    `flops`: optional relative forward FLOPs of one model per patch size. Log-log axes, so a power
    law N ∝ P^-2 is a straight line. Used in 01_patches.ipynb."""
    from matplotlib.ticker import NullFormatter
    ps, n, att = (list(map(float, _as_numpy(v).ravel())) for v in (patch_sizes, num_tokens, attention_cost))
    if not len(ps) == len(n) == len(att) or (flops is not None and len(flops) != len(ps)):
        raise ValueError("expected patch_sizes, num_tokens, attention_cost (and flops) of the same length")
    fig, (ax_n, ax_c) = _figure(2, width=4.5, height=3.4)
    size = f" at {image_size} px" if image_size else ""
    ax_n.plot(ps, n, "o-")
    ax_n.set(xlabel="patch size P", ylabel="tokens N = HW / P²", yscale="log", title=f"sequence length{size}")
    ax_n.set_yticks(n, [f"{v:g}" for v in n])
    ax_n.yaxis.set_minor_formatter(NullFormatter())
    ax_c.plot(ps, att, "o-", label="attention pairs ∝ (N+1)²")
    if flops is not None:
        ax_c.plot(ps, list(map(float, flops)), "s--", label="whole forward pass (FLOPs)")
    # without `flops` the panel shows attention's pairs only, not the model's compute: its title says which
    what = "compute" if flops is not None else "attention pairs"
    ax_c.set(xlabel="patch size P", ylabel="relative to P = 16", yscale="log", title=f"{what}{size}")
    ax_c.legend()
    for ax in (ax_n, ax_c):
        ax.set_xscale("log")
        ax.set_xticks(ps, [f"{p:g}" for p in ps])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.invert_xaxis()
        ax.grid(alpha=0.3, which="both")
    return fig


def plot_patch_filters(weight, ncols: int = 8, title: str | None = None):
    """Patch-embedding filters, a Conv2d weight (D, C, P, P) (or a slice of its D filters) -> Figure
    with 1 axes: each filter min-max scaled to [0, 1] on its own, as an RGB (or grey) tile.
    The paper's Fig. 7 (left) shows trained ones. Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    w = _as_numpy(weight)
    if w.ndim != 4 or w.shape[1] not in (1, 3):
        raise ValueError(f"expected a Conv2d weight (D, C, P, P) with C = 1 or 3, got shape {w.shape}")
    lo = w.min(axis=(1, 2, 3), keepdims=True)
    span = w.max(axis=(1, 2, 3), keepdims=True) - lo
    tiles = ((w - lo) / (span + (span == 0))).transpose(0, 2, 3, 1)  # (D, P, P, C) for imshow
    tiles = tiles[..., 0] if tiles.shape[-1] == 1 else tiles
    ncols = min(ncols, len(tiles))
    nrows = -(-len(tiles) // ncols)
    fig, ax = plt.subplots(figsize=(0.8 * ncols + 0.4, 0.8 * nrows + 0.6), layout="constrained")
    _draw_tiles(ax, tiles, ncols, gap=w.shape[-1] / 8, cmap="gray" if tiles.ndim == 3 else None)
    ax.set_title(title or f"{len(tiles)} filters of {w.shape[-2]} x {w.shape[-1]} x {w.shape[1]}")
    return fig
