"""benchmarks/full_profile_plan.py: the full profile's estimated GPU minutes stay within the course's budget."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import full_profile_plan as planning  # noqa: E402


def test_every_notebook_is_planned():
    assert set(planning.plan()) == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_the_full_profile_fits_one_gpu():
    seconds = planning.plan()
    over = {nb: round(s / 60, 1) for nb, s in seconds.items() if s > planning.BUDGET_EACH_S}
    assert not over, f"notebooks over {planning.BUDGET_EACH_S / 60:.0f} min on one H100 (estimated): {over}"
    assert sum(seconds.values()) <= planning.BUDGET_ALL_S


def test_the_time_model_reproduces_its_calibration():
    # notebook 03's one measured full-profile run on an H100, with the sizes it had then: 276 s
    old_03 = [planning.Run("ViT", "ViT-Micro/4@28x1", "fashion-mnist", 59000, 40, 256, eval_images=1000,
                           extra_eval_images=10000),
              planning.Run("linear", "linear-28", "fashion-mnist", 59000, 40, 256, eval_images=1000)]
    f = planning.FIGURES
    estimate = f["start_s"] + f["decode_s"]["fashion-mnist"] + sum(planning.run_seconds(r, f) for r in old_03)
    assert 0.8 * 276 < estimate < 1.2 * 276


def test_the_plan_follows_the_recipes(monkeypatch):
    before = planning.plan()["04_training_a_vit"]
    full = planning.recipes.RECIPES["cifar10-full"]
    monkeypatch.setitem(planning.recipes.RECIPES, "cifar10-full", replace(full, epochs=2 * full.epochs))
    assert planning.plan()["04_training_a_vit"] > 1.3 * before


def test_measured_figures_replace_the_estimates():
    run = planning.Run("x", "ViT-Nano/4", "cifar10", 1000, 1, 100)
    figures = {**planning.FIGURES, "step_s": {planning.step_key("ViT-Nano/4", 100): 1.0}}
    assert planning.run_seconds(run, figures) == pytest.approx(10.0)  # 10 steps of 1 s


def test_the_step_time_script_writes_what_the_plan_reads(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_step_times.py"), "--device", "cpu",
                          "--max-batch", "2", "--warmup", "0", "--steps", "1", "--workers", "1",
                          "--loader-images", "16", "--models", "linear-28", "ViT-Nano/4", "--name", "dry-run", "--out-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    figures = json.loads((tmp_path / "gpu_step_times_dry-run.json").read_text())["figures"]
    assert "dry run" in figures["source"] and planning.step_key("linear-28", 1024) in figures["step_s"]
    assert set(planning.plan(figures)) == set(planning.plan())
