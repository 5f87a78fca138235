"""The CNN baseline: shapes, pinned sizes, torchvision's blocks; resnet18_cifar is torchvision's but the stem."""

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torchvision.models.resnet import BasicBlock

from minivit.cnn import CifarResNet, list_cnn_presets, make_stage, resnet18_cifar
from tests.conftest import assert_layouts_agree

# Parameter counts with 10 classes and 3 input channels.
PINNED = {
    "ResNet-8": 78_042,
    "ResNet-14": 175_258,
    "ResNet-20": 272_474,
    "ResNet-20-w2": 1_084_586,
}
# Counts printed by public CIFAR ResNet code: He et al.'s ResNet-20 with parameter-free
# ("option A") shortcuts, and the 3x3-stem ResNet-18 of kuangliu/pytorch-cifar.
RESNET20_OPTION_A = 269_722
RESNET18_CIFAR = 11_173_962


@pytest.fixture(scope="module")
def models() -> dict[str, nn.Module]:
    return {"ResNet-8": CifarResNet.from_preset("ResNet-8"), "resnet18_cifar": resnet18_cifar()}


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("in_channels, size", [(3, 32), (1, 28), (3, 64), (3, 128)])
def test_output_and_feature_shapes(gen, in_channels, size):
    model = CifarResNet.from_preset("ResNet-8", num_classes=7, in_channels=in_channels)
    x = torch.randn(1, in_channels, size, size, generator=gen)
    assert model(x).shape == (1, 7)
    side = -(-size // 4)  # two stride-2 stages (padding 1): 32 -> 8, 28 -> 7
    assert model.forward_features(x).shape == (1, 64, side, side)


@pytest.mark.parametrize("in_channels, size", [(3, 32), (1, 28)])
def test_resnet18_cifar_shapes(gen, in_channels, size):
    model = resnet18_cifar(num_classes=10, in_channels=in_channels)
    assert model(torch.randn(1, in_channels, size, size, generator=gen)).shape == (1, 10)


def test_every_preset_is_pinned():
    assert set(list_cnn_presets()) == set(PINNED), "pin the parameter count of every new CNN preset in PINNED"


@pytest.mark.parametrize("name", list(PINNED))
def test_preset_parameter_count(name):
    assert count(CifarResNet.from_preset(name, num_classes=10)) == PINNED[name]


@pytest.mark.parametrize("name", list(PINNED))
def test_num_params_counts_every_parameter(name):
    model = CifarResNet.from_preset(name, num_classes=10)
    assert model.num_params() == PINNED[name] == model.num_params(trainable_only=True)
    model.fc.requires_grad_(False)  # a frozen head: trainable parameters only
    assert model.num_params(trainable_only=True) == PINNED[name] - count(model.fc) and model.num_params() == PINNED[name]


def test_resnet20_is_he_et_al_apart_from_projection_shortcuts():
    model = CifarResNet.from_preset("ResNet-20")
    shortcuts = sum(p.numel() for n, p in model.named_parameters() if ".downsample." in n)
    assert shortcuts > 0 and count(model) - shortcuts == RESNET20_OPTION_A


def test_blocks_are_torchvision_basic_blocks():
    model = CifarResNet(num_classes=10, widths=(8, 16, 32), blocks=(2, 1, 3))
    stages = [model.layer1, model.layer2, model.layer3]
    assert [len(s) for s in stages] == [2, 1, 3]
    assert all(isinstance(b, BasicBlock) for s in stages for b in s)
    assert [s[0].stride for s in stages] == [1, 2, 2]
    assert model.layer1[0].downsample is None  # same shape: identity shortcut
    conv = model.layer2[0].downsample[0]
    assert conv.kernel_size == (1, 1) and conv.stride == (2, 2) and conv.in_channels == 8 and conv.out_channels == 16
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert not any(isinstance(m, nn.MaxPool2d) for m in model.modules())


def test_make_stage_equals_torchvision_make_layer():
    """Bottleneck stage 2 of torchvision's ResNet-50 and make_stage's: the same names and shapes."""
    with torch.device("meta"):
        ref = torchvision.models.resnet50().layer2
        ours = make_stage(256, 128, num_blocks=4, stride=2, block=torchvision.models.resnet.Bottleneck)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in ref.state_dict().items()}


