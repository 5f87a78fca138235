"""benchmarks/reference_workload.py and the reference-second budgets of benchmarks/time_to_accuracy.py: the scaling
arithmetic, a (tiny) calibration, and time_to_accuracy's main path on tiny data. No timing is asserted."""

import functools
import math
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import reference_workload  # noqa: E402
import time_to_accuracy  # noqa: E402

from minivit.data import ImageDataset  # noqa: E402
from minivit.recipes import Recipe  # noqa: E402
from tests.conftest import TINY  # noqa: E402

# A reference workload small enough to time in milliseconds.
TINY_WORKLOAD = dict(image_size=8, patch_size=4, in_channels=3, dim=16, depth=1, heads=2, mlp_dim=32, num_classes=3,
                     batch_size=4)


def test_a_slower_machine_gets_proportionally_more_wall_clock_time():
    assert reference_workload.scaled_budget(300.0, 4.0, 4.0) == 300.0  # the reference machine itself
    assert reference_workload.scaled_budget(300.0, 4.0, 2.0) == 600.0  # half as fast: twice as long
    assert reference_workload.scaled_budget(60.0, 3.0, 4.5) == pytest.approx(40.0)  # 1.5x faster
    assert reference_workload.scaled_budget(0.0, 3.0, 4.5) == 0.0


@pytest.mark.parametrize("args", [(-1.0, 3.0, 3.0), (300.0, 0.0, 3.0), (300.0, 3.0, 0.0), (300.0, 3.0, math.nan)])
def test_bad_budgets_and_rates_are_refused(args):
    with pytest.raises(ValueError):
        reference_workload.scaled_budget(*args)


def test_the_reference_model_is_the_recipes_size_and_uses_no_minivit_code():
    model = reference_workload.ReferenceViT(**reference_workload.WORKLOAD)
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert not any(type(m).__module__.startswith("minivit") for m in model.modules())
    assert "D=64, depth 4, 4 heads, MLP 128" in reference_workload.describe()
    assert "64 tokens + class token" in reference_workload.describe()
    assert all(r["steps_per_s"] > 0 for r in reference_workload.REFERENCE_RATES.values())


def test_calibration_returns_a_positive_rate_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    c = reference_workload.measure_rate("cpu", seconds=0.05, rounds=3, warmup=1, workload=TINY_WORKLOAD)
    assert torch.equal(torch.rand(3), expected)
    assert c["steps_per_s"] > 0 and len(c["round_steps_per_s"]) == 3 and all(r > 0 for r in c["round_steps_per_s"])
    assert c["steps_per_round"] >= 1 and c["threads"] == torch.get_num_threads() and c["device"] == "cpu"
    assert "D=16, depth 1" in c["workload"]


@pytest.mark.parametrize("kwargs", [dict(rounds=0), dict(warmup=0), dict(seconds=0.0)])
def test_bad_calibration_sizes_are_refused(kwargs):
    with pytest.raises(ValueError):
        reference_workload.measure_rate("cpu", workload=TINY_WORKLOAD, **kwargs)


@pytest.fixture
def tiny_benchmark(monkeypatch):
    """time_to_accuracy with one tiny benchmark on 16 blank 8-px images, its calibration reporting 2.0 steps/s before
    training and 1.6 after (the real workload, tiny, is still run), results kept in memory."""
    data = ImageDataset(torch.zeros(16, 3, 8, 8, dtype=torch.uint8), torch.arange(16) % 3, ("a", "b", "c"),
                        "cifar10", "train")
    recipe = Recipe("tiny", "cifar10", n_per_class=None, epochs=2, batch_size=8, lr=1e-3, warmup_epochs=1,
                    augment="none")
    monkeypatch.setattr(time_to_accuracy, "BENCHMARKS",
                        {"tiny": dict(recipe=recipe, config=TINY, budget=3.0, target=0.0, phases=[(1.0, 8)])})
    monkeypatch.setattr(time_to_accuracy.mdata, "load_dataset", lambda name, split: data)
    rates = iter([2.0, 1.6])

    def measure(device, seconds):
        c = reference_workload.measure_rate(device, seconds=0.01, rounds=2, warmup=1, workload=TINY_WORKLOAD)
        return {**c, "steps_per_s": next(rates)}

    monkeypatch.setattr(time_to_accuracy, "measure_rate", measure)
    saved = {}
    monkeypatch.setattr(time_to_accuracy, "save_result", lambda name, out: saved.update(name=name, out=out))
    return saved


def test_the_budget_is_scaled_by_the_measurement_before_training(tiny_benchmark, capsys):
    # A reference machine 500x faster than this one "measured" (1000 vs 2.0 steps/s): a budget of 1,500 wall-clock s
    # that the tiny run (2 epochs of 16 images) meets on any machine, however loaded; met_target does not depend on
    # this machine's speed. (With --reference-rate 1.0 the budget was 1.5 s, missed on a loaded 2-core machine.)
    assert time_to_accuracy.main(["tiny", "--reference-rate", "1000", "--device", "cpu"]) == 0
    out = tiny_benchmark["out"]
    assert tiny_benchmark["name"] == "time_to_accuracy_tiny"
    assert out["budget_ref_s"] == 3.0 and out["budget_unit"] == "reference seconds"
    assert out["budget_wall_s"] == out["budget_s"] == 1500.0  # 3 reference s x 1000 / 2.0 (before; 1,875 after)
    assert out["reference_rate"] == {"steps_per_s": 1000.0, "source": "--reference-rate on the command line"}
    cal = out["calibration"]
    assert cal["steps_per_s_before"] == 2.0 and cal["steps_per_s_after"] == 1.6 and cal["drift"] == pytest.approx(-0.2)
    assert cal["threads"] == torch.get_num_threads() and "before" in cal["budget_from"]
    assert cal["before"]["rounds"] == 2 and cal["after"]["steps_per_round"] >= 1
    assert out["epochs_done"] == [2] and out["met_target"] is True and out["target_acc"] == 0.0
    for key in ("test_acc", "train_s", "eval_s", "history", "loadavg_before", "images_per_s", "stopped"):
        assert key in out  # the fields from before the reference budgets are all still there
    printed = capsys.readouterr().out
    assert "3 ref = 1500" in printed and "= 1500.0 wall-clock s" in printed and "drift -20.0%" in printed
    assert "MET" in printed and "NOT MET" not in printed


