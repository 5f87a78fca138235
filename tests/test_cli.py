"""Tests for the command line (python -m minivit.train): help, clear errors, a tiny real run and its resume."""
import json
import subprocess
import sys

import pytest

from minivit import data as mdata
from minivit.cli import main


def test_help_lists_presets_datasets_and_torchrun(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for part in ("--preset", "--dataset", "--epochs", "--n-per-class", "--resume", "--compile", "torchrun",
                 "ViT-Micro/4", "cifar10", "fashion-mnist"):
        assert part in out, part


@pytest.mark.parametrize("args, expected", [
    (["--preset", "ViT-Huge", "--dataset", "cifar10", "--epochs", "1"], "unknown preset 'ViT-Huge'; valid presets: "),
    (["--preset", "ViT-Nano/4", "--dataset", "mnist", "--epochs", "1"], "unknown dataset 'mnist'; valid datasets: "),
    (["--preset", "ViT-Nano/4", "--dataset", "cifar10", "--epochs", "0"], "--epochs and --batch-size must be >= 1"),
])
def test_bad_arguments_are_clear_errors(capsys, args, expected):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert expected in err
    if "preset" in expected:
        assert "ViT-Nano/4" in err and "ViT-B/16" in err
    if "dataset" in expected:
        assert "cifar10, fashion-mnist, imagenette" in err


def _have(name):
    try:
        mdata.load_dataset(name, "test", download=False)
        return True
    except (FileNotFoundError, RuntimeError):
        return False


@pytest.mark.skipif(not _have("fashion-mnist"), reason="Fashion-MNIST not prepared (make data)")
def test_tiny_real_run_then_resume(tmp_path, capsys):
    args = ["--preset", "ViT-Nano/4", "--dataset", "fashion-mnist", "--n-per-class", "4", "--val-per-class", "2",
            "--batch-size", "20", "--out", str(tmp_path), "--no-progress"]
    assert main(args + ["--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "ViT-Nano/4" in out and "test top-1" in out and "summary.json" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["image_size"] == 28 and summary["config"]["in_channels"] == 1
    assert summary["test"]["n"] == 20 and len(summary["history"]["epoch"]) == 2
    assert summary["history"]["val_acc"][-1] == summary["test"]["acc"]
    assert main(args + ["--epochs", "3", "--resume"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["history"]["epoch"] == [1, 2, 3]


def test_module_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "minivit.train", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "python -m minivit.train" in out.stdout
