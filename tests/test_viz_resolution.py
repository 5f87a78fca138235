"""minivit.viz figures of 07_finetuning_at_higher_resolution.ipynb: they draw exactly what they are given; bad
input is refused."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from minivit.viz import plot_image_rows, plot_gains_over_baseline, plot_position_mapping


def test_image_rows_draw_every_image_and_the_outline():
    big = torch.randint(0, 256, (3, 3, 16, 16), dtype=torch.uint8)
    small = torch.randint(0, 256, (3, 3, 8, 8), dtype=torch.uint8)
    fig = plot_image_rows({"16 px": big, "8 px": small}, titles=["a", "b", "c"], outline={"8 px": (0, 0, .5, .5)},
                          suptitle="s")
    assert isinstance(fig, Figure) and len(fig.axes) == 6
    np.testing.assert_allclose(fig.axes[1].get_images()[0].get_array(), big[1].permute(1, 2, 0).numpy() / 255)
    np.testing.assert_allclose(fig.axes[4].get_images()[0].get_array(), small[1].permute(1, 2, 0).numpy() / 255)
    boxes = [[p for p in ax.patches if isinstance(p, Rectangle)] for ax in fig.axes]
    assert [len(b) for b in boxes] == [0, 0, 0, 1, 1, 1]
    assert boxes[3][0].get_width() == 4 and boxes[3][0].get_height() == 4  # half of an 8-px image
    assert [ax.get_title() for ax in fig.axes[:3]] == ["a", "b", "c"] and fig.axes[3].get_ylabel() == "8 px"
    plt.close(fig)


def test_image_rows_refuse_bad_input():
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    with pytest.raises(ValueError, match="same n"):
        plot_image_rows({"a": x, "b": x[:1]})
    with pytest.raises(ValueError, match="titles"):
        plot_image_rows({"a": x}, titles=["one"])
    with pytest.raises(ValueError, match="not in rows"):
        plot_image_rows({"a": x}, outline={"b": (0, 0, 1, 1)})
    with pytest.raises(ValueError, match="at least one row"):
        plot_image_rows({})


def test_position_mapping_draws_a_line_from_each_new_centre_to_where_it_reads():
    centres = (torch.arange(8) + 0.5) * 4 / 8 - 0.5  # -0.25 ... 3.25: the two outermost beyond the old centres
    corners = torch.arange(8) * 3 / 7
    fig = plot_position_mapping({"centres": centres, "corners": corners}, old_n=4, title="t")
    ax_centres, ax_corners = fig.axes
    lines = [ln for ln in ax_centres.get_lines() if len(ln.get_xdata()) == 2 and ln.get_linestyle() == "-"]
    assert len(lines) == 8
    for i, ln in enumerate(lines):  # centres aligned: each new centre reads the old grid right below it
        np.testing.assert_allclose(ln.get_xdata(), [(i + 0.5) / 8, (centres[i].item() + 0.5) / 4])
        np.testing.assert_allclose(ln.get_xdata()[0], ln.get_xdata()[1])
    open_circles = [ln for ln in ax_centres.get_lines() if ln.get_marker() == "o" and ln.get_markerfacecolor() == "none"]
    assert len(open_circles[0].get_xdata()) == 2  # the two clamped ends
    corner_lines = [ln for ln in ax_corners.get_lines() if len(ln.get_xdata()) == 2 and ln.get_linestyle() == "-"]
    np.testing.assert_allclose(corner_lines[0].get_xdata(), [1 / 16, 1 / 8])  # the first new patch reads old centre 0
    assert [ax.get_title() for ax in fig.axes] == ["centres", "corners"]
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one mapping"):
        plot_position_mapping({}, old_n=4)


def test_paired_gains_draw_seeds_and_means():
    fig = plot_gains_over_baseline(["a", "b"], [[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], [2.0, 0.0], [0.5, 0.6], title="t")
    ax = fig.axes[0]
    seed_dots = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 3]
    np.testing.assert_allclose(seed_dots[0].get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(seed_dots[0].get_ydata(), [1, 1, 1])  # the first arm on top
    assert dict(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()])) == {1: "a", 0: "b"}
    plt.close(fig)
    with pytest.raises(ValueError, match="same non-zero length"):
        plot_gains_over_baseline(["a"], [[1.0]], [1.0, 2.0], [0.1])


def test_paired_gains_draw_a_reference_line_and_arms_without_seeds():
    fig = plot_gains_over_baseline(["no training", "trained"], [[], [1.0, 3.0]], [2.5, 2.0], [0.4, 0.5],
                                   reference=2.5, reference_label="no training")
    ax = fig.axes[0]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and np.allclose(dashed[0].get_xdata(), [2.5, 2.5])
    assert "no training" in [t.get_text() for t in ax.get_legend().get_texts()]
    seed_dots = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and len(ln.get_xdata()) == 2]
    np.testing.assert_allclose(seed_dots[0].get_xdata(), [1, 3])
    plt.close(fig)
