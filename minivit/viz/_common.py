"""Shared drawing helpers of `minivit.viz` (figures only draw what they are given)."""

from __future__ import annotations


def _figure(ncols: int, width: float = 4.0, height: float = 3.2):
    import matplotlib.pyplot as plt  # a pyplot figure: Jupyter's inline backend shows it at the end of the cell
    fig, axes = plt.subplots(1, ncols, squeeze=False, figsize=(width * ncols, height), layout="constrained")
    return fig, axes[0]


def _as_numpy(x):
    """A tensor or array as a NumPy array on the CPU (for drawing only)."""
    import numpy as np
    return x.detach().float().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _draw_tiles(ax, tiles, ncols: int, gap: float, cmap=None):
    """Draw `tiles` (n, h, w[, c]) row by row on one axes, `ncols` per row, `gap` pixels apart."""
    n, th, tw = tiles.shape[:3]
    nrows = -(-n // ncols)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, ncols)
        x0, y0 = c * (tw + gap), r * (th + gap)
        ax.imshow(tile, extent=(x0, x0 + tw, y0 + th, y0), cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xlim(-gap, ncols * (tw + gap))
    ax.set_ylim(nrows * (th + gap), -gap)
    ax.set_aspect("equal")
    ax.axis("off")


def _finish_rows(ax, ys, labels, xlabel: str, title: str | None, legend_loc: str):
    """One labelled row per item on the y axis, a vertical grid, the legend and the title (row-chart figures)."""
    ax.set_yticks(ys, labels)
    ax.set(xlabel=xlabel)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc=legend_loc)
    if title:
        ax.set_title(title)


def _label_map_grid(axes, row_labels, rows: int):
    """No ticks on a grid of maps; the first column names its rows: "image", then one label per row of maps."""
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0, 0].set_ylabel("image", fontsize=8)
    for r in range(rows):
        axes[r + 1, 0].set_ylabel(row_labels[r] if row_labels is not None else f"maps {r}", fontsize=8)
