"""The training loop: `train_step` (one batch), `train_one_epoch` (one pass), `fit` (the run around them).

Introduced in 03_transformer_encoder.ipynb (the first training run; part of `minivit.train`).

The recipe takes the paper's ingredients (§4.1, Appendix B.1) with the changes that
small-data ViT training commonly makes; it is not the paper's exact recipe:
- AdamW (decoupled weight decay, default 0.05) without decay on norms, biases, the
  [class] token and the position embeddings (the paper pre-trains with Adam, batch
  4096 and weight decay 0.1 on JFT-300M, 0.03 on ImageNet-21k, 0.3 on ImageNet);
- a linear warm-up, then cosine decay to 0, stepped every batch (the paper: a 10k-step
  warm-up, then linear decay for pre-training and cosine decay for fine-tuning);
- optional label smoothing (default 0); gradient clipping at global norm `clip_grad`
  (default 1, as the paper's fine-tuning and ImageNet-from-scratch runs);
- bf16 autocast on CUDA GPUs with bf16 tensor cores, fp16 with a GradScaler on older ones (a T4;
  `autocast_dtype`); optional `torch.compile`.

Images stay uint8 in memory, go to the device a batch at a time (the whole set at once
on CUDA) and are augmented there, before normalisation (see `minivit.train.evaluation`
for the data forms). Under `torchrun` (torch.distributed initialised) `fit` wraps the
model in DistributedDataParallel: every rank takes its shard of every batch (the global
batch is `batch_size`), metrics are summed over ranks, only rank 0 prints and writes
checkpoints.

Shape legend: B batch, C channels, H W image size, K classes.
"""

from __future__ import annotations

import math
import numbers
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .. import checkpoint as ckpt
from .. import smoke
from ..history import History
from ..optim import budget_lr_factor, lr_factor, param_groups
from .evaluation import _all_sum, _autocast, _dist, _unpack, evaluate, grad_scaler


_NO_SCALER = torch.amp.GradScaler("cpu", enabled=False)  # passes the loss and the optimizer's step through


