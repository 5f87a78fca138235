"""Figures for inspecting a trained ViT: mean attention distance by head and depth (Fig. 7 right, Fig. 11).

Introduced in 08_inspecting_vit.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy


def plot_attention_distance(distances: dict, reference: float | None = None, max_distance: float | None = None,
                            title: str | None = None):
    """Mean attention distance per head against depth, as the paper's Fig. 7 (right) / Fig. 11 -> Figure.

    `distances`: {label: (L, heads)} in pixels, e.g. from `minivit.inspection.mean_attention_distance`,
    one entry per model (say "initialisation" and "trained"); all must have the same L. Each dot is one
    head at one layer (layers numbered from 0 on the x axis), one colour per entry, the entries side by
    side within a layer; a short bar marks each layer's mean over heads. All entries share one y axis
    from 0 to `max_distance` (default: 5% above the largest value), so they can be compared.
    `reference`: a distance to draw as a dashed line, e.g. that of uniform attention.
    Used in 08_inspecting_vit.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    arrays = {str(k): _as_numpy(v).astype(float) for k, v in distances.items()}
    if not arrays or any(a.ndim != 2 for a in arrays.values()):
        raise ValueError(f"expected {{label: (L, heads)}} distances, got shapes {[a.shape for a in arrays.values()]}")
    depths = {a.shape[0] for a in arrays.values()}
    if len(depths) != 1:
        raise ValueError(f"expected the same number of layers L in every entry, got {sorted(depths)}")
    depth = depths.pop()
    top = max(float(a.max()) for a in arrays.values())
    top = max(top, reference or 0.0) * 1.05 if max_distance is None else max_distance
    fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * depth + 2.0), 3.6), layout="constrained")
    width = 0.7 / len(arrays)
    for k, (label, a) in enumerate(arrays.items()):
        x0 = np.arange(depth) - 0.35 + width * (k + 0.5)  # (L,): this entry's place within each layer
        color = f"C{k}"
        heads = a.shape[1]
        jitter = (np.arange(heads) - (heads - 1) / 2) * (0.5 * width / max(heads, 1))  # (heads,)
        ax.scatter((x0[:, None] + jitter[None]).ravel(), a.ravel(), s=18, color=color, alpha=0.8, label=label,
                   zorder=3)
        ax.hlines(a.mean(axis=1), x0 - 0.4 * width, x0 + 0.4 * width, color=color, lw=2, zorder=2)
    if reference is not None:
        ax.axhline(reference, ls="--", color="0.4", lw=1, label=f"uniform attention ({reference:.0f} px)")
    ax.set_xticks(range(depth), [str(i) for i in range(depth)])
    ax.set(xlabel="layer (0 = first)", ylabel="mean attention distance (pixels)", ylim=(0, top),
           xlim=(-0.6, depth - 0.4), title=title or "size of the attended area by head and depth")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


__all__ = ["plot_attention_distance"]
