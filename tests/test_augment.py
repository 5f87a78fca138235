"""Batched augmentation: crops are shifted copies, flips mirror, a generator reproduces a batch."""

import pytest
import torch

import minivit.data
from minivit.augment import Augment, make_augment, random_crop, random_flip


def _batch(B=16):
    return torch.randint(0, 256, (B, 3, 10, 12), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))


def test_crop_identity_and_shifted_copy():
    x = _batch()
    assert torch.equal(random_crop(x, 0), x)
    y = random_crop(x, 3, torch.Generator().manual_seed(0))
    assert y.shape == x.shape and y.dtype == x.dtype
    padded = torch.nn.functional.pad(x, (3, 3, 3, 3))
    offsets = []
    for i in range(len(x)):  # each output is exactly one crop of its zero-padded input
        found = [(dy, dx) for dy in range(7) for dx in range(7) if torch.equal(y[i], padded[i, :, dy:dy + 10, dx:dx + 12])]
        assert len(found) == 1
        offsets.append(found[0])
    assert len(set(offsets)) > 1  # offsets differ per image


def test_flip_and_reproducibility():
    x = _batch()
    assert torch.equal(random_flip(random_flip(x, p=1.0), p=1.0), x)
    assert torch.equal(random_flip(x, p=1.0), x.flip(-1)) and torch.equal(random_flip(x, p=0.0), x)
    y = random_flip(x, generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(y[i], x[i]) or torch.equal(y[i], x[i].flip(-1)) for i in range(len(x)))
    aug = make_augment("cifar10")
    a1, a2 = (aug(x, torch.Generator().manual_seed(5)) for _ in range(2))
    assert torch.equal(a1, a2) and a1.shape == x.shape and a1.dtype == torch.uint8
    assert not torch.equal(a1, aug(x, torch.Generator().manual_seed(6)))
    assert torch.equal(make_augment("imagenette", "none")(x), x)
    assert make_augment("cifar10", "flip") == Augment(padding=0, flip=True)
    with pytest.raises(ValueError, match="unknown augmentation policy 'autoaugment'; expected one of"):
        make_augment("cifar10", "autoaugment")
    with pytest.raises(ValueError, match="unknown data set 'mnist'"):
        make_augment("mnist")


def test_data_reexports_augmentation():
    assert minivit.data.make_augment is make_augment and minivit.data.Augment is Augment


def test_rand_augment_is_per_image_uint8_and_seeded():
    from minivit.augment import rand_augment
    t = rand_augment("cifar10")
    img = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    a = [t(img) for _ in range(8)]
    assert all(o.shape == (3, 32, 32) and o.dtype == torch.uint8 for o in a)
    assert len({o.sum().item() for o in a}) > 4  # each call draws its own crop, flip and operations
    torch.manual_seed(0)
    assert all(torch.equal(o, t(img)) for o in a)  # the same seed, the same augmentations
    assert rand_augment("cifar10", num_ops=0).transforms[-1].num_ops == 0
    with pytest.raises(ValueError, match="unknown data set"):
        rand_augment("mnist")
    with pytest.raises(ValueError, match="magnitude in"):
        rand_augment("cifar10", magnitude=40)


def test_mixup_cutmix_gives_soft_targets_that_sum_to_one():
    from minivit.augment import mixup_cutmix
    mix = mixup_cutmix(10)
    x, y = torch.rand(8, 3, 32, 32), torch.arange(8)
    torch.manual_seed(0)
    for _ in range(4):  # MixUp or CutMix, chosen per batch
        mx, soft = mix(x, y)
        assert mx.shape == x.shape and soft.shape == (8, 10)
        torch.testing.assert_close(soft.sum(-1), torch.ones(8))
        assert (soft.max(-1).values >= 0.5).all()  # the dominant class keeps at least half the mass
    with pytest.raises(ValueError, match="num_classes >= 2"):
        mixup_cutmix(1)


def test_cutmix_pastes_one_box_and_weights_the_targets_by_its_area():
    from minivit.augment import MIXES, cutmix
    mix = cutmix(10)
    x = torch.arange(4, dtype=torch.float32).view(4, 1, 1, 1).expand(4, 3, 16, 16).contiguous()  # image i is all i
    y = torch.arange(4)
    torch.manual_seed(0)
    for _ in range(4):
        mx, soft = mix(x, y)
        assert mx.shape == x.shape and soft.shape == (4, 10)
        torch.testing.assert_close(soft.sum(-1), torch.ones(4))
        for i in range(4):
            own = (mx[i, 0] == i).float().mean()  # the share of pixels still from image i
            if soft[i].max() < 1:  # a box was pasted: the target's weight of class i is the share kept (CutMix)
                torch.testing.assert_close(soft[i, i], own)
            assert set(mx[i, 0].unique().tolist()) <= set(range(4))  # pixels are pasted, never blended (not MixUp)
    assert MIXES["cutmix"] is cutmix
    with pytest.raises(ValueError, match="positive alpha"):
        cutmix(10, alpha=0)
