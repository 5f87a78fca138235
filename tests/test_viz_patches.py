"""minivit.viz figures of 01_patches.ipynb: each returns a Figure with the expected axes; bad input is refused."""

import pytest
import torch
from matplotlib.figure import Figure

from minivit import PatchEmbed, patchify
from minivit.viz import plot_patch_filters, plot_patch_grid, plot_patch_sequence, plot_patch_size_cost


def _image(gen, c=3, h=32, w=48):
    return torch.rand(1, c, h, w, generator=gen)  # (B, C, H, W) in [0, 1]


def _images_on(ax):
    return len(ax.get_images())


def test_plot_patch_grid_draws_every_patch(gen):
    seq = patchify(_image(gen), 8)[0]  # (N, P*P*C) = (24, 192)
    fig = plot_patch_grid(seq.reshape(-1, 8, 8, 3), grid_size=(4, 6))
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert _images_on(fig.axes[0]) == 24


def test_plot_patch_grid_grey_and_bad_grid(gen):
    seq = patchify(_image(gen, c=1), 8)[0]  # (24, 64)
    fig = plot_patch_grid(seq.reshape(-1, 8, 8), grid_size=(4, 6))
    assert len(fig.axes) == 1 and _images_on(fig.axes[0]) == 24
    with pytest.raises(ValueError, match="N = 5\\*5 = 25"):
        plot_patch_grid(seq.reshape(-1, 8, 8), grid_size=(5, 5))


def test_plot_patch_sequence_strip_and_matrix(gen):
    seq = patchify(_image(gen), 8)[0]  # (24, 192)
    fig = plot_patch_sequence(seq, patch_size=8, num_show=5)
    image_axes = [ax for ax in fig.axes if _images_on(ax)]
    assert isinstance(fig, Figure) and len(image_axes) == 2  # plus the colour bar's axes
    strip, matrix = image_axes
    assert _images_on(strip) == 5
    assert matrix.get_images()[0].get_array().shape == (24, 192)
    with pytest.raises(ValueError, match="expected a sequence"):
        plot_patch_sequence(seq[:, :100], patch_size=8)


def test_plot_patch_size_cost_two_log_axes():
    ps = [32, 16, 14, 8]
    n = [(224 // p) ** 2 for p in ps]
    att = [(k / 196) ** 2 for k in n]
    fig = plot_patch_size_cost(ps, n, att, flops=[0.25, 1.0, 1.3, 4.4], image_size=224)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert all(ax.get_yscale() == "log" for ax in fig.axes)
    assert len(fig.axes[1].get_lines()) == 2  # attention and FLOPs
    assert len(plot_patch_size_cost(ps, n, att).axes[1].get_lines()) == 1
    with pytest.raises(ValueError, match="same length"):
        plot_patch_size_cost(ps, n[:3], att)


def test_plot_patch_filters_one_tile_per_filter():
    embed = PatchEmbed(32, 4, 3, 10)
    fig = plot_patch_filters(embed.proj.weight, ncols=4)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert _images_on(fig.axes[0]) == 10
    tiles = [im.get_array() for im in fig.axes[0].get_images()]
    assert all(t.shape == (4, 4, 3) and t.min() >= 0 and t.max() <= 1 for t in tiles)
    with pytest.raises(ValueError, match=r"\(D, C, P, P\)"):
        plot_patch_filters(torch.zeros(10, 48))
