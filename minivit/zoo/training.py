"""Train a zoo run, and measure a zoo model on its full test split -- the code behind `train` and `verify`.

    python -m minivit.zoo train vit-nano4-cifar10            # writes runs/zoo/vit-nano4-cifar10-<time>/
    python -m minivit.zoo train vit-nano4-cifar10 --resume runs/zoo/vit-nano4-cifar10-<time>

A run trains with the course's own functions (`minivit.train.fit`, `minivit.pretrain.pretrain_mpp`) and the
recipe written in `minivit.zoo.registry`; it keeps the weights of the epochs the run names as safetensors
files, then loads each file back and measures it exactly as `verify` will: the number of right answers on the
data set's whole test split, on the CPU, in batches of `EVAL_BATCH`.

Introduced in 08_inspecting_vit.ipynb (then 09_masked_patch_prediction.ipynb).
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..recipes import fingerprint
from .files import file_sha256, read_weights, save_weights
from .registry import Entry, Run, entries_of

EVAL_BATCH = 128  # the batch of every measurement (fixed, so a re-measurement on the CPU is exact)
VAL_PER_CLASS = {"classifier": 100, "mpp": 50}  # held-out test images per class watched during training


def build(entry: Entry) -> nn.Module:
    """The untrained model an entry's weights fill (eval mode, on the CPU)."""
    from ..cnn import CifarResNet
    from ..mpp import MaskedPatchPrediction
    from ..vit import ViT
    if entry.arch == "resnet":
        model = CifarResNet.from_preset(entry.preset, **entry.overrides)
    elif entry.arch == "vit":
        model = ViT.from_preset(entry.preset, **entry.overrides)
    elif entry.arch == "mpp":
        model = MaskedPatchPrediction(ViT.from_preset(entry.preset, **entry.overrides))
    else:
        raise ValueError(f"unknown architecture {entry.arch!r} in zoo entry {entry.name!r}")
    return model.eval()


def _data(run: Run, split: str):
    """The run's images of `split`, at the run's resolution (mosaics for a mosaic run)."""
    from ..data import load_dataset, make_mosaics
    data = load_dataset(run.dataset, split)
    if run.train_images == "mosaics":  # as notebook 07 makes them: training mosaics seed 0, test mosaics seed 1
        return make_mosaics(data, run.image_size, seed=0 if split == "train" else 1)
    return data if data.images.shape[-1] == run.image_size else data.resized(run.image_size)


def training_images(run: Run):
    """The images a run trains on: the whole training split, or notebook 09's 10,000 unlabelled ones."""
    train = _data(run, "train")
    if run.train_images in ("all", "mosaics"):
        return train
    if run.train_images == "mpp-09":  # as 09 draws them: the first 10,000 of a permutation seeded 1
        order = torch.randperm(len(train), generator=torch.Generator().manual_seed(1))
        return train.subset(order[:10_000])
    raise ValueError(f"unknown training images {run.train_images!r} in zoo run {run.name!r}")


@torch.no_grad()
def measure(entry: Entry, model: nn.Module, test=None) -> dict:
    """The entry's metric on its data set's whole test split, on the CPU: {"metric", "correct", "n", "accuracy"}.

    A classifier: top-1 accuracy over the test images. An MPP model: the exact colour accuracy over the corrupted
    patches of the test images, under the fixed corruption of `evaluate_mpp` (seed 0)."""
    from ..pretrain import evaluate_mpp
    from ..train import predict
    test = test if test is not None else _data(entry.run, "test")
    model = model.to("cpu").eval()
    if entry.arch == "mpp":
        r = evaluate_mpp(model, test, batch_size=EVAL_BATCH, device="cpu")
        correct, n = round(r["acc"] * r["n"]), r["n"]
        metric = "pretext colour accuracy on the corrupted patches of the test split"
    else:
        right = predict(model, test, EVAL_BATCH, "cpu").argmax(-1) == test.labels  # (N,) bool
        correct, n, metric = int(right.sum()), len(test), "top-1 accuracy on the test split"
        # which images it gets right, and the split they belong to: `right_answers` returns them without predicting
        return {"metric": metric, "correct": correct, "n": n, "accuracy": correct / n, "right": pack_right(right),
                "data": fingerprint(test), "copy": data_copy(entry.run.dataset)}
    return {"metric": metric, "correct": correct, "n": n, "accuracy": correct / n, "data": fingerprint(test),
            "copy": data_copy(entry.run.dataset)}


