"""Throughput: minivit's ViT vs timm's VisionTransformer at the identical config, same weights.

    python benchmarks/throughput.py                          # course presets on this machine's device
    python benchmarks/throughput.py --presets ViT-Ti/16 --batch-size 64 --image-size 224

For each preset both models are built, timm's weights are loaded into minivit's (the parameter
names match, strict=True) and the outputs are checked equal; then train steps (forward, backward,
AdamW step) and eval forwards (no_grad) are timed: `--warmup` untimed iterations, then `--repeats`
timed runs of `--iters` iterations each, alternating the two models so load changes hit both; the
median run gives images/s. The ratio minivit / timm >= 1.0 means minivit is not slower.
bf16 autocast on CUDA. Prints a table and writes benchmarks/results/throughput_<device>.json
with the load average (os.getloadavg) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minivit.config import get_preset  # noqa: E402
from minivit.profile import default_device, get_profile  # noqa: E402
from minivit.vit import ViT  # noqa: E402

from results_io import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)



def timm_twin(config):
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=config.image_size, patch_size=config.patch_size, in_chans=config.in_channels,
                             num_classes=config.num_classes, embed_dim=config.dim, depth=config.depth,
                             num_heads=config.heads, mlp_ratio=config.mlp_dim / config.dim, qkv_bias=True,
                             global_pool="token" if config.pool == "token" else "avg", drop_rate=config.dropout)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_step(model, device, train: bool):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if train else None
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")

    def step(x, y):
        if train:
            with autocast:
                logits = model(x)
            loss = F.cross_entropy(logits.float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad(), autocast:
                model(x)
    return step


def bench(models, device, batch_size, image_size, channels, warmup, iters, repeats, train):
    """{name: median images/s} for `models` (dict name -> module), runs interleaved."""
    x = torch.randn(batch_size, channels, image_size, image_size, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    steps = {}
    for name, m in models.items():
        m.train(train)
        steps[name] = make_step(m, device, train)
        for _ in range(warmup):
            steps[name](x, y)
    times = {name: [] for name in models}
    for _ in range(repeats):
        for name, step in steps.items():
            _sync(device)
            t = time.perf_counter()
            for _ in range(iters):
                step(x, y)
            _sync(device)
            times[name].append(time.perf_counter() - t)
    return {name: batch_size * iters / statistics.median(ts) for name, ts in times.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["ViT-Nano/4", "ViT-Micro/4"])
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default=None)
    p.add_argument("--no-save", action="store_true")
    a = p.parse_args(argv)
    device = torch.device(a.device) if a.device else default_device()
    load_before = os.getloadavg()
    rows = []
    for preset in a.presets:
        config = get_preset(preset, image_size=a.image_size, num_classes=10)
        torch.manual_seed(0)
        ref = timm_twin(config).to(device)
        ours = ViT(config).to(device)
        ours.load_state_dict(ref.state_dict(), strict=True)  # same names, same weights
        with torch.no_grad():
            xx = torch.randn(4, config.in_channels, a.image_size, a.image_size, device=device)
            torch.testing.assert_close(ours.eval()(xx), ref.eval()(xx), rtol=1e-4, atol=1e-4)
        row = {"preset": preset, "params": sum(q.numel() for q in ours.parameters())}
        for mode in ("train", "eval"):
            r = bench({"minivit": ours, "timm": ref}, device, a.batch_size, a.image_size, config.in_channels,
                      a.warmup, a.iters, a.repeats, mode == "train")
            row[f"{mode}_minivit"], row[f"{mode}_timm"] = r["minivit"], r["timm"]
            row[f"{mode}_ratio"] = r["minivit"] / r["timm"]
        rows.append(row)
    load_after = os.getloadavg()
    print(f"{'preset':<12} {'params':>9} {'train minivit':>13} {'train timm':>10} {'ratio':>5} "
          f"{'eval minivit':>12} {'eval timm':>9} {'ratio':>5}   (images/s, median of {a.repeats})")
    for r in rows:
        print(f"{r['preset']:<12} {r['params']:>9,} {r['train_minivit']:>13.0f} {r['train_timm']:>10.0f} "
              f"{r['train_ratio']:>5.2f} {r['eval_minivit']:>12.0f} {r['eval_timm']:>9.0f} {r['eval_ratio']:>5.2f}")
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {get_profile(device=device)}")
    if not a.no_save:
        save_result(f"throughput_{device.type}", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
