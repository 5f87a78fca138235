"""benchmarks/memory_format.py: times both layouts for every model, records the medians, refuses bad sizes."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import memory_format  # noqa: E402

from minivit.cnn import CifarResNet  # noqa: E402


def test_both_layouts_are_timed(monkeypatch):
    monkeypatch.setattr(memory_format, "MODELS", [("tiny", lambda: CifarResNet(widths=(4,), blocks=(1,)), lambda m: m)])
    saved = {}
    monkeypatch.setattr(memory_format, "save_result", lambda name, out: saved.update(name=name, out=out))
    out = memory_format.main(["--batch-size", "4", "--steps", "1", "--repeats", "2", "--device", "cpu"])
    times = out["models"]["tiny"]
    assert set(times["median_ms"]) == {"NCHW", "channels-last"}
    assert all(len(s) == 2 and all(t > 0 for t in s) for s in times["seconds_per_step"].values())
    assert saved["name"] == "memory_format_cpu" and saved["out"] is out


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--steps", "0"], ["--batch-size", "0"]])
def test_bad_sizes_are_usage_errors(args):
    with pytest.raises(SystemExit) as e:
        memory_format.main(args)
    assert e.value.code == 2
