"""The zoo's entries: what each model is and how it was trained (the recipe), kept apart from what was measured.

An `Entry` names a model (architecture, preset and its overrides, data set and resolution) and the training
`Run` that makes it. One run may make several entries: the masked-patch-prediction run keeps its weights after
5, 10, 20 and 40 epochs, so notebook 09 can plot what longer self-supervision buys (a dose-response). What a
run measured -- test accuracy, the file's SHA-256, time, machine -- lives in `records.json` beside this file,
written only by `python -m minivit.zoo train NAME --record`.

Introduced in 08_inspecting_vit.ipynb (then 09_masked_patch_prediction.ipynb).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Run:
    """One training run of the zoo: its data, its schedule and which epochs it keeps."""

    name: str  # the run's name, e.g. "vit-nano4-cifar10"
    kind: str  # "classifier" (minivit.train.fit) or "mpp" (minivit.pretrain.pretrain_mpp)
    dataset: str  # minivit.data name; the test split is what the recorded accuracy is measured on
    image_size: int  # the resolution the model trains and is evaluated at (the data set's own, or resized)
    recipe: dict[str, Any]  # the training arguments, plain data (fit's or pretrain_mpp's), seed included; "mix"
    # names a batch mixing of minivit.augment.MIXES (CutMix for the twin), built for the data set's classes
    keep: tuple[int, ...]  # the epochs whose weights become entries (the last one is the run's end)
    train_images: str = "all"  # "all" (the training split), "mpp-09" (notebook 09's 10,000 unlabelled images) or
    # "mosaics" (2x2 mosaics labelled by the top-left tile, as notebook 07 makes them: seed 0 train, seed 1 test)
    notes: str = ""  # why this recipe, in a sentence

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["keep"] = list(self.keep)
        return d


@dataclass(frozen=True)
class Entry:
    """One model of the zoo: a file of weights, the model it fills and the run that made it."""

    name: str  # e.g. "vit-nano4-cifar10"; also the file's stem
    arch: str  # "vit" (a minivit.ViT, hybrids included), "resnet" (minivit.CifarResNet) or "mpp" (ViT + MPP head)
    preset: str  # the ViT or CNN preset the model is built from
    run: Run  # the training run that writes this entry
    epoch: int  # the run's epoch after which these weights were kept
    overrides: dict[str, Any] = field(default_factory=dict)  # preset fields replaced, e.g. {"image_size": 64}
    used_by: str = ""  # the notebooks that load it

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arch": self.arch, "preset": self.preset, "overrides": dict(self.overrides),
                "epoch": self.epoch, "used_by": self.used_by, "run": self.run.to_dict()}


# The CIFAR-10 recipe of the long-trained classifiers: the course's quick recipe (cifar10-quick: AdamW, label
# smoothing 0.1, pad-crop and flip, warm-up then cosine) on the whole training split at batch 256 for 50 epochs.
# Calibrated on 2 CPU cores (shared/research/calibrations.md): ViT-Nano/4 76.5% at epoch 40 of such a schedule.
_CIFAR_LONG = dict(epochs=50, batch_size=256, lr=2e-3, weight_decay=0.05, warmup_epochs=2.0, label_smoothing=0.1,
                   clip_grad=1.0, augment="basic", seed=0)

# Masked patch prediction as notebook 09 runs it (ViT-Nano/4, its 10,000 unlabelled CIFAR-10 images, batch 128,
# lr 1e-3, random flips), for 40 epochs instead of 3; the calibration found 20 epochs enough to beat the
# neighbours'-colour baseline and to turn fine-tuning's gain positive.
_MPP_LONG = dict(epochs=40, batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=0.5, clip_grad=1.0,
                 augment="flip", seed=0)

# Imagenette at 64 px (notebook 07 pre-trains there, then fine-tunes at 128 px): the course's imagenette64 and
# mosaic64 recipes (flips for photographs, no augmentation for mosaics, whose label sits in the top-left tile),
# run 100 and 60 epochs instead of the quick profile's 3.
_IMAGENETTE64_LONG = dict(epochs=100, batch_size=128, lr=2e-3, weight_decay=0.05, warmup_epochs=5.0,
                          label_smoothing=0.1, clip_grad=1.0, augment="flip", seed=0)
_MOSAIC64_LONG = dict(epochs=60, batch_size=128, lr=2e-3, weight_decay=0.05, warmup_epochs=3.0, label_smoothing=0.1,
                      clip_grad=1.0, augment="none", seed=0)

RUNS: dict[str, Run] = {r.name: r for r in (
    Run("vit-nano4-cifar10", "classifier", "cifar10", 32, _CIFAR_LONG, keep=(50,),
        notes="the pure ViT of notebooks 04 and 08, trained 50 epochs on all 50,000 images"),
    Run("vit-nano4-cifar10-cutmix", "classifier", "cifar10", 32, {**_CIFAR_LONG, "mix": "cutmix"}, keep=(50,),
        notes="the CutMix twin of vit-nano4-cifar10 (same recipe, CutMix on every batch): notebook 08 compares "
              "what the training protocol does to attention distance"),
    Run("resnet14-cifar10", "classifier", "cifar10", 32, _CIFAR_LONG, keep=(50,),
        notes="the ResNet baseline of notebook 04, trained exactly as the ViT (same recipe, epochs and data)"),
    Run("r-s4-vit-nano4-cifar10", "classifier", "cifar10", 32, _CIFAR_LONG, keep=(50,),
        notes="notebook 06's hybrid (the stride-4 ResNet stem feeding ViT-Nano/4's Transformer), trained as the ViT"),
    Run("mpp-vit-nano4-cifar10", "mpp", "cifar10", 32, _MPP_LONG, keep=(5, 10, 20, 40), train_images="mpp-09",
        notes="notebook 09's masked patch prediction, 40 epochs, weights kept along the way for a dose-response"),
    Run("vit-nano16-imagenette64", "classifier", "imagenette", 64, _IMAGENETTE64_LONG, keep=(100,),
        notes="notebook 07's photograph model at 64 px (a 4x4 grid of 16-px patches), before fine-tuning at 128 px"),
    Run("vit-nano16-mosaic64", "classifier", "imagenette", 64, _MOSAIC64_LONG, keep=(60,), train_images="mosaics",
        notes="notebook 07's mosaic model: 2x2 mosaics of Imagenette at 64 px, labelled by the top-left tile"),
)}

ENTRIES: dict[str, Entry] = {e.name: e for e in (
    Entry("vit-nano4-cifar10", "vit", "ViT-Nano/4", RUNS["vit-nano4-cifar10"], 50, used_by="04, 06, 08"),
    Entry("vit-nano4-cifar10-cutmix", "vit", "ViT-Nano/4", RUNS["vit-nano4-cifar10-cutmix"], 50, used_by="08"),
    Entry("resnet14-cifar10", "resnet", "ResNet-14", RUNS["resnet14-cifar10"], 50, used_by="04, 06"),
    Entry("r-s4-vit-nano4-cifar10", "vit", "R-S4+ViT-Nano/4", RUNS["r-s4-vit-nano4-cifar10"], 50, used_by="06"),
    *(Entry(f"mpp-vit-nano4-cifar10-e{e}", "mpp", "ViT-Nano/4", RUNS["mpp-vit-nano4-cifar10"], e, used_by="09")
      for e in RUNS["mpp-vit-nano4-cifar10"].keep),
    Entry("vit-nano16-imagenette64", "vit", "ViT-Nano/16", RUNS["vit-nano16-imagenette64"], 100,
          {"image_size": 64}, used_by="07"),
    Entry("vit-nano16-mosaic64", "vit", "ViT-Nano/16", RUNS["vit-nano16-mosaic64"], 60, {"image_size": 64},
          used_by="07, 08"),
)}


def get_entry(name: str) -> Entry:
    """The entry called `name`; a clear error lists the others."""
    if name not in ENTRIES:
        raise ValueError(f"no zoo model {name!r}; expected one of {sorted(ENTRIES)} (python -m minivit.zoo list)")
    return ENTRIES[name]


def entries_of(run: Run) -> list[Entry]:
    """The entries a run writes, in epoch order."""
    return sorted((e for e in ENTRIES.values() if e.run.name == run.name), key=lambda e: e.epoch)
