"""Command line: train a preset on a data set, evaluate it, checkpoint it, summarise it.

Introduced in 03_transformer_encoder.ipynb (the CLI and checkpoints reuse `fit`; see README).

    python -m minivit.train --preset ViT-Micro/4 --dataset cifar10 --epochs 10 --out runs/micro
    torchrun --nproc_per_node=2 -m minivit.train --preset ViT-Nano/4 --dataset cifar10 --epochs 2

Under torchrun every process trains its shard of each batch with DistributedDataParallel
(gloo on CPU, nccl on CUDA); only rank 0 prints and writes <out>/checkpoint.pt and
<out>/summary.json. The preset's image size, channels and classes are set from the data set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from .augment import POLICIES


def build_parser() -> argparse.ArgumentParser:
    from .config import list_presets
    from .data import SHAPES
    p = argparse.ArgumentParser(
        prog="python -m minivit.train",
        description="Train a minivit ViT preset on a course data set (test split used for validation), "
                    "write <out>/checkpoint.pt after every epoch and <out>/summary.json at the end. "
                    "Run it under `torchrun --nproc_per_node=N` for data-parallel training.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--preset", required=True, metavar="NAME", help=f"model preset, one of: {', '.join(list_presets())}")
    p.add_argument("--dataset", required=True, metavar="NAME", help=f"data set, one of: {', '.join(sorted(SHAPES))}")
    p.add_argument("--epochs", type=int, required=True, help="total epochs of the run (the schedule's length)")
    p.add_argument("--n-per-class", type=int, default=None, help="train on a stratified subset of N images per class")
    p.add_argument("--val-per-class", type=int, default=None, help="validate on N test images per class (default: all)")
    p.add_argument("--batch-size", type=int, default=128, help="global batch size (split over processes)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate")
    p.add_argument("--weight-decay", type=float, default=0.05, help="AdamW weight decay (not on norms, biases, tokens)")
    p.add_argument("--warmup-epochs", type=float, default=1.0, help="linear warm-up length before cosine decay")
    p.add_argument("--label-smoothing", type=float, default=0.1, help="label smoothing of the training loss")
    p.add_argument("--clip-grad", type=float, default=1.0, help="max global gradient norm (0: no clipping)")
    p.add_argument("--dropout", type=float, default=None, help="override the preset's dropout")
    p.add_argument("--augment", choices=POLICIES, default="basic",
                   help="'basic': pad-crop + flip; 'flip': mirror only; 'none'")
    p.add_argument("--seed", type=int, default=0, help="seed of initialisation, shuffling and augmentation")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS", help="stop taking steps after this")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: runs/<preset>-<dataset>)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in <out>/checkpoint.pt")
    p.add_argument("--compile", action="store_true", help="train through torch.compile")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: CUDA > MPS > CPU)")
    p.add_argument("--data-root", default=None, help="data folder (default: $MINIVIT_DATA or <repo>/data)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _setup_distributed(device_arg):
    """Initialise torch.distributed when launched by torchrun; return (rank, world, device)."""
    from .profile import default_device
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1, torch.device(device_arg) if device_arg else default_device()
    cuda = torch.cuda.is_available() and (device_arg or "cuda").startswith("cuda")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    torch.distributed.init_process_group("nccl" if cuda else "gloo")
    return torch.distributed.get_rank(), world, device


def main(argv=None) -> int:
    from . import data as mdata
    from .config import PRESETS, get_preset
    from .train import fit
    from .vit import ViT
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.preset not in PRESETS:
        parser.error(f"unknown preset {a.preset!r}; valid presets: {', '.join(PRESETS)}")
    if a.dataset not in mdata.SHAPES:
        parser.error(f"unknown dataset {a.dataset!r}; valid datasets: {', '.join(sorted(mdata.SHAPES))}")
    if a.epochs < 1 or a.batch_size < 1:
        parser.error("--epochs and --batch-size must be >= 1")
    rank, world, device = _setup_distributed(a.device)
    try:
        out = a.out or Path("runs") / f"{a.preset.replace('/', '-')}-{a.dataset}"
        train = mdata.load_dataset(a.dataset, "train", a.data_root)
        test = mdata.load_dataset(a.dataset, "test", a.data_root)
        if a.n_per_class:
            train = mdata.stratified_subset(train, a.n_per_class, seed=a.seed)
        if a.val_per_class:
            test = mdata.stratified_subset(test, a.val_per_class, seed=a.seed)
        c, h, w = mdata.SHAPES[a.dataset]
        overrides = {"image_size": h if h == w else (h, w), "in_channels": c, "num_classes": len(train.classes)}
        if a.dropout is not None:
            overrides["dropout"] = a.dropout
        config = get_preset(a.preset, **overrides)
        torch.manual_seed(a.seed)
        model = ViT(config)
        say = print if rank == 0 else (lambda *_, **__: None)
        say(f"minivit: {a.preset} ({sum(p.numel() for p in model.parameters()):,} parameters) on {a.dataset} "
            f"({len(train)} train / {len(test)} test images), {world} process(es) on {device}, out {out}")
        t0 = time.perf_counter()
        history = fit(model, train, test, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr,
                      weight_decay=a.weight_decay, warmup_epochs=a.warmup_epochs, label_smoothing=a.label_smoothing,
                      clip_grad=a.clip_grad or None, augment=mdata.make_augment(a.dataset, a.augment), device=device,
                      compile=a.compile, seed=a.seed, checkpoint=out / "checkpoint.pt", resume=a.resume,
                      progress=not a.no_progress and rank == 0, time_budget=a.time_budget)
        seconds = time.perf_counter() - t0
        final = history.final  # fit evaluated `test` after the last (possibly budget-cut) epoch
        result = {"loss": final["val_loss"], "acc": final["val_acc"], "n": len(test)}
        summary = {"preset": a.preset, "dataset": a.dataset, "config": config.to_dict(),
                   "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
                   "test": result, "fit_seconds": seconds, "world_size": world, "device": str(device),
                   "torch": torch.__version__, "history": history.to_dict()}
        if rank == 0:
            out.mkdir(parents=True, exist_ok=True)
            tmp = out / "summary.json.tmp"
            tmp.write_text(json.dumps(summary, indent=2))
            os.replace(tmp, out / "summary.json")
            say(f"{'epoch':>5} {'train loss':>10} {'train acc':>9} {'test loss':>9} {'test acc':>8} {'img/s':>7}")
            for r in history.rows():
                say(f"{r['epoch']:>5} {r['train_loss']:>10.4f} {r['train_acc']:>9.4f} {r['val_loss']:>9.4f} "
                    f"{r['val_acc']:>8.4f} {r['images_per_s']:>7.0f}")
            if history.stopped:
                say(f"stopped early: {history.stopped}")
            say(f"test top-1 {result['acc']:.4f}, loss {result['loss']:.4f} on {result['n']} images; "
                f"fit took {seconds:.1f} s; wrote {out / 'checkpoint.pt'} and {out / 'summary.json'}")
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
