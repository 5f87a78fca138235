"""Checks for the notebooks' exercises: pass your answer, read what is right and what is wrong.

    from minivit.exercises import check_patchify
    check_patchify(my_patchify)        # prints one line per check, returns a CheckResult

Each check runs the student's answer on fixed cases and compares it with `minivit`'s own
implementation (or with a value computed from it). A wrong answer -- a wrong shape, wrong
numbers, `None`, an exception -- is reported, never raised, so a notebook cell that calls a check
always runs through. The returned `CheckResult` is true only when every case passed, so an
instructor can grade with `assert check_patchify(fn, verbose=False)`.

The shared machinery, for checks of your own, lives in `minivit.grading`: `_run` runs (label, thunk) cases and
never raises, showing on stdout what the answer writes to stderr (a progress bar, a warning: nbgrader would score a
cell with stderr output 0); `_call(fn, *args)` calls the answer on copies of its tensor arguments (an answer that
changes its input in place cannot spoil the expected value or a later case); `_compare` compares a tensor answer
with the expected one and, when the values are right but in another order, says so. Here, `_as_int` accepts a float
with an exact integer value (e.g. `H / P * W / P`) where an int is expected, and `with _without(fn, paths, hint):
fn(...)` runs the answer with the package's (or PyTorch's, SciPy's) own solution refusing to run, however the
answer holds it, so that an answer which only calls it is refused ("solve it without ...") instead of passed --
every check here does, 01-03's too.

Introduced in 00_start_here.ipynb; each check names the notebook whose exercise it checks.
"""

from __future__ import annotations

import math
import numbers
from contextlib import contextmanager

import torch

from .grading import CheckResult, Shortcut, _call, _compare, _copy, _run, without

__all__ = ["CheckResult", "check_head_parameters", "check_patchify", "check_resize_pos_embed", "check_attention",
           "check_multi_head_attention",
           "check_lr_schedule", "check_linear_lr_schedule", "check_param_groups", "check_clip_grad_norm",
           "check_forward_flops", "check_training_flops", "check_resnet50_compute",
           "check_hybrid_tokens", "check_hybrid_grid", "check_short_stem_share", "check_patch_centres",
           "check_linear_weights", "check_swap_tiles",
           "check_mean_attention_distance",
           "check_color_codes", "check_sub_patch_codes"]


def _as_int(value) -> int | None:
    """`value` as an int when it is one, or a float (or 0-d tensor) with an exact integer value; else None."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


_Shortcut = Shortcut  # the name the notebooks' and the kit's checks have used


@contextmanager
def _without(fn, paths, hint: str):
    """Within the block, the callables at `paths` ("module.name", e.g. "minivit.optim.param_groups") refuse to run:
    a call raises `Shortcut("solve it without <path>: <hint>")`, which `_run` reports as a failed case -- an
    exercise whose answer is one call to the package's own solution is not solved. The refusal is made on the
    callables themselves (see `minivit.grading.without`), so it holds however the answer `fn` holds them: a name,
    a default argument, a `functools.partial`, a container, an object. Put only the answer's call in the block: a
    check's expected values may come from these very functions."""
    with without(paths, hint):
        yield


def _images(b: int, c: int, h: int, w: int, seed: int) -> torch.Tensor:
    return torch.rand(b, c, h, w, generator=torch.Generator().manual_seed(seed))


# ---- 00_start_here.ipynb -------------------------------------------------------------------------------


def check_head_parameters(answer, verbose: bool = True) -> CheckResult:
    """00_start_here, exercise 1: how many parameters does ViT-B/16 lose when its head has 10 outputs instead
    of 1000? `answer`: an int."""
    from .config import get_preset
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

    from .patching import patchify

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
    from .embeddings import resize_pos_embed

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
    from .attention import attention_with_weights

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

    from .attention import Attention

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


# ---- 04_training_a_vit.ipynb ---------------------------------------------------------------------------


def _factor_cases(fn, reference, cases, banned=(), hint: str = "") -> list:
    """(label, thunk) pairs comparing fn(step, total, warmup) with reference(...) at the given steps; the answer
    runs `_without` the functions at `banned` (its reference among them, where that is the solution)."""
    def case(total, warmup, steps):
        def run():
            for s in steps:
                want = reference(s, total, warmup)
                with _without(fn, banned, hint):
                    got = fn(s, total, warmup)
                if not isinstance(got, (int, float)) or isinstance(got, bool):
                    return f"step {s}: returned {type(got).__name__}, expected a number"
                if abs(got - want) > 1e-6:
                    return f"step {s} of {total} (warm-up {warmup}): got {got:.6f}, expected {want:.6f}"
            return None
        return run
    return [(label, case(*args)) for label, args in cases]


