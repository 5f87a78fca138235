"""The exercise checks of 05_scaling and 06_hybrid: a right answer passes, typical wrong ones fail with a hint,
the notebook's demonstration cell pasted in does not solve the exercise, and neither does a call to the
package's counter or a run of the backbone."""

import math
from collections import OrderedDict

import torch
from torch import nn
from torch.nn.modules.utils import _pair

import minivit
from minivit import ViT, resnet50_s16_backbone
from minivit.exercises import (check_forward_flops, check_hybrid_grid, check_resnet50_compute,
                               check_short_stem_share, check_training_flops)
from minivit.flops import count_flops, forward_flops
from minivit.hybrid import feature_shape
from tests.test_exercises import _refused


def _training_flops(c):  # a student's answer: the backward pass is two products per forward product,
    embed = 2 * c.num_patches * c.patch_size ** 2 * c.in_channels * c.dim  # except the images' gradient
    return 3 * forward_flops(c) - embed


def _forward_flops_by_hand(c):  # a student's formula: 2 FLOPs per multiply-add of every matrix product
    t = c.num_patches + 1
    per_layer = t * (3 * c.dim**2 + c.dim**2 + 2 * c.dim * c.mlp_dim) + 2 * t * t * c.dim  # qkv, proj, MLP; QK^T, AV
    head = c.dim * c.num_classes + (c.dim**2 if c.head == "mlp" else 0)
    return 2 * (c.num_patches * c.patch_size**2 * c.in_channels * c.dim + c.depth * per_layer + head)


def _counted(c, backward=False):  # the reviews' one-liner: the package's counter on the meta device
    with torch.device("meta"):
        return count_flops(ViT(c), (1, c.in_channels, *c.image_hw), backward=backward)


def test_forward_flops_check_uses_the_formula():
    assert check_forward_flops(_forward_flops_by_hand, verbose=False)
    r = check_forward_flops(lambda c: _forward_flops_by_hand(c) // 2, verbose=False)  # multiply-adds
    assert r.passed == 0 and "-50.00%" in r.failures[0]
    r = _refused(check_forward_flops, forward_flops, "minivit.flops.forward_flops")  # the answer itself
    assert "from the config's numbers" in r.failures[0]
    _refused(check_forward_flops, _counted, "minivit.flops.count_flops")


def test_training_flops_check_and_its_hints():
    assert check_training_flops(_training_flops, verbose=False)
    r = check_training_flops(forward_flops, verbose=False)  # the cell above 05's exercises, pasted in
    assert r.passed == 0 and "forward pass alone" in r.failures[0]
    r = check_training_flops(lambda c: 3 * forward_flops(c), verbose=False)
    assert r.passed == 0 and "which input needs no gradient" in r.failures[0]
    assert "expected an int" in check_training_flops(lambda c: None, verbose=False).failures[0]
    r = _refused(check_training_flops, lambda c: _counted(c, backward=True), "minivit.flops.count_flops")
    assert "backward pass's products" in r.failures[0]

    def flop_counter_mode(c):  # torch's counter, without the package's wrapper
        from torch.utils.flop_counter import FlopCounterMode
        with torch.device("meta"), FlopCounterMode(display=False) as counter:
            ViT(c)(torch.zeros(1, c.in_channels, *c.image_hw)).sum().backward()
        return counter.get_total_flops()
    _refused(check_training_flops, flop_counter_mode, "torch.utils.flop_counter.FlopCounterMode")
    assert minivit.count_flops is count_flops is minivit.flops.count_flops


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
    assert r.passed == 2 and len(r.failures) == 2
    # the odd sizes do not print the expected grid (review round 4, m14: no answer by trial and error)
    assert not any("the backbone makes" in f for f in r.failures)
    assert all("are off" in f and "floor((n + 2p - k) / s) + 1" in f for f in r.failures)
    assert "(2, 2)" not in r.failures[1] and "(19, 13)" not in r.failures[0]  # the expected grids, not shown
    r = check_hybrid_grid(lambda h, w: (math.ceil(w / 16), math.ceil(h / 16)), verbose=False)  # swapped
    assert r.passed == 3 and "300 x 200" in r.failures[0]  # only the non-square case tells
    assert "rows and columns are off" in r.failures[0] and "(19, 13)" not in r.failures[0]
    assert "expected a pair" in check_hybrid_grid(lambda h, w: None, verbose=False).failures[0]

    def from_the_layers(h, w):  # built and printed, not run: each strided layer of the main path, in order
        with torch.device("meta"):
            backbone = resnet50_s16_backbone()
        for name, m in backbone.named_modules():
            if isinstance(m, (nn.Conv2d, nn.MaxPool2d)) and "downsample" not in name:
                (k, _), (s, _), (p, _) = _pair(m.kernel_size), _pair(m.stride), _pair(m.padding)
                h, w = ((n + 2 * p - k) // s + 1 for n in (h, w))
        return h, w
    assert check_hybrid_grid(from_the_layers, verbose=False)

    def via_feature_shape(h, w):  # the reviews' one-liner: 06 c7's line
        with torch.device("meta"):
            return feature_shape(resnet50_s16_backbone(), 3, (h, w))[1:]

    def run_the_backbone(h, w):
        with torch.device("meta"):
            return tuple(resnet50_s16_backbone()(torch.empty(1, 3, h, w)).shape[-2:])
    r = _refused(check_hybrid_grid, via_feature_shape, "minivit.hybrid.feature_shape")
    assert "without running the backbone" in r.failures[0]
    _refused(check_hybrid_grid, run_the_backbone, "torch.nn.functional.conv2d")
    assert torch.nn.functional.conv2d is torch.conv2d


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
