"""Masked-patch-prediction figures: the pretext loss against its baselines, and predicted mean colours.

Introduced in 09_masked_patch_prediction.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure


def plot_pretext_loss(curves: dict, baselines: dict, xlabel: str = "epoch", title: str | None = None):
    """Pretext-loss curves against constant baselines -> Figure.

    `curves`: {label: (x, loss)} sequences of equal length, e.g. the pretext loss on held-out images after
    every epoch of pre-training (epoch 0: before it); drawn as lines with dots. `baselines`: {label: value},
    e.g. {"ln 512 (uniform guess)": 6.24, "entropy of the colour marginal": 4.6}, drawn as dashed
    horizontal lines labelled at the right edge. One y axis for all, starting at 0. Used in 09."""
    from matplotlib.ticker import MaxNLocator
    if not curves:
        raise ValueError("expected at least one curve: {label: (x, loss)}")
    fig, (ax,) = _figure(1, width=6.0, height=3.4)
    top = max([float(v) for v in baselines.values()] + [0.0])
    for k, (label, xy) in enumerate(curves.items()):
        if len(xy) != 2 or len(xy[0]) != len(xy[1]) or len(xy[0]) == 0:
            raise ValueError(f"curve {label!r}: expected (x, loss), two non-empty sequences of equal length")
        x, y = _as_numpy(xy[0]), _as_numpy(xy[1])
        ax.plot(x, y, "o-", color=f"C{k}", label=label, markersize=4)
        top = max(top, float(y.max()))
    for k, (label, value) in enumerate(baselines.items()):
        ax.axhline(float(value), ls="--", lw=1, color=("k", "tab:gray", "tab:brown", "tab:olive")[k % 4])
        ax.annotate(f"{label}: {float(value):.2f}", (1.0, float(value)), xycoords=("axes fraction", "data"),
                    xytext=(-4, 3), textcoords="offset points", ha="right", va="bottom", fontsize=8)
    ax.set_ylim(0, 1.08 * top)
    ax.set(xlabel=xlabel, ylabel="cross-entropy (nats)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def plot_color_predictions(images, true_colors, predicted_colors, mask, titles=None, title: str | None = None):
    """Images, their patches' true 3-bit mean colours, and a model's predictions on the corrupted patches.

    One column per image, four rows: the image; the image with its corrupted patches greyed out (what the
    model could not see as it was; some were kept or swapped, as the corruption does); the true mean
    colour of every patch (one square per patch); the predicted colour on the corrupted patches, each
    outlined in red, and the true colour on the others (not predicted), so rows 3 and 4 differ only
    where the model was asked. `images`: (n, 3, H, W) uint8 or float in [0, 1]; `true_colors`,
    `predicted_colors`: (n, h, w, 3) RGB in [0, 1] on the patch grid (e.g. `decode_color_code` of the
    codes); `mask`: (n, h, w) bool, the corrupted patches. `titles`: n strings, e.g. the classes. Used in 09.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle
    img, true, pred, m = (_as_numpy(a) for a in (images, true_colors, predicted_colors, mask))
    if img.ndim != 4 or img.shape[1] != 3:
        raise ValueError(f"expected images (n, 3, H, W), got shape {img.shape}")
    n, _, height, width = img.shape
    if true.ndim != 4 or true.shape[0] != n or true.shape[-1] != 3 or pred.shape != true.shape:
        raise ValueError(f"expected true and predicted colours (n, h, w, 3) with n = {n}, got {true.shape} and {pred.shape}")
    gh, gw = true.shape[1:3]
    if m.shape != (n, gh, gw) or height % gh or width % gw:
        raise ValueError(f"expected a mask (n, h, w) = {(n, gh, gw)} on a grid dividing the {height}x{width} images, "
                         f"got {m.shape}")
    if titles is not None and len(titles) != n:
        raise ValueError(f"expected {n} titles, got {len(titles)}")
    img = img.astype(float) / 255 if img.max() > 1 else img.astype(float)
    img = img.transpose(0, 2, 3, 1)  # (n, H, W, 3)
    m = m.astype(bool)
    big = np.kron(m, np.ones((height // gh, width // gw), dtype=bool))  # (n, H, W): corrupted pixels
    hidden = np.where(big[..., None], 0.5, img)  # (n, H, W, 3)
    shown = np.where(m[..., None], pred, true)  # (n, h, w, 3)
    rows = [("image", img), ("corrupted patches (grey)", hidden), ("true 3-bit mean colour", true),
            ("predicted (red outlines)", shown)]
    fig, axes = plt.subplots(4, n, figsize=(1.3 * n + 0.4, 5.6), squeeze=False, layout="constrained")
    for r, (label, tiles) in enumerate(rows):
        for c in range(n):
            ax = axes[r, c]
            ax.imshow(np.clip(tiles[c], 0, 1), interpolation="nearest", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 3:
                for y, x in zip(*np.nonzero(m[c])):
                    ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", lw=0.8))
            if r == 0 and titles is not None:
                ax.set_title(str(titles[c]), fontsize=8)
        axes[r, 0].set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
