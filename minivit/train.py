"""Training: `fit`, `evaluate`, `predict` and the `History` of a run.

Introduced in 03_transformer_encoder.ipynb (the first training run).

The recipe takes the paper's ingredients (§4.1, Appendix B.1) with the changes that
small-data ViT training commonly makes; it is not the paper's exact recipe:
- AdamW (decoupled weight decay, default 0.05) without decay on norms, biases, the
  [class] token and the position embeddings (the paper pre-trains with Adam, batch
  4096 and weight decay 0.1 on JFT-300M, 0.03 on ImageNet-21k, 0.3 on ImageNet);
- a linear warm-up, then cosine decay to 0, stepped every batch (the paper: a 10k-step
  warm-up, then linear decay for pre-training and cosine decay for fine-tuning);
- optional label smoothing (default 0); gradient clipping at global norm `clip_grad`
  (default 1, as the paper's fine-tuning and ImageNet-from-scratch runs);
- bf16 autocast on CUDA; optional `torch.compile`.

Data is an `ImageDataset` (normalised with `minivit.data.normalize` and the data
set's name) or an `(images, labels)` pair: uint8 images are scaled to [0, 1], float
ones used as they are, unless a `normalize` callable is given. Images stay uint8 in
memory, go to the device a batch at a time (the whole set at once on CUDA) and are
augmented there, before normalisation.

Under `torchrun` (torch.distributed initialised) `fit` wraps the model in
DistributedDataParallel: every rank takes its shard of every batch (the global
batch is `batch_size`), metrics are summed over ranks, only rank 0 prints and
writes checkpoints.

    history = fit(model, train, test, epochs=10, batch_size=256, lr=1e-3)
    history.final["val_acc"], history.plot()

Shape legend: B batch, C channels, H W image size, K classes.
"""

from __future__ import annotations

import math
import os
import time
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from . import checkpoint as ckpt
from . import data as mdata
from . import smoke
from .history import History
from .optim import budget_lr_factor, lr_factor, param_groups

__all__ = ["History", "evaluate", "fit", "lr_factor", "budget_lr_factor", "param_groups", "predict"]

def _unpack(data, normalize=None):
    """ImageDataset or (images, labels) -> (images (N, C, H, W), labels (N,), normalising function)."""
    if isinstance(data, mdata.ImageDataset):
        images, labels, default = data.images, data.labels, partial(mdata.normalize, name=data.name)
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        images, labels = data
        default = (lambda x: x.float() / 255) if images.dtype == torch.uint8 else (lambda x: x)
    else:
        raise TypeError(f"expected an ImageDataset or an (images, labels) pair, got {type(data).__name__}")
    if images.ndim != 4 or labels.ndim != 1 or len(images) != len(labels) or len(labels) == 0:
        raise ValueError(f"expected images (N, C, H, W) and labels (N,) with N > 0, got "
                         f"{tuple(images.shape)} and {tuple(labels.shape)}")
    return images, labels.long(), normalize or default


def _dist() -> tuple[int, int]:
    """(rank, world size); (0, 1) when torch.distributed is not initialised."""
    d = torch.distributed
    return (d.get_rank(), d.get_world_size()) if d.is_available() and d.is_initialized() else (0, 1)


def _all_sum(values: list[float], device) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if _dist()[1] > 1:
        torch.distributed.all_reduce(t)
    return t.tolist()


def _cpu_count() -> int:
    """The CPU cores this process may use (its affinity where the OS reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _autocast(device: torch.device):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


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


@torch.no_grad()
def _outputs(model, data, batch_size, device, normalize, distributed, progress, desc):
    """Yield (logits (b, K) float32, labels (b,)) over this rank's share of `data`, in order."""
    images, labels, norm = _unpack(data, normalize)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    rank, world = _dist() if distributed else (0, 1)
    idx = torch.arange(rank, len(labels), world)
    was_training = model.training
    model.eval()
    try:
        for i in tqdm(range(0, len(idx), batch_size), desc=desc, leave=False, disable=not progress or rank != 0):
            j = idx[i:i + batch_size]
            x = norm(images[j].to(device, non_blocking=True))  # (b, C, H, W)
            with _autocast(device):
                yield model(x).float(), labels[j].to(device)  # (b, K), (b,)
    finally:
        model.train(was_training)


