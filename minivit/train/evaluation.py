"""`evaluate` and `predict`: a model run over a data set in batches, in eval mode; the data and process helpers
that `fit` shares with them.

Introduced in 03_transformer_encoder.ipynb (part of `minivit.train`).

Data is an `ImageDataset` (normalised with `minivit.data.normalize` and the data set's name) or an
`(images, labels)` pair: uint8 images are scaled to [0, 1], float ones used as they are, unless a `normalize`
callable is given. Under torch.distributed, `distributed=True` shards the data over the ranks and sums the
metrics.

Shape legend: B batch, C channels, H W image size, K classes.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .. import data as mdata


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


def eval_batch_size(device) -> int:
    """The default batch of `evaluate` and `predict`: 512 on a GPU; 128 on the CPU, where a batch of 512 took 17-24%
    longer for four of the course's five models and as long for the fifth (`benchmarks/eval_batch.py`)."""
    return 512 if torch.device(device).type == "cuda" else 128


def _dist() -> tuple[int, int]:
    """(rank, world size); (0, 1) when torch.distributed is not initialised."""
    d = torch.distributed
    return (d.get_rank(), d.get_world_size()) if d.is_available() and d.is_initialized() else (0, 1)


def _all_sum(values: list[float], device) -> list[float]:
    """`values` summed over every rank (as they are with one process)."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if _dist()[1] > 1:
        torch.distributed.all_reduce(t)
    return t.tolist()


def autocast_dtype(device) -> torch.dtype | None:
    """The mixed precision of `fit`, `evaluate` and `pretrain_mpp` on `device`: bf16 on a CUDA GPU with bf16 tensor
    cores (compute capability >= 8.0, `minivit.profile.FULL_MIN_CAPABILITY`); fp16 on an older CUDA GPU (a T4,
    7.5, runs bf16 by emulation, without tensor cores; fp16 there needs a GradScaler, which `fit` adds); None (fp32)
    on any other device."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    from ..profile import FULL_MIN_CAPABILITY
    try:
        capability = torch.cuda.get_device_capability(device)
    except (RuntimeError, AssertionError):  # no GPU answers (a CUDA device stood in for in tests): bf16, as before
        return torch.bfloat16
    return torch.bfloat16 if capability >= FULL_MIN_CAPABILITY else torch.float16


def grad_scaler(device) -> torch.amp.GradScaler:
    """A GradScaler for training on `device`: enabled only where `autocast_dtype(device)` is fp16 (whose small
    gradients underflow unscaled); disabled, it passes the loss and the optimizer's step through unchanged."""
    device = torch.device(device)
    return torch.amp.GradScaler(device.type if device.type == "cuda" else "cpu",
                                enabled=autocast_dtype(device) == torch.float16)


def _autocast(device: torch.device):
    """Autocast to `autocast_dtype(device)` (bf16 or fp16 on CUDA); a no-op elsewhere."""
    dtype = autocast_dtype(device)
    return torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


@torch.no_grad()
def _outputs(model, data, batch_size, device, normalize, distributed, progress, desc):
    """Yield (logits (b, K) float32, labels (b,)) over this rank's share of `data`, in order."""
    images, labels, norm = _unpack(data, normalize)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    if batch_size is None:
        batch_size = eval_batch_size(device)
    elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int (images per batch) or None, got {batch_size!r}")
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


def evaluate(model: nn.Module, data, batch_size: int | None = None, device=None, *, normalize=None,
             distributed: bool = False, progress: bool = False) -> dict:
    """Mean cross-entropy and top-1 accuracy of `model` on `data`: {"loss", "acc", "n"}.

    `device` defaults to the model's. With `distributed=True` (every rank calls it) each rank
    evaluates a shard and the sums are all-reduced, so all ranks return the same numbers. `batch_size`
    defaults to `eval_batch_size(device)`.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    loss = correct = n = 0.0
    for logits, y in _outputs(model, data, batch_size, device, normalize, distributed, progress, "eval"):
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(-1) == y).sum().item()
        n += len(y)
    loss, correct, n = _all_sum([loss, correct, n], device) if distributed else (loss, correct, n)
    return {"loss": loss / n, "acc": correct / n, "n": int(n)}


def predict(model: nn.Module, data, batch_size: int | None = None, device=None, *, normalize=None,
            progress: bool = False) -> torch.Tensor:
    """Logits float32 (N, K) on the CPU, in the order of `data`; `batch_size` defaults to `eval_batch_size(device)`."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    return torch.cat([lg.cpu() for lg, _ in _outputs(model, data, batch_size, device, normalize, False, progress, "predict")])


__all__ = ["autocast_dtype", "evaluate", "grad_scaler", "predict"]
