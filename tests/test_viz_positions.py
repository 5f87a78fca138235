"""minivit.viz figures of 02_class_token_and_positions.ipynb: they draw exactly what they are given; bad input is refused."""

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from minivit import pos_embed_similarity, sincos_pos_embed_2d
from minivit.viz import plot_grid_maps, plot_pos_embed_similarity


def _similarity(rows=3, cols=4, dim=16):
    pe = torch.cat([torch.zeros(1, dim), sincos_pos_embed_2d(dim, (rows, cols))])[None]  # (1, 1+N, D)
    return pos_embed_similarity(pe, (rows, cols))  # (rows, cols, rows, cols)


def test_similarity_figure_has_one_tile_per_patch_showing_its_map():
    sim = _similarity(3, 4)
    fig = plot_pos_embed_similarity(sim, title="t")
    assert isinstance(fig, Figure)
    tiles = [ax for ax in fig.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    assert len(tiles) == 3 * 4
    for k, ax in enumerate(tiles):  # row-major: tile k is patch (k // cols, k % cols)
        i, j = divmod(k, 4)
        np.testing.assert_allclose(ax.get_images()[0].get_array(), sim[i, j].numpy())
        assert ax.get_images()[0].get_clim() == (-1.0, 1.0)
    assert any(ax.get_label() == "<colorbar>" for ax in fig.axes)
    assert fig._suptitle.get_text() == "t"


def test_similarity_figure_autoscales_with_none():
    sim = _similarity(2, 2) * 0.5
    fig = plot_pos_embed_similarity(sim, vmin=None, vmax=None)
    clim = fig.axes[0].get_images()[0].get_clim()
    assert clim == pytest.approx((float(sim.min()), float(sim.max())))


def test_similarity_figure_masks_self_and_labels_from_zero():
    sim = _similarity(3, 4)
    fig = plot_pos_embed_similarity(sim, vmin=None, vmax=None, mask_self=True)
    tiles = [ax for ax in fig.axes if ax.get_images() and ax.get_label() != "<colorbar>"]
    tile = np.ma.filled(tiles[6].get_images()[0].get_array().astype(float), np.nan)  # patch (1, 2)
    assert np.isnan(tile[1, 2]) and np.isnan(tile).sum() == 1  # only its own similarity is blank
    off = sim.clone()
    for i in range(3):
        for j in range(4):
            off[i, j, i, j] = float("nan")
    clim = tiles[0].get_images()[0].get_clim()  # the scale is the off-diagonal range, not up to the self 1.0
    assert clim == pytest.approx((np.nanmin(off.numpy()), np.nanmax(off.numpy())))
    assert clim[1] < 1.0
    assert tiles[0].get_ylabel() == "0" and tiles[-1].get_xlabel() == "3"  # 0-based patch indices


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 2, 3, 1), (2, 3, 3, 2)])
def test_similarity_figure_refuses_wrong_shapes(shape):
    with pytest.raises(ValueError, match=r"\(rows, cols, rows, cols\)"):
        plot_pos_embed_similarity(torch.zeros(shape))


def test_grid_maps_draw_each_map_with_its_title(gen):
    maps = [torch.randn(7, 7, generator=gen), torch.randn(14, 14, generator=gen)]
    fig = plot_grid_maps(maps, titles=["7 x 7", "14 x 14"], suptitle="s")
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert [ax.get_title() for ax in panels] == ["7 x 7", "14 x 14"]
    for ax, m in zip(panels, maps):
        np.testing.assert_allclose(ax.get_images()[0].get_array(), m.numpy())
    assert sum(ax.get_label() == "<colorbar>" for ax in fig.axes) == 2
    lo, hi = min(m.min().item() for m in maps), max(m.max().item() for m in maps)
    assert all(ax.get_images()[0].get_clim() == pytest.approx((lo, hi)) for ax in panels)  # one shared scale
    own = plot_grid_maps(maps, shared_scale=False)
    clims = [ax.get_images()[0].get_clim() for ax in own.axes if ax.get_label() != "<colorbar>"]
    assert clims[0] == pytest.approx((maps[0].min().item(), maps[0].max().item())) and clims[0] != clims[1]


def test_grid_maps_refuse_bad_input():
    with pytest.raises(ValueError, match="2-D maps"):
        plot_grid_maps([torch.zeros(2, 2, 2)])
    with pytest.raises(ValueError, match="2-D maps"):
        plot_grid_maps([])
    with pytest.raises(ValueError, match="titles"):
        plot_grid_maps([torch.zeros(2, 2)], titles=["a", "b"])


def test_grid_maps_tick_whole_patches_only(gen):
    fig = plot_grid_maps([torch.randn(8, 12, generator=gen)])
    fig.canvas.draw()
    panel = next(ax for ax in fig.axes if ax.get_label() != "<colorbar>")
    for ticks in (panel.get_xticks(), panel.get_yticks()):
        assert len(ticks) > 1 and all(float(t).is_integer() for t in ticks)  # no tick at 2.5 on a 12-wide grid
