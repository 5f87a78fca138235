"""minivit.finetune.load_pretrained and ViT.set_image_size: timm parity at a new size, head swap, files, errors."""

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minivit import ViT, ViTConfig, resize_pos_embed
from minivit import checkpoint as ckpt
from minivit.finetune import LoadReport, load_pretrained, read_state_dict
from tests.conftest import TINY, randomize_, tiny_model

timm = pytest.importorskip("timm")
from timm.layers import resample_abs_pos_embed  # noqa: E402
from timm.models.vision_transformer import VisionTransformer, checkpoint_filter_fn  # noqa: E402

# A small timm ViT (D=32, L=2, P=16) so 224 -> 384 px runs in milliseconds; mlp_ratio 4 -> mlp_dim 128.
DIM, DEPTH, HEADS = 32, 2, 2

# float32 tolerance: both models compute the same function from the same weights, but sum in different orders
# (timm's fused attention, ours); features are O(1) after LayerNorm, so they differ by ~1e-6 (a few float32 eps of
# 1.2e-7 per reduction). A misplaced position embedding (a transposed grid) changes the features by more than 1e-2
# (test_transposed_source_grid_is_caught), three orders above this tolerance; the [class] token's logits of a
# random network barely depend on positions, so the features of every token are compared, not only the logits.
TOL = dict(atol=1e-5, rtol=1e-5)


def randomize_tokens_(model: nn.Module, seed: int = 0) -> nn.Module:
    """A random head and [class] token (timm's init makes the token ~0), and N(0, 1) positions: timm's N(0, 0.02)
    positions are so small next to the O(1) patch embeddings that misplacing them barely moves the logits."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.cls_token.copy_(torch.randn(model.cls_token.shape, generator=g))
        model.pos_embed.copy_(torch.randn(model.pos_embed.shape, generator=g))
    if isinstance(model.head, nn.Linear):
        randomize_(model.head, seed=seed + 1)
    return model.eval()


def small_timm(img_size=224, num_classes=1000, seed=0, **kw) -> VisionTransformer:
    """timm's own initialisation (LayerNorm weights 1: O(1) features), see `randomize_tokens_`."""
    torch.manual_seed(seed)
    model = VisionTransformer(img_size=img_size, patch_size=16, embed_dim=DIM, depth=DEPTH, num_heads=HEADS,
                              num_classes=num_classes, **kw)
    return randomize_tokens_(model, seed)


def small_vit(image_size, num_classes=1000) -> ViT:
    return ViT(ViTConfig(image_size=image_size, patch_size=16, num_classes=num_classes, dim=DIM, depth=DEPTH,
                         heads=HEADS, mlp_dim=4 * DIM)).eval()


def images(h, w, n=2, seed=0):
    return torch.randn(n, 3, h, w, generator=torch.Generator().manual_seed(seed))


def assert_same_outputs(model, ref, x):
    with torch.no_grad():
        features, expected = model.forward_features(x), ref.forward_features(x)
        torch.testing.assert_close(features, expected, **TOL)
        logits, expected = model.forward_head(features), ref.forward_head(expected)
        assert expected.abs().max() > 1e-2  # a non-trivial output is compared
        torch.testing.assert_close(logits, expected, **TOL)


# --- load_pretrained: parity with timm's own resizing ----------------------------------------------------------

@pytest.mark.parametrize("new_size", [384, (160, 256)], ids=["384", "160x256"])
def test_matches_timm_at_new_size(new_size):
    """224 px weights into a model at 384 px (24x24 grid) or 160x256 (10x16): = timm built there from the same."""
    src = small_timm(224)
    ref = small_timm(new_size, seed=1)  # other weights, all overwritten below
    ref.load_state_dict(checkpoint_filter_fn(src.state_dict(), ref), strict=True)  # timm's resampling
    model = small_vit(new_size)
    report = load_pretrained(model, src.state_dict())
    grid = ref.patch_embed.grid_size
    assert report.adapted == (f"pos_embed: 14x14 -> {grid[0]}x{grid[1]}",)
    assert report.loaded == len(src.state_dict()) - 1  # all but pos_embed
    torch.testing.assert_close(model.pos_embed, ref.pos_embed, rtol=0, atol=0)  # the same interpolation
    assert_same_outputs(model, ref, images(*model.config.image_hw))


