"""Counting compute: the FLOPs of a forward pass, or of a training step, counted by PyTorch itself.

`count_flops(model, input_shape)` runs the model under `torch.utils.flop_counter.FlopCounterMode`, which
counts the floating-point operations of matrix products and convolutions as they happen: 2 per
multiply-add; softmax, LayerNorm, GELU and additions are not counted (they are a small share). Build big
models on PyTorch's `meta` device and nothing is allocated or computed, only shapes:

    with torch.device("meta"):
        model = ViT.from_preset("ViT-B/16")
    count_flops(model, (1, 3, 224, 224))               # 35.1e9 per image, forward
    count_flops(model, (1, 3, 224, 224), backward=True)  # forward + backward, about 3x
    flop_breakdown(model, (1, 3, 224, 224))["blocks"]  # {"addmm": ..., "bmm": ...}: linear maps vs attention
    forward_flops(model.config)                        # the same 35.1e9, from the config's numbers alone

A run's compute, for comparisons at equal training FLOPs (04_training_a_vit.ipynb, 06_hybrid.ipynb):

    per_image = training_flops_per_image(lambda: ViT.from_preset("ViT-Nano/4"), 16)  # one 16-px image, fwd + bwd
    flops_by_epoch(recipe, history, train, lambda size: training_flops_per_image(build, size))  # at each epoch's end

`forward_flops` is the formula 05_scaling.ipynb derives by hand, per image, T = N + 1 tokens, L layers:
2 [N P² C D + L (T (4D² + 2DM) + 2T²D) + DK] -- the patch embedding, the per-token linear maps (qkv, the
output projection, the MLP), attention's Q K^T and A V, and the head.

Many tables quote multiply-adds: timm's model cards list ViT-B/16 at 224 px as 17.6 "GMACs", and papers' tables
often call the same number "GFLOPs"; it is our 35.1e9 / 2. The paper's Table 6 gives pre-training compute in
exaFLOPs (10^18).

The count is the same on every device. PyTorch's fused attention kernels are counted only where the counter knows
their formula (the CUDA ones, not the CPU one), so `count_flops` runs attention through its written-out math
(`SDPBackend.MATH`: the two matrix products Q K^T and A V) -- 2·T²·D FLOPs each per layer and image, T tokens.

Introduced in 05_scaling.ipynb.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

if TYPE_CHECKING:
    from .config import ViTConfig

__all__ = ["count_flops", "flop_breakdown", "forward_flops"]


def _summed(out) -> torch.Tensor:
    """The sum of every floating-point tensor in a model's output (a tensor, or a tuple, list, dict or named tuple
    of them, e.g. `MaskedPatchPrediction`'s), for a backward pass through all of them."""
    if isinstance(out, torch.Tensor):
        return out.float().sum() if out.is_floating_point() else out.new_zeros((), dtype=torch.float32)
    parts = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else None
    if parts is None:
        raise ValueError(f"cannot count a backward pass through a {type(out).__name__} output; expected tensors, "
                         "or tuples, lists or dicts of them")
    return sum((_summed(p) for p in parts), torch.zeros((), device=_device_of(out)))


def _device_of(out) -> torch.device:
    for t in (out.values() if isinstance(out, dict) else out):
        if isinstance(t, torch.Tensor):
            return t.device
    return torch.device("cpu")


def _counter(model: nn.Module, input_shape: tuple[int, ...], backward: bool) -> FlopCounterMode:
    """Run `model` (and its backward pass) on a zero input of `input_shape` under a FlopCounterMode; return it."""
    params = list(model.parameters())
    if not params:
        raise ValueError("expected a model with parameters (its device and dtype set the input's)")
    if isinstance(input_shape, torch.Tensor):
        raise TypeError(f"expected an input shape such as (B, C, H, W), not a tensor: pass x.shape, here "
                        f"{tuple(input_shape.shape)}")
    if len(input_shape) < 2 or any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in input_shape):
        raise ValueError(f"expected an input shape of positive ints such as (B, C, H, W), got {input_shape!r}")
    x = torch.zeros(input_shape, device=params[0].device, dtype=params[0].dtype)
    grads = [p.grad for p in params]
    try:
        with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
            with torch.set_grad_enabled(backward):
                out = model(x)
                if backward:
                    _summed(out).backward()
    finally:
        for p, g in zip(params, grads):
            p.grad = g
    return counter