def check_lr_schedule(fn, verbose: bool = True) -> CheckResult:
    """04_training_a_vit: `fn(step, total_steps, warmup_steps) -> factor` of the base learning rate: a linear
    warm-up from 1/warmup_steps to 1 over the first `warmup_steps` steps, then a cosine decay to 0 at
    `total_steps`, as `minivit.optim.lr_factor`."""
    from .optim import lr_factor
    return _run("lr schedule", _factor_cases(fn, lr_factor, [
        ("warm-up: step 0 is 1/warmup_steps, the last warm-up step is 1", (100, 10, [0, 4, 9])),
        ("cosine: 1 right after the warm-up, 0.5 half-way, about 0 at the end", (100, 10, [10, 55, 99])),
        ("no warm-up", (50, 0, [0, 10, 25, 49])),
    ]), verbose)


def _linear_lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Linear warm-up (as `lr_factor`), then linear decay (T - step) / (T - W) to 0 at T = total_steps."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def check_linear_lr_schedule(fn, verbose: bool = True) -> CheckResult:
    """04_training_a_vit, exercise 1: the paper's pre-training schedule (§4.1: "a linear learning rate warmup and
    decay"; Table 3: linear decay on JFT-300M and ImageNet-21k). `fn(step, total_steps, warmup_steps) -> factor`
    of the base rate: the warm-up of `minivit.optim.lr_factor` (1/W at step 0 up to 1 at step W - 1), then
    (T - step) / (T - W), from 1 at step W down to 1/(T - W) at the last step T - 1."""
    return _run("linear lr schedule", _factor_cases(fn, _linear_lr_factor, [
        ("warm-up: step 0 is 1/warmup_steps, the last warm-up step is 1", (100, 10, [0, 4, 9])),
        ("decay: 1 right after the warm-up, 0.5 half-way, 1/90 at the last step", (100, 10, [10, 55, 99])),
        ("no warm-up: a straight line from 1", (50, 0, [0, 10, 25, 49])),
    ], banned=["minivit.exercises._linear_lr_factor"], hint="write the warm-up and the straight line yourself"),
        verbose)


def check_param_groups(fn, verbose: bool = True) -> CheckResult:
    """04_training_a_vit, exercise 3: `fn(model, weight_decay) -> [decayed group, not-decayed group]`, each a dict
    {"params": [...], "weight_decay": ...}: decay on weight matrices and conv filters only -- none on norms,
    biases, the [class] token or the position embeddings -- as `minivit.optim.param_groups`, which the answer
    may not call."""
    from .cnn import CifarResNet
    from .config import get_preset
    from .optim import param_groups
    from .vit import ViT

    def case(build):
        def run():
            with torch.device("meta"):  # shapes and names only: no memory, no draw from the global RNG
                model = build()
            names = {id(p): n for n, p in model.named_parameters()}
            with _without(fn, ["minivit.optim.param_groups"],
                          "sort model.named_parameters() into the two groups yourself"):
                got = fn(model, 0.3)
            if not isinstance(got, (list, tuple)) or len(got) != 2 or not all(isinstance(g, dict) for g in got):
                return f"returned {type(got).__name__}, expected a list of two dicts (decayed, not decayed)"
            if [g.get("weight_decay") for g in got] != [0.3, 0.0]:
                return f"weight decays {[g.get('weight_decay') for g in got]}, expected [0.3, 0.0]"
            for g, want, what in zip(got, param_groups(model, 0.3), ("decayed", "not decayed")):
                have, need = {id(p) for p in g.get("params", [])}, {id(p) for p in want["params"]}
                if have != need:
                    wrong, missing = (sorted(names.get(i, "?") for i in ids) for ids in (have - need, need - have))
                    parts = [f"holds {len(wrong)} tensors it should not, e.g. {wrong[:3]}"] if wrong else []
                    parts += [f"misses {len(missing)}, e.g. {missing[:3]}"] if missing else []
                    return f"the {what} group " + " and ".join(parts)
            return None
        return run
    return _run("param groups", [
        ("ViT-Nano/4: blocks, [class] token, position embeddings", case(lambda: ViT.from_preset("ViT-Nano/4"))),
        ("an MLP head and mean pooling", case(lambda: ViT(get_preset("ViT-Nano/4", head="mlp", pool="mean")))),
        ("a ResNet: conv filters, BatchNorm, the fc layer", case(lambda: CifarResNet.from_preset("ResNet-8"))),
    ], verbose)