def test_vit_tiny_224_to_384():
    """timm's vit_tiny_patch16_224 (random weights; D=192, 3 heads, P=16, one block of 12 to stay fast) -> 384 px."""
    src = randomize_tokens_(timm.create_model("vit_tiny_patch16_224", pretrained=False, depth=1))
    ref = timm.create_model("vit_tiny_patch16_224", pretrained=False, depth=1, img_size=384).eval()
    ref.load_state_dict(checkpoint_filter_fn(src.state_dict(), ref), strict=True)
    model = ViT.from_preset("ViT-Ti/16", image_size=384, depth=1).eval()
    report = load_pretrained(model, src.state_dict())
    assert str(report) == "loaded 19 tensors from state dict; pos_embed: 14x14 -> 24x24"
    assert_same_outputs(model, ref, images(384, 384, n=1))


def test_non_square_source_needs_source_grid():
    src = small_timm((128, 192))  # an 8x12 grid: 96 patches, not a square
    ref = small_timm(256, seed=1)
    sd = src.state_dict()
    ref.load_state_dict({**sd, "pos_embed": resample_abs_pos_embed(sd["pos_embed"], [16, 16], old_size=[8, 12])})
    model = small_vit(256)
    with pytest.raises(ValueError, match=r"96 patch positions, not a square grid; pass source_grid=\(rows, cols\)"):
        load_pretrained(model, sd)
    with pytest.raises(ValueError, match="source_grid 5x5 has 25 cells but the source's pos_embed has 96"):
        load_pretrained(model, sd, source_grid=(5, 5))
    report = load_pretrained(model, sd, source_grid=(8, 12))
    assert report.adapted == ("pos_embed: 8x12 -> 16x16",)
    assert_same_outputs(model, ref, images(256, 256))


def test_transposed_source_grid_is_caught():
    """The parity tests can fail: reading an 8x12 grid as 12x8 misplaces the positions, far outside TOL."""
    src, ref = small_timm((128, 192)), small_timm(256, seed=1)
    sd = src.state_dict()
    ref.load_state_dict({**sd, "pos_embed": resample_abs_pos_embed(sd["pos_embed"], [16, 16], old_size=[8, 12])})
    model = small_vit(256)
    load_pretrained(model, sd, source_grid=(12, 8))
    with torch.no_grad():
        x = images(256, 256)
        assert (model.forward_features(x) - ref.forward_features(x)).abs().max() > 1e-2


def test_same_size_loads_unchanged(tmp_path):
    src = small_timm(224)
    model = small_vit(224)
    report = load_pretrained(model, src.state_dict())
    assert report == LoadReport(source="state dict", loaded=len(src.state_dict()), adapted=())
    for name, value in src.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name


# --- load_pretrained: the head (§3.2) ----------------------------------------------------------------------------

@pytest.mark.parametrize("num_classes", [10, 3])
def test_new_head_is_zero_and_loss_is_ln_k(num_classes, capsys):
    src = small_timm(224, num_classes=1000)
    model = small_vit(384, num_classes=num_classes)
    randomize_(model.head)  # the head must be replaced, not kept
    report = load_pretrained(model, src.state_dict(), verbose=True)
    line = f"head: replaced by zero-initialised {DIM} x {num_classes} linear layer (source had 1000 classes)"
    assert report.adapted == ("pos_embed: 14x14 -> 24x24", line)
    assert report.loaded == len(src.state_dict()) - 3  # all but pos_embed, head.weight, head.bias
    assert capsys.readouterr().out == str(report) + "\n"
    assert isinstance(model.head, nn.Linear) and model.head.weight.shape == (num_classes, DIM)
    assert model.config.num_classes == num_classes
    x, y = images(384, 384, n=4), torch.arange(4) % num_classes
    with torch.no_grad():
        logits = model(x)
        assert model.forward_features(x).abs().max() > 0.1  # the body was loaded; only the head is zero
    assert torch.count_nonzero(logits) == 0
    torch.testing.assert_close(F.cross_entropy(logits, y), torch.tensor(math.log(num_classes)))


def test_source_without_head():
    src = small_timm(224, num_classes=0)  # timm: head = Identity, no head.* keys
    model = small_vit(224, num_classes=5)
    report = load_pretrained(model, src.state_dict())
    assert report.adapted == (f"head: replaced by zero-initialised {DIM} x 5 linear layer (source had no head)",)


