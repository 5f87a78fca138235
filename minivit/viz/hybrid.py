"""Hybrid-model figures: a CNN stem's feature maps becoming tokens, and accuracy against compute by family.

Introduced in 06_hybrid.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure
from .scaling import _log_ticks


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
    our accuracies (e.g. "validation accuracy (%)": pass percentages to share the paper's unit). The paper's
    points are different models, so they are drawn as markers only; ours are one run each, joined by a line."""
    import numpy as np
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
                ax.plot(x, acc, "s", color=colours[label], label=label, markersize=6)  # models, not a curve
            else:
                flops, seconds, acc = series[("ours", label)]
                ax.plot(flops if kind == "flops" else seconds, acc, "o-", color=colours[label], label=label,
                        markersize=4)
        xlabel = {"paper": "pre-training compute (exaFLOPs)", "flops": "training compute (FLOPs, forward + backward)",
                  "seconds": "training wall time (s)"}[kind]
        ax.set(xscale="log", xlabel=xlabel,
               ylabel="ImageNet top-1 after fine-tuning (%)" if kind == "paper" else ylabel)
        _log_ticks(ax, plain=kind != "flops")  # a short log range still gets several labels
        ax.set_title("paper (Table 6)" if kind == "paper" else "ours", fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def plot_feature_map_rows(rows: dict, title: str | None = None, cmap: str = "magma"):
    """Rows of an image and maps computed from it -> one Figure, each map scaled to its maximum, one colour bar.

    `rows`: {row label: (image (C, H, W) uint8 or float in [0, 1], {map label: (h, w) array})}, every row with
    the same number of maps, e.g. the mean absolute activation of each stage of a trained CNN stem for a few
    images, and a reference row from the same stem untrained. Each map is divided by its own maximum, so all
    share one colour scale [0, 1] (where a stage responds most, not how much: raw values of different stages
    and models are not comparable); the last map of a row, whose cells become the tokens, is drawn with lines
    between its cells. Used in 06_hybrid.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    if not rows:
        raise ValueError("expected at least one row: {label: (image, {map label: (h, w) map})}")
    parsed = []
    for label, row in rows.items():
        if len(row) != 2 or not isinstance(row[1], dict) or not row[1]:
            raise ValueError(f"row {label!r} must be (image, {{map label: (h, w) map}}) with at least one map")
        img = _as_numpy(row[0])
        if img.ndim != 3 or img.shape[0] not in (1, 3):
            raise ValueError(f"row {label!r}: expected an image (C, H, W) with C = 1 or 3, got shape {img.shape}")
        maps = {k: _as_numpy(m).astype(float) for k, m in row[1].items()}
        if any(m.ndim != 2 for m in maps.values()):
            raise ValueError(f"row {label!r}: expected 2-D maps (h, w), got {[m.shape for m in maps.values()]}")
        parsed.append((label, img.astype(float) / 255 if img.max() > 1 else img.astype(float), maps))
    ncols = 1 + len(parsed[0][2])
    if any(1 + len(maps) != ncols for _, _, maps in parsed):
        raise ValueError("expected the same number of maps in every row")
    fig, axes = plt.subplots(len(parsed), ncols, squeeze=False, figsize=(2.3 * ncols + 0.8, 2.3 * len(parsed)),
                             layout="constrained")
    for r, (label, img, maps) in enumerate(parsed):
        axes[r, 0].imshow(np.clip(img.transpose(1, 2, 0), 0, 1), cmap="gray" if img.shape[0] == 1 else None)
        axes[r, 0].set_ylabel(label, fontsize=9)
        if r == 0:
            axes[r, 0].set_title(f"image {img.shape[1]} x {img.shape[2]}", fontsize=9)
        for c, (name, m) in enumerate(maps.items(), start=1):
            im = axes[r, c].imshow(m / max(m.max(), 1e-12), cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
            if r == 0:
                axes[r, c].set_title(name, fontsize=8)
            if c == ncols - 1:  # the token grid: one cell, one token
                h, w = m.shape
                for y in range(1, h):
                    axes[r, c].axhline(y - 0.5, color="white", lw=0.5)
                for x in range(1, w):
                    axes[r, c].axvline(x - 0.5, color="white", lw=0.5)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=list(axes.flat), shrink=0.6, label="mean |activation| / its maximum in the map")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


__all__ = ["plot_compute_by_family", "plot_feature_map_rows", "plot_feature_maps"]