def check_clip_grad_norm(fn, verbose: bool = True) -> CheckResult:
    """04_training_a_vit, exercise 4: `fn(grads, max_norm) -> (clipped grads, total_norm)`: the global norm of all
    the gradients together (a list of tensors), and the gradients scaled by min(1, max_norm / total_norm) so that
    their global norm is at most `max_norm` -- what `torch.nn.utils.clip_grad_norm_` does in `fit`; the answer
    may not call it (nor its parts `get_total_norm` and `clip_grads_with_norm_`)."""
    def case(shapes, scale, seed):
        g = torch.Generator().manual_seed(seed)
        grads = [scale * torch.randn(*s, generator=g) for s in shapes]

        def run():
            params = [torch.zeros_like(t, requires_grad=True) for t in grads]
            for p, t in zip(params, grads):
                p.grad = t.clone()
            total = float(torch.nn.utils.clip_grad_norm_(params, 1.0))
            with _without(fn, ["torch.nn.utils.clip_grad_norm_", "torch.nn.utils.get_total_norm",
                               "torch.nn.utils.clip_grads_with_norm_"],
                          "compute the global norm of all the gradients together, then scale them yourself"):
                got = fn([t.clone() for t in grads], 1.0)
            if not isinstance(got, (tuple, list)) or len(got) != 2 or not isinstance(got[0], (list, tuple)):
                return f"returned {type(got).__name__}, expected a pair (list of clipped gradients, total norm)"
            clipped, norm = got
            if not isinstance(norm, (int, float, torch.Tensor)) or abs(float(norm) - total) > 1e-4 * max(1.0, total):
                return f"total norm {norm!r}, expected the global norm before clipping, {total:.5f}"
            if len(clipped) != len(params):
                return f"returned {len(clipped)} gradients for {len(params)} tensors"
            for i, (c, p) in enumerate(zip(clipped, params)):
                problem = _compare(c, p.grad, atol=1e-5, what=f"gradient {i}")
                if problem:
                    return problem
            return None
        return run
    return _run("clip_grad_norm", [
        ("one tensor of norm about 5: scaled down to norm 1", case([(25,)], 1.0, 0)),
        ("three tensors, each of norm below 1, together above: the norm is global", case([(4, 4), (4,), (3, 2)], 0.3, 1)),
        ("a norm below max_norm: unchanged", case([(6,), (2, 3)], 0.1, 2)),
    ], verbose)


# ---- 05_scaling.ipynb ----------------------------------------------------------------------------------


def _int_answer(got, want: int, what: str = "") -> str | None:
    if not isinstance(got, int) or isinstance(got, bool):
        return f"returned {type(got).__name__}, expected an int"
    return None if got == want else f"got {got:,}, counted {want:,} ({got / want - 1:+.2%}){what}"


def _vit_configs():
    from .config import get_preset
    return [("ViT-B/16 at 224 px, 1000 classes", get_preset("ViT-B/16")),
            ("ViT-B/16 at 384 px: the attention term grows faster", get_preset("ViT-B/16", image_size=384)),
            ("ViT-Nano/4 (MLP size 2D), grey 28x28, 10 classes",
             get_preset("ViT-Nano/4", image_size=28, in_channels=1, patch_size=7)),
            ("a non-square image, 32x64", get_preset("ViT-Nano/4", image_size=(32, 64)))]


_FLOP_COUNTERS = ["minivit.flops.count_flops", "minivit.flops.flop_breakdown",
                  "torch.utils.flop_counter.FlopCounterMode"]  # what counts FLOPs by running the model


