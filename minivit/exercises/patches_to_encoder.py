"""The checks of the exercises of notebooks 00-03 (00_start_here, 01_patches, 02_class_token_and_positions,
03_transformer_encoder): the head's parameters, patchify, resizing the position embeddings, attention and
multi-head attention. Importable from `minivit.exercises`, as every check is."""

from __future__ import annotations

import math

import torch

from ..grading import CheckResult, _call, _compare, _run
from ._common import _as_int, _images, _without


# ---- 00_start_here.ipynb -------------------------------------------------------------------------------


def check_head_parameters(answer, verbose: bool = True) -> CheckResult:
    """00_start_here, exercise 1: how many parameters does ViT-B/16 lose when its head has 10 outputs instead
    of 1000? `answer`: an int."""
    from ..config import get_preset
    d = get_preset("ViT-B/16").dim
    expected = (1000 - 10) * (d + 1)  # a D x K weight and K biases

    def exact():
        count = _as_int(answer)  # 760320.0 is as right as 760320
        if count is None:
            return f"expected an int, got {type(answer).__name__}" + (
                f" {answer!r} (not a whole number)" if isinstance(answer, float) else "")
        if count == expected:
            return None
        hint = " (did you forget the biases?)" if count == (1000 - 10) * d else ""
        return f"{count:,} is not it{hint}; count the head's weights and biases for 1000 and for 10 classes"
    return _run("head parameters, 1000 -> 10 classes", [("the count", exact)], verbose)


# ---- 01_patches.ipynb ----------------------------------------------------------------------------------


# The package's patchify, refused while an answer runs; einops and unfold too where the exercise says "reshape and
# permute only" (01's: reshape_only=True).
_PATCHIFY_SOLUTIONS = ["minivit.patching"]
_NOT_RESHAPE = ["einops.einops", "einops.layers", "torch.nn.functional.unfold", "torch.Tensor.unfold"]


def check_patchify(fn, verbose: bool = True, reshape_only: bool = False) -> CheckResult:
    """01_patches: `fn(images (B, C, H, W), patch_size) -> (B, N, P*P*C)`, patches row by row, each flattened
    in (p1 p2 c) order -- the same as `minivit.patchify`, written without it (and, with `reshape_only=True`, as
    01's exercise asks, without einops or unfold: reshape and permute only)."""
    banned = _PATCHIFY_SOLUTIONS + (_NOT_RESHAPE if reshape_only else [])
    hint = "cut the patches with reshape and permute" + ("" if reshape_only else " (or einops)")
    from einops import rearrange

    from ..patching import patchify

    def case(b, c, h, w, p, seed):
        x = _images(b, c, h, w, seed)
        expected = patchify(x, p)  # (B, N, P*P*C)
        channels_first = rearrange(x, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=p, p2=p)  # F.unfold's order

        def run():
            with _without(fn, banned, hint):
                got = _call(fn, x, p)
            problem = _compare(got, expected, order_hint="patches go row by row (h w), each flattened in "
                                                         "(p1 p2 c) order: rows of the patch, then columns, then channels")
            if problem and isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.allclose(
                    got.float(), channels_first, atol=1e-5):
                problem += " -- you flattened each patch in (c p1 p2) order, as F.unfold does"
            return problem
        return run
    return _run("patchify", [
        ("shape and values, 2 RGB images 8x8, P = 4", case(2, 3, 8, 8, 4, 0)),
        ("a non-square image 8x12, P = 4 (rows before columns)", case(1, 3, 8, 12, 4, 1)),
        ("grey images (C = 1), P = 2", case(3, 1, 6, 6, 2, 2)),
        ("P = 1: every pixel is a patch", case(1, 3, 3, 5, 1, 3)),
    ], verbose)


# ---- 02_class_token_and_positions.ipynb ----------------------------------------------------------------


# The package's resampling and timm's: refused while an answer to 02's exercise runs.
_RESIZE_SOLUTIONS = ["minivit.embeddings.resize_pos_embed", "timm.layers.pos_embed.resample_abs_pos_embed"]


