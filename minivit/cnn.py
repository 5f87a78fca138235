"""The CNN baseline: small CIFAR ResNets from torchvision's blocks (paper §3.1 "Inductive bias", §4.3).

The paper's central lesson for small data: a CNN's built-in locality and
translation equivariance help when there is little data, and a ViT must learn
them. To see it on CIFAR-10 or Fashion-MNIST we need a CNN of about the size of
the course's ViTs (ViT-Nano/4: 0.14M parameters, ViT-Micro/4: 0.9M).

These are ResNets in the CIFAR layout of He et al. (2016): a 3x3 stride-1 stem
(no 7x7 conv, no max-pool, since a 32 x 32 image has no pixels to spare), stages
of residual blocks whose first stage keeps the resolution and each later stage
halves it, global average pooling and a Linear head. The blocks are
torchvision's own (`torchvision.models.resnet.BasicBlock`, with a `conv1x1` +
BatchNorm projection shortcut where the shape changes, as torchvision's
`ResNet._make_layer` builds them), and the parameter names are torchvision's
(`conv1`, `bn1`, `layer{i}.{j}.conv1`, ..., `fc`).

- `CifarResNet`: any widths and blocks; `CifarResNet.from_preset("ResNet-20")`
  builds a named size from `CNN_PRESETS` (ResNet-8 ... ResNet-20-w2).
- `resnet18_cifar`: torchvision's `resnet18` with the same 32 x 32 stem.
- `make_stage` and `init_resnet_`: the pieces, reused by `minivit.hybrid`.

Memory format: `forward` hands the convolutions their input in channels-last
order (NHWC in memory; the tensor's shape and values are unchanged), as PyTorch's
"Channels Last Memory Format" tutorial recommends for convolutional networks (its
reported gains are on NVIDIA GPUs with mixed precision; not measured on a GPU
here). On 2 CPU cores a ResNet-14 training step takes about a quarter less time
than with NCHW input (`benchmarks/memory_format.py`). The attribute
`memory_format` (`torch.channels_last`) selects it; `torch.contiguous_format`
gives NCHW.

Shape legend: B batch, C channels, H W height width, K classes.

Introduced in 04_training_a_vit.ipynb.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet, conv1x1

from .patching import check_images

# Named sizes: (stage widths, blocks per stage). With BasicBlocks a CIFAR ResNet
# with n blocks per stage has 6n + 2 weight layers (He et al., 2016, §4.2).
CNN_PRESETS: dict[str, dict[str, tuple[int, ...]]] = {
    "ResNet-8": {"widths": (16, 32, 64), "blocks": (1, 1, 1)},  # 78k parameters with 10 classes
    "ResNet-14": {"widths": (16, 32, 64), "blocks": (2, 2, 2)},  # 175k, about ViT-Nano/4 (142k)
    "ResNet-20": {"widths": (16, 32, 64), "blocks": (3, 3, 3)},  # 272k, He et al.'s CIFAR ResNet-20
    "ResNet-20-w2": {"widths": (32, 64, 128), "blocks": (3, 3, 3)},  # 1.08M, about ViT-Micro/4 (0.9M)
}


def check_float_images(images: torch.Tensor, in_channels: int) -> None:
    """Raise a ValueError unless `images` is a float tensor (B, in_channels, H, W)."""
    check_images(images, patch_size=1, channels=in_channels)
    if not images.is_floating_point():
        raise ValueError(
            f"expected float images (normalise uint8 images first, e.g. minivit.data.normalize), got {images.dtype}"
        )


def init_resnet_(module: nn.Module) -> nn.Module:
    """torchvision's ResNet initialisation, in place: Kaiming-normal (fan_out, ReLU) convolutions,
    BatchNorm/GroupNorm weight 1 and bias 0. Linear layers keep PyTorch's default, as in torchvision."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    return module


