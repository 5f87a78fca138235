"""The full profile on one GPU, notebook by notebook: estimated minutes from step times and loader rates.

    python benchmarks/full_profile_plan.py                                  # the table, from the figures in use
    python benchmarks/full_profile_plan.py --figures benchmarks/results/gpu_step_times_h100.json

On a GPU the course's models are far too small to keep it busy: a training step costs a fixed launch and
dispatch overhead plus its FLOPs at the GPU's rate, and per-image RandAugment runs on the CPU in DataLoader
workers. So each training run costs, per epoch,

    max(steps x t_step, images / loader rate)   (+ its evaluations)

and a notebook the sum of its runs plus a fixed start (kernel, imports, data). `RUNS` lists every training run
the notebooks make in the full profile (their sizes read from `minivit.recipes` where they use a recipe);
`FIGURES` holds the per-step overhead of each model family, the GPU's FLOP rate, and the loader's images/s per
worker. Until `benchmarks/gpu_step_times.py` measures them on a GPU, the figures are the audit's calibrated
estimates: the overheads reproduce notebook 03's one measured full-profile run on an H100 (276 s), the FLOP rate
is ViT-Ti/16's measured training throughput (7,796 images/s x 7.46 GFLOPs), the loader rates were measured per
CPU core here. `tests/test_full_profile_plan.py` keeps the plan within the budget: every notebook <= 4 minutes,
all ten <= 20 minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402

from minivit import recipes  # noqa: E402

BUDGET_EACH_S, BUDGET_ALL_S = 240.0, 1200.0  # the course's full-profile budget on one H100
GPU_CORES = 16  # CPU cores of the course's GPU machine (one H100): DataLoader workers are capped by them

# Estimates until measured on a GPU (see the module docstring); a --figures JSON replaces any of them.
FIGURES = {
    "source": "estimates: overheads calibrated on notebook 03's measured 276 s on one H100; FLOP rate from "
              "ViT-Ti/16's measured training throughput; loader rates measured per CPU core on the course machine",
    "flops_per_s": 58.2e12,  # training FLOPs per second the GPU sustains on these models (bf16)
    "overhead_s": {"vit-nano": 0.015, "vit-micro": 0.020, "cnn": 0.025, "linear": 0.005},  # per step
    "loader_images_per_s_per_worker": {"cifar10": 2200.0, "imagenette": 1000.0},  # RandAugment + crop + flip
    "eval_images_per_s": 50000.0,  # evaluation / prediction passes
    "start_s": 15.0,  # kernel start, imports, CUDA initialisation
    "decode_s": {"cifar10": 18.0, "fashion-mnist": 6.0, "imagenette": 16.0},  # first load of both splits
}


@lru_cache(maxsize=None)
def train_flops(model: str) -> int:
    """Training FLOPs (forward + backward) per image of a course model, counted on the meta device."""
    from minivit import CifarResNet, HybridEmbed, ViT, count_flops, resnet_s4_backbone
    from minivit.config import get_preset
    with torch.device("meta"):
        if model.startswith("R-S4+"):
            c = get_preset(model.removeprefix("R-S4+"))
            net = ViT(c, patch_embed=HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3, dim=c.dim))
            shape = (1, 3, 32, 32)
        elif model.startswith("ResNet"):
            net, shape = CifarResNet.from_preset(model), (1, 3, 32, 32)
        elif model == "linear-28":
            return 2 * 3 * 28 * 28 * 10  # a linear classifier on 784 pixels: forward + 2 backward matmuls
        else:
            model, _, depth = model.partition(":d")  # e.g. "ViT-Micro/4:d7" (depth 7)
            name, _, size = model.partition("@")  # e.g. "ViT-Micro/4@28x1" (28 px, 1 channel)
            side, _, channels = (size or "32").partition("x")
            changes = {"depth": int(depth)} if depth else {}
            net = ViT.from_preset(name, image_size=int(side), in_channels=int(channels or 3), **changes)
            shape = (1, int(channels or 3), int(side), int(side))
    return count_flops(net, shape, backward=True)


def family(model: str) -> str:
    if model.startswith(("ResNet", "R-S4+")):
        return "cnn"
    if model.startswith("linear"):
        return "linear"
    return "vit-micro" if "Micro" in model else "vit-nano"


@dataclass(frozen=True)
class Run:
    """One training run of a notebook's full profile."""

    what: str  # what it trains, in words
    model: str  # a key of train_flops(): a preset, "ViT-Micro/4@28x1" (28 px, grey), "ViT-Micro/4:d7" (depth 7),
    #             "R-S4+ViT-Micro/4", ...
    dataset: str  # "cifar10", "fashion-mnist" or "imagenette" (the loader's rate)
    images: int  # training images per epoch
    epochs: int
    batch_size: int
    loader: bool = False  # per-image RandAugment in DataLoader workers (else on-device augmentation)
    workers: int = 0  # the recipe's workers (capped by the GPU machine's cores)
    eval_images: int = 0  # images evaluated after every epoch (validation)
    extra_eval_images: int = 0  # images predicted once after training (test set, train-test gap, ...)
    repeat: int = 1  # identical runs (seeds, arms)