def check_resize_pos_embed(fn, verbose: bool = True) -> CheckResult:
    """02_class_token_and_positions: `fn(pos_embed (1, 1 + h*w, D), old_grid (h, w), new_grid (h', w'))
    -> (1, 1 + h'*w', D)`: the [class] entry kept, the patch entries laid out on their grid and resized
    bicubically with antialiasing, as `minivit.resize_pos_embed` does. In PyTorch `antialias=True` also
    changes the cubic kernel (PIL's, a = -0.5, against -0.75 without it), so it matters even when enlarging."""
    from ..embeddings import resize_pos_embed

    hints = ((dict(align_corners=True), "patch centres map to patch centres (align_corners=False); aligning the "
                                        "corners is the authors' convention, not minivit's and timm's"),
             (dict(antialias=False), "antialias=True: in PyTorch it also changes the cubic kernel, enlarging too"),
             (dict(mode="bilinear"), "the interpolation is bicubic"))

    def case(old, new, seed):
        pe = torch.randn(1, 1 + old[0] * old[1], 8, generator=torch.Generator().manual_seed(seed))
        expected = resize_pos_embed(pe, old, new)

        def run():
            with _without(fn, _RESIZE_SOLUTIONS, "lay the entries out on their grid and call F.interpolate"):
                got = _call(fn, pe, old, new)
            problem = _compare(got, expected, atol=1e-4)
            if problem and isinstance(got, torch.Tensor) and got.shape == expected.shape:
                for options, hint in hints:
                    if torch.allclose(got.float(), resize_pos_embed(pe, old, new, **options), atol=1e-4):
                        return f"{problem}: {hint}"
            return problem
        return run

    def class_entry_kept():
        pe = torch.randn(1, 1 + 9, 8, generator=torch.Generator().manual_seed(9))
        with _without(fn, _RESIZE_SOLUTIONS, "lay the entries out on their grid and call F.interpolate"):
            out = _call(fn, pe, (3, 3), (6, 6))
        if not isinstance(out, torch.Tensor) or out.ndim != 3:
            return f"returned {type(out).__name__}, expected a tensor (1, 37, 8)"
        return None if torch.equal(out[0, 0], pe[0, 0]) else "the [class] embedding (index 0) was changed"
    return _run("resize_pos_embed", [
        ("the [class] embedding is kept as it is", class_entry_kept),
        ("3x3 -> 6x6", case((3, 3), (6, 6), 0)),
        ("a non-square grid 2x3 -> 4x5 (row-major)", case((2, 3), (4, 5), 1)),
        ("the same grid is the identity", case((4, 4), (4, 4), 2)),
    ], verbose)


# ---- 03_transformer_encoder.ipynb ----------------------------------------------------------------------


# The package's attention and PyTorch's, refused while an answer to 03's exercise runs; for multi-head attention,
# the ready-made multi-head layers (an answer may attend with any single-head function, the package's too).
_ATTENTION_SOLUTIONS = ["minivit.attention", "torch.nn.functional.scaled_dot_product_attention",
                        "torch.nn.functional.multi_head_attention_forward", "torch.nn.MultiheadAttention"]
_MSA_SOLUTIONS = ["minivit.attention.Attention", "minivit.exercises._mha", "torch.nn.MultiheadAttention",
                  "torch.nn.functional.multi_head_attention_forward", "timm.layers.attention"]


def check_attention(fn, verbose: bool = True) -> CheckResult:
    """03_transformer_encoder: `fn(q (..., N, Dh), k (..., M, Dh), v (..., M, Dv)) -> (out (..., N, Dv),
    weights (..., N, M))`, softmax(q kᵀ / sqrt(Dh)) v and its weights (Appendix A, Eq. 5-7), as
    `minivit.attention_with_weights`."""
    from ..attention import attention_with_weights

    def case(shape_q, shape_kv, seed):
        g = torch.Generator().manual_seed(seed)
        q = torch.randn(*shape_q, generator=g)
        k = torch.randn(*shape_kv, generator=g)
        v = torch.randn(*shape_kv[:-1], shape_kv[-1] + 2, generator=g)  # Dv != Dh catches a swapped k and v
        out, weights = attention_with_weights(q, k, v)

        def run():
            with _without(fn, _ATTENTION_SOLUTIONS, "write softmax(q k^T / sqrt(Dh)) v from matrix products"):
                got = _call(fn, q, k, v)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                return f"returned {type(got).__name__}, expected a pair (output, weights)"
            return _compare(got[1], weights, what="weights") or _compare(got[0], out, what="output")
        return run
    return _run("attention", [
        ("one head: q, k, v of 5 tokens, Dh = 4", case((5, 4), (5, 4), 0)),
        ("batched heads (2, 3, 6, 8): the scale is 1/sqrt(Dh)", case((2, 3, 6, 8), (2, 3, 6, 8), 1)),
        ("4 queries attending to 7 keys (N != M)", case((4, 16), (7, 16), 2)),
    ], verbose)


