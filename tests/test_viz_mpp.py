"""minivit.viz figures of the masked-patch-prediction notebook (09_masked_patch_prediction.ipynb)."""

import math

import matplotlib.colors
import numpy as np
import pytest
import torch

from minivit.mpp import KEPT, MASKED, NOT_CORRUPTED, RANDOM, decode_color_code
from minivit.viz import plot_color_predictions, plot_pretext_curves, plot_pretext_loss


def test_pretext_loss_curves_and_baselines_on_one_axis_from_zero():
    fig = plot_pretext_loss({"held-out": ([0, 1, 2], [math.log(512), 4.5, 3.9]), "train": ([1, 2], [4.8, 4.1])},
                            {"ln 512": math.log(512), "H": 4.7})
    (ax,) = fig.axes
    lines = ax.get_lines()
    curves = [l for l in lines if l.get_label() in ("held-out", "train")]
    assert [list(l.get_ydata()) for l in curves] == [[math.log(512), 4.5, 3.9], [4.8, 4.1]]
    flat = sorted(l.get_ydata()[0] for l in lines if l not in curves)  # the two dashed baselines
    assert flat == pytest.approx([4.7, math.log(512)])
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= math.log(512)
    assert {t.get_text() for t in ax.texts} == {"ln 512: 6.24", "H: 4.70"}
    with pytest.raises(ValueError, match="equal length"):
        plot_pretext_loss({"x": ([0, 1], [1.0])}, {})
    with pytest.raises(ValueError, match="at least one curve"):
        plot_pretext_loss({}, {"H": 1.0})


def test_pretext_curves_one_axes_per_panel_with_error_bars():
    fig = plot_pretext_curves({
        "loss": ({"held-out": ([0, 1], [6.2, 4.0])}, {"H": 4.2}),
        "probe accuracy": ({"10-shot": ([0, 1, 2], [0.2, 0.21, 0.22], [0.01, 0.01, 0.02])}, {"chance": 0.1})})
    left, right = fig.axes
    assert left.get_ylabel() == "loss" and right.get_ylabel() == "probe accuracy"
    assert {t.get_text() for t in right.texts} == {"chance: 0.100"} and {t.get_text() for t in left.texts} == {"H: 4.20"}
    assert right.get_ylim()[0] == 0 and right.get_ylim()[1] >= 0.24  # the top of the last error bar
    assert len(right.containers) == 1 and len(left.containers) == 0  # error bars only where given
    with pytest.raises(ValueError, match="equal length"):
        plot_pretext_curves({"p": ({"x": ([0, 1], [0.1, 0.2], [0.1])}, {})})
    with pytest.raises(ValueError, match="at least one panel"):
        plot_pretext_curves({})


def test_color_predictions_rows_mask_and_predictions():
    n, g = 3, 2
    images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8)
    true = decode_color_code(torch.arange(n * g * g).view(n, g, g))  # (n, g, g, 3)
    pred = decode_color_code(torch.full((n, g, g), 511))  # all "white-ish" bin centre 15/16
    mask = torch.zeros(n, g, g, dtype=torch.bool)
    mask[:, 0, 1] = True  # the top-right patch of every image is corrupted
    fig = plot_color_predictions(images, true, pred, mask, titles=["a", "b", "c"])
    axes = np.array(fig.axes).reshape(4, n)
    assert [ax.get_title() for ax in axes[0]] == ["a", "b", "c"]
    hidden = axes[1, 0].get_images()[0].get_array()  # (8, 8, 4): the corrupted patch greyed out, all opaque
    assert np.allclose(hidden[:4, 4:, :3], 0.5) and np.allclose(hidden[..., 3], 1)
    assert np.allclose(hidden[4:, :4, :3], images[0, :, 4:, :4].permute(1, 2, 0) / 255)
    np.testing.assert_allclose(axes[2, 1].get_images()[0].get_array(), true[1].numpy())
    shown = axes[3, 2].get_images()[0].get_array()  # (2, 2, 4): the prediction where corrupted, transparent elsewhere
    np.testing.assert_allclose(shown[0, 1], [15 / 16] * 3 + [1])
    assert shown[1, 0, 3] == 0 and shown[0, 0, 3] == 0 and shown[1, 1, 3] == 0  # nothing predicted: the hatch shows
    with pytest.raises(ValueError, match=r"true and predicted colours \(n, h, w, 3\)"):
        plot_color_predictions(images, true, pred[:2], mask)
    with pytest.raises(ValueError, match=r"expected a mask \(n, h, w\)"):
        plot_color_predictions(images, true, pred, mask[:, :1])
    with pytest.raises(ValueError, match="expected 3 titles"):
        plot_color_predictions(images, true, pred, mask, titles=["a"])


def test_color_predictions_mark_each_kind_of_corruption():
    images = torch.randint(0, 256, (1, 3, 8, 8), dtype=torch.uint8)
    true = pred = decode_color_code(torch.zeros(1, 2, 2, dtype=torch.long))
    kind = torch.tensor([[[NOT_CORRUPTED, MASKED], [RANDOM, KEPT]]])
    fig = plot_color_predictions(images, true, pred, kind != NOT_CORRUPTED, kind=kind)
    given = fig.axes[1].get_images()[0].get_array()  # (8, 8, 4)
    assert np.allclose(given[:4, 4:, :3], 0.5)  # [mask]: grey
    assert np.allclose(given[4:, :4, 3], 0) and np.allclose(given[4:, 4:, 3], 1)  # random: hatched; kept: shown
    for ax in (fig.axes[1], fig.axes[3]):  # one orange (random) and one blue (kept) outline, over the hatch
        outlines = [p for p in ax.patches if not p.get_fill()]
        assert sorted(p.get_edgecolor()[:3] for p in outlines) == sorted(
            [matplotlib.colors.to_rgb("tab:orange"), matplotlib.colors.to_rgb("tab:blue")])
    with pytest.raises(ValueError, match="corrupted exactly where the mask is set"):
        plot_color_predictions(images, true, pred, torch.zeros(1, 2, 2, dtype=torch.bool), kind=kind)


def test_pretext_curves_show_a_negative_gain_below_zero():
    fig = plot_pretext_curves({"gain (points)": ({"fine-tuned": ([5, 10, 40], [-1.0, 0.5, 2.0], [0.4, 0.4, 0.4])},
                                                 {"no gain": 0.0})}, xlabel="epochs of MPP pre-training")
    low, high = fig.axes[0].get_ylim()
    assert low <= -1.4 and high >= 2.4  # every error bar inside the axes, the negative one too


def test_pretext_curves_legend_does_not_hide_the_first_point():
    # the dose-response's gain panel starts at (0, 0), in the lower left corner, where a fixed legend sat (round 4, m4)
    fig = plot_pretext_curves({"gain": ({"recorded, 5 seeds": ([0, 5, 10, 20, 40], [0.0, 0.0, 0.018, 0.026, 0.043],
                                                                [0.0, 0.007, 0.006, 0.006, 0.009])}, {"no gain": 0.0})})
    (ax,) = fig.axes
    ax.set_xlim(-2, 42)  # as notebook 09 sets it: the point sits inside the lower left corner
    fig.canvas.draw()
    point = ax.transData.transform((0.0, 0.0))
    assert ax.get_ylim()[0] < 0  # the point at 0 is drawn whole, above the frame
    assert not ax.get_legend().get_window_extent().contains(*point)