# --- load_pretrained: files ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("wrap", [lambda sd: sd, lambda sd: {"model": sd}, lambda sd: {"state_dict": sd, "epoch": 3}],
                         ids=["plain", "model", "state_dict"])
def test_pth_round_trip(tmp_path, wrap):
    sd = small_timm(224).state_dict()
    torch.save(wrap(sd), tmp_path / "w.pth")
    assert torch.load(tmp_path / "w.pth", weights_only=True) is not None  # a plain weights_only file
    model = small_vit(224)
    assert load_pretrained(model, tmp_path / "w.pth").source == str(tmp_path / "w.pth")
    for name, value in sd.items():
        assert torch.equal(model.state_dict()[name], value), name


def test_safetensors_round_trip(tmp_path):
    from safetensors.torch import save_file

    sd = small_timm(224).state_dict()
    save_file({k: v.contiguous() for k, v in sd.items()}, tmp_path / "w.safetensors")
    assert read_state_dict(tmp_path / "w.safetensors").keys() == sd.keys()
    model, ref = small_vit(384), small_vit(384)
    load_pretrained(model, str(tmp_path / "w.safetensors"))
    load_pretrained(ref, sd)
    for name, value in ref.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name


def test_minivit_checkpoint_file(tmp_path):
    trained = randomize_(tiny_model())
    path = ckpt.save_checkpoint(tmp_path / "last.pt", trained, epoch=2)
    model = tiny_model(seed=1, image_size=16, num_classes=7)  # 2x2 -> 4x4 grid, 3 -> 7 classes
    report = load_pretrained(model, path)
    assert report.adapted == ("pos_embed: 2x2 -> 4x4", "head: replaced by zero-initialised 16 x 7 linear layer "
                              "(source had 3 classes)")
    assert torch.equal(model.blocks[0].attn.qkv.weight, trained.blocks[0].attn.qkv.weight)
    torch.testing.assert_close(model.pos_embed, resize_pos_embed(trained.pos_embed, 2, 4), rtol=0, atol=0)


# --- load_pretrained: errors name what differs, and leave the model as it was ------------------------------------

def _unchanged_after_error(model, source, match, **kw):
    before = {k: v.clone() for k, v in model.state_dict().items()}
    config = model.config
    with pytest.raises(ValueError, match=match) as info:
        load_pretrained(model, source, **kw)
    assert model.config is config and model.state_dict().keys() == before.keys()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    return str(info.value)


def test_wrong_depth_names_keys():
    sd = small_timm(224).state_dict()
    model = ViT(ViTConfig(image_size=224, patch_size=16, dim=DIM, depth=1, heads=HEADS, mlp_dim=4 * DIM,
                          num_classes=10))
    message = _unchanged_after_error(model, sd, "state dict does not match the model")
    assert "depth: source has 2 blocks, model 1" in message
    names = ", ".join(sorted(k for k in sd if k.startswith("blocks.1.")))
    assert f"not in the model: {names}" in message


def test_wrong_width_names_shapes():
    sd = small_timm(224).state_dict()
    model = ViT(ViTConfig(image_size=224, patch_size=16, dim=16, depth=DEPTH, heads=HEADS, mlp_dim=4 * DIM))
    message = _unchanged_after_error(model, sd, r"width D: source 32, model 16")
    assert "cls_token: source shape (1, 1, 32), model shape (1, 1, 16)" in message
    assert "pos_embed: source shape (1, 197, 32), model shape (1, 197, 16)" in message
    assert "blocks.0.attn.qkv.weight: source shape (96, 32), model shape (48, 16)" in message


def test_unknown_and_missing_keys():
    sd = small_timm(224).state_dict()
    sd["reg_token"] = torch.zeros(1, 4, DIM)
    del sd["norm.weight"]
    message = _unchanged_after_error(small_vit(224), sd, "missing from the source: norm.weight")
    assert "not in the model: reg_token" in message
    sd = {**small_timm(224).state_dict(), "pos_embed": torch.zeros(1, 1, DIM)}
    _unchanged_after_error(small_vit(224), sd, "pos_embed holds 0 patch positions after the .class. entry")


