"""Masked-patch-prediction figures: the pretext loss and accuracy against their baselines, and predicted colours.

Introduced in 09_masked_patch_prediction.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure


def plot_pretext_curves(panels: dict, xlabel: str = "epoch of pre-training", title: str | None = None):
    """Curves against constant baselines, one axes per panel, side by side -> Figure.

    `panels`: {ylabel: (curves, baselines)}. `curves`: {label: (x, y)} or {label: (x, y, yerr)}, sequences of
    equal length, e.g. the pretext loss on held-out images after every epoch (epoch 0: before pre-training),
    or a few-shot probe's mean accuracy and its standard error; drawn as lines with dots (and error bars).
    `baselines`: {label: value}, e.g. {"ln 512 (uniform guess)": 6.24}, drawn as dashed horizontal lines
    labelled at the right edge. Each axes has one y scale for its curves and baselines, from 0 (or below, when a
    curve goes negative or touches 0, e.g. a gain) up; the legend goes where it covers the fewest points. Used in
    09, also with `xlabel="epochs of MPP pre-training"` for the dose-response over the zoo's checkpoints.
    """
    from matplotlib.ticker import MaxNLocator
    if not panels:
        raise ValueError("expected at least one panel: {ylabel: (curves, baselines)}")
    fig, axes = _figure(len(panels), width=4.6 if len(panels) > 1 else 6.0, height=3.4)
    for ax, (ylabel, (curves, baselines)) in zip(axes, panels.items()):
        if not curves:
            raise ValueError(f"panel {ylabel!r}: expected at least one curve: {{label: (x, y)}}")
        top = max([float(v) for v in baselines.values()] + [0.0])
        bottom = min([float(v) for v in baselines.values()] + [0.0])
        lowest = float("inf")  # the lowest point of the curves, error bars included
        for k, (label, xy) in enumerate(curves.items()):
            if len(xy) not in (2, 3) or any(len(v) != len(xy[0]) for v in xy) or len(xy[0]) == 0:
                raise ValueError(f"curve {label!r}: expected (x, y) or (x, y, yerr), non-empty sequences of equal length")
            x, y = _as_numpy(xy[0]), _as_numpy(xy[1])
            err = _as_numpy(xy[2]) if len(xy) == 3 else None
            ax.plot(x, y, "o-", color=f"C{k}", label=label, markersize=4)
            if err is not None:
                ax.errorbar(x, y, yerr=err, fmt="none", ecolor=f"C{k}", capsize=3)
            top = max(top, float((y + (err if err is not None else 0)).max()))
            bottom = min(bottom, float((y - (err if err is not None else 0)).min()))
            lowest = min(lowest, float((y - (err if err is not None else 0)).min()))
        for k, (label, value) in enumerate(baselines.items()):
            value = float(value)
            ax.axhline(value, ls="--", lw=1, color=("k", "tab:gray", "tab:brown", "tab:olive")[k % 4])
            ax.annotate(f"{label}: {value:.2f}" if abs(value) >= 1 else f"{label}: {value:.3f}", (1.0, value),
                        xycoords=("axes fraction", "data"), xytext=(-4, 3), textcoords="offset points", ha="right",
                        va="bottom", fontsize=8)
        if bottom < 0:
            ax.set_ylim(1.1 * bottom, 1.1 * top)
        else:  # from 0; a little below when a curve touches 0 (a point at 0 would sit on the frame, half drawn)
            ax.set_ylim(-0.05 * top if lowest <= 0 else 0.0, 1.1 * top)
        ax.set(xlabel=xlabel, ylabel=ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")  # where it hides the fewest points (a curve's first point may sit at 0, 0)
    if title:
        (axes[0].set_title if len(panels) == 1 else fig.suptitle)(title, fontsize=10)
    return fig


def plot_pretext_loss(curves: dict, baselines: dict, xlabel: str = "epoch", title: str | None = None):
    """Pretext-loss curves against constant baselines -> Figure: `plot_pretext_curves` with one panel,
    y = cross-entropy in nats. `curves`: {label: (x, loss)}; `baselines`: {label: value}, e.g.
    {"ln 512 (uniform guess)": 6.24, "entropy of the colour marginal": 4.6}. Used in 09."""
    if not curves:
        raise ValueError("expected at least one curve: {label: (x, loss)}")
    return plot_pretext_curves({"cross-entropy (nats)": (curves, baselines)}, xlabel=xlabel, title=title)


def plot_color_predictions(images, true_colors, predicted_colors, mask, titles=None, title: str | None = None,
                           kind=None):
    """Images, their patches' true 3-bit mean colours, and a model's predictions on the corrupted patches.

    One column per image, four rows: the image; what the model is given (the [mask] patches grey; with
    `kind`, the patches replaced by a random other patch hatched in orange and those kept as they are outlined
    in blue -- the model sees them, but not which they are); the true mean colour of every patch (one square
    per patch); the predicted colour of every corrupted patch, the same outlines, and a grey hatch where
    nothing was predicted. `images`: (n, 3, H, W) uint8 or float in [0, 1]; `true_colors`,
    `predicted_colors`: (n, h, w, 3) RGB in [0, 1] on the patch grid (e.g. `decode_color_code` of the codes);
    `mask`: (n, h, w) bool, the corrupted patches; `kind`: None (every corrupted patch drawn as [mask]) or
    (n, h, w) ints, `minivit.mpp`'s NOT_CORRUPTED / MASKED / RANDOM / KEPT (corrupted exactly where `mask` is).
    `titles`: n strings, e.g. the classes. Used in 09.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    from ..mpp import KEPT, MASKED, NOT_CORRUPTED, RANDOM
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
    m = m.astype(bool)
    kinds = np.where(m, MASKED, NOT_CORRUPTED) if kind is None else _as_numpy(kind).astype(int)
    if kinds.shape != m.shape or not np.isin(kinds, (NOT_CORRUPTED, MASKED, RANDOM, KEPT)).all() or (
            (kinds != NOT_CORRUPTED) != m).any():
        raise ValueError(f"expected kinds (n, h, w) = {(n, gh, gw)} in {{NOT_CORRUPTED, MASKED, RANDOM, KEPT}}, "
                         "corrupted exactly where the mask is set")
    if titles is not None and len(titles) != n:
        raise ValueError(f"expected {n} titles, got {len(titles)}")
    img = img.astype(float) / 255 if img.max() > 1 else img.astype(float)
    img = img.transpose(0, 2, 3, 1)  # (n, H, W, 3)
    up = np.ones((height // gh, width // gw))
    def alpha(opaque):  # (..., 1) float alpha channel: 0 where the hatch beneath should show
        return opaque[..., None].astype(float)
    given = np.where(np.kron(kinds == MASKED, up)[..., None], 0.5, img)  # (n, H, W, 3)
    given = np.concatenate([given, alpha(np.kron(kinds != RANDOM, up))], -1)  # (n, H, W, 4): random -> hatch
    shown = np.concatenate([pred, alpha(m.astype(float))], -1)  # (n, h, w, 4): not predicted -> hatch
    rows = [("image", img, None), ("what the model is given", given, "tab:orange"),
            ("true 3-bit mean colour", true, None), ("predicted colour", shown, "0.7")]
    outline = {RANDOM: "tab:orange", KEPT: "tab:blue"}
    fig, axes = plt.subplots(4, n, figsize=(1.3 * n + 0.6, 6.0), squeeze=False, layout="constrained")
    for r, (label, tiles, hatch) in enumerate(rows):
        for c in range(n):
            ax = axes[r, c]
            h_, w_ = tiles[c].shape[:2]
            if hatch is not None:  # seen through the transparent tiles
                ax.add_patch(Rectangle((-0.5, -0.5), w_, h_, facecolor="white", edgecolor=hatch, hatch="////",
                                       lw=0, zorder=0))
            ax.imshow(np.clip(tiles[c], 0, 1), interpolation="nearest", vmin=0, vmax=1, zorder=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if r in (1, 3):
                s = (h_ // gh, w_ // gw)  # pixels per patch in this row's tiles
                for k, colour in outline.items():
                    for y, x in zip(*np.nonzero(kinds[c] == k)):
                        ax.add_patch(Rectangle((x * s[1] - 0.5, y * s[0] - 0.5), s[1], s[0], fill=False,
                                               edgecolor=colour, lw=1.2, zorder=2))
            if r == 0 and titles is not None:
                ax.set_title(str(titles[c]), fontsize=8)
        axes[r, 0].set_ylabel(label, fontsize=7, rotation=0, ha="right", va="center")
    legend = [Patch(facecolor="0.5", label="[mask]: the model sees the [mask] embedding"),
              Patch(facecolor="white", edgecolor="tab:orange", hatch="////", label="replaced by a random other patch"),
              Patch(facecolor="none", edgecolor="tab:blue", lw=1.2, label="kept as it is (still predicted)"),
              Patch(facecolor="white", edgecolor="0.7", hatch="////", label="not corrupted: nothing predicted")]
    fig.legend(handles=legend if kind is not None else [legend[0], legend[3]], loc="outside lower center",
               ncols=2, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
