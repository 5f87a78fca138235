"""The hybrid ViT's embedding: patches of a CNN feature map (paper §3.1 "Hybrid Architecture", §4.1, Table 6).

"As an alternative to raw image patches, the input sequence can be formed from
feature maps of a CNN (LeCun et al., 1989). In this hybrid model, the patch
embedding projection E (Eq. 1) is applied to patches extracted from a CNN
feature map. As a special case, the patches can have spatial size 1x1, which
means that the input sequence is obtained by simply flattening the spatial
dimensions of the feature map and projecting to the Transformer dimension."
(§3.1)

`HybridEmbed` is that special case: a `backbone` CNN, then `proj`, a 1x1 conv
(the projection E on 1x1 "patches"), then the feature map flattened row-major
into tokens. It replaces `PatchEmbed` and plugs into the ViT unchanged:

    config = get_preset("ViT-Nano/4")                            # D = 64, 32 px
    embed = HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3, dim=config.dim)
    model = ViT(config, patch_embed=embed)                       # 8 x 8 = 64 tokens, as with patch 4

The names are timm's (`patch_embed.backbone.*`, `patch_embed.proj`). The grid
a backbone makes is measured from the backbone itself by a shape-only forward
on the meta device (`feature_shape`), never typed in.

The named backbones below also have presets, whose config (`backbone`, and `patch_size` = the stride) lets
`ViT(config)` build the hybrid, `load_model` rebuild a saved one and `load_pretrained` fill one:

    model = ViT.from_preset("R-S4+ViT-Nano/4")                   # the same network as the three lines above
    model.token_stride                                           # 4: pixels between neighbouring tokens
    mean_attention_distance(maps, model.patch_embed.grid_size, model.token_stride)   # distances in pixels

Building the hybrid by hand, as above, with a named backbone gives the same config; with your own CNN the
config keeps `backbone=None` (save it with `save_checkpoint`, rebuild it yourself, `load_checkpoint` it).

Backbones, all of torchvision's blocks with torchvision's parameter names:
- `resnet_s4_backbone`: 32 px -> 8 x 8 x 64, a cheap stem for CIFAR-10 (28 px Fashion-MNIST -> 7 x 7).
- `resnet_s16_backbone`: 128 px -> 8 x 8 x 64, for Imagenette.
- `resnet50_s32_backbone`, `resnet50_s16_backbone`: the paper's two R50 hybrids (§4.1), 7 x 7 and 14 x 14
  tokens at 224 px. The paper's ResNets are its "ResNet (BiT)", with Group
  Normalization and standardized convolutions; torchvision's use BatchNorm and
  plain convolutions (and stride the Bottleneck's 3x3 conv, "ResNet v1.5"). Same
  layout and sizes, not the same network, and not the paper's weights.

Shape legend: B batch, C channels, H W image size, C' feature channels, h w
feature grid, N = h w tokens, D width.

Introduced in 06_hybrid.ipynb.
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import chain

import torch
from einops import rearrange
from torch import nn
from torch.func import functional_call
from torchvision.models.resnet import Bottleneck, ResNet, resnet50

from .cnn import check_float_images, init_resnet_, make_stage
from .patching import _pair

# ResNet-50's blocks per stage (He et al., 2016, Table 1), as torchvision's resnet50 builds it.
RESNET50_BLOCKS = (3, 4, 6, 3)


def feature_shape(backbone: nn.Module, in_channels: int, image_size: int | tuple[int, int]) -> tuple[int, int, int]:
    """(C', h, w) of `backbone`'s output for (B, in_channels, H, W) images.

    A shape-only forward on the meta device: the parameters and buffers are
    swapped for meta tensors for the call, so nothing is computed or changed.
    """
    h, w = _pair(image_size)
    if min(h, w) < 1 or in_channels < 1:
        raise ValueError(f"expected a positive image size and channel count, got {h}x{w} and {in_channels}")
    tensors = chain(backbone.named_parameters(), backbone.named_buffers())
    meta = {name: torch.empty_like(t, device="meta") for name, t in tensors}
    x = torch.empty(2, in_channels, h, w, device="meta")  # (B, C, H, W), B = 2 so BatchNorm may train
    try:
        with torch.no_grad():
            out = functional_call(backbone, meta, (x,))
    except (RuntimeError, ValueError, NotImplementedError) as e:
        raise ValueError(
            f"the backbone failed on (B, {in_channels}, {h}, {w}) images: {e}; check in_channels and image_size "
            "(the grid is measured by a forward on the meta device, which every torch.nn layer supports)"
        ) from e
    if not isinstance(out, torch.Tensor) or out.ndim != 4:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"expected the backbone to return a 4-D feature map (B, C', h, w), got {got}")
    return tuple(out.shape[1:])  # (C', h, w)


class HybridEmbed(nn.Module):
    """CNN feature map -> tokens where "the patches can have spatial size 1x1" (§3.1): (B, C, H, W) -> (B, N, D).

        backbone: (B, C, H, W) -> (B, C', h, w)     any nn.Module returning a 4-D feature map
        proj:     1x1 Conv2d C' -> D                the projection E of Eq. 1 on 1x1 patches
        flatten:  (B, D, h, w) -> (B, h*w, D)       row-major, like `patchify`

    Attributes, as `PatchEmbed` has them: `image_size` (H, W), `grid_size` (h, w),
    `num_patches` N = h*w, `in_channels`, `stride` (pixels between neighbouring tokens: H / h,
    a (rows, cols) pair when the two differ); also `feature_dim` C' and `backbone_name` (the
    `BACKBONES` name the backbone was built under, or None). `set_image_size`
    re-measures the grid for another input size. `forward` accepts any input
    whose feature map has `grid_size`.
    """

    def __init__(self, backbone: nn.Module, image_size: int | tuple[int, int], in_channels: int, dim: int):
        super().__init__()
        if not isinstance(backbone, nn.Module):
            raise ValueError(f"expected the backbone to be an nn.Module, got {type(backbone).__name__}")
        for name, value in (("in_channels", in_channels), ("dim", dim)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.backbone = backbone
        self.backbone_name = getattr(backbone, "backbone_name", None)  # set by the named builders below
        self.in_channels = in_channels
        self.feature_dim = feature_shape(backbone, in_channels, image_size)[0]  # C'
        self.proj = nn.Conv2d(self.feature_dim, dim, kernel_size=1)  # timm's name; E on 1x1 patches
        self.memory_format = torch.channels_last  # the convolutions' layout, as minivit.cnn's (its docstring)
        self.set_image_size(image_size)

    def set_image_size(self, image_size: int | tuple[int, int]) -> None:
        """Accept `image_size` (H, W) inputs from now on: re-measure `grid_size` and `num_patches`.

        The embedding has no position-dependent weights; a ViT around it must
        also resize its `pos_embed` to the new grid (`minivit.resize_pos_embed`).
        """
        h, w = _pair(image_size)
        c, gh, gw = feature_shape(self.backbone, self.in_channels, (h, w))
        if c != self.feature_dim:
            raise ValueError(f"the backbone now gives {c} channels, but proj expects feature_dim {self.feature_dim}")
        self.image_size = (h, w)
        self.grid_size = (gh, gw)
        self.num_patches = gh * gw
        sh, sw = (int(v) if float(v).is_integer() else v for v in (h / gh, w / gw))
        self.stride = sh if sh == sw else (sh, sw)  # pixels between neighbouring tokens

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) float images -> (B, N, D) tokens, N = h*w row-major."""
        check_float_images(images, self.in_channels)
        x = self.backbone(images.contiguous(memory_format=self.memory_format))  # (B, C', h, w), NHWC in memory
        if not isinstance(x, torch.Tensor) or x.ndim != 4:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"expected the backbone to return a 4-D feature map (B, C', h, w), got {got}")
        if x.shape[1] != self.feature_dim or tuple(x.shape[-2:]) != self.grid_size:
            (H, W), (h, w), (gh, gw) = images.shape[-2:], self.image_size, self.grid_size
            raise ValueError(
                f"the backbone turned {H}x{W} images into a {tuple(x.shape[1:])} feature map, but this embedding "
                f"expects ({self.feature_dim}, {gh}, {gw}), as for {h}x{w} images; resize the images to {h}x{w} "
                f"or call set_image_size(({H}, {W})) (a ViT's pos_embed must then be resized too)"
            )
        x = self.proj(x)  # (B, D, h, w)
        return rearrange(x, "b d h w -> b (h w) d")  # (B, N, D)


