"""Inspection: rollout, mean attention distance, filter PCA, grid summaries, recording maps from a real ViT."""

import math

import pytest
import torch
from einops import rearrange

from minivit import ViT, sincos_pos_embed_2d
from minivit.inspection import (
    attention_rollout,
    class_token_map,
    filter_principal_components,
    mean_attention_distance,
    pos_embed_grid_summary,
    ratio_to_uniform,
    record_attention,
    uniform_attention_distance,
)
from tests.conftest import TINY, randomize_, tiny_model


def softmax_maps(gen, b=2, layers=3, heads=4, t=7):
    return torch.randn(b, layers, heads, t, t, generator=gen).mul(3).softmax(dim=-1)  # (B, L, heads, T, T)


def patch_centres(gh, gw, p):
    return torch.tensor([[(i + 0.5) * p, (j + 0.5) * p] for i in range(gh) for j in range(gw)])  # (N, 2)


# ---- attention rollout ----


def test_identity_attention_rolls_out_to_identity():
    eye = torch.eye(7).expand(2, 3, 4, 7, 7)
    torch.testing.assert_close(attention_rollout(eye), torch.eye(7).expand(2, 7, 7))


def test_rollout_rows_sum_to_one(gen):
    joint = attention_rollout(softmax_maps(gen))
    assert joint.shape == (2, 7, 7) and (joint >= 0).all()
    torch.testing.assert_close(joint.sum(-1), torch.ones(2, 7))


def test_rollout_hand_computed_two_layers():
    layer1 = torch.tensor([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]])  # 2 heads, mean [[.5, .5], [.5, .5]]
    layer2 = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])  # mean [[1, 0], [.5, .5]]
    # (mean + I) row-normalised: A1 = [[.75, .25], [.25, .75]], A2 = [[1, 0], [.25, .75]]; joint = A2 @ A1
    expected = torch.tensor([[0.75, 0.25], [0.375, 0.625]])
    joint = attention_rollout([layer1[None], layer2[None]])  # list of L maps (B, heads, T, T)
    torch.testing.assert_close(joint[0], expected)
    reversed_order = attention_rollout([layer2[None], layer1[None]])[0]  # A1 @ A2 would be [[.8125, .1875], ...]
    torch.testing.assert_close(reversed_order, torch.tensor([[0.8125, 0.1875], [0.4375, 0.5625]]))


def test_rollout_normalises_each_row_by_its_own_sum():
    """jacobgil/vit-explain#16: `a / a.sum(dim=-1)` without keepdim divides *columns* by the row sums."""
    maps = torch.tensor([[3.0, 1.0], [0.0, 1.0]])[None, None, None]  # (1, 1, 1, 2, 2), rows sum to 4 and 1
    # + I -> [[4, 1], [0, 2]] -> rows / (5, 2); the wrong-axis bug would give [[0.8, 0.5], [0, 1]]
    torch.testing.assert_close(attention_rollout(maps)[0], torch.tensor([[0.8, 0.2], [0.0, 1.0]]))
    torch.testing.assert_close(attention_rollout(maps, add_residual=False)[0], torch.tensor([[0.75, 0.25], [0.0, 1.0]]))


def test_rollout_list_equals_tensor(gen):
    maps = softmax_maps(gen)
    torch.testing.assert_close(attention_rollout(list(maps.unbind(1))), attention_rollout(maps))


def test_class_token_map_layout():
    rollout = torch.zeros(2, 1 + 3 * 5, 1 + 3 * 5)
    rollout[:, 0, 1:] = torch.arange(15.0)
    grid = class_token_map(rollout, (3, 5))
    assert grid.shape == (2, 3, 5)
    assert grid[0, 1, 0] == 5 and grid[0, 2, 4] == 14  # row-major like patchify


def test_rollout_and_map_errors():
    with pytest.raises(ValueError, match=r"expected attention maps \(B, L, heads, T, T\)"):
        attention_rollout(torch.ones(2, 4, 5, 5))
    with pytest.raises(ValueError, match="non-empty list of L attention maps"):
        attention_rollout([])
    with pytest.raises(ValueError, match="of one shape"):
        attention_rollout([torch.ones(1, 2, 5, 5), torch.ones(1, 2, 6, 6)])
    with pytest.raises(ValueError, match="non-negative"):
        attention_rollout(-torch.ones(1, 1, 1, 3, 3))
    with pytest.raises(ValueError, match=r"T=10 tokens does not match a 2x2 grid with 1 prefix token\(s\) \(expected T=5\)"):
        class_token_map(torch.ones(1, 10, 10), 2)


