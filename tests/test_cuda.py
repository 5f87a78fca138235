"""The GPU code paths (skipped without CUDA): bf16 training, per-image augmentation in workers with pinned
memory, mixing, resizing in place, counting FLOPs, the hybrid -- everything the full profile uses."""

import pytest
import torch

from minivit import HybridEmbed, ViT, count_flops, resnet_s4_backbone
from minivit.augment import BatchRandAugment, mixup_cutmix, rand_augment
from minivit.data import ImageDataset
from minivit.train import evaluate, fit
from tests.conftest import TINY

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _cifar_like(n=64):
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    return ImageDataset(images, torch.arange(n) % 10, tuple(str(i) for i in range(10)), "cifar10", "train")


def test_fit_with_workers_mixing_and_bf16_on_cuda():
    data = _cifar_like()
    torch.manual_seed(0)
    model = ViT.from_preset("ViT-Nano/4")
    h = fit(model, data, data, epochs=2, batch_size=32, transform=rand_augment("cifar10"), workers=2,
            mix=mixup_cutmix(10), device="cuda", progress=False, compile=False)
    assert len(h) == 2 and next(model.parameters()).is_cuda and torch.isfinite(torch.tensor(h.train_loss)).all()
    assert 0.0 <= evaluate(model, data)["acc"] <= 1.0


def test_batched_rand_augment_on_cuda_is_reproducible_and_trains():
    images = _cifar_like(256).images
    ra = BatchRandAugment("cifar10")
    y = ra(images.cuda(), torch.Generator("cuda").manual_seed(0))
    assert y.is_cuda and y.dtype == torch.uint8 and y.shape == images.shape
    assert torch.equal(y, ra(images.cuda(), torch.Generator("cuda").manual_seed(0)))  # reproducible on the GPU
    model = ViT.from_preset("ViT-Nano/4")
    h = fit(model, _cifar_like(), epochs=1, batch_size=32, augment=ra, mix=mixup_cutmix(10), device="cuda",
            progress=False)
    assert torch.isfinite(torch.tensor(h.train_loss)).all()


def test_set_image_size_and_hybrid_on_cuda():
    model = ViT.from_preset("ViT-Nano/4").cuda().set_image_size(16)
    assert model.pos_embed.is_cuda and model(torch.randn(2, 3, 16, 16, device="cuda")).shape == (2, 10)
    config = ViT.from_preset("ViT-Nano/4").config
    hybrid = ViT(config, patch_embed=HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3,
                                                 dim=config.dim)).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert hybrid(torch.randn(2, 3, 32, 32, device="cuda")).shape == (2, 10)
    assert count_flops(ViT(TINY).cuda(), (2, 3, 8, 8)) > 0
