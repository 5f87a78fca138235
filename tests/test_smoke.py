"""The smoke run (MINIVIT_SMOKE=1): what it shrinks, where, and that the profile reports it."""

import pytest
import torch

from minivit import smoke
from minivit.data import ImageDataset, stratified_subset
from minivit.profile import get_profile
from minivit.train import fit
from tests.conftest import synthetic, tiny_model


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), (" YES ", True), ("on", True),
                                       ("", False), ("0", False), ("false", False), ("off", False)])
def test_active_reads_the_environment(monkeypatch, value, on):
    monkeypatch.setenv(smoke.ENV_VAR, value)
    assert smoke.active() is on


def test_unknown_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(smoke.ENV_VAR, "maybe")
    with pytest.raises(ValueError, match="MINIVIT_SMOKE='maybe'"):
        smoke.active()


def test_profile_reports_smoke(monkeypatch):
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    p = get_profile("full", "cpu")
    assert p.smoke and p.name == "full" and "smoke" in str(p) and "\n" not in str(p)
    monkeypatch.delenv(smoke.ENV_VAR)
    q = get_profile("full", "cpu")
    assert not q.smoke and "smoke" not in str(q)
    assert get_profile("quick", "cpu", smoke=True).smoke  # an explicit argument wins


def test_run_size_shrinks_only_in_a_smoke_run(monkeypatch):
    monkeypatch.delenv(smoke.ENV_VAR, raising=False)
    assert smoke.run_size(60, 512, 5.0, 300.0) == (60, 512, 5.0, 300.0)
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    epochs, batch, warmup, budget = smoke.run_size(60, 512, 5.0, 300.0)
    assert (epochs, batch, budget) == (smoke.MAX_EPOCHS, smoke.MAX_BATCH, smoke.MAX_SECONDS)
    assert warmup == pytest.approx(5.0 * smoke.MAX_EPOCHS / 60)  # the warm-up keeps its share of the run
    assert smoke.run_size(1, 8, 0.5, None) == (1, 8, 0.5, None)  # already small: unchanged


def test_fit_runs_at_most_the_smoke_epochs_and_batch(monkeypatch):
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    x, y = synthetic(200)
    h = fit(tiny_model(), (x, y), epochs=10, batch_size=100, device="cpu", progress=False)
    assert len(h) == smoke.MAX_EPOCHS and h.steps_per_epoch == -(-200 // smoke.MAX_BATCH)


def _dataset(per_class=(50, 50, 3)):
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(per_class)])
    return ImageDataset(torch.zeros(len(labels), 3, 4, 4, dtype=torch.uint8), labels, ("a", "b", "c"), "cifar10",
                        "train")


def test_stratified_subset_caps_only_in_a_smoke_run(monkeypatch):
    monkeypatch.delenv(smoke.ENV_VAR, raising=False)
    with pytest.raises(ValueError, match="fewer than n_per_class=10"):
        stratified_subset(_dataset(), 10)
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    sub = stratified_subset(_dataset(), 10)
    assert torch.bincount(sub.labels).tolist() == [10, 10, 3]


def test_load_dataset_returns_a_stratified_sliver(monkeypatch, tmp_path):
    from minivit import data
    whole = _dataset((100, 100, 100))
    monkeypatch.setattr(data, "_load_whole", lambda name, split, root=None, download=True: whole)
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    ds = data.load_dataset("cifar10", "train")
    assert torch.bincount(ds.labels).tolist() == [smoke.TRAIN_PER_CLASS] * 3
    monkeypatch.setenv(smoke.ENV_VAR, "0")
    assert data.load_dataset("cifar10", "train") is whole


def test_checkpoints_of_a_smoke_run_go_elsewhere(monkeypatch, tmp_path):
    from minivit.recipes import checkpoint_dir
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path))
    monkeypatch.delenv(smoke.ENV_VAR, raising=False)
    real = checkpoint_dir()
    monkeypatch.setenv(smoke.ENV_VAR, "1")
    assert checkpoint_dir() != real and checkpoint_dir().name == "checkpoints-smoke"