# ---- mean attention distance ----


def test_identity_attention_distance_is_zero():
    eye = torch.eye(1 + 3 * 4).expand(2, 3, 2, 13, 13)
    torch.testing.assert_close(mean_attention_distance(eye, (3, 4), 16), torch.zeros(3, 2))


def test_uniform_attention_gives_mean_pairwise_distance():
    gh, gw, p = 3, 5, 4
    t = 1 + gh * gw
    uniform = torch.full((2, 2, 3, t, t), 1.0 / t)
    expected = torch.cdist(patch_centres(gh, gw, p), patch_centres(gh, gw, p)).mean()  # over all (query, key) pairs
    torch.testing.assert_close(mean_attention_distance(uniform, (gh, gw), p), expected.expand(2, 3))
    # not renormalised: the 1/T on [class] counts as distance 0, so the mean shrinks by N / T
    torch.testing.assert_close(mean_attention_distance(uniform, (gh, gw), p, renormalize=False),
                               (expected * (t - 1) / t).expand(2, 3))


def test_uniform_attention_distance_is_the_mean_centre_distance():
    gh, gw, p = 3, 5, 4
    expected = torch.cdist(patch_centres(gh, gw, p), patch_centres(gh, gw, p)).mean().item()
    assert uniform_attention_distance((gh, gw), p) == pytest.approx(expected, rel=1e-6)
    assert uniform_attention_distance(8, 16) == pytest.approx(4 * uniform_attention_distance(8, 4), rel=1e-9)
    assert uniform_attention_distance(1, 16) == 0.0  # one patch: attention can only stay home
    t = 1 + gh * gw
    flat = torch.full((1, 1, 1, t, t), 1.0 / t)
    assert mean_attention_distance(flat, (gh, gw), p).item() == pytest.approx(uniform_attention_distance((gh, gw), p),
                                                                             rel=1e-5)
    with pytest.raises(ValueError, match="patch_size must be positive"):
        uniform_attention_distance(8, 0)


def test_distance_per_image_averages_to_the_distance(gen):
    maps = torch.rand(5, 2, 3, 1 + 2 * 3, 1 + 2 * 3, generator=gen).softmax(-1)  # (B, L, heads, T, T)
    each = mean_attention_distance(maps, (2, 3), 8, per_image=True)  # (B, L, heads)
    assert each.shape == (5, 2, 3)
    torch.testing.assert_close(each.mean(0), mean_attention_distance(maps, (2, 3), 8))
    for i in range(5):
        torch.testing.assert_close(each[i], mean_attention_distance(maps[i : i + 1], (2, 3), 8))


def test_right_neighbour_attention_is_one_patch():
    gh, gw, p = 3, 4, 8
    t = 1 + gh * gw
    maps = torch.zeros(1, 1, 1, t, t)
    maps[..., 0, 0] = 1.0
    for q in range(gh * gw):
        key = q + 1 if q % gw < gw - 1 else q - 1  # right neighbour (left one in the last column)
        maps[..., 1 + q, 1 + key] = 1.0
    torch.testing.assert_close(mean_attention_distance(maps, (gh, gw), p), torch.tensor([[float(p)]]))
    half = maps.clone()
    half[..., 1:, 0] = 1.0  # each patch query also puts weight on [class]: rows (0.5 [class], 0.5 neighbour)
    half[..., 1:, :] /= 2
    torch.testing.assert_close(mean_attention_distance(half, (gh, gw), p), torch.tensor([[float(p)]]))
    torch.testing.assert_close(mean_attention_distance(half, (gh, gw), p, renormalize=False), torch.tensor([[p / 2]]))


