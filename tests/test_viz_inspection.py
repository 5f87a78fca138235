"""minivit.viz figures for inspecting a trained ViT (08_inspecting_vit.ipynb)."""

from matplotlib.collections import PathCollection
import numpy as np
import pytest
import torch

from minivit.viz import plot_attention_distance


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


def test_attention_distance_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"expected \{label: \(L, heads\)\}"):
        plot_attention_distance({"a": torch.zeros(3)})
    with pytest.raises(ValueError, match="same number of layers"):
        plot_attention_distance({"a": torch.zeros(3, 2), "b": torch.zeros(4, 2)})