def check_forward_flops(fn, verbose: bool = True) -> CheckResult:
    """05_scaling: `fn(config) -> int`, the FLOPs (2 per multiply-add, matrix products and the patch
    convolution only) of one image's forward pass through `minivit.ViT(config)`, from the config's numbers
    alone -- compared with `minivit.flops.forward_flops`, the formula 05 derives (equal to what `count_flops`
    counts, tests/test_flops.py), which the answer may not call, nor a counter."""
    from .flops import forward_flops

    def case(config):
        def run():
            want = forward_flops(config)
            with _without(fn, _FLOP_COUNTERS + ["minivit.flops.forward_flops"],
                          "count the products from the config's numbers yourself"):
                got = fn(config)
            return _int_answer(got, want)
        return run
    return _run("forward FLOPs", [(label, case(c)) for label, c in _vit_configs()], verbose)


def check_training_flops(fn, verbose: bool = True) -> CheckResult:
    """05_scaling, exercise 1: `fn(config) -> int`, the FLOPs of one training step on one image -- the forward
    pass and the backward pass -- through `minivit.ViT(config)`, from the config's numbers alone, compared with
    `count_flops(..., backward=True)` on the meta device, which the answer may not call, nor another counter
    (`forward_flops` is allowed)."""
    from .flops import count_flops, forward_flops
    from .vit import ViT

    def case(config):
        def run():
            with _without(fn, _FLOP_COUNTERS, "add the backward pass's products to the forward pass "
                                              "(forward_flops, or your formula), from the config's numbers"):
                got = fn(config)  # before the count: a refused answer costs none
            with torch.device("meta"):
                counted = count_flops(ViT(config), (1, config.in_channels, *config.image_hw), backward=True)
            fwd = forward_flops(config)
            hint = (" -- that is the forward pass alone" if got == fwd else
                    " -- 3x the forward pass; which input needs no gradient?" if got == 3 * fwd else "")
            return _int_answer(got, counted, hint)
        return run
    return _run("training FLOPs", [(label, case(c)) for label, c in _vit_configs()], verbose)


def check_resnet50_compute(answer, verbose: bool = True) -> CheckResult:
    """05_scaling, exercise 3: `answer`, the pre-training compute of R50x1 in Table 6 counted the notebook's way
    (torchvision's `resnet50()`, forward + backward FLOPs of one 224-px image x 303M JFT images x 7 epochs), in
    exaFLOPs; right within 0.5%."""
    from torchvision.models import resnet50

    from .flops import count_flops
    with torch.device("meta"):
        model = resnet50()
    fwd = count_flops(model, (1, 3, 224, 224))
    want = count_flops(model, (1, 3, 224, 224), backward=True) * 303e6 * 7 / 1e18

    def close():
        if not isinstance(answer, (int, float)) or isinstance(answer, bool):
            return f"expected a number of exaFLOPs, got {type(answer).__name__}"
        if abs(answer / want - 1) < 0.005:
            return None
        hint = (" (the forward pass alone?)" if abs(answer / (fwd * 303e6 * 7 / 1e18) - 1) < 0.01 else
                " (multiply-adds instead of FLOPs?)" if abs(2 * answer / want - 1) < 0.01 else "")
        return f"{answer:.4g} exaFLOPs is not it{hint}; Table 6 says 50"
    return _run("R50x1 pre-training compute", [("exaFLOPs of 7 epochs of JFT-300M", close)], verbose)


# ---- 06_hybrid.ipynb -----------------------------------------------------------------------------------


def check_hybrid_tokens(fn, verbose: bool = True) -> CheckResult:
    """06_hybrid: `fn(feature_map (B, C', h, w), weight (D, C', 1, 1), bias (D,)) -> tokens (B, h*w, D)`: the
    projection E applied to 1x1 "patches" of a CNN feature map, then the grid flattened row by row (§3.1) --
    what `minivit.HybridEmbed` does after its backbone (`proj`, then `rearrange`)."""
    import torch.nn.functional as F
    from einops import rearrange

    def case(b, c, h, w, d, seed):
        g = torch.Generator().manual_seed(seed)
        x, weight, bias = torch.randn(b, c, h, w, generator=g), torch.randn(d, c, 1, 1, generator=g), torch.randn(d, generator=g)
        expected = rearrange(F.conv2d(x, weight, bias), "b d h w -> b (h w) d")  # (B, h*w, D)
        return lambda: _compare(fn(x.clone(), weight.clone(), bias.clone()), expected, atol=1e-4)
    return _run("hybrid tokens", [
        ("a 4x4 map of 8 channels -> 16 tokens of width 6", case(2, 8, 4, 4, 6, 0)),
        ("a non-square 2x5 map (row by row, as patchify)", case(1, 3, 2, 5, 4, 1)),
        ("one cell: the bias is added", case(3, 5, 1, 1, 2, 2)),
    ], verbose)


