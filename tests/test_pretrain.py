"""Masked-patch-prediction pre-training: the loop learns, follows its schedule, never reads labels, is
reproducible, and its cache loads only the same pre-training."""

import math
from functools import partial

import pytest
import torch

from minivit.augment import make_augment
from minivit.data import ImageDataset, normalize
from minivit.mpp import MaskedPatchPrediction, patch_color_codes
from minivit.optim import lr_factor
from minivit.pretrain import evaluate_mpp, pretrain_mpp, pretrain_mpp_or_load
from tests.conftest import synthetic, tiny_model


def colour_images(n=64, seed=0):
    """uint8 (n, 3, 8, 8) images, each one flat colour out of a palette of 8 (bin centres) plus a little noise: the
    colour of a corrupted patch is that of the image's visible patches, so a model that looks at them learns it."""
    g = torch.Generator().manual_seed(seed)
    palette = torch.randint(0, 8, (8, 3), generator=torch.Generator().manual_seed(123)) * 32 + 16  # (8, 3)
    x = palette[torch.randint(0, 8, (n,), generator=g)].view(n, 3, 1, 1).expand(n, 3, 8, 8)  # (n, 3, 8, 8)
    return (x + torch.randint(-4, 5, x.shape, generator=g)).clamp(0, 255).to(torch.uint8)


norm = partial(normalize, name="cifar10")


def test_pretraining_lowers_the_held_out_pretext_loss_from_ln_512():
    mpp = MaskedPatchPrediction(tiny_model(seed=1))
    train, val = colour_images(64, seed=0), colour_images(32, seed=1)
    before = evaluate_mpp(mpp, val, normalize=norm)
    assert before["loss"] == pytest.approx(math.log(512), abs=1e-5)  # zero-initialised colour head
    h = pretrain_mpp(mpp, train, val, epochs=6, batch_size=16, lr=1e-2, normalize=norm, device="cpu")
    assert len(h) == 6 and h.steps_per_epoch == 4 and len(h.step_lr) == len(h.step_grad_norm) == 24
    assert h.val_loss[-1] < before["loss"] - 1.0
    assert h.val_loss[-1] == pytest.approx(evaluate_mpp(mpp, val, normalize=norm)["loss"], rel=1e-5)
    assert 0 <= h.train_acc[-1] <= 1 and h.val_acc[-1] > 1 / 512


def test_schedule_is_warm_up_then_cosine_and_the_model_mode_is_restored():
    mpp = MaskedPatchPrediction(tiny_model()).eval()
    h = pretrain_mpp(mpp, colour_images(40), epochs=3, batch_size=16, lr=1e-3, warmup_epochs=1.0,
                     normalize=norm, device="cpu")
    total, warmup = 3 * 3, 3
    torch.testing.assert_close(torch.tensor(h.step_lr), torch.tensor([1e-3 * lr_factor(s, total, warmup)
                                                                        for s in range(total)]))
    assert not mpp.training and h.val_loss == [None] * 3


def test_labels_are_never_read_and_runs_are_reproducible():
    images, labels = synthetic(48, seed=2)
    a = ImageDataset(images, labels, ("a", "b", "c"), "cifar10", "train")
    b = ImageDataset(images, torch.zeros_like(labels), ("a", "b", "c"), "cifar10", "train")
    runs = []
    for data in (a, b, a):
        mpp = MaskedPatchPrediction(tiny_model(seed=3))
        h = pretrain_mpp(mpp, data, epochs=2, batch_size=16, augment=make_augment("cifar10"), device="cpu", seed=5)
        runs.append((h.train_loss, mpp.state_dict()))
    for loss, state in runs[1:]:
        assert loss == runs[0][0]
        assert all(torch.equal(state[k], runs[0][1][k]) for k in state)
    mpp = MaskedPatchPrediction(tiny_model(seed=3))
    other = pretrain_mpp(mpp, a, epochs=2, batch_size=16, augment=make_augment("cifar10"), device="cpu", seed=6)
    assert other.train_loss != runs[0][0]


def test_targets_come_from_raw_pixels_even_with_augmentation(monkeypatch):
    seen = []
    import minivit.pretrain as pretrain
    monkeypatch.setattr(pretrain, "patch_color_codes", lambda x, p, bits: seen.append(x.dtype) or patch_color_codes(x, p, bits))
    pretrain_mpp(MaskedPatchPrediction(tiny_model()), colour_images(16), epochs=1, batch_size=8,
                 augment=make_augment("cifar10"), normalize=norm, device="cpu")
    assert seen == [torch.uint8, torch.uint8]  # one batch of uint8 pixels per step, never the normalised floats