def make_stage(
    in_channels: int,
    width: int,
    num_blocks: int,
    stride: int = 1,
    block: type[BasicBlock] | type[Bottleneck] = BasicBlock,
) -> nn.Sequential:
    """One ResNet stage of torchvision blocks: (B, in_channels, H, W) -> (B, width * expansion, H/stride, W/stride).

    The first block has `stride` and, where the shape changes, a 1x1 conv + BatchNorm
    shortcut (`downsample`); the others keep the shape -- as torchvision's
    `ResNet._make_layer` builds them. `block` is `BasicBlock` (expansion 1) or
    `Bottleneck` (expansion 4, the stride on its 3x3 conv: torchvision's "ResNet v1.5").
    """
    for name, value in (("in_channels", in_channels), ("width", width), ("num_blocks", num_blocks), ("stride", stride)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not (isinstance(block, type) and issubclass(block, (BasicBlock, Bottleneck))):
        raise ValueError(f"block must be torchvision's BasicBlock or Bottleneck, got {block!r}")
    out_channels = width * block.expansion
    downsample = None
    if stride != 1 or in_channels != out_channels:
        downsample = nn.Sequential(conv1x1(in_channels, out_channels, stride), nn.BatchNorm2d(out_channels))
    blocks = [block(in_channels, width, stride, downsample)]
    blocks += [block(out_channels, width) for _ in range(num_blocks - 1)]
    return nn.Sequential(*blocks)


class CifarResNet(nn.Module):
    """A CIFAR-style ResNet of torchvision `BasicBlock`s: float images (B, C, H, W) -> logits (B, K).

    conv1 3x3 stride 1 -> bn1 -> relu                      (B, widths[0], H, W)
    layer1 .. layerS: `blocks[i]` BasicBlocks of widths[i]; layer1 stride 1, the others stride 2
                                                           (B, widths[-1], H / 2^(S-1), W / 2^(S-1))
    avgpool (global) -> fc                                 (B, K)

    (Sizes divided by 2 round up: 28 px -> 14 -> 7 -> 4.)

    The defaults are ResNet-20. Any H, W work (32 x 32 CIFAR, 28 x 28 Fashion-MNIST, 64 or 128 px). Initialised
    as torchvision initialises its ResNets (`init_resnet_`); never seeded here.
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 3,
        widths: Sequence[int] = (16, 32, 64),
        blocks: Sequence[int] = (3, 3, 3),
    ):
        super().__init__()
        widths, blocks = tuple(widths), tuple(blocks)
        if not widths or len(widths) != len(blocks):
            raise ValueError(f"expected one block count per stage width, got widths {widths} and blocks {blocks}")
        for name, value in (("num_classes", num_classes), ("in_channels", in_channels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.in_channels = in_channels
        self.num_classes = num_classes
        self.widths, self.blocks = widths, blocks
        self.conv1 = nn.Conv2d(in_channels, widths[0], kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        channels = widths[0]
        for i, (width, n) in enumerate(zip(widths, blocks)):
            self.add_module(f"layer{i + 1}", make_stage(channels, width, n, stride=1 if i == 0 else 2))
            channels = width
        self.num_features = channels
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        self.memory_format = torch.channels_last  # the convolutions' layout (module docstring)
        init_resnet_(self)

    @classmethod
    def from_preset(cls, name: str, num_classes: int = 10, in_channels: int = 3) -> "CifarResNet":
        """A named size from `CNN_PRESETS`, e.g. `CifarResNet.from_preset("ResNet-20", num_classes=10)`."""
        if name not in CNN_PRESETS:
            raise ValueError(f"unknown CNN preset {name!r}; expected one of {list(CNN_PRESETS)}")
        return cls(num_classes=num_classes, in_channels=in_channels, **CNN_PRESETS[name])

    def num_params(self, trainable_only: bool = False) -> int:
        """Number of parameters (all, or only those with `requires_grad`), as `minivit.ViT.num_params`."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> the last stage's feature map (B, widths[-1], H / 2^(S-1), W / 2^(S-1)), before pooling."""
        check_float_images(images, self.in_channels)
        images = images.contiguous(memory_format=self.memory_format)  # the same values, NHWC in memory
        x = self.relu(self.bn1(self.conv1(images)))  # (B, widths[0], H, W)
        for i in range(len(self.widths)):
            x = getattr(self, f"layer{i + 1}")(x)  # (B, widths[i], H / 2^i, W / 2^i)
        return x

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) float images -> (B, K) logits."""
        x = self.avgpool(self.forward_features(images)).flatten(1)  # (B, widths[-1])
        return self.fc(x)  # (B, K)


class ResNet18Cifar(ResNet):
    """torchvision's ResNet-18 with the CIFAR stem: a 3x3 stride-1 `conv1` and no max-pool.

    Everything after the stem is torchvision's `resnet18` (the same modules,
    parameter names and shapes); `forward` checks its input first.
    (B, C, H, W) -> (B, 64, H, W) after the stem -> (B, 512, H/8, W/8) after layer4 -> (B, K).
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 3):
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)  # what torchvision's resnet18() builds
        self.in_channels = in_channels
        self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
        nn.init.kaiming_normal_(self.conv1.weight, mode="fan_out", nonlinearity="relu")
        self.maxpool = nn.Identity()
        self.memory_format = torch.channels_last  # the convolutions' layout (module docstring)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) float images -> (B, K) logits."""
        check_float_images(images, self.in_channels)
        return super().forward(images.contiguous(memory_format=self.memory_format))  # (B, K)


def resnet18_cifar(num_classes: int = 10, in_channels: int = 3) -> ResNet18Cifar:
    """torchvision's ResNet-18 (11.2M parameters) with a 3x3 stride-1 stem and no max-pool, for 32 px images."""
    for name, value in (("num_classes", num_classes), ("in_channels", in_channels)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    return ResNet18Cifar(num_classes=num_classes, in_channels=in_channels)


def list_cnn_presets() -> list[str]:
    """Names accepted by `CifarResNet.from_preset`."""
    return list(CNN_PRESETS)


__all__ = [
    "CNN_PRESETS",
    "CifarResNet",
    "ResNet18Cifar",
    "check_float_images",
    "init_resnet_",
    "list_cnn_presets",
    "make_stage",
    "resnet18_cifar",
]
