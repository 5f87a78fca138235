"""benchmarks/mpp_dose_response.py: fine-tunes every start with every seed, pairs each MPP start with scratch."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mpp_dose_response as bench  # noqa: E402

from minivit.data import ImageDataset  # noqa: E402
from minivit.mpp import MaskedPatchPrediction  # noqa: E402
from minivit.vit import ViT  # noqa: E402


def test_every_start_and_seed_is_fine_tuned_and_paired_with_scratch(monkeypatch):
    g = torch.Generator().manual_seed(0)
    data = {s: ImageDataset(torch.randint(0, 256, (500, 3, 32, 32), dtype=torch.uint8, generator=g),
                            torch.arange(500) % 10, tuple("abcdefghij"), "cifar10", s) for s in ("train", "test")}
    monkeypatch.setattr(bench, "load_dataset", lambda name, split: data[split])
    tiny = bench.finetune_recipe().with_(n_per_class=2, epochs=1, batch_size=10)
    monkeypatch.setattr(bench, "finetune_recipe", lambda: tiny)
    loaded = []

    def fake_load(name):  # a distinct (random) MPP start per length, instead of the committed files
        loaded.append(name)
        torch.manual_seed(len(loaded))
        return MaskedPatchPrediction(ViT.from_preset("ViT-Nano/4"))
    monkeypatch.setattr(bench.zoo, "load", fake_load)
    monkeypatch.setattr(bench.zoo, "record", lambda name: {"sha256": "x" * 64})
    saved = {}
    monkeypatch.setattr(bench, "save_result", lambda name, out: saved.update(name=name, out=out))
    assert bench.main(["--seeds", "0", "1", "--lengths", "5", "40"]) == 0
    out = saved["out"]
    assert loaded == ["mpp-vit-nano4-cifar10-e5", "mpp-vit-nano4-cifar10-e40"]
    assert [r["mpp_epochs"] for r in out["rows"]] == [0, 5, 40] and out["test_images"] == 500
    base = out["rows"][0]
    assert "gain" not in base and base["pretext_acc"] is None
    for r in out["rows"][1:]:
        assert len(r["acc_by_seed"]) == 2 and 0 <= r["pretext_acc"] <= 1
        assert r["gain"] == pytest.approx(r["mean_acc"] - base["mean_acc"], abs=1e-6)  # paired over the same seeds and images
        assert r["gain_se"] >= max(r["gain_seed_se"], r["gain_test_se"])


def test_one_seed_is_refused():
    with pytest.raises(SystemExit):
        bench.main(["--seeds", "0"])
