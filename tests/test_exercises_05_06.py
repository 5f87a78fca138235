"""The exercise checks of 05_scaling and 06_hybrid: a right answer passes, typical wrong ones fail with a hint,
and the notebook's demonstration cell pasted in does not solve the exercise."""

import math
from collections import OrderedDict

import torch
from torch import nn

from minivit.exercises import (check_forward_flops, check_hybrid_grid, check_resnet50_compute,
                               check_short_stem_share, check_training_flops)
from minivit.flops import count_flops, forward_flops


def _training_flops(c):  # a student's answer: the backward pass is two products per forward product,
    embed = 2 * c.num_patches * c.patch_size ** 2 * c.in_channels * c.dim  # except the images' gradient
    return 3 * forward_flops(c) - embed


def test_forward_flops_check_uses_the_formula():
    assert check_forward_flops(forward_flops, verbose=False)
    r = check_forward_flops(lambda c: forward_flops(c) // 2, verbose=False)  # multiply-adds
    assert r.passed == 0 and "-50.00%" in r.failures[0]


def test_training_flops_check_and_its_hints():
    assert check_training_flops(_training_flops, verbose=False)
    r = check_training_flops(forward_flops, verbose=False)  # the cell above 05's exercises, pasted in
    assert r.passed == 0 and "forward pass alone" in r.failures[0]
    r = check_training_flops(lambda c: 3 * forward_flops(c), verbose=False)
    assert r.passed == 0 and "which input needs no gradient" in r.failures[0]
    assert "expected an int" in check_training_flops(lambda c: None, verbose=False).failures[0]


def test_resnet50_compute_check():
    from torchvision.models import resnet50
    with torch.device("meta"):
        model = resnet50()
    train = count_flops(model, (1, 3, 224, 224), backward=True)
    exa = train * 303e6 * 7 / 1e18
    assert 51 < exa < 52  # Table 6 says 50: within 3%
    assert check_resnet50_compute(exa, verbose=False)
    assert "multiply-adds" in check_resnet50_compute(exa / 2, verbose=False).failures[0]
    fwd = count_flops(model, (1, 3, 224, 224)) * 303e6 * 7 / 1e18
    assert "forward pass alone" in check_resnet50_compute(fwd, verbose=False).failures[0]
    assert not check_resnet50_compute(50, verbose=False)  # the table's number is not the count
    assert "expected a number" in check_resnet50_compute(None, verbose=False).failures[0]


def test_hybrid_grid_check():
    assert check_hybrid_grid(lambda h, w: (math.ceil(h / 16), math.ceil(w / 16)), verbose=False)
    r = check_hybrid_grid(lambda h, w: (h // 16, w // 16), verbose=False)  # rounding down
    assert r.passed == 2 and all("the backbone makes" in f for f in r.failures)
    r = check_hybrid_grid(lambda h, w: (math.ceil(w / 16), math.ceil(h / 16)), verbose=False)  # swapped
    assert r.passed == 3 and "300 x 200" in r.failures[0]  # only the non-square case tells
    assert "expected a pair" in check_hybrid_grid(lambda h, w: None, verbose=False).failures[0]


def test_short_stem_share_check():
    from minivit import HybridEmbed, ViT, get_preset, resnet_s4_backbone
    from minivit.flops import flop_breakdown
    config = get_preset("ViT-Nano/4", patch_size=2)  # the config's patch size is the stem's stride: a 16 x 16 grid
    stem = resnet_s4_backbone()
    short = nn.Sequential(OrderedDict((k, getattr(stem, k)) for k in ("conv1", "bn1", "relu", "layer1")))
    model = ViT(config, patch_embed=HybridEmbed(short, image_size=32, in_channels=3, dim=config.dim))
    assert model.patch_embed.num_patches == 256
    parts = flop_breakdown(model, (1, 3, 32, 32))
    share = sum(parts["patch_embed.backbone"].values()) / sum(parts[""].values())
    assert 0.04 < share < 0.08  # the Transformer on 257 tokens dwarfs a stem that stops at stride 2
    assert check_short_stem_share(share, verbose=False)
    assert "not a percentage" in check_short_stem_share(100 * share, verbose=False).failures[0]
    assert not check_short_stem_share(0.42, verbose=False)  # the stride-4 hybrid's share
