"""Figures that compare runs: curves of several histories, confusion matrices, accuracy with error bars.

Introduced in 04_training_a_vit.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _figure, _finish_rows


def plot_runs(histories: dict, metrics=("val_acc", "train_acc"), title: str | None = None, *,
              labels: dict | None = None, x_per_epoch: dict | None = None, xlabel: str | None = None):
    """Several runs' curves on shared axes -> Figure with one axes per metric. `histories`: {label: History
    (or its dict)}; `metrics`: History fields, plotted against the epoch, one line per run (the same colour for
    a run in every axes). Each axes has one y scale for all runs.

    labels: {metric: y-axis label} where the field's name would mislead (e.g. "train_acc" is a running mean over
    augmented batches). x_per_epoch: {run label: amount per epoch}, to plot against a budget instead of the epoch,
    e.g. the run's training FLOPs per epoch (x = epoch * amount; every run needs one); name it with `xlabel`."""
    from matplotlib.ticker import MaxNLocator
    if not histories:
        raise ValueError("expected at least one run: {label: History}")
    if x_per_epoch is not None and set(x_per_epoch) != set(histories):
        raise ValueError(f"x_per_epoch needs one amount per run, got {sorted(x_per_epoch)} for runs {sorted(histories)}")
    labels = labels or {}
    fig, axes = _figure(len(metrics), width=4.2, height=3.2)
    for ax, metric in zip(axes, metrics):
        for k, (label, h) in enumerate(histories.items()):
            d = h.to_dict() if hasattr(h, "to_dict") else dict(h)
            if metric not in d:
                raise ValueError(f"unknown metric {metric!r}; a History has {sorted(d)}")
            scale = 1.0 if x_per_epoch is None else float(x_per_epoch[label])
            points = [(e * scale, v) for e, v in zip(d["epoch"], d[metric]) if v is not None]
            if points:
                ax.plot(*zip(*points), "o-", color=f"C{k}", label=label, markersize=3)
        ax.set(xlabel=xlabel or ("epoch" if x_per_epoch is None else "budget"),
               ylabel=labels.get(metric, metric.replace("_", " ")))
        if x_per_epoch is None:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def plot_confusion_matrices(matrices: dict, classes, title: str | None = None):
    """Confusion matrices (K, K) side by side -> Figure. `matrices`: {label: counts}, rows = true class,
    columns = predicted class. Each row is drawn as fractions of its true class, on one colour scale [0, 1]
    for all matrices, with the diagonal fraction (per-class accuracy) written in each diagonal cell."""
    import numpy as np
    if not matrices:
        raise ValueError("expected at least one confusion matrix: {label: (K, K) counts}")
    k = len(classes)
    fig, axes = _figure(len(matrices), width=4.3, height=4.0)
    for ax, (label, m) in zip(axes, matrices.items()):
        m = _as_numpy(m).astype(float)
        if m.shape != (k, k):
            raise ValueError(f"expected a ({k}, {k}) confusion matrix for {k} classes, got {m.shape}")
        frac = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
        im = ax.imshow(frac, cmap="Blues", vmin=0.0, vmax=1.0)
        for i in range(k):
            ax.text(i, i, f"{frac[i, i]:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if frac[i, i] > 0.5 else "black")
        ax.set_xticks(range(k), [str(c) for c in classes], rotation=90, fontsize=7)
        ax.set_yticks(range(k), [str(c) for c in classes], fontsize=7)
        ax.set(xlabel="predicted class", ylabel="true class", title=label)
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="fraction of the true class")
    if title:
        fig.suptitle(title)
    return fig


