"""Evaluation batch size: how long `minivit.train.predict` takes over a whole test split at several batch sizes.

    python benchmarks/eval_batch.py                       # the course's models on this machine's device
    python benchmarks/eval_batch.py --batch-sizes 128 256 512 --repeats 5

For each model (untrained, seeded: the time does not depend on the weights) `predict` runs over the whole test
split once untimed, then `--repeats` rounds each time every batch size once, so a change of load hits every batch
size alike; the median of the rounds is reported. This is what chose `minivit.train.evaluation.eval_batch_size`,
the default batch of `predict` and `evaluate` (the notebooks' test passes). Prints a table and writes
benchmarks/results/eval_batch_<device>.json with the load average (os.getloadavg) before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minivit.cnn import CifarResNet  # noqa: E402
from minivit.data import load_dataset  # noqa: E402
from minivit.profile import default_device  # noqa: E402
from minivit.train import predict  # noqa: E402
from minivit.vit import ViT  # noqa: E402

from results_io import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

# (name, how to build it, data set, image side): the models whose test passes the quick notebooks run most
MODELS = [
    ("ViT-Nano/4 (04-06)", lambda: ViT.from_preset("ViT-Nano/4"), "cifar10", 32),
    ("ResNet-14 (04-06)", lambda: CifarResNet.from_preset("ResNet-14"), "cifar10", 32),
    ("R-S4+ViT-Nano/4 (06)", lambda: ViT.from_preset("R-S4+ViT-Nano/4"), "cifar10", 32),
    ("ViT-Nano/16 at 64 px (07)", lambda: ViT.from_preset("ViT-Nano/16", image_size=64), "imagenette", 64),
    ("ViT-Nano/16 at 128 px (07, 08)", lambda: ViT.from_preset("ViT-Nano/16"), "imagenette", 128),
]


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128, 256, 512])
    p.add_argument("--repeats", type=int, default=3, help="timed rounds (each runs every batch size once)")
    p.add_argument("--device", default=None, help="default: CUDA > MPS > CPU")
    args = p.parse_args(argv)
    if args.repeats < 1 or any(b < 1 for b in args.batch_sizes):
        p.error("--repeats and every --batch-sizes value must be >= 1")
    device = torch.device(args.device) if args.device else default_device()
    out = {"device": str(device), "threads": torch.get_num_threads(), "torch": torch.__version__,
           "load_before": os.getloadavg(), "repeats": args.repeats, "models": {}}
    splits = {}
    for name, build, dataset, side in MODELS:
        if (dataset, side) not in splits:
            test = load_dataset(dataset, "test")
            splits[(dataset, side)] = test if test.images.shape[-1] == side else test.resized(side)
        data = splits[(dataset, side)]
        torch.manual_seed(0)
        model = build().to(device).eval()
        predict(model, data, batch_size=args.batch_sizes[0], device=device)  # untimed: allocations, caches
        seconds = {b: [] for b in args.batch_sizes}
        for _ in range(args.repeats):
            for b in args.batch_sizes:
                t = time.perf_counter()
                predict(model, data, batch_size=b, device=device)
                seconds[b].append(time.perf_counter() - t)
        medians = {b: statistics.median(s) for b, s in seconds.items()}
        out["models"][name] = {"images": len(data), "seconds": seconds, "median_s": medians}
        print(f"{name:32} {len(data):>6,} images: " + "  ".join(f"batch {b}: {m:5.2f} s" for b, m in medians.items()))
    out["load_after"] = os.getloadavg()
    save_result(f"eval_batch_{device.type}", out)
    return out


if __name__ == "__main__":
    main()