def test_fc_norm_and_pre_logits_are_refused():
    sd = small_timm(224, global_pool="avg").state_dict()  # timm's fc_norm instead of norm
    message = _unchanged_after_error(small_vit(224), sd, r"norm after pooling \(fc_norm\) is not part of minivit.ViT")
    assert "fc_norm.bias, fc_norm.weight" in message and "missing from the source: norm.bias, norm.weight" in message
    sd = {**small_timm(224).state_dict(), "pre_logits.fc.weight": torch.zeros(DIM, DIM),
          "pre_logits.fc.bias": torch.zeros(DIM)}  # an older timm checkpoint with the MLP head's hidden layer
    _unchanged_after_error(small_vit(224), sd, "MLP pre-logits layer is not part of minivit.ViT and is not converted: "
                           "pre_logits.fc.bias, pre_logits.fc.weight")


def test_files_that_are_not_weights(tmp_path):
    model = small_vit(224)
    with pytest.raises(FileNotFoundError, match="no weights file at"):
        load_pretrained(model, tmp_path / "missing.pth")
    (tmp_path / "notes.pth").write_text("not a checkpoint")
    _unchanged_after_error(model, tmp_path / "notes.pth", "notes.pth is not a readable PyTorch weights file")
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 16)
    _unchanged_after_error(model, tmp_path / "bad.safetensors", "bad.safetensors is not a readable safetensors file")
    torch.save([1, 2, 3], tmp_path / "list.pt")
    _unchanged_after_error(model, tmp_path / "list.pt", "list.pt holds a list, not a state dict")
    torch.save({"epoch": 3, "lr": 0.1}, tmp_path / "meta.pt")
    _unchanged_after_error(model, tmp_path / "meta.pt", "meta.pt is not a state dict: .*epoch, lr")
    with pytest.raises(ValueError, match=r"got a VisionTransformer; pass its .state_dict\(\)"):
        load_pretrained(model, small_timm(224))


# --- ViT.set_image_size (vit.py) and PatchEmbed.set_image_size (patching.py) ------------------------------------

def test_set_image_size_equals_building_at_the_new_size():
    model = randomize_(tiny_model())  # 8x8 px, P=4: a 2x2 grid
    old = {k: v.clone() for k, v in model.state_dict().items()}
    assert model.set_image_size((12, 16)) is model  # chains
    assert model.config.image_size == (12, 16) and model.patch_embed.grid_size == (3, 4)
    assert model.patch_embed.num_patches == 12 and model.pos_embed.shape == (1, 13, 16)
    built = tiny_model(seed=1, image_size=(12, 16))
    built.load_state_dict({**old, "pos_embed": resize_pos_embed(old["pos_embed"], 2, (3, 4))})
    assert built.config == model.config
    x = images(12, 16, n=3)
    with torch.no_grad():
        assert model(x).abs().max() > 1e-3
        torch.testing.assert_close(model(x), built(x), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"size 12x16, got 8x8; .* call model.set_image_size\(\(8, 8\)\)"):
        model(images(8, 8))


def test_set_image_size_same_size_is_a_no_op():
    model = tiny_model()
    pos, config = model.pos_embed.detach().clone(), model.config
    ptr = model.pos_embed.data_ptr()
    model.set_image_size((8, 8))
    assert model.config is config and model.pos_embed.data_ptr() == ptr and torch.equal(model.pos_embed, pos)
    model.set_image_size(16).set_image_size(8)  # there and back: the grid is restored (values are interpolated)
    assert model.pos_embed.shape == pos.shape and model.config.image_size == 8


def test_set_image_size_keeps_parameter_dtype_and_flags():
    model = tiny_model().double()
    model.pos_embed.requires_grad_(False)
    param = model.pos_embed
    model.set_image_size(16)
    assert model.pos_embed is param and isinstance(param, nn.Parameter)
    assert param.dtype == torch.float64 and not param.requires_grad and param.shape == (1, 17, 16)
    assert model(images(16, 16).double()).dtype == torch.float64


def test_set_image_size_before_the_first_step_keeps_the_optimizer_working():
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model.set_image_size(16)
    assert any(p is model.pos_embed for p in opt.param_groups[0]["params"])
    before = model.pos_embed.detach().clone()
    model(images(16, 16)).logsumexp(-1).sum().backward()
    opt.step()
    assert before.shape == model.pos_embed.shape and not torch.equal(before, model.pos_embed)