def from_recipe(what: str, model: str, recipe: recipes.Recipe, images: int, *, eval_images: int = 0,
                extra_eval_images: int = 0, repeat: int = 1, **changes) -> Run:
    r = recipe.with_(**changes) if changes else recipe
    return Run(what, model, r.dataset, images, r.epochs, r.batch_size, loader=r.rand_augment is not None,
               workers=r.workers, eval_images=eval_images, extra_eval_images=extra_eval_images, repeat=repeat)


def notebook_runs() -> dict[str, list[Run]]:
    """Every full-profile training run, notebook by notebook (kept in step with the notebooks' profile.pick)."""
    c10 = recipes.get("cifar10", "full")
    nette, nette64, mosaic = (recipes.get(n, "full") for n in ("imagenette", "imagenette64", "mosaic64"))
    return {
        "00_start_here": [],
        "01_patches": [],
        "02_class_token_and_positions": [],
        "03_transformer_encoder": [
            Run("ViT-Micro/4 on Fashion-MNIST", "ViT-Micro/4@28x1", "fashion-mnist", 59000, 30, 1024,
                eval_images=1000, extra_eval_images=10000),
            Run("linear classifier", "linear-28", "fashion-mnist", 59000, 10, 1024, eval_images=1000,
                extra_eval_images=10000)],
        "04_training_a_vit": [
            from_recipe("ViT-Micro/4", "ViT-Micro/4", c10, 50000, eval_images=2000, extra_eval_images=60000),
            from_recipe("ResNet-20-w2", "ResNet-20-w2", c10, 50000, eval_images=2000, extra_eval_images=60000),
            from_recipe("ResNet-20-w2 at the ViT's training FLOPs (30 / 2.8 epochs)", "ResNet-20-w2", c10, 50000,
                        epochs=11, eval_images=2000, extra_eval_images=10000),
            from_recipe("ablations (baseline, 8x8 patches)", "ViT-Micro/4", c10, 10000, epochs=20, batch_size=500,
                        extra_eval_images=12000, repeat=2),
            from_recipe("ablation without augmentation", "ViT-Micro/4", c10, 10000, epochs=20, batch_size=500,
                        augment="none", rand_augment=None, mixup=False, workers=0, extra_eval_images=12000)],
        "05_scaling": [
            # the compute sweep: 2 and 10 epochs of each model, on-device crop + flip; the four ViT variants
            # (D32 L2 P8, D64 L4 P8, D64 L2 P4, ViT-Nano/4) are all sized as the largest, ViT-Nano/4
            from_recipe("compute sweep: 4 ViT variants, 2 + 10 epochs", "ViT-Nano/4", c10, 50000, epochs=12,
                        rand_augment=None, mixup=False, workers=0, eval_images=2000, repeat=4),
            from_recipe("compute sweep: ResNet-14, 2 + 10 epochs", "ResNet-14", c10, 50000, epochs=12,
                        rand_augment=None, mixup=False, workers=0, eval_images=2000, extra_eval_images=20000),
            # data scaling: every subset gets 500 steps of 500 images (100, 25 and 5 epochs), the full recipe
            *[from_recipe(f"data scaling, {n} per class", m, c10, 10 * n, epochs=500 * 500 // (10 * n),
                          batch_size=500, extra_eval_images=2000)
              for n in (250, 1000, 5000) for m in ("ViT-Micro/4", "ResNet-20-w2")]],
        "06_hybrid": [  # the ViT and the CNN are 04's (loaded from its checkpoints: 04 runs first)
            from_recipe("hybrid R-S4+ViT-Micro/4", "R-S4+ViT-Micro/4", c10, 50000, eval_images=200,
                        extra_eval_images=40000),
            from_recipe("a deeper ViT-Micro/4 of the hybrid's FLOPs (depth 7)", "ViT-Micro/4:d7", c10, 50000,
                        eval_images=200)],
        "07_finetuning_at_higher_resolution": [
            from_recipe("ViT-Nano/16 at 64 px", "ViT-Nano/16@64", nette64, 9469, eval_images=3925),
            from_recipe("mosaic model at 64 px", "ViT-Nano/16@64", mosaic, 9469, eval_images=3925,
                        extra_eval_images=4 * 3925),
            Run("mosaic fine-tuning at 128 px", "ViT-Nano/16@128", "imagenette", 9469, 10, 512, repeat=2),
            # Imagenette: 3 seeds x 6 arms; the 4x-steps arm at 64 px trains 40 epochs
            Run("fine-tuning arms at 128 px (3 seeds)", "ViT-Nano/16@128", "imagenette", 9469, 10, 512, repeat=6),
            Run("fine-tuning arms at 64 px (3 seeds)", "ViT-Nano/16@64", "imagenette", 9469, 10, 512, repeat=9),
            Run("the 4x-steps arm at 64 px (3 seeds)", "ViT-Nano/16@64", "imagenette", 9469, 40, 512, repeat=3),
            Run("from scratch at 128 px, the fine-tuning's FLOPs", "ViT-Nano/16@128", "imagenette", 9469, 34, 512,
                extra_eval_images=30 * 3925)],
        "08_inspecting_vit": [
            # the mosaic model is 07's (loaded from its checkpoint: 07 runs first); after training, attention
            # maps of 200 images x 2 models, a masking test of 2,000 images x 4 variants, maps of 3,925 mosaics
            # x 2 models and a masking test of 3,000 mosaics x 6 variants
            from_recipe("ViT-Nano/16 at 128 px", "ViT-Nano/16@128", nette, 9469, eval_images=500,
                        extra_eval_images=2 * 200 + 4 * 2000 + 2 * 3925 + 6 * 3000)],
        "09_masked_patch_prediction": [
            # the few-shot probe after every epoch (and before): features of 2,500 + 2,000 images, 31 times
            Run("MPP pre-training", "ViT-Micro/4", "cifar10", 50000, 30, 1024, eval_images=500,
                extra_eval_images=31 * (2500 + 2000)),
            Run("fine-tuning, 2 arms x 5 seeds", "ViT-Micro/4", "cifar10", 2500, 40, 256,
                extra_eval_images=2000, repeat=10)],
    }


