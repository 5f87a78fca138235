"""Attention figures: weight matrices, and attention maps drawn over the images.

Introduced in 03_transformer_encoder.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _label_map_grid


def plot_attention_matrix(weights, token_labels=None, head_titles=None, ncols: int = 4, title: str | None = None):
    """Attention weights A (Appendix A, Eq. 6) of one sequence, (N, N) or (heads, N, N) -> Figure with one
    axes per head (plus a colour bar). Row i is query token i's weights over the key tokens j (columns),
    so each row sums to 1. `token_labels`: optional N tick labels (e.g. ["cls", "1", "2", ...]), drawn
    when N <= 20; `head_titles`: optional title per head. Used in 03_transformer_encoder.ipynb."""
    import matplotlib.pyplot as plt
    a = _as_numpy(weights)
    a = a[None] if a.ndim == 2 else a
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise ValueError(f"expected attention weights (N, N) or (heads, N, N), got shape {a.shape}")
    h, n = a.shape[0], a.shape[1]
    if token_labels is not None and len(token_labels) != n:
        raise ValueError(f"expected {n} token_labels, one per token, got {len(token_labels)}")
    if head_titles is not None and len(head_titles) != h:
        raise ValueError(f"expected {h} head_titles, one per head, got {len(head_titles)}")
    ncols = max(1, min(ncols, h))
    nrows = -(-h // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(3.3 * ncols + 1.0, 3.3 * nrows + 0.5),
                             layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.axis("off")
            continue
        im = ax.imshow(a[i], cmap="viridis", vmin=0.0, vmax=float(a.max()), interpolation="nearest")
        label = head_titles[i] if head_titles is not None else (f"head {i + 1}" if h > 1 else "A")
        ax.set(title=label, xlabel="key token j", ylabel="query token i")
        if token_labels is not None and n <= 20:
            ax.set_xticks(range(n), [str(t) for t in token_labels], rotation=90, fontsize=7)
            ax.set_yticks(range(n), [str(t) for t in token_labels], fontsize=7)
    fig.colorbar(im, ax=axes, label="attention weight A_ij", shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_attention_on_images(images, maps, titles=None, row_labels=None, alpha: float = 0.65,
                             vmax: float | None = None, title: str | None = None):
    """Attention maps drawn over the images they were computed for -> Figure.

    `images`: (B, C, H, W), uint8 in [0, 255] or float in [0, 1], C = 1 or 3. `maps`: (B, h, w) or
    (R, B, h, w) -- R rows of maps for the same B images, e.g. the [class] token's attention over the
    patch grid at initialisation and after training. The first row shows the images; row r + 1 shows
    each image in grey with `maps[r]` on top, each patch one flat block. All maps share one colour
    scale [0, vmax] (default: the largest value) and one colour bar. `titles`: B column titles (e.g.
    class names); `row_labels`: R labels. Used in 03_transformer_encoder.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    floating = images.is_floating_point() if hasattr(images, "is_floating_point") else np.asarray(images).dtype.kind == "f"
    x = _as_numpy(images)
    m = _as_numpy(maps)
    m = m[None] if m.ndim == 3 else m
    if x.ndim != 4 or x.shape[1] not in (1, 3) or m.ndim != 4 or m.shape[1] != len(x):
        raise ValueError(f"expected images (B, C, H, W) with C = 1 or 3 and maps (B, h, w) or (R, B, h, w) for the "
                         f"same B images, got shapes {x.shape} and {_as_numpy(maps).shape}")
    if titles is not None and len(titles) != len(x):
        raise ValueError(f"expected {len(x)} titles, one per image, got {len(titles)}")
    if row_labels is not None and len(row_labels) != len(m):
        raise ValueError(f"expected {len(m)} row_labels, one per row of maps, got {len(row_labels)}")
    x = x / 255.0 if not floating else x
    rgb = x.transpose(0, 2, 3, 1)  # (B, H, W, C)
    grey = rgb.mean(axis=-1)  # (B, H, W)
    h, w = rgb.shape[1:3]
    vmax = float(m.max()) if vmax is None else vmax
    b, rows = len(x), len(m) + 1
    fig, axes = plt.subplots(rows, b, squeeze=False, figsize=(1.45 * b + 1.0, 1.5 * rows + 0.4), layout="constrained")
    for j in range(b):
        axes[0, j].imshow(rgb[j, ..., 0] if rgb.shape[-1] == 1 else rgb[j], cmap="gray", vmin=0, vmax=1)
        if titles is not None:
            axes[0, j].set_title(str(titles[j]), fontsize=8)
        for r in range(len(m)):
            ax = axes[r + 1, j]
            ax.imshow(grey[j], cmap="gray", vmin=0, vmax=1)
            im = ax.imshow(m[r, j], cmap="inferno", vmin=0.0, vmax=vmax, alpha=alpha, interpolation="nearest",
                           extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    _label_map_grid(axes, row_labels, len(m))
    fig.colorbar(im, ax=axes[1:].ravel().tolist(), shrink=0.8, label="attention weight")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