def train_step(net: nn.Module, optimizer, x: torch.Tensor, target: torch.Tensor, *, label_smoothing: float = 0.0,
               clip_grad: float | None = 1.0, scaler=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One optimisation step on a normalised batch: forward (autocast on CUDA: `autocast_dtype`), cross-entropy in
    float32, backward, the global gradient norm clipped at `clip_grad` (None or 0: not clipped), the optimizer's step.
    scaler: a `torch.amp.GradScaler` (`grad_scaler(device)`: enabled for fp16) or None; an enabled one scales the
    loss, unscales the gradients before clipping, and skips a step with inf/NaN gradients.

    x: (b, C, H, W) float on the model's device; target: labels (b,) or soft targets (b, K) (after MixUp).
    Returns (loss (), logits (b, K), gradient norm before clipping ()), detached; nothing is read back to
    the CPU, so the GPU is never waited for.
    """
    with _autocast(x.device):
        logits = net(x)  # (b, K)
    loss = F.cross_entropy(logits.float(), target, label_smoothing=label_smoothing)
    scaler = scaler or _NO_SCALER
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # clip the true gradients
    grad_norm = nn.utils.clip_grad_norm_(ckpt.unwrap(net).parameters(), clip_grad or float("inf"))
    scaler.step(optimizer)  # skipped (enabled scaler) when the gradients hold inf/NaN
    scaler.update()
    return loss.detach(), logits.detach(), grad_norm.detach()


def train_one_epoch(net: nn.Module, batches, optimizer, scheduler, *, prepare, epoch: int, steps: int,
                    label_smoothing: float = 0.0, clip_grad: float | None = 1.0, after_step=None,
                    history: History | None = None, bar=None, check_every: int = 1, scaler=None) -> dict:
    """One pass over `batches` (uint8 images (b, C, H, W), labels (b,)), one `train_step` each.

    prepare: (x, y) on the device -> (normalised x, target, labels for the accuracy): augmentation,
        normalisation and batch mixing. scheduler: stepped after every optimizer step.
    after_step: called after every step (before the scheduler's step); returns True when the time budget
        is spent, which ends the epoch early. epoch (1-based) and steps (a full epoch's) label the progress
        and errors. history: gets every step's learning rate (`step_lr`). check_every: steps between
        checks that the running loss is finite (each check waits for the device). scaler: as in `train_step`.
    Returns {"sums": float64 (3,) tensor of loss * b, correct, b on the device, "grad_norms": a list of
    0-d tensors, "seconds", "stopped": why the epoch ended early, or None}. A non-finite loss raises
    FloatingPointError.
    """
    device = next(ckpt.unwrap(net).parameters()).device
    net.train()
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss * b, correct, b
    grad_norms, stopped = [], None  # (steps,) 0-d tensors, read once per epoch (no device sync per step)
    t_epoch = time.perf_counter()
    for step, (x, y) in enumerate(batches):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)  # (b, C, H, W) uint8, (b,)
        x, target, y = prepare(x, y)  # (b, C, H, W) float; (b,) or (b, K); (b,)
        step_lr = optimizer.param_groups[0]["lr"]
        if history is not None:
            history.step_lr.append(step_lr)
        loss, logits, grad_norm = train_step(net, optimizer, x, target, label_smoothing=label_smoothing,
                                             clip_grad=clip_grad, scaler=scaler)
        grad_norms.append(grad_norm)
        over = after_step() if after_step is not None else False
        scheduler.step()
        sums[0] += loss * len(y)
        sums[1] += (logits.argmax(-1) == y).sum()
        sums[2] += len(y)
        if (step + 1) % check_every == 0 or step == steps - 1 or over:
            if not torch.isfinite(sums[0]):
                raise FloatingPointError(
                    f"loss is {sums[0].item()} at epoch {epoch}, step {step + 1} (lr {step_lr:.3g}): "
                    "training diverged; lower the learning rate or check the inputs")
            if bar is not None:
                world = _dist()[1]
                bar.set_postfix(loss=f"{sums[0].item() / sums[2].item():.3f}", acc=f"{sums[1].item() / sums[2].item():.3f}",
                                img_s=f"{world * sums[2].item() / (time.perf_counter() - t_epoch):.0f}", refresh=False)
        if bar is not None:
            bar.update(1)
        if over:
            stopped = f"step {step + 1}"
            break
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return {"sums": sums, "grad_norms": grad_norms, "seconds": time.perf_counter() - t_epoch, "stopped": stopped}


def fit(model: nn.Module, train, val=None, *, epochs: int, batch_size: int = 128, lr: float = 1e-3,
        weight_decay: float = 0.05, warmup_epochs: float = 1.0, label_smoothing: float = 0.0,
        clip_grad: float | None = 1.0, augment=None, transform=None, workers: int = 0, mix=None,
        normalize=None, device=None, compile: bool = False,
        seed: int | None = 0, checkpoint=None, resume: bool = False, overwrite: bool = False, progress: bool = True,
        time_budget: float | None = None, schedule: str = "epochs", eval_batch_size: int | None = None,
        on_epoch_end=None) -> History:
    """Train `model` in place for `epochs` epochs; return the run's `History`.

    train, val: ImageDataset or (images, labels) (see `minivit.train.evaluation`); `normalize` overrides
        the normalising function for both. augment: callable on a uint8 batch (B, C, H, W) on the
        device, e.g. `minivit.data.make_augment("cifar10")` or `minivit.augment.BatchRandAugment("cifar10")`
        (RandAugment batched on the GPU: what the full recipes use), or None.
    transform: per-image augmentation, a callable on one uint8 image (C, H, W) on the CPU, e.g.
        `minivit.augment.rand_augment("cifar10")`; it runs in `workers` DataLoader processes (0: in this
        one), seeded from `seed`, so the run is reproducible for a given number of workers. On a fast GPU such
        a loader can set the pace (the full recipes' RandAugment in 14 workers did: about 3.5 s an epoch of
        CIFAR-10 on one H100 with 16 cores, measured), hence `BatchRandAugment` for the recipes.
    mix: batch mixing after normalisation, `(x (B, C, H, W) float, y (B,)) -> (x, soft targets (B, K))` on
        the device, e.g. `minivit.augment.mixup_cutmix(10)`; the loss then uses the soft targets and the
        training accuracy counts the dominant one.
    lr: peak learning rate (finite, >= 0). weight_decay: >= 0. label_smoothing: in [0, 1).
    warmup_epochs: linear warm-up length (fractions allowed, at most `epochs`), then cosine decay to 0 at `epochs`.
    clip_grad: max global gradient norm (> 0), or None / 0 for no clipping. device: default CUDA > MPS > CPU.
    seed: seeds torch's global RNG with `seed + rank` (dropout and augmentation draw from it) and a
        private generator for the shuffling; same seed on CPU -> same run. `seed=None` leaves the global
        RNG as it is.
    checkpoint: path written (atomically, rank 0) after every epoch. A file already there is replaced only
        when it holds this same run (the same model config and batch size, training-set size and processes),
        or with `overwrite=True`; otherwise fit refuses before training (FileExistsError), so one run never
        silently replaces another's checkpoint.
    resume: continue from `checkpoint` if it exists (model, optimizer, schedule, history, RNG); `epochs` is the
        run's total length, so resuming a 4-epoch run stopped after 2 reproduces the straight run.
    time_budget: seconds (>= 0) after which no more steps are taken (the partial epoch is recorded).
    schedule: "epochs" -- the warm-up and cosine run over `epochs` epochs of steps (reproducible: the same
        steps on any machine; a time budget only cuts it short); "budget" -- they run on the clock over
        `time_budget` seconds (the warm-up takes the fraction warmup_epochs / epochs of it), so the
        learning rate reaches 0 when the budget is spent, on a fast machine or a slow one; `epochs` is
        then only an upper bound. "budget" cannot resume.
    eval_batch_size: the batch of the validation passes (default: `evaluate`'s, 512 on a GPU, 128 on the CPU).
    on_epoch_end: called with the History after each epoch; returning True stops the run.
    Arguments out of range raise ValueError before anything runs. A non-finite loss raises FloatingPointError.
    The model ends in the train/eval mode it started in.
    `workers` is capped by the CPU cores; a smoke run (`minivit.smoke`) caps `epochs` and `batch_size`.
    """
    from ..profile import default_device
    epochs, batch_size, warmup_epochs, time_budget = smoke.run_size(epochs, batch_size, warmup_epochs, time_budget)
    _check_arguments(epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                     warmup_epochs=warmup_epochs, label_smoothing=label_smoothing, clip_grad=clip_grad,
                     time_budget=time_budget, schedule=schedule, resume=resume)
    rank, world = _dist()
    if batch_size % world:
        raise ValueError(f"batch_size {batch_size} must be divisible by the number of processes {world}")
    device = torch.device(device) if device is not None else default_device()
    images, labels, norm = _unpack(train, normalize)
    k = getattr(getattr(model, "config", None), "num_classes", None)
    if k is not None and int(labels.max()) >= k:
        raise ValueError(f"labels go up to {int(labels.max())} but the model has num_classes={k}")
    if workers < 0 or (workers and transform is None):
        raise ValueError(f"workers must be >= 0 and needs a per-image transform, got workers={workers}")
    workers = min(workers, _cpu_count())  # more processes than cores only queue
    run = {"batch_size": batch_size, "n_train": len(labels), "world_size": world}
    if checkpoint is not None and not resume and not overwrite:
        _refuse_to_replace_another_run(Path(checkpoint), model, run)
    if device.type == "cuda" and transform is None:  # the whole uint8 set fits on a GPU; no copy per batch
        images, labels = images.to(device), labels.to(device)
    model.to(device)
    was_training = model.training
    gen = torch.Generator()
    if seed is not None:  # shuffling: the same order on every rank; augmentation, dropout: a stream per rank
        torch.manual_seed(seed + rank)
        gen.manual_seed(seed)

    # The optimizer and the learning-rate schedule (stepped every batch).
    n = len(labels) + (-len(labels)) % world  # padded so every rank gets the same number (DistributedSampler)
    steps_per_epoch = math.ceil(n / batch_size)
    total, warmup = epochs * steps_per_epoch, round(warmup_epochs * steps_per_epoch)
    optimizer = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr)
    clock = [0.0]  # budget schedule: the fraction of the time budget spent, updated after every step
    factor = ((lambda s: budget_lr_factor(clock[0], warmup_epochs / epochs)) if schedule == "budget"
              else (lambda s: lr_factor(s, total, warmup)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    # A resumed run takes up the model, optimizer, schedule, history and RNG where the checkpoint left them.
    history, start = History(steps_per_epoch=steps_per_epoch), 0
    if resume and checkpoint is not None and Path(checkpoint).exists():
        state = ckpt.load_checkpoint(checkpoint, model, optimizer=optimizer, scheduler=scheduler, run=run)
        history, start = History.from_dict(state["history"]), state["epoch"]
        history.stopped = None  # the run goes on
        ckpt.set_rng_state(state["rng"], gen)

    # The batches: this rank's share of each epoch's shuffled order, through DataLoader workers with a transform.
    sampler = _EpochBatches(batch_size, steps_per_epoch, rank, world)
    loader = None if transform is None else torch.utils.data.DataLoader(
        _TransformedImages(images, labels, transform), batch_sampler=sampler, num_workers=workers,
        pin_memory=device.type == "cuda", persistent_workers=workers > 0,
        generator=torch.Generator().manual_seed((seed or 0) * 1000 + rank))  # seeds the workers
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    net = torch.compile(net) if compile else net
    scaler = grad_scaler(device)  # enabled only for fp16 autocast (CUDA GPUs without bf16)

    def prepare(x, y):  # uint8 (b, C, H, W), (b,) on the device -> normalised x, target, labels for the accuracy
        x = norm(augment(x) if augment is not None else x)  # (b, C, H, W) float
        if mix is None:
            return x, y, y
        x, target = mix(x, y)  # soft targets (b, K)
        return x, target, target.argmax(-1)  # the dominant class, for the training accuracy

    t0 = time.perf_counter()

    def budget_spent() -> bool:  # after every step: move the budget schedule's clock; is the time budget spent?
        elapsed = time.perf_counter() - t0
        if time_budget is not None and world > 1:  # every rank stops at the same step, with the same lr
            elapsed = _all_sum([elapsed], device)[0] / world
        if schedule == "budget":
            clock[0] = min(1.0, elapsed / time_budget)
        return time_budget is not None and elapsed > time_budget

    bar = tqdm(total=total, initial=start * steps_per_epoch, unit="step", mininterval=1.0, disable=not progress or rank != 0)
    for epoch in range(start, epochs):
        bar.set_description(f"epoch {epoch + 1}/{epochs}")
        order = torch.randperm(len(labels), generator=gen)
        sampler.order = torch.cat([order, order[:n - len(order)]])  # (n,)
        batches = loader if loader is not None else ((images[i], labels[i]) for i in (
            idx.to(images.device) for idx in sampler))
        out = train_one_epoch(net, batches, optimizer, scheduler, prepare=prepare, epoch=epoch + 1,
                              steps=steps_per_epoch, label_smoothing=label_smoothing, clip_grad=clip_grad,
                              after_step=budget_spent, history=history, bar=bar,
                              check_every=1 if device.type == "cpu" else 25, scaler=scaler)
        if out["stopped"]:
            history.stopped = f"time budget of {time_budget:g} s reached at epoch {epoch + 1}, {out['stopped']}"
        history.step_grad_norm.extend(torch.stack(out["grad_norms"]).float().tolist())
        loss_sum, correct, count = _all_sum(out["sums"].tolist(), device)
        v = (evaluate(model, val, eval_batch_size, device, normalize=normalize, distributed=world > 1)
             if val is not None else {"loss": None, "acc": None})
        history.append(epoch=epoch + 1, train_loss=loss_sum / count, train_acc=correct / count,
                       val_loss=v["loss"], val_acc=v["acc"], lr=history.step_lr[-1], images_per_s=count / out["seconds"],
                       epoch_time=out["seconds"])
        if on_epoch_end is not None and on_epoch_end(history) and history.stopped is None:
            history.stopped = f"on_epoch_end asked to stop after epoch {epoch + 1}"
        if checkpoint is not None and rank == 0:
            ckpt.save_checkpoint(checkpoint, model, optimizer=optimizer, scheduler=scheduler, history=history.to_dict(),
                                 epoch=epoch + 1, rng=ckpt.get_rng_state(gen), run=run)
        if history.stopped:
            break
    bar.close()
    model.train(was_training)
    return history


def _finite(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _check_arguments(*, epochs, batch_size, lr, weight_decay, warmup_epochs, label_smoothing, clip_grad,
                     time_budget, schedule, resume) -> None:
    """ValueError naming the first of fit's arguments that is out of range (before anything runs)."""
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs} and {batch_size}")
    if not _finite(lr) or lr < 0:
        raise ValueError(f"lr must be a finite number >= 0 (the peak learning rate), got {lr!r}")
    if not _finite(weight_decay) or weight_decay < 0:
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
    if not _finite(warmup_epochs) or not 0 <= warmup_epochs <= epochs:
        raise ValueError(f"warmup_epochs must lie in [0, epochs] = [0, {epochs:g}], got {warmup_epochs!r}: a warm-up "
                         "longer than the run never reaches the peak learning rate")
    if not _finite(label_smoothing) or not 0 <= label_smoothing < 1:
        raise ValueError(f"label_smoothing must lie in [0, 1), got {label_smoothing!r}")
    if clip_grad is not None and (not _finite(clip_grad) or clip_grad < 0):
        raise ValueError(f"clip_grad must be a max gradient norm > 0, or None or 0 for no clipping, got {clip_grad!r} "
                         "(a negative norm would flip the gradients)")
    if time_budget is not None and (not _finite(time_budget) or time_budget < 0):
        raise ValueError(f"time_budget must be a number of seconds >= 0, or None, got {time_budget!r}")
    if schedule not in ("epochs", "budget"):
        raise ValueError(f"schedule must be 'epochs' or 'budget', got {schedule!r}")
    if schedule == "budget" and (time_budget is None or time_budget <= 0 or resume):
        raise ValueError("schedule='budget' needs a positive time_budget (seconds) and cannot resume")


def _refuse_to_replace_another_run(path: Path, model: nn.Module, run: dict) -> None:
    """FileExistsError when `path` holds something other than a checkpoint of this run (config and run facts)."""
    if path.is_dir():
        raise IsADirectoryError(f"checkpoint={str(path)!r} is a folder; pass the path of a file in it, e.g. "
                                f"{str(path / 'checkpoint.pt')!r}")
    if not path.exists():
        return
    fix = ("pass resume=True to continue it, overwrite=True to replace it, or another checkpoint path; "
           "nothing was changed")
    try:
        state = ckpt.read_checkpoint(path)
    except ValueError as e:
        raise FileExistsError(f"{path} exists and fit would replace it, but it is not a minivit checkpoint ({e}); "
                              f"{fix}") from e
    mine, theirs = ckpt._config_dict(model), state.get("config")
    differences = ckpt._differences(mine or {}, theirs or {}, prefix="config.") if mine != theirs else []
    if state.get("run") != run:
        differences += ckpt._differences(run, state.get("run") or {})
    if differences:
        raise FileExistsError(f"{path} holds another run ({'; '.join(differences)}), which fit would replace after "
                              f"its first epoch; {fix}")


def _cpu_count() -> int:
    """The CPU cores this process may use (`minivit.profile.cpu_cores`)."""
    from ..profile import cpu_cores
    return cpu_cores()


class _TransformedImages(torch.utils.data.Dataset):
    """One uint8 image (C, H, W) through a per-image `transform`, with its label (for DataLoader workers)."""

    def __init__(self, images, labels, transform):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), self.labels[i]


class _EpochBatches:
    """Batch sampler: this rank's share of every batch of the current epoch's `order` (set before each epoch)."""

    def __init__(self, batch_size, steps, rank, world):
        self.batch_size, self.steps, self.rank, self.world, self.order = batch_size, steps, rank, world, None

    def __len__(self):
        return self.steps

    def __iter__(self):
        for step in range(self.steps):
            yield self.order[step * self.batch_size:(step + 1) * self.batch_size][self.rank::self.world]  # (b,)


__all__ = ["fit", "train_one_epoch", "train_step"]
