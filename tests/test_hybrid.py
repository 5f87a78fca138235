"""HybridEmbed: token grids, the ViT around it, row-major tokens, set_image_size, errors; the R50 variants vs timm."""

import pytest
import torch
import torchvision
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck

from minivit import ViT, get_preset
from minivit.hybrid import (
    RESNET50_BLOCKS,
    HybridEmbed,
    feature_shape,
    resnet50_s16_backbone,
    resnet50_s32_backbone,
    resnet_s4_backbone,
    resnet_s16_backbone,
)
from tests.conftest import assert_layouts_agree, randomize_

NANO = get_preset("ViT-Nano/4")  # 32 px, D = 64, patch 4 -> 8 x 8 tokens


def nano_embed(image_size=32) -> HybridEmbed:
    return HybridEmbed(resnet_s4_backbone(), image_size=image_size, in_channels=3, dim=NANO.dim)


def stage_blocks(backbone: nn.Module) -> list[list[type]]:
    return [[type(b) for b in m] for n, m in backbone.named_children() if n.startswith("layer")]


@pytest.mark.parametrize(
    "build, in_channels, size, grid, channels",
    [
        (resnet_s4_backbone, 3, 32, (8, 8), 64),  # CIFAR-10: N = 64, like patch 4
        (resnet_s4_backbone, 1, 28, (7, 7), 64),  # Fashion-MNIST
        (resnet_s16_backbone, 3, 128, (8, 8), 64),  # Imagenette: like patch 16
    ],
)
def test_small_backbones_token_grid(gen, build, in_channels, size, grid, channels):
    embed = HybridEmbed(build(in_channels), image_size=size, in_channels=in_channels, dim=24)
    assert embed.image_size == (size, size) and embed.grid_size == grid and embed.feature_dim == channels
    assert embed.num_patches == grid[0] * grid[1]
    tokens = embed(torch.randn(1, in_channels, size, size, generator=gen))
    assert tokens.shape == (1, grid[0] * grid[1], 24)
    assert all(b is BasicBlock for stage in stage_blocks(embed.backbone) for b in stage)


@pytest.mark.parametrize(
    "build, grid, channels, blocks",
    [(resnet50_s16_backbone, (14, 14), 1024, (3, 4, 9)), (resnet50_s32_backbone, (7, 7), 2048, (3, 4, 6, 3))],
)
def test_r50_token_grids_and_blocks(build, grid, channels, blocks):
    with torch.device("meta"):
        embed = HybridEmbed(build(), image_size=224, in_channels=3, dim=768)
    assert embed.grid_size == grid and embed.num_patches == grid[0] * grid[1] and embed.feature_dim == channels
    stages = stage_blocks(embed.backbone)
    assert tuple(len(s) for s in stages) == blocks
    assert all(b is Bottleneck for s in stages for b in s)
    assert sum(len(s) for s in stages) == sum(RESNET50_BLOCKS) == 16  # option (ii) keeps ResNet-50's 16 blocks


def test_r50_s32_is_torchvision_resnet50_without_head():
    with torch.device("meta"):
        ours, ref = resnet50_s32_backbone(), torchvision.models.resnet50()
    expected = {k: v.shape for k, v in ref.state_dict().items() if not k.startswith("fc.")}
    assert {k: v.shape for k, v in ours.state_dict().items()} == expected


@pytest.mark.parametrize(
    "build, timm_name, preset",
    [
        (resnet50_s16_backbone, "vit_base_r50_s16_224", "ViT-B/16"),
        (resnet50_s32_backbone, "vit_large_r50_s32_224", "ViT-L/32"),  # stride 32: the "/32" (was "/16": refused now)
    ],
)
def test_r50_hybrids_match_timm(build, timm_name, preset):
    """timm's R50 hybrids (BiT ResNets: GroupNorm, standardized convs): the same grid, backbone size and ViT keys."""
    timm = pytest.importorskip("timm")
    with torch.device("meta"):  # one encoder block is enough to compare names
        ref = timm.create_model(timm_name, pretrained=False, num_classes=1000, depth=1)
        config = get_preset(preset, num_classes=1000, depth=1)
        ours = ViT(config, patch_embed=HybridEmbed(build(), image_size=224, in_channels=3, dim=config.dim))
    assert ours.patch_embed.grid_size == tuple(ref.patch_embed.grid_size)
    assert ours.patch_embed.feature_dim == ref.patch_embed.feature_dim
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(ours.patch_embed.backbone) == count(ref.patch_embed.backbone)
    rest = lambda m: {k: v.shape for k, v in m.state_dict().items() if ".backbone." not in k}  # noqa: E731
    assert rest(ours) == rest(ref)


