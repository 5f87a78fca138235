"""The course's training recipes, by name and profile: one place that says how a model is trained.

    recipe = minivit.recipes.get("cifar10", profile)     # profile: a minivit Profile or "quick" / "full"
    train = recipe.training_set(load_dataset("cifar10", "train"))   # the recipe's subset (quick) or all
    history = recipe.fit(model, train, test)             # minivit.train.fit with the recipe's arguments

A `Recipe` is a frozen dataclass: the data (how many training images per class), the optimisation
(`fit`'s arguments), and the augmentation -- a batched on-device policy (`minivit.augment.make_augment`)
and, for the full profile, RandAugment and MixUp/CutMix. The full recipes run RandAugment batched on the GPU
(`minivit.augment.BatchRandAugment`, through `fit(augment=...)`, no DataLoader workers, the uint8 set kept on the
GPU): with torchvision's per-image RandAugment in 14 DataLoader workers the CPU set the pace (measured on one
H100 with 16 cores, 2026-11-27: about 3.5 s an epoch of CIFAR-10 for a ViT and a ResNet alike). `workers > 0`
still selects that per-image pipeline (`recipe.with_(workers=14)`), with the same distribution. Notebooks that
compare models (a ViT and a CNN, a pure ViT and a hybrid) train each with the same recipe.

`Recipe.fit_or_load(model, train, val, name=...)` trains and saves the model under
`checkpoint_dir()/<name>.pt`, or loads it when a checkpoint of the same training is there -- the same
recipe, model config, training and validation images (a fingerprint of their bytes). So one notebook
reuses a model another trained, and each still runs alone. Delete the folder to retrain. Trained or
loaded, the model ends on the run's device. `train_or_load` is that cache, for any training function
(`minivit.pretrain.pretrain_mpp_or_load` uses it too); `minivit.checkpoint` only saves and loads.
`predict_or_load(model, data, name)` keeps a run's logits on a data set beside its checkpoint, so a later
notebook does not predict the same images with the same model again.

Introduced in 04_training_a_vit.ipynb.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .checkpoint import read_checkpoint, save_checkpoint, unwrap
from .data import fingerprint  # noqa: F401  (re-exported: recipes.fingerprint)
from .history import History


def checkpoint_dir() -> Path:
    """Where the notebooks keep the models they train for later notebooks: `<data root>/checkpoints`
    (`data/checkpoints` in a checkout; git-ignored, like the data), or `<data root>/checkpoints-smoke` in a smoke
    run (`minivit.smoke`), so a smoke run never replaces a real one. Created on first use."""
    from . import smoke
    from .data import data_root
    path = data_root() / ("checkpoints-smoke" if smoke.active() else "checkpoints")
    path.mkdir(parents=True, exist_ok=True)
    return path


def train_or_load(name: str, model: nn.Module, key: dict, train, device=None) -> History:
    """Load the run saved as `checkpoint_dir()/<name>.pt` into `model` when it was saved with the same `key`
    (plain data saying what was trained how: recipe, config, data fingerprints); otherwise call `train()`, which
    trains `model` and returns its `History`, and save the run atomically under that key. An unreadable file, or
    one saved under another key, is trained again and replaced: the name belongs to this cache.

    Either way the model ends on `device` (default: where `train()` left it, else where it was), so the caller
    never sees a trained model on the GPU and a loaded one on the CPU. The History's `loaded_from` says which
    happened (the path, or None)."""
    path = checkpoint_dir() / f"{name}.pt"
    if path.exists():
        try:
            state = read_checkpoint(path)
        except ValueError:
            state = None  # unreadable: train again and overwrite it
        if state is not None and state.get("run") == key:
            unwrap(model).load_state_dict(state["model"])
            if device is not None:
                model.to(device)
            history = History.from_dict(state["history"])
            history.loaded_from = str(path)
            return history
    history = train()
    if device is not None:
        model.to(device)
    save_checkpoint(path, model, history=history.to_dict(), epoch=len(history), run=key)
    return history


def predict_or_load(model: nn.Module, data, name: str, device=None) -> torch.Tensor:
    """`minivit.train.predict(model, data)`: the logits (n, K) on the CPU, kept beside the run's checkpoint
    `checkpoint_dir()/<name>.pt` as `<name>.logits-<fingerprint of data>.pt`, so a later notebook that loads the
    same run gets the logits of the same images without computing them again (06 reuses 04's ViT and CNN).

    The file is keyed by the checkpoint's SHA-256: when the run is trained again, its old logits are computed
    again and replaced (the name belongs to this cache). `model` must hold the checkpoint's weights (trained or
    loaded by `Recipe.fit_or_load(..., name=name)`); anything else is refused with a ValueError, no file written."""
    from .checkpoint import atomic_save
    from .train import predict
    path = checkpoint_dir() / f"{name}.pt"
    if not path.exists():
        raise ValueError(f"no checkpoint {path}: train or load the run first (Recipe.fit_or_load(..., name={name!r}))")
    saved = read_checkpoint(path)["model"]
    mine = unwrap(model).state_dict()
    if saved.keys() != mine.keys() or any(not torch.equal(saved[k], mine[k].detach().cpu()) for k in saved):
        raise ValueError(f"the model's weights are not those of {path}; predict_or_load caches only that run's logits")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    key = {"checkpoint": hashlib.sha256(path.read_bytes()).hexdigest(), "data": fingerprint(data),
           "device": device.type}  # bf16 autocast on a GPU gives other logits than float32 on the CPU
    cache = checkpoint_dir() / f"{name}.logits-{key['data']}.pt"
    if cache.exists():
        try:
            state = torch.load(cache, map_location="cpu", weights_only=True)
        except Exception:  # unreadable: compute again and replace it
            state = None
        if isinstance(state, dict) and state.get("key") == key:
            return state["logits"]
    logits = predict(model, data, device=device)  # (n, K) on the CPU
    atomic_save({"key": key, "logits": logits}, cache)
    return logits


@dataclass(frozen=True)
class Recipe:
    """How to train on one data set: data, optimisation, augmentation."""

    name: str  # e.g. "cifar10-quick"
    dataset: str  # minivit.data name
    n_per_class: int | None  # training images per class (a stratified subset), None: the whole split
    epochs: int  # epochs of the schedule
    batch_size: int  # global batch size
    lr: float  # peak AdamW learning rate
    weight_decay: float = 0.05  # AdamW weight decay on weight matrices
    warmup_epochs: float = 1.0  # linear warm-up, then cosine decay to 0
    label_smoothing: float = 0.0  # of the training loss
    clip_grad: float | None = 1.0  # global gradient-norm clipping
    augment: str = "basic"  # batched on-device policy: "basic" (pad-crop + flip), "flip" or "none"
    rand_augment: tuple[int, int] | None = None  # (ops, magnitude) of RandAugment (with its own crop, flip), or None
    mixup: bool = False  # MixUp / CutMix on every batch
    workers: int = 0  # RandAugment: 0 batched on the device (the recipes), > 0 per image in this many loader workers
    extra: dict = field(default_factory=dict, compare=False)  # anything else passed to fit (e.g. compile)
    image_size: int | None = None  # train on the images resized to this side (None: the data set's own size)
    then: "Recipe | None" = None  # a next phase, e.g. fine-tuning at the full resolution (§3.2); None: no more

    def __post_init__(self):
        if self.image_size is not None and not (isinstance(self.image_size, int) and self.image_size > 0):
            raise ValueError(f"image_size must be a positive int or None, got {self.image_size!r}")
        if self.then is not None and not isinstance(self.then, Recipe):
            raise ValueError(f"then must be a Recipe (the next phase) or None, got {type(self.then).__name__}")
        if self.then is not None and self.then.dataset != self.dataset:
            raise ValueError(f"a recipe's phases train on one data set: {self.dataset!r}, then {self.then.dataset!r}")

    def __repr__(self) -> str:  # the phase fields only where a recipe has phases (the repr of one-phase recipes)
        shown = [f for f in fields(self)
                 if f.repr and not (f.name in ("image_size", "then") and getattr(self, f.name) is None)]
        return f"Recipe({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in shown)})"

    def training_set(self, train, seed: int = 0):
        """The recipe's training images: a stratified subset of `n_per_class` per class, or all of `train`."""
        from .data import stratified_subset
        return stratified_subset(train, self.n_per_class, seed=seed) if self.n_per_class else train

    def fit_kwargs(self, num_classes: int | None = None) -> dict[str, Any]:
        """The arguments this recipe passes to `minivit.train.fit` (augmentation objects built here)."""
        from .augment import BatchRandAugment, make_augment, mixup_cutmix, rand_augment
        kwargs = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, weight_decay=self.weight_decay,
                      warmup_epochs=self.warmup_epochs, label_smoothing=self.label_smoothing,
                      clip_grad=self.clip_grad, **self.extra)
        if self.rand_augment is not None and self.workers:  # per image on the CPU (with its own crop and flip)
            kwargs.update(transform=rand_augment(self.dataset, *self.rand_augment), workers=self.workers)
        elif self.rand_augment is not None:  # the same, batched on the batch's device
            kwargs["augment"] = BatchRandAugment(self.dataset, *self.rand_augment)
        elif self.augment != "none":
            kwargs["augment"] = make_augment(self.dataset, self.augment)
        if self.mixup:
            if num_classes is None:
                raise ValueError("a recipe with mixup needs num_classes")
            kwargs["mix"] = mixup_cutmix(num_classes)
        return kwargs

    @property
    def progress(self) -> bool:
        """Whether `fit` shows a progress bar by default: in the full profile's recipes (runs of minutes, where a
        silent cell looks stuck), not in the quick ones (seconds each; a bar would only add noise to a notebook)."""
        return self.name.endswith("-full")

    def fit(self, model, train, val=None, **overrides):
        """`minivit.train.fit(model, train, val, **recipe)`; keyword `overrides` replace the recipe's values
        (e.g. `lr=1e-3` for an ablation, `progress=False`, `device=...`). Progress bars: `self.progress`.

        `train` is the data set the recipe draws from (`training_set(train)` is taken here when `then` is set, so
        that each phase takes its own subset), `val` is resized with it. With `image_size`, the images are resized
        first and a ViT takes that size (`set_image_size`: its position embeddings interpolated in 2D, §3.2); a
        CNN takes any size. With `then`, the next phase continues training the same model (its own optimizer,
        warm-up and cosine decay; the overrides apply to every phase) and the returned History holds all phases
        (`History.then`). The model ends at the last phase's size."""
        from .train import fit
        if self.then is not None or self.image_size is not None:
            return self._fit_phases(model, train, val, overrides)
        return fit(model, train, val, **self._fit_arguments(model, train, overrides))

    def _fit_arguments(self, model, train, overrides) -> dict[str, Any]:
        """`fit`'s keyword arguments: the recipe's, the progress bar, seed 0, then `overrides`."""
        k = getattr(getattr(model, "config", None), "num_classes", None) or len(getattr(train, "classes", ())) or None
        return {**self.fit_kwargs(k), "progress": self.progress, "seed": 0, **overrides}

    def _fit_phases(self, model, train, val, overrides):
        """`fit` for a recipe in phases: this phase at `image_size` (None: the data's own), then `then` on its
        `training_set` of the same `train`; the Histories joined (`History.then`)."""
        from .data import ImageDataset
        from .train import fit
        if not isinstance(train, ImageDataset) or not (val is None or isinstance(val, ImageDataset)):
            raise ValueError("a recipe in phases (image_size, then) resizes its data: train and val must be an "
                             f"ImageDataset (minivit.data.load_dataset), got {type(train).__name__}")
        size = self.image_size or int(train.images.shape[-1])
        set_size = getattr(model, "set_image_size", None)
        if callable(set_size):
            set_size(size)  # a ViT: the position embeddings interpolated to the new grid (§3.2); a CNN takes any size
        history = fit(model, train.resized(size), val.resized(size) if val is not None else None,
                      **self._fit_arguments(model, train, overrides))
        history.phases = [{"epochs": len(history), "steps_per_epoch": history.steps_per_epoch, "image_size": size}]
        if self.then is None:
            return history
        return history.then(self.then._fit_phases(model, self.then.training_set(train), val, overrides))

    def fit_or_load(self, model, train, val=None, *, name: str, **overrides):
        """Like `fit`, but first look for `checkpoint_dir()/<name>.pt` written by the same training: the same
        recipe, overrides, model config (or class and size) and data. If it is there, load its weights into
        `model` and return its History; else train, save, and return the new History. `History.epoch_time`
        holds the training seconds either way, `History.loaded_from` the checkpoint when it was loaded. The model
        ends on the run's device (`device=...`, else `fit`'s default) whether it was trained or loaded."""
        from .profile import default_device
        config = getattr(unwrap(model), "config", None)
        key = {"recipe": self.to_dict(),
               "overrides": {k: repr(v) for k, v in sorted(overrides.items()) if k not in ("device", "progress")},
               "model": config.to_dict() if hasattr(config, "to_dict") else
               f"{type(model).__name__}({sum(p.numel() for p in model.parameters())})",
               "train": fingerprint(train), "val": fingerprint(val)}
        device = overrides.get("device") or default_device()
        return train_or_load(name, model, key, lambda: self.fit(model, train, val, **overrides), device=device)

    def epoch_images(self, history: History, train) -> list[tuple[int, int]]:
        """(side in pixels, training images) of each epoch of `history`, a run of this recipe on `train` (the data
        set it draws from, as given to `fit`): phase by phase, each phase its own `training_set` and size."""
        phases, recipes, r = history.phase_list(), [], self
        while r is not None:
            recipes.append(r)
            r = r.then
        if len(phases) != len(recipes):
            raise ValueError(f"the history has {len(phases)} phase(s) and this recipe {len(recipes)}: "
                             "expected a run of this recipe")
        native = int(train.images.shape[-1])
        return [(ph.get("image_size", native), len(r.training_set(train)))
                for r, ph in zip(recipes, phases) for _ in range(ph["epochs"])]

    def at_flops(self, cost, base_cost, train) -> "Recipe":
        """This recipe cut so that another model spends the training FLOPs that the model it was made for spends:
        `cost(size)` and `base_cost(size)` are one training image's FLOPs of the two at that side
        (`minivit.flops.training_flops_per_image`). Phase by phase, a phase of several epochs gets the nearest
        whole number of epochs (its warm-up scaled with them), and what rounding left over or took goes to the next
        phase; a phase of one epoch gets the images that spend its share (`n_per_class`, per class of `train`, the
        data set the recipe draws from). Named `<name>-flops`, so its checkpoints are its own (04's CNN, 06's
        hybrid)."""
        return _at_flops(self, cost, base_cost, train, carry=0.0)

    def run_name(self, model_name: str) -> str:
        """A checkpoint name for `model_name` trained with this recipe, e.g. "cifar10-quick-n500-e3-ViT-Nano-4"."""
        return f"{self.name}-n{self.n_per_class or 'all'}-e{self.epochs}-{model_name.replace('/', '-')}"

    def with_(self, **changes) -> "Recipe":
        """A copy with fields replaced (an ablation), e.g. `recipe.with_(augment="none")`."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for checkpoints and JSON); equal dicts mean the same training."""
        d = asdict(self)
        d["rand_augment"] = list(self.rand_augment) if self.rand_augment else None
        for k in ("image_size", "then"):  # one phase at the data's size: the keys of the recipes before phases
            if getattr(self, k) is None:
                del d[k]
        if self.then is not None:
            d["then"] = self.then.to_dict()
        return d


