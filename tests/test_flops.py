"""count_flops: the counter sees matrix products and convolutions, forward and backward, on any device;
flop_breakdown splits its count; forward_flops is the same count from a config's numbers."""

import pytest
import torch
from torch import nn

from minivit import ViT
from minivit import get_preset
from minivit.flops import count_flops, flop_breakdown, forward_flops
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
    assert round(flops / 2 / 1e9, 1) == 17.6  # the multiply-adds timm's model card lists as "17.6 GMACs"


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


def _models():
    from minivit import CifarResNet, HybridEmbed, resnet_s4_backbone
    c = ViT.from_preset("ViT-Nano/4").config
    return {"ViT": lambda: ViT(c),
            "hybrid": lambda: ViT(c, patch_embed=HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3,
                                                             dim=c.dim)),
            "CNN": lambda: CifarResNet.from_preset("ResNet-14")}


@pytest.mark.parametrize("name", ["ViT", "hybrid", "CNN"])
def test_the_count_is_the_same_on_every_device(name):
    # PyTorch's fused CPU attention kernel has no FLOP formula: counted naively, attention would vanish on the CPU
    build = _models()[name]
    cpu = build()
    with torch.device("meta"):
        meta = build()
    for backward in (False, True):
        assert count_flops(cpu, (2, 3, 32, 32), backward=backward) == count_flops(meta, (2, 3, 32, 32),
                                                                                backward=backward)


def test_vit_nano_counts_attention_on_the_cpu():
    model = ViT.from_preset("ViT-Nano/4")  # D = 64, 4 layers, T = 65 tokens, MLP 2D, 10 classes
    t, d, layers, m = 65, 64, 4, 128
    formula = 2 * (64 * 48 * d + layers * (t * (4 * d * d + 2 * d * m) + 2 * t * t * d) + d * 10)
    assert count_flops(model, (1, 3, 32, 32)) == formula


def test_backward_through_a_model_whose_output_is_not_a_tensor():
    from minivit import MaskedPatchPrediction
    mpp = MaskedPatchPrediction(ViT.from_preset("ViT-Nano/4"))
    fwd = count_flops(mpp, (2, 3, 32, 32))
    assert 2.5 * fwd < count_flops(mpp, (2, 3, 32, 32), backward=True) < 3.1 * fwd


def test_count_flops_given_a_tensor_asks_for_its_shape():
    model = ViT.from_preset("ViT-Nano/4")
    with pytest.raises(TypeError, match=r"pass x.shape, here \(1, 3, 32, 32\)"):
        count_flops(model, torch.zeros(1, 3, 32, 32))


@pytest.mark.parametrize("name, changes", [
    ("ViT-B/16", {}), ("ViT-B/32", {}), ("ViT-L/14", {}), ("ViT-B/16", {"image_size": 384}),
    ("ViT-Nano/4", {}), ("ViT-Nano/4", {"image_size": (32, 64)}),  # a non-square image
    ("ViT-Nano/4", {"image_size": 28, "in_channels": 1, "patch_size": 7}),  # grey, Fashion-MNIST's size
    ("ViT-B/16", {"head": "mlp", "pool": "mean"}),  # the pre-training head: D^2 more multiply-adds
])
def test_forward_flops_formula_equals_the_counter(name, changes):
    config = get_preset(name, **changes)
    with torch.device("meta"):
        model = ViT(config)
    assert forward_flops(config) == count_flops(model, (1, config.in_channels, *config.image_hw))


def test_forward_flops_needs_a_config():
    with pytest.raises(ValueError, match="expected a ViTConfig"):
        forward_flops("ViT-B/16")


def test_breakdown_splits_the_count_by_module_and_operation():
    config = get_preset("ViT-Nano/4")
    model = ViT(config)
    parts = flop_breakdown(model, (1, 3, 32, 32))
    assert sum(parts[""].values()) == count_flops(model, (1, 3, 32, 32))
    t, d, layers = config.num_patches + 1, config.dim, config.depth
    assert parts["blocks"]["bmm"] == layers * 2 * (2 * t * t * d)  # attention: Q K^T and A V
    assert parts["blocks.0.attn.qkv"] == {"addmm": 2 * t * d * 3 * d}
    assert parts["patch_embed"] == {"convolution": 2 * config.num_patches * 4 * 4 * 3 * d}
    assert parts["head"] == {"addmm": 2 * d * 10}
    both = flop_breakdown(model, (1, 3, 32, 32), backward=True)
    assert sum(both[""].values()) == count_flops(model, (1, 3, 32, 32), backward=True)
    assert "convolution_backward" in both[""]


def test_training_is_three_forward_passes_less_the_images_gradient():
    # every matrix product's backward is two products of its size (for its input and its weight), except the
    # patch embedding's: the images need no gradient (05_scaling's exercise 1)
    for name in ("ViT-B/16", "ViT-Nano/4"):
        config = get_preset(name)
        with torch.device("meta"):
            model = ViT(config)
        embed = 2 * config.num_patches * config.patch_size ** 2 * config.in_channels * config.dim
        assert count_flops(model, (1, 3, *config.image_hw), backward=True) == 3 * forward_flops(config) - embed
