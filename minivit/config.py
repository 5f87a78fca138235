"""ViT configuration and the preset registry (paper Table 1 plus tiny CPU sizes).

A `ViTConfig` is a frozen dataclass: every field has a comment, every value is
checked once in `__post_init__`, and `dataclasses.replace(config, ...)` makes a
variant. Presets are named configs:

- the paper's model sizes (Table 1: Base, Large, Huge) and the DeiT "Ti" and
  "S" widths that timm also uses, at 224 px, with patch sizes /32, /16, /14
  (the paper's results tables report B/32, B/16, L/32, L/16 and H/14) and /8 (not a paper
  model; for illustration, e.g. the cost of small patches);
- course sizes for 32 px images (and one for 128 px) that train on a 2-core CPU in minutes. Unlike
  the paper's models (MLP size 4 D) they use an MLP size of 2 D, and they
  default to 10 classes (the paper's presets to 1000);
- hybrids (§3.1 "Hybrid Architecture", §4.1): a CNN's feature map instead of raw patches, named as the
  paper names them ("R50+ViT-B/16") and as notebook 06 names the course's stems ("R-S4+ViT-Nano/4"). Their
  config has `backbone` set (a name in `BACKBONE_STRIDES`; `minivit.hybrid` builds it) and `patch_size` equal
  to the backbone's total stride in pixels -- the "/16" of the name: the feature map's 1x1 "patches" are
  that many pixels apart -- so `grid_size` and `num_patches` describe the hybrid's tokens too.

Field names follow lucidrains' vit-pytorch (`image_size`, `in_channels`, `dim`, `heads`, `mlp_dim`,
`dropout`, `pool`); timm calls them `img_size`, `in_chans`, `embed_dim`, `num_heads`, `mlp_ratio * embed_dim`,
`drop_rate`, `global_pool` (and `pool="mean"` is its `"avg"`, preset "ViT-Ti/16" its `vit_tiny_patch16_224`).
The parameter names of the models are timm's exactly, so timm weights load as they are.

    >>> get_preset("ViT-B/16", num_classes=10).dim
    768

Introduced in 00_start_here.ipynb; the model sizes are discussed in
03_transformer_encoder.ipynb.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

POOLS = ("token", "mean")
HEADS = ("linear", "mlp")
# The CNN backbones of hybrids (built by minivit.hybrid.build_backbone) and their total stride in pixels.
BACKBONE_STRIDES = {"resnet_s4": 4, "resnet_s16": 16, "resnet50_s16": 16, "resnet50_s32": 32}


@dataclass(frozen=True)
class ViTConfig:
    """Every number that fixes a Vision Transformer's shape."""

    image_size: int | tuple[int, int] = 224  # input H, W in pixels (an int means square)
    patch_size: int = 16  # P: side of a square patch; H and W must be multiples of P
    in_channels: int = 3  # C: 3 for RGB, 1 for grey images
    num_classes: int = 1000  # K: outputs of the classification head
    dim: int = 768  # D: token width, "hidden size" in Table 1
    depth: int = 12  # L: number of encoder blocks ("layers")
    heads: int = 12  # attention heads; D must be divisible by heads
    mlp_dim: int = 3072  # hidden width of each block's MLP ("MLP size": 4 D in the paper's models)
    dropout: float = 0.0  # after the position embedding, attention projection and MLP layers
    pool: str = "token"  # "token": the [class] token's output (Eq. 4); "mean": average of patch tokens
    head: str = "linear"  # "linear": zero-initialised D x K (fine-tuning); "mlp": one tanh hidden layer (pre-training)
    backbone: str | None = None  # hybrid: the CNN whose feature map gives the tokens (BACKBONE_STRIDES); None: patches

    def __post_init__(self) -> None:
        size = self.image_size
        if isinstance(size, (list, tuple)):
            if len(size) != 2:
                raise ValueError(f"image_size must be an int or (H, W), got {size!r}")
            object.__setattr__(self, "image_size", (int(size[0]), int(size[1])))
        for name in ("patch_size", "in_channels", "num_classes", "dim", "depth", "heads", "mlp_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        h, w = self.image_hw
        if min(h, w) < 1:
            raise ValueError(f"image_size must be positive, got {self.image_size!r}")
        if h % self.patch_size or w % self.patch_size:
            raise ValueError(
                f"image_size {h}x{w} is not divisible by patch_size {self.patch_size}; "
                "expected H and W to be multiples of P"
            )
        if self.dim % self.heads:
            raise ValueError(f"dim {self.dim} must be divisible by heads {self.heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, got {self.pool!r}")
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {self.head!r}")
        if self.backbone is not None:
            if self.backbone not in BACKBONE_STRIDES:
                raise ValueError(f"backbone must be None (patches) or one of {list(BACKBONE_STRIDES)}, got "
                                 f"{self.backbone!r}; for another CNN build ViT(config, patch_embed=HybridEmbed(...))")
            stride = BACKBONE_STRIDES[self.backbone]
            if self.patch_size != stride:
                raise ValueError(f"a hybrid's patch_size is its backbone's stride in pixels: {self.backbone!r} makes "
                                 f"tokens {stride} px apart, so set patch_size={stride}, not {self.patch_size}")

    def __repr__(self) -> str:  # `backbone` only for a hybrid, as in to_dict
        shown = {k: v for k, v in self.__dict__.items() if k != "backbone" or v is not None}
        return f"ViTConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def image_hw(self) -> tuple[int, int]:
        """(H, W) of the input image."""
        s = self.image_size
        return (s, s) if isinstance(s, int) else s

    @property
    def grid_size(self) -> tuple[int, int]:
        """(H / P, W / P): the patch grid (a hybrid's feature-map grid: P is its backbone's stride)."""
        h, w = self.image_hw
        return h // self.patch_size, w // self.patch_size

    @property
    def num_patches(self) -> int:
        """N = HW / P^2, the number of patch tokens (the [class] token not counted)."""
        gh, gw = self.grid_size
        return gh * gw

    @property
    def is_hybrid(self) -> bool:
        """True when the tokens come from a CNN backbone's feature map."""
        return self.backbone is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain-python dict (JSON- and `weights_only`-checkpoint friendly); `backbone` only for a hybrid."""
        d = asdict(self)
        if isinstance(d["image_size"], tuple):
            d["image_size"] = list(d["image_size"])
        if d["backbone"] is None:  # a pure ViT's dict is what it was before hybrids had configs
            del d["backbone"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ViTConfig":
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown ViTConfig fields {sorted(unknown)}; expected {list(cls.__dataclass_fields__)}")
        return cls(**d)


# Table 1 (Base, Large, Huge) and the DeiT widths timm calls Tiny and Small:
# name: (depth L, width D, MLP size, heads)
_PAPER_SIZES = {
    "Ti": (12, 192, 768, 3),
    "S": (12, 384, 1536, 6),
    "B": (12, 768, 3072, 12),
    "L": (24, 1024, 4096, 16),
    "H": (32, 1280, 5120, 16),
}
_PAPER_PATCHES = (32, 16, 14, 8)  # /32, /16, /14 as in the paper; /8 for illustration

PRESETS: dict[str, ViTConfig] = {
    f"ViT-{size}/{p}": ViTConfig(image_size=224, patch_size=p, depth=L, dim=D, mlp_dim=M, heads=h)
    for size, (L, D, M, h) in _PAPER_SIZES.items()
    for p in _PAPER_PATCHES
}
# Course sizes for 32 px images (CIFAR-10; Fashion-MNIST with image_size=28, in_channels=1):
# they train on a 2-core CPU in minutes. Patch 4 gives an 8 x 8 grid, N = 64. MLP size 2 D (not 4 D).
PRESETS["ViT-Nano/4"] = ViTConfig(image_size=32, patch_size=4, dim=64, depth=4, heads=4, mlp_dim=128, num_classes=10)
PRESETS["ViT-Micro/4"] = ViTConfig(image_size=32, patch_size=4, dim=128, depth=6, heads=4, mlp_dim=256, num_classes=10)
# A course size for 128 px images (Imagenette): 16 x 16 patches give an 8 x 8 grid, N = 64, as ViT-Nano/4 on 32 px.
PRESETS["ViT-Nano/16"] = ViTConfig(image_size=128, patch_size=16, dim=96, depth=4, heads=4, mlp_dim=192, num_classes=10)
# Hybrids (§3.1, §4.1): the Transformer of the ViT preset after "+", fed by a CNN's feature map. The course's stems
# (06_hybrid.ipynb): "R-S4" (stride 4, 32 px -> 8 x 8 tokens) and "R-S16" (stride 16, 128 px -> 8 x 8); the paper's
# ResNet-50 options (§4.1): (i) stage 4's output, stride 32 ("/32"), (ii) an extended stage 3, stride 16 ("/16").
for _cnn, _vit in (("R-S4", "ViT-Nano/4"), ("R-S4", "ViT-Micro/4"), ("R-S16", "ViT-Nano/16"),
                   ("R50", "ViT-B/16"), ("R50", "ViT-B/32"), ("R50", "ViT-L/16"), ("R50", "ViT-L/32")):
    _stride = PRESETS[_vit].patch_size
    PRESETS[f"{_cnn}+{_vit}"] = replace(PRESETS[_vit], backbone=f"resnet_s{_stride}" if _cnn != "R50" else f"resnet50_s{_stride}")
del _cnn, _vit, _stride


def list_presets() -> list[str]:
    """Names accepted by `get_preset` / `ViT.from_preset`."""
    return list(PRESETS)


def get_preset(name: str, **overrides: Any) -> ViTConfig:
    """The preset `name`, with any field replaced, e.g. `get_preset("ViT-B/16", num_classes=10)`."""
    if name not in PRESETS:
        hint = ""
        if name.startswith("vit_"):
            hint = " (timm's names map to the paper's: vit_tiny_patch16_224 is 'ViT-Ti/16', vit_base_patch32_224 'ViT-B/32')"
        raise ValueError(f"unknown preset {name!r}; expected one of {list_presets()}{hint}")
    bad = set(overrides) - set(ViTConfig.__dataclass_fields__)
    if bad:
        raise ValueError(f"unknown ViTConfig fields {sorted(bad)}; expected {list(ViTConfig.__dataclass_fields__)}")
    return replace(PRESETS[name], **overrides)
