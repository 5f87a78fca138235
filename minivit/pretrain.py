"""Self-supervised pre-training with masked patch prediction: the training loop, its evaluation and a cache.

The paper's recipe (App. B.1.2): "We trained our self-supervised model for 1M steps (ca. 14 epochs) with
batch size 4096 on JFT. We use Adam, with a base learning rate of 2·10^-4, warmup of 10k steps and cosine
learning rate decay." Our loop is `minivit.train.fit`'s, with the pretext task in place of the labels:

- AdamW with weight decay on weight matrices only (`minivit.optim.param_groups`; the [mask] embedding is a
  (1, 1, D) token and is not decayed), a linear warm-up then cosine decay to 0 stepped every batch
  (`minivit.optim.lr_factor`), gradient clipping at global norm `clip_grad`, bf16 autocast on CUDA
  (fp16 with a GradScaler on GPUs without bf16);
- every batch: the uint8 images, optionally augmented (`minivit.augment.make_augment`), give the targets
  (`patch_color_codes` of the raw pixels, never the normalised ones) and the normalised input; the
  corruption draws from a generator seeded by `seed`, so a run is reproducible on one device;
- labels are never read: `images` is an `ImageDataset` (its labels ignored, normalised by its name) or a
  uint8 tensor (N, 3, H, W) with a `normalize` callable.

`evaluate_mpp` measures the pretext loss and colour accuracy on held-out images under a fixed corruption;
`pretrain_mpp(..., on_epoch=fn)` calls `fn(epoch, mpp)` before the first epoch and after every epoch, to
measure what the representation is worth as it pre-trains (the paper chose MPP's settings by a few-shot
linear probe, App. B.1.2; `minivit.probe`). `pretrain_mpp_or_load` trains and saves the `MaskedPatchPrediction`
model under `minivit.recipes.checkpoint_dir()/<name>.pt`, or loads it when the same pre-training was done before
(the same settings, model and images), like `minivit.recipes.Recipe.fit_or_load`; with `on_epoch` it also keeps
every epoch's weights, so a loaded run measures the same.

    mpp = MaskedPatchPrediction(ViT.from_preset("ViT-Nano/4"))
    history = pretrain_mpp(mpp, unlabelled, epochs=3, lr=1e-3)    # history.train_loss: the pretext loss
    fine_tune_me = mpp.vit                                          # the pre-trained ViT, its head untouched

Shape legend: B batch, C = 3 channels, H W image size, N patches, K = 512 colours.

Introduced in 09_masked_patch_prediction.ipynb.
"""

from __future__ import annotations

import math
import time
from functools import partial

import torch
from torch import nn

from . import data as mdata
from . import smoke
from .history import History
from .mpp import MaskedPatchPrediction, mpp_loss, patch_color_codes
from .optim import lr_factor, param_groups
from .train import _autocast  # bf16 on CUDA (fp16 on GPUs without bf16), as in fit
from .train.evaluation import grad_scaler

__all__ = ["evaluate_mpp", "pretrain_mpp", "pretrain_mpp_or_load"]


def _images(data, normalize):
    """ImageDataset or uint8 (N, 3, H, W) -> (uint8 images, normalising function); labels are never read."""
    if isinstance(data, mdata.ImageDataset):
        images, norm = data.images, normalize or partial(mdata.normalize, name=data.name)
    elif isinstance(data, torch.Tensor):
        images, norm = data, normalize
        if norm is None:
            raise ValueError("a tensor of images needs `normalize` (e.g. functools.partial(minivit.data.normalize, "
                             "name='cifar10')); an ImageDataset is normalised by its name")
    else:
        raise ValueError(f"expected an ImageDataset or a uint8 tensor (N, 3, H, W), got {type(data).__name__}")
    if images.dtype != torch.uint8 or images.ndim != 4 or images.shape[1] != 3 or len(images) == 0:
        raise ValueError(f"expected a non-empty uint8 tensor of RGB images (N, 3, H, W) (the colour targets are "
                         f"computed from raw pixels), got {images.dtype} {tuple(images.shape)}")
    return images, norm


def _check_mpp(mpp) -> None:
    if not isinstance(mpp, MaskedPatchPrediction):
        raise ValueError(f"expected a minivit.mpp.MaskedPatchPrediction, got {type(mpp).__name__}")


def _call_on_epoch(on_epoch, epoch: int, mpp, device) -> None:
    """`on_epoch(epoch, mpp)` with `mpp` in eval mode and torch's RNG state restored afterwards (no-op for None)."""
    if on_epoch is None:
        return
    mode = mpp.training
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        mpp.eval()
        on_epoch(epoch, mpp)
    mpp.train(mode)