def check_hybrid_grid(fn, verbose: bool = True) -> CheckResult:
    """06_hybrid, exercise 1: `fn(height, width) -> (h, w)`, the token grid of the paper's hybrid option (ii)
    (`minivit.resnet50_s16_backbone`) for an image of any size, worked out from its layers' kernels, strides and
    paddings -- compared with `minivit.hybrid.feature_shape`, which runs the backbone on the meta device. The
    answer may not run it: neither `feature_shape` nor a convolution (`torch.nn.functional.conv2d`) works in it."""
    from .hybrid import feature_shape, resnet50_s16_backbone
    with torch.device("meta"):
        backbone = resnet50_s16_backbone()

    def case(h, w, show_expected=True):
        def run():
            with _without(fn, ["minivit.hybrid.feature_shape", "torch.nn.functional.conv2d"],
                          "work the grid out from the layers' kernels k, strides s and paddings p (each turns n "
                          "pixels into floor((n + 2p - k) / s) + 1), without running the backbone"):
                got = fn(h, w)  # before the backbone's run: a refused answer costs none
            want = tuple(feature_shape(backbone, 3, (h, w))[1:])
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                return f"returned {type(got).__name__}, expected a pair (h, w)"
            if tuple(got) == want:
                return None
            if show_expected:
                return f"got {tuple(got)}, the backbone makes {want}"
            # the odd sizes hide the answer, so it cannot be found by trying values: say which side is off
            sides = [name for name, g, v in zip(("rows", "columns"), got, want) if g != v]
            return (f"got {tuple(got)}: the {' and '.join(sides)} are off; follow every stride-2 layer's rounding "
                    f"(floor((n + 2p - k) / s) + 1) through the stem and each stage")
        return run
    return _run("hybrid token grid", [
        ("224 x 224 px (the paper's pre-training size)", case(224, 224)),
        ("384 x 384 px (its fine-tuning size)", case(384, 384)),
        ("300 x 200 px: not a multiple of 16 (rows, then columns)", case(300, 200, show_expected=False)),
        ("17 x 17 px: every stride-2 layer rounds up", case(17, 17, show_expected=False)),
    ], verbose)


def check_short_stem_share(answer, verbose: bool = True) -> CheckResult:
    """06_hybrid, exercise 2: `answer`, the share (a fraction) of the forward FLOPs spent in the backbone of a
    hybrid whose stem stops after layer1 (`resnet_s4_backbone()`'s conv1, bn1, relu, layer1: a 16 x 16 grid of
    32 channels, 256 tokens) in front of ViT-Nano/4's Transformer, on one 32 x 32 image; right within 0.001."""
    from collections import OrderedDict

    from torch import nn

    from .config import get_preset
    from .flops import flop_breakdown
    from .hybrid import HybridEmbed, resnet_s4_backbone
    from .vit import ViT
    config = get_preset("ViT-Nano/4", patch_size=2)  # the stem's stride: the config describes its 16 x 16 grid
    with torch.device("meta"):
        stem = resnet_s4_backbone()
        short = nn.Sequential(OrderedDict((k, getattr(stem, k)) for k in ("conv1", "bn1", "relu", "layer1")))
        model = ViT(config, patch_embed=HybridEmbed(short, image_size=32, in_channels=3, dim=config.dim))
    parts = flop_breakdown(model, (1, 3, 32, 32))
    want = sum(parts["patch_embed.backbone"].values()) / sum(parts[""].values())

    def close():
        if not isinstance(answer, (int, float)) or isinstance(answer, bool):
            return f"expected a fraction, got {type(answer).__name__}"
        if abs(answer - want) < 1e-3:
            return None
        hint = " (a fraction, not a percentage)" if abs(answer / 100 - want) < 1e-3 else ""
        return f"{answer:.4g} is not it{hint}"
    return _run("backbone share, stride-2 stem", [("the backbone's share of the forward FLOPs", close)], verbose)


# ---- 07_finetuning_at_higher_resolution.ipynb ----------------------------------------------------------