def _mha(x, qkv_w, qkv_b, proj_w, proj_b, heads, layout="three h dh", scale_by="dh"):
    """Multi-head self-attention written out, with the qkv output laid out as `layout` (the right one:
    "three h dh") and scores scaled by 1/sqrt(Dh) ("dh") or, wrongly, 1/sqrt(D) ("d"). -> (B, N, D), (B, h, N, N)."""
    from einops import rearrange
    d = x.shape[-1]
    q, k, v = rearrange(x @ qkv_w.T + qkv_b, f"b n ({layout}) -> three b h n dh", three=3, h=heads)  # (B, h, N, Dh)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // heads if scale_by == "dh" else d)  # (B, h, N, N)
    weights = scores.softmax(-1)
    out = rearrange(weights @ v, "b h n dh -> b n (h dh)")  # (B, N, D)
    return out @ proj_w.T + proj_b, weights


def check_multi_head_attention(fn, verbose: bool = True) -> CheckResult:
    """03_transformer_encoder: multi-head self-attention (Appendix A, Eq. 5-8), MSA(z) = [SA_1(z); ...; SA_k(z)] U_msa,
    with the weights of a `minivit.Attention` (timm's layout):

        fn(x (B, N, D), qkv_weight (3D, D), qkv_bias (3D,), proj_weight (D, D), proj_bias (D,), heads) -> (B, N, D)

    or a pair (output, weights (B, heads, N, N)); or an `nn.Module` class built as `cls(dim, heads)` with timm's
    parameter names `qkv` and `proj` (its state dict loaded from a `minivit.Attention`). The qkv output (B, N, 3D)
    is laid out (3, heads, Dh): all queries, then all keys, then all values; within each, head h's Dh columns
    are [h*Dh, (h+1)*Dh). Compared with `minivit.Attention` on the written-out path."""
    from torch import nn

    from ..attention import Attention

    def case(b, n, d, heads, seed):
        g = torch.Generator().manual_seed(seed)
        ref = Attention(d, heads, fused=False)
        with torch.no_grad():
            for p in ref.parameters():
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(d))
        x = torch.randn(b, n, d, generator=g)
        with torch.no_grad():
            out, weights = ref(x, return_attention=True)  # (B, N, D), (B, heads, N, N)
        args = (x, ref.qkv.weight.detach(), ref.qkv.bias.detach(), ref.proj.weight.detach(), ref.proj.bias.detach(),
                heads)

        def run():
            hint = "split qkv into heads, attend, concatenate and project by hand"
            if isinstance(fn, type) and issubclass(fn, nn.Module):
                with _without(fn, _MSA_SOLUTIONS, hint):
                    module = fn(d, heads)
                try:
                    module.load_state_dict(ref.state_dict())
                except RuntimeError as e:
                    return f"load_state_dict from minivit.Attention failed (name the layers qkv and proj): {e}"
                with torch.no_grad(), _without(fn, _MSA_SOLUTIONS, hint):
                    got = _call(module, x)
            else:
                with _without(fn, _MSA_SOLUTIONS, hint):
                    got = _call(fn, *args)
            got_w = None
            if isinstance(got, (tuple, list)) and len(got) == 2:
                got, got_w = got
            problem = _compare(got, out)
            if problem and isinstance(got, torch.Tensor) and got.shape == out.shape:
                for layout, scale_by, hint in (
                        ("h three dh", "dh", "qkv's output is laid out (3, heads, Dh) -- all queries, then all keys, "
                                             "then all values -- not (heads, 3, Dh)"),
                        ("three dh h", "dh", "within the queries (keys, values), head h is the Dh columns "
                                             "[h*Dh, (h+1)*Dh), not every heads-th column"),
                        ("three h dh", "d", "scale the scores by 1/sqrt(Dh), the head width, not 1/sqrt(D)")):
                    wrong, _ = _mha(*args, layout=layout, scale_by=scale_by)
                    if torch.allclose(got.float(), wrong, atol=1e-4, rtol=1e-4):
                        return f"{problem}: {hint}"
                return problem
            return problem or (None if got_w is None else _compare(got_w, weights, what="weights"))
        return run
    return _run("multi-head attention", [
        ("2 heads of width 4: (B, N, D) = (2, 5, 8)", case(2, 5, 8, 2, 0)),
        ("3 heads of width 4, 7 tokens", case(1, 7, 12, 3, 1)),
        ("one head is single-head attention with U_qkv and U_msa", case(2, 4, 6, 1, 2)),
    ], verbose)
