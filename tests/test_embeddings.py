"""[class] token, sine-cosine positions, resize_pos_embed and the similarity map."""

import pytest
import torch

from minivit import pos_embed_similarity, prepend_class_token, resize_pos_embed, sincos_pos_embed_2d


def test_prepend_class_token(gen):
    tokens = torch.randn(4, 9, 8, generator=gen)
    cls = torch.randn(1, 1, 8, generator=gen)
    out = prepend_class_token(tokens, cls)
    assert out.shape == (4, 10, 8)
    assert torch.equal(out[:, 0], cls[0].expand(4, 8)) and torch.equal(out[:, 1:], tokens)
    with pytest.raises(ValueError, match=r"cls_token \(1, 1, D\)"):
        prepend_class_token(tokens, torch.zeros(1, 1, 7))


def test_sincos_shape_and_distinct():
    pe = sincos_pos_embed_2d(32, (3, 5))
    assert pe.shape == (15, 32)
    assert torch.cdist(pe, pe).add(torch.eye(15)).min() > 0  # every position has its own code
    with pytest.raises(ValueError, match="divisible by 4"):
        sincos_pos_embed_2d(30, 4)


def test_resize_identity(gen):
    pe = torch.randn(1, 1 + 7 * 7, 16, generator=gen)
    assert resize_pos_embed(pe, 7, 7) is pe


@pytest.mark.parametrize("new", [(14, 14), (4, 4), (7, 12), (10, 3)])
def test_resize_shapes_and_prefix_kept(gen, new):
    pe = torch.randn(1, 1 + 7 * 7, 16, generator=gen)
    out = resize_pos_embed(pe, (7, 7), new)
    assert out.shape == (1, 1 + new[0] * new[1], 16)
    assert torch.equal(out[:, :1], pe[:, :1])


def test_resize_non_square_source_and_prefix(gen):
    pe = torch.randn(1, 2 + 4 * 6, 8, generator=gen)
    out = resize_pos_embed(pe, (4, 6), (8, 12), num_prefix_tokens=2)
    assert out.shape == (1, 2 + 96, 8)


def test_resize_matches_timm(gen):
    timm_pos = pytest.importorskip("timm.layers").resample_abs_pos_embed
    pe = torch.randn(1, 1 + 7 * 7, 16, generator=gen)
    ours = resize_pos_embed(pe, 7, (14, 10))
    ref = timm_pos(pe, new_size=[14, 10], old_size=[7, 7], num_prefix_tokens=1)
    torch.testing.assert_close(ours, ref)


def test_smooth_stays_smooth():
    """A linear ramp over the grid, resized, is still a ramp: neighbours differ little and evenly."""
    ramp = torch.stack(torch.meshgrid(torch.linspace(0, 1, 7), torch.linspace(0, 1, 7), indexing="ij"), -1)
    pe = torch.cat([torch.zeros(1, 2), ramp.reshape(49, 2)])[None]  # (1, 50, 2)
    out = resize_pos_embed(pe, 7, 14, mode="bilinear", antialias=False)[0, 1:].reshape(14, 14, 2)
    rows = out[..., 0].diff(dim=0)
    assert rows.min() >= -1e-6 and rows.max() < 0.12  # monotone, no jumps (input step 1/6 per 2 cells)
    assert out[..., 0].diff(dim=1).abs().max() < 1e-6  # column code unchanged along a row


def test_resize_errors():
    with pytest.raises(ValueError, match="pos_embed has 50 tokens but old_grid 6x6 with 1 prefix token"):
        resize_pos_embed(torch.zeros(1, 50, 4), 6, 8)
    with pytest.raises(ValueError, match=r"expected pos_embed of shape \(1, tokens, D\)"):
        resize_pos_embed(torch.zeros(50, 4), 7, 8)


def test_similarity_map():
    pe = sincos_pos_embed_2d(64, 5)[None]
    sim = pos_embed_similarity(torch.cat([torch.zeros(1, 1, 64), pe], 1), 5)
    assert sim.shape == (5, 5, 5, 5)
    diag = torch.stack([sim[i, j, i, j] for i in range(5) for j in range(5)])
    torch.testing.assert_close(diag, torch.ones(25))
    assert sim[2, 2, 2, 3] > sim[2, 2, 2, 4] > sim[2, 2, 0, 0]  # nearer patches are more similar


def test_align_corners_reproduces_the_authors_scipy_zoom():
    # vit_jax/checkpoint.py::interpolate_posembed: scipy.ndimage.zoom(posemb_grid, (new/old, new/old, 1), order=1)
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    g = torch.Generator().manual_seed(0)
    pe = torch.randn(1, 1 + 4 * 4, 5, generator=g, dtype=torch.float64)
    ours = resize_pos_embed(pe, 4, 8, mode="bilinear", antialias=False, align_corners=True)
    grid = pe[0, 1:].reshape(4, 4, 5).numpy()
    theirs = torch.from_numpy(scipy_ndimage.zoom(grid, (8 / 4, 8 / 4, 1), order=1)).reshape(1, 64, 5)
    torch.testing.assert_close(ours[:, 1:], theirs, atol=1e-6, rtol=0)  # resize_pos_embed computes in float32
    assert torch.equal(ours[:, :1], pe[:, :1])
    centred = resize_pos_embed(pe, 4, 8, mode="bilinear", antialias=False)  # timm's centre alignment differs
    assert (centred - ours).abs().max() > 0.1


def test_mode_is_checked():
    with pytest.raises(ValueError, match="mode must be"):
        resize_pos_embed(torch.zeros(1, 17, 4), 4, 8, mode="nearest")