def test_distance_matches_brute_force(gen):
    gh, gw, p = 2, 3, 16
    maps = softmax_maps(gen, b=3, layers=2, heads=3, t=1 + gh * gw)
    expected = torch.zeros(2, 3, dtype=torch.float64)
    for b in range(3):
        for layer in range(2):
            for h in range(3):
                total = 0.0
                for q in range(gh * gw):
                    w = maps[b, layer, h, 1 + q, 1:].double()
                    w = w / w.sum()
                    qi, qj = divmod(q, gw)
                    total += sum(w[k].item() * p * math.hypot(qi - k // gw, qj - k % gw) for k in range(gh * gw))
                expected[layer, h] += total / (gh * gw) / 3
    out = mean_attention_distance(list(maps.unbind(1)), (gh, gw), p)
    assert out.shape == (2, 3)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4)


def test_distance_errors():
    with pytest.raises(ValueError, match="does not match a 4x4 grid"):
        mean_attention_distance(torch.ones(1, 1, 1, 10, 10), 4, 8)
    with pytest.raises(ValueError, match="patch_size must be positive"):
        mean_attention_distance(torch.ones(1, 1, 1, 5, 5), 2, 0)
    with pytest.raises(ValueError, match="floating-point"):
        mean_attention_distance(torch.ones(1, 1, 1, 5, 5, dtype=torch.long), 2, 4)


# ---- maps from a real ViT (fused attention by default) ----


def written_out_maps(model, x):
    """Every layer's softmax(q kᵀ / √Dh), computed here from the block weights, not by the Attention module."""
    z = model.embed(x)  # (B, T, D)
    maps = []
    for block in model.blocks:
        qkv = block.norm1(z) @ block.attn.qkv.weight.T + block.attn.qkv.bias  # (B, T, 3D)
        q, k, _ = rearrange(qkv, "b t (three h dh) -> three b h t dh", three=3, h=block.attn.heads)
        maps.append(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1))  # (B, heads, T, T)
        z = block(z)  # the block's own (fused) forward
    return maps


def test_attention_maps_of_a_fused_vit(gen):
    model = randomize_(tiny_model(depth=3), seed=1).eval()
    assert all(block.attn.fused for block in model.blocks)  # the default fast path
    x = torch.randn(2, 3, 8, 8, generator=gen)
    maps = model.attention_maps(x)
    assert len(maps) == 3 and all(m.shape == (2, TINY.heads, 5, 5) and m.abs().sum() > 0 for m in maps)
    with torch.no_grad():
        expected = written_out_maps(model, x)
    for got, want in zip(maps, expected):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


def test_record_attention_in_batches(gen):
    model = randomize_(tiny_model(depth=2, dropout=0.1), seed=2).train()
    images = torch.randint(0, 256, (7, 3, 8, 8), generator=gen, dtype=torch.uint8)
    scale = lambda x: x.float() / 255  # noqa: E731
    maps = record_attention(model, images, batch_size=3, preprocess=scale)
    assert maps.shape == (7, 2, TINY.heads, 5, 5) and maps.dtype == torch.float32
    assert model.training  # mode restored
    model.eval()
    torch.testing.assert_close(maps, torch.stack(model.attention_maps(scale(images)), dim=1))
    rollout = attention_rollout(maps)
    assert class_token_map(rollout, TINY.grid_size).shape == (7, 2, 2)
    assert mean_attention_distance(maps, TINY.grid_size, TINY.patch_size).shape == (2, TINY.heads)
    with pytest.raises(ValueError, match="more than max_bytes"):
        record_attention(model, images, preprocess=scale, max_bytes=1000)
    with pytest.raises(ValueError, match="attention_maps"):
        record_attention(torch.nn.Linear(2, 2), images)


# ---- patch-embedding filter PCA ----


def test_pca_orthonormal_sorted_and_matches_covariance_eigenvalues(gen):
    weight = torch.randn(40, 3, 4, 4, generator=gen)
    comps, ratios = filter_principal_components(weight, 10)
    assert comps.shape == (10, 3, 4, 4) and ratios.shape == (10,)
    flat = comps.reshape(10, -1)
    torch.testing.assert_close(flat @ flat.T, torch.eye(10), atol=1e-5, rtol=0)
    assert (ratios.diff() <= 0).all() and ratios.sum() <= 1 + 1e-6
    x = weight.reshape(40, -1).double()
    eigenvalues = torch.linalg.eigvalsh(torch.cov(x.T)).flip(0)  # descending
    torch.testing.assert_close(ratios.double(), eigenvalues[:10] / eigenvalues.sum(), rtol=1e-4, atol=1e-6)
    peak = flat.gather(1, flat.abs().argmax(1, keepdim=True))
    assert (peak > 0).all()  # signs fixed: the largest entry of each component is positive


