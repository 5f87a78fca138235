"""Counting compute: the FLOPs of a forward pass, or of a training step, counted by PyTorch itself.

`count_flops(model, input_shape)` runs the model under `torch.utils.flop_counter.FlopCounterMode`, which
counts the floating-point operations of matrix products and convolutions as they happen: 2 per
multiply-add; softmax, LayerNorm, GELU and additions are not counted (they are a small share). Build big
models on PyTorch's `meta` device and nothing is allocated or computed, only shapes:

    with torch.device("meta"):
        model = ViT.from_preset("ViT-B/16")
    count_flops(model, (1, 3, 224, 224))               # 35.1e9 per image, forward
    count_flops(model, (1, 3, 224, 224), backward=True)  # forward + backward, about 3x

Many tables quote multiply-adds: timm's model cards list ViT-B/16 at 224 px as 17.6 "GMACs", and papers' tables
often call the same number "GFLOPs"; it is our 35.1e9 / 2. The paper's Table 6 gives pre-training compute in
exaFLOPs (10^18).

The count is the same on every device. PyTorch's fused attention kernels are counted only where the counter knows
their formula (the CUDA ones, not the CPU one), so `count_flops` runs attention through its written-out math
(`SDPBackend.MATH`: the two matrix products Q K^T and A V) -- 2·T²·D FLOPs each per layer and image, T tokens.

Introduced in 05_scaling.ipynb.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode


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


def count_flops(model: nn.Module, input_shape: tuple[int, ...], backward: bool = False) -> int:
    """FLOPs (2 per multiply-add) of one forward pass of `model` on a float input of `input_shape`
    (B, C, H, W), plus the backward pass of the summed output with `backward=True`.

    The input is made on the model's device: on the `meta` device the count costs no memory and no
    arithmetic. Attention is counted through its written-out matrix products, so the count is the same on
    every device. With `backward=True` the output may be a tensor or a tuple, list or dict of tensors (its
    floating-point tensors are summed). The model's train/eval mode is kept; its gradients are not touched on
    a real device (they are set to None again after a backward count).
    """
    params = list(model.parameters())
    if not params:
        raise ValueError("expected a model with parameters (its device and dtype set the input's)")
    if isinstance(input_shape, torch.Tensor):
        raise TypeError(f"expected an input shape such as (B, C, H, W), not a tensor: pass x.shape, here "
                        f"{tuple(input_shape.shape)}")
    if len(input_shape) < 2 or any(not isinstance(s, int) or s < 1 for s in input_shape):
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
    return int(counter.get_total_flops())
