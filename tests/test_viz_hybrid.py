"""minivit.viz figures of the hybrid notebook (06_hybrid.ipynb)."""

import numpy as np
import pytest
import torch

from minivit.viz import plot_compute_by_family, plot_feature_maps


def test_feature_maps_image_then_maps_with_the_token_grid_on_the_last():
    image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8)
    maps = {"stage 1": torch.rand(16, 16), "tokens": torch.arange(8.0 * 8).reshape(8, 8)}
    fig = plot_feature_maps(image, maps)
    axes = fig.axes
    assert len(axes) == 3
    assert axes[0].get_images()[0].get_array().shape == (32, 32, 3)  # the image, channels last
    np.testing.assert_allclose(axes[0].get_images()[0].get_array().max(), image.max().item() / 255)
    assert [ax.get_title() for ax in axes[1:]] == ["stage 1", "tokens"]
    assert len(axes[1].get_lines()) == 0 and len(axes[2].get_lines()) == 7 + 7  # cell borders of the 8 x 8 grid
    with pytest.raises(ValueError, match=r"expected an image \(C, H, W\)"):
        plot_feature_maps(torch.rand(32, 32), maps)
    with pytest.raises(ValueError, match="2-D maps"):
        plot_feature_maps(image, {"x": torch.rand(2, 3, 3)})


def test_compute_by_family_paper_panel_and_shared_colours():
    ours = {"ViT": ([1e12, 2e12], [10.0, 20.0], [0.3, 0.35]), "hybrid": ([2e12, 4e12], [15.0, 30.0], [0.4, 0.5])}
    paper = {"ViT": ([55, 224], [80.73, 84.15]), "ResNet": ([50], [77.54]), "hybrid": ([106], [84.90])}
    fig = plot_compute_by_family(ours, paper)
    ax_paper, ax_flops, ax_time = fig.axes[:3]
    assert all(ax.get_xscale() == "log" for ax in (ax_paper, ax_flops, ax_time))
    lines = {ax: {l.get_label(): l for l in ax.get_lines()} for ax in (ax_paper, ax_flops, ax_time)}
    assert list(lines[ax_paper]["ViT"].get_xdata()) == [55, 224]
    assert list(lines[ax_time]["hybrid"].get_xdata()) == [15.0, 30.0]  # wall time on the third panel
    assert lines[ax_paper]["hybrid"].get_color() == lines[ax_flops]["hybrid"].get_color()  # one colour per label
    assert lines[ax_paper]["ViT"].get_color() != lines[ax_paper]["hybrid"].get_color()
    assert len(plot_compute_by_family(ours).axes) == 2  # without the paper's panel
    with pytest.raises(ValueError, match="differ in length"):
        plot_compute_by_family({"ViT": ([1, 2], [1], [0.1, 0.2])})
    with pytest.raises(ValueError, match="tuple of 2 sequences"):
        plot_compute_by_family(ours, {"ViT": ([1], [1], [1])})


def test_compute_by_family_draws_the_papers_models_as_markers_only():
    ours = {"ViT": ([1e12, 2e12], [10.0, 20.0], [30.0, 35.0])}
    fig = plot_compute_by_family(ours, {"ViT": ([55, 224], [80.73, 84.15])})
    paper_line = fig.axes[0].get_lines()[0]
    assert paper_line.get_linestyle() == "None" and paper_line.get_marker() == "s"  # different models
    assert fig.axes[1].get_lines()[0].get_linestyle() == "-"  # one run of ours, epoch by epoch


def test_feature_map_rows_one_figure_one_scale_and_a_colour_bar():
    from minivit.viz import plot_feature_map_rows
    image = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8)
    row = (image, {"conv1": 5 * torch.rand(32, 32), "tokens": torch.arange(64.0).reshape(8, 8)})
    fig = plot_feature_map_rows({"trained": row, "untrained": row})
    axes = fig.axes
    assert len(axes) == 2 * 3 + 1  # two rows of image + 2 maps, and the colour bar
    maps = [ax.get_images()[0] for ax in axes[:6] if ax.get_images() and ax.get_images()[0].get_array().ndim == 2]
    assert len(maps) == 4 and all(im.get_clim() == (0.0, 1.0) for im in maps)  # one shared scale
    np.testing.assert_allclose(maps[1].get_array().max(), 1.0)  # each map divided by its maximum
    assert axes[0].get_ylabel() == "trained" and axes[3].get_ylabel() == "untrained"
    assert len(axes[2].get_lines()) == 7 + 7  # the token grid's cell borders
    with pytest.raises(ValueError, match="same number of maps"):
        plot_feature_map_rows({"a": row, "b": (image, {"conv1": torch.rand(4, 4)})})
    with pytest.raises(ValueError, match="2-D maps"):
        plot_feature_map_rows({"a": (image, {"x": torch.rand(2, 3, 3)})})
