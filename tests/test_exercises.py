"""The exercise checks: the reference solution passes, typical wrong answers fail with a useful message,
nothing a student writes makes a check raise, and an answer that only calls the package's own solution is
refused."""

import math
import sys
from types import FunctionType, ModuleType

import pytest
import torch
import torch.nn.functional as F
from einops import rearrange

import minivit
from minivit import attention_with_weights, patchify, resize_pos_embed
from minivit.exercises import (CheckResult, _Shortcut, _without, check_attention, check_head_parameters,
                               check_patchify, check_resize_pos_embed)


def _stand_ins_left(fn=None) -> list[str]:
    """Which functions of the loaded minivit and torch modules still run a refusing stand-in code (see
    `minivit.grading.without`): none, once a guard's block is left."""
    return [f"{m.__name__}.{k}" for name, m in list(sys.modules.items())
            if isinstance(m, ModuleType) and name.split(".")[0] in ("minivit", "torch")
            for k, v in list(vars(m).items())
            if type(v) is FunctionType and v.__code__.co_filename.startswith("<refused")]


def _refused(check, fn, avoid: str) -> CheckResult:
    """`check(fn)` for an answer that calls `avoid` (or is it): every case fails with "solve it without <avoid>:"
    and a hint, and afterwards every function is the original again."""
    r = check(fn, verbose=False)
    assert r.passed == 0 and all(f"solve it without {avoid}: " in f for f in r.failures), r.failures
    assert not _stand_ins_left(fn)
    return r


def patchify_by_hand(x, p):  # reshape and permute only, as 01's exercise asks
    b, c, h, w = x.shape
    grid = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)  # (B, h, w, P1, P2, C)
    return grid.reshape(b, (h // p) * (w // p), p * p * c)  # (B, N, P*P*C)


def resize_by_hand(pe, old, new):  # 02's exercise: the [class] entry kept, the grid resized with F.interpolate
    d = pe.shape[-1]
    grid = pe[:, 1:].reshape(1, *old, d).permute(0, 3, 1, 2)  # (1, D, h, w)
    grid = F.interpolate(grid, size=new, mode="bicubic", align_corners=False, antialias=True)
    return torch.cat([pe[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, d)], dim=1)


def attention_by_hand(q, k, v):  # 03's exercise
    w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    return w @ v, w


def test_reference_solutions_pass(capsys):
    assert check_patchify(patchify_by_hand, reshape_only=True)
    assert check_resize_pos_embed(resize_by_hand)
    assert check_attention(attention_by_hand)
    assert check_head_parameters((1000 - 10) * (768 + 1))
    out = capsys.readouterr().out
    assert "patchify: all correct" in out and "✗" not in out


def test_01_to_03_refuse_the_package_and_pytorch_solutions():
    """00-03 review, round 2, M1: an answer that is one call to the package (or PyTorch's fused attention) is
    refused, not passed; with reshape_only=True ("without einops", 01's text) einops and unfold are refused too."""
    _refused(check_patchify, patchify, "minivit.patching.patchify")
    _refused(check_patchify, minivit.patchify, "minivit.patching.patchify")
    with_einops = lambda x, p: rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=p, p2=p)
    assert check_patchify(with_einops, verbose=False)  # allowed unless the exercise says otherwise
    r = check_patchify(with_einops, verbose=False, reshape_only=True)
    assert r.passed == 0 and all("solve it without einops" in f and "reshape and permute" in f for f in r.failures)
    unfolded = lambda x, p: F.unfold(x, p, stride=p).transpose(1, 2)
    assert check_patchify(unfolded, verbose=False, reshape_only=True).passed == 0
    _refused(check_resize_pos_embed, resize_pos_embed, "minivit.embeddings.resize_pos_embed")
    _refused(check_attention, attention_with_weights, "minivit.attention.attention_with_weights")
    fused = lambda q, k, v: (F.scaled_dot_product_attention(q, k, v), attention_by_hand(q, k, v)[1])
    r = check_attention(fused, verbose=False)
    assert r.passed == 0 and all("scaled_dot_product_attention" in f for f in r.failures), r.failures
    assert not _stand_ins_left()


def test_wrong_patchify_orders_fail():
    channel_first = lambda x, p: rearrange(x, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=p, p2=p)
    column_major = lambda x, p: rearrange(x, "b c (h p1) (w p2) -> b (w h) (p1 p2 c)", p1=p, p2=p)
    r = check_patchify(channel_first, verbose=False)
    assert not r and r.passed == 2  # with C = 1 or P = 1 the two orders coincide
    assert "wrong values" in r.failures[0]
    r = check_patchify(column_major, verbose=False)
    assert not r and any("non-square" in f for f in r.failures)


def test_stub_and_crash_are_reported_not_raised(capsys):
    r = check_patchify(lambda x, p: None)
    assert r == CheckResult("patchify", 0, 4, r.failures) and not r
    assert "returned NoneType, expected a tensor of shape (2, 4, 48)" in r.failures[0]
    r = check_attention(lambda q, k, v: 1 / 0, verbose=False)
    assert r.passed == 0 and "raised ZeroDivisionError" in r.failures[0]
    assert "patchify: 4 of 4 wrong" in capsys.readouterr().out


def test_wrong_attention_answers_fail():
    def no_scale(q, k, v):
        w = (q @ k.transpose(-2, -1)).softmax(-1)
        return w @ v, w

    def softmax_over_queries(q, k, v):
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-2)
        return w @ v, w

    def output_only(q, k, v):
        return attention_by_hand(q, k, v)[0]
    for fn in (no_scale, softmax_over_queries):
        r = check_attention(fn, verbose=False)
        assert r.passed == 0 and "weights has the right shape but wrong values" in r.failures[0]
    assert "expected a pair" in check_attention(output_only, verbose=False).failures[0]