def test_pca_recovers_a_planted_low_rank_filter_bank(gen):
    c, p, d = 3, 4, 500
    directions = torch.linalg.qr(torch.randn(c * p * p, 3, generator=gen)).Q.T  # (3, C*P*P), orthonormal
    raw = torch.randn(d, 3, generator=gen)
    # centred, exactly uncorrelated coefficients with standard deviations 6 : 3 : 1 (variances 36 : 9 : 1)
    coefficients = torch.linalg.qr(raw - raw.mean(0)).Q * torch.tensor([6.0, 3.0, 1.0]) * d**0.5  # (D, 3)
    mean_filter = torch.randn(c * p * p, generator=gen)
    weight = (mean_filter + coefficients @ directions).reshape(d, c, p, p)
    comps, ratios = filter_principal_components(weight, 5)
    overlap = comps[:3].reshape(3, -1) @ directions.T  # (3, 3): ±identity if each direction is recovered in order
    torch.testing.assert_close(overlap.abs(), torch.eye(3), atol=1e-4, rtol=0)
    torch.testing.assert_close(ratios[:3], torch.tensor([36.0, 9.0, 1.0]) / 46, atol=1e-5, rtol=0)
    assert ratios[3:].max() < 1e-8


def test_pca_errors(gen):
    with pytest.raises(ValueError, match=r"expected patch-embedding filters \(D, C, P, P\)"):
        filter_principal_components(torch.zeros(4, 48), 2)
    with pytest.raises(ValueError, match=r"k must be an int in \[1, min\(D, C\*P\*P\)\] = \[1, 4\]"):
        filter_principal_components(torch.randn(4, 3, 2, 2, generator=gen), 5)
    with pytest.raises(ValueError, match="all filters are equal"):
        filter_principal_components(torch.ones(4, 3, 2, 2), 2)


# ---- position-embedding similarity summary ----


def test_grid_summary_on_a_known_embedding():
    gh, gw = 3, 5
    rows = torch.arange(gh * gw) // gw
    pe = torch.cat([torch.zeros(1, gh), torch.eye(gh)[rows]])[None]  # (1, 1+N, 3): similarity 1 iff same row
    s = pos_embed_grid_summary(pe, (gh, gw))
    horizontal, vertical = 2 * gh * (gw - 1), 2 * gw * (gh - 1)  # ordered neighbour pairs
    assert s["neighbour"] == pytest.approx(horizontal / (horizontal + vertical))
    assert s["same_row_col"] == pytest.approx((gw - 1) / (gw - 1 + gh - 1))
    assert s["other"] == pytest.approx(0.0)  # neither same row nor same column: another row
    # pairs at grid distance >= 4 (ordered): same row 4 columns apart 6 (similarity 1), rows 1 apart and
    # 4 columns 8, rows 2 apart and 4 columns 4 (similarity 0)
    assert s["far"] == pytest.approx(6 / 18)
    assert s["corr_distance"] < 0


def test_grid_summary_of_sincos_and_errors():
    s = pos_embed_grid_summary(sincos_pos_embed_2d(64, 8)[None], 8, num_prefix_tokens=0)
    assert s["neighbour"] > s["far"] and s["same_row_col"] > s["other"] and s["corr_distance"] < -0.5
    with pytest.raises(ValueError, match=r"a 2x2 grid has no pairs for \['far'\]"):
        pos_embed_grid_summary(torch.randn(1, 5, 8), 2)


