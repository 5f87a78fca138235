"""What the full-profile plan needs, measured in about a minute on a GPU: step times and loader rates.

    python benchmarks/gpu_step_times.py                       # on the GPU: every (model, batch) of the plan
    python benchmarks/full_profile_plan.py --figures benchmarks/results/gpu_step_times_<gpu>.json

For every (model, batch size) pair that `full_profile_plan.notebook_runs()` trains: the median seconds of a
training step (forward and backward under bf16 autocast on CUDA, AdamW step; random inputs already on the device,
so no data loading), after a few untimed warm-up steps. For the loader: images/s of the full profile's per-image
RandAugment (crop and flip included) through `fit`'s Dataset in a DataLoader with N workers, for CIFAR-10 and
Imagenette (`recipe.with_(workers=N)`; the recipes themselves run it batched on the GPU); and the median seconds of
one batch of that batched RandAugment (`minivit.augment.BatchRandAugment`) for every (data set, batch size) the
plan augments on the GPU. Writes benchmarks/results/gpu_step_times_<device>.json with the figures the plan reads,
the device, torch version and the load average. `--max-batch 8 --device cpu` is a dry run that checks the script, not a measurement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import full_profile_plan as planning  # noqa: E402
from rand_augment_rate import batch_seconds  # noqa: E402
from results_io import save_result  # noqa: E402

from minivit.profile import default_device  # noqa: E402


def build(model: str):
    """The course model behind a plan key (real weights, on the CPU), and its input shape (C, H, W)."""
    from minivit import CifarResNet, HybridEmbed, ViT, resnet_s4_backbone
    from minivit.config import get_preset
    if model.startswith("R-S4+"):
        c = get_preset(model.removeprefix("R-S4+"))
        return ViT(c, patch_embed=HybridEmbed(resnet_s4_backbone(), image_size=32, in_channels=3, dim=c.dim)), (3, 32, 32)
    if model.startswith("ResNet"):
        return CifarResNet.from_preset(model), (3, 32, 32)
    if model == "linear-28":
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 10)), (1, 28, 28)
    name, _, size = model.partition("@")
    side, _, channels = (size or "32").partition("x")
    return ViT.from_preset(name, image_size=int(side), in_channels=int(channels or 3)), (int(channels or 3), int(side), int(side))


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_time(model: str, batch_size: int, device, warmup: int, steps: int) -> float:
    """Median seconds of one training step of `model` at `batch_size` on `device`."""
    net, shape = build(model)
    net.to(device).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    x = torch.randn(batch_size, *shape, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    times = []
    for i in range(warmup + steps):
        _sync(device)
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(net(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        _sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def loader_rate(dataset: str, workers: int, images: int) -> float:
    """Images/s of the full profile's RandAugment pipeline in `workers` DataLoader processes."""
    from minivit.augment import rand_augment
    from minivit.data import SHAPES
    from minivit.recipes import get
    from minivit.train.loop import _TransformedImages
    ops = get(dataset, "full").rand_augment
    imgs = torch.randint(0, 256, (images, *SHAPES[dataset]), dtype=torch.uint8)
    ds = _TransformedImages(imgs, torch.zeros(images, dtype=torch.long), rand_augment(dataset, *ops))
    loader = torch.utils.data.DataLoader(ds, batch_size=256, num_workers=workers)
    t0 = time.perf_counter()
    n = sum(len(y) for _, y in loader)
    return n / (time.perf_counter() - t0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="default: CUDA > MPS > CPU")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--max-batch", type=int, default=None, help="cap the batch sizes (a dry run on a CPU)")
    p.add_argument("--workers", type=int, nargs="+", default=[4, 8, 14], help="DataLoader workers to time")
    p.add_argument("--loader-images", type=int, default=4096)
    p.add_argument("--models", nargs="+", default=None, help="only these plan models (default: all)")
    p.add_argument("--name", default=None, help="result file suffix (default: the device's name)")
    p.add_argument("--out-dir", type=Path, default=None, help="where the JSON goes (default: benchmarks/results)")
    a = p.parse_args(argv)
    device = torch.device(a.device) if a.device else default_device()
    load_before = os.getloadavg()
    pairs = sorted({(r.model, r.batch_size) for runs in planning.notebook_runs().values() for r in runs
                    if a.models is None or r.model in a.models})
    step_s = {}
    for model, batch in pairs:
        b = min(batch, a.max_batch) if a.max_batch else batch
        step_s[planning.step_key(model, batch)] = t = step_time(model, b, device, a.warmup, a.steps)
        print(f"{model:22} batch {b:>5}: {1e3 * t:8.2f} ms/step  {b / t:>9.0f} images/s", flush=True)
    loader = {}
    for dataset in ("cifar10", "imagenette"):
        for w in a.workers:
            w = min(w, os.cpu_count() or 1)
            loader[f"{dataset} w{w}"] = r = loader_rate(dataset, w, a.loader_images)
            print(f"RandAugment {dataset:10} {w:>2} workers: {r:>8.0f} images/s", flush=True)
    rand_augment_s = {}
    for dataset, batch in sorted({(r.dataset, r.batch_size) for runs in planning.notebook_runs().values()
                                  for r in runs if r.gpu_rand_augment}):
        b = min(batch, a.max_batch) if a.max_batch else batch
        rand_augment_s[planning.rand_augment_key(dataset, batch)] = t = batch_seconds(dataset, b, device, a.steps)
        print(f"batched RandAugment {dataset:10} batch {b:>5}: {1e3 * t:8.2f} ms/batch", flush=True)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    figures = {"source": f"measured by benchmarks/gpu_step_times.py on {gpu}, torch {torch.__version__}"
                         + (" (dry run: batches capped, not a measurement)" if a.max_batch else ""),
               "step_s": step_s, "loader_images_per_s": loader, "rand_augment_s": rand_augment_s}
    name = a.name or ("dry-run" if a.max_batch else gpu.split()[-1].lower())
    save_result(f"gpu_step_times_{name}", {"device": gpu, "torch": torch.__version__, "cpu_count": os.cpu_count(),
                                           "load_before": load_before, "load_after": os.getloadavg(),
                                           "figures": figures}, *([a.out_dir] if a.out_dir else []))
    if a.max_batch or a.models:
        return 0  # a partial or capped run: its figures are no basis for the plan
    seconds = planning.plan(figures)
    for nb, s in seconds.items():
        print(f"{nb:40} {s / 60:6.1f} min (estimated from these figures)")
    print(f"{'all ten':40} {sum(seconds.values()) / 60:6.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
