"""A linear classifier on raw pixels: the anchor for the accuracies of the notebooks' live models (review 04-06 N5,
issue 39).

    python benchmarks/linear_pixels.py                     # CIFAR-10: 04's quick training set (5,000) and all 50,000
    python benchmarks/linear_pixels.py --sizes 500         # images per class; 0 = the whole training split
    python benchmarks/linear_pixels.py --data imagenette --sizes 0 --sides 32 64   # 07's and 08's photographs
    python benchmarks/linear_pixels.py --data fashion-mnist --sizes 0              # 03's images

What a model learns beyond a linear map of the pixels is what its accuracy means. The linear map is the paper's
own few-shot linear evaluation (`minivit.probe.few_shot_linear`: a ridge regression onto {-1, 1}^K targets, solved
in closed form, §4.1) applied to the raw pixels, scaled to [0, 1] and flattened (3,072 features for CIFAR-10). Its
one setting, the ridge penalty, is chosen on held-out *training* images (the last 10% of a seeded permutation of
the training set), never on the test images; the chosen penalty is then refitted on the whole training set and
scored on the whole test split. The training set of each size is the one the notebooks use (`minivit.recipes`: the
first n per class of the quick recipe's subset; 0 = the whole training split). `--sides` resizes the images first
(`ImageDataset.resized`, antialiased bilinear): a resized image is a linear map of the original's pixels, so the
map at a lower side is also a linear map of the full-size pixels (Imagenette at 128 px has 49,152 features, more
than a closed-form fit on 2 cores can afford; 64 px has 12,288).

Prints a table and writes benchmarks/results/linear_pixels.json for CIFAR-10 (about 5 minutes on 2 CPU cores, most
of it the 50,000-image fits), linear_pixels_<data>.json for the others.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import minivit  # noqa: E402
from minivit.data import load_dataset  # noqa: E402
from minivit.probe import few_shot_linear, pixel_baseline_path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import save_result  # noqa: E402

PENALTIES = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6)  # ridge penalties tried on the held-out training images
HELD_OUT = 0.1  # the share of the training images held out to choose the penalty


def pixels(data) -> torch.Tensor:
    """Images uint8 (N, C, H, W) -> features float32 (N, C*H*W) in [0, 1]."""
    return data.images.reshape(len(data), -1).float() / 255


def accuracy(train, test, l2: float) -> tuple[int, int]:
    """(right answers, images) of the ridge map fitted on `train` with penalty `l2`, scored on `test`."""
    predicted = few_shot_linear(pixels(train), train.labels, pixels(test), num_classes=len(train.classes), l2=l2)
    return int((predicted == test.labels).sum()), len(test)


def run(train, test, seed: int = 0) -> dict:
    """Choose the penalty on held-out training images, refit on all of `train`, score on `test`."""
    t0 = time.perf_counter()
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed))
    cut = len(train) - round(HELD_OUT * len(train))
    fit, held = train.subset(order[:cut]), train.subset(order[cut:])
    held_acc = {}
    for l2 in PENALTIES:
        right, n = accuracy(fit, held, l2)
        held_acc[l2] = right / n
    best = max(PENALTIES, key=lambda l2: (held_acc[l2], -l2))  # ties: the smaller penalty
    right, n = accuracy(train, test, best)
    return {"train_images": len(train), "held_out_images": len(held), "held_out_acc": {f"{k:g}": v for k, v in
            held_acc.items()}, "l2": best, "test_correct": right, "test_images": n, "test_acc": right / n,
            "seconds": round(time.perf_counter() - t0, 1)}


RECIPES = {"cifar10": "cifar10", "fashion-mnist": "fashion-mnist", "imagenette": "imagenette64"}  # the subsets'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=sorted(RECIPES), default="cifar10", help="the data set (default cifar10)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 0],
                    help="training images per class (notebook 04's quick subset is 500); 0 = the whole split")
    ap.add_argument("--sides", type=int, nargs="+", default=None,
                    help="resize the images to this side first (pixels); default: as stored")
    args = ap.parse_args(argv)
    if any(s < 0 for s in args.sizes):
        ap.error(f"--sizes must be >= 0 (0 = the whole training split), got {args.sizes}")
    if args.sides is not None and any(s < 1 for s in args.sides):
        ap.error(f"--sides must be >= 1 pixel, got {args.sides}")
    train_full, test_full = load_dataset(args.data, "train"), load_dataset(args.data, "test")
    recipe = minivit.recipes.get(RECIPES[args.data], "quick")
    rows = []
    print(f"{'side':>5} {'train images':>12} {'penalty':>8} {'held-out acc':>12} {'test acc':>9} {'seconds':>8}")
    for side in args.sides or [train_full.images.shape[-1]]:
        train_side, test = train_full.resized(side), test_full.resized(side)
        for size in args.sizes:
            train = train_side if size == 0 else recipe.with_(n_per_class=size).training_set(train_side)
            r = {"side": side, **run(train, test)}
            rows.append(r)
            held = r["held_out_acc"][f"{r['l2']:g}"]  # the chosen penalty's held-out accuracy
            print(f"{side:>5} {r['train_images']:>12,} {r['l2']:>8g} {held:>12.3f} "
                  f"{r['test_acc']:>9.4f} {r['seconds']:>8.0f}")
    save_result(pixel_baseline_path(args.data).stem, {  # where minivit.probe.pixel_baseline reads it
        "what": f"ridge regression onto {{-1,1}}^K (minivit.probe.few_shot_linear) on raw {args.data} pixels in "
                "[0, 1] (resized to each row's side); penalty chosen on 10% held-out training images, refitted on "
                "all, scored on the whole test split",
        "data": args.data, "penalties": list(PENALTIES), "rows": rows,
        "machine": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                    "torch": torch.__version__}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
