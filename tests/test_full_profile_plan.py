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
    # even the upper end of the range (a slower host) keeps every notebook within 4 min on a machine where 04 ran
    # before 06
    ranges = planning.plan_range()
    over = {nb: round(hi / 60, 1) for nb, (_, hi) in ranges.items() if hi > planning.BUDGET_EACH_S}
    assert not over, f"notebooks over {planning.BUDGET_EACH_S / 60:.0f} min on one H100 (estimated): {over}"
    assert sum(hi for _, hi in ranges.values()) <= planning.BUDGET_ALL_S


def test_a_fresh_machine_trains_the_checkpoints_again_and_decodes_its_data():
    warm, cold = planning.plan(), planning.plan(cold=True)
    runs_warm, runs_cold = planning.notebook_runs(), planning.notebook_runs(cold=True)
    # 06 trains 04's ViT and CNN again on a fresh machine (08 takes its mosaic model from the zoo: no longer 07's)
    assert [r.what for r in runs_cold["06_hybrid"] if r not in runs_warm["06_hybrid"]] == [
        "ViT-Micro/4", "ResNet-20-w2 at the ViT's training FLOPs"]
    assert cold["06_hybrid"] > warm["06_hybrid"]
    assert {nb for nb in runs_warm if runs_warm[nb] != runs_cold[nb]} == {"06_hybrid"}
    f = planning.FIGURES
    # in number order on one machine (make gpu-check) 00 decodes the three data sets; 02 then reads CIFAR-10's cache
    assert cold["00_start_here"] == warm["00_start_here"]
    assert cold["02_class_token_and_positions"] - warm["02_class_token_and_positions"] == pytest.approx(
        f["decode_s"]["cifar10"] - f["cached_load_s"])


def test_the_plan_counts_every_run_the_notebooks_make():
    runs = planning.notebook_runs()
    ablations = [r for r in runs["04_training_a_vit"] if r.what.startswith("ablation")]
    assert sum(r.repeat for r in ablations) == 9  # 3 arms x seeds (0, 1, 2), notebook 04's ablation cell
    # 05 trains the sweep record's three checked runs (two ViTs, ResNet-8), each in its two phases (16 px, 32 px)
    assert sum(r.repeat for r in runs["05_scaling"]) == 2 * 3
    assert "cifar10" in planning.NOTEBOOK_DATA["08_inspecting_vit"]  # 08 probes the zoo's CIFAR-10 model


def test_the_proposed_sizes_are_smaller_and_labelled_as_estimates(capsys):
    now, proposed = planning.plan(), planning.plan(sizes=planning.PROPOSED)
    assert all(proposed[nb] <= now[nb] for nb in now) and sum(proposed.values()) < 0.75 * sum(now.values())
    planning.main(["--proposed"])
    out = capsys.readouterr().out
    assert "PROPOSED, not the notebooks' own" in out and "unchecked" in out


def test_the_time_model_reproduces_the_measured_gpu_runs():
    # the full-profile runs on one H100 of 2026-11-27 (README), with the sizes and the pipeline they had then (30
    # epochs, RandAugment in 14 loader workers): training cells of 04 (ViT 67 s, CNN 49 s), 06 (its hybrid and a
    # depth-7 ViT, 160 s) and 05's data sweep (124 s)
    c10 = planning.recipes.get("cifar10", "full").with_(epochs=30, workers=14)
    run = planning.from_recipe
    measured = {
        "04 ViT": ([run("v", "ViT-Micro/4", c10, 50000, eval_images=2000)], 67),
        "04 CNN": ([run("c", "ResNet-20-w2", c10, 50000, eval_images=2000)], 49),
        "06 hybrid and deeper ViT": ([run("h", "R-S4+ViT-Micro/4", c10, 50000, eval_images=200),
                                      run("d", "ViT-Micro/4:d7", c10, 50000, eval_images=200)], 160),
        "05 data sweep": ([run("s", m, c10, 10 * n, epochs=500 * 500 // (10 * n), batch_size=500,
                               extra_eval_images=2000) for n in (250, 1000, 5000)
                           for m in ("ViT-Micro/4", "ResNet-20-w2")], 124)}
    for what, (runs, seconds) in measured.items():
        estimate = sum(planning.run_seconds(r, planning.FIGURES) for r in runs)
        assert 0.85 * seconds < estimate < 1.15 * seconds, (what, estimate, seconds)


def test_the_plan_says_whether_its_figures_are_measured(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(planning, "RESULTS", tmp_path / "benchmarks" / "results")
    figures, said = planning.default_figures("h100")
    assert figures is None and said.startswith("figures: ESTIMATED")
    planning.main([])
    assert "ESTIMATED" in capsys.readouterr().out
    planning.RESULTS.mkdir(parents=True)
    measured = {"source": "measured", "step_s": {planning.step_key("ViT-Micro/4", 1024): 0.5}}
    (planning.RESULTS / "gpu_step_times_h100.json").write_text(json.dumps({"figures": measured}))
    figures, said = planning.default_figures("h100")
    assert figures == measured and "measured" in said and "gpu_step_times_h100.json" in said
    assert planning.plan(figures)["04_training_a_vit"] > planning.plan()["04_training_a_vit"]  # 0.5 s per step


def test_the_plan_follows_the_recipes(monkeypatch):
    before = planning.plan()["04_training_a_vit"]
    full = planning.recipes.RECIPES["cifar10-full"]
    monkeypatch.setitem(planning.recipes.RECIPES, "cifar10-full", replace(full, epochs=2 * full.epochs))
    assert planning.plan()["04_training_a_vit"] > 1.3 * before


def test_the_recipes_rand_augment_is_planned_on_the_gpu_or_in_loader_workers():
    for loader in (False, True):
        runs = [r for nb in ("04_training_a_vit", "06_hybrid", "08_inspecting_vit")
                for r in planning.notebook_runs(loader=loader)[nb]]
        augmented = [r for r in runs if r.loader or r.gpu_rand_augment]
        assert augmented and all(r.loader == loader and r.gpu_rand_augment != loader for r in augmented)
    # on the GPU each step pays one batch's augmentation, and no loader: 04 is planned faster than with workers
    run = planning.Run("x", "ViT-Micro/4", "cifar10", 50000, 1, 1024, gpu_rand_augment=True)
    plain = replace(run, gpu_rand_augment=False)
    extra = planning.run_seconds(run, planning.FIGURES) - planning.run_seconds(plain, planning.FIGURES)
    assert extra == pytest.approx(49 * planning.rand_augment_seconds("cifar10", 1024, planning.FIGURES))
    measured = {**planning.FIGURES, "rand_augment_s": {planning.rand_augment_key("cifar10", 1024): 0.1}}
    assert planning.rand_augment_seconds("cifar10", 1024, measured) == 0.1  # a measured figure replaces it
    assert planning.plan()["04_training_a_vit"] < planning.plan(loader=True)["04_training_a_vit"]


def test_the_output_labels_the_batched_augmentation_and_the_loader_case(capsys):
    planning.main([])
    assert "RandAugment: batched on the GPU (the recipes), ESTIMATED" in capsys.readouterr().out
    planning.main(["--loader"])
    out = capsys.readouterr().out
    assert "per image in 14 DataLoader workers" in out and "measured: 04 took 4.8 min" in out


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
    assert planning.rand_augment_key("cifar10", 1024) in figures["rand_augment_s"]
    assert set(planning.plan(figures)) == set(planning.plan())
