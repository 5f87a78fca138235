"""Notebook 05's scaling sweep, trained once and committed as a record (`minivit.sweep`, issue 39).

    python benchmarks/scaling_sweep.py --part 1/2 &     # the runs, in two processes of one thread each
    python benchmarks/scaling_sweep.py --part 2/2
    python benchmarks/scaling_sweep.py --merge          # the record: minivit/records/sweep_cifar10.json

Each run trains one model of the sweep (`minivit.sweep.MODELS`, or the 8 x 8-patch ViT) with one seed at one level
(`minivit.sweep.level_recipe`: the model at ViT-Nano/4's training FLOPs of `level` 16-px epochs of notebook 04's
recipe), or on a subset of 500 images per class seen as many times (the data study), and tests it on all 10,000
test images. Budgets are FLOPs, not seconds, so a loaded machine changes a run's time, not its result; the threads
(default 1) and the machine are recorded, since floating point differs between them. Each finished run is written
at once to data/sweep-runs/ (its own JSON; a run already there is skipped), so a stopped sweep resumes; --merge
gathers them into the record the notebook reads, with the machine, torch and the copy of the data.

One seed for every model at every level (12 runs) and for the 8 x 8-patch ViT at level 6; seeds 1 and 2 for the
runs a notebook verifies or compares across seeds: ViT-Nano/4, ResNet-8 and the 8 x 8-patch ViT at level 6, and the
data study's runs. About 50 minutes of one core per 25 runs on the course's 2-core machine (the `seconds` of each).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minivit import sweep  # noqa: E402
from minivit.data import data_root, load_dataset, stratified_subset  # noqa: E402
from minivit.flops import flops_by_epoch, training_flops_per_image  # noqa: E402
from minivit.train import predict  # noqa: E402
from minivit.zoo.training import machine, pack_right  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import save_result  # noqa: E402

DATA_STUDY, SEEDS = sweep.DATA_PER_CLASS, sweep.SEEDS


def runs() -> list[tuple[str, int, int, int | None]]:
    """(model, level, seed, n_per_class) of every run, the most needed first."""
    out = [(m, level, 0, None) for level in sorted(sweep.LEVELS, reverse=True) for m in sweep.MODELS]
    out.append((sweep.PATCH_MODEL, 6, 0, None))
    out += [(m, 6, 0, DATA_STUDY) for m in (sweep.BASE_MODEL, "ResNet-8")]
    for seed in SEEDS[1:]:
        out += [(m, 6, seed, None) for m in (sweep.BASE_MODEL, "ResNet-8", sweep.PATCH_MODEL)]
        out += [(m, 6, seed, DATA_STUDY) for m in (sweep.BASE_MODEL, "ResNet-8")]
    return out


def run_file(folder: Path, model: str, level: int, seed: int, n_per_class: int | None) -> Path:
    tag = f"{model.replace(' ', '_')}-level{level}-seed{seed}" + (f"-n{n_per_class}" if n_per_class else "")
    return folder / f"{tag}.json"


def train_one(model_name: str, level: int, seed: int, n_per_class: int | None, train_full, test, val) -> dict:
    recipe = sweep.level_recipe(level, model_name, train_full, n_per_class)
    train = recipe.training_set(train_full)
    torch.manual_seed(seed)  # the initial weights
    model = sweep.build(model_name)
    t0 = time.perf_counter()
    history = recipe.fit(model, train, val, seed=seed, progress=False)  # seed: the order of the batches
    wall = time.perf_counter() - t0
    per_image = lambda s: training_flops_per_image(lambda: sweep.build(model_name), s)  # noqa: E731
    flops = flops_by_epoch(recipe, history, train, per_image)[-1]
    right = predict(model, test).argmax(-1) == test.labels  # (10000,) at 32 px, where the run ended
    seen = stratified_subset(train, min(500, len(train) // len(train.classes)))  # its own training images, clean
    train_acc = (predict(model, seen).argmax(-1) == seen.labels).float().mean().item()
    return dict(model=model_name, level=level, seed=seed, n_per_class=n_per_class, recipe=recipe.to_dict(),
                checkpoint_name=recipe.run_name(sweep.checkpoint_model_name(model_name)),
                params=sum(p.numel() for p in model.parameters()), train_images=len(train),
                epochs=len(history), train_flops=int(flops), seconds=round(sum(history.epoch_time), 1),
                wall_s=round(wall, 1), val_acc=history.final["val_acc"], clean_train_acc=round(train_acc, 4),
                clean_train_images=len(seen), test_acc=right.float().mean().item(), test_images=len(test),
                test_right=pack_right(right))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", default="1/1", help="i/n: this process trains runs i, i+n, ... (default 1/1: all)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    p.add_argument("--folder", type=Path, default=None, help="where each run's JSON goes (default data/sweep-runs)")
    p.add_argument("--merge", action="store_true", help="gather the runs into the record (minivit/records/)")
    p.add_argument("--out", type=Path, default=sweep.RECORD, help="the record's path (with --merge)")
    a = p.parse_args(argv)
    folder = a.folder or data_root() / "sweep-runs"
    folder.mkdir(parents=True, exist_ok=True)
    if a.merge:
        found = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
        order = {r: i for i, r in enumerate(runs())}
        found.sort(key=lambda r: order.get((r["model"], r["level"], r["seed"], r["n_per_class"]), len(order)))
        missing = [r for r in runs() if not run_file(folder, *r).exists()]
        if missing:
            sys.exit(f"{len(missing)} run(s) not finished, e.g. {missing[0]}: run the parts first")
        meta, copies = found[0]["meta"], found[0]["data_copies"]
        for r in found:
            del r["meta"], r["data_copies"]
        out = dict(what="notebook 05's scaling sweep: each run's test accuracy and answers on all 10,000 CIFAR-10 "
                        "test images (benchmarks/scaling_sweep.py, minivit.sweep)",
                   levels=list(sweep.LEVELS), base_model=sweep.BASE_MODEL, base_recipe=sweep.BASE_RECIPE,
                   test_images=found[0]["test_images"], date=str(date.today()), **meta, data_copies=copies, runs=found)
        save_result(a.out.stem, out, a.out.parent)
        print(f"{len(found)} runs")
        return
    i, n = (int(x) for x in a.part.split("/"))
    if not 1 <= i <= n:
        sys.exit(f"--part must be i/n with 1 <= i <= n, got {a.part}")
    torch.set_num_threads(a.threads)
    train_full, test = load_dataset("cifar10", "train"), load_dataset("cifar10", "test")
    val = stratified_subset(test, 200)  # the 2,000 test images notebook 04 watches (as its runs did)
    meta = machine()  # the CPU, its cores, the threads, torch: floating point differs between them
    for k, job in enumerate(runs()):
        path = run_file(folder, *job)
        if k % n != i - 1 or path.exists():
            continue
        out = train_one(*job, train_full, test, val)
        out["meta"] = meta
        save_result(path.stem, out, folder)  # with the copy of the data it read (data_copies)
        print(f"{job}: test {out['test_acc']:.4f}, {out['train_flops']:.2e} FLOPs, {out['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
