"""Tests for minivit.checkpoint and fit's resume: atomic writes, weights_only loads, exact resume, clear mismatches."""

import pytest
import torch
from torch import nn

from minivit import checkpoint as ckpt
from minivit import data as mdata
from minivit.train import History, fit
from tests.conftest import TINY, synthetic, tiny_model

def test_save_load_round_trip_is_weights_only(tmp_path):
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    opt.step()
    path = ckpt.save_checkpoint(tmp_path / "a" / "c.pt", model, optimizer=opt, history=History().to_dict(), epoch=3,
                                rng=ckpt.get_rng_state(torch.Generator().manual_seed(1)))
    raw = torch.load(path, weights_only=True)  # only tensors and plain containers inside
    assert raw["format"] == ckpt.FORMAT and raw["epoch"] == 3 and raw["config"] == TINY.to_dict()
    other = tiny_model(seed=1)
    opt2 = torch.optim.AdamW(other.parameters(), lr=1e-3)
    state = ckpt.load_checkpoint(path, other, optimizer=opt2)
    for a, b in zip(model.state_dict().values(), other.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert opt2.state_dict()["state"][0]["step"] == 1 and state["epoch"] == 3
    loaded = ckpt.load_model(path)
    x = torch.randn(4, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model.eval()(x))
    assert [p.name for p in tmp_path.joinpath("a").iterdir()] == ["c.pt"]  # no temp file left behind


def test_failed_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    model = tiny_model()
    path = ckpt.save_checkpoint(tmp_path / "c.pt", model, epoch=1)

    def broken_save(obj, f):
        f.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_checkpoint(path, tiny_model(seed=5), epoch=2)
    monkeypatch.undo()
    assert ckpt.read_checkpoint(path)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_resume_equals_straight_run(tmp_path):
    x, y = synthetic(64)
    kw = dict(epochs=4, batch_size=16, lr=3e-3, warmup_epochs=1, label_smoothing=0.1, device="cpu", seed=3,
              augment=mdata.Augment(padding=1, flip=True), progress=False)
    straight_model = tiny_model(dropout=0.1)
    straight = fit(straight_model, (x, y), (x, y), **kw)

    path = tmp_path / "run.pt"
    first = fit(tiny_model(dropout=0.1), (x, y), (x, y), checkpoint=path,
                on_epoch_end=lambda h: len(h) == 2, **kw)  # interrupted after 2 of 4 epochs
    assert len(first) == 2 and ckpt.read_checkpoint(path)["epoch"] == 2
    resumed_model = tiny_model(seed=99, dropout=0.1)  # different init: everything must come from the checkpoint
    resumed = fit(resumed_model, (x, y), (x, y), checkpoint=path, resume=True, **kw)

    assert resumed.epoch == [1, 2, 3, 4] and resumed.stopped is None
    for key in ("train_loss", "train_acc", "val_loss", "val_acc", "lr"):
        assert getattr(resumed, key) == getattr(straight, key), key
    for (name, a), b in zip(straight_model.state_dict().items(), resumed_model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
    assert ckpt.read_checkpoint(path)["epoch"] == 4


def test_resume_without_checkpoint_starts_fresh(tmp_path):
    x, y = synthetic(32)
    h = fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False,
            checkpoint=tmp_path / "new.pt", resume=True)
    assert len(h) == 1 and (tmp_path / "new.pt").exists()


def test_mismatched_model_is_a_clear_error(tmp_path):
    path = ckpt.save_checkpoint(tmp_path / "c.pt", tiny_model(), epoch=1)
    with pytest.raises(ValueError, match=r"config\.dim: checkpoint 16, model 32") as e:
        ckpt.load_checkpoint(path, tiny_model(dim=32, mlp_dim=64))
    assert "pos_embed: checkpoint shape (1, 5, 16), model shape (1, 5, 32)" in str(e.value)
    with pytest.raises(ValueError, match=r"config\.depth: checkpoint 1, model 2") as e:
        ckpt.load_checkpoint(path, tiny_model(depth=2))
    assert "missing from the checkpoint: blocks.1." in str(e.value)

    class Plain(nn.Module):  # no config: parameter names and shapes are compared
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

    with pytest.raises(ValueError, match="missing from the checkpoint: fc.bias, fc.weight") as e:
        ckpt.load_checkpoint(path, Plain())
    assert "not in the model: blocks.0.attn.proj.bias" in str(e.value)


def test_resume_with_a_different_run_is_a_clear_error(tmp_path):
    x, y = synthetic(32)
    path = tmp_path / "c.pt"
    fit(tiny_model(), (x, y), epochs=2, batch_size=16, device="cpu", progress=False, checkpoint=path)
    with pytest.raises(ValueError, match="batch_size: checkpoint 16, now 8"):
        fit(tiny_model(), (x, y), epochs=2, batch_size=8, device="cpu", progress=False, checkpoint=path, resume=True)


def test_not_a_checkpoint(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        ckpt.read_checkpoint(tmp_path / "junk.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a minivit checkpoint"):
        ckpt.read_checkpoint(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        ckpt.read_checkpoint(tmp_path / "missing.pt")