def test_vit_with_hybrid_embed_forward_backward(gen):
    model = ViT(NANO, patch_embed=nano_embed())
    randomize_(model.head)  # the zero-initialised head would stop every gradient before it
    x = torch.randn(2, 3, 32, 32, generator=gen)
    logits = model(x)
    assert logits.shape == (2, 10) and model.pos_embed.shape == (1, 65, 64)
    logits.square().sum().backward()
    names = ("patch_embed.backbone.conv1.weight", "patch_embed.proj.weight", "pos_embed", "blocks.0.attn.qkv.weight")
    for name in names:
        assert model.get_parameter(name).grad.abs().sum() > 0, name


def test_state_dict_keys_equal_plain_vit_plus_backbone():
    hybrid, plain = ViT(NANO, patch_embed=nano_embed()).state_dict(), ViT(NANO).state_dict()
    backbone = {k for k in hybrid if k.startswith("patch_embed.backbone.")}
    assert {"patch_embed.backbone.conv1.weight", "patch_embed.backbone.layer2.0.bn2.running_mean"} <= backbone
    assert set(hybrid) - backbone == set(plain)
    differ = {k for k in plain if hybrid[k].shape != plain[k].shape}
    assert differ == {"patch_embed.proj.weight"}
    assert hybrid["patch_embed.proj.weight"].shape == (64, 64, 1, 1)  # C' = 64 -> D = 64, 1 x 1
    assert plain["patch_embed.proj.weight"].shape == (64, 3, 4, 4)


def test_vit_initialisation_keeps_backbone_and_lecun_inits_proj():
    embed = nano_embed()
    before = {k: v.clone() for k, v in embed.backbone.state_dict().items()}
    ViT(NANO, patch_embed=embed)
    after = embed.backbone.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # reset_parameters touches no conv or BatchNorm
    std = embed.proj.weight.std().item()  # LeCun normal over fan_in = C' = 64 (PyTorch's default: 0.072)
    assert abs(std * 64**0.5 - 1) < 0.1 and torch.all(embed.proj.bias == 0)


def test_tokens_are_proj_of_backbone_flattened_row_major(gen):
    embed = HybridEmbed(resnet_s4_backbone(), image_size=(32, 48), in_channels=3, dim=16).eval()
    randomize_(embed.proj)
    x = torch.randn(2, 3, 32, 32 + 16, generator=gen)
    with torch.no_grad():
        features = embed.backbone(x)  # (2, 64, 8, 12)
        tokens = embed(x)
    w, b = embed.proj.weight[:, :, 0, 0], embed.proj.bias  # (16, 64), (16,)
    for i, j in [(0, 0), (0, 11), (1, 0), (7, 5), (7, 11)]:
        torch.testing.assert_close(tokens[:, i * 12 + j], features[:, :, i, j] @ w.T + b)
    assert tokens.shape == (2, 96, 16)


def test_set_image_size_non_square(gen):
    embed = nano_embed()
    embed.set_image_size((32, 48))
    assert embed.image_size == (32, 48) and embed.grid_size == (8, 12) and embed.num_patches == 96
    assert embed(torch.randn(1, 3, 32, 48, generator=gen)).shape == (1, 96, 64)
    with pytest.raises(ValueError, match=r"expects \(64, 8, 12\), as for 32x48 images"):
        embed(torch.randn(1, 3, 32, 32, generator=gen))
    embed.set_image_size(32)
    assert embed.image_size == (32, 32) and embed.grid_size == (8, 8) and embed.num_patches == 64


def test_grid_is_measured_not_assumed():
    assert feature_shape(resnet_s4_backbone(), 3, (30, 31)) == (64, 8, 8)  # stride-2 convs round up
    assert feature_shape(nn.Conv2d(2, 5, kernel_size=3, stride=3), 2, 12) == (5, 4, 4)
    assert feature_shape(nn.Identity(), 4, (3, 5)) == (4, 3, 5)