def plot_accuracies(labels, accuracies, errors=None, train_accuracies=None, xlabel: str = "test top-1 accuracy",
                    title: str | None = None, train_label: str = "train (end of training)"):
    """One dot per run with an error bar (e.g. the binomial standard error of an accuracy) -> Figure.
    `labels`, `accuracies` (fractions), optional `errors` and `train_accuracies` (drawn as open circles,
    so the train-test gap shows, with the legend entry `train_label`). Runs are listed top to bottom in the order
    given. With training points, name the axis for both (e.g. xlabel="top-1 accuracy")."""
    n = len(labels)
    acc = [float(a) for a in accuracies]
    if len(acc) != n or (errors is not None and len(errors) != n) or (
            train_accuracies is not None and len(train_accuracies) != n):
        raise ValueError("expected labels, accuracies (and errors, train_accuracies) of the same length")
    fig, (ax,) = _figure(1, width=6.5, height=0.45 * n + 1.2)
    ys = list(range(n))[::-1]
    ax.errorbar(acc, ys, xerr=errors, fmt="o", color="C0", capsize=3, label="test")
    if train_accuracies is not None:
        ax.plot([float(a) for a in train_accuracies], ys, "o", mfc="none", color="C1", label=train_label)
    _finish_rows(ax, ys, labels, xlabel, title, "lower right")
    return fig


def plot_paired_gains(accuracies: dict, gain: tuple, baselines: dict | None = None, ylabel: str = "test accuracy",
                      title: str | None = None):
    """Two arms run with the same seeds, and the gain of the second over the first -> Figure with two axes.

    `accuracies`: {arm: one value per seed}, exactly two arms with the same seeds in the same order (seed i of
    one is paired with seed i of the other). `gain`: (mean, standard error) of the paired gains second - first
    (e.g. `minivit.stats.mean_se`). `baselines`: {label: value} drawn as dashed lines on the left axes.
    Left: each seed's two accuracies joined by a line (the pairing the analysis uses). Right: every seed's gain
    (dots) and their mean ± s.e. (a bar), with a line at 0. Used in 09."""
    import numpy as np
    if len(accuracies) != 2:
        raise ValueError(f"expected exactly two arms: {{arm: accuracies per seed}}, got {len(accuracies)}")
    (first, a), (second, b) = ((k, np.asarray([float(v) for v in vs])) for k, vs in accuracies.items())
    if len(a) != len(b) or len(a) < 1:
        raise ValueError(f"expected the same (non-zero) number of seeds in both arms, got {len(a)} and {len(b)}")
    mean, se = (float(v) for v in gain)
    fig, (left, right) = _figure(2, width=3.8, height=3.3)
    for i in range(len(a)):
        left.plot([0, 1], [a[i], b[i]], "o-", color="C0", alpha=0.7, markersize=4, label="one seed" if i == 0 else None)
    for k, (label, value) in enumerate((baselines or {}).items()):
        left.axhline(float(value), ls="--", lw=1, color=("k", "tab:gray", "tab:brown")[k % 3], label=label)
    left.set_xticks([0, 1], [first, second])
    values = np.concatenate([a, b, [float(v) for v in (baselines or {}).values()]])
    pad = 0.1 * (values.max() - values.min()) or 0.01
    left.set(xlim=(-0.4, 1.4), ylim=(values.min() - pad, values.max() + pad), ylabel=ylabel)
    left.grid(alpha=0.3, axis="y")
    left.legend(fontsize=7, loc="best")
    d = b - a
    right.axhline(0.0, color="k", lw=0.8)
    right.plot(np.zeros(len(d)) + np.linspace(-0.08, 0.08, len(d)), d, "o", color="C0", alpha=0.7, markersize=5,
               label="gain of one seed")
    right.errorbar([0.35], [mean], yerr=[se], fmt="s", color="C3", capsize=5, label="mean ± s.e.")
    right.set_xticks([])
    right.set(xlim=(-0.4, 0.7), ylabel=f"gain: {second} − {first}")
    lim = max(abs(d).max(), abs(mean) + se) * 1.3 or 1.0
    right.set_ylim(-lim, lim)
    right.grid(alpha=0.3, axis="y")
    right.legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
