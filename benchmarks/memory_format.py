"""Memory format: a training step of the course's convolutional models with NCHW vs channels-last (NHWC) input.

    python benchmarks/memory_format.py                    # the course's CNN and hybrid on this machine's device
    python benchmarks/memory_format.py --batch-size 125 --steps 10 --repeats 5

For each model (seeded, random images: the time does not depend on the values) the two layouts are set through
the model's `memory_format` attribute (`minivit.cnn`'s docstring) and timed alternately: `--repeats` rounds, each
`--steps` training steps (forward, cross-entropy, backward, gradient clip, AdamW) with each layout after two untimed
steps, so a change of load hits both alike; the median round is reported. This is what chose channels-last for
`CifarResNet` and `HybridEmbed`. Prints a table and writes benchmarks/results/memory_format_<device>.json with the
load average (os.getloadavg) before and after.
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
from minivit.cnn import CifarResNet  # noqa: E402
from minivit.optim import param_groups  # noqa: E402
from minivit.profile import default_device  # noqa: E402
from minivit.vit import ViT  # noqa: E402

from results_io import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

# (name, how to build it, the module whose `memory_format` sets the layout): the quick notebooks' conv models
MODELS = [
    ("ResNet-14 (04-06)", lambda: CifarResNet.from_preset("ResNet-14"), lambda m: m),
    ("R-S4+ViT-Nano/4 (06)", lambda: ViT.from_preset("R-S4+ViT-Nano/4"), lambda m: m.patch_embed),
]
LAYOUTS = {"NCHW": torch.contiguous_format, "channels-last": torch.channels_last}


def time_steps(model, optimizer, x, y, steps: int) -> float:
    """Seconds for `steps` training steps on the batch (x, y)."""
    t = time.perf_counter()
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    return time.perf_counter() - t


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=125, help="images per step (notebook 04's quick recipe: 125)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per round and layout")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (each times both layouts)")
    p.add_argument("--device", default=None, help="default: CUDA > MPS > CPU")
    args = p.parse_args(argv)
    if min(args.batch_size, args.steps, args.repeats) < 1:
        p.error("--batch-size, --steps and --repeats must be >= 1")
    device = torch.device(args.device) if args.device else default_device()
    out = {"device": str(device), "threads": torch.get_num_threads(), "torch": torch.__version__,
           "load_before": os.getloadavg(), "batch_size": args.batch_size, "steps": args.steps,
           "repeats": args.repeats, "models": {}}
    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch_size, 3, 32, 32, generator=g).to(device)  # (B, C, H, W) NCHW
    y = torch.randint(0, 10, (args.batch_size,), generator=g).to(device)  # (B,)
    for name, build, layer in MODELS:
        torch.manual_seed(0)
        model = build().to(device).train()
        optimizer = torch.optim.AdamW(param_groups(model, 0.05), lr=1e-3)
        seconds = {layout: [] for layout in LAYOUTS}
        for round_ in range(args.repeats + 1):  # round 0: untimed warm-up of both layouts
            for layout, fmt in LAYOUTS.items():
                layer(model).memory_format = fmt
                s = time_steps(model, optimizer, x, y, 2 if round_ == 0 else args.steps)
                if round_:
                    seconds[layout].append(s / args.steps)
        ms = {layout: 1000 * statistics.median(s) for layout, s in seconds.items()}
        out["models"][name] = {"seconds_per_step": seconds, "median_ms": ms,
                               "channels_last_saves": 1 - ms["channels-last"] / ms["NCHW"]}
        print(f"{name:24} " + "  ".join(f"{k}: {v:6.1f} ms/step" for k, v in ms.items())
              + f"  channels-last saves {out['models'][name]['channels_last_saves']:.0%}")
    out["load_after"] = os.getloadavg()
    save_result(f"memory_format_{device.type}", out)
    return out


if __name__ == "__main__":
    main()