def _small_resnet(in_channels: int, downsample_stem: bool) -> nn.Sequential:
    """3x3 conv stem (16 channels), then two stages of one BasicBlock each, stride 2: 16 -> 32 -> 64 channels."""
    stem_stride = 2 if downsample_stem else 1
    layers = OrderedDict(
        conv1=nn.Conv2d(in_channels, 16, kernel_size=3, stride=stem_stride, padding=1, bias=False),
        bn1=nn.BatchNorm2d(16),
        relu=nn.ReLU(inplace=True),
    )
    if downsample_stem:
        layers["maxpool"] = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)  # torchvision's ResNet max-pool
    layers["layer1"] = make_stage(16, 32, num_blocks=1, stride=2)
    layers["layer2"] = make_stage(32, 64, num_blocks=1, stride=2)
    return init_resnet_(nn.Sequential(layers))


def _named(name: str, backbone: nn.Module) -> nn.Module:
    backbone.backbone_name = name  # read by HybridEmbed, so a ViT built around it knows its config's `backbone`
    return backbone


def resnet_s4_backbone(in_channels: int = 3) -> nn.Sequential:
    """A cheap CNN stem for 32 px images: (B, C, 32, 32) -> (B, 64, 8, 8), total stride 4.

    conv1 3x3 stride 1 (16 channels), bn1, relu         (B, 16, 32, 32)
    layer1: one BasicBlock 16 -> 32, stride 2           (B, 32, 16, 16)
    layer2: one BasicBlock 32 -> 64, stride 2           (B, 64, 8, 8)

    The CIFAR ResNet stem of `minivit.cnn` and two of its stages with one block
    each; the 8 x 8 grid equals a ViT's with patch size 4 (N = 64).
    Fashion-MNIST's 28 px give 7 x 7. Initialised as torchvision's ResNets.
    """
    return _named("resnet_s4", _small_resnet(in_channels, downsample_stem=False))


