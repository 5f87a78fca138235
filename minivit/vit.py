"""The Vision Transformer (paper §3.1, Eq. 1–4).

    z_0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos        (1)  patch_embed, cls_token, pos_embed
    z_l = Block(z_{l-1}),  l = 1..L                        (2, 3) blocks
    y   = LN(z_L^0)                                        (4)  norm, then the [class] token

`forward_features` computes Eq. 1–3 and the final LayerNorm for every token;
`forward_head` pools (the [class] token, or the mean of the patch tokens) and
applies the head. Two heads, as in the paper (§3.1, §3.2): "a MLP with one
hidden layer at pre-training time and by a single linear layer at fine-tuning
time", the latter "a zero-initialized D × K feedforward layer".

Parameter names equal timm's `VisionTransformer`, so a timm state dict of the
same config loads with `load_state_dict(..., strict=True)` -- for `pool="token"`
with `head="linear"`, timm's default. (`pool="mean"` follows the paper's JAX
code, which applies the final LayerNorm to every token and then averages; timm's
`global_pool="avg"` averages first and then applies a separate `fc_norm`.)

    model = ViT.from_preset("ViT-B/16", num_classes=1000)
    logits = model(images)  # (B, 3, 224, 224) -> (B, 1000)

Shape legend: B batch, C channels, H W image size, N patches, D width, K classes.

Introduced in 03_transformer_encoder.ipynb.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import nn

from .config import ViTConfig, get_preset
from .embeddings import init_pos_embed_, prepend_class_token, resize_pos_embed
from .encoder import LAYER_NORM_EPS, Encoder
from .patching import PatchEmbed, lecun_normal_


def _config_of(config: ViTConfig, patch_embed: nn.Module) -> ViTConfig:
    """`config` checked against a patch embedding built outside it; for a HybridEmbed around a named backbone,
    with `backbone` set (so the config says what builds the model). ValueError when they disagree."""
    grid = getattr(patch_embed, "grid_size", None)
    if grid is not None and tuple(grid) != config.grid_size:
        (h, w), (gh, gw) = config.image_hw, tuple(grid)
        stride = h // gh if gh and h % gh == 0 and h // gh == (w // gw if gw and w % gw == 0 else None) else None
        fix = (f"build the config with patch_size={stride} (the embedding's stride in pixels), e.g. "
               f"get_preset(name, patch_size={stride}), or use a hybrid preset (minivit.list_presets())"
               if stride else "build the embedding for the config's image_size")
        raise ValueError(f"the patch embedding makes a {gh}x{gw} grid of tokens but the config describes "
                         f"{config.grid_size[0]}x{config.grid_size[1]} (patch_size {config.patch_size} at {h}x{w} px), "
                         f"so config.grid_size and num_patches would not describe the model; {fix}")
    name = getattr(patch_embed, "backbone_name", None)
    if config.backbone is not None and name != config.backbone:
        raise ValueError(f"the config is a hybrid with backbone {config.backbone!r} but the patch embedding "
                         f"{type(patch_embed).__name__} has {name!r}; pass patch_embed=None to build the config's")
    if name is not None and config.backbone is None:
        config = replace(config, backbone=name)  # checks patch_size == the backbone's stride
    return config


class MlpHead(nn.Module):
    """The pre-training head: Linear D -> D, tanh, Linear D -> K. (B, D) -> (B, K)."""

    def __init__(self, dim: int, num_classes: int):
        super().__init__()
        self.pre_logits = nn.Linear(dim, dim)
        self.act = nn.Tanh()
        self.fc = nn.Linear(dim, num_classes)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As the paper's JAX code: LeCun-normal `pre_logits`, zero-initialised output layer, zero biases."""
        lecun_normal_(self.pre_logits.weight)
        nn.init.zeros_(self.pre_logits.bias)
        nn.init.zeros_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.act(self.pre_logits(x)))  # (B, K)