def test_wrong_resize_answers_fail():
    def resizes_class_token_too(pe, old, new):  # drops the [class] entry and puts a fresh one in front
        grid = rearrange(pe[:, 1:], "1 (h w) d -> 1 d h w", h=old[0])
        out = F.interpolate(grid, size=new, mode="bicubic", align_corners=False)
        return torch.cat([torch.zeros_like(pe[:, :1]), rearrange(out, "1 d h w -> 1 (h w) d")], dim=1)

    def bilinear(pe, old, new):
        grid = rearrange(pe[:, 1:], "1 (h w) d -> 1 d h w", h=old[0])
        out = F.interpolate(grid, size=new, mode="bilinear", align_corners=False)
        return torch.cat([pe[:, :1], rearrange(out, "1 d h w -> 1 (h w) d")], dim=1)
    r = check_resize_pos_embed(resizes_class_token_too, verbose=False)
    assert r.passed == 0 and "[class]" in r.failures[0]
    r = check_resize_pos_embed(bilinear, verbose=False)
    assert r.passed == 2 and all("wrong values" in f for f in r.failures)  # kept [class], identity pass


def test_head_parameters_hints():
    assert "forget the biases" in check_head_parameters(990 * 768, verbose=False).failures[0]
    assert "expected an int" in check_head_parameters("761310", verbose=False).failures[0]


def test_lr_schedule_check():
    from minivit.exercises import check_lr_schedule
    from minivit.optim import lr_factor
    assert check_lr_schedule(lr_factor, verbose=False)

    def linear_decay(step, total, warmup):
        return (step + 1) / warmup if step < warmup else 1 - (step - warmup) / max(1, total - warmup)

    def warmup_from_zero(step, total, warmup):
        return step / warmup if step < warmup else lr_factor(step, total, warmup)
    r = check_lr_schedule(linear_decay, verbose=False)
    assert r.passed == 1 and "step 99 of 100" in r.failures[0]  # the warm-up is right, the decay is not
    r = check_lr_schedule(warmup_from_zero, verbose=False)
    assert not r and "step 0 of 100" in r.failures[0]
    assert "expected a number" in check_lr_schedule(lambda s, t, w: None, verbose=False).failures[0]


def test_linear_lr_schedule_check():
    from minivit.exercises import check_linear_lr_schedule
    from minivit.optim import lr_factor

    def linear(step, total, warmup):
        return (step + 1) / warmup if step < warmup else (total - step) / (total - warmup) if total > warmup else 1.0
    assert check_linear_lr_schedule(linear, verbose=False)
    r = check_linear_lr_schedule(lr_factor, verbose=False)  # the cosine of the notebook is not the answer
    assert not r and any("step 99 of 100" in f for f in r.failures)
    assert "expected a number" in check_linear_lr_schedule(lambda s, t, w: None, verbose=False).failures[0]


