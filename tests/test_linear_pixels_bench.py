"""benchmarks/linear_pixels.py: the ridge penalty is chosen on held-out training images, and the test split is
scored once, with the chosen penalty, after a refit on the whole training set."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import linear_pixels as bench  # noqa: E402

from minivit.data import ImageDataset  # noqa: E402


def _data(split, n, g):
    labels = torch.arange(n) % 10
    images = torch.randint(0, 256, (n, 3, 8, 16), dtype=torch.uint8, generator=g)
    images[:, 0, 0] = 0
    images[torch.arange(n), 0, 0, labels] = 255  # a lit pixel at column `label` of the first row: linearly readable
    return ImageDataset(images, labels, tuple("abcdefghij"), "cifar10", split)


def test_the_penalty_is_chosen_without_the_test_images(monkeypatch):
    g = torch.Generator().manual_seed(0)
    data = {"train": _data("train", 400, g), "test": _data("test", 200, g)}
    monkeypatch.setattr(bench, "load_dataset", lambda name, split: data[split])
    calls = []
    real = bench.few_shot_linear

    def spy(f_train, y_train, f_test, *, num_classes, l2):
        calls.append((len(f_train), len(f_test), l2))
        return real(f_train, y_train, f_test, num_classes=num_classes, l2=l2)
    monkeypatch.setattr(bench, "few_shot_linear", spy)
    saved = {}
    monkeypatch.setattr(bench, "save_result", lambda name, out: saved.update(name=name, out=out))
    assert bench.main(["--sizes", "0"]) == 0
    row = saved["out"]["rows"][0]
    assert [c[:2] for c in calls] == [(360, 40)] * len(bench.PENALTIES) + [(400, 200)]  # 10% held out, then all
    assert [c[2] for c in calls[:-1]] == list(bench.PENALTIES) and calls[-1][2] == row["l2"]
    assert row["l2"] == max(bench.PENALTIES, key=lambda l2: (row["held_out_acc"][f"{l2:g}"], -l2))
    assert row["test_images"] == 200 and row["test_acc"] > 0.9  # the class pixel is found


def test_a_negative_size_is_refused(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "-1"])
    assert "--sizes must be >= 0" in capsys.readouterr().err


def test_another_data_set_at_a_lower_side_is_fitted_on_its_resized_pixels(monkeypatch):
    g = torch.Generator().manual_seed(1)
    data = {s: _data(s, n, g) for s, n in (("train", 400), ("test", 200))}
    data = {s: ImageDataset(d.images.repeat_interleave(2, -2), d.labels, d.classes, "imagenette", s)
            for s, d in data.items()}  # (N, 3, 16, 16): each row doubled, so the lit column survives halving
    monkeypatch.setattr(bench, "load_dataset", lambda name, split: data[split])
    widths = []
    real = bench.few_shot_linear

    def spy(f_train, y_train, f_test, *, num_classes, l2):
        widths.append(f_train.shape[1])
        return real(f_train, y_train, f_test, num_classes=num_classes, l2=l2)
    monkeypatch.setattr(bench, "few_shot_linear", spy)
    saved = {}
    monkeypatch.setattr(bench, "save_result", lambda name, out: saved.update(name=name, out=out))
    assert bench.main(["--data", "imagenette", "--sizes", "0", "--sides", "8", "16"]) == 0
    assert saved["name"] == "linear_pixels_imagenette" and saved["out"]["data"] == "imagenette"
    assert [r["side"] for r in saved["out"]["rows"]] == [8, 16]
    n = len(bench.PENALTIES) + 1
    assert widths == [3 * 8 * 8] * n + [3 * 16 * 16] * n  # the features of the resized images


def test_a_side_below_one_pixel_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--sides", "0"])
    assert "--sides must be >= 1 pixel" in capsys.readouterr().err
