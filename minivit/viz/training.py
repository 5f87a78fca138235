"""Training figures: the history of a run, labelled predictions.

Introduced in 03_transformer_encoder.ipynb.
"""

from __future__ import annotations

from ._common import _figure, _as_numpy


def plot_history(history, title: str | None = None):
    """Loss and accuracy per epoch and the learning rate of every step of a `minivit.train.History`
    -> Figure with 3 axes. Epoch ticks are whole numbers; the learning rate is drawn step by step (a
    warm-up shorter than an epoch shows), or per epoch for histories that did not record steps."""
    from matplotlib.ticker import MaxNLocator
    h = history.to_dict() if hasattr(history, "to_dict") else dict(history)
    fig, (ax_loss, ax_acc, ax_lr) = _figure(3)
    ep = h["epoch"]
    for ax, key, label in ((ax_loss, "loss", "cross-entropy"), (ax_acc, "acc", "top-1 accuracy")):
        ax.plot(ep, h[f"train_{key}"], "o-", label="train (running mean over the epoch)")
        val = [(e, v) for e, v in zip(ep, h[f"val_{key}"]) if v is not None]
        if val:
            ax.plot(*zip(*val), "s-", label="validation (end of epoch)")
        ax.set(xlabel="epoch", ylabel=label)
        ax.legend(fontsize=8)
    steps, per_epoch = h.get("step_lr") or [], h.get("steps_per_epoch")
    if steps and per_epoch:
        from ..optim import step_epochs
        at = step_epochs(h.get("phases") or [{"epochs": len(ep), "steps_per_epoch": per_epoch}], len(steps))
        ax_lr.plot(at, steps[:len(at)], "-", color="tab:gray")
        ax_lr.set(xlabel="epoch", ylabel="learning rate (every step)")
        ax_lr.set_xlim(0, max(at[-1] if at else 0, 1))
    else:
        ax_lr.plot(ep, h["lr"], "o-", color="tab:gray")
        ax_lr.set(xlabel="epoch", ylabel="learning rate (last step of the epoch)")
    for ax in (ax_loss, ax_acc, ax_lr):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


def plot_predictions(images, labels, predictions, classes, ncols: int = 8, title: str | None = None):
    """A grid of labelled images -> Figure with one axes per image. `images`: (B, C, H, W) or (B, H, W),
    uint8 in [0, 255] or float in [0, 1], C = 1 (grey) or 3; `labels`, `predictions`: (B,) class indices
    into `classes`. Each image is titled with its prediction, green when right; a wrong one is red and
    also names the true class. Used in 03_transformer_encoder.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    floating = images.is_floating_point() if hasattr(images, "is_floating_point") else np.asarray(images).dtype.kind == "f"
    x = _as_numpy(images)
    y, p = (_as_numpy(v).astype(int).ravel() for v in (labels, predictions))
    if x.ndim == 4 and x.shape[1] in (1, 3):
        x = x.transpose(0, 2, 3, 1)  # (B, H, W, C) for imshow
        x = x[..., 0] if x.shape[-1] == 1 else x
    if x.ndim not in (3, 4) or not len(x) == len(y) == len(p):
        raise ValueError(f"expected images (B, C, H, W) or (B, H, W) with C = 1 or 3 and B labels and predictions, "
                         f"got shapes {_as_numpy(images).shape}, {y.shape}, {p.shape}")
    if len(x) == 0 or min(y.min(), p.min()) < 0 or max(y.max(), p.max()) >= len(classes):
        raise ValueError(f"expected at least one image and class indices in [0, {len(classes)}) for {len(classes)} classes")
    x = x if floating else x / 255.0  # imshow wants RGB floats in [0, 1]
    vmax = 1.0
    ncols = min(ncols, len(x))
    nrows = -(-len(x) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(1.5 * ncols, 1.75 * nrows + 0.3), layout="constrained")
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= len(x):
            continue
        ax.imshow(x[i], cmap="gray" if x.ndim == 3 else None, vmin=0, vmax=vmax, interpolation="nearest")
        right = y[i] == p[i]
        text = str(classes[p[i]]) if right else f"{classes[p[i]]}\n(true: {classes[y[i]]})"
        ax.set_title(text, color="tab:green" if right else "tab:red", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig
