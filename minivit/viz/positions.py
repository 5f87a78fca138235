"""Position-embedding figures: similarity maps (Fig. 7 centre) and maps laid out on the patch grid.

Introduced in 02_class_token_and_positions.ipynb.
"""

from __future__ import annotations

from ._common import _figure, _as_numpy


def plot_pos_embed_similarity(similarity, title: str | None = None, vmin: float | None = -1.0,
                              vmax: float | None = 1.0, mask_self: bool = False):
    """Position-embedding similarity as the paper's Fig. 7 (centre) -> Figure.

    `similarity` (rows, cols, rows, cols), e.g. from `minivit.pos_embed_similarity`: tile (i, j) of
    the rows x cols grid of tiles is the map `similarity[i, j]`, the cosine similarity of patch
    (i, j)'s embedding with every patch's. Rows and columns are numbered from 0. One shared colour
    scale [vmin, vmax] (the paper's -1..1 by default; None: the data's min / max) and a colour bar.
    `mask_self`: leave each patch's similarity with itself (always 1) blank, so the scale shows how
    similar a patch is to the *other* patches; to compare several figures, give them all the same
    vmin and vmax. Used in 02_class_token_and_positions.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    s = _as_numpy(similarity).astype(float)
    if s.ndim != 4 or s.shape[:2] != s.shape[2:]:
        raise ValueError(f"expected a similarity of shape (rows, cols, rows, cols), got {s.shape}")
    rows, cols = s.shape[:2]
    if mask_self:
        s = s.copy()
        s[np.arange(rows)[:, None], np.arange(cols)[None], np.arange(rows)[:, None], np.arange(cols)[None]] = np.nan
    vmin = float(np.nanmin(s)) if vmin is None else vmin
    vmax = float(np.nanmax(s)) if vmax is None else vmax
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    side = min(6.0, 0.55 * max(rows, cols) + 1.0)
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(side * cols / max(rows, cols) + 0.9, side),
                             gridspec_kw={"wspace": 0.06, "hspace": 0.06})
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            im = ax.imshow(s[i, j], cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(str(i), rotation=0, ha="right", va="center", fontsize=7)
            if i == rows - 1:
                ax.set_xlabel(str(j), fontsize=7)
    fig.supxlabel("input patch column", fontsize=9)
    fig.supylabel("input patch row", fontsize=9)
    label = "cosine similarity" + (" (self: blank)" if mask_self else "")
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label=label)
    fig.suptitle(title or f"position-embedding similarity, {rows} x {cols} grid", fontsize=10)
    return fig


def plot_grid_maps(maps, titles=None, cmap: str = "viridis", suptitle: str | None = None, colorbar: bool = True,
                   vmin: float | None = None, vmax: float | None = None, shared_scale: bool = True):
    """Side-by-side heat maps of 2-D arrays (each (h, w), sizes may differ), e.g. one channel of a position
    embedding laid out on its patch grid before and after `minivit.resize_pos_embed` -> Figure with
    len(maps) axes, each with a colour bar. With `shared_scale` (default) every map uses one colour scale,
    [vmin, vmax] or else the min / max over all maps, so the maps can be compared; otherwise each map has its
    own. Rows and columns are numbered from 0, with whole-number ticks. Used in 02_class_token_and_positions.ipynb
    and 07_finetuning_at_higher_resolution.ipynb."""
    from matplotlib.ticker import MaxNLocator
    arrays = [_as_numpy(m) for m in maps]
    if not arrays or any(a.ndim != 2 for a in arrays):
        raise ValueError(f"expected a non-empty list of 2-D maps (h, w), got shapes {[a.shape for a in arrays]}")
    if titles is not None and len(titles) != len(arrays):
        raise ValueError(f"got {len(titles)} titles for {len(arrays)} maps")
    if shared_scale:
        vmin = min(float(a.min()) for a in arrays) if vmin is None else vmin
        vmax = max(float(a.max()) for a in arrays) if vmax is None else vmax
    fig, axes = _figure(len(arrays), width=3.4, height=3.0)
    for k, (ax, a) in enumerate(zip(axes, arrays)):
        im = ax.imshow(a, cmap=cmap, interpolation="nearest", vmin=vmin, vmax=vmax)
        ax.set(xlabel="patch column", ylabel="patch row", title=titles[k] if titles else f"{a.shape[0]} x {a.shape[1]}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # patches are whole: no tick at 2.5
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if colorbar:
            fig.colorbar(im, ax=ax, shrink=0.85)
    if suptitle:
        fig.suptitle(suptitle)
    return fig