def test_set_image_size_after_steps_fails_loudly_at_the_next_step():
    """Documented: an optimizer with state for the old shape (Adam moments) cannot step the resized pos_embed."""
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(images(8, 8)).logsumexp(-1).sum().backward()
    opt.step()
    model.set_image_size(16)
    assert model.pos_embed.grad is None  # the old-shaped gradient is cleared
    model(images(16, 16)).logsumexp(-1).sum().backward()
    with pytest.raises(RuntimeError, match="size of tensor"):
        opt.step()


def test_set_image_size_errors():
    model = tiny_model()
    with pytest.raises(ValueError, match="image_size 8x10 is not divisible by patch_size 4"):
        model.set_image_size((8, 10))
    assert model.config.image_size == 8 and model.patch_embed.grid_size == (2, 2)

    class FixedEmbed(nn.Module):  # a custom patch embedding without set_image_size
        num_patches, grid_size = 4, (2, 2)

        def forward(self, x):
            return torch.zeros(x.shape[0], 4, TINY.dim)

    custom = ViT(TINY, patch_embed=FixedEmbed())
    with pytest.raises(ValueError, match="the patch embedding FixedEmbed has no set_image_size"):
        custom.set_image_size(16)
    assert custom.config.image_size == 8 and custom.pos_embed.shape == (1, 5, TINY.dim)


def test_patch_embed_set_image_size():
    model = tiny_model()
    embed, weight = model.patch_embed, model.patch_embed.proj.weight.detach().clone()
    embed.set_image_size((4, 12))
    assert (embed.image_size, embed.grid_size, embed.num_patches) == ((4, 12), (1, 3), 3)
    assert torch.equal(embed.proj.weight, weight) and embed(images(4, 12)).shape == (2, 3, TINY.dim)
    for bad in [(4, 6), 0, (0, 8)]:
        with pytest.raises(ValueError, match="not divisible by patch size 4"):
            embed.set_image_size(bad)
    assert embed.image_size == (4, 12)


def test_checkpoint_after_a_size_change(tmp_path):
    model = randomize_(tiny_model()).set_image_size((16, 12))
    path = ckpt.save_checkpoint(tmp_path / "c.pt", model)
    loaded = ckpt.load_model(path)
    assert loaded.config.image_size == (16, 12) and loaded.config == model.config
    x = images(16, 12)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model.eval()(x), rtol=0, atol=0)
    ckpt.load_checkpoint(path, tiny_model(seed=1).set_image_size((16, 12)))  # resize first, then resume
    with pytest.raises(ValueError, match=r"config.image_size: checkpoint \[16, 12\], model 8"):
        ckpt.load_checkpoint(path, tiny_model(seed=1))


def test_minivit_checkpoint_grid_is_read_from_its_config(tmp_path):
    """F14 of the instructor trial: a 4x16 source was interpolated as 8x8 unless source_grid was passed."""
    from minivit import get_preset, save_checkpoint
    torch.manual_seed(0)
    src = ViT(get_preset("ViT-Nano/4", image_size=(16, 64)))  # 4 x 16 patches
    save_checkpoint(tmp_path / "nonsquare.pt", src)
    target = ViT(get_preset("ViT-Nano/4", image_size=(32, 128)))  # 8 x 32
    report = load_pretrained(target, tmp_path / "nonsquare.pt")
    assert "pos_embed: 4x16 -> 8x32" in str(report)
    torch.testing.assert_close(target.pos_embed.detach(), resize_pos_embed(src.pos_embed.detach(), (4, 16), (8, 32)),
                               rtol=0, atol=0)
    with pytest.raises(ValueError, match="source_grid .* contradicts the 4x16 grid in the checkpoint's config"):
        load_pretrained(ViT(get_preset("ViT-Nano/4", image_size=(32, 128))), tmp_path / "nonsquare.pt",
                        source_grid=(8, 8))
    with pytest.raises(FileNotFoundError, match="it is a folder"):
        load_pretrained(target, tmp_path)


def test_mlp_head_replacement_says_why():
    """F18: replacing a source's MLP head reported '(source had 10 classes)' though K was the same."""
    src = ViT(replace(TINY, head="mlp"))
    report = load_pretrained(ViT(TINY), src.state_dict())
    assert "source had an MLP head, with 3 classes" in str(report)