class ViT(nn.Module):
    """Vision Transformer. `forward`: float images (B, C, H, W) -> logits (B, K).

    `patch_embed` may be replaced by any module mapping (B, C, H, W) to
    (B, N, D) with `num_patches` and `grid_size` attributes (e.g. a CNN stem
    for the hybrid model); by default it is `PatchEmbed` built from `config`,
    or for a hybrid config (`config.backbone` set, e.g. preset "R-S4+ViT-Nano/4")
    `minivit.hybrid.HybridEmbed` around that backbone. Its grid must be the
    config's `grid_size` (a hybrid's `patch_size` is its backbone's stride), so
    `model.config` always describes the model; a `HybridEmbed` around a named
    backbone sets `config.backbone`, so `load_model` can rebuild the model.
    `token_stride`: pixels between neighbouring tokens, the `patch_size` that
    `minivit.mean_attention_distance` takes.

    `config.num_classes` defaults to 1000 for the paper's presets and to 10 for
    the course presets (`ViT-Nano/4`, `ViT-Micro/4`).
    """

    def __init__(self, config: ViTConfig, patch_embed: nn.Module | None = None):
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise ValueError(f"expected a ViTConfig, got {type(config).__name__}; see ViT.from_preset")
        if patch_embed is None and config.backbone is not None:  # a hybrid preset: build its CNN stem
            from .hybrid import HybridEmbed, build_backbone
            patch_embed = HybridEmbed(build_backbone(config.backbone, config.in_channels), config.image_size,
                                      config.in_channels, config.dim)
        elif patch_embed is not None:
            config = _config_of(config, patch_embed)
        self.config = config
        c = config
        if patch_embed is None:
            patch_embed = PatchEmbed(c.image_size, c.patch_size, c.in_channels, c.dim)
        self.patch_embed = patch_embed
        self.num_prefix_tokens = 1
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.dim))  # (1, 1, D)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, c.dim))  # (1, N+1, D)
        self.pos_drop = nn.Dropout(c.dropout)
        self.blocks = Encoder(c.dim, c.depth, c.heads, c.mlp_dim, c.dropout)
        self.norm = nn.LayerNorm(c.dim, eps=LAYER_NORM_EPS)
        self.head = nn.Linear(c.dim, c.num_classes) if c.head == "linear" else MlpHead(c.dim, c.num_classes)
        self.reset_parameters()

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "ViT":
        """Build a named preset (see `minivit.list_presets()`), with any config field overridden."""
        return cls(get_preset(name, **overrides))

    def reset_parameters(self) -> None:
        """The initialisation of the paper's JAX code (google-research/vision_transformer, `models_vit.py`).

        Patch projection E: LeCun normal (`PatchEmbed.reset_parameters`); attention: Xavier-uniform
        query, key, value and output maps; MLP: Xavier-uniform weights, biases N(0, 1e-6²); position
        embedding N(0, 0.02²); [class] token zero; LayerNorms one and zero; the linear head zero, the MLP
        head's hidden layer LeCun normal and its output layer zero (the JAX code zero-initialises `head`
        in both cases). The paper itself states only the zero-initialised fine-tuning head (§3.2).
        """
        for m in self.modules():
            if m is not self and hasattr(m, "reset_parameters") and not isinstance(m, (nn.Linear, nn.Conv2d)):
                m.reset_parameters()  # Attention, Mlp, MlpHead, PatchEmbed, LayerNorm (ones, zeros)
        proj = getattr(self.patch_embed, "proj", None)
        if isinstance(proj, nn.Conv2d) and not isinstance(self.patch_embed, PatchEmbed):
            lecun_normal_(proj.weight)  # a custom patch embedding (e.g. the hybrid's 1x1 projection)
            nn.init.zeros_(proj.bias)
        init_pos_embed_(self.pos_embed)
        nn.init.zeros_(self.cls_token)
        if isinstance(self.head, nn.Linear):
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Eq. 1: images (B, C, H, W) -> z_0 (B, N+1, D)."""
        if not isinstance(images, torch.Tensor) or images.ndim != 4:
            shape = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"expected a float tensor of images (B, C, H, W), got {shape}")
        if not images.is_floating_point():
            raise ValueError(
                f"expected float images (normalise uint8 images first, e.g. minivit.data.normalize), got {images.dtype}"
            )
        return self._add_class_and_positions(self.patch_embed(images))  # (B, N+1, D)

    def _add_class_and_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """Eq. 1 after E: patch embeddings (B, N, D) -> [x_class; tokens] + E_pos, then dropout (B, N+1, D)."""
        n = self.pos_embed.shape[1] - self.num_prefix_tokens
        if tokens.shape[-1] != self.config.dim or tokens.shape[1] != n:
            raise ValueError(f"expected patch embeddings (B, {n}, {self.config.dim}) to match pos_embed, got "
                             f"{tuple(tokens.shape)}; build the patch embedding with dim={self.config.dim} for the "
                             "model's image size (or change both with model.set_image_size)")
        x = prepend_class_token(tokens, self.cls_token)  # (B, N+1, D)
        return self.pos_drop(x + self.pos_embed)  # (B, N+1, D)

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        """Eq. 1–3 and the final LayerNorm: (B, C, H, W) -> (B, N+1, D), the [class] token first."""
        x = self.blocks(self.embed(images))  # (B, N+1, D)
        return self.norm(x)  # (B, N+1, D)

    def forward_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """Patch embeddings (B, N, D) -> features (B, N+1, D): [class] token, E_pos, Eq. 2–3, final LayerNorm.

        `forward_features(images)` equals `forward_tokens(patch_embed(images))`; masked patch prediction
        (`minivit.mpp`) calls it on corrupted patch embeddings.
        """
        expected = (self.pos_embed.shape[1] - self.num_prefix_tokens, self.pos_embed.shape[2])
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3 or tuple(tokens.shape[1:]) != expected:
            shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise ValueError(f"expected patch embeddings (B, {expected[0]}, {expected[1]}), got {shape}")
        x = self.blocks(self._add_class_and_positions(tokens))  # (B, N+1, D)
        return self.norm(x)  # (B, N+1, D)

    def pool(self, features: torch.Tensor) -> torch.Tensor:
        """(B, N+1, D) -> (B, D): the [class] token (Eq. 4), or the mean of the patch tokens."""
        if self.config.pool == "token":
            return features[:, 0]  # (B, D)
        return features[:, self.num_prefix_tokens :].mean(dim=1)  # (B, D)

    def forward_head(self, features: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        """(B, N+1, D) -> logits (B, K), or the pooled representation (B, D) with `pre_logits`."""
        y = self.pool(features)  # (B, D)
        return y if pre_logits else self.head(y)  # (B, K)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) float images -> (B, K) logits."""
        return self.forward_head(self.forward_features(images))

    @torch.no_grad()
    def attention_maps(self, images: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's attention weights for `images`: a list of L tensors (B, heads, N+1, N+1).

        Computed in eval mode (no dropout), so the maps are deterministic; the model's train/eval mode is
        restored afterwards.
        """
        was_training = self.training
        self.eval()
        try:
            _, maps = self.blocks(self.embed(images), return_attention=True)
        finally:
            self.train(was_training)
        return maps

    def reset_classifier(self, num_classes: int) -> None:
        """Replace the head by a zero-initialised D x K linear layer (fine-tuning, §3.2)."""
        self.config = replace(self.config, num_classes=num_classes, head="linear")
        head = nn.Linear(self.config.dim, num_classes)
        nn.init.zeros_(head.weight)
        nn.init.zeros_(head.bias)
        ref = self.cls_token
        self.head = head.to(device=ref.device, dtype=ref.dtype)

    def set_image_size(self, image_size: int | tuple[int, int]) -> "ViT":
        """Take images of another size (H, W) from now on, in place, and return the model (§3.2).

        "When feeding images of higher resolution, we keep the patch size the
        same, which results in a larger effective sequence length. [...] We
        therefore perform 2D interpolation of the pre-trained position
        embeddings, according to their location in the original image." (§3.2)

        The patch embedding's grid changes (`patch_embed.set_image_size`; its
        weights stay), `pos_embed` (1, N+1, D) is resized to the new grid with
        `minivit.resize_pos_embed`, and `config.image_size` is updated; H and W
        must be multiples of P. The same size is a no-op.

        `pos_embed` stays the same `nn.Parameter` object (same device, dtype,
        `requires_grad`; its `.grad` is cleared), so call this before building
        the optimizer: an optimizer built earlier that has not stepped yet still
        trains it, but one holding state for the old shape (momentum, Adam
        moments) fails at its next step. Call it before DDP or `torch.compile`.

            model = ViT.from_preset("ViT-Ti/16").set_image_size(384)  # 14x14 -> 24x24 grid
        """
        config = replace(self.config, image_size=image_size)  # checks H, W are multiples of P
        if config.image_hw == self.config.image_hw:
            return self
        set_size = getattr(self.patch_embed, "set_image_size", None)
        if not callable(set_size):
            raise ValueError(
                f"the patch embedding {type(self.patch_embed).__name__} has no set_image_size(image_size) method; "
                "add one that updates its image_size, grid_size and num_patches"
            )
        old_grid = tuple(self.patch_embed.grid_size)
        set_size(config.image_hw)
        new_grid = tuple(self.patch_embed.grid_size)
        if new_grid != old_grid:
            resized = resize_pos_embed(self.pos_embed.detach(), old_grid, new_grid, self.num_prefix_tokens)
            self.pos_embed.data = resized  # (1, N'+1, D), the same Parameter: an optimizer holding it still does
            self.pos_embed.grad = None
        self.config = config
        return self

    @property
    def token_stride(self) -> int | float | tuple:
        """Pixels between the centres of neighbouring tokens: the patch size P, or a hybrid's backbone stride.

            mean_attention_distance(maps, model.patch_embed.grid_size, model.token_stride)
        """
        stride = getattr(self.patch_embed, "stride", None)
        if stride is not None:
            return stride
        (h, w), (gh, gw) = self.config.image_hw, self.patch_embed.grid_size
        return h / gh if h / gh == w / gw else (h / gh, w / gw)

    def num_params(self, trainable_only: bool = False) -> int:
        """Number of parameters (all, or only those with `requires_grad`)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def no_weight_decay(self) -> set[str]:
        """Names of parameters that should not be weight-decayed (as timm reports them)."""
        return {"pos_embed", "cls_token"}
