"""The full profile on one GPU, notebook by notebook: estimated minutes from step times and augmentation costs.

    python benchmarks/full_profile_plan.py                                  # the table, from the figures in use
    python benchmarks/full_profile_plan.py --figures benchmarks/results/gpu_step_times_h100.json

On a GPU the course's models are far too small to keep it busy: a training step costs a fixed launch and
dispatch overhead plus its FLOPs at the GPU's rate. The full recipes (cifar10-full, imagenette-full) run
RandAugment batched on the GPU (`minivit.augment.BatchRandAugment`, no loader workers): each step then also pays
one batch's augmentation (`rand_augment_batch_s`, ESTIMATED until measured on a GPU: the CPU-side dispatch of its
grouped calls, measured on the development CPU, plus its pixel work at an H100's bandwidth). Until 2026-11-27
they ran it per image on the CPU in 14 DataLoader workers, which set the pace of 04, 06 and 08; `--loader`
plans that pipeline (`recipe.with_(workers=14)`, still available), to compare with the runs measured then.
`run_seconds` models a loader-fed run's structure: per epoch the steps or the workers' rounds of batches,
whichever is longer, plus the refill (persistent workers start every epoch empty, so its first step waits one
batch's build), the workers' start-up once per run, and CPU contention (14 workers beside the main process slow
its kernel dispatch, so a loader-fed step has a larger overhead than one with the data on the GPU). A notebook is
the sum of its runs plus a fixed start and its data: as `make gpu-check` runs them, in number order on one machine,
a data set is decoded by the first notebook that loads it and read from its cache after that; the second column is
each notebook alone on a fresh machine (its data decoded; 06 without 04's checkpoints, so it trains them again).

`notebook_runs` lists every training run the notebooks make in the full profile (their sizes read from
`minivit.recipes` where they use a recipe, the rest in `SIZES`; `--proposed` plans the smaller `PROPOSED` set,
an estimate whose claims no run has checked); `FIGURES` holds the per-step overheads, the GPU's FLOP rate and
the loader's images/s per worker. Until `benchmarks/gpu_step_times.py` measures step times on a GPU, every figure
is an estimate: calibrated on the full-profile runs of 2026-11-27 on one H100 (04's ViT 67 s and CNN 49 s, 06's
hybrid and deeper ViT 160 s; 05's data sweep, 124 s measured, is reproduced within 1%), the FLOP rate from
ViT-Ti/16's measured training throughput (7,796 images/s x 7.46 GFLOPs). The table gives a range: those figures,
and a pessimistic host (`PESSIMISTIC`). When `benchmarks/results/gpu_step_times_<gpu>.json` is there the plan uses
it and says so.
`tests/test_full_profile_plan.py` keeps even the upper estimate within the budget: every notebook <= 4 minutes, all
ten <= 20 minutes. The course's goal is tighter (each <= 2, all ten <= 9 minutes: `GOAL_EACH_S`, `GOAL_ALL_S`); the
plan says it is not met at the notebooks' sizes.
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

BUDGET_EACH_S, BUDGET_ALL_S = 240.0, 1200.0  # the full profile's budget on one H100 that tests hold it to
GOAL_EACH_S, GOAL_ALL_S = 120.0, 540.0  # the course's goal (issue 33): one run of all ten in 9 minutes on one H100
GPU_CORES = 16  # CPU cores of the course's GPU machine (one H100): DataLoader workers are capped by them

# Estimates until measured on a GPU (see the module docstring); a figures JSON replaces any of them.
FIGURES = {
    "source": "estimated: step overheads and the loader's rate calibrated on the full-profile runs of 04, 05 and 06 "
              "on one H100 (2026-11-27); FLOP rate from ViT-Ti/16's measured training throughput (2026-11-22); "
              "batched RandAugment on the GPU estimated from the development CPU (not run on a GPU yet); no step "
              "time measured (benchmarks/gpu_step_times.py not run yet)",
    "flops_per_s": 58.2e12,  # training FLOPs per second the GPU sustains on these models (bf16)
    # seconds per step beyond the FLOPs, data on the GPU and no loader workers (the main process alone): 05's
    # on-device compute sweep (2,940 steps of ViT-Nano/4 variants and ResNet-14) took about 24 s of its 166 s
    "overhead_s": {"vit-nano": 0.007, "vit-micro": 0.010, "hybrid": 0.015, "cnn": 0.007, "linear": 0.003},
    # the same while 14 loader workers share the 16 vCPUs with the main process (CPU contention slows its kernel
    # dispatch): 04's ViT-Micro/4 (67 s for 30 epochs), 06's hybrid beside its deeper ViT (160 s for 30 + 30)
    "loaded_overhead_s": {"vit-nano": 0.020, "vit-micro": 0.028, "hybrid": 0.043, "cnn": 0.007, "linear": 0.003},
    # RandAugment + crop + flip images/s of one worker among 14 on the GPU machine: 04's CNN, bound by its loader,
    # took 49 s for 30 epochs (2,200 on one core of the 2-core development CPU; Imagenette scaled by the same 1.22)
    "loader_images_per_s_per_worker": {"cifar10": 2680.0, "imagenette": 1220.0},
    "worker_start_s": 1.0,  # per fit with loader workers: forking them (not measured)
    # BatchRandAugment on the GPU, seconds per batch: a fixed part, its ~50 grouped calls' dispatch (2 rounds of up
    # to 23 (operation, sign) groups), measured on one core of the development CPU at 4-8 px, where the pixels cost
    # nothing: 10-15 ms a batch of 256, 13-24 ms of 1,024 (2026-11-27, several runs beside other work), taken as
    # the GPU's (its launches and the host syncs of the grouping are assumed to cost about what the CPU kernels'
    # dispatch does: an estimate); plus the pixels at an H100's ~3 TB/s, about 50 passes over the batch as float32
    # (an estimate, an upper bound)
    "rand_augment_batch_s": 0.016,
    "rand_augment_image_s": {"cifar10": 50 * 3 * 32 * 32 * 4 / 3e12, "imagenette": 50 * 3 * 128 * 128 * 4 / 3e12},
    "eval_images_per_s": 50000.0,  # evaluation / prediction passes
    "start_s": 15.0,  # kernel start, imports, CUDA initialisation
    "decode_s": {"cifar10": 18.0, "fashion-mnist": 6.0, "imagenette": 16.0},  # first load of both splits
    "cached_load_s": 1.0,  # a data set read from the cache an earlier notebook wrote ("about a second", minivit.data)
}
# The upper end of the range: a host whose cores build RandAugment batches no faster than the development CPU's,
# 30% more per-step overhead (a busier host; batched RandAugment's dispatch included), slower worker start-up.
# Not in the range: batched RandAugment on the GPU at twice its estimate would put 04 at 3.9 - 4.7 min and 05 at
# 3.3 - 4.0 (over the budget at the upper end); only a GPU run (benchmarks/gpu_step_times.py) can tell.
PESSIMISTIC = {"loader_images_per_s_per_worker": {"cifar10": 2200.0, "imagenette": 1000.0}, "overhead_scale": 1.3,
               "worker_start_s": 2.0}
# 04 in the full profile as measured on one H100 with 16 host cores (2026-11-27), RandAugment per image in 14
# workers (about 14,000 images/s from them): the "before" of the batched RandAugment, for `--loader`.
MEASURED_04_LOADER_S = 286.0
RESULTS = Path(__file__).resolve().parent / "results"


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
    if model.startswith("R-S4+"):
        return "hybrid"
    if model.startswith("ResNet"):
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
    gpu_rand_augment: bool = False  # RandAugment batched on the GPU (BatchRandAugment), a cost per step
    eval_images: int = 0  # images evaluated after every epoch (validation)
    extra_eval_images: int = 0  # images predicted once after training (test set, train-test gap, ...)
    repeat: int = 1  # identical runs (seeds, arms)


def from_recipe(what: str, model: str, recipe: recipes.Recipe, images: int, *, eval_images: int = 0,
                extra_eval_images: int = 0, repeat: int = 1, **changes) -> Run:
    r = recipe.with_(**changes) if changes else recipe
    augments = r.rand_augment is not None
    return Run(what, model, r.dataset, images, r.epochs, r.batch_size, loader=augments and r.workers > 0,
               workers=r.workers, gpu_rand_augment=augments and not r.workers, eval_images=eval_images,
               extra_eval_images=extra_eval_images, repeat=repeat)


# The sizes of the full profile's runs that the notebooks set themselves (their `profile.pick(full=...)`; the rest
# comes from minivit.recipes). SIZES is what the notebooks run now; PROPOSED is a smaller set, ESTIMATED only: it is
# not what the notebooks run, and none of the notebooks' claims has been checked at its sizes (`--proposed`).
SIZES = {
    "c10_epochs": None,  # the cifar10-full recipe's epochs (04's ViT and CNN, 06's hybrid); None: the recipe's
    "f03_epochs": 30, "linear03_epochs": 10,  # 03: the ViT on Fashion-MNIST, the linear classifier
    "ablation": (1000, 20, 1000),  # 04's ablations: images per class, epochs, batch (3 arms x 3 seeds)
    "ablation_8x8": True,  # 04: the 8x8-patch arm (a figure and a reported z, no claim)
    "live64_epochs": 100,  # 07's live ViT-Nano/16 at 64 px (imagenette64-full)
    "four_x_arm07": True, "scratch07": True,  # 07: the 4x-steps arm and the run from scratch (reported, no claim)
    "nette_epochs": None,  # 08: the imagenette-full recipe's epochs; None: the recipe's
    "probes09": 31, "ft09_epochs": 40,  # 09: few-shot probes during MPP (its claim: the first, the last); fine-tuning
}
PROPOSED = {**SIZES, "c10_epochs": 15, "f03_epochs": 15, "linear03_epochs": 5, "ablation": (500, 20, 1000),
            "live64_epochs": 30, "four_x_arm07": False, "nette_epochs": 30, "probes09": 7, "ft09_epochs": 25}


def notebook_runs(cold: bool = False, loader: bool = False, sizes: dict | None = None) -> dict[str, list[Run]]:
    """Every full-profile training run, notebook by notebook (kept in step with the notebooks' profile.pick).
    `cold`: a fresh machine, without 04's checkpoints for 06 (it trains them again). `loader`: the RandAugment
    recipes with per-image RandAugment in `FULL_LOADER_WORKERS` DataLoader workers (the recipes until 2026-11-27).
    `sizes`: `SIZES` (default) or another set such as `PROPOSED`."""
    from minivit.profile import FULL_LOADER_WORKERS
    z = {**SIZES, **(sizes or {})}
    workers = {"workers": FULL_LOADER_WORKERS} if loader else {}
    c10 = recipes.get("cifar10", "full").with_(**workers)
    c10 = c10.with_(epochs=z["c10_epochs"]) if z["c10_epochs"] else c10
    nette, nette64 = recipes.get("imagenette", "full").with_(**workers), recipes.get("imagenette64", "full")
    nette = nette.with_(epochs=z["nette_epochs"]) if z["nette_epochs"] else nette
    # 04 predicts 10,000 training and the 10,000 test images with each model (its clean metrics)
    vit04 = from_recipe("ViT-Micro/4", "ViT-Micro/4", c10, 50000, eval_images=2000, extra_eval_images=20000)
    cnn04 = from_recipe("ResNet-20-w2 at the ViT's training FLOPs", "ResNet-20-w2", c10, 50000,
                        epochs=max(1, round(c10.epochs * train_flops("ViT-Micro/4") / train_flops("ResNet-20-w2"))),
                        eval_images=2000, extra_eval_images=20000)
    hybrid06 = max(1, round(c10.epochs * train_flops("ViT-Micro/4") / train_flops("R-S4+ViT-Micro/4")))  # 06's hybrid
    n_abl, ep_abl, b_abl = z["ablation"]
    plain = dict(rand_augment=None, mixup=False, workers=0)  # on-device crop + flip only
    return {
        "00_start_here": [],
        "01_patches": [],
        "02_class_token_and_positions": [],
        "03_transformer_encoder": [
            Run("ViT-Micro/4 on Fashion-MNIST", "ViT-Micro/4@28x1", "fashion-mnist", 59000, z["f03_epochs"], 1024,
                eval_images=1000, extra_eval_images=10000),
            Run("linear classifier", "linear-28", "fashion-mnist", 59000, z["linear03_epochs"], 1024,
                eval_images=1000, extra_eval_images=10000)],
        "04_training_a_vit": [
            vit04, cnn04,  # the CNN at the ViT's training FLOPs (04's one CNN run since 2026-12-02)
            # 3 seeds of each arm; each predicts its training images and 2,000 validation images once
            from_recipe(f"ablations (baseline{', 8x8 patches' if z['ablation_8x8'] else ''}; 3 seeds)",
                        "ViT-Micro/4", c10, 10 * n_abl, epochs=ep_abl, batch_size=b_abl,
                        extra_eval_images=10 * n_abl + 2000, repeat=3 * (1 + z["ablation_8x8"])),
            from_recipe("ablation without augmentation (3 seeds)", "ViT-Micro/4", c10, 10 * n_abl, epochs=ep_abl,
                        batch_size=b_abl, augment="none", **plain, extra_eval_images=10 * n_abl + 2000, repeat=3)],
        "05_scaling": [
            # the sweep comes from its committed record (minivit.sweep) in both profiles; the full profile trains the
            # record's three checked runs on the GPU with their quick recipe: 6 epochs of 50,000 images at 16 px, then
            # 20,000 at 32 px, batches of 256 (ResNet-8: 5 epochs, then 13,510; the 8x8-patch ViT sized as ViT-Nano/4)
            Run("ViT-Nano/4 and the 8x8-patch ViT, 16 px", "ViT-Nano/4@16", "cifar10", 50000, 6, 256,
                eval_images=2000, repeat=2),
            Run("ViT-Nano/4 and the 8x8-patch ViT, 32 px", "ViT-Nano/4", "cifar10", 20000, 1, 256, eval_images=2000,
                extra_eval_images=10000, repeat=2),
            Run("ResNet-8 at ViT-Nano/4's FLOPs (sized at 32 px)", "ResNet-8", "cifar10", 50000, 5, 256,
                eval_images=2000),
            Run("ResNet-8, 32 px", "ResNet-8", "cifar10", 13510, 1, 256, eval_images=2000, extra_eval_images=10000)],
        "06_hybrid": [  # the ViT and the CNN are 04's (loaded from their checkpoints when 04 ran on this machine);
            # the hybrid trains to the ViT's training FLOPs (Recipe.at_flops), nearest epoch
            *([vit04, cnn04] if cold else []),
            from_recipe(f"hybrid R-S4+ViT-Micro/4 at the ViT's training FLOPs ({hybrid06} epochs)", "R-S4+ViT-Micro/4",
                        c10, 50000, epochs=hybrid06, eval_images=2000, extra_eval_images=10000)],
        "07_finetuning_at_higher_resolution": [
            # the live photograph model (validated on 500 images); sections 2-6 use the zoo's 64-px models
            from_recipe("ViT-Nano/16 at 64 px", "ViT-Nano/16@64", nette64, 9469, epochs=z["live64_epochs"],
                        eval_images=500),
            Run("mosaic fine-tuning at 128 px", "ViT-Nano/16@128", "imagenette", 9469, 10, 512, repeat=2),
            # Imagenette: 3 seeds x 6 arms; the 4x-steps arm at 64 px trains 40 epochs
            Run("fine-tuning arms at 128 px (3 seeds)", "ViT-Nano/16@128", "imagenette", 9469, 10, 512, repeat=6),
            Run("fine-tuning arms at 64 px (3 seeds)", "ViT-Nano/16@64", "imagenette", 9469, 10, 512, repeat=9),
            *([Run("the 4x-steps arm at 64 px (3 seeds)", "ViT-Nano/16@64", "imagenette", 9469, 40, 512, repeat=3)]
              if z["four_x_arm07"] else []),
            *([Run("from scratch at 128 px, the fine-tuning's FLOPs", "ViT-Nano/16@128", "imagenette", 9469, 34, 512,
                   extra_eval_images=30 * 3925)] if z["scratch07"] else [])],
        "08_inspecting_vit": [
            # the mosaic model is the zoo's (no training); after training, attention
            # maps of 200 images x 2 models, a masking test of 200 images x 4 variants, maps of 3,925 mosaics
            # x 2 models and a masking test of 300 mosaics x 6 variants
            from_recipe("ViT-Nano/16 at 128 px", "ViT-Nano/16@128", nette, 9469, eval_images=500,
                        extra_eval_images=2 * 200 + 4 * 200 + 2 * 3925 + 6 * 300)],
        "09_masked_patch_prediction": [
            # the few-shot probe before pre-training and during it: features of 2,500 + 2,000 images each time
            Run("MPP pre-training", "ViT-Micro/4", "cifar10", 50000, 30, 1024, eval_images=500,
                extra_eval_images=z["probes09"] * (2500 + 2000)),
            Run("fine-tuning, 2 arms x 5 seeds", "ViT-Micro/4", "cifar10", 2500, z["ft09_epochs"], 256,
                extra_eval_images=2000, repeat=10)],
    }


# The data sets each notebook loads besides those it trains on.
NOTEBOOK_DATA = {"00_start_here": ("cifar10", "fashion-mnist", "imagenette"), "01_patches": (),
                 "02_class_token_and_positions": ("cifar10",), "08_inspecting_vit": ("cifar10",)}


def step_key(model: str, batch_size: int) -> str:
    """The key of a measured step time in a figures JSON, e.g. "ViT-Micro/4 b1024"."""
    return f"{model} b{batch_size}"


def step_seconds(model: str, batch_size: int, figures: dict, loaded: bool = False) -> float:
    """Seconds per training step: measured when the figures have it, else overhead + FLOPs / the GPU's rate.
    `loaded`: loader workers share the CPU with the main process, whose dispatch slows (CPU contention)."""
    fam = family(model)
    scale = figures.get("overhead_scale", 1.0)
    depth = model.partition(":d")[2]
    layers = int(depth) / 6 if depth else 1.0  # a deeper ViT-Micro/4 (6 layers): overhead per layer
    extra = scale * layers * (figures["loaded_overhead_s"][fam] - figures["overhead_s"][fam]) if loaded else 0.0
    measured = figures.get("step_s", {}).get(step_key(model, batch_size))
    if measured is not None:  # measured alone on the GPU: contention comes on top
        return measured + extra
    return scale * layers * figures["overhead_s"][fam] + extra + batch_size * train_flops(model) / figures["flops_per_s"]


def rand_augment_key(dataset: str, batch_size: int) -> str:
    """The key of a measured batched-RandAugment time in a figures JSON, e.g. "cifar10 b1024"."""
    return f"{dataset} b{batch_size}"


def rand_augment_seconds(dataset: str, batch_size: int, figures: dict) -> float:
    """Seconds of one batch of `BatchRandAugment` on the GPU: measured when the figures have it, else the
    estimate (a fixed dispatch cost plus the pixels), the dispatch scaled like a step's (`overhead_scale`)."""
    measured = figures.get("rand_augment_s", {}).get(rand_augment_key(dataset, batch_size))
    if measured is not None:
        return measured
    return (figures.get("overhead_scale", 1.0) * figures["rand_augment_batch_s"]
            + batch_size * figures["rand_augment_image_s"][dataset])


def run_seconds(run: Run, figures: dict) -> float:
    """Estimated seconds of one run (all its repeats).

    An epoch of a run fed by loader workers: each worker builds whole batches (`batch / rate` seconds each), and
    with persistent workers every epoch starts empty, so the first step waits one batch's build (the refill); then
    the epoch is bound by the GPU steps or by the workers' rounds of batches, whichever is longer:

        max(build + steps x t_step,  ceil(steps / workers) x build + t_step)

    plus, once per run, the workers' start-up. Runs with data on the GPU: steps x t_step, plus one batch's
    RandAugment per step when it runs batched on the GPU."""
    steps = -(-run.images // run.batch_size)
    t_step = step_seconds(run.model, run.batch_size, figures, loaded=run.loader)
    if run.gpu_rand_augment:
        t_step += rand_augment_seconds(run.dataset, run.batch_size, figures)
    epoch, start = steps * t_step, 0.0
    if run.loader:
        workers = max(1, min(run.workers, GPU_CORES - 2))
        measured = figures.get("loader_images_per_s", {}).get(f"{run.dataset} w{workers}")
        rate = measured / workers if measured else figures["loader_images_per_s_per_worker"][run.dataset]
        build = run.batch_size / rate  # one worker, one batch
        epoch = max(build + steps * t_step, -(-steps // workers) * build + t_step)
        start = figures["worker_start_s"]
    evals = (run.epochs * run.eval_images + run.extra_eval_images) / figures["eval_images_per_s"]
    return run.repeat * (start + run.epochs * epoch + evals)


def plan(figures: dict | None = None, cold: bool = False, loader: bool = False,
         sizes: dict | None = None) -> dict[str, float]:
    """Estimated full-profile seconds per notebook, on one GPU of the given figures (default: `FIGURES`).
    By default the notebooks run in number order on one machine, as `make gpu-check` runs them: a data set is
    decoded by the first notebook that loads it and read from its cache after that, and 06 loads 04's checkpoints.
    `cold`: each notebook alone on a fresh machine (it decodes its data sets; 06 trains 04's models again).
    `loader`: RandAugment per image in loader workers; `sizes`: the runs' sizes (`notebook_runs`)."""
    f = {**FIGURES, **(figures or {})}
    out, decoded = {}, set()
    for nb, runs in notebook_runs(cold, loader, sizes).items():
        datasets = set(NOTEBOOK_DATA.get(nb, ())) | {r.dataset for r in runs}
        fresh = datasets if cold else datasets - decoded
        decoded |= datasets
        start = f["start_s"] + sum(f["decode_s"][d] for d in fresh) + f["cached_load_s"] * len(datasets - fresh)
        out[nb] = start + sum(run_seconds(r, f) for r in runs)
    return out


def plan_range(figures: dict | None = None, cold: bool = False, loader: bool = False,
               sizes: dict | None = None) -> dict[str, tuple[float, float]]:
    """(calibrated, pessimistic) estimated seconds per notebook: `plan` with the figures, then with `PESSIMISTIC`
    on top of them (the loader's rate of the development CPU's cores, 30% more step overhead)."""
    low = plan(figures, cold, loader, sizes)
    high = plan({**(figures or {}), **PESSIMISTIC, "loader_images_per_s": {}}, cold, loader, sizes)
    return {nb: (low[nb], high[nb]) for nb in low}


def default_figures(gpu: str = "h100") -> tuple[dict | None, str]:
    """The measured figures of `benchmarks/results/gpu_step_times_<gpu>.json` when that file is there, else None
    (the estimates in `FIGURES`); and a line saying which."""
    path = RESULTS / f"gpu_step_times_{gpu}.json"
    if path.exists():
        figures = json.loads(path.read_text())["figures"]
        return figures, f"figures: step times and loader rates measured, from {path.relative_to(RESULTS.parents[1])}"
    return None, (f"figures: ESTIMATED (no {path.relative_to(RESULTS.parents[1])}; run benchmarks/gpu_step_times.py "
                  f"on the GPU): {FIGURES['source']}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--figures", type=Path, help="a JSON of measured figures (benchmarks/gpu_step_times.py); "
                   "default: benchmarks/results/gpu_step_times_<gpu>.json when it is there, else the estimates")
    p.add_argument("--gpu", default="h100", help="the GPU whose measured figures to look for (default: h100)")
    p.add_argument("--loader", action="store_true", help="plan RandAugment per image in 14 DataLoader workers "
                   "(the full recipes until 2026-11-27), to compare with the runs measured then")
    p.add_argument("--proposed", action="store_true", help="plan the PROPOSED sizes (not the notebooks' own: "
                   "ESTIMATED, their claims unchecked at those sizes)")
    a = p.parse_args(argv)
    sizes = PROPOSED if a.proposed else None
    if a.figures:
        figures, said = json.loads(a.figures.read_text())["figures"], f"figures: from {a.figures}"
    else:
        figures, said = default_figures(a.gpu)
    print(said)
    if a.loader:
        print("RandAugment: per image in 14 DataLoader workers (--loader; the recipes until 2026-11-27)")
    else:
        print("RandAugment: batched on the GPU (the recipes), "
              + ("measured" if "rand_augment_s" in (figures or {}) else "ESTIMATED: not yet run on a GPU"))
    if a.proposed:
        changed = {k: v for k, v in PROPOSED.items() if SIZES[k] != v}
        print(f"sizes: PROPOSED, not the notebooks' own (their claims are unchecked at these sizes): {changed}")
    warm = plan_range(figures, loader=a.loader, sizes=sizes)
    cold = plan_range(figures, cold=True, loader=a.loader, sizes=sizes)
    print(f"{'notebook':40} {'est. min':>13}  {'alone':>11}   runs  (est.: the calibrated figures - a pessimistic "
          "host; in order on one machine, and alone on a fresh one)")
    for nb, (lo, hi) in warm.items():
        runs = "; ".join(f"{r.what} ({r.repeat}x {r.epochs} ep)" for r in notebook_runs(loader=a.loader,
                                                                                       sizes=sizes)[nb])
        c_lo, c_hi = cold[nb]
        print(f"{nb:40} {lo / 60:>5.1f} - {hi / 60:<5.1f}  {c_lo / 60:>4.1f} - {c_hi / 60:<4.1f}   "
              f"{runs or 'no training'}")
    total = [sum(v[i] for v in warm.values()) for i in (0, 1)]
    print(f"{'all ten, in order on one machine':40} {total[0] / 60:>5.1f} - {total[1] / 60:<5.1f}  "
          f"budget: each <= {BUDGET_EACH_S / 60:.0f} min, all <= {BUDGET_ALL_S / 60:.0f} min; the goal: each <= "
          f"{GOAL_EACH_S / 60:.0f} min, all <= {GOAL_ALL_S / 60:.0f} min")
    if a.loader:
        print(f"measured: 04 took {MEASURED_04_LOADER_S / 60:.1f} min with this pipeline on one H100 with 16 host "
              "cores (2026-11-27): its loader ran slower there than the calibrated figures assume")
    return 0 if max(hi for _, hi in warm.values()) <= BUDGET_EACH_S and total[1] <= BUDGET_ALL_S else 1


if __name__ == "__main__":
    sys.exit(main())
