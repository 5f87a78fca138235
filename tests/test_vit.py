"""The full ViT: shapes, heads, timm parity (same state dict -> same logits), input checks."""

import pytest
import torch

from minivit import ViT, ViTConfig
from tests.conftest import randomize_

SMALL = ViTConfig(image_size=32, patch_size=8, num_classes=10, dim=32, depth=2, heads=4, mlp_dim=64)


def test_shapes(gen):
    model = ViT(SMALL)
    x = torch.randn(3, 3, 32, 32, generator=gen)
    feats = model.forward_features(x)
    assert feats.shape == (3, 17, 32)  # (B, N+1, D)
    assert model.forward_head(feats, pre_logits=True).shape == (3, 32)
    assert model(x).shape == (3, 10)
    maps = model.attention_maps(x)
    assert len(maps) == 2 and maps[0].shape == (3, 4, 17, 17)


def test_zero_initialised_linear_head(gen):
    model = ViT(SMALL)
    assert model.head.weight.abs().sum() == 0 and model.head.bias.abs().sum() == 0
    assert torch.count_nonzero(model(torch.randn(2, 3, 32, 32, generator=gen))) == 0
    model.reset_classifier(5)
    assert model.head.out_features == 5 and model.config.num_classes == 5


def test_mlp_head_and_mean_pool(gen):
    model = ViT(ViTConfig(**{**SMALL.to_dict(), "head": "mlp", "pool": "mean"}))
    assert [n for n, _ in model.head.named_parameters()] == [
        "pre_logits.weight", "pre_logits.bias", "fc.weight", "fc.bias"
    ]
    x = torch.randn(2, 3, 32, 32, generator=gen)
    feats = model.forward_features(x)
    torch.testing.assert_close(model.forward_head(feats, pre_logits=True), feats[:, 1:].mean(1))
    assert model(x).shape == (2, 10)


def test_grey_non_square(gen):
    model = ViT(ViTConfig(image_size=(28, 14), patch_size=7, in_channels=1, num_classes=3, dim=16, depth=1,
                          heads=2, mlp_dim=32))
    assert model(torch.randn(2, 1, 28, 14, generator=gen)).shape == (2, 3)
    assert model.pos_embed.shape == (1, 1 + 4 * 2, 16)


@pytest.mark.parametrize("preset, timm_name", [("ViT-Ti/16", "vit_tiny_patch16_224"),
                                               ("ViT-B/16", "vit_base_patch16_224")])
def test_timm_parity(preset, timm_name, gen):
    timm = pytest.importorskip("timm")
    ref = randomize_(timm.create_model(timm_name, pretrained=False), seed=3).eval()
    model = ViT.from_preset(preset).eval()
    model.load_state_dict(ref.state_dict(), strict=True)
    x = torch.randn(2, 3, 224, 224, generator=gen)
    with torch.no_grad():
        logits, expected = model(x), ref(x)
        assert expected.abs().max() > 1e-3  # a non-trivial output is compared
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model.forward_features(x), ref.forward_features(x), atol=1e-5, rtol=1e-5)


def test_timm_names():
    timm = pytest.importorskip("timm")
    ref = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    assert [n for n, _ in ViT.from_preset("ViT-Ti/16").named_parameters()] == [n for n, _ in ref.named_parameters()]


def test_no_side_effects_on_construction():
    state = torch.random.get_rng_state()
    torch.manual_seed(123)
    a = torch.rand(1)
    torch.manual_seed(123)
    ViT(SMALL)  # construction uses the RNG (initialisation) but never re-seeds it
    assert not torch.equal(torch.rand(1), a)
    torch.random.set_rng_state(state)


@pytest.mark.parametrize(
    "x, message",
    [
        (torch.zeros(2, 3, 32), r"expected a float tensor of images \(B, C, H, W\), got \(2, 3, 32\)"),
        (torch.zeros(2, 3, 32, 32, dtype=torch.uint8), "expected float images"),
        (torch.zeros(2, 1, 32, 32), "expected 3 channels"),
        (torch.zeros(2, 3, 64, 64), "expected images of size 32x32, got 64x64"),
    ],
)
def test_input_errors(x, message):
    with pytest.raises(ValueError, match=message):
        ViT(SMALL)(x)


def test_config_type_error():
    with pytest.raises(ValueError, match="expected a ViTConfig"):
        ViT({"dim": 3})  # type: ignore[arg-type]


def test_initialisation_follows_the_jax_code():
    torch.manual_seed(0)
    model = ViT.from_preset("ViT-S/16")  # D = 384: enough values for tight statistics
    D = model.config.dim
    pos = model.pos_embed.detach()
    assert abs(pos.std().item() - 0.02) < 0.0005  # N(0, 0.02²) ...
    assert pos.abs().max() > 3 * 0.02  # ... not truncated at 2 std (which would give std 0.0176)
    proj = model.patch_embed.proj.weight.detach()  # LeCun normal: std 1/sqrt(fan_in), truncated at ±2/0.8796 std
    fan_in = proj[0].numel()
    assert abs(proj.std().item() * fan_in**0.5 - 1) < 0.01
    assert proj.abs().max() <= 2 / 0.87962566103423978 / fan_in**0.5 + 1e-6
    bound = (6 / (D + D)) ** 0.5  # Xavier-uniform on each D x D query / key / value map, not on the fused 3D x D
    for w in model.blocks[0].attn.qkv.weight.detach().chunk(3):
        assert w.abs().max() <= bound and w.abs().max() > 0.99 * bound
    fc1 = model.blocks[0].mlp.fc1
    assert 0 < fc1.bias.abs().max() < 1e-5  # MLP biases N(0, 1e-6²)
    assert not model.cls_token.any() and not model.head.weight.any()
    mlp_head = ViT(ViTConfig(**{**SMALL.to_dict(), "head": "mlp"})).head
    assert not mlp_head.fc.weight.any() and mlp_head.pre_logits.weight.std() > 0  # JAX zero-initialises `head`


def test_attention_maps_are_taken_in_eval_mode(gen):
    model = ViT(ViTConfig(**{**SMALL.to_dict(), "dropout": 0.5})).train()
    x = torch.randn(2, 3, 32, 32, generator=gen)
    a, b = model.attention_maps(x), model.attention_maps(x)
    assert all(torch.equal(u, v) for u, v in zip(a, b))  # no dropout: the same maps twice
    assert model.training  # mode restored


def test_patch_embedding_of_the_wrong_width_is_a_clear_error(gen):
    from minivit import PatchEmbed
    model = ViT(SMALL, patch_embed=PatchEmbed(32, 8, 3, dim=48))  # config.dim is 32
    with pytest.raises(ValueError, match=r"expected patch embeddings \(B, 16, 32\).*got \(2, 16, 48\).*dim=32"):
        model(torch.randn(2, 3, 32, 32, generator=gen))