RECIPES: dict[str, Recipe] = {
    # Fashion-MNIST (28 px, grey). quick: the benchmark's recipe (benchmarks/README.md, time_to_accuracy.py: 88.64%
    # test top-1 in 60 s on 2 quiet CPU cores, 7 epochs of the whole split), on an epoch schedule instead of the
    # clock; its model: get_preset("ViT-Nano/4", image_size=28, in_channels=1, patch_size=7, depth=2) (P = 7,
    # D = 64, depth 2, 4 heads, 72k parameters). full: notebook 03's full-profile recipe (one GPU).
    "fashion-mnist-quick": Recipe("fashion-mnist-quick", "fashion-mnist", n_per_class=None, epochs=7, batch_size=256,
                                  lr=5e-3, warmup_epochs=0.35, label_smoothing=0.0, augment="none"),
    "fashion-mnist-full": Recipe("fashion-mnist-full", "fashion-mnist", n_per_class=None, epochs=40, batch_size=256,
                                 lr=1e-3, warmup_epochs=3.0, label_smoothing=0.0, augment="basic"),
    # quick: a 2-core CPU in well under a minute per model (3 epochs, 120 steps: notebooks 04-06 watch a model
    # learn; their lessons at length come from the model zoo, 50 epochs of all 50,000 images); full: one GPU, the
    # whole training split. (batch 125 divides the 5,000 images: no short last batch, whose gradient would be the
    # noisiest of the epoch)
    "cifar10-quick": Recipe("cifar10-quick", "cifar10", n_per_class=500, epochs=3, batch_size=125, lr=2e-3,
                            warmup_epochs=1.0, label_smoothing=0.1, augment="basic"),
    # quick for notebook 04's live ViT and CNN: all 50,000 images, 6 epochs at 16 px (a 4 x 4 grid of 4-px
    # patches, 17 tokens, about 4x cheaper a step than at 32 px), then one epoch of 20,000 of them at 32 px with the
    # position embeddings interpolated (§3.2's fine-tuning at a higher resolution). Flips only: at this length the
    # model underfits, and random crops slowed it (measured on 2 CPU cores, 2026-12-02: 45% against 53% after the
    # 16-px phase, both before the 32-px one). The same recipe with fewer epochs trains the CNN at the ViT's FLOPs.
    "cifar10-lowres-quick": Recipe("cifar10-lowres-quick", "cifar10", n_per_class=None, epochs=6, batch_size=256,
                                   lr=3e-3, warmup_epochs=0.5, label_smoothing=0.1, augment="flip", image_size=16,
                                   then=Recipe("cifar10-lowres-quick-32px", "cifar10", n_per_class=2000, epochs=1,
                                               batch_size=256, lr=3e-3, warmup_epochs=0.5, label_smoothing=0.1,
                                               augment="flip")),
    # full: sized for one H100 within the course's budget (each notebook <= 4 min): these small models are bound by
    # per-step overhead, not FLOPs, so big batches (fewer steps); RandAugment batched on the GPU (until 2026-11-27
    # per image in 14 loader workers, which set the pace: 04 took 286 s on one H100 with 16 cores, measured);
    # `benchmarks/full_profile_plan.py` estimates each notebook's minutes. 25 epochs (30 until 2026-11-27, when 04
    # passed in 174 s on an H100): so that 04 stays under 4 min even on a slower host.
    "cifar10-full": Recipe("cifar10-full", "cifar10", n_per_class=None, epochs=25, batch_size=1024, lr=2e-3,
                           warmup_epochs=3.0, label_smoothing=0.1, rand_augment=(2, 9), mixup=True),
    # Imagenette at 128 px (notebook 08). quick, for ViT-Nano/16: 6 epochs (444 steps), about 2 minutes on 2 CPU cores,
    # 50.0% on all 3,925 test photographs, clearly above a linear map of the pixels (40.5%); 3 epochs (until
    # 2026-12-04) gave 44.2%, too close to it. full: not calibrated on a GPU here (RandAugment batched on the GPU).
    "imagenette-quick": Recipe("imagenette-quick", "imagenette", n_per_class=None, epochs=6, batch_size=128, lr=2e-3,
                               warmup_epochs=0.5, label_smoothing=0.1, augment="basic"),
    "imagenette-full": Recipe("imagenette-full", "imagenette", n_per_class=None, epochs=60, batch_size=256, lr=1e-3,
                              warmup_epochs=5.0, label_smoothing=0.1, rand_augment=(2, 9), mixup=True),
    # Imagenette at 64 px, to pre-train at a low resolution before fine-tuning at 128 px (notebook 07): train on
    # `recipe.training_set(train).resized(64)`. Mirror only: the crops sized for 128 px do not fit 64-px images.
    # quick: 6 epochs (444 steps), so that notebook 07 fits its 3 CPU minutes and its live model learns more than a
    # linear map of the same pixels (3 epochs stayed level with it, issue 39); the lessons that need a model trained
    # for long come from the zoo's 100-epoch twin (vit-nano16-imagenette64).
    "imagenette64-quick": Recipe("imagenette64-quick", "imagenette", n_per_class=None, epochs=6, batch_size=128,
                                 lr=2e-3, warmup_epochs=0.5, label_smoothing=0.1, augment="flip"),
    "imagenette64-full": Recipe("imagenette64-full", "imagenette", n_per_class=None, epochs=100, batch_size=512,
                                lr=2e-3, warmup_epochs=5.0, label_smoothing=0.1, augment="flip", mixup=True),
    # 2x2 mosaics of Imagenette labelled by the top-left tile (`minivit.data.make_mosaics`), at 64 px: the
    # position-dependent task of notebooks 07 and 08. No flips (a mirror moves the labelled tile) and no MixUp /
    # CutMix (a pasted box would not carry the label by its area).
    "mosaic64-quick": Recipe("mosaic64-quick", "imagenette", n_per_class=None, epochs=3, batch_size=128, lr=2e-3,
                             warmup_epochs=0.5, label_smoothing=0.1, augment="none"),
    "mosaic64-full": Recipe("mosaic64-full", "imagenette", n_per_class=None, epochs=40, batch_size=512, lr=2e-3,
                            warmup_epochs=3.0, label_smoothing=0.1, augment="none"),
}


