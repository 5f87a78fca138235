"""The checks of the exercises of notebooks 04-06 (04_training_a_vit, 05_scaling, 06_hybrid): learning-rate
schedules, parameter groups and gradient clipping; FLOPs and compute; the hybrid's tokens, grid and stem.
Importable from `minivit.exercises`, as every check is."""

from __future__ import annotations

import torch

from ..grading import CheckResult, _compare, _run
from ._common import _without


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
    from ..optim import lr_factor
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
    from ..cnn import CifarResNet
    from ..config import get_preset
    from ..optim import param_groups
    from ..vit import ViT

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
    from ..config import get_preset
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
    from ..flops import forward_flops

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
    from ..flops import count_flops, forward_flops
    from ..vit import ViT

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

    from ..flops import count_flops
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
    from ..hybrid import feature_shape, resnet50_s16_backbone
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

    from ..config import get_preset
    from ..flops import flop_breakdown
    from ..hybrid import HybridEmbed, resnet_s4_backbone
    from ..vit import ViT
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
