"""ViTConfig checks and the preset registry, with every preset's parameter count pinned."""

import dataclasses

import pytest
import torch

from minivit import PRESETS, ViT, ViTConfig, get_preset, list_presets

# Parameter counts with 1000 classes and the linear head. The paper-size rows
# equal timm's VisionTransformer of the same config (checked below against timm).
PINNED = {
    "ViT-Ti/32": 6_131_560,
    "ViT-Ti/16": 5_717_416,
    "ViT-Ti/14": 5_694_376,
    "ViT-Ti/8": 5_719_720,
    "ViT-S/32": 22_878_952,
    "ViT-S/16": 22_050_664,
    "ViT-S/14": 22_004_584,
    "ViT-S/8": 22_055_272,
    "ViT-B/32": 88_224_232,
    "ViT-B/16": 86_567_656,
    "ViT-B/14": 86_475_496,
    "ViT-B/8": 86_576_872,
    "ViT-L/32": 306_535_400,
    "ViT-L/16": 304_326_632,
    "ViT-L/14": 304_203_752,
    "ViT-L/8": 304_338_920,
    "ViT-H/32": 634_960_360,
    "ViT-H/16": 632_199_400,
    "ViT-H/14": 632_045_800,
    "ViT-H/8": 632_214_760,
    "ViT-Nano/4": 206_376,
    "ViT-Micro/4": 938_856,
    "ViT-Nano/16": 476_488,
    # Hybrids: torchvision's BatchNorm ResNets (timm's BiT-based vit_base_r50_s16_224 has 97.89 M, GroupNorm and
    # standardized convs; minivit.hybrid explains the difference).
    "R-S4+ViT-Nano/4": 280_120,
    "R-S4+ViT-Micro/4": 1_013_624,
    "R-S16+ViT-Nano/16": 481_624,
    "R50+ViT-B/16": 98_659_112,
    "R50+ViT-B/32": 110_945_832,
    "R50+ViT-L/16": 316_483_624,
    "R50+ViT-L/32": 328_994_856,
}
# The numbers stated in the course's foundation issue (timm's counts).
REFERENCE = {
    "ViT-Ti/16": 5_717_416,
    "ViT-S/16": 22_050_664,
    "ViT-B/16": 86_567_656,
    "ViT-B/32": 88_224_232,
    "ViT-L/16": 304_326_632,
    "ViT-L/32": 306_535_400,
    "ViT-H/14": 632_045_800,
}


def count(name: str) -> int:
    with torch.device("meta"):  # no memory is allocated, even for ViT-H
        return ViT.from_preset(name, num_classes=1000).num_params()


def test_every_preset_is_pinned():
    assert set(list_presets()) == set(PINNED), "pin the parameter count of every new preset in PINNED"


@pytest.mark.parametrize("name", list(PINNED))
def test_preset_parameter_count(name):
    assert count(name) == PINNED[name]


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_counts(name):
    assert PINNED[name] == REFERENCE[name]


def test_counts_equal_timm():
    timm = pytest.importorskip("timm")
    from timm.models.vision_transformer import VisionTransformer

    for name, cfg in PRESETS.items():
        if cfg.backbone is not None:
            continue  # hybrids: see tests/test_hybrid.py
        with torch.device("meta"):
            ref = VisionTransformer(
                img_size=cfg.image_size, patch_size=cfg.patch_size, in_chans=cfg.in_channels, num_classes=1000,
                embed_dim=cfg.dim, depth=cfg.depth, num_heads=cfg.heads, mlp_ratio=cfg.mlp_dim / cfg.dim,
            )
        assert sum(p.numel() for p in ref.parameters()) == PINNED[name], name
    assert timm


def test_parameter_count_formula():
    """Count by hand from the paper's pieces for ViT-B/16."""
    c = get_preset("ViT-B/16")
    D, L, M, K, N, P = c.dim, c.depth, c.mlp_dim, c.num_classes, c.num_patches, c.patch_size
    embed = P * P * 3 * D + D + D + (N + 1) * D  # E, its bias, [class], E_pos
    block = 2 * 2 * D + (3 * D * D + 3 * D) + (D * D + D) + (D * M + M) + (M * D + D)
    head = 2 * D + D * K + K  # final LayerNorm and the linear head
    assert embed + L * block + head == count("ViT-B/16")


def test_get_preset_overrides_and_is_frozen():
    cfg = get_preset("ViT-B/16", num_classes=10, image_size=384)
    assert (cfg.num_classes, cfg.grid_size, cfg.num_patches) == (10, (24, 24), 576)
    assert PRESETS["ViT-B/16"].num_classes == 1000  # the registry is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.dim = 3  # type: ignore[misc]


def test_config_dict_round_trip():
    cfg = ViTConfig(image_size=(32, 48), patch_size=8, num_classes=5, dim=64, depth=2, heads=4, mlp_dim=128)
    assert ViTConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.grid_size == (4, 6) and cfg.num_patches == 24


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"image_size": 30, "patch_size": 16}, "not divisible by patch_size 16"),
        ({"dim": 100, "heads": 3}, "divisible by heads"),
        ({"pool": "max"}, "pool must be one of"),
        ({"head": "conv"}, "head must be one of"),
        ({"depth": 0}, "depth must be a positive int"),
        ({"dropout": 1.5}, "dropout must be in"),
        ({"image_size": (32, 32, 3)}, "image_size must be an int or"),
    ],
)
def test_bad_config_messages(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ViTConfig(**kwargs)


def test_hybrid_configs_describe_their_tokens():
    for name, backbone, stride, grid in (("R50+ViT-B/16", "resnet50_s16", 16, (14, 14)),
                                         ("R50+ViT-B/32", "resnet50_s32", 32, (7, 7)),
                                         ("R-S4+ViT-Nano/4", "resnet_s4", 4, (8, 8)),
                                         ("R-S16+ViT-Nano/16", "resnet_s16", 16, (8, 8))):
        c = get_preset(name)
        assert (c.backbone, c.patch_size, c.grid_size, c.is_hybrid) == (backbone, stride, grid, True)
        assert ViTConfig.from_dict(c.to_dict()) == c
    assert "backbone" not in get_preset("ViT-B/16").to_dict()  # a pure ViT's dict is as before (checkpoint keys)
    assert "backbone" not in repr(get_preset("ViT-B/16")) and "backbone='resnet50_s16'" in repr(get_preset("R50+ViT-B/16"))
    with pytest.raises(ValueError, match="tokens 32 px apart, so set patch_size=32, not 16"):
        get_preset("R50+ViT-B/32", patch_size=16)
    with pytest.raises(ValueError, match="backbone must be None .* or one of"):
        ViTConfig(backbone="resnet18")


def test_bad_preset_messages():
    with pytest.raises(ValueError, match="unknown preset 'ViT-Q/16'; expected one of"):
        get_preset("ViT-Q/16")
    with pytest.raises(ValueError, match="vit_tiny_patch16_224 is 'ViT-Ti/16'"):
        get_preset("vit_tiny_patch16_224")
    with pytest.raises(ValueError, match="unknown ViTConfig fields"):
        get_preset("ViT-B/16", width=3)
    with pytest.raises(ValueError, match="unknown ViTConfig fields"):
        ViTConfig.from_dict({"width": 3})
