"""The smoke run: every code path a profile selects, with a sliver of its work (MINIVIT_SMOKE=1).

Introduced in 00_start_here.ipynb (the profile line then says "smoke").

    MINIVIT_PROFILE=full MINIVIT_SMOKE=1 pytest --nbval-lax notebooks/

runs the notebooks' *full* profile on a CPU in minutes: the same presets, recipes, batched RandAugment,
MixUp/CutMix, label smoothing, `fit_or_load` keys and bf16 paths (on CUDA), so a crash the GPU would
meet (a tensor on the wrong device, a recipe that cannot be built, a cell that assumes the quick profile's sizes)
shows up on any machine. Only the amount of work shrinks, inside the library, where data is loaded and runs are
sized -- never by editing a notebook's values:

- `minivit.data.load_dataset` returns a stratified `TRAIN_PER_CLASS` / `TEST_PER_CLASS` images per class of
  each split, so every subset a notebook derives from it stays consistent; `stratified_subset` then caps a
  request at what a class has;
- `minivit.train.fit` and `minivit.pretrain.pretrain_mpp` run at most `MAX_EPOCHS` epochs (the warm-up scaled
  with them) of batches of at most `MAX_BATCH` images, and a time budget of at most `MAX_SECONDS`;
- the models `fit_or_load` saves go to `<data root>/checkpoints-smoke`, never over a real run's.

What a smoke run cannot tell: the claims' truth at full scale (`minivit.claims.claim` prints them but does not
check them), real GPU timings, and CUDA kernels (on a CPU they do not run). DataLoader workers are capped by
the CPU cores in every run, smoke or not (`minivit.train.fit`).
"""

from __future__ import annotations

import os

ENV_VAR = "MINIVIT_SMOKE"  # "1" / "true" / "yes" / "on" turn the smoke run on; "", "0", "false", "no", "off" off
TRAIN_PER_CLASS = 40  # images per class of a training split in a smoke run
TEST_PER_CLASS = 30  # images per class of a test split
MAX_EPOCHS = 2  # epochs of any training run
MAX_BATCH = 64  # images per batch
MAX_SECONDS = 10.0  # a time budget, in seconds

_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def active() -> bool:
    """True when $MINIVIT_SMOKE asks for a smoke run; a value that is neither on nor off raises ValueError."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value not in _ON + _OFF:
        raise ValueError(f"environment variable {ENV_VAR}={os.environ[ENV_VAR]!r} is neither on {_ON} nor off "
                         f"{_OFF[1:]} (or unset)")
    return value in _ON


def per_class(split: str) -> int:
    """Images per class that a smoke run keeps of a `split` ("train" or "test")."""
    return TRAIN_PER_CLASS if split == "train" else TEST_PER_CLASS


def run_size(epochs: int, batch_size: int, warmup_epochs: float = 0.0, time_budget: float | None = None):
    """(epochs, batch_size, warmup_epochs, time_budget) of a run, shrunk when a smoke run is active: at most
    `MAX_EPOCHS` epochs with the warm-up scaled by the same factor, batches of at most `MAX_BATCH`, a budget of
    at most `MAX_SECONDS`. Unchanged otherwise."""
    if not active():
        return epochs, batch_size, warmup_epochs, time_budget
    shrunk = min(epochs, MAX_EPOCHS)
    return (shrunk, min(batch_size, MAX_BATCH), warmup_epochs * shrunk / max(epochs, 1),
            None if time_budget is None else min(time_budget, MAX_SECONDS))
