"""The command line `python -m minivit.train`: train, fine-tune or evaluate a ViT (or hybrid) on a course data set.

Introduced in 03_transformer_encoder.ipynb (the CLI and checkpoints reuse `fit`; see README). Every option, its
default and the run-folder rules: `python -m minivit.train --help`. The Python API underneath: `minivit.train`.

    python -m minivit.train --preset ViT-Nano/4 --dataset fashion-mnist --epochs 5 --out runs/fm28
    python -m minivit.train --init-from runs/fm28 --dataset fashion-mnist --image-size 40 --epochs 2 --out runs/fm40
    python -m minivit.train --eval-only --init-from runs/fm40 --dataset fashion-mnist
    python -m minivit.train --recipe fashion-mnist-quick --preset ViT-Nano/4 --patch-size 7
    torchrun --nproc_per_node=2 -m minivit.train --preset ViT-Nano/4 --dataset cifar10 --epochs 2

What it promises:
- nothing lost: a run folder (<out>/checkpoint.pt, <out>/summary.json) is never written into unless `--resume`
  continues that same run or `--overwrite` replaces it; the default <out> is new for every run;
- nonsense refused: a value out of range, a patch size that does not divide the images, a device that is not
  there, are usage errors (exit status 2, nothing written), not tracebacks after the data has loaded;
- the same defaults as `minivit.train.fit` (read from its signature) or, with `--recipe`, a `minivit.recipes`
  recipe's; validation on a held-out part of the training split, the test split only for the final report.

Under torchrun every process trains its shard of each batch with DistributedDataParallel (gloo on CPU, nccl on
CUDA); only rank 0 prints and writes.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
from pathlib import Path

import torch

from .augment import POLICIES

def _number(text: str, what: str, low: float, high: float = math.inf, low_open: bool = False,
            high_open: bool = False, integer: bool = False):
    """`text` as a finite number in the interval; ArgumentTypeError (argparse's usage error) otherwise."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and (
        value < high if high_open else value <= high)
    if not ok:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text}")
    return value


def positive_int(text):
    return _number(text, "a whole number >= 1", 1, integer=True)


def positive_float(text):
    return _number(text, "a number > 0", 0, low_open=True)


def non_negative_float(text):
    return _number(text, "a finite number >= 0", 0)


def fraction(text):
    return _number(text, "a number in [0, 1)", 0, 1, high_open=True)


def learning_rate(text):
    return _number(text, "a learning rate > 0 (a finite number)", 0, low_open=True)


def clip_norm(text):
    return _number(text, "a max gradient norm >= 0 (0: no clipping; a negative norm would flip the gradients)", 0)


def preset_name(text):
    from .config import PRESETS
    if text not in PRESETS:
        raise argparse.ArgumentTypeError(f"unknown preset {text!r}; valid presets: {', '.join(PRESETS)}")
    return text


def dataset_name(text):
    from .data import SHAPES
    if text not in SHAPES:
        raise argparse.ArgumentTypeError(f"unknown dataset {text!r}; valid datasets: {', '.join(sorted(SHAPES))}")
    return text


def recipe_name(text):
    from .recipes import RECIPES
    if text not in RECIPES:
        raise argparse.ArgumentTypeError(f"unknown recipe {text!r}; valid recipes: {', '.join(sorted(RECIPES))}")
    if text.startswith("mosaic"):
        raise argparse.ArgumentTypeError(f"{text} trains on 2x2 mosaics (minivit.data.make_mosaics), which the command "
                                         "line does not build; use it from Python (notebooks 07, 08)")
    return text


def device_name(text):
    """A device that is there: cpu, cuda, cuda:N (N < the GPU count), mps."""
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"not a device: {text!r}; expected cpu, cuda, cuda:1 or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text}: no CUDA GPU is available here; use --device cpu or leave "
                                         "--device out (default: CUDA > MPS > CPU)")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(f"{text}: there are {torch.cuda.device_count()} CUDA devices")
    if device.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise argparse.ArgumentTypeError(f"{text}: Apple MPS is not available here")
    if device.type not in ("cpu", "cuda", "mps"):
        raise argparse.ArgumentTypeError(f"{text}: expected cpu, cuda, cuda:N or mps")
    return text