# The data sets each notebook loads (their first decode is part of its time on a fresh machine).
NOTEBOOK_DATA = {"00_start_here": ("cifar10", "fashion-mnist", "imagenette"), "01_patches": (),
                 "02_class_token_and_positions": ("cifar10",)}


def step_key(model: str, batch_size: int) -> str:
    """The key of a measured step time in a figures JSON, e.g. "ViT-Micro/4 b1024"."""
    return f"{model} b{batch_size}"


def step_seconds(model: str, batch_size: int, figures: dict) -> float:
    """Seconds per training step: measured when the figures have it, else overhead + FLOPs / the GPU's rate."""
    measured = figures.get("step_s", {}).get(step_key(model, batch_size))
    if measured is not None:
        return measured
    return figures["overhead_s"][family(model)] + batch_size * train_flops(model) / figures["flops_per_s"]


def run_seconds(run: Run, figures: dict) -> float:
    """Estimated seconds of one run (all its repeats)."""
    steps = -(-run.images // run.batch_size)
    t_step = step_seconds(run.model, run.batch_size, figures)
    epoch = steps * t_step
    if run.loader:
        workers = max(1, min(run.workers, GPU_CORES - 2))
        measured = figures.get("loader_images_per_s", {}).get(f"{run.dataset} w{workers}")
        rate = measured or workers * figures["loader_images_per_s_per_worker"][run.dataset]
        epoch = max(epoch, run.images / rate)
    evals = (run.epochs * run.eval_images + run.extra_eval_images) / figures["eval_images_per_s"]
    return run.repeat * (run.epochs * epoch + evals)


def plan(figures: dict | None = None) -> dict[str, float]:
    """Estimated full-profile seconds per notebook, on one GPU of the given figures (default: `FIGURES`)."""
    f = {**FIGURES, **(figures or {})}
    out = {}
    for nb, runs in notebook_runs().items():
        datasets = set(NOTEBOOK_DATA.get(nb, ())) | {r.dataset for r in runs}
        start = f["start_s"] + sum(f["decode_s"][d] for d in datasets)
        out[nb] = start + sum(run_seconds(r, f) for r in runs)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--figures", type=Path, help="a JSON of measured figures (benchmarks/gpu_step_times.py)")
    a = p.parse_args(argv)
    figures = json.loads(a.figures.read_text())["figures"] if a.figures else None
    seconds = plan(figures)
    print(f"figures: {(figures or FIGURES).get('source', a.figures)}")
    print(f"{'notebook':40} {'est. min':>8}   runs")
    for nb, s in seconds.items():
        runs = "; ".join(f"{r.what} ({r.repeat}x {r.epochs} ep)" for r in notebook_runs()[nb]) or "no training"
        print(f"{nb:40} {s / 60:>8.1f}   {runs}")
    total = sum(seconds.values())
    print(f"{'all ten':40} {total / 60:>8.1f}   budget: each <= {BUDGET_EACH_S / 60:.0f} min, all <= "
          f"{BUDGET_ALL_S / 60:.0f} min")
    return 0 if max(seconds.values()) <= BUDGET_EACH_S and total <= BUDGET_ALL_S else 1


if __name__ == "__main__":
    sys.exit(main())