def test_linear_lr_schedule_check_refuses_the_checkers_own_reference():
    from minivit.exercises import _linear_lr_factor as my_linear_lr_factor  # a student's one-line "answer"
    from minivit.exercises import check_linear_lr_schedule

    _refused(check_linear_lr_schedule, my_linear_lr_factor, "minivit.exercises._linear_lr_factor")

    def wrapped(step, total, warmup):  # called from inside an answer: refused too
        return my_linear_lr_factor(step, total, warmup)
    _refused(check_linear_lr_schedule, wrapped, "minivit.exercises._linear_lr_factor")


def _param_groups_by_hand(model, wd):  # a student's answer: no decay on vectors, the [class] token and positions
    groups = ([], [])
    for name, p in model.named_parameters():
        groups[p.ndim <= 1 or name.split(".")[-1] in ("cls_token", "pos_embed")].append(p)
    return [{"params": groups[0], "weight_decay": wd}, {"params": groups[1], "weight_decay": 0.0}]


def test_param_groups_check():
    from minivit.exercises import check_param_groups
    from minivit.optim import param_groups
    assert check_param_groups(_param_groups_by_hand, verbose=False)
    r = _refused(check_param_groups, param_groups, "minivit.optim.param_groups")  # my_param_groups = param_groups
    assert "named_parameters()" in r.failures[0]
    _refused(check_param_groups, lambda m, wd: param_groups(m, wd), "minivit.optim.param_groups")  # in a closure
    _refused(check_param_groups, lambda m, wd: minivit.optim.param_groups(m, wd), "minivit.optim.param_groups")

    def decay_everything_but_biases(model, wd):
        groups = ([], [])
        for name, p in model.named_parameters():
            groups[name.endswith("bias")].append(p)
        return [{"params": groups[0], "weight_decay": wd}, {"params": groups[1], "weight_decay": 0.0}]
    r = check_param_groups(decay_everything_but_biases, verbose=False)
    assert not r and "holds 11 tensors it should not" in r.failures[0] and "norm1.weight" in r.failures[0]
    r = check_param_groups(lambda m, wd: _param_groups_by_hand(m, 0.05), verbose=False)
    assert r.passed == 0 and "expected [0.3, 0.0]" in r.failures[0]
    assert "expected a list of two dicts" in check_param_groups(lambda m, wd: None, verbose=False).failures[0]


def test_clip_grad_norm_check():
    from minivit.exercises import check_clip_grad_norm

    def clip(grads, max_norm):
        total = torch.sqrt(sum((g**2).sum() for g in grads))
        return [g * min(1.0, max_norm / (total.item() + 1e-6)) for g in grads], total.item()

    def clip_each(grads, max_norm):  # per tensor: not the global norm
        return [g * min(1.0, max_norm / g.norm().item()) for g in grads], max(g.norm().item() for g in grads)

    def always_scale(grads, max_norm):  # scales up short gradients too
        total = torch.sqrt(sum((g**2).sum() for g in grads)).item()
        return [g * max_norm / total for g in grads], total
    assert check_clip_grad_norm(clip, verbose=False)
    r = check_clip_grad_norm(clip_each, verbose=False)
    assert not r and any("the norm is global" in f for f in r.failures)
    r = check_clip_grad_norm(always_scale, verbose=False)
    assert r.passed == 2 and "unchanged" in r.failures[0]
    assert "expected a pair" in check_clip_grad_norm(lambda g, m: None, verbose=False).failures[0]

    def torch_clip(grads, max_norm):  # the grads wrapped as parameters: PyTorch's clipping, not the exercise
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g
        return [p.grad for p in params], torch.nn.utils.clip_grad_norm_(params, max_norm)

    def torch_parts(grads, max_norm):
        return [g * min(1.0, max_norm / torch.nn.utils.get_total_norm(grads).item()) for g in grads], 0.0
    original = torch.nn.utils.clip_grad_norm_
    r = _refused(check_clip_grad_norm, torch_clip, "torch.nn.utils.clip_grad_norm_")
    assert "compute the global norm" in r.failures[0]
    _refused(check_clip_grad_norm, torch_parts, "torch.nn.utils.get_total_norm")
    assert torch.nn.utils.clip_grad_norm_ is original is torch.nn.utils.clip_grad.clip_grad_norm_