def _patch_centres(old_grid, new_grid) -> torch.Tensor:
    """Where each patch of `new_grid` (h', w') lies "in the original image" (§3.2), in patch units of
    `old_grid` (h, w): (h', w', 2) with (row, col) = ((i + 0.5) h / h' - 0.5, (j + 0.5) w / w' - 0.5).
    Patch centres map to patch centres when both grids cover the same image: the sampling positions of
    `F.interpolate(..., align_corners=False)`, which `minivit.resize_pos_embed` uses."""
    (h, w), (h2, w2) = (tuple(int(v) for v in g) for g in (old_grid, new_grid))
    rows = (torch.arange(h2, dtype=torch.float64) + 0.5) * h / h2 - 0.5  # (h',)
    cols = (torch.arange(w2, dtype=torch.float64) + 0.5) * w / w2 - 0.5  # (w',)
    return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), dim=-1)  # (h', w', 2)


def check_patch_centres(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution: `fn(old_grid (h, w), new_grid (h', w')) -> (h', w', 2)`: the
    (row, col) of every new patch's centre in the old grid's patch coordinates (patch (0, 0)'s centre is
    (0, 0)), both grids covering the same image -- "according to their location in the original image" (§3.2)."""
    def case(old, new):
        return lambda: _compare(fn(old, new), _patch_centres(old, new), atol=1e-6, what="centres")
    return _run("patch centres", [
        ("4x4 -> 8x8: each old patch becomes 2x2 new ones", case((4, 4), (4 * 2, 4 * 2))),
        ("the same grid: every patch stays where it is", case((5, 5), (5, 5))),
        ("a non-square 8x8 -> 8x12 (rows, then columns)", case((8, 8), (8, 12))),
        ("a smaller grid, 6x6 -> 4x4", case((6, 6), (4, 4))),
    ], verbose)


def _linear_weights(n_old: int, n_new: int, align_corners: bool = False) -> torch.Tensor:
    """(n_new, n_old): row i holds the weights of the old entries in new entry i under linear interpolation along
    one axis, as `F.interpolate(mode="linear", antialias=False, align_corners=...)` computes it -- the 1-D factor
    of `minivit.resize_pos_embed(mode="bilinear", antialias=False)` (read off by interpolating the identity)."""
    import torch.nn.functional as F
    eye = torch.eye(n_old, dtype=torch.float64)[None]  # (1, n_old channels, n_old positions): channel k is e_k
    return F.interpolate(eye, size=n_new, mode="linear", align_corners=align_corners)[0].T  # (n_new, n_old)


def check_linear_weights(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution, exercise 1: `fn(n_old, n_new, align_corners=False) -> (n_new, n_old)`,
    the weights of linear interpolation from n_old to n_new entries along one axis: with `align_corners=False`
    (minivit, timm) new entry i sits at old coordinate (i + 1/2) n_old / n_new - 1/2, with `True` (the authors'
    `scipy.ndimage.zoom(..., order=1)`) at i (n_old - 1) / (n_new - 1); a coordinate beyond the first or last
    old entry takes that entry (clamped); otherwise the two old entries around it share the weight linearly.
    The answer may not read the weights off a resizing function: `F.interpolate`, `minivit.resize_pos_embed` and
    `scipy.ndimage.zoom` do not work in it."""
    def case(n_old, n_new, corners):
        def run():
            want = _linear_weights(n_old, n_new, corners)
            with _without(fn, ["torch.nn.functional.interpolate", "minivit.embeddings.resize_pos_embed",
                               "scipy.ndimage.zoom"],
                          "find where new entry i reads in the old grid, clamp it, and split its weight between "
                          "the two old entries around it"):
                got = fn(n_old, n_new, align_corners=corners)
            problem = _compare(got, want, atol=1e-6, what="weights")
            if problem and "wrong values" in problem and isinstance(got, torch.Tensor):
                sums = got.double().sum(-1)
                if not torch.allclose(sums, torch.ones_like(sums), atol=1e-6):
                    problem += "; every row must sum to 1 (a weighted average of old entries)"
            return problem
        return run
    return _run("linear interpolation weights", [
        ("4 -> 8, centres aligned (minivit, timm)", case(4, 8, False)),
        ("4 -> 8, corners aligned (the authors' code)", case(4, 8, True)),
        ("the same size, centres aligned: the identity", case(5, 5, False)),
        ("the same size, corners aligned: the identity", case(5, 5, True)),
        ("8 -> 12, centres aligned (not a whole factor)", case(8, 12, False)),
        ("3 -> 7, corners aligned", case(3, 7, True)),
        ("6 -> 4, centres aligned (a smaller grid)", case(6, 4, False)),
    ], verbose)


def _swap_tiles(images: torch.Tensor, quadrant: int) -> torch.Tensor:
    """(B, C, H, W) -> a copy with the top-left quadrant and quadrant `quadrant` (0 top-left, 1 top-right,
    2 bottom-left, 3 bottom-right) exchanged."""
    h, w = images.shape[-2] // 2, images.shape[-1] // 2
    out = images.clone()
    r, c = divmod(quadrant, 2)
    out[..., :h, :w] = images[..., r * h:(r + 1) * h, c * w:(c + 1) * w]
    out[..., r * h:(r + 1) * h, c * w:(c + 1) * w] = images[..., :h, :w]
    return out


def check_swap_tiles(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution, exercise 2: `fn(images (B, C, H, W), quadrant) -> (B, C, H, W)`: the
    mosaics with their top-left tile and the tile in `quadrant` (0 top-left, 1 top-right, 2 bottom-left,
    3 bottom-right; H and W even) exchanged, leaving `images` itself unchanged."""
    def case(shape, quadrant, seed):
        def run():
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
            before = x.clone()
            got = fn(x, quadrant)
            if not torch.equal(x, before):
                return "changed its input in place; return a new tensor and leave the test mosaics as they are"
            return _compare(got, _swap_tiles(before, quadrant), atol=0, what="mosaics")
        return run
    return _run("swap tiles", [
        ("quadrant 3: top-left <-> bottom-right", case((2, 3, 8, 8), 3, 0)),
        ("quadrant 1: top-left <-> top-right, a wide mosaic", case((1, 3, 4, 6), 1, 1)),
        ("quadrant 2: top-left <-> bottom-left, a tall mosaic", case((2, 1, 6, 4), 2, 2)),
        ("quadrant 0: nothing moves", case((1, 3, 4, 4), 0, 3)),
    ], verbose)


# ---- 08_inspecting_vit.ipynb ---------------------------------------------------------------------------


def _softmax_maps(b: int, layers: int, heads: int, tokens: int, seed: int, sharpness: float = 3.0) -> torch.Tensor:
    """Random attention maps (B, L, heads, T, T) whose rows are softmax outputs (sum 1), like a ViT's."""
    g = torch.Generator().manual_seed(seed)
    return (sharpness * torch.randn(b, layers, heads, tokens, tokens, generator=g)).softmax(dim=-1)


def check_mean_attention_distance(fn, verbose: bool = True) -> CheckResult:
    """08_inspecting_vit: `fn(maps (B, L, heads, T, T), grid_size (h, w), patch_size) -> (L, heads)`: per layer
    and head, the attention-weighted mean distance in pixels between the centres of each query patch and the
    key patches, the [class] token (index 0) dropped and each row renormalised to sum 1 over the patches,
    averaged over query patches and images -- as `minivit.inspection.mean_attention_distance`, which the answer
    may not call."""
    from .inspection import mean_attention_distance

    def case(b, layers, heads, grid, patch_size, seed, maps=None):
        t = 1 + grid[0] * grid[1]
        maps = _softmax_maps(b, layers, heads, t, seed) if maps is None else maps
        expected = mean_attention_distance(maps, grid, patch_size)

        def run():
            with _without(fn, ["minivit.inspection.mean_attention_distance"],
                          "drop the [class] token, renormalise each row over the patches and weight the distances "
                          "between patch centres yourself"):
                got = fn(maps.clone(), grid, patch_size)
            return _compare(got, expected, atol=1e-3, what="distances")
        return run

    t = 1 + 3 * 3
    to_class = torch.zeros(1, 1, 1, t, t)
    to_class[..., :, 0] = 0.5  # half of every row on [class]; the other half on the query patch itself or the next
    to_class[..., 1:, 1:] = 0.25 * (torch.eye(t - 1) + torch.eye(t - 1).roll(1, dims=1))
    to_class[..., 0, 1:] = 0.5 / (t - 1)
    return _run("mean attention distance", [
        ("random softmax maps, 2 images, 3 layers, 2 heads, a 4x4 grid of 8-pixel patches", case(2, 3, 2, (4, 4), 8, 0)),
        ("a non-square 2x3 grid (rows, then columns)", case(1, 2, 3, (2, 3), 16, 1)),
        ("half the attention on [class]: renormalise over the patches", case(1, 1, 1, (3, 3), 10, 2, maps=to_class)),
    ], verbose)


# ---- 09_masked_patch_prediction.ipynb ------------------------------------------------------------------


def _off_edge_images(b: int, h: int, w: int, p: int, seed: int) -> torch.Tensor:
    """Random uint8 images (b, 3, h, w) none of whose p x p patch means lies exactly on a 3-bit level edge
    (k 255 / 8), where float rounding could honestly go either way."""
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randint(0, 256, (b, 3, h, w), generator=g, dtype=torch.uint8)
        sums = x.long().unfold(2, p, p).unfold(3, p, p).sum(dim=(-1, -2))  # (b, 3, h/p, w/p) exact sums
        if not ((8 * sums) % (255 * p * p) == 0).any():
            return x


def check_color_codes(fn, verbose: bool = True) -> CheckResult:
    """09_masked_patch_prediction: `fn(images uint8 (B, 3, H, W), patch_size) -> (B, N)` integer colour classes:
    per patch (row by row, as `patchify`) the mean of each channel m in [0, 255], its 3-bit level
    min(7, floor(8 m / 255)), and the class 64 r + 8 g + b -- what `minivit.mpp.patch_color_codes` computes;
    the answer may not call it."""
    from .mpp import patch_color_codes

    def case(images, p):
        def run():
            want = patch_color_codes(images, p)
            with _without(fn, ["minivit.mpp.patch_color_codes"],
                          "average each patch's channels, take their 3-bit levels and combine them yourself"):
                got = fn(images.clone(), p)
            if isinstance(got, torch.Tensor) and got.is_floating_point():
                return f"returned a {got.dtype} tensor, expected integer colour classes (e.g. torch.long)"
            return _compare(got, want, atol=0, what="colour classes")
        return run
    pure = torch.tensor([[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 0, 255], [100, 150, 200]], dtype=torch.uint8)
    constant = pure.view(5, 3, 1, 1).expand(5, 3, 4, 4).contiguous()  # one colour per image, 2 x 2 patches
    return _run("colour codes", [
        ("black, white, red, blue, (100, 150, 200): 0, 511, 448, 7, 230", case(constant, 2)),
        ("random images, 8x8 with 4x4 patches", case(_off_edge_images(2, 8, 8, 4, 0), 4)),
        ("a non-square 4x12 image (patches row by row)", case(_off_edge_images(1, 4, 12, 2, 1), 2)),
    ], verbose)


def check_sub_patch_codes(fn, verbose: bool = True) -> CheckResult:
    """09_masked_patch_prediction, exercise 4: `fn(images uint8 (B, 3, H, W), patch_size, sub) -> (B, N, S)`:
    for every patch (row by row, as `patchify`) the colour classes of its S = (patch_size / sub)^2 sub-patches of
    sub x sub pixels, row by row inside the patch -- the targets of the paper's "4 x 4 downsized version" in
    miniature."""
    from einops import rearrange

    from .mpp import patch_color_codes

    def expected(images, p, sub):
        fine = patch_color_codes(images, sub)  # (B, (H/sub) * (W/sub)): the fine grid, row by row
        h, w, k = images.shape[-2] // p, images.shape[-1] // p, p // sub
        return rearrange(fine, "b (h i w j) -> b (h w) (i j)", h=h, i=k, w=w, j=k)  # (B, N, S)

    def case(images, p, sub):
        def run():
            got = fn(images.clone(), p, sub)
            if isinstance(got, torch.Tensor) and got.is_floating_point():
                return f"returned a {got.dtype} tensor, expected integer colour classes (e.g. torch.long)"
            return _compare(got, expected(images, p, sub), atol=0, what="sub-patch classes",
                            order_hint="patches row by row, and inside each patch its sub-patches row by row")
        return run
    return _run("sub-patch colour codes", [
        ("8x8 images, 4x4 patches of 2x2 sub-patches: (B, 4, 4)", case(_off_edge_images(2, 8, 8, 2, 2), 4, 2)),
        ("32x32 images as CIFAR-10's, 4x4 patches: (B, 64, 4)", case(_off_edge_images(2, 32, 32, 2, 3), 4, 2)),
        ("a non-square 8x16 image, 8x8 patches of 4x4 sub-patches: (1, 2, 4)", case(_off_edge_images(1, 8, 16, 4, 4), 8, 4)),
    ], verbose)