def resnet_s16_backbone(in_channels: int = 3) -> nn.Sequential:
    """A cheap CNN stem for 128 px images (Imagenette): (B, C, 128, 128) -> (B, 64, 8, 8), total stride 16.

    conv1 3x3 stride 2 (16 channels), bn1, relu         (B, 16, 64, 64)
    maxpool 3x3 stride 2                                (B, 16, 32, 32)
    layer1: one BasicBlock 16 -> 32, stride 2           (B, 32, 16, 16)
    layer2: one BasicBlock 32 -> 64, stride 2           (B, 64, 8, 8)

    torchvision's ImageNet ResNet stem (a stride-2 conv, then its max-pool) with a
    3x3 instead of a 7x7 conv and 16 channels to keep it cheap, then the same
    stages as `resnet_s4_backbone`. The 8 x 8 grid equals a ViT's with patch 16.
    """
    return _named("resnet_s16", _small_resnet(in_channels, downsample_stem=True))


def _trunk(resnet: ResNet, num_stages: int, in_channels: int) -> nn.Sequential:
    """A torchvision ResNet's stem and first `num_stages` stages, under their own names (no pooling, no fc);
    for `in_channels` other than 3 its first conv is rebuilt for them (initialised as torchvision does)."""
    if in_channels != 3:
        resnet.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        nn.init.kaiming_normal_(resnet.conv1.weight, mode="fan_out", nonlinearity="relu")
    names = ["conv1", "bn1", "relu", "maxpool"] + [f"layer{i}" for i in range(1, num_stages + 1)]
    return nn.Sequential(OrderedDict((name, getattr(resnet, name)) for name in names))


def resnet50_s32_backbone(in_channels: int = 3) -> nn.Sequential:
    """The paper's hybrid option (i), "the output of stage 4 of a regular ResNet50" (§4.1).

    torchvision's `resnet50()` without its pooling and fc: Bottleneck blocks
    (3, 4, 6, 3), total stride 32. (B, 3, 224, 224) -> (B, 2048, 7, 7): 49 tokens.
    The names are torchvision's, so its ImageNet weights load with
    `backbone.load_state_dict(resnet50(weights=...).state_dict(), strict=False)` (fc is left out).
    """
    return _named("resnet50_s32", _trunk(resnet50(), num_stages=4, in_channels=in_channels))


def resnet50_s16_backbone(in_channels: int = 3) -> nn.Sequential:
    """The paper's hybrid option (ii): "remove stage 4, place the same number of layers in stage 3
    (keeping the total number of layers), and take the output of this extended stage 3" (§4.1).

    ResNet-50 has (3, 4, 6, 3) Bottleneck blocks of three conv layers each; stage
    4's 3 blocks move to stage 3, giving (3, 4, 6 + 3) = (3, 4, 9): still 16
    blocks, 48 conv layers (timm's `vit_base_r50_s16_*` hybrids use layers=(3, 4, 9) too).
    Total stride 16: (B, 3, 224, 224) -> (B, 1024, 14, 14), 196 tokens, a 4x
    longer sequence than option (i). Built as torchvision's `ResNet(Bottleneck, ...)`;
    that class always builds four stages, so a one-block stage 4 is built and dropped.
    """
    *first, stage3, stage4 = RESNET50_BLOCKS
    blocks = (*first, stage3 + stage4)  # (3, 4, 9)
    return _named("resnet50_s16", _trunk(ResNet(Bottleneck, [*blocks, 1]), num_stages=3, in_channels=in_channels))


# The named backbones (minivit.config.BACKBONE_STRIDES gives their strides): name -> builder(in_channels).
BACKBONES = {"resnet_s4": resnet_s4_backbone, "resnet_s16": resnet_s16_backbone,
             "resnet50_s16": resnet50_s16_backbone, "resnet50_s32": resnet50_s32_backbone}


def build_backbone(name: str, in_channels: int = 3) -> nn.Module:
    """The named backbone of a hybrid config (`ViTConfig.backbone`) for `in_channels`-channel images."""
    if name not in BACKBONES:
        raise ValueError(f"unknown backbone {name!r}; expected one of {list(BACKBONES)}")
    return BACKBONES[name](in_channels)


__all__ = [
    "BACKBONES",
    "HybridEmbed",
    "build_backbone",
    "RESNET50_BLOCKS",
    "feature_shape",
    "resnet50_s16_backbone",
    "resnet50_s32_backbone",
    "resnet_s16_backbone",
    "resnet_s4_backbone",
]
