"""minivit.viz figures of 03_transformer_encoder.ipynb: each returns a Figure with the expected axes; bad input is refused."""

import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from minivit.viz import plot_attention_matrix, plot_attention_on_images, plot_predictions


def _image_axes(fig):
    return [ax for ax in fig.axes if ax.get_images()]


def test_plot_attention_matrix_one_axes_per_head(gen):
    weights = torch.rand(3, 5, 5, generator=gen).softmax(dim=-1)  # (heads, N, N)
    fig = plot_attention_matrix(weights, token_labels=["cls", "1", "2", "3", "4"], ncols=2, title="t")
    axes = _image_axes(fig)
    assert isinstance(fig, Figure) and len(axes) == 3  # the 4th grid cell is empty, plus a colour bar
    assert [ax.get_title() for ax in axes] == ["head 1", "head 2", "head 3"]
    assert axes[0].get_images()[0].get_array().shape == (5, 5)
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["cls", "1", "2", "3", "4"]


def test_plot_attention_matrix_single_matrix_and_titles(gen):
    weights = torch.rand(4, 4, generator=gen)  # (N, N)
    fig = plot_attention_matrix(weights)
    assert len(_image_axes(fig)) == 1 and _image_axes(fig)[0].get_title() == "A"
    fig = plot_attention_matrix(weights[None].repeat(2, 1, 1), head_titles=["a", "b"])
    assert [ax.get_title() for ax in _image_axes(fig)] == ["a", "b"]


def test_plot_attention_matrix_bad_input(gen):
    with pytest.raises(ValueError, match="expected attention weights"):
        plot_attention_matrix(torch.rand(2, 3, 4, generator=gen))
    with pytest.raises(ValueError, match="expected 3 token_labels"):
        plot_attention_matrix(torch.rand(3, 3, generator=gen), token_labels=["a", "b"])
    with pytest.raises(ValueError, match="expected 2 head_titles"):
        plot_attention_matrix(torch.rand(2, 3, 3, generator=gen), head_titles=["a"])


def test_plot_predictions_titles_and_colours(gen):
    images = torch.randint(0, 256, (5, 1, 8, 8), dtype=torch.uint8, generator=gen)  # (B, C, H, W)
    labels, preds = torch.tensor([0, 1, 2, 0, 1]), torch.tensor([0, 2, 2, 0, 0])
    fig = plot_predictions(images, labels, preds, ["zero", "one", "two"], ncols=3)
    axes = _image_axes(fig)
    assert isinstance(fig, Figure) and len(axes) == 5 and len(fig.axes) == 6  # 2 x 3 grid, last cell empty
    titles = [ax.title for ax in axes]
    assert [t.get_text() for t in titles] == ["zero", "two\n(true: one)", "two", "zero", "zero\n(true: one)"]
    red, green = to_rgba("tab:red"), to_rgba("tab:green")
    assert [to_rgba(t.get_color()) for t in titles] == [green, red, green, green, red]
    assert axes[0].get_images()[0].get_array().shape == (8, 8)  # grey: channel dropped
    assert axes[0].get_images()[0].get_clim() == (0.0, 1.0)  # uint8 scaled to [0, 1] for imshow
    assert axes[0].get_images()[0].get_array().max() <= 1.0


def test_plot_predictions_rgb_float(gen):
    images = torch.rand(2, 3, 6, 6, generator=gen)  # float in [0, 1]
    fig = plot_predictions(images, torch.tensor([1, 0]), torch.tensor([1, 0]), ["a", "b"])
    assert [ax.get_images()[0].get_array().shape for ax in _image_axes(fig)] == [(6, 6, 3)] * 2
    assert _image_axes(fig)[0].get_images()[0].get_clim() == (0, 1)


def test_plot_predictions_bad_input(gen):
    images = torch.rand(2, 1, 4, 4, generator=gen)
    with pytest.raises(ValueError, match="B labels and predictions"):
        plot_predictions(images, torch.tensor([0]), torch.tensor([0, 1]), ["a", "b"])
    with pytest.raises(ValueError, match="class indices in \\[0, 2\\)"):
        plot_predictions(images, torch.tensor([0, 2]), torch.tensor([0, 1]), ["a", "b"])


def test_attention_on_images_one_row_per_map_set_and_one_scale(gen):
    images = torch.randint(0, 256, (3, 1, 28, 28), dtype=torch.uint8, generator=gen)
    maps = torch.rand(2, 3, 4, 4, generator=gen)  # 2 rows of maps (e.g. before / after) for 3 images
    fig = plot_attention_on_images(images, maps, titles=["a", "b", "c"], row_labels=["init", "trained"])
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 3 * 3 and [ax.get_title() for ax in panels[:3]] == ["a", "b", "c"]
    assert panels[3].get_ylabel() == "init" and panels[6].get_ylabel() == "trained"
    overlay = panels[4].get_images()[1]  # row "init", image "b": the map drawn on top of the grey image
    assert overlay.get_array().shape == (4, 4) and torch.allclose(torch.tensor(overlay.get_array()), maps[0, 1])
    assert overlay.get_extent() == [-0.5, 27.5, 27.5, -0.5]  # stretched over the whole 28 x 28 image
    clims = {ax.get_images()[1].get_clim() for ax in panels[3:]}
    assert clims == {(0.0, maps.max().item())}  # one colour scale for all maps
    assert sum(ax.get_label() == "<colorbar>" for ax in fig.axes) == 1


def test_attention_on_images_refuses_mismatched_inputs(gen):
    with pytest.raises(ValueError, match=r"same B images"):
        plot_attention_on_images(torch.rand(3, 3, 8, 8), torch.rand(2, 2, 2))
    with pytest.raises(ValueError, match="expected 2 titles"):
        plot_attention_on_images(torch.rand(2, 3, 8, 8), torch.rand(2, 2, 2), titles=["x"])
