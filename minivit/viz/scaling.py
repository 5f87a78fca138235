"""Scaling figures: accuracy against compute (with the Pareto front), accuracy against data.

Introduced in 05_scaling.ipynb.
"""

from __future__ import annotations

from ._common import _figure


def plot_compute_accuracy(runs: dict, front=None, title: str | None = None):
    """Accuracy against training compute and against wall time -> Figure with 2 axes (log x).
    `runs`: {label: (FLOPs, seconds, accuracies)}, each a number or a sequence (e.g. cumulative values after
    every epoch, drawn as one line per run); `front`: (FLOPs, accuracy) points of the Pareto front, joined by
    a grey line (the paper's Fig. 5 puts compute on a log axis the same way)."""
    import numpy as np
    from matplotlib.ticker import NullFormatter
    if not runs:
        raise ValueError("expected at least one run: {label: (flops, seconds, accuracies)}")
    series = {}
    for label, v in runs.items():
        if len(v) != 3:
            raise ValueError(f"run {label!r} must be (flops, seconds, accuracies)")
        f, t, a = (np.atleast_1d(np.asarray(x, dtype=float)) for x in v)
        if not len(f) == len(t) == len(a):
            raise ValueError(f"run {label!r}: flops, seconds and accuracies differ in length")
        series[label] = (f, t, a)
    fig, (ax_f, ax_t) = _figure(2, width=4.6, height=3.6)
    for ax, col, xlabel in ((ax_f, 0, "training compute (FLOPs, forward + backward)"), (ax_t, 1, "wall time (s)")):
        for k, (label, v) in enumerate(series.items()):
            ax.plot(v[col], v[2], "o-", color=f"C{k}", label=label, markersize=4)
        if front is not None and col == 0 and len(front):
            ax.plot(*zip(*sorted(front)), "-", color="gray", lw=3, alpha=0.35, zorder=0, label="Pareto front")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # decades only: minor labels overlap on short ranges
        ax.set(xlabel=xlabel, ylabel="test accuracy")
        ax.grid(alpha=0.3, which="both")
    ax_f.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def plot_data_scaling(curves: dict, title: str | None = None):
    """Accuracy against the number of training images (log x), one line per model -> Figure.
    `curves`: {label: (sizes, accuracies)}."""
    if not curves or any(len(v) != 2 or len(v[0]) != len(v[1]) for v in curves.values()):
        raise ValueError("expected {label: (sizes, accuracies)} with as many accuracies as sizes")
    fig, (ax,) = _figure(1, width=5.2, height=3.6)
    for k, (label, (sizes, accs)) in enumerate(curves.items()):
        ax.plot(sizes, accs, "o-", color=f"C{k}", label=label)
    ax.set_xscale("log")
    ax.set(xlabel="training images", ylabel="test accuracy")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    if title:
        ax.set_title(title)
    return fig
