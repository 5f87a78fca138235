"""benchmarks/rand_augment_rate.py: times both RandAugment pipelines for both data sets and records them."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import rand_augment_rate  # noqa: E402


def test_both_pipelines_are_timed_and_written(tmp_path):
    out = rand_augment_rate.main(["--device", "cpu", "--images", "3", "--repeats", "1", "--batch-scale", "64",
                                  "--out-dir", str(tmp_path)])
    assert set(out["rates"]) == {"cifar10", "imagenette"} and out["dry_run"]
    for dataset, r in out["rates"].items():
        assert r["batch"] == rand_augment_rate.BATCHES[dataset] // 64
        assert r["per_image_images_per_s"] > 0 and r["batched_images_per_s"] == pytest.approx(r["batch"] / r["batch_s"])
    assert json.loads((tmp_path / "rand_augment_rate_cpu.json").read_text()) == json.loads(json.dumps(out))


@pytest.mark.parametrize("args", [["--images", "0"], ["--repeats", "-1"], ["--batch-scale", "x"]])
def test_bad_sizes_are_usage_errors(args):
    with pytest.raises(SystemExit) as e:
        rand_augment_rate.main(args)
    assert e.value.code == 2