def test_shape_probe_changes_nothing():
    backbone = resnet_s4_backbone()
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    HybridEmbed(backbone, image_size=32, in_channels=3, dim=8)
    assert backbone.training and all(torch.equal(before[k], v) for k, v in backbone.state_dict().items())


def test_forward_errors(gen):
    embed = nano_embed()
    with pytest.raises(ValueError, match=r"turned 64x64 images into a \(64, 16, 16\) feature map, but this embedding "
                                         r"expects \(64, 8, 8\), as for 32x32 images; resize the images to 32x32 "
                                         r"or call set_image_size\(\(64, 64\)\)"):
        embed(torch.randn(1, 3, 64, 64, generator=gen))
    with pytest.raises(ValueError, match=r"expected 3 channels \(B, 3, H, W\), got shape \(1, 1, 32, 32\)"):
        embed(torch.randn(1, 1, 32, 32, generator=gen))
    with pytest.raises(ValueError, match=r"expected a 4-D tensor"):
        embed(torch.randn(3, 32, 32, generator=gen))
    with pytest.raises(ValueError, match=r"expected 3 channels"):
        ViT(NANO, patch_embed=nano_embed())(torch.randn(1, 1, 32, 32, generator=gen))
    embed.backbone = nn.Sequential(embed.backbone, nn.Flatten(2))  # a backbone changed after construction
    with pytest.raises(ValueError, match=r"4-D feature map \(B, C', h, w\), got \(1, 64, 64\)"):
        embed(torch.randn(1, 3, 32, 32, generator=gen))


def test_construction_errors():
    with pytest.raises(ValueError, match=r"4-D feature map \(B, C', h, w\), got \(2, 4096\)"):
        HybridEmbed(nn.Sequential(resnet_s4_backbone(), nn.Flatten()), image_size=32, in_channels=3, dim=8)
    with pytest.raises(ValueError, match=r"backbone failed on \(B, 1, 32, 32\) images: .*check in_channels"):
        HybridEmbed(resnet_s4_backbone(in_channels=3), image_size=32, in_channels=1, dim=8)
    with pytest.raises(ValueError, match="expected the backbone to be an nn.Module, got function"):
        HybridEmbed(resnet_s4_backbone, image_size=32, in_channels=3, dim=8)
    with pytest.raises(ValueError, match="dim must be a positive int, got 0"):
        HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3, dim=0)
    with pytest.raises(ValueError, match="positive image size"):
        nano_embed().set_image_size((0, 32))


# ---- hybrids as first-class models: presets, configs that describe them, save/load, load_pretrained, stride ----

def test_hybrid_preset_equals_the_hand_built_hybrid():
    """ViT.from_preset("R-S4+ViT-Nano/4") builds notebook 06's ViT(config, patch_embed=HybridEmbed(...)), same seed
    same weights, and the hand-built one's config names its backbone too."""
    torch.manual_seed(0)
    preset = ViT.from_preset("R-S4+ViT-Nano/4")
    torch.manual_seed(0)
    by_hand = ViT(NANO, patch_embed=nano_embed())
    assert preset.config == by_hand.config == get_preset("R-S4+ViT-Nano/4")
    assert preset.state_dict().keys() == by_hand.state_dict().keys()
    assert all(torch.equal(v, by_hand.state_dict()[k]) for k, v in preset.state_dict().items())
    assert isinstance(preset.patch_embed, HybridEmbed) and preset.patch_embed.backbone_name == "resnet_s4"


@pytest.mark.parametrize("name, stride, grid", [("R-S4+ViT-Nano/4", 4, (8, 8)), ("R-S16+ViT-Nano/16", 16, (8, 8)),
                                                ("R50+ViT-B/16", 16, (14, 14)), ("R50+ViT-B/32", 32, (7, 7))])
def test_hybrid_config_grid_and_token_stride_are_the_models(name, stride, grid):
    with torch.device("meta"):
        model = ViT.from_preset(name)
    assert model.config.grid_size == model.patch_embed.grid_size == grid
    assert model.config.num_patches == model.patch_embed.num_patches == model.pos_embed.shape[1] - 1
    assert model.token_stride == model.patch_embed.stride == model.config.patch_size == stride


def test_pure_vit_token_stride_is_the_patch_size():
    assert ViT(NANO).token_stride == 4 and ViT.from_preset("ViT-B/16").token_stride == 16