def data_copy(dataset: str) -> dict:
    """The copy of `dataset` a measurement reads (`minivit.data.copy_info` of its test split, less the names):
    a record says which copy it was made on, and `verify` compares exactly only on that copy."""
    from ..data import copy_info
    info = copy_info(dataset, "test")
    return {k: info[k] for k in ("file", "origin", "sha256", "fingerprint")}


def pack_right(right: torch.Tensor) -> str:
    """(N,) bool -> text (base64 of the bits, 8 images a byte): a classifier's right answers, kept in its record."""
    return base64.b64encode(np.packbits(right.cpu().numpy().astype(np.uint8)).tobytes()).decode("ascii")


def unpack_right(text: str, n: int) -> torch.Tensor:
    """The inverse of `pack_right`: the (n,) bool tensor."""
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text), dtype=np.uint8))[:n]
    return torch.from_numpy(bits.astype(bool))


def machine() -> dict:
    """Where a run or a measurement ran: CPU model, cores, threads, torch version, GPU if any."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": torch.get_num_threads(), "gpu": gpu,
            "torch": torch.__version__, "python": platform.python_version()}


def _commit() -> str | None:
    """The git commit of the checkout this runs from (None outside a clone): which code trained the run."""
    import subprocess
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).parent, check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def load_file(path, entry: Entry, sha256: str | None = None) -> nn.Module:
    """The model of `entry` filled with the weights at `path` (eval mode, CPU); with `sha256`, checked first."""
    model = build(entry)
    model.load_state_dict(read_weights(path, sha256, entry.name))
    return model


def _keep(folder: Path, entry: Entry, model: nn.Module) -> None:
    save_weights(folder / f"{entry.name}.safetensors", model, entry)


def train_run(run: Run, folder: Path, *, resume: bool = False, progress: bool = True, device=None) -> list[dict]:
    """Train `run` into `folder` (a new one, or the folder of an interrupted classifier run with `resume`); keep
    the weights of every epoch in `run.keep`, then load each file back, measure it and write `<entry>.json`
    beside it. Returns the records."""
    from ..augment import make_augment
    from ..data import stratified_subset
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries = {e.epoch: e for e in entries_of(run)}
    r = dict(run.recipe)
    seed = r.pop("seed")
    augment = make_augment(run.dataset, r.pop("augment"))
    train, test = training_images(run), _data(run, "test")
    if "mix" in r:  # a batch mixing by name (plain data in the registry), for the data set's classes
        from ..augment import MIXES
        r["mix"] = MIXES[r["mix"]](len(train.classes))
    val = stratified_subset(test, VAL_PER_CLASS[run.kind])  # watched during training; the record uses all of `test`
    torch.manual_seed(seed)
    model = build(entries[run.keep[-1]]).train()
    t0 = time.perf_counter()
    if run.kind == "classifier":
        from ..train import fit

        def on_epoch_end(history):
            if len(history) in entries:
                _keep(folder, entries[len(history)], model)

        history = fit(model, train, val, **r, augment=augment, seed=seed, device=device, progress=progress,
                      checkpoint=folder / "train-state.pt", resume=resume, on_epoch_end=on_epoch_end)
    elif run.kind == "mpp":
        from ..pretrain import pretrain_mpp
        if resume:
            raise ValueError("a masked-patch-prediction run cannot resume; start it again in a new folder")

        def on_epoch(epoch, mpp):
            if epoch in entries:
                _keep(folder, entries[epoch], mpp)

        history = pretrain_mpp(model, train, val, **r, augment=augment, seed=seed, device=device,
                               progress=progress, on_epoch=on_epoch)
    else:
        raise ValueError(f"unknown run kind {run.kind!r}")
    seconds = time.perf_counter() - t0
    (folder / "history.json").write_text(json.dumps(history.to_dict()))
    records = []
    for epoch, entry in sorted(entries.items()):
        if epoch > len(history):  # the run stopped before this epoch (an interrupted classifier run resumes)
            continue
        path = folder / f"{entry.name}.safetensors"
        m = measure(entry, load_file(path, entry), test)
        rec = {"name": entry.name, "file": path.name, "sha256": file_sha256(path), "bytes": path.stat().st_size,
               "test": m, "epochs": epoch, "train_seconds": round(sum(history.epoch_time[:epoch]), 1),
               "run_seconds": round(seconds, 1), "trained_on": machine(),
               "date": datetime.date.today().isoformat(),
               "val_curve": [None if v is None else round(v, 4) for v in history.val_acc[:epoch]],
               "val_images": len(val), "code": _commit()}
        (folder / f"{entry.name}.json").write_text(json.dumps(rec, indent=1) + "\n")
        records.append(rec)
    return records
