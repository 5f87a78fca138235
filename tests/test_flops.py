"""count_flops: the counter sees matrix products and convolutions, forward and backward, on any device."""

import pytest
import torch
from torch import nn

from minivit import ViT
from minivit.flops import count_flops
from tests.conftest import TINY


def test_linear_layer_is_two_flops_per_multiply_add():
    assert count_flops(nn.Linear(10, 4, bias=False), (3, 10)) == 2 * 3 * 10 * 4
    conv = nn.Conv2d(3, 8, kernel_size=4, stride=4)
    assert count_flops(conv, (2, 3, 16, 16)) == 2 * 2 * (4 * 4) * (3 * 4 * 4) * 8  # B * positions * (C P P) * D


def test_vit_forward_matches_the_paper_size_formula():
    with torch.device("meta"):
        model = ViT.from_preset("ViT-B/16")
    flops = count_flops(model, (1, 3, 224, 224))
    n, d, l, m = 197, 768, 12, 3072
    formula = 2 * (196 * 768 * 768 + l * (n * (4 * d * d + 2 * d * m) + 2 * n * n * d) + d * 1000)
    assert flops == formula
    assert round(flops / 2 / 1e9, 1) == 17.6  # the multiply-adds timm and DeiT quote as "17.6 GFLOPs"


def test_backward_is_about_twice_the_forward_and_leaves_grads_alone():
    torch.manual_seed(0)
    model = ViT(TINY)
    fwd = count_flops(model, (2, 3, 8, 8))
    both = count_flops(model, (2, 3, 8, 8), backward=True)
    assert 2.5 * fwd < both < 3.0 * fwd  # backward: gradients for weights and inputs (not for the image)
    assert all(p.grad is None for p in model.parameters())
    assert count_flops(model, (4, 3, 8, 8)) == 2 * fwd  # linear in the batch


def test_bad_inputs():
    with pytest.raises(ValueError, match="a model with parameters"):
        count_flops(nn.ReLU(), (1, 3))
    with pytest.raises(ValueError, match=r"input shape of positive ints"):
        count_flops(nn.Linear(3, 3), (0, 3))
