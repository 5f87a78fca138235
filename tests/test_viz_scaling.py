"""minivit.viz figures of the scaling notebook (05_scaling.ipynb); the first tests are in test_viz_experiments."""

import pytest

from minivit.viz import plot_compute_accuracy, plot_data_scaling


def test_compute_accuracy_markers_per_model_and_several_ticks_on_a_short_range():
    runs = {"ViT": ([1e10, 5e10], [3.0, 15.0], [0.3, 0.4]), "CNN": ([2e10, 1e11], [9.0, 40.0], [0.35, 0.45])}
    fig = plot_compute_accuracy(runs, markers={"CNN": "s"}, ylabel="validation accuracy")
    ax_f, ax_t = fig.axes
    lines = {l.get_label(): l for l in ax_f.get_lines()}
    assert lines["CNN"].get_marker() == "s" and lines["ViT"].get_marker() == "o"
    assert ax_f.get_ylabel() == "validation accuracy"
    lo, hi = ax_t.get_xlim()
    assert sum(lo <= t <= hi for t in ax_t.get_xticks()) >= 3  # 5, 10, 20: not just one decade mark


def test_data_scaling_error_bars():
    fig = plot_data_scaling({"ViT": ([1000, 5000], [0.3, 0.4])}, errors={"ViT": [0.01, 0.01]})
    ax = fig.axes[0]
    assert [l.get_label() for l in ax.get_lines()][0] == "ViT" and len(ax.collections) == 1  # the bars
    with pytest.raises(ValueError, match="one standard error per size"):
        plot_data_scaling({"ViT": ([1000, 5000], [0.3, 0.4])}, errors={"ViT": [0.01]})
