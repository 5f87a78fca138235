"""The command line, run as students run it (`python -m minivit.train ...` in a subprocess): help, usage errors
that change no file, run folders that are never lost, validation on held-out training images, fine-tuning at a
higher resolution, evaluation, recipes and hybrids. The cases are the instructor trial's (CL*, in
/work/shared/reviews/instructor-trial.md)."""
import hashlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from minivit import data as mdata
from minivit.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--dataset", "fashion-mnist", "--n-per-class", "4", "--val-per-class", "2", "--test-per-class", "2",
        "--batch-size", "20", "--no-progress"]


def cli(*args, cwd=None, timeout=600):
    """`python -m minivit.train *args` -> CompletedProcess (text)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "minivit.train", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def snapshot(folder: Path) -> dict:
    """{relative path: sha256} of every file under `folder`."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _have(name):
    try:
        mdata.load_dataset(name, "test", download=False)
        return True
    except (FileNotFoundError, RuntimeError):
        return False


needs_data = pytest.mark.skipif(not _have("fashion-mnist"), reason="Fashion-MNIST not prepared (make data)")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished 2-epoch run of ViT-Nano/4 on 40 Fashion-MNIST images (20 held out), 20 test images."""
    if not _have("fashion-mnist"):
        pytest.skip("Fashion-MNIST not prepared (make data)")
    out = tmp_path_factory.mktemp("cli") / "run"
    r = cli("--preset", "ViT-Nano/4", *TINY, "--epochs", "2", "--out", out)
    assert r.returncode == 0, r.stderr
    return out, r.stdout


@pytest.fixture
def copied_run(finished_run, tmp_path):
    """A copy of `finished_run`'s folder that a test may change."""
    import shutil
    return shutil.copytree(finished_run[0], tmp_path / "run")


# ---- help and documentation -----------------------------------------------------------------------------------

