"""The scaling sweep of notebook 05: small ViTs and ResNets trained at equal training FLOPs on all of CIFAR-10, and
the committed record of its runs.

Introduced in 05_scaling.ipynb.

Every run starts from notebook 04's quick recipe, `cifar10-lowres-quick` (all 50,000 training images at 16 px, then
one epoch of 20,000 of them at 32 px with the position embeddings interpolated, §3.2). A *level* is the number of
16-px epochs that ViT-Nano/4 trains; every other model of the sweep spends the same training FLOPs as ViT-Nano/4 at
that level (`Recipe.at_flops`: a cheaper model trains more epochs, a dearer one fewer). Level 6 is 04's run itself.
A model so cheap that its share of the 32-px phase would need more than the whole split (D32 L4 P4) sees all
50,000 images once there and spends less than the level: the record holds what each run spent.

    recipe = level_recipe(2, "ResNet-8", train)         # the run's recipe: ResNet-8 at ViT-Nano/4's level-2 FLOPs
    recipe = level_recipe(2, lambda: ViT(config), train)   # a model of your own at the same FLOPs
    model = build("D64 L8 P4")                          # a model of the sweep by name
    record = load_record()                              # the committed runs, each with its answers on the test set

The record (`records/sweep_cifar10.json`, written by benchmarks/scaling_sweep.py) holds each run's accuracy on all
10,000 test images and which of them it got right (bit-packed), so that a notebook can pair two runs image by image
without training them. It was measured on the course's copy of CIFAR-10 (its order of the test images); a run of
this machine is compared with it by accuracy, never image by image. The answers are packed as the zoo's records pack
theirs (`minivit.zoo.training.pack_right`).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

RECORD = Path(__file__).resolve().parent / "records" / "sweep_cifar10.json"
BASE_RECIPE = "cifar10-lowres-quick"  # notebook 04's quick recipe: the sweep's runs are cut from it
BASE_MODEL = "D64 L4 P4"  # ViT-Nano/4: the model whose FLOPs define a level
LEVELS = (2, 6)  # 16-px epochs of ViT-Nano/4 (6: notebook 04's run)
# name: the ViT config's changes from ViT-Nano/4 (D 64, L 4, 4 heads, MLP 128, P 4), or None for a ResNet preset
MODELS: dict[str, dict | None] = {
    "D32 L4 P4": dict(dim=32, heads=2, mlp_dim=64),  # half the width
    "D64 L2 P4": dict(depth=2),  # half the depth
    "D64 L4 P4": dict(),  # ViT-Nano/4
    "D64 L8 P4": dict(depth=8),  # twice the depth
    "ResNet-8": None,  # notebook 04's CNN
    "ResNet-14": None,  # about ViT-Nano/4's parameters
}
SEEDS = (0, 1, 2)  # the seeds of the runs checked or compared across seeds (level 6: ViT-Nano/4, ResNet-8, the
# 8 x 8-patch ViT; the data study); every other run has seed 0
DATA_PER_CLASS = 500  # the data study's subset: 5,000 training images, seen as often as the 50,000 (level 6)
PATCH_MODEL = "D64 L4 P8"  # ViT-Nano/4 with 8 x 8 patches: trained on ViT-Nano/4's recipe (the same epochs), not FLOPs
PATCH_CHANGES = dict(patch_size=8)


def _changes(name: str) -> dict | None:
    if name == PATCH_MODEL:
        return PATCH_CHANGES
    if name not in MODELS:
        raise ValueError(f"unknown sweep model {name!r}; expected one of {[*MODELS, PATCH_MODEL]}")
    return MODELS[name]


def build(name: str) -> torch.nn.Module:
    """A freshly initialised model of the sweep (seed it first: `torch.manual_seed(seed)`)."""
    from .cnn import CifarResNet
    from .config import PRESETS, ViTConfig
    from .vit import ViT
    changes = _changes(name)
    if changes is None:
        return CifarResNet.from_preset(name)
    return ViT(ViTConfig(**{**PRESETS["ViT-Nano/4"].to_dict(), **changes}))


def checkpoint_model_name(name: str) -> str:
    """The model's part of a run's checkpoint name: "ViT-Nano/4" with its config changes, or the ResNet preset
    (the names notebook 04 gives its two models, so that a level-6 run of either is 04's checkpoint)."""
    changes = _changes(name)
    if changes is None:
        return name
    return "ViT-Nano/4" + "".join(f"-{k}{v}" for k, v in changes.items())


def level_recipe(level: int, model, train, n_per_class: int | None = None):
    """The recipe of `model` at `level` on `train` (all 50,000 training images): ViT-Nano/4's recipe with `level`
    16-px epochs (its warm-up as 04's), cut to ViT-Nano/4's FLOPs for another model (the patch model keeps the
    epochs). `model`: a name of the sweep, or a function that builds a model of your own (cut to the same FLOPs).
    `n_per_class`: a subset of the training images seen for as many images as the whole split (the data study: the
    same images seen, so the same FLOPs, on less data); None is the whole split."""
    from .flops import training_flops_per_image
    from .recipes import RECIPES
    if isinstance(level, bool) or not isinstance(level, int) or level < 1:
        raise ValueError(f"level must be a positive int (16-px epochs of ViT-Nano/4), got {level!r}")
    base = RECIPES[BASE_RECIPE]
    recipe = base.with_(epochs=level)
    if n_per_class is not None:
        total = len(train)  # images per 16-px epoch of the whole split
        subset = n_per_class * len(train.classes)
        last = len(base.then.training_set(train))  # images of the 32-px phase
        if subset >= last:
            raise ValueError(f"n_per_class={n_per_class} is not a subset smaller than the 32-px phase's "
                             f"{last // len(train.classes)} per class")
        e16, e32 = round(level * total / subset), round(last / subset)
        recipe = recipe.with_(n_per_class=n_per_class, epochs=e16, warmup_epochs=base.warmup_epochs * e16 / level,
                              then=base.then.with_(n_per_class=None, epochs=e32,
                                                   warmup_epochs=base.then.warmup_epochs * e32))
    if model in (BASE_MODEL, PATCH_MODEL):
        return recipe
    make = model if callable(model) else (lambda: build(model))  # an unknown name fails in `build`
    return recipe.at_flops(lambda size: training_flops_per_image(make, size),
                           lambda size: training_flops_per_image(lambda: build(BASE_MODEL), size), train)


def load_record(path: str | Path | None = None) -> dict:
    """The committed sweep: {"runs": [{"model", "level", "seed", "n_per_class", "train_flops", "test_acc",
    "right" (bool (10000,)), ...}], and how it was measured (machine, threads, torch, data copy, date)}."""
    path = Path(path) if path is not None else RECORD
    if not path.exists():
        raise FileNotFoundError(f"no sweep record at {path}: it comes with the course (minivit/records/); "
                                "benchmarks/scaling_sweep.py writes it")
    from .zoo.training import unpack_right  # the zoo's records keep answers the same way
    record = json.loads(path.read_text())
    n = record["test_images"]
    for run in record["runs"]:
        run["right"] = unpack_right(run.pop("test_right"), n)
    return record


def find(record: dict, model: str, level: int, seed: int = 0, n_per_class: int | None = None) -> dict:
    """The record's run of `model` at `level` with `seed` (and `n_per_class`, None: all the images)."""
    for run in record["runs"]:
        if (run["model"], run["level"], run["seed"], run["n_per_class"]) == (model, level, seed, n_per_class):
            return run
    raise KeyError(f"the sweep record has no run of {model!r} at level {level}, seed {seed}, n_per_class {n_per_class}")


__all__ = ["BASE_MODEL", "DATA_PER_CLASS", "LEVELS", "MODELS", "PATCH_MODEL", "SEEDS", "build",
           "checkpoint_model_name", "find", "level_recipe", "load_record"]
