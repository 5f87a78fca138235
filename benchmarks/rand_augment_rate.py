"""RandAugment's two pipelines, images/s: per image (`minivit.augment.rand_augment`, what a DataLoader worker runs)
and batched (`minivit.augment.BatchRandAugment`, what the full recipes run on the GPU). Tooling, no notebook.

    OMP_NUM_THREADS=1 python benchmarks/rand_augment_rate.py                 # on this machine's default device
    python benchmarks/rand_augment_rate.py --device cuda                    # the batched one on the GPU

Both at the full recipes' settings (crop + flip + 2 operations of magnitude 9), on random uint8 images of each
data set's size: CIFAR-10 (32 px) in batches of 1,024 and Imagenette (128 px) in batches of 256 (the recipes'
batches). Per image: one image at a time on the CPU in this process (one worker's rate: multiply by the workers
a host can feed), whatever `--device`. Batched: the median seconds of a batch on `--device` (synchronised on
CUDA), after one untimed batch. Writes benchmarks/results/rand_augment_rate_<device>.json with the torch version,
the thread count and the load average (a busy machine's figures are noisy).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import save_result  # noqa: E402

from minivit.augment import BatchRandAugment, rand_augment  # noqa: E402
from minivit.data import SHAPES  # noqa: E402
from minivit.profile import default_device  # noqa: E402

BATCHES = {"cifar10": 1024, "imagenette": 256}  # the full recipes' batch sizes


def _images(dataset: str, n: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n, *SHAPES[dataset]), dtype=torch.uint8, generator=g).to(device)


def per_image_rate(dataset: str, images: int) -> float:
    """Images/s of the per-image pipeline, one image at a time, in this process on the CPU."""
    t, x = rand_augment(dataset), _images(dataset, images, "cpu")
    t(x[0])  # untimed: imports, first calls
    t0 = time.perf_counter()
    for img in x:
        t(img)
    return images / (time.perf_counter() - t0)


def batch_seconds(dataset: str, batch: int, device, repeats: int) -> float:
    """Median seconds of one batch of the batched pipeline on `device` (after one untimed batch)."""
    device = torch.device(device)
    aug, x = BatchRandAugment(dataset), _images(dataset, batch, device)
    times = []
    for i in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        aug(x)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _positive(s: str) -> int:
    if not s.isdigit() or int(s) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}")
    return int(s)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="the batched pipeline's device (default: CUDA > MPS > CPU)")
    p.add_argument("--images", type=_positive, default=512, help="images through the per-image pipeline")
    p.add_argument("--repeats", type=_positive, default=5, help="timed batches of the batched pipeline")
    p.add_argument("--batch-scale", type=_positive, default=1, help="divide the batch sizes by this (a dry run)")
    p.add_argument("--out-dir", type=Path, default=None, help="where the JSON goes (default: benchmarks/results)")
    a = p.parse_args(argv)
    device = torch.device(a.device) if a.device else default_device()
    load_before, rates = os.getloadavg(), {}
    for dataset, batch in BATCHES.items():
        b = max(1, batch // a.batch_scale)
        per_image = per_image_rate(dataset, a.images)
        s = batch_seconds(dataset, b, device, a.repeats)
        rates[dataset] = {"per_image_images_per_s": per_image, "batch": b, "batch_s": s, "batched_images_per_s": b / s}
        print(f"{dataset:10} per image (CPU, 1 process): {per_image:8.0f} images/s   batched on {device.type} "
              f"(batch {b}): {b / s:8.0f} images/s, {1e3 * s:7.1f} ms a batch", flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    out = {"device": name, "torch": torch.__version__, "threads": torch.get_num_threads(),
           "cpu_count": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg(),
           "dry_run": a.batch_scale > 1, "rates": rates}
    save_result(f"rand_augment_rate_{name.split()[-1].lower()}", out, *([a.out_dir] if a.out_dir else []))
    return out


if __name__ == "__main__":
    main()
