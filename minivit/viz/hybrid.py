"""Hybrid-model figures: a CNN stem's feature maps becoming tokens, and accuracy against compute by family.

Introduced in 06_hybrid.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure


def plot_feature_maps(image, maps: dict, title: str | None = None, cmap: str = "magma"):
    """An image and 2-D maps computed from it, side by side, the last map with its cell grid -> Figure.

    `image`: (C, H, W) uint8 or float in [0, 1] (grey if C = 1). `maps`: {label: (h, w) array}, e.g. the
    mean absolute activation of every stage of a CNN stem; each map has its own colour scale (the stages'
    values are not comparable), and the last one, whose cells become the tokens, is drawn with lines
    between its cells. Rows and columns are numbered from 0. Used in 06_hybrid.ipynb."""
    import numpy as np
    img = _as_numpy(image)
    if img.ndim != 3 or img.shape[0] not in (1, 3):
        raise ValueError(f"expected an image (C, H, W) with C = 1 or 3, got shape {img.shape}")
    arrays = {label: _as_numpy(m) for label, m in maps.items()}
    if not arrays or any(a.ndim != 2 for a in arrays.values()):
        raise ValueError(f"expected a non-empty dict of 2-D maps (h, w), got {[a.shape for a in arrays.values()]}")
    img = img.astype(float) / 255 if img.max() > 1 else img.astype(float)
    fig, axes = _figure(1 + len(arrays), width=2.6, height=2.7)
    axes[0].imshow(np.clip(img.transpose(1, 2, 0), 0, 1), cmap="gray" if img.shape[0] == 1 else None)
    axes[0].set_title(f"image {img.shape[1]} x {img.shape[2]}", fontsize=9)
    for k, (ax, (label, a)) in enumerate(zip(axes[1:], arrays.items())):
        ax.imshow(a, cmap=cmap, interpolation="nearest")
        ax.set_title(label, fontsize=9)
        if k == len(arrays) - 1:  # the token grid: one cell, one token
            h, w = a.shape
            for y in range(1, h):
                ax.axhline(y - 0.5, color="white", lw=0.6)
            for x in range(1, w):
                ax.axvline(x - 0.5, color="white", lw=0.6)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_compute_by_family(ours: dict, paper: dict | None = None, title: str | None = None,
                           ylabel: str = "accuracy"):
    """Accuracy against compute for model families (pure ViT, hybrid, CNN), the paper's beside ours -> Figure.

    `ours`: {label: (FLOPs, seconds, accuracies)}, sequences of equal length (e.g. the values after every
    epoch), drawn as one line per label against training FLOPs and against wall time (log x).
    `paper`: {label: (exaFLOPs, accuracies)}, drawn first in its own panel (the paper's Table 6 / Fig. 5).
    A label keeps one colour in every panel, so "ViT" in the paper's panel and in ours match; `ylabel` names
    our accuracies (e.g. "validation accuracy")."""
    import numpy as np
    from matplotlib.ticker import NullFormatter
    panels = [] if paper is None else [("paper", paper)]
    panels += [("flops", ours), ("seconds", ours)]
    series = {}
    for name, runs in (("ours", ours), ("paper", paper or {})):
        for label, v in runs.items():
            want = 3 if name == "ours" else 2
            if len(v) != want:
                raise ValueError(f"{name} run {label!r} must be a tuple of {want} sequences")
            arrays = [np.atleast_1d(np.asarray(x, dtype=float)) for x in v]
            if len({len(a) for a in arrays}) != 1:
                raise ValueError(f"{name} run {label!r}: its sequences differ in length")
            series[(name, label)] = arrays
    if not ours:
        raise ValueError("expected at least one run of ours: {label: (flops, seconds, accuracies)}")
    colours = {label: f"C{k}" for k, label in enumerate(dict.fromkeys([*(paper or {}), *ours]))}
    fig, axes = _figure(len(panels), width=4.3, height=3.5)
    for ax, (kind, runs) in zip(axes, panels):
        for label in runs:
            if kind == "paper":
                x, acc = series[("paper", label)]
                ax.plot(x, acc, "s-", color=colours[label], label=label, markersize=5)
            else:
                flops, seconds, acc = series[("ours", label)]
                ax.plot(flops if kind == "flops" else seconds, acc, "o-", color=colours[label], label=label,
                        markersize=4)
        xlabel = {"paper": "pre-training compute (exaFLOPs)", "flops": "training compute (FLOPs, forward + backward)",
                  "seconds": "training wall time (s)"}[kind]
        ax.set(xscale="log", xlabel=xlabel,
               ylabel="ImageNet top-1 after fine-tuning (%)" if kind == "paper" else ylabel)
        ax.xaxis.set_minor_formatter(NullFormatter())  # decades only: minor labels overlap on short ranges
        ax.set_title("paper (Table 6)" if kind == "paper" else "ours", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


__all__ = ["plot_compute_by_family", "plot_feature_maps"]