def test_help_prints_each_default_once_and_the_real_out_pattern():
    r = subprocess.run([sys.executable, "-m", "minivit.train", "--help"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0
    out = r.stdout
    for part in ("--preset", "--dataset", "--epochs", "--n-per-class", "--val-per-class", "--test-per-class",
                 "--resume", "--overwrite", "--init-from", "--image-size", "--eval-only", "--recipe", "--compile",
                 "torchrun", "ViT-Micro/4", "R50+ViT-B/16", "fashion-mnist-quick", "help(minivit.train)",
                 "runs/<model>-<dataset>-<YYYYmmdd-HHMMSS>", "held out of the TRAINING split"):
        assert part in out, part
    import re
    entries = re.split(r"\n  (?=-)", out.split("options:")[1].split("examples:")[0])  # one per option
    assert len(entries) > 20 and all(e.count("(default:") <= 1 for e in entries)  # the old formatter doubled them
    assert "(default: None)" not in out
    smoothing = next(e for e in entries if e.startswith("--label-smoothing"))
    assert "(default: 0)" in smoothing  # fit's default; the CLI said 0.1


def test_cli_and_fit_share_their_defaults():
    from minivit.train import fit
    a = build_parser().parse_args([])
    fit_defaults = {k: v.default for k, v in inspect.signature(fit).parameters.items()}
    help_text = build_parser().format_help()
    for flag, key in (("--batch-size", "batch_size"), ("--lr", "lr"), ("--weight-decay", "weight_decay"),
                      ("--warmup-epochs", "warmup_epochs"), ("--label-smoothing", "label_smoothing"),
                      ("--clip-grad", "clip_grad")):
        assert getattr(a, key) is None  # resolved from fit's signature (or a recipe) when the run starts
        entry = help_text[help_text.index(f"\n  {flag} "):]  # the option's own entry, not the usage line
        assert f"(default: {fit_defaults[key]:g})" in " ".join(entry.split()[:30]), flag


def test_docstrings_point_at_each_other():
    import minivit.cli
    import minivit.train
    assert "python -m minivit.train --help" in minivit.train.__doc__ and "minivit.cli" in minivit.train.__doc__
    assert "help(minivit.train)" in build_parser().format_help()
    assert "python -m minivit.train --help" in minivit.cli.__doc__
    assert build_parser.__doc__ and main.__doc__


# ---- usage errors: exit status 2, no traceback, nothing written ------------------------------------------------

@pytest.mark.parametrize("extra, message", [
    (["--n-per-class", "0"], "argument --n-per-class: expected a whole number >= 1, got 0"),  # CL7b
    (["--n-per-class", "-3"], "argument --n-per-class: expected a whole number >= 1, got -3"),  # CL7
    (["--val-per-class", "0"], "argument --val-per-class: expected a whole number >= 1"),  # CL21
    (["--clip-grad", "-1"], "argument --clip-grad: expected a max gradient norm >= 0"),  # CL22
    (["--time-budget", "-5"], "argument --time-budget: expected a number > 0, got -5"),  # CL19
    (["--warmup-epochs", "5"], "--warmup-epochs 5 is longer than the run (--epochs 1)"),  # CL20
    (["--lr", "-1"], "argument --lr: expected a learning rate > 0"),  # CL9
    (["--lr", "nan"], "argument --lr: expected a learning rate > 0 (a finite number), got nan"),  # CL30
    (["--lr", "inf"], "argument --lr: expected a learning rate > 0"),
    (["--label-smoothing", "1.5"], r"argument --label-smoothing: expected a number in [0, 1), got 1.5"),  # CL10
    (["--dropout", "1.5"], "argument --dropout: expected a number in [0, 1), got 1.5"),  # CL23
    (["--epochs", "0"], "argument --epochs: expected a whole number >= 1, got 0"),  # CL4
    (["--preset", "vit_tiny_patch16_224"], "unknown preset 'vit_tiny_patch16_224'; valid presets: "),  # CL1
    (["--dataset", "cifar"], "unknown dataset 'cifar'; valid datasets: cifar10, fashion-mnist, imagenette"),  # CL2
    (["--preset", "ViT-B/16"], "ViT-B/16 has patch size 16, which does not divide the 28x28 images of fashion-mnist: "
                               "pass --image-size 32"),  # CL11
    (["--preset", "ViT-Nano/16"], "or --patch-size 14 (it divides 28)"),  # CL28
    (["--eval-only", "--init-from", "x.pt", "--lr", "1e-3"], "--eval-only trains nothing and writes nothing; leave out"),
])
def test_nonsense_is_a_usage_error(tmp_path, extra, message):
    args = ["--preset", "ViT-Nano/4", "--dataset", "fashion-mnist", "--epochs", "1", "--out", tmp_path / "run"]
    for flag in ("--preset", "--dataset", "--epochs"):  # the case's own value replaces the default one
        if flag in extra and flag in args:
            i = args.index(flag)
            del args[i:i + 2]
    if "--eval-only" in extra:
        args = [a for a in args if a not in ("--epochs", "1", "--out", tmp_path / "run")]
    r = cli(*args, *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here")
def test_a_device_that_is_not_there_is_a_usage_error(tmp_path):  # CL12
    r = cli("--preset", "ViT-Nano/4", "--dataset", "fashion-mnist", "--epochs", "1", "--device", "cuda", cwd=tmp_path)
    assert r.returncode == 2 and "argument --device: cuda: no CUDA GPU is available here" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "runs").exists()


def test_out_naming_a_file_is_a_usage_error(tmp_path):  # CL18
    (tmp_path / "afile").write_text("notes")
    r = cli("--preset", "ViT-Nano/4", "--dataset", "fashion-mnist", "--epochs", "1", "--out", tmp_path / "afile")
    assert r.returncode == 2 and "afile is a file; --out names the folder a run is written to" in r.stderr
    assert (tmp_path / "afile").read_text() == "notes"


@needs_data
def test_more_images_per_class_than_a_class_has_is_refused_before_training(tmp_path):  # CL6
    r = cli("--preset", "ViT-Nano/4", *TINY[:2], "--epochs", "1", "--n-per-class", "10000", "--out", tmp_path / "run")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "class 0 ('T-shirt/top') has 6000 examples, fewer than n_per_class=10000" in r.stderr
    r = cli("--preset", "ViT-Nano/4", *TINY[:2], "--epochs", "1", "--n-per-class", "5999", "--val-per-class", "5",
            "--out", tmp_path / "run")
    assert r.returncode == 2 and "has 6000 training images, fewer than 5 held out + 5999 to train on" in r.stderr
    assert not (tmp_path / "run").exists()


# ---- run folders: nothing lost ---------------------------------------------------------------------------------

@needs_data
def test_a_finished_run_is_never_replaced_or_contradicted(finished_run, tmp_path):
    out, stdout = finished_run
    assert "20 held out for validation" in stdout and "on 20 test images" in stdout
    before = snapshot(out)
    refusals = [  # (arguments, what the error says)
        (["--preset", "ViT-Nano/4", *TINY, "--epochs", "1", "--out", out],  # CL14
         f"--out {out} already holds a run (checkpoint.pt, summary.json); --resume continues it, --overwrite"),
        (["--preset", "ViT-Nano/4", *TINY, "--epochs", "1", "--out", out, "--resume"],  # CL17
         "has finished 2 epochs; --epochs 1 would end before that"),
        (["--preset", "ViT-Micro/4", *TINY, "--epochs", "3", "--out", out, "--resume"],  # CL15
         "these differ: --preset: run 'ViT-Nano/4', now 'ViT-Micro/4'"),
        (["--preset", "ViT-Nano/4", *TINY[:-1], "--n-per-class", "5", "--epochs", "3", "--out", out, "--resume"],  # CL16
         "--n-per-class: run 4, now 5"),
        (["--preset", "ViT-Nano/4", *TINY, "--epochs", "3", "--out", out, "--resume", "--overwrite"],
         "--resume continues the run in --out, --overwrite replaces it: pick one"),
        (["--preset", "ViT-Nano/4", *TINY, "--epochs", "3", "--out", tmp_path / "typo", "--resume"],  # CL13
         "holds no run to resume (no checkpoint.pt)"),
    ]
    for args, message in refusals:
        r = cli(*args)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    assert snapshot(out) == before  # every byte as it was
    assert not (tmp_path / "typo").exists()


@needs_data
def test_resume_continues_the_same_run_and_keeps_its_summary_consistent(copied_run, tmp_path):
    out = copied_run
    r = cli("--preset", "ViT-Nano/4", *TINY, "--epochs", "3", "--out", out, "--resume")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["history"]["epoch"] == [1, 2, 3]
    assert summary["args"]["epochs"] == summary["settings"]["epochs"] == 3
    r = cli("--preset", "ViT-Nano/4", *TINY, "--epochs", "3", "--out", out, "--resume")  # finished: returns at once
    assert r.returncode == 0 and json.loads((out / "summary.json").read_text())["history"]["epoch"] == [1, 2, 3]


@needs_data
def test_overwrite_replaces_and_default_out_is_new_every_time(copied_run, tmp_path):
    out = copied_run
    r = cli("--preset", "ViT-Nano/4", *TINY, "--epochs", "1", "--out", out, "--overwrite")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "summary.json").read_text())["history"]["epoch"] == [1]
    small = ["--preset", "ViT-Nano/4", "--dataset", "fashion-mnist", "--n-per-class", "1", "--test-per-class", "1",
             "--batch-size", "10", "--epochs", "1", "--no-progress"]
    first, second = cli(*small, cwd=tmp_path), cli(*small, cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(n.startswith("ViT-Nano-4-fashion-mnist-2") for n in runs)  # ...-<YYYY...>
    assert all((tmp_path / "runs" / n / "summary.json").exists() for n in runs)


# ---- validation on held-out training images; the test split for the report only --------------------------------

@needs_data
def test_validation_is_held_out_of_the_training_split(finished_run):
    summary = json.loads((finished_run[0] / "summary.json").read_text())
    assert summary["val"]["n"] == 20 and summary["test"]["n"] == 20
    assert summary["history"]["val_acc"][-1] == summary["val"]["acc"]  # per-epoch validation: the held-out images
    from minivit.cli_run import _hold_out
    train = mdata.load_dataset("fashion-mnist", "train")
    fit_part, val = _hold_out(train, 3, 5, seed=0)
    assert len(fit_part) == 50 and len(val) == 30 and val.split == "train"
    as_bytes = lambda ds: {bytes(im.numpy().tobytes()) for im in ds.images}  # noqa: E731
    assert not as_bytes(fit_part) & as_bytes(val)  # disjoint
    assert torch.bincount(val.labels).tolist() == [3] * 10


# ---- the whole job: train -> fine-tune at a higher resolution -> evaluate; recipes; hybrids ---------------------

@needs_data
def test_fine_tune_at_a_higher_resolution_then_evaluate(finished_run, tmp_path):
    out = tmp_path / "ft40"
    r = cli("--init-from", finished_run[0], *TINY, "--image-size", "40", "--epochs", "1", "--lr", "5e-4", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "pos_embed: 7x7 -> 10x10" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["image_size"] == 40 and summary["config"]["patch_size"] == 4
    before = snapshot(tmp_path)
    r = cli("--eval-only", "--init-from", out, "--dataset", "fashion-mnist", "--test-per-class", "2", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert f"test top-1 {summary['test']['acc']:.4f}, loss {summary['test']['loss']:.4f} on 20 images" in r.stdout
    assert "(40x40 px); nothing written" in r.stdout and snapshot(tmp_path) == before


@needs_data
def test_a_recipe_and_a_hybrid_from_the_command_line(tmp_path):
    out = tmp_path / "hybrid"
    r = cli("--recipe", "fashion-mnist-quick", "--preset", "R-S4+ViT-Nano/4", "--epochs", "1", *TINY[2:], "--out", out)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["backbone"] == "resnet_s4" and summary["dataset"] == "fashion-mnist"
    assert (summary["recipe"]["lr"], summary["recipe"]["augment"], summary["recipe"]["epochs"]) == (5e-3, "none", 1)
    assert summary["settings"]["batch_size"] == 20  # the flag overrides the recipe's 256
    from minivit import load_model
    model = load_model(out / "checkpoint.pt")  # a hybrid, rebuilt from its config
    assert model.patch_embed.backbone_name == "resnet_s4" and model.token_stride == 4
    r = cli("--eval-only", "--init-from", out, "--dataset", "fashion-mnist", "--test-per-class", "2", "--no-progress")
    assert r.returncode == 0 and f"test top-1 {summary['test']['acc']:.4f}" in r.stdout, r.stderr


def test_module_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "minivit.train", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "python -m minivit.train" in out.stdout
