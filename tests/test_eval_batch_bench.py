"""benchmarks/eval_batch.py: times predict at every batch size asked for, records the medians, refuses bad sizes."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import eval_batch  # noqa: E402

from minivit import ViT  # noqa: E402
from minivit.data import ImageDataset  # noqa: E402


def test_every_model_and_batch_size_is_timed(monkeypatch, tmp_path):
    data = ImageDataset(torch.zeros(20, 3, 32, 32, dtype=torch.uint8), torch.arange(20) % 10,
                        tuple("abcdefghij"), "cifar10", "test")
    monkeypatch.setattr(eval_batch, "MODELS", [("tiny", lambda: ViT.from_preset("ViT-Nano/4", depth=1), "cifar10", 32)])
    monkeypatch.setattr(eval_batch, "load_dataset", lambda name, split: data)
    saved = {}
    monkeypatch.setattr(eval_batch, "save_result", lambda name, out: saved.update(name=name, out=out))
    out = eval_batch.main(["--batch-sizes", "4", "16", "--repeats", "2", "--device", "cpu"])
    times = out["models"]["tiny"]
    assert times["images"] == 20 and set(times["median_s"]) == {4, 16}
    assert all(len(s) == 2 and all(t > 0 for t in s) for s in times["seconds"].values())
    assert saved["name"] == "eval_batch_cpu" and saved["out"] is out


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--batch-sizes", "0", "8"]])
def test_bad_sizes_are_usage_errors(args):
    with pytest.raises(SystemExit) as e:
        eval_batch.main(args)
    assert e.value.code == 2
