"""minivit.viz figures for inspecting a trained ViT (08_inspecting_vit.ipynb)."""

from matplotlib.collections import PathCollection
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from minivit.viz import plot_attention_distance, plot_ratio_maps


def test_attention_distance_one_dot_per_head_and_layer_on_one_axis():
    init = torch.full((3, 2), 50.0)
    trained = torch.tensor([[10.0, 60.0], [30.0, 40.0], [70.0, 80.0]])
    fig = plot_attention_distance({"init": init, "trained": trained}, reference=52.0)
    ax = fig.axes[0]
    dots = [c for c in ax.collections if isinstance(c, PathCollection)]  # the scatters, not the mean bars
    assert [len(c.get_offsets()) for c in dots] == [6, 6]
    np.testing.assert_allclose(np.sort(dots[1].get_offsets()[:, 1]), np.sort(trained.flatten().numpy()))
    assert np.all(np.diff(dots[1].get_offsets()[::2, 0]) > 0.9)  # layers 0, 1, 2 left to right
    assert ax.get_ylim() == (0.0, pytest.approx(80.0 * 1.05))  # one y axis for both models, from 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]  # layers numbered from 0
    assert any(l.get_linestyle() == "--" and l.get_ydata()[0] == 52.0 for l in ax.get_lines())
    assert plot_attention_distance({"a": trained}, max_distance=128).axes[0].get_ylim() == (0.0, 128.0)
    plt.close("all")


def test_attention_distance_minus_uniform_with_standard_errors():
    gen = torch.Generator().manual_seed(0)
    per_image = 60.0 + torch.randn(50, 3, 2, generator=gen)  # (B, L, heads)
    fig = plot_attention_distance({"trained": per_image}, reference=62.0)
    assert len(fig.axes) == 2  # the paper's view, and the differences from uniform attention
    rel = fig.axes[1]
    container = rel.containers[0]  # one errorbar per head and layer
    y = container.lines[0].get_ydata()
    np.testing.assert_allclose(np.sort(y), np.sort((per_image.mean(0) - 62.0).flatten().numpy()), rtol=1e-5)
    se = (per_image.std(0) / 50**0.5).flatten().numpy()
    bars = container.lines[2][0].get_segments()  # the vertical error bars, in the order of the dots
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in bars], 2 * se, rtol=1e-4)
    assert any(l.get_linestyle() == "--" and l.get_ydata()[0] == 0.0 for l in rel.get_lines())  # uniform = 0
    assert len(plot_attention_distance({"a": per_image}).axes) == 1  # no reference: no second panel
    plt.close("all")


def test_attention_distance_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"expected \{label: \(L, heads\)\}"):
        plot_attention_distance({"a": torch.zeros(3)})
    with pytest.raises(ValueError, match=r"expected \{label: \(L, heads\)\}"):
        plot_attention_distance({"a": torch.zeros(1, 3, 2)})  # one image: no standard error
    with pytest.raises(ValueError, match="same number of layers"):
        plot_attention_distance({"a": torch.zeros(3, 2), "b": torch.zeros(4, 2)})


def test_ratio_maps_share_one_log_scale_centred_at_one():
    images = torch.randint(0, 256, (3, 3, 16, 16), dtype=torch.uint8)
    ratios = torch.stack([torch.ones(3, 4, 4), torch.full((3, 4, 4), 0.5)])  # (R=2, B=3, h, w)
    ratios[1, 0, 0, 0] = 3.0
    fig = plot_ratio_maps(images, ratios, titles=["a", "b", "c"], row_labels=["init", "trained"])
    maps = [im for ax in fig.axes[: 3 * 3] for im in ax.get_images()][3:]  # rows 2 and 3: the ratio maps
    assert len(maps) == 6
    norms = {(im.norm.vmin, im.norm.vmax) for im in maps}
    assert len(norms) == 1  # one scale for every panel
    (lo, hi), = norms
    assert (lo, hi) == (pytest.approx(1 / 3), pytest.approx(3.0))  # symmetric in log around 1: max(3, 1/0.5)
    fig = plot_ratio_maps(images, ratios[0], limit=4, box=(0, 0, 2, 2))
    assert fig.axes[3].get_images()[0].norm.vmax == 4
    (outline,) = fig.axes[3].patches  # the box, in patch coordinates around the top-left 2 x 2 patches
    assert (outline.get_x(), outline.get_y(), outline.get_width(), outline.get_height()) == (-0.5, -0.5, 2, 2)
    plt.close("all")


def test_ratio_maps_reject_bad_input():
    images = torch.rand(2, 3, 8, 8)
    with pytest.raises(ValueError, match="same B images"):
        plot_ratio_maps(images, torch.ones(3, 2, 2))
    with pytest.raises(ValueError, match="positive ratios"):
        plot_ratio_maps(images, torch.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="limit must be > 1"):
        plot_ratio_maps(images, torch.ones(2, 2, 2))  # all uniform: pass a limit
    with pytest.raises(ValueError, match="expected 2 titles"):
        plot_ratio_maps(images, torch.ones(2, 2, 2), titles=["a"], limit=2)


def test_distance_share_one_dot_per_head_in_percent_with_the_difference_panel():
    from minivit.viz.inspection import plot_distance_share
    gen = torch.Generator().manual_seed(0)
    a = 0.9 + 0.05 * torch.randn(40, 3, 4, generator=gen)  # (B, L, heads) shares of uniform attention
    b = a + 0.02 + 0.01 * torch.randn(40, 3, 4, generator=gen)
    fig = plot_distance_share({"a": a, "b": b}, difference=b - a, difference_label="b − a")
    assert len(fig.axes) == 2
    ax, rel = fig.axes
    (ca, cb) = ax.containers[:2]
    np.testing.assert_allclose(ca.lines[0].get_ydata(), 100 * a.mean(0).flatten().numpy(), rtol=1e-5)
    se = 100 * (a.std(0) / 40**0.5).flatten().numpy()
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in ca.lines[2][0].get_segments()], 2 * se, rtol=1e-4)
    x = ca.lines[0].get_xdata().reshape(3, 4)
    assert np.all(np.diff(x, axis=1) > 0) and np.all(x[1:, 0] - x[:-1, -1] > 1.5)  # heads side by side, layers apart
    assert any(l.get_linestyle() == "--" and l.get_ydata()[0] == 100.0 for l in ax.get_lines())  # uniform = 100%
    np.testing.assert_allclose(rel.containers[0].lines[0].get_ydata(), 100 * (b - a).mean(0).flatten().numpy(),
                               rtol=1e-4, atol=1e-4)
    assert any(l.get_linestyle() == "--" and l.get_ydata()[0] == 0.0 for l in rel.get_lines())
    assert len(plot_distance_share({"a": a.mean(0)}).axes) == 1  # (L, heads): no difference, one panel
    plt.close("all")


def test_distance_share_rejects_mismatched_shapes():
    from minivit.viz.inspection import plot_distance_share
    with pytest.raises(ValueError, match="same number of heads"):
        plot_distance_share({"a": torch.ones(3, 4), "b": torch.ones(3, 2)})
    with pytest.raises(ValueError, match="same \\(L, heads\\)"):
        plot_distance_share({"a": torch.ones(3, 4)}, difference=torch.ones(3, 2))
    plt.close("all")