def _at_flops(r: Recipe, cost, base_cost, train, carry: float) -> Recipe:
    """`Recipe.at_flops` for one phase and the ones after it; `carry`: FLOPs the phases before left unspent (< 0:
    overspent)."""
    size, classes, n = r.image_size or int(train.images.shape[-1]), len(train.classes), len(r.training_set(train))
    target = r.epochs * n * base_cost(size) + carry  # the base model's FLOPs in this phase, and the carry
    if r.epochs > 1:
        epochs = max(1, round(target / (n * cost(size))))
        cut, spent = r.with_(epochs=epochs, warmup_epochs=r.warmup_epochs * epochs / r.epochs), epochs * n * cost(size)
    else:
        per_class = min(len(train) // classes, max(1, round(target / (cost(size) * classes))))
        cut = r.with_(n_per_class=per_class)
        spent = len(cut.training_set(train)) * cost(size)
    then = _at_flops(r.then, cost, base_cost, train, target - spent) if r.then is not None else None
    return cut.with_(name=f"{r.name}-flops", then=then)


def get(dataset: str, profile) -> Recipe:
    """The course recipe for `dataset` under `profile` (a `minivit.Profile`, or "quick" / "full").

    `dataset` is a recipe family: a `minivit.data` name, or "imagenette64" / "mosaic64" (Imagenette images at
    64 px, mosaics). The error says which of the two arguments is wrong."""
    profile_name = getattr(profile, "name", profile)
    families = sorted({n.rsplit("-", 1)[0] for n in RECIPES})
    profiles = sorted({n.rsplit("-", 1)[1] for n in RECIPES}, reverse=True)
    if dataset not in families:
        raise ValueError(f"no recipes for data set {dataset!r}; recipes exist for {families} "
                         "(imagenette64 and mosaic64 train on imagenette images at 64 px)")
    if profile_name not in profiles:
        raise ValueError(f"unknown profile {profile_name!r} for {dataset!r}; expected one of {profiles}")
    name = f"{dataset}-{profile_name}"
    if name not in RECIPES:
        raise ValueError(f"no recipe {name!r}; expected one of {sorted(RECIPES)}")
    return RECIPES[name]