def test_resnet18_cifar_is_torchvision_resnet18_but_the_stem():
    ours = resnet18_cifar(num_classes=10)
    with torch.device("meta"):
        ref = torchvision.models.resnet18(num_classes=10)
    assert isinstance(ours, torchvision.models.ResNet)
    stem = {"conv1.weight"}
    shapes = {k: v.shape for k, v in ours.state_dict().items()}
    ref_shapes = {k: v.shape for k, v in ref.state_dict().items()}
    assert {k: s for k, s in shapes.items() if k not in stem} == {k: s for k, s in ref_shapes.items() if k not in stem}
    assert shapes["conv1.weight"] == (64, 3, 3, 3) and ref_shapes["conv1.weight"] == (64, 3, 7, 7)
    assert ours.conv1.stride == (1, 1) and isinstance(ours.maxpool, nn.Identity)
    assert [type(m) for m in ours.layer3] == [type(m) for m in ref.layer3] == [BasicBlock, BasicBlock]
    assert count(ours) == RESNET18_CIFAR


def test_torchvision_initialisation():
    model = CifarResNet.from_preset("ResNet-20")
    w = model.layer3[1].conv1.weight  # 64 x 64 x 3 x 3: Kaiming normal, fan_out = 64 * 9
    assert abs(w.std().item() / (2 / (64 * 9)) ** 0.5 - 1) < 0.05  # PyTorch's default would be 0.41 of it
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert all(torch.all(m.weight == 1) and torch.all(m.bias == 0) for m in bns)
    stem = resnet18_cifar().conv1.weight  # the replaced stem is initialised the same way
    assert abs(stem.std().item() / (2 / (64 * 9)) ** 0.5 - 1) < 0.1


def test_no_seeding_on_construction():
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    a = torch.rand(1)
    torch.manual_seed(0)
    CifarResNet.from_preset("ResNet-8")
    assert not torch.equal(torch.rand(1), a)
    torch.random.set_rng_state(state)


def test_sgd_steps_reduce_the_loss():
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(12) % 3
    images = torch.randn(12, 3, 8, 8, generator=g)
    images[torch.arange(12), labels] += 1.5  # class c: a bright channel c
    state = torch.random.get_rng_state()
    torch.manual_seed(0)
    model = CifarResNet(num_classes=3, widths=(8, 16), blocks=(1, 1))
    torch.random.set_rng_state(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(8):
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize(
    "x, message",
    [
        (torch.zeros(2, 3, 32), r"expected a 4-D tensor \(B, C, H, W\), got shape \(2, 3, 32\)"),
        (torch.zeros(2, 1, 32, 32), r"expected 3 channels \(B, 3, H, W\), got shape \(2, 1, 32, 32\)"),
        (torch.zeros(2, 3, 32, 32, dtype=torch.uint8), "expected float images"),
        ([[0.0]], "expected a torch.Tensor"),
    ],
)
@pytest.mark.parametrize("name", ["ResNet-8", "resnet18_cifar"])
def test_input_errors(models, name, x, message):
    with pytest.raises(ValueError, match=message):
        models[name](x)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"one block count per stage width, got widths \(16, 32\) and blocks \(1,\)"):
        CifarResNet(widths=(16, 32), blocks=(1,))
    with pytest.raises(ValueError, match="unknown CNN preset 'ResNet-1'; expected one of"):
        CifarResNet.from_preset("ResNet-1")
    with pytest.raises(ValueError, match="num_blocks must be a positive int, got 0"):
        CifarResNet(widths=(16,), blocks=(0,))
    with pytest.raises(ValueError, match="in_channels must be a positive int"):
        resnet18_cifar(in_channels=0)
    with pytest.raises(ValueError, match="BasicBlock or Bottleneck"):
        make_stage(8, 8, 1, block=nn.Conv2d)



@pytest.mark.parametrize("build", [lambda: CifarResNet.from_preset("ResNet-8"), lambda: resnet18_cifar()])
def test_channels_last_computes_the_same_function(gen, build):
    """The layout is a speed choice (module docstring): NHWC and NCHW give the same logits and gradients, and the
    caller's images keep their own layout."""
    torch.manual_seed(0)
    model = build().double().eval()
    x = torch.randn(3, 3, 32, 32, generator=gen, dtype=torch.float64)  # (B, C, H, W), NCHW
    assert_layouts_agree(model, model, x)
    assert x.is_contiguous()  # not converted in place
    assert all(p.is_contiguous() for p in model.parameters())  # the weights (and so state_dict) stay NCHW