def evaluate(model: nn.Module, data, batch_size: int = 512, device=None, *, normalize=None,
             distributed: bool = False, progress: bool = False) -> dict:
    """Mean cross-entropy and top-1 accuracy of `model` on `data`: {"loss", "acc", "n"}.

    `device` defaults to the model's. With `distributed=True` (every rank calls it) each rank
    evaluates a shard and the sums are all-reduced, so all ranks return the same numbers.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    loss = correct = n = 0.0
    for logits, y in _outputs(model, data, batch_size, device, normalize, distributed, progress, "eval"):
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(-1) == y).sum().item()
        n += len(y)
    loss, correct, n = _all_sum([loss, correct, n], device) if distributed else (loss, correct, n)
    return {"loss": loss / n, "acc": correct / n, "n": int(n)}


def predict(model: nn.Module, data, batch_size: int = 512, device=None, *, normalize=None,
            progress: bool = False) -> torch.Tensor:
    """Logits float32 (N, K) on the CPU, in the order of `data`."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    return torch.cat([lg.cpu() for lg, _ in _outputs(model, data, batch_size, device, normalize, False, progress, "predict")])


def fit(model: nn.Module, train, val=None, *, epochs: int, batch_size: int = 128, lr: float = 1e-3,
        weight_decay: float = 0.05, warmup_epochs: float = 1.0, label_smoothing: float = 0.0,
        clip_grad: float | None = 1.0, augment=None, transform=None, workers: int = 0, mix=None,
        normalize=None, device=None, compile: bool = False,
        seed: int | None = 0, checkpoint=None, resume: bool = False, progress: bool = True,
        time_budget: float | None = None, schedule: str = "epochs", eval_batch_size: int = 512,
        on_epoch_end=None) -> History:
    """Train `model` in place for `epochs` epochs; return the run's `History`.

    train, val: ImageDataset or (images, labels) (see the module docstring); `normalize` overrides
        the normalising function for both. augment: callable on a uint8 batch (B, C, H, W) on the
        device, e.g. `minivit.data.make_augment("cifar10")`, or None.
    transform: per-image augmentation, a callable on one uint8 image (C, H, W) on the CPU, e.g.
        `minivit.augment.rand_augment("cifar10")`; it runs in `workers` DataLoader processes (0: in this
        one), seeded from `seed`, so the run is reproducible for a given number of workers.
    mix: batch mixing after normalisation, `(x (B, C, H, W) float, y (B,)) -> (x, soft targets (B, K))` on
        the device, e.g. `minivit.augment.mixup_cutmix(10)`; the loss then uses the soft targets and the
        training accuracy counts the dominant one.
    warmup_epochs: linear warm-up length (fractions allowed), then cosine decay to 0 at `epochs`.
    clip_grad: max global gradient norm, or None. device: default CUDA > MPS > CPU.
    seed: seeds torch's global RNG with `seed + rank` (dropout and augmentation draw from it) and a
        private generator for the shuffling; same seed on CPU -> same run. `seed=None` leaves the global
        RNG as it is. checkpoint: path written (atomically, rank 0) after every epoch. resume: continue
        from `checkpoint` if it exists (model, optimizer, schedule, history, RNG); `epochs` is the
        run's total length, so resuming a 4-epoch run stopped after 2 reproduces the straight run.
    time_budget: seconds after which no more steps are taken (the partial epoch is recorded).
    schedule: "epochs" -- the warm-up and cosine run over `epochs` epochs of steps (reproducible: the same
        steps on any machine; a time budget only cuts it short); "budget" -- they run on the clock over
        `time_budget` seconds (the warm-up takes the fraction warmup_epochs / epochs of it), so the
        learning rate reaches 0 when the budget is spent, on a fast machine or a slow one; `epochs` is
        then only an upper bound. "budget" cannot resume.
    on_epoch_end: called with the History after each epoch; returning True stops the run.
    A non-finite loss raises FloatingPointError. The model ends in the train/eval mode it started in.
    `workers` is capped by the CPU cores; a smoke run (`minivit.smoke`) caps `epochs` and `batch_size`.
    """
    from .profile import default_device
    epochs, batch_size, warmup_epochs, time_budget = smoke.run_size(epochs, batch_size, warmup_epochs, time_budget)
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs} and {batch_size}")
    if schedule not in ("epochs", "budget"):
        raise ValueError(f"schedule must be 'epochs' or 'budget', got {schedule!r}")
    if schedule == "budget" and (time_budget is None or time_budget <= 0 or resume):
        raise ValueError("schedule='budget' needs a positive time_budget (seconds) and cannot resume")
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
    if device.type == "cuda" and transform is None:  # the whole uint8 set fits on a GPU; no copy per batch
        images, labels = images.to(device), labels.to(device)
    model.to(device)
    was_training = model.training
    gen = torch.Generator()
    if seed is not None:  # shuffling: the same order on every rank; augmentation, dropout: a stream per rank
        torch.manual_seed(seed + rank)
        gen.manual_seed(seed)
    n = len(labels) + (-len(labels)) % world  # padded so every rank gets the same number (DistributedSampler)
    steps_per_epoch = math.ceil(n / batch_size)
    total, warmup = epochs * steps_per_epoch, round(warmup_epochs * steps_per_epoch)
    optimizer = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr)
    clock = [0.0]  # budget schedule: the fraction of the time budget spent, updated after every step
    factor = ((lambda s: budget_lr_factor(clock[0], warmup_epochs / epochs)) if schedule == "budget"
              else (lambda s: lr_factor(s, total, warmup)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    run = {"batch_size": batch_size, "n_train": len(labels), "world_size": world}
    history, start = History(steps_per_epoch=steps_per_epoch), 0
    if resume and checkpoint is not None and Path(checkpoint).exists():
        state = ckpt.load_checkpoint(checkpoint, model, optimizer=optimizer, scheduler=scheduler, run=run)
        history, start = History.from_dict(state["history"]), state["epoch"]
        history.stopped = None  # the run goes on
        ckpt.set_rng_state(state["rng"], gen)
    sampler = _EpochBatches(batch_size, steps_per_epoch, rank, world)
    loader = None if transform is None else torch.utils.data.DataLoader(
        _TransformedImages(images, labels, transform), batch_sampler=sampler, num_workers=workers,
        pin_memory=device.type == "cuda", persistent_workers=workers > 0,
        generator=torch.Generator().manual_seed((seed or 0) * 1000 + rank))  # seeds the workers
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    net = torch.compile(net) if compile else net
    t0, check_every = time.perf_counter(), 1 if device.type == "cpu" else 25
    bar = tqdm(total=total, initial=start * steps_per_epoch, unit="step", mininterval=1.0, disable=not progress or rank != 0)
    for epoch in range(start, epochs):
        net.train()
        bar.set_description(f"epoch {epoch + 1}/{epochs}")
        order = torch.randperm(len(labels), generator=gen)
        sampler.order = torch.cat([order, order[:n - len(order)]])  # (n,)
        batches = loader if loader is not None else ((images[i], labels[i]) for i in (
            idx.to(images.device) for idx in sampler))
        sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss * b, correct, b
        grad_norms = []  # (steps,) 0-d tensors, read once per epoch (no device sync per step)
        t_epoch = time.perf_counter()
        for step, (x, y) in enumerate(batches):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)  # (b, C, H, W) uint8, (b,)
            x = norm(augment(x) if augment is not None else x)  # (b, C, H, W) float
            target = y if mix is None else mix(x, y)  # (b,) labels, or soft targets (b, K) after mixing
            if mix is not None:
                x, target = target
                y = target.argmax(-1)  # (b,): the dominant class, for the training accuracy
            with _autocast(device):
                logits = net(x)  # (b, K)
            loss = F.cross_entropy(logits.float(), target, label_smoothing=label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norms.append(nn.utils.clip_grad_norm_(model.parameters(), clip_grad or float("inf")).detach())
            step_lr = optimizer.param_groups[0]["lr"]
            history.step_lr.append(step_lr)
            optimizer.step()
            elapsed = time.perf_counter() - t0
            if time_budget is not None and world > 1:  # every rank stops at the same step, with the same lr
                elapsed = _all_sum([elapsed], device)[0] / world
            if schedule == "budget":
                clock[0] = min(1.0, elapsed / time_budget)
            scheduler.step()
            sums[0] += loss.detach() * len(y)
            sums[1] += (logits.argmax(-1) == y).sum()
            sums[2] += len(y)
            last = step == steps_per_epoch - 1
            over = time_budget is not None and elapsed > time_budget
            if (step + 1) % check_every == 0 or last or over:
                if not torch.isfinite(sums[0]):
                    raise FloatingPointError(
                        f"loss is {sums[0].item()} at epoch {epoch + 1}, step {step + 1} (lr {step_lr:.3g}): "
                        "training diverged; lower the learning rate or check the inputs")
                bar.set_postfix(loss=f"{sums[0].item() / sums[2].item():.3f}", acc=f"{sums[1].item() / sums[2].item():.3f}",
                                img_s=f"{world * sums[2].item() / (time.perf_counter() - t_epoch):.0f}", refresh=False)
            bar.update(1)
            if over:
                history.stopped = f"time budget of {time_budget:g} s reached at epoch {epoch + 1}, step {step + 1}"
                break
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - t_epoch
        history.step_grad_norm.extend(torch.stack(grad_norms).float().tolist())
        loss_sum, correct, count = _all_sum(sums.tolist(), device)
        v = (evaluate(model, val, eval_batch_size, device, normalize=normalize, distributed=world > 1)
             if val is not None else {"loss": None, "acc": None})
        history.append(epoch=epoch + 1, train_loss=loss_sum / count, train_acc=correct / count,
                       val_loss=v["loss"], val_acc=v["acc"], lr=step_lr, images_per_s=count / seconds,
                       epoch_time=seconds)
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


if __name__ == "__main__":  # python -m minivit.train ... (see minivit/cli.py)
    import sys
    from .cli import main
    sys.exit(main())
