"""Batched RandAugment: each operation equals torchvision's per-image one, the draws follow v2.RandAugment's
distribution, a generator reproduces a batch, and bad input is refused."""

import math

import pytest
import torch
from torchvision.transforms import v2

import minivit.augment as aug
from minivit.augment import BatchRandAugment, apply_op, random_crop, random_flip

_REFERENCE = v2.RandAugment()  # torchvision's per-image operations, the reference (tests only)


def _reference_op(image, op, magnitude):
    return _REFERENCE._apply_image_or_video_transform(image, op, magnitude, interpolation=_REFERENCE.interpolation,
                                                      fill=_REFERENCE._fill)


def _images(B, side, seed=0):
    x = torch.randint(0, 256, (B, 3, side, side), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
    x[0], x[1, 0] = 0, 255  # a black image, a constant channel: the edge cases of AutoContrast and Equalize
    x[2] = x[2] // 4 + 100  # a low-contrast image (AutoContrast stretches it)
    return x


def test_operation_table_is_torchvisions():
    space = v2.RandAugment._AUGMENTATION_SPACE
    assert [name for name, _ in aug._RA_OPS] == list(space) and len(space) == 14
    assert all(signed == space[name][1] for name, signed in aug._RA_OPS)
    assert v2.RandAugment().num_magnitude_bins == aug._RA_BINS


@pytest.mark.parametrize("side", [32, 128])
@pytest.mark.parametrize("op, signed", aug._RA_OPS)
def test_each_batched_operation_equals_torchvisions_per_image(op, signed, side):
    x = _images(10, side)
    for magnitude in (9, 30):
        for sign in ((1.0, -1.0) if signed else (1.0,)):
            m = aug._magnitude(op, magnitude, side, side) * sign
            got = apply_op(x, op, m)
            assert got.dtype == torch.uint8 and got.shape == x.shape
            for i in range(len(x)):  # exact: uint8 in, uint8 out, the same arithmetic
                assert torch.equal(got[i], _reference_op(x[i], op, m)), (op, m, i)


def test_whole_call_is_crop_flip_then_per_image_operations_as_drawn():
    # Replays the generator's draws in the order the class makes them, applies torchvision's per-image
    # operations image by image, and compares: checks the grouping puts every image's result back in its place.
    x, ra = _images(24, 32), BatchRandAugment("cifar10", num_ops=3, magnitude=12)
    got = ra(x, torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(7)
    y = random_flip(random_crop(x, 4, g), 0.5, g)
    for _ in range(3):
        op = torch.randint(0, 14, (24,), generator=g)
        negative = torch.rand(24, generator=g) <= 0.5
        for i in range(24):
            name, signed = aug._RA_OPS[op[i]]
            m = aug._magnitude(name, 12, 32, 32) * (-1.0 if signed and negative[i] else 1.0)
            y[i] = _reference_op(y[i], name, m)
    assert torch.equal(got, y)


def test_draws_are_uniform_over_operations_with_fair_signs(monkeypatch):
    calls = []  # (operation, sign, images) per group call

    def record(images, op, magnitude):
        calls.append((op, math.copysign(1.0, magnitude), len(images)))
        return images
    monkeypatch.setattr(aug, "apply_op", record)
    B, rounds = 2000, 2
    BatchRandAugment("cifar10", num_ops=rounds, magnitude=9)(torch.zeros(B, 3, 8, 8, dtype=torch.uint8),
                                                             torch.Generator().manual_seed(0))
    n = B * rounds  # operation draws
    assert sum(c for _, _, c in calls) == n  # every image gets exactly `rounds` operations
    counts = {name: sum(c for o, _, c in calls if o == name) for name, _ in aug._RA_OPS}
    # Each count is Binomial(n, 1/14): within 5 standard deviations (a false alarm per operation has probability
    # about 6e-7); the draws come from a fixed seed, so the test is deterministic.
    p = 1 / 14
    sd = math.sqrt(n * p * (1 - p))
    assert all(abs(c - n * p) <= 5 * sd for c in counts.values()), counts
    signed = [name for name, s in aug._RA_OPS if s]
    neg = sum(c for o, s, c in calls if o in signed and s < 0)
    total = sum(counts[name] for name in signed)
    assert abs(neg - total / 2) <= 5 * math.sqrt(total / 4), (neg, total)  # Binomial(total, 1/2), 5 sd
    assert all(s > 0 for o, s, _ in calls if o not in signed)  # unsigned operations keep their sign


def test_reproducible_shape_dtype_device_and_no_ops():
    x, ra = _images(32, 32), BatchRandAugment("cifar10")
    a, b = (ra(x, torch.Generator().manual_seed(3)) for _ in range(2))
    assert torch.equal(a, b) and a.shape == x.shape and a.dtype == torch.uint8 and a.device == x.device
    assert not torch.equal(a, ra(x, torch.Generator().manual_seed(4)))
    torch.manual_seed(5)
    c = ra(x)  # torch's RNG on the batch's device
    torch.manual_seed(5)
    assert torch.equal(c, ra(x))
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    plain = BatchRandAugment("cifar10", num_ops=0)(x, g1)  # no operations: the crop and flip alone
    assert torch.equal(plain, random_flip(random_crop(x, 4, g2), 0.5, g2))
    assert BatchRandAugment("imagenette")(_images(4, 128)).shape == (4, 3, 128, 128)


def test_follows_the_batchs_device():
    from tests.cuda_standin import standin_cuda
    with standin_cuda():
        x = _images(16, 32).to("cuda")
        y = BatchRandAugment("cifar10")(x, torch.Generator("cuda").manual_seed(0))
        assert y.device == x.device and y.dtype == torch.uint8


@pytest.mark.parametrize("kwargs, match", [
    (dict(dataset="mnist"), "unknown data set 'mnist'"),
    (dict(dataset="cifar10", num_ops=-1), "num_ops >= 0"),
    (dict(dataset="cifar10", magnitude=31), r"magnitude in \[0, 30\]"),
    (dict(dataset="cifar10", magnitude=-1), r"magnitude in \[0, 30\]"),
    (dict(dataset="cifar10", magnitude=9.5), "integers"),
])
def test_bad_configuration_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BatchRandAugment(**kwargs)


def test_bad_batches_are_refused():
    ra = BatchRandAugment("cifar10")
    with pytest.raises(ValueError, match=r"uint8 batch \(B, C, H, W\), got torch.float32"):
        ra(torch.rand(2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"got torch.uint8 \(3, 32, 32\)"):
        ra(torch.zeros(3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match="unknown RandAugment operation 'Invert'"):
        apply_op(torch.zeros(1, 3, 8, 8, dtype=torch.uint8), "Invert", 0.0)