def test_a_target_not_reached_is_not_met(tiny_benchmark, monkeypatch, capsys):
    # the other side of met_target, on any machine: the same generous budget, an accuracy no model reaches
    bench = dict(time_to_accuracy.BENCHMARKS["tiny"], target=1.01)
    monkeypatch.setitem(time_to_accuracy.BENCHMARKS, "tiny", bench)
    assert time_to_accuracy.main(["tiny", "--reference-rate", "1000", "--device", "cpu"]) == 0
    out = tiny_benchmark["out"]
    assert out["met_target"] is False and out["target_acc"] == 1.01 and out["epochs_done"] == [2]
    assert "NOT MET" in capsys.readouterr().out


def test_the_recorded_reference_rate_is_the_default(tiny_benchmark, monkeypatch):
    monkeypatch.setitem(reference_workload.REFERENCE_RATES, "cpu", dict(steps_per_s=4.0, threads=2))
    time_to_accuracy.main(["tiny", "--budget", "1", "--device", "cpu"])
    out = tiny_benchmark["out"]
    assert out["budget_ref_s"] == 1.0 and out["budget_wall_s"] == 2.0  # 1 x 4.0 / 2.0
    assert out["reference_rate"]["source"] == "reference_workload.REFERENCE_RATES['cpu']"


def test_without_a_reference_rate_the_budget_stays_wall_clock(tiny_benchmark, monkeypatch):
    monkeypatch.delitem(reference_workload.REFERENCE_RATES, "cpu", raising=False)
    time_to_accuracy.main(["tiny", "--device", "cpu"])
    out = tiny_benchmark["out"]
    assert out["budget_wall_s"] == 3.0 and out["reference_rate"] is None and out["budget_unit"] == "wall-clock seconds"


def test_calibrate_only_prints_the_rate_and_trains_nothing(monkeypatch, capsys):
    monkeypatch.setattr(time_to_accuracy, "measure_rate", functools.partial(
        reference_workload.measure_rate, rounds=2, warmup=1, workload=TINY_WORKLOAD))
    monkeypatch.setattr(time_to_accuracy, "fit", None)  # would fail if called
    assert time_to_accuracy.main(["--calibrate-only", "--calibration-seconds", "0.01", "--device", "cpu"]) == 0
    assert "steps/s" in capsys.readouterr().out


def test_the_goals_are_in_reference_seconds():
    b = time_to_accuracy.BENCHMARKS
    assert (b["cifar10"]["budget"], b["cifar10"]["target"]) == (300.0, 0.70)
    assert (b["cifar10-hybrid"]["budget"], b["cifar10-hybrid"]["target"]) == (300.0, 0.75)
    assert (b["fashion-mnist"]["budget"], b["fashion-mnist"]["target"]) == (60.0, 0.90)


@pytest.mark.parametrize("args", [[], ["tiny"], ["cifar10", "--reference-rate", "0"],
                                  ["--calibrate-only", "--calibration-seconds", "0"]])
def test_bad_arguments_are_usage_errors(args):
    with pytest.raises(SystemExit) as e:
        time_to_accuracy.main(args)
    assert e.value.code == 2


def test_patch_dropout_keeps_a_random_share_of_the_patch_tokens_in_training_only():
    """The PatchDropout trial of time_to_accuracy.py: in training at a listed size, each image keeps round(keep * N)
    of its own patch tokens (with their position embeddings) and the [class] token; elsewhere and in eval, all."""
    from minivit import ViTConfig
    config = ViTConfig(image_size=16, patch_size=4, num_classes=3, dim=16, depth=1, heads=2, mlp_dim=32)
    model = time_to_accuracy._PatchDropoutViT(config, keep=0.5, at_sizes=(16,))
    model.blocks, model.norm = torch.nn.Identity(), torch.nn.Identity()  # features = the embedded tokens themselves
    x = torch.randn(4, 3, 16, 16)
    everything = model.embed(x)  # (B, N+1, D)
    torch.manual_seed(0)
    kept = model.train().forward_features(x)  # (B, k+1, D)
    assert kept.shape == (4, 1 + 8, 16) and torch.equal(kept[:, 0], everything[:, 0])
    for b in range(4):  # every kept token is one of the image's own, none twice
        rows = [int(torch.nonzero((everything[b, 1:] == t).all(-1))[0]) for t in kept[b, 1:]]
        assert len(set(rows)) == 8
    assert not all(torch.equal(kept[0, 1:], kept[b, 1:]) for b in range(1, 4))  # each image draws its own
    assert model.eval().forward_features(x).shape == (4, 17, 16)  # evaluation: every token
    model.train().set_image_size(8)
    assert model.forward_features(torch.randn(2, 3, 8, 8)).shape == (2, 5, 16)  # a size not listed: every token