def test_cache_loads_the_same_pretraining_and_retrains_another(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))  # checkpoint_dir() is then tmp_path / "checkpoints"
    images = colour_images(32)
    first = MaskedPatchPrediction(tiny_model(seed=1))
    h1 = pretrain_mpp_or_load(first, images, name="mpp-test", epochs=1, batch_size=16, normalize=norm, device="cpu")
    assert (tmp_path / "checkpoints" / "mpp-test.pt").exists()
    second = MaskedPatchPrediction(tiny_model(seed=2))  # other initial weights: loading must overwrite them
    h2 = pretrain_mpp_or_load(second, images, name="mpp-test", epochs=1, batch_size=16, normalize=norm, device="cpu")
    assert h2.train_loss == h1.train_loss
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    third = MaskedPatchPrediction(tiny_model(seed=2))
    h3 = pretrain_mpp_or_load(third, images, name="mpp-test", epochs=1, batch_size=16, lr=3e-3, normalize=norm,
                              device="cpu")  # another learning rate: pre-trained again
    assert h3.train_loss != h1.train_loss
    fourth = MaskedPatchPrediction(tiny_model(seed=2))
    h4 = pretrain_mpp_or_load(fourth, colour_images(32, seed=9), name="mpp-test", epochs=1, batch_size=16,
                              lr=3e-3, normalize=norm, device="cpu")  # other images: pre-trained again
    assert h4.train_loss != h3.train_loss


def test_input_errors():
    mpp = MaskedPatchPrediction(tiny_model())
    with pytest.raises(ValueError, match="MaskedPatchPrediction"):
        pretrain_mpp(tiny_model(), colour_images(8), epochs=1, normalize=norm)
    with pytest.raises(ValueError, match="needs `normalize`"):
        pretrain_mpp(mpp, colour_images(8), epochs=1)
    with pytest.raises(ValueError, match="uint8 tensor of RGB images"):
        pretrain_mpp(mpp, colour_images(8).float() / 255, epochs=1, normalize=lambda x: x)
    with pytest.raises(ValueError, match="ImageDataset or a uint8 tensor"):
        pretrain_mpp(mpp, [colour_images(8)], epochs=1)
    with pytest.raises(ValueError, match="epochs and batch_size"):
        pretrain_mpp(mpp, colour_images(8), epochs=0, normalize=norm)
    with pytest.raises(ValueError, match="uint8 tensor of RGB images"):  # a bad validation set fails before training
        pretrain_mpp(mpp, colour_images(8), torch.zeros(0, 3, 8, 8, dtype=torch.uint8), epochs=1, normalize=norm)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (the full profile's path: bf16 autocast, data on the GPU)")
def test_pretraining_on_cuda():
    mpp = MaskedPatchPrediction(tiny_model(seed=1))
    train, val = colour_images(64, seed=0), colour_images(32, seed=1)
    h = pretrain_mpp(mpp, train, val, epochs=3, batch_size=16, lr=1e-2, augment=make_augment("cifar10"),
                     normalize=norm, device="cuda")
    assert all(p.is_cuda for p in mpp.parameters()) and all(math.isfinite(v) for v in h.train_loss)
    assert h.val_loss[-1] < math.log(512) - 0.5


def test_on_epoch_sees_every_epoch_in_eval_mode_and_does_not_change_the_run():
    calls = []

    def on_epoch(epoch, mpp):
        calls.append((epoch, mpp.training, evaluate_mpp(mpp, colour_images(16, seed=4), normalize=norm)["loss"]))
        torch.rand(3)  # a callback that draws random numbers must not change the training

    runs = []
    for callback in (None, on_epoch):
        mpp = MaskedPatchPrediction(tiny_model(seed=1))
        h = pretrain_mpp(mpp, colour_images(32), epochs=2, batch_size=16, lr=1e-2, normalize=norm, device="cpu",
                         on_epoch=callback)
        runs.append((h.train_loss, mpp.state_dict()))
        assert mpp.training  # the mode it started in
    assert runs[0][0] == runs[1][0] and all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])
    assert [(e, t) for e, t, _ in calls] == [(0, False), (1, False), (2, False)]
    assert calls[0][2] == pytest.approx(math.log(512), abs=1e-5) and calls[2][2] < calls[0][2]


def test_cache_replays_on_epoch_on_the_kept_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    images, probe_images = colour_images(32), colour_images(16, seed=4)
    settings = dict(epochs=2, batch_size=16, lr=1e-2, normalize=norm, device="cpu")

    def recorder(log):
        return lambda epoch, mpp: log.append((epoch, evaluate_mpp(mpp, probe_images, normalize=norm)["loss"]))
    plain = MaskedPatchPrediction(tiny_model(seed=1))
    pretrain_mpp_or_load(plain, images, name="mpp-snap", **settings)  # cached without weights per epoch
    trained, loaded = [], []
    first = MaskedPatchPrediction(tiny_model(seed=1))
    h1 = pretrain_mpp_or_load(first, images, name="mpp-snap", on_epoch=recorder(trained), **settings)
    assert [e for e, _ in trained] == [0, 1, 2]  # pre-trained again, to keep every epoch's weights
    assert (tmp_path / "checkpoints" / "mpp-snap-epochs.pt").exists()
    second = MaskedPatchPrediction(tiny_model(seed=5))
    h2 = pretrain_mpp_or_load(second, images, name="mpp-snap", on_epoch=recorder(loaded), **settings)
    assert h2.loaded_from is not None and h2.train_loss == h1.train_loss
    assert loaded == trained  # the same measurements, from the kept weights
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    (tmp_path / "checkpoints" / "mpp-snap-epochs.pt").unlink()
    again = []
    pretrain_mpp_or_load(MaskedPatchPrediction(tiny_model(seed=1)), images, name="mpp-snap",
                         on_epoch=recorder(again), **settings)
    assert again == trained  # weights per epoch gone: pre-trained again, the same run