def test_hybrid_tokens_check():
    from minivit.exercises import check_hybrid_tokens

    def reference(x, weight, bias):  # the 1x1 conv is a matrix product over the channels, cell by cell
        return torch.einsum("bchw,dc->bhwd", x, weight[:, :, 0, 0]).flatten(1, 2) + bias

    def column_major(x, weight, bias):
        return rearrange(F.conv2d(x, weight, bias), "b d h w -> b (w h) d")

    def no_bias(x, weight, bias):
        return rearrange(F.conv2d(x, weight), "b d h w -> b (h w) d")
    assert check_hybrid_tokens(reference, verbose=False)
    r = check_hybrid_tokens(column_major, verbose=False)
    assert r.passed == 1 and "non-square" in r.failures[1]  # only a single cell cannot tell the orders apart
    r = check_hybrid_tokens(no_bias, verbose=False)
    assert r.passed == 0 and all("wrong values" in f for f in r.failures)
    assert "expected a tensor of shape (2, 16, 6)" in check_hybrid_tokens(lambda *a: None, verbose=False).failures[0]


def test_patch_centres_check():
    from minivit.exercises import check_patch_centres

    def centres(old, new):  # the new patches' centres in pixels of the new image, scaled to the old one
        (h, w), (h2, w2) = old, new
        r = ((torch.arange(h2) + 0.5) * (h / h2) - 0.5)[:, None].expand(h2, w2)
        c = ((torch.arange(w2) + 0.5) * (w / w2) - 0.5)[None, :].expand(h2, w2)
        return torch.stack([r, c], dim=-1)

    def align_corners(old, new):  # corner patches to corner patches: the grids' ends pinned, not their centres
        (h, w), (h2, w2) = old, new
        r = torch.linspace(0, h - 1, h2)[:, None].expand(h2, w2)
        c = torch.linspace(0, w - 1, w2)[None, :].expand(h2, w2)
        return torch.stack([r, c], dim=-1)
    assert check_patch_centres(centres, verbose=False)
    r = check_patch_centres(align_corners, verbose=False)
    assert r.passed == 1 and "the same grid" not in " ".join(r.failures)  # only the identity case agrees
    swapped = check_patch_centres(lambda o, n: centres(o, n).flip(-1), verbose=False)
    assert not swapped and any("non-square" in f for f in swapped.failures)


def test_patch_centres_are_where_bilinear_resizing_samples():
    from minivit.exercises import _patch_centres
    ramp = torch.arange(4.0)[:, None].expand(4, 6)  # value = old row index, on a 4 x 6 grid
    out = F.interpolate(ramp[None, None], size=(8, 12), mode="bilinear", align_corners=False)[0, 0]
    rows = _patch_centres((4, 6), (8, 12))[..., 0].float()
    inside = (rows >= 0) & (rows <= 3)  # F.interpolate clamps outside the old grid's first and last centres
    torch.testing.assert_close(out[inside], rows[inside])
    torch.testing.assert_close(out[~inside], rows[~inside].clamp(0, 3))


def _distance_by_hand(maps, grid, patch_size, renormalize=True, drop_class=True, pixels=True):
    """A student's mean attention distance, right by default; the flags make the typical mistakes."""
    gh, gw = grid
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    pos = torch.stack([ys.flatten(), xs.flatten()], -1).float() * (patch_size if pixels else 1)  # (N, 2)
    dist = torch.cdist(pos, pos)  # (N, N)
    a = maps[..., 1:, 1:] if drop_class else maps[..., 1:, :]
    if not drop_class:  # counts the [class] column as distance 0
        dist = torch.cat([torch.zeros(len(dist), 1), dist], dim=1)
    if renormalize:
        a = a / a.sum(-1, keepdim=True)
    return (a * dist).sum(-1).mean(dim=(0, 3))  # (L, heads)


def test_mean_attention_distance_check():
    from minivit.exercises import check_mean_attention_distance
    from minivit.inspection import mean_attention_distance
    assert check_mean_attention_distance(_distance_by_hand, verbose=False)  # corners or centres: same distances
    r = _refused(check_mean_attention_distance, mean_attention_distance, "minivit.inspection.mean_attention_distance")
    assert "renormalise each row" in r.failures[0]  # my_distance = mean_attention_distance
    _refused(check_mean_attention_distance, lambda m, g, p: minivit.mean_attention_distance(m, g, p),
             "minivit.inspection.mean_attention_distance")  # the package's re-export
    assert minivit.mean_attention_distance is mean_attention_distance is minivit.inspection.mean_attention_distance
    r = check_mean_attention_distance(lambda m, g, p: _distance_by_hand(m, g, p, renormalize=False), verbose=False)
    assert not r and "wrong values" in r.failures[0]
    r = check_mean_attention_distance(lambda m, g, p: _distance_by_hand(m, g, p, drop_class=False), verbose=False)
    assert not r and r.passed == 0
    r = check_mean_attention_distance(lambda m, g, p: _distance_by_hand(m, g, p, pixels=False), verbose=False)
    assert r.passed == 0  # in patches, not pixels
    transposed = lambda m, g, p: _distance_by_hand(m.transpose(-1, -2), g, p)  # weights read column-wise
    assert not check_mean_attention_distance(transposed, verbose=False)
    swapped = lambda m, g, p: _distance_by_hand(m, (g[1], g[0]), p)  # rows and columns swapped
    r = check_mean_attention_distance(swapped, verbose=False)
    assert not r and any("non-square" in f for f in r.failures)
    r = check_mean_attention_distance(lambda m, g, p: m.mean(dim=(0, 3, 4)), verbose=False)  # (L, heads), nonsense
    assert r.passed == 0
    assert "returned NoneType" in check_mean_attention_distance(lambda m, g, p: None, verbose=False).failures[0]


