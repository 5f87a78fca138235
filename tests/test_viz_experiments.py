"""minivit.viz figures that compare runs (04_training_a_vit.ipynb)."""

import numpy as np
import pytest
import torch

from minivit.history import History
from minivit.viz import plot_accuracies, plot_confusion_matrices, plot_runs


def _history(accs):
    h = History()
    for e, a in enumerate(accs, 1):
        h.append(epoch=e, train_loss=1.0, train_acc=a / 2, val_loss=1.0, val_acc=a, lr=0.1, images_per_s=1.0,
                 epoch_time=1.0)
    return h


def test_runs_one_line_per_run_in_every_axes():
    fig = plot_runs({"vit": _history([0.1, 0.2, 0.3]), "cnn": _history([0.2, 0.4])}, metrics=("val_acc", "train_acc"))
    assert len(fig.axes) == 2
    lines = fig.axes[0].get_lines()
    assert [l.get_label() for l in lines] == ["vit", "cnn"] and list(lines[1].get_ydata()) == [0.2, 0.4]
    assert list(fig.axes[1].get_lines()[0].get_ydata()) == [0.05, 0.1, 0.15]
    assert lines[0].get_color() == fig.axes[1].get_lines()[0].get_color()  # a run keeps its colour
    with pytest.raises(ValueError, match="unknown metric"):
        plot_runs({"vit": _history([0.1])}, metrics=("accuracy",))


def test_runs_against_a_budget_with_named_axes():
    runs = {"vit": _history([0.1, 0.2]), "cnn": _history([0.3])}
    fig = plot_runs(runs, metrics=("val_acc",), labels={"val_acc": "test accuracy"}, x_per_epoch={"vit": 2.0, "cnn": 5.0},
                    xlabel="training FLOPs")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "test accuracy" and ax.get_xlabel() == "training FLOPs"
    assert [list(l.get_xdata()) for l in ax.get_lines()] == [[2.0, 4.0], [5.0]]
    assert plot_runs(runs).axes[1].get_ylabel() == "train acc"  # the field's name by default
    with pytest.raises(ValueError, match="one amount per run"):
        plot_runs(runs, x_per_epoch={"vit": 1.0})


def test_confusion_matrices_rows_as_fractions_on_one_scale():
    m = torch.tensor([[8, 2], [1, 9]])
    fig = plot_confusion_matrices({"a": m, "b": m * 2}, ["x", "y"])
    ims = [ax.get_images()[0] for ax in fig.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    assert len(ims) == 2 and all(im.get_clim() == (0.0, 1.0) for im in ims)
    np.testing.assert_allclose(ims[0].get_array(), [[0.8, 0.2], [0.1, 0.9]])
    with pytest.raises(ValueError, match=r"expected a \(3, 3\) confusion matrix"):
        plot_confusion_matrices({"a": m}, ["x", "y", "z"])


def test_accuracies_with_error_bars_and_train_points():
    fig = plot_accuracies(["a", "b"], [0.5, 0.6], errors=[0.01, 0.02], train_accuracies=[0.7, 0.65])
    ax = fig.axes[0]
    ticks = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks())}
    assert ticks["a"] > ticks["b"]  # listed top to bottom as given
    assert list(ax.get_lines()[-1].get_xdata()) == [0.7, 0.65]
    legend = plot_accuracies(["a"], [0.5], train_accuracies=[0.6], train_label="train, clean").axes[0].get_legend()
    assert sorted(t.get_text() for t in legend.get_texts()) == ["test", "train, clean"]
    with pytest.raises(ValueError, match="same length"):
        plot_accuracies(["a"], [0.5, 0.6])


def test_compute_accuracy_two_log_axes_curves_and_the_front():
    from minivit.viz import plot_compute_accuracy
    runs = {"a": ([1e9, 2e9], [1.0, 2.0], [0.2, 0.3]), "b": (1e10, 10.0, 0.5)}
    fig = plot_compute_accuracy(runs, front=[(1e10, 0.5), (1e9, 0.2)])
    ax_f, ax_t = fig.axes
    assert ax_f.get_xscale() == "log" and ax_t.get_xscale() == "log"
    line_a = [l for l in ax_f.get_lines() if l.get_label() == "a"][0]
    assert list(line_a.get_xdata()) == [1e9, 2e9] and list(line_a.get_ydata()) == [0.2, 0.3]  # one line per run
    front = [l for l in ax_f.get_lines() if l.get_label() == "Pareto front"][0]
    assert list(front.get_xdata()) == [1e9, 1e10]  # sorted by compute
    with pytest.raises(ValueError, match="differ in length"):
        plot_compute_accuracy({"a": ([1, 2], [1], [0.1, 0.2])})


def test_data_scaling_one_line_per_model():
    from minivit.viz import plot_data_scaling
    fig = plot_data_scaling({"ViT": ([500, 1500], [0.3, 0.4]), "CNN": ([500, 1500], [0.4, 0.5])})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and [l.get_label() for l in ax.get_lines()] == ["ViT", "CNN"]
    with pytest.raises(ValueError, match="as many accuracies as sizes"):
        plot_data_scaling({"ViT": ([1, 2], [0.3])})


def test_paired_gains_join_each_seed_and_show_the_mean_gain():
    from minivit.viz import plot_paired_gains
    fig = plot_paired_gains({"scratch": [0.30, 0.32, 0.31], "pre-trained": [0.33, 0.31, 0.35]}, (0.02, 0.013),
                            baselines={"probe": 0.27})
    left, right = fig.axes
    pairs = [l for l in left.get_lines() if l.get_linestyle() == "-"]  # the dashed baseline aside
    assert [list(l.get_ydata()) for l in pairs] == [[0.30, 0.33], [0.32, 0.31], [0.31, 0.35]]
    assert [t.get_text() for t in left.get_xticklabels()] == ["scratch", "pre-trained"]
    assert left.get_ylim()[0] < 0.27 and left.get_ylim()[1] > 0.35  # every seed and the baseline inside
    dots = [l for l in right.get_lines() if l.get_label() == "gain of one seed"]
    np.testing.assert_allclose(dots[0].get_ydata(), [0.03, -0.01, 0.04], atol=1e-12)
    assert len(right.containers) == 1 and right.get_ylim()[0] < -0.01 and right.get_ylim()[1] > 0.04
    with pytest.raises(ValueError, match="exactly two arms"):
        plot_paired_gains({"a": [0.1]}, (0, 0))
    with pytest.raises(ValueError, match="same .* number of seeds"):
        plot_paired_gains({"a": [0.1, 0.2], "b": [0.1]}, (0, 0))