def test_a_mismatched_hybrid_is_refused():
    """H2/H12 of the instructor trial: a stride-16 stem in a patch-4 config built silently, config stale."""
    with pytest.raises(ValueError, match=r"makes a 2x2 grid of tokens but the config describes 8x8 \(patch_size 4 "
                                         r"at 32x32 px\).*patch_size=16"):
        ViT(NANO, patch_embed=HybridEmbed(resnet_s16_backbone(), image_size=32, in_channels=3, dim=64))
    with pytest.raises(ValueError, match="config is a hybrid with backbone 'resnet_s4'"):
        ViT(get_preset("R-S4+ViT-Nano/4"), patch_embed=HybridEmbed(nn.Conv2d(3, 8, 4, 4), 32, 3, 64))


def test_hybrid_token_stride_in_mean_attention_distance(gen):
    """H13: the distances of a hybrid are in pixels when its token stride is passed."""
    from minivit import mean_attention_distance
    model = ViT.from_preset("R-S16+ViT-Nano/16").eval()
    maps = model.attention_maps(torch.randn(1, 3, 128, 128, generator=gen))
    d = mean_attention_distance(maps, model.patch_embed.grid_size, model.token_stride)  # (L, heads)
    uniform = mean_attention_distance(torch.full((1, 1, 1, 65, 65), 1 / 65), (8, 8), 16)
    assert d.shape == (4, 4) and abs(d.mean() - uniform.mean()) < 0.2 * uniform.mean()  # ~ 8x8 grid x 16 px


def test_save_and_load_model_round_trip_a_hybrid(tmp_path, gen):
    """H11: load_model could not rebuild a hybrid; now it does, also a hand-built one around a named backbone."""
    from minivit import load_checkpoint, load_model, save_checkpoint
    for model in (ViT.from_preset("R-S4+ViT-Nano/4"), ViT(NANO, patch_embed=nano_embed())):
        randomize_(model)
        model.eval()
        save_checkpoint(tmp_path / "h.pt", model)
        loaded = load_model(tmp_path / "h.pt")
        x = torch.randn(2, 3, 32, 32, generator=gen)
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), model(x), rtol=0, atol=0)
    custom = ViT(NANO, patch_embed=HybridEmbed(nn.Sequential(nn.Conv2d(3, 8, 4, 4)), 32, 3, 64))
    save_checkpoint(tmp_path / "custom.pt", custom)
    with pytest.raises(ValueError, match=r"hybrid whose config names no backbone .*build the model yourself and call "
                                         r"minivit.load_checkpoint\(path, model\)"):
        load_model(tmp_path / "custom.pt")
    again = ViT(NANO, patch_embed=HybridEmbed(nn.Sequential(nn.Conv2d(3, 8, 4, 4)), 32, 3, 64))
    load_checkpoint(tmp_path / "custom.pt", again)  # the way the error names
    assert all(torch.equal(v, custom.state_dict()[k]) for k, v in again.state_dict().items())


def test_load_pretrained_fills_a_hybrid_at_another_size(tmp_path, gen):
    from minivit import load_pretrained, resize_pos_embed, save_checkpoint
    source = randomize_(ViT.from_preset("R-S4+ViT-Nano/4"))
    save_checkpoint(tmp_path / "h.pt", source)
    target = ViT.from_preset("R-S4+ViT-Nano/4", image_size=48, num_classes=5)
    report = load_pretrained(target, tmp_path / "h.pt")
    assert "pos_embed: 8x8 -> 12x12" in str(report) and "source had 10 classes" in str(report)
    sd = target.state_dict()
    backbone = [k for k in sd if k.startswith("patch_embed.")]
    assert len(backbone) > 10 and all(torch.equal(sd[k], source.state_dict()[k]) for k in backbone)
    torch.testing.assert_close(sd["pos_embed"], resize_pos_embed(source.pos_embed.detach(), 8, 12))
    assert target(torch.randn(1, 3, 48, 48, generator=gen)).shape == (1, 5)


def test_channels_last_backbone_computes_the_same_tokens(gen):
    """The backbone runs on NHWC input (a speed choice, as minivit.cnn's); the tokens and gradients are the NCHW ones."""
    torch.manual_seed(0)
    model = ViT.from_preset("R-S4+ViT-Nano/4").double().eval()
    randomize_(model.head)
    x = torch.randn(2, 3, 32, 32, generator=gen, dtype=torch.float64)
    assert_layouts_agree(model, model.patch_embed, x)
