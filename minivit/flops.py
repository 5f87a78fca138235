"""Counting compute: the FLOPs of a forward pass, or of a training step, counted by PyTorch itself.

`count_flops(model, input_shape)` runs the model under `torch.utils.flop_counter.FlopCounterMode`, which
counts the floating-point operations of matrix products and convolutions as they happen: 2 per
multiply-add; softmax, LayerNorm, GELU and additions are not counted (they are a small share). Build big
models on PyTorch's `meta` device and nothing is allocated or computed, only shapes:

    with torch.device("meta"):
        model = ViT.from_preset("ViT-B/16")
    count_flops(model, (1, 3, 224, 224))               # 35.1e9 per image, forward
    count_flops(model, (1, 3, 224, 224), backward=True)  # forward + backward, about 3x

Many tables (timm, DeiT) quote multiply-adds and call them FLOPs: their 17.6 "GFLOPs" for ViT-B/16 at
224 px is our 35.1e9 / 2. The paper's Table 6 gives pre-training compute in exaFLOPs (10^18).

Introduced in 05_scaling.ipynb.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def count_flops(model: nn.Module, input_shape: tuple[int, ...], backward: bool = False) -> int:
    """FLOPs (2 per multiply-add) of one forward pass of `model` on a float input of `input_shape`
    (B, C, H, W), plus the backward pass of the summed output with `backward=True`.

    The input is made on the model's device: on the `meta` device the count costs no memory and no
    arithmetic. The model's train/eval mode is kept; its gradients are not touched on a real device
    (they are set to None again after a backward count).
    """
    params = list(model.parameters())
    if not params:
        raise ValueError("expected a model with parameters (its device and dtype set the input's)")
    if len(input_shape) < 2 or any(not isinstance(s, int) or s < 1 for s in input_shape):
        raise ValueError(f"expected an input shape of positive ints such as (B, C, H, W), got {input_shape!r}")
    x = torch.zeros(input_shape, device=params[0].device, dtype=params[0].dtype)
    grads = [p.grad for p in params]
    try:
        with FlopCounterMode(display=False) as counter:
            with torch.set_grad_enabled(backward):
                out = model(x)
                if backward:
                    out.float().sum().backward()
    finally:
        for p, g in zip(params, grads):
            p.grad = g
    return int(counter.get_total_flops())