@torch.no_grad()
def evaluate_mpp(mpp: MaskedPatchPrediction, images, batch_size: int = 512, device=None, *, normalize=None,
                 seed: int = 0) -> dict:
    """Pretext loss and colour accuracy on the corrupted patches of `images`: {"loss", "acc", "n"}.

    The corruption comes from a generator seeded with `seed`, so two calls (and two models) see the same
    corrupted positions. `n` counts the corrupted patches. The model ends in the mode it started in.
    """
    _check_mpp(mpp)
    images, norm = _images(images, normalize)
    device = torch.device(device) if device is not None else next(mpp.parameters()).device
    p = mpp.vit.config.patch_size
    gen = torch.Generator(device=device).manual_seed(seed)
    was_training, loss, correct, n = mpp.training, 0.0, 0, 0
    mpp.eval()
    try:
        for i in range(0, len(images), batch_size):
            x = images[i:i + batch_size].to(device)  # (b, 3, H, W) uint8
            with _autocast(device):
                out = mpp(norm(x), generator=gen)
            targets = patch_color_codes(x, p, mpp.bits)  # (b, N)
            k = int(out.mask.sum())
            loss += mpp_loss(out.logits.float(), targets, out.mask).item() * k
            correct += int((out.logits.argmax(-1) == targets)[out.mask].sum())
            n += k
    finally:
        mpp.train(was_training)
    return {"loss": loss / n, "acc": correct / n, "n": n}


def pretrain_mpp(mpp: MaskedPatchPrediction, images, val=None, *, epochs: int, batch_size: int = 128,
                 lr: float = 1e-3, weight_decay: float = 0.05, warmup_epochs: float = 1.0,
                 clip_grad: float | None = 1.0, augment=None, normalize=None, device=None, seed: int = 0,
                 progress: bool = False, on_epoch=None) -> History:
    """Pre-train `mpp` (and so `mpp.vit`) in place on masked patch prediction; return the run's `History`.

    images: unlabelled training images, an `ImageDataset` (labels ignored) or uint8 (N, 3, H, W) with
        `normalize`. val: held-out images of the same kind, evaluated after every epoch with `evaluate_mpp`
        (a fixed corruption), or None. augment: callable on a uint8 batch on the device (e.g.
        `minivit.augment.make_augment("cifar10")`), applied before the targets are computed.
    History fields: train_loss is the mean pretext cross-entropy over corrupted patches, train_acc their
    colour accuracy; val_loss / val_acc the same on `val`; step_lr and step_grad_norm every step's
    learning rate and gradient norm (before clipping). `seed` seeds the shuffling, the augmentation
    and the corruption (and torch's global RNG, as `fit` does). A non-finite loss raises
    FloatingPointError. The model ends in the train/eval mode it started in. A smoke run (`minivit.smoke`)
    caps `epochs` and `batch_size`.
    on_epoch: None, or `on_epoch(epoch, mpp)`, called before the first epoch (epoch 0) and after every epoch
        (1, 2, ...), with `mpp` on the device in eval mode: to measure the model as it pre-trains, e.g. the
        few-shot linear probe the paper chose MPP's settings by (App. B.1.2; `minivit.probe`). It runs under
        its own copy of torch's RNG state, so it does not change the run.
    """
    from tqdm.auto import tqdm

    from .profile import default_device
    _check_mpp(mpp)
    epochs, batch_size, warmup_epochs, _ = smoke.run_size(epochs, batch_size, warmup_epochs)
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"epochs and batch_size must be >= 1 and lr > 0, got {epochs}, {batch_size} and {lr}")
    images, norm = _images(images, normalize)
    if val is not None:
        _images(val, normalize)  # fail before training, not after the first epoch
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        images = images.to(device)  # the whole uint8 set fits on a GPU; no copy per batch
    mpp.to(device)
    was_training, p = mpp.training, mpp.vit.config.patch_size
    torch.manual_seed(seed)
    order_gen = torch.Generator().manual_seed(seed)
    aug_gen = torch.Generator(device=device).manual_seed(seed + 1)
    corrupt_gen = torch.Generator(device=device).manual_seed(seed + 2)
    steps_per_epoch = math.ceil(len(images) / batch_size)
    total, warmup = epochs * steps_per_epoch, round(warmup_epochs * steps_per_epoch)
    optimizer = torch.optim.AdamW(param_groups(mpp, weight_decay), lr=lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, warmup))
    scaler = grad_scaler(device)  # enabled only for fp16 autocast (CUDA GPUs without bf16), as in fit
    history = History(steps_per_epoch=steps_per_epoch)
    _call_on_epoch(on_epoch, 0, mpp, device)
    bar = tqdm(total=total, unit="step", mininterval=1.0, disable=not progress)
    for epoch in range(epochs):
        mpp.train()
        order = torch.randperm(len(images), generator=order_gen)
        sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss * corrupted, correct, corrupted
        grad_norms, t_epoch = [], time.perf_counter()
        for step in range(steps_per_epoch):
            x = images[order[step * batch_size:(step + 1) * batch_size].to(images.device)].to(device)  # (b, 3, H, W)
            x = augment(x, aug_gen) if augment is not None else x  # uint8
            targets = patch_color_codes(x, p, mpp.bits)  # (b, N) from the raw pixels
            with _autocast(device):
                out = mpp(norm(x), generator=corrupt_gen)
            loss = mpp_loss(out.logits.float(), targets, out.mask)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # a no-op unless fp16: clip the true gradients
            grad_norms.append(nn.utils.clip_grad_norm_(mpp.parameters(), clip_grad or float("inf")).detach())
            history.step_lr.append(optimizer.param_groups[0]["lr"])
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            k = out.mask.sum()
            hits = ((out.logits.argmax(-1) == targets) & out.mask).sum()
            sums += torch.stack([loss.detach().double() * k, hits.double(), k.double()])
            if device.type == "cpu" and not torch.isfinite(sums[0]):
                raise FloatingPointError(f"pretext loss is {sums[0].item()} at epoch {epoch + 1}, step {step + 1}: "
                                         "training diverged; lower the learning rate")
            bar.update(1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - t_epoch
        loss_sum, correct, count = sums.tolist()
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"pretext loss is {loss_sum} in epoch {epoch + 1}: training diverged")
        history.step_grad_norm.extend(torch.stack(grad_norms).float().tolist())
        v = evaluate_mpp(mpp, val, device=device, normalize=normalize) if val is not None else {"loss": None, "acc": None}
        history.append(epoch=epoch + 1, train_loss=loss_sum / count, train_acc=correct / count, val_loss=v["loss"],
                       val_acc=v["acc"], lr=history.step_lr[-1], images_per_s=len(images) / seconds,
                       epoch_time=seconds)
        _call_on_epoch(on_epoch, epoch + 1, mpp, device)
    bar.close()
    mpp.train(was_training)
    return history


