"""Figures for fine-tuning at a higher resolution: images at two sizes, where a new grid reads the old position
embeddings, and per-seed gains of fine-tuning runs.

Introduced in 07_finetuning_at_higher_resolution.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure, _finish_rows


def plot_image_rows(rows: dict, titles=None, outline: dict | None = None, suptitle: str | None = None):
    """Rows of images, one row per entry of `rows` -> Figure. `rows`: {row label: uint8 or [0, 1] float images
    (n, C, H, W)}, every row with the same n (the images of a column show the same thing, e.g. at 128 and at
    64 px; each is drawn at the same size, so a smaller image looks coarser). `titles`: n column titles.
    `outline`: {row label: (top, left, height, width)} as fractions of the image, a box drawn on every image of
    that row (e.g. the labelled tile of a mosaic)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if not rows:
        raise ValueError("expected at least one row: {label: images (n, C, H, W)}")
    arrays = {k: _as_numpy(v) for k, v in rows.items()}
    n = {len(a) for a in arrays.values()}
    if len(n) != 1 or any(a.ndim != 4 or a.shape[1] not in (1, 3) for a in arrays.values()):
        raise ValueError(f"expected rows of images (n, C, H, W) with C = 1 or 3 and the same n, got "
                         f"{ {k: a.shape for k, a in arrays.items()} }")
    n = n.pop()
    if titles is not None and len(titles) != n:
        raise ValueError(f"got {len(titles)} titles for {n} columns")
    unknown = set(outline or ()) - set(rows)
    if unknown:
        raise ValueError(f"outline names rows {sorted(unknown)} that are not in rows {list(rows)}")
    fig, axes = plt.subplots(len(arrays), n, squeeze=False, figsize=(1.2 * n + 0.6, 1.3 * len(arrays) + 0.3),
                             layout="constrained")
    for r, (label, a) in enumerate(arrays.items()):
        a = a / 255.0 if a.max() > 1.0 else a
        for c in range(n):
            ax = axes[r, c]
            img = a[c].transpose(1, 2, 0)
            ax.imshow(img[..., 0] if img.shape[-1] == 1 else img, cmap="gray", vmin=0.0, vmax=1.0)
            ax.set_xticks([])
            ax.set_yticks([])
            if (outline or {}).get(label) is not None:
                top, left, height, width = outline[label]
                h, w = img.shape[:2]
                ax.add_patch(Rectangle((left * w - 0.5, top * h - 0.5), width * w, height * h, fill=False,
                                       edgecolor="red", linewidth=1.5))
            if r == 0 and titles is not None:
                ax.set_title(str(titles[c]), fontsize=8)
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    return fig


def plot_position_mapping(mappings: dict, old_n: int, title: str | None = None):
    """Where each patch of a new grid reads the old position embeddings, along one axis -> Figure with one axes
    per mapping. `mappings`: {label: (n_new,) coordinates in old-patch units (old patch k's centre is k)}, e.g.
    the centres-aligned and the corners-aligned conventions. Drawn across the image's width (0 to 1): the old
    patches on the bottom row, the new ones on the top row, a line from each new patch's centre to the point
    it reads; a point beyond the first or last old centre (where linear interpolation copies the border
    embedding) is an open circle."""
    import numpy as np
    from matplotlib.patches import Rectangle
    if not mappings or old_n < 1:
        raise ValueError(f"expected at least one mapping and old_n >= 1, got {len(mappings)} and {old_n}")
    coords = {k: _as_numpy(v).astype(float).ravel() for k, v in mappings.items()}
    fig, axes = _figure(len(coords), width=4.6, height=2.3)
    for ax, (label, x) in zip(axes, coords.items()):
        new_n = len(x)
        for row, n in ((0.0, old_n), (1.0, new_n)):  # patch cells: [k / n, (k + 1) / n] of the image width
            for k in range(n):
                ax.add_patch(Rectangle((k / n, row - 0.12), 1 / n, 0.24, fill=False, edgecolor="0.6", linewidth=0.8))
        ax.plot((np.arange(old_n) + 0.5) / old_n, np.zeros(old_n), "s", color="C0", markersize=5,
                label="old patch centres")
        new_centres = (np.arange(new_n) + 0.5) / new_n
        read = (x + 0.5) / old_n  # where in the image the old grid is read
        inside = (x >= -1e-9) & (x <= old_n - 1 + 1e-9)
        for c, r in zip(new_centres, read):
            ax.plot([c, r], [1.0, 0.0], "-", color="C1", linewidth=0.9)
        ax.plot(new_centres, np.ones(new_n), "o", color="C1", markersize=4, label="new patch centres")
        ax.plot(read[inside], np.zeros(inside.sum()), "x", color="C3", markersize=6, label="read here")
        ax.plot(read[~inside], np.zeros((~inside).sum()), "o", mfc="none", color="C3", markersize=6,
                label="read beyond the last centre (border copied)")
        ax.set(xlim=(-0.03, 1.03), ylim=(-0.35, 1.35), title=label, xlabel="position across the image")
        ax.set_yticks([0, 1], [f"old: {old_n} patches", f"new: {new_n} patches"])
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="outside lower center", ncols=2)
    if title:
        fig.suptitle(title)
    return fig


def plot_gains_over_baseline(labels, per_seed, means, errors, xlabel: str = "gain over the baseline (points)",
                      title: str | None = None, reference: float | None = None, reference_label: str = "reference"):
    """Paired gains of several arms over one baseline -> Figure. `labels`: one per arm, listed top to bottom;
    `per_seed`: for each arm, its gain in every seed (drawn as small dots; an empty list for an arm without seeds);
    `means`, `errors`: each arm's mean gain and its standard error (a large dot with an error bar). A vertical line
    marks 0: no gain; `reference`, if given, a second one (dashed, in the legend as `reference_label`), e.g. the
    gain an arm without training already has."""
    n = len(labels)
    if not (len(per_seed) == len(means) == len(errors) == n) or n == 0:
        raise ValueError(f"expected labels, per_seed, means and errors of the same non-zero length, got "
                         f"{n}, {len(per_seed)}, {len(means)}, {len(errors)}")
    fig, (ax,) = _figure(1, width=6.5, height=0.45 * n + 1.3)
    ys = list(range(n))[::-1]
    for y, seeds in zip(ys, per_seed):
        seeds = [float(s) for s in seeds]
        ax.plot(seeds, [y] * len(seeds), "o", color="0.55", markersize=3.5, mfc="none")
    ax.errorbar([float(m) for m in means], ys, xerr=[float(e) for e in errors], fmt="o", color="C0", capsize=4,
                label="mean over seeds ± s.e.")
    ax.plot([], [], "o", color="0.55", markersize=3.5, mfc="none", label="one seed")
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    if reference is not None:
        ax.axvline(float(reference), color="C1", linewidth=1.0, linestyle="--", label=reference_label)
    _finish_rows(ax, ys, labels, xlabel, title, "best")
    return fig