def count_flops(model: nn.Module, input_shape: tuple[int, ...], backward: bool = False) -> int:
    """FLOPs (2 per multiply-add) of one forward pass of `model` on a float input of `input_shape`
    (B, C, H, W), plus the backward pass of the summed output with `backward=True`.

    The input is made on the model's device: on the `meta` device the count costs no memory and no
    arithmetic. Attention is counted through its written-out matrix products, so the count is the same on
    every device. With `backward=True` the output may be a tensor or a tuple, list or dict of tensors (its
    floating-point tensors are summed). The model's train/eval mode is kept; its gradients are not touched on
    a real device (they are set to None again after a backward count).
    """
    return int(_counter(model, input_shape, backward).get_total_flops())


def flop_breakdown(model: nn.Module, input_shape: tuple[int, ...], backward: bool = False) -> dict[str, dict[str, int]]:
    """The FLOPs of `count_flops`, split by submodule and by operation: {module name: {op: FLOPs}}.

    Module names are those of `model.named_modules()` ("" is the whole model; "blocks", "blocks.0.attn",
    "patch_embed.backbone.layer1", ...), every module the counter saw doing arithmetic, its children's
    included; ops are ATen's names without the "aten." prefix: "addmm" and "mm" (linear maps), "bmm"
    (batched products: attention's Q K^T and A V), "convolution" (and "convolution_backward" with
    `backward=True`). `sum(flop_breakdown(m, s)[""].values()) == count_flops(m, s)`.
    """
    counts = _counter(model, input_shape, backward).get_flop_counts()
    root = type(model).__name__
    out: dict[str, dict[str, int]] = {}
    for key, ops in counts.items():
        if key == root:
            continue  # the root module under its class name: the same numbers as "Global"
        name = "" if key == "Global" else key.removeprefix(root + ".")
        out[name] = {getattr(op, "__name__", str(op)).split(".")[0].removeprefix("aten."): int(v)
                     for op, v in ops.items()}
    return out


def training_flops_per_image(build, size: int, channels: int = 3) -> int:
    """FLOPs of one training image (forward + backward) of the model `build()` makes, on `size` x `size` images
    with `channels` channels: built and counted on the meta device (shapes only, no arithmetic). A model with
    `set_image_size` (a ViT, a hybrid) is set to `size` first; a CNN takes any size."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int (the images' side in pixels), got {size!r}")
    with torch.device("meta"):
        model = build()
        set_size = getattr(model, "set_image_size", None)
        if callable(set_size):
            set_size(size)
        return count_flops(model, (1, channels, size, size), backward=True)


def flops_by_epoch(recipe, history, train, per_image) -> list[int]:
    """A run's training FLOPs at the end of each epoch, cumulative, phase by phase: each epoch's images
    (`recipe.epoch_images(history, train)`) times `per_image(size)`, the FLOPs of one training image at that side
    (e.g. `lambda s: training_flops_per_image(build, s)`; called once per side). A 16-px epoch costs less than a
    32-px one, so epochs of different phases are not equal steps of compute."""
    cost, out, total = {}, [], 0
    for size, images in recipe.epoch_images(history, train):
        if size not in cost:
            cost[size] = per_image(size)
        total += images * cost[size]
        out.append(total)
    return out


def forward_flops(config: "ViTConfig") -> int:
    """FLOPs (2 per multiply-add) of one image's forward pass through `minivit.ViT(config)`, from the config's
    numbers alone -- what `count_flops(ViT(config), (1, C, H, W))` counts:

        2 [N P² C D  +  L (T (4D² + 2DM) + 2T²D)  +  head]         T = N + 1 tokens

    N P² C D: the patch embedding E; per layer, for every token, qkv (3D²), the output projection (D²) and the
    MLP (2DM), and attention's Q K^T and A V (T²D each, all heads together); head: D K for the linear head,
    D² + D K for the pre-training MLP head. Pooling ("token" or "mean"), softmax, LayerNorm, GELU and the
    additions are not counted (see `count_flops`).
    """
    from .config import ViTConfig
    if not isinstance(config, ViTConfig):
        raise ValueError(f"expected a ViTConfig (e.g. minivit.get_preset('ViT-B/16')), got {type(config).__name__}")
    c = config
    n, t, d, m = c.num_patches, c.num_patches + 1, c.dim, c.mlp_dim
    embed = n * c.patch_size**2 * c.in_channels * d  # E on every patch
    per_layer = t * (4 * d * d + 2 * d * m) + 2 * t * t * d  # linear maps + attention
    head = d * c.num_classes + (d * d if c.head == "mlp" else 0)
    return 2 * (embed + c.depth * per_layer + head)