def _mirrored_embedding(gh, gw, d=16, seed=0):
    """(1, 1+N, D): an embedding where (r, c) and (r, gw-1-c) share one random vector, all else independent."""
    g = torch.Generator().manual_seed(seed)
    per_half = torch.randn(gh, (gw + 1) // 2, d, generator=g)  # (h, ceil(w/2), D)
    cols = torch.tensor([min(c, gw - 1 - c) for c in range(gw)])
    grid = per_half[:, cols]  # (h, w, D): mirror columns equal
    return torch.cat([torch.zeros(1, d), grid.reshape(gh * gw, d)])[None]


def test_grid_summary_mirror_groups_by_brute_force():
    gh, gw = 5, 8
    pe = _mirrored_embedding(gh, gw)
    s = pos_embed_grid_summary(pe, (gh, gw))
    assert s["mirror"] == pytest.approx(1.0)  # mirror columns are copies
    assert abs(s["mirror_control"]) < 0.3 and abs(s["mirror_vertical"]) < 0.3  # independent random vectors
    # brute force on a random embedding: the three groups by their definitions
    pe = torch.randn(1, 1 + gh * gw, 16, generator=torch.Generator().manual_seed(1))
    s = pos_embed_grid_summary(pe, (gh, gw))
    v = pe[0, 1:]
    cos = lambda i, j: torch.nn.functional.cosine_similarity(v[i], v[j], dim=0).item()
    at = lambda r, c: r * gw + c
    mirror = [cos(at(r, c), at(r, gw - 1 - c)) for r in range(gh) for c in range(gw) if c != gw - 1 - c]
    vertical = [cos(at(r, c), at(gh - 1 - r, c)) for r in range(gh) for c in range(gw) if r != gh - 1 - r]
    assert s["mirror"] == pytest.approx(sum(mirror) / len(mirror), abs=1e-5)
    assert s["mirror_vertical"] == pytest.approx(sum(vertical) / len(vertical), abs=1e-5)
    by_distance, weights = {}, {}
    for c in range(gw):  # mirror distances and their counts (ordered pairs)
        if c != gw - 1 - c:
            d = abs(gw - 1 - 2 * c)
            weights[d] = weights.get(d, 0) + gh
    for d in weights:
        ctrl = [cos(at(r, a), at(r, b)) for r in range(gh) for a in range(gw) for b in range(gw)
                if abs(a - b) == d and a + b != gw - 1]
        if ctrl:
            by_distance[d] = sum(ctrl) / len(ctrl)
    assert gw - 1 not in by_distance  # the corner distance has only the mirror pair
    expected = sum(weights[d] * by_distance[d] for d in by_distance) / sum(weights[d] for d in by_distance)
    assert s["mirror_control"] == pytest.approx(expected, abs=1e-5)


def test_grid_summary_mirror_control_is_nan_on_narrow_grids():
    s = pos_embed_grid_summary(torch.randn(1, 1 + 6, 8), (2, 3), far=1.0)  # 3 wide: no same-row control
    assert not math.isnan(s["mirror"]) and not math.isnan(s["mirror_vertical"]) and math.isnan(s["mirror_control"])
    s = pos_embed_grid_summary(torch.randn(1, 1 + 8, 8), (2, 4), far=1.0)  # 4 wide: (0, 1) vs the mirror (0, 3)
    assert not math.isnan(s["mirror_control"])


def test_ratio_to_uniform():
    m = torch.tensor([[[1.0, 3.0], [0.0, 0.0]], [[0.25, 0.25], [0.25, 0.25]]])  # (2, 2, 2)
    r = ratio_to_uniform(m)
    torch.testing.assert_close(r, torch.tensor([[[1.0, 3.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]]))
    torch.testing.assert_close(r.mean(dim=(1, 2)), torch.ones(2))
    with pytest.raises(ValueError, match=r"expected maps over the patch grid \(B, h, w\)"):
        ratio_to_uniform(torch.ones(4, 4))
    with pytest.raises(ValueError, match="non-negative"):
        ratio_to_uniform(-torch.ones(1, 2, 2))
    with pytest.raises(ValueError, match="zero everywhere"):
        ratio_to_uniform(torch.zeros(1, 2, 2))


def test_model_pos_embed_and_filters_work_end_to_end():
    model = ViT(TINY)
    assert set(pos_embed_grid_summary(model.pos_embed, (2, 2), far=1.0)) == {
        "neighbour", "far", "same_row_col", "other", "corr_distance", "mirror", "mirror_control", "mirror_vertical"}
    comps, ratios = filter_principal_components(model.patch_embed.proj.weight, 4)
    assert comps.shape == (4, 3, 4, 4) and not comps.requires_grad