def out_folder(text):
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; --out names the folder a run is written to")
    return path


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `python -m minivit.train`: every value is checked as it is parsed (a usage error,
    exit status 2, for a value out of range); `main` checks how they combine. Defaults are printed once each."""
    from .config import list_presets
    from .data import SHAPES
    from .recipes import RECIPES
    from .train import fit
    d = {k: v.default for k, v in inspect.signature(fit).parameters.items()}  # one set of defaults: fit's
    p = argparse.ArgumentParser(
        prog="python -m minivit.train", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train, fine-tune (--init-from) or evaluate (--eval-only) a minivit ViT or hybrid on a course\n"
                    "data set. Each epoch validates on images held out of the TRAINING split (--val-per-class); the\n"
                    "test split is used once, for the final report. A run writes <out>/checkpoint.pt after every\n"
                    "epoch and <out>/summary.json (its settings, then its results).\n"
                    "Python API: help(minivit.train); this command: help(minivit.cli).",
        epilog="examples:\n"
               "  python -m minivit.train --preset ViT-Nano/4 --dataset fashion-mnist --epochs 5 --out runs/fm28\n"
               "  python -m minivit.train --init-from runs/fm28 --dataset fashion-mnist --image-size 40 --epochs 2 "
               "--lr 5e-4 --out runs/fm40\n"
               "  python -m minivit.train --eval-only --init-from runs/fm40 --dataset fashion-mnist\n"
               "  torchrun --nproc_per_node=2 -m minivit.train --preset ViT-Nano/4 --dataset cifar10 --epochs 2")
    m = p.add_argument_group("model")
    m.add_argument("--preset", type=preset_name, metavar="NAME",
                   help=f"one of: {', '.join(list_presets())}. Needed unless --init-from is a minivit checkpoint")
    m.add_argument("--init-from", type=Path, metavar="PATH",
                   help="start from these weights (minivit.load_pretrained): a run folder or minivit checkpoint, or "
                        "a timm .pth/.safetensors state dict (with --preset); position embeddings are interpolated "
                        "to the new grid and a head of another size is replaced by a zero one")
    m.add_argument("--image-size", type=positive_int, metavar="PX",
                   help="train and evaluate at PX x PX: the images are resized (default: the data set's, 32 cifar10, "
                        "28 fashion-mnist, 128 imagenette; with --eval-only, the checkpoint's)")
    m.add_argument("--patch-size", type=positive_int, metavar="P", help="override the preset's patch size")
    m.add_argument("--dropout", type=fraction, metavar="P", help="override the preset's dropout, in [0, 1)")
    g = p.add_argument_group("data")
    g.add_argument("--dataset", type=dataset_name, metavar="NAME",
                   help=f"one of: {', '.join(sorted(SHAPES))} (default with --recipe: the recipe's)")
    g.add_argument("--n-per-class", type=positive_int, metavar="N",
                   help="train on N images per class, a stratified subset of the training split (default: all)")
    g.add_argument("--val-per-class", type=positive_int, metavar="N",
                   help="validate after every epoch on N images per class held out of the TRAINING split, never "
                        "trained on (default: no validation)")
    g.add_argument("--test-per-class", type=positive_int, metavar="N",
                   help="the final report on N test images per class (default: the whole test split)")
    g.add_argument("--data-root", metavar="DIR", help="data folder (default: $MINIVIT_DATA, else <repo>/data, "
                                                      "else ~/.cache/minivit)")
    t = p.add_argument_group("training (defaults: minivit.train.fit's, or with --recipe the recipe's)")
    t.add_argument("--recipe", type=recipe_name, metavar="NAME",
                   help=f"a minivit.recipes recipe, one of: {', '.join(r for r in sorted(RECIPES) if 'mosaic' not in r)} "
                        "(imagenette64-*: at 64 px); the flags below override it")
    t.add_argument("--epochs", type=positive_int, metavar="N",
                   help="total epochs of the run, the schedule's length (needed unless --recipe or --eval-only)")
    t.add_argument("--batch-size", type=positive_int, metavar="N", help=f"global batch size, split over processes "
                                                                        f"(default: {d['batch_size']})")
    t.add_argument("--lr", type=learning_rate, help=f"peak AdamW learning rate (default: {d['lr']:g})")
    t.add_argument("--weight-decay", type=non_negative_float, metavar="WD",
                   help=f"AdamW weight decay, not on norms, biases, tokens (default: {d['weight_decay']:g})")
    t.add_argument("--warmup-epochs", type=non_negative_float, metavar="E",
                   help=f"linear warm-up before the cosine decay, at most --epochs (default: {d['warmup_epochs']:g})")
    t.add_argument("--label-smoothing", type=fraction, metavar="EPS",
                   help=f"label smoothing of the training loss, in [0, 1) (default: {d['label_smoothing']:g})")
    t.add_argument("--clip-grad", type=clip_norm, metavar="NORM",
                   help=f"max global gradient norm; 0: no clipping (default: {d['clip_grad']:g})")
    t.add_argument("--augment", choices=POLICIES, help="'basic': pad-crop + flip; 'flip': mirror only; 'none' "
                                                       "(default: basic)")
    t.add_argument("--seed", type=int, default=0, help="seed of the initialisation, subsets, shuffling and "
                                                       "augmentation (default: 0; the same seed repeats a run)")
    t.add_argument("--time-budget", type=positive_float, metavar="SECONDS",
                   help="stop taking steps after this many seconds (default: none)")
    t.add_argument("--compile", action="store_true", help="train through torch.compile")
    t.add_argument("--device", type=device_name, help="cpu, cuda, cuda:1, mps (default: CUDA > MPS > CPU)")
    o = p.add_argument_group("output")
    o.add_argument("--out", type=out_folder, metavar="DIR",
                   help="the run folder (default: a new one, runs/<model>-<dataset>-<YYYYmmdd-HHMMSS>, <model> "
                        "the preset with '/' as '-' or '<init folder>-ft'; '-2', '-3', ... appended if taken). "
                        "A folder that holds a run is refused unless --resume or --overwrite")
    o.add_argument("--resume", action="store_true",
                   help="continue the run in --out (the same settings; --epochs at least its finished epochs)")
    o.add_argument("--overwrite", action="store_true", help="replace the run in --out")
    o.add_argument("--eval-only", action="store_true",
                   help="evaluate --init-from on the test split; trains nothing, writes nothing")
    o.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv=None) -> int:
    """Run `python -m minivit.train` with `argv` (default: sys.argv[1:]); return the exit status (0).

    Usage errors (argparse's `parser.error`, exit status 2) happen before anything is written. Then: load and
    split the data, build the model (from a preset, or a checkpoint via `load_pretrained`), and either evaluate
    it (`--eval-only`) or `fit` it into the run folder and write its summary."""
    from .cli_run import run
    parser = build_parser()
    return run(parser, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