def pretrain_mpp_or_load(mpp: MaskedPatchPrediction, images, val=None, *, name: str, on_epoch=None,
                         **settings) -> History:
    """Like `pretrain_mpp(mpp, images, val, **settings)`, but first look for `checkpoint_dir()/<name>.pt`
    written by the same pre-training: the same settings (their repr; `device` and `progress` aside), ViT
    config, corruption rates and images (a fingerprint of their bytes). If it is there, load its weights
    into `mpp` and return its History; else pre-train, save atomically, and return the new History. Either way
    `mpp` ends on the run's device (`device=...`, else `pretrain_mpp`'s default).

    on_epoch: as in `pretrain_mpp`. With it, the weights of `mpp` before and after every epoch are kept in
    `checkpoint_dir()/<name>-epochs.pt` (one copy of the model per epoch), and a loaded run calls
    `on_epoch(epoch, mpp)` on them in turn, so what it measures is the same whether the run was trained now
    or loaded (the callback is not part of the key: it only measures). `mpp` ends with the final weights."""
    from .checkpoint import atomic_save
    from .profile import default_device
    from .recipes import checkpoint_dir, fingerprint, train_or_load
    _check_mpp(mpp)

    def bytes_of(d):
        return None if d is None else fingerprint((d.images if hasattr(d, "images") else d, torch.zeros(0)))
    key = {"pretext": "masked patch prediction",
           "settings": {k: repr(v) for k, v in sorted(settings.items()) if k not in ("device", "progress")},
           "model": mpp.vit.config.to_dict(),
           "corruption": [mpp.mask_ratio, mpp.mask_prob, mpp.random_prob, mpp.bits],
           "images": bytes_of(images), "val": bytes_of(val)}
    device = torch.device(settings.get("device") or default_device())
    if on_epoch is None:
        return train_or_load(name, mpp, key, lambda: pretrain_mpp(mpp, images, val, **settings), device=device)
    path, snapshots_path = checkpoint_dir() / f"{name}.pt", checkpoint_dir() / f"{name}-epochs.pt"
    snapshots = _read_snapshots(snapshots_path, key)
    if snapshots is None:  # no weights per epoch for this run: pre-train (again), keeping them
        path.unlink(missing_ok=True)
        kept = {}

        def keep(epoch, model):
            kept[epoch] = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            on_epoch(epoch, model)

        def train():
            history = pretrain_mpp(mpp, images, val, on_epoch=keep, **settings)
            atomic_save({"run": key, "epochs": kept}, snapshots_path)
            return history
        return train_or_load(name, mpp, key, train, device=device)
    history = train_or_load(name, mpp, key, lambda: pretrain_mpp(mpp, images, val, **settings), device=device)
    final = {k: v.detach().clone() for k, v in mpp.state_dict().items()}
    for epoch in sorted(snapshots):
        mpp.load_state_dict(snapshots[epoch])
        _call_on_epoch(on_epoch, epoch, mpp, device)
    mpp.load_state_dict(final)
    return history


def _read_snapshots(path, key) -> dict | None:
    """{epoch: state dict} saved at `path` under `key`, or None (no file, unreadable, or another run)."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return None
    if not isinstance(saved, dict) or saved.get("run") != key or not isinstance(saved.get("epochs"), dict):
        return None
    return saved["epochs"]
