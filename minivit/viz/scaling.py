"""Scaling figures: accuracy against compute (with the Pareto front), accuracy against data.

Introduced in 05_scaling.ipynb.
"""

from __future__ import annotations

from ._common import _figure


def _log_ticks(ax, which: str = "x", plain: bool = False) -> None:
    """Readable ticks on a log axis already drawn: at 1, 2 and 5 times each power of ten when the data span at
    most two decades (else at the powers only), written plainly ("2,000") or as powers ("2×10¹¹")."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi / lo <= 150 else (1.0,)

    def label(v, _):
        if v <= 0:
            return ""
        if plain:
            return f"{v:,.0f}" if v >= 1 else f"{v:g}"
        e = math.floor(math.log10(v) + 1e-9)
        m = round(v / 10**e)
        return f"$10^{{{e}}}$" if m == 1 else f"${m}{{\\times}}10^{{{e}}}$"
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def plot_compute_accuracy(runs: dict, front=None, title: str | None = None, markers: dict | None = None,
                          ylabel: str = "test accuracy"):
    """Accuracy against training compute and against wall time -> Figure with 2 axes (log x).

    `runs`: {label: (FLOPs, seconds, accuracies)}, each a number or a sequence -- one point per separately
    trained run of that model (e.g. one per budget: the end of each schedule), joined by a thin line.
    `front`: (FLOPs, accuracy) points of the Pareto front, joined by a grey band (the paper's Fig. 5 puts
    compute on a log axis the same way). `markers`: {label: matplotlib marker}, e.g. "s" for a CNN
    (default "o"). `ylabel` names the accuracies."""
    import numpy as np
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
    markers = markers or {}
    fig, (ax_f, ax_t) = _figure(2, width=4.6, height=3.6)
    for ax, col, xlabel in ((ax_f, 0, "training compute (FLOPs, forward + backward)"), (ax_t, 1, "wall time (s)")):
        for k, (label, v) in enumerate(series.items()):
            ax.plot(v[col], v[2], linestyle="-", lw=0.8, marker=markers.get(label, "o"), color=f"C{k}",
                    label=label, markersize=5)
        if front is not None and col == 0 and len(front):
            ax.plot(*zip(*sorted(front)), "-", color="gray", lw=4, alpha=0.3, zorder=0, label="Pareto front")
        ax.set_xscale("log")
        _log_ticks(ax, plain=col == 1)
        ax.set(xlabel=xlabel, ylabel=ylabel)
        ax.grid(alpha=0.3, which="both")
    ax_f.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    return fig


def plot_data_scaling(curves: dict, title: str | None = None, errors: dict | None = None,
                      ylabel: str = "test accuracy"):
    """Accuracy against the number of training images (log x), one line per model -> Figure.
    `curves`: {label: (sizes, accuracies)}; `errors`: {label: standard errors, one per size}, drawn as
    error bars (optional)."""
    if not curves or any(len(v) != 2 or len(v[0]) != len(v[1]) for v in curves.values()):
        raise ValueError("expected {label: (sizes, accuracies)} with as many accuracies as sizes")
    errors = errors or {}
    if any(label not in curves or len(e) != len(curves[label][0]) for label, e in errors.items()):
        raise ValueError("expected errors {label: one standard error per size} for labels of curves")
    fig, (ax,) = _figure(1, width=5.2, height=3.6)
    for k, (label, (sizes, accs)) in enumerate(curves.items()):
        ax.plot(sizes, accs, "o-", color=f"C{k}", label=label)
        if label in errors:
            ax.errorbar(sizes, accs, yerr=errors[label], fmt="none", ecolor=f"C{k}", capsize=3)
    ax.set_xscale("log")
    _log_ticks(ax, plain=True)
    ax.set(xlabel="training images", ylabel=ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    if title:
        ax.set_title(title)
    return fig