def test_color_codes_check():
    from minivit.exercises import check_color_codes
    from minivit.mpp import patch_color_codes

    def by_hand(images, p):  # the notebook's derivation
        means = rearrange(patchify(images.double() / 255, p), "b n (pp c) -> b n pp c", c=3).mean(2)  # (B, N, 3)
        levels = (means * 8).floor().clamp(max=7).long()
        return 64 * levels[..., 0] + 8 * levels[..., 1] + levels[..., 2]

    def bgr(images, p):  # blue read as the most significant level
        codes = by_hand(images, p)
        return (codes % 8) * 64 + (codes // 8 % 8) * 8 + codes // 64

    def no_clamp(images, p):  # white (m = 1) gives level 8: class 584, out of range
        means = rearrange(patchify(images.double() / 255, p), "b n (pp c) -> b n pp c", c=3).mean(2)
        levels = (means * 8).floor().long()
        return 64 * levels[..., 0] + 8 * levels[..., 1] + levels[..., 2]

    def rounded(images, p):  # the nearest level instead of the level whose bin holds the mean
        means = rearrange(patchify(images.double() / 255, p), "b n (pp c) -> b n pp c", c=3).mean(2)
        levels = (means * 7).round().long()
        return 64 * levels[..., 0] + 8 * levels[..., 1] + levels[..., 2]

    assert check_color_codes(by_hand, verbose=False)
    r = _refused(check_color_codes, patch_color_codes, "minivit.mpp.patch_color_codes")  # my_color_codes = ...
    assert "3-bit levels" in r.failures[0]
    _refused(check_color_codes, lambda x, p: patch_color_codes(x, p), "minivit.mpp.patch_color_codes")
    assert minivit.patch_color_codes is patch_color_codes is minivit.mpp.patch_color_codes
    r = check_color_codes(bgr, verbose=False)
    assert not r and "wrong values" in r.failures[0]
    r = check_color_codes(no_clamp, verbose=False)
    assert r.passed == 2 and "black, white" in r.failures[0]  # only the white image goes wrong
    assert not check_color_codes(rounded, verbose=False)
    r = check_color_codes(lambda x, p: by_hand(x, p).float(), verbose=False)
    assert r.passed == 0 and "expected integer colour classes" in r.failures[0]
    assert "returned NoneType" in check_color_codes(lambda x, p: None, verbose=False).failures[0]


def test_sub_patch_codes_check():
    from minivit.exercises import check_sub_patch_codes
    from minivit.mpp import patch_color_codes

    def by_hand(images, p, sub):  # every patch cut out, then its own sub-patches' codes, row by row
        b, _, h, w = images.shape
        patches = [images[:, :, r:r + p, c:c + p] for r in range(0, h, p) for c in range(0, w, p)]
        return torch.stack([patch_color_codes(x, sub) for x in patches], dim=1)  # (B, N, S)

    def columns_first(images, p, sub):  # sub-patches column by column inside each patch
        k = p // sub
        return by_hand(images, p, sub).view(*images.shape[:1], -1, k, k).transpose(-1, -2).flatten(-2)

    def flat(images, p, sub):  # the fine grid's codes, not regrouped by patch: (B, (H/sub) * (W/sub))
        return patch_color_codes(images, sub)

    def fine_grid_cut(images, p, sub):  # the fine grid's codes cut into runs of S: the wrong grouping
        codes = patch_color_codes(images, sub)
        return codes.view(codes.shape[0], -1, (p // sub) ** 2)

    assert check_sub_patch_codes(by_hand, verbose=False)
    r = check_sub_patch_codes(columns_first, verbose=False)
    assert r.passed == 0 and "in another order" in r.failures[0]
    r = check_sub_patch_codes(flat, verbose=False)
    assert r.passed == 0 and "shape" in r.failures[0]
    assert not check_sub_patch_codes(fine_grid_cut, verbose=False)
    r = check_sub_patch_codes(lambda x, p, s: by_hand(x, p, s).float(), verbose=False)
    assert r.passed == 0 and "expected integer colour classes" in r.failures[0]
    assert "returned NoneType" in check_sub_patch_codes(lambda x, p, s: None, verbose=False).failures[0]


def test_linear_weights_check():
    from minivit.exercises import _linear_weights, check_linear_weights

    def by_coordinates(n_old, n_new, align_corners=False):  # a student's answer: coordinates, clamp, split
        i = torch.arange(n_new, dtype=torch.float64)
        if align_corners:
            x = i * (n_old - 1) / max(n_new - 1, 1)
        else:
            x = ((i + 0.5) * n_old / n_new - 0.5).clamp(0, n_old - 1)
        lo = x.floor().long().clamp(max=max(n_old - 2, 0))
        frac = x - lo
        w = torch.zeros(n_new, n_old, dtype=torch.float64)
        w[torch.arange(n_new), lo] += 1 - frac
        w[torch.arange(n_new), (lo + 1).clamp(max=n_old - 1)] += frac
        return w
    assert check_linear_weights(by_coordinates, verbose=False)
    average = check_linear_weights(lambda o, n, align_corners=False: torch.full((n, o), 1 / o), verbose=False)
    assert average.passed == 0 and not any("sum to 1" in f for f in average.failures)  # rows sum to 1, wrong places
    wrong_convention = check_linear_weights(lambda o, n, align_corners=False: by_coordinates(o, n, not align_corners),
                                            verbose=False)
    assert wrong_convention.passed == 2  # only the identities agree
    unnormalised = check_linear_weights(lambda o, n, align_corners=False: 2 * by_coordinates(o, n, align_corners),
                                        verbose=False)
    assert unnormalised.passed == 0 and all("sum to 1" in f for f in unnormalised.failures)
    # the weights read off a resizing function: PyTorch's, minivit's, the authors' SciPy
    pytest.importorskip("scipy.ndimage", reason="reads the authors' weights off SciPy (pip install scipy, brought by "
                        "scikit-image, a [dev] extra)")
    import scipy.ndimage

    def read_off_interpolate(n_old, n_new, align_corners=False):  # the reviews' one-liner
        return F.interpolate(torch.eye(n_old)[None], size=n_new, mode="linear", align_corners=align_corners)[0].T

    def read_off_resize_pos_embed(n_old, n_new, align_corners=False):  # an identity embedding on an n_old x 1 grid
        pe = torch.cat([torch.zeros(1, n_old), torch.eye(n_old)])[None]
        return resize_pos_embed(pe, (n_old, 1), (n_new, 1), mode="bilinear", antialias=False,
                                align_corners=align_corners)[0, 1:]

    def read_off_zoom(n_old, n_new, align_corners=False):
        return torch.from_numpy(scipy.ndimage.zoom(torch.eye(n_old).numpy(), (n_new / n_old, 1), order=1,
                                                   mode="nearest", grid_mode=not align_corners))
    originals = F.interpolate, minivit.resize_pos_embed, scipy.ndimage.zoom
    r = _refused(check_linear_weights, read_off_interpolate, "torch.nn.functional.interpolate")
    assert "split its weight between the two old entries" in r.failures[0]
    _refused(check_linear_weights, read_off_resize_pos_embed, "minivit.embeddings.resize_pos_embed")
    _refused(check_linear_weights, read_off_zoom, "scipy.ndimage.zoom")
    assert (F.interpolate, minivit.resize_pos_embed, scipy.ndimage.zoom) == originals
    # the weights are those of minivit.resize_pos_embed, one axis at a time
    pe = torch.randn(1, 1 + 4 * 6, 3, dtype=torch.float64)
    for corners in (False, True):
        out = resize_pos_embed(pe, (4, 6), (8, 9), mode="bilinear", antialias=False, align_corners=corners)
        wr, wc = _linear_weights(4, 8, corners), _linear_weights(6, 9, corners)
        grid = pe[0, 1:].reshape(4, 6, 3)
        torch.testing.assert_close(out[0, 1:].reshape(8, 9, 3), torch.einsum("ia,jb,abd->ijd", wr, wc, grid),
                                   atol=1e-6, rtol=1e-5)  # resize_pos_embed interpolates in float32


def test_swap_tiles_check():
    from minivit.exercises import check_swap_tiles

    def swap(x, q):
        h, w = x.shape[-2] // 2, x.shape[-1] // 2
        tiles = [x[..., :h, :w], x[..., :h, w:], x[..., h:, :w], x[..., h:, w:]]
        tiles[0], tiles[q] = tiles[q], tiles[0]
        return torch.cat([torch.cat(tiles[:2], -1), torch.cat(tiles[2:], -1)], -2)

    def in_place(x, q):
        h, w = x.shape[-2] // 2, x.shape[-1] // 2
        r, c = divmod(q, 2)
        top_left = x[..., :h, :w].clone()
        x[..., :h, :w] = x[..., r * h:(r + 1) * h, c * w:(c + 1) * w]
        x[..., r * h:(r + 1) * h, c * w:(c + 1) * w] = top_left
        return x
    assert check_swap_tiles(swap, verbose=False)
    r = check_swap_tiles(in_place, verbose=False)
    assert r.passed == 1 and all("in place" in f for f in r.failures)  # quadrant 0 changes nothing
    r = check_swap_tiles(lambda x, q: x.transpose(-1, -2), verbose=False)
    assert not r and any("shape" in f for f in r.failures)
    assert "returned NoneType" in check_swap_tiles(lambda x, q: None, verbose=False).failures[0]


def test_a_mutating_answer_is_judged_on_its_own_output():
    """E4 of the instructor trial: an answer that changes its input in place must not blame a later case."""
    def mutating(x, p):
        out = patchify_by_hand(x, p).clone()
        x.zero_()  # spoils its own input only
        return out
    assert check_patchify(mutating, verbose=False)

    def mutating_pe(pe, old, new):
        out = resize_by_hand(pe, old, new).clone()
        pe.mul_(0)
        return out
    assert check_resize_pos_embed(mutating_pe, verbose=False)

    def mutating_attention(q, k, v):
        out = attention_by_hand(q, k, v)
        q.fill_(0), k.fill_(0), v.fill_(0)
        return out
    assert check_attention(mutating_attention, verbose=False)


def test_exact_valued_float_counts_as_an_int():
    """E2: a float with the exact right value (students write H / P) was refused as 'expected an int'."""
    assert check_head_parameters(float((1000 - 10) * (768 + 1)), verbose=False)
    assert check_head_parameters(torch.tensor((1000 - 10) * (768 + 1)), verbose=False)
    assert "not a whole number" in check_head_parameters(760320.5, verbose=False).failures[0]
    assert not check_head_parameters(True, verbose=False)


def test_right_values_in_another_order_get_a_hint():
    """E4/#11: the (c p1 p2) patch order (F.unfold's) got only 'wrong values'."""
    import torch.nn.functional as F
    unfold = lambda x, p: F.unfold(x, p, stride=p).transpose(1, 2)  # (B, N, C*P*P): (c p1 p2) order
    r = check_patchify(unfold, verbose=False)
    assert not r and "values are all there, in another order" in r.failures[0]
    assert "(c p1 p2) order, as F.unfold does" in r.failures[0]
    column_major = lambda x, p: rearrange(x, "b c (h p1) (w p2) -> b (w h) (p1 p2 c)", p1=p, p2=p)
    r = check_patchify(column_major, verbose=False)
    assert any("in another order: patches go row by row" in f for f in r.failures)


def test_multi_head_attention_check():
    from torch import nn

    from minivit import Attention
    from minivit.exercises import _mha, check_multi_head_attention

    def by_hand(x, qkv_w, qkv_b, proj_w, proj_b, heads, layout="three h dh", scale_by="dh"):
        q, k, v = rearrange(x @ qkv_w.T + qkv_b, f"b n ({layout}) -> three b h n dh", three=3, h=heads)
        if scale_by == "d":  # wrongly: 1/sqrt(D)
            q = q * math.sqrt(q.shape[-1] / x.shape[-1])
        out, w = attention_with_weights(q, k, v)  # a single-head function may be the package's
        return rearrange(out, "b h n dh -> b n (h dh)") @ proj_w.T + proj_b, w

    class ByHand(nn.Module):  # a module class with timm's names
        def __init__(self, dim, heads):
            super().__init__()
            self.heads, self.qkv, self.proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

        def forward(self, x):
            return by_hand(x, self.qkv.weight, self.qkv.bias, self.proj.weight, self.proj.bias, self.heads)[0]
    assert check_multi_head_attention(by_hand, verbose=False)  # (out, weights)
    assert check_multi_head_attention(lambda *a: by_hand(*a)[0], verbose=False)  # out only
    assert check_multi_head_attention(ByHand, verbose=False)
    _refused(check_multi_head_attention, Attention, "minivit.attention.Attention")  # the package's layer, refused
    _refused(check_multi_head_attention, lambda *a: _mha(*a), "minivit.exercises._mha")  # the check's own
    r = check_multi_head_attention(lambda *a: by_hand(*a, layout="h three dh"), verbose=False)
    assert r.passed == 1 and "laid out (3, heads, Dh)" in r.failures[0]  # one head: the layouts coincide
    r = check_multi_head_attention(lambda *a: by_hand(*a, layout="three dh h"), verbose=False)
    assert "head h is the Dh columns" in r.failures[0]
    r = check_multi_head_attention(lambda *a: by_hand(*a, scale_by="d"), verbose=False)
    assert "1/sqrt(Dh), the head width" in r.failures[0]

    class WrongNames(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.to_qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
    assert "name the layers qkv and proj" in check_multi_head_attention(WrongNames, verbose=False).failures[0]
    assert "returned NoneType" in check_multi_head_attention(lambda *a: None, verbose=False).failures[0]


def test_without_reaches_every_name_and_puts_everything_back():
    """The reviews' shortcuts (round 3, 04-06 N4 and 07-09 N3): a function imported by name into a notebook's
    namespace is refused too, the checks' own expected values still work, and an error puts everything back."""
    from minivit.exercises import check_mean_attention_distance
    from minivit.inspection import mean_attention_distance
    notebook = {}  # a notebook's namespace: its imports are bound before the answer is written
    exec("from minivit.inspection import mean_attention_distance\n"
         "import minivit.inspection as inspection\n"
         "def my_distance(maps, grid_size, patch_size):\n"
         "    return mean_attention_distance(maps, grid_size, patch_size)\n"
         "def via_module(maps, grid_size, patch_size):\n"
         "    return inspection.mean_attention_distance(maps, grid_size, patch_size)\n", notebook)
    for name in ("my_distance", "via_module"):
        _refused(check_mean_attention_distance, notebook[name], "minivit.inspection.mean_attention_distance")
    assert notebook["mean_attention_distance"] is mean_attention_distance

    with pytest.raises(ZeroDivisionError):  # an error inside the block: the originals come back
        with _without(notebook["my_distance"], ["minivit.inspection.mean_attention_distance"], "by hand"):
            for call in (notebook["mean_attention_distance"], minivit.mean_attention_distance,  # the re-export too
                         minivit.inspection.mean_attention_distance):
                with pytest.raises(_Shortcut, match="solve it without minivit.inspection.mean_attention_distance: by hand"):
                    call(None, (1, 1), 1)
            1 / 0
    assert notebook["mean_attention_distance"] is mean_attention_distance is minivit.mean_attention_distance
    assert not _stand_ins_left()
    assert mean_attention_distance(torch.full((1, 1, 1, 5, 5), 0.2), (2, 2), 1).shape == (1, 1)  # it runs again

    with pytest.raises(_Shortcut):  # the answer *is* the package's function: refused when it runs
        with _without(mean_attention_distance, ["minivit.inspection.mean_attention_distance"], "by hand"):
            mean_attention_distance(None, (1, 1), 1)
    with _without(len, ["no_such_module.f", "minivit.inspection.no_such_name"], "by hand"):  # skipped, not raised
        pass


def test_resize_pos_embed_names_the_corner_convention():
    """The instructor trial r2: a resize with the corners aligned got only "wrong values"; now the hint names it."""
    def corners(pe, old, new):
        d = pe.shape[-1]
        grid = pe[:, 1:].reshape(1, *old, d).permute(0, 3, 1, 2)  # (1, D, h, w)
        grid = F.interpolate(grid, size=new, mode="bicubic", align_corners=True, antialias=True)
        return torch.cat([pe[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, d)], dim=1)
    result = check_resize_pos_embed(corners, verbose=False)
    assert not result and any("align_corners=False" in f for f in result.failures), result.failures
