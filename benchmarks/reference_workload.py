"""A fixed reference workload that measures the machine's speed, so a time budget can be given in reference seconds.

The course machines vary by about 1.5x in speed from one run to the next (they are shared), so "300 s of training"
means different work on different days. `time_to_accuracy.py` therefore measures, in the same process and on the
same device and number of threads as its training, how fast this machine runs a fixed workload right now, and scales
its budget: a budget of B reference seconds becomes

    B_wall = B * reference_rate / measured_rate

wall-clock seconds (`scaled_budget`), where `reference_rate` is the workload's rate on the reference machine
(`REFERENCE_RATES`). A machine running at half the reference speed trains for twice as long, so the same work fits.

The workload: training steps (forward, cross-entropy, backward, gradient clip at 1.0, AdamW) of a small ViT built
from plain PyTorch -- a Conv2d patch embedding, a class token and a learned position embedding, a pre-norm
`torch.nn.TransformerEncoder` (GELU, no dropout), a final LayerNorm and a linear head -- at ViT-Nano/4's size (D=64,
depth 4, 4 heads, MLP 128, 4x4 patches of 32-px images: 64 tokens + the class token, 10 classes), batch 256 of
random images, seeded. It uses none of minivit's code on purpose: when minivit gets faster, the reference does not,
so the gain shows up as more training in the same reference budget instead of being calibrated away.

The measurement (`measure_rate`): a few untimed warm-up steps (which also time one step), then `rounds` timed rounds
of equally many steps, about `seconds` in all (at least one step a round, so a very slow machine takes longer), and
the median round's steps per second -- robust to one round that another process slowed down.

How the reference rate is obtained: on the reference machine, quiet (nothing else running; 1-minute load average
well under its core count), run `python benchmarks/time_to_accuracy.py --calibrate-only` three times with the
default threads, and record the median of the three rates in `REFERENCE_RATES` with the date, the machine, the
threads and the torch version. Re-basing a single run: `time_to_accuracy.py --reference-rate R`.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

# The workload's size (ViT-Nano/4 of minivit.config, written out here rather than imported).
WORKLOAD = dict(image_size=32, patch_size=4, in_channels=3, dim=64, depth=4, heads=4, mlp_dim=128, num_classes=10,
                batch_size=256)

# The workload's rate on the reference machine, per device type (steps/s with the threads given). Only the CPU has
# one; on other devices `time_to_accuracy.py` keeps the budget in wall-clock seconds unless --reference-rate is given.
#
# Measured on a quiet reference machine: 2026-11-27, the course's 2-core AMD EPYC machine, torch 2.14.1, 2 threads,
# `python benchmarks/time_to_accuracy.py --calibrate-only` three times (2.405, 2.226, 2.271 steps/s; 1-minute load
# average 1.0-1.35, the calibration itself; the median is taken). An earlier measurement (0.19-0.41 steps/s,
# 2026-11-26) was taken while other trainings shared the cores and is not used.
REFERENCE_RATES: dict[str, dict] = {
    "cpu": {"steps_per_s": 2.271, "threads": 2, "date": "2026-11-27", "machine": "2-core AMD EPYC (the course's CI kind)",
            "torch": "2.14.1", "runs": [2.405, 2.226, 2.271]},
}


def describe(workload: dict = WORKLOAD) -> str:
    """The workload in one line, for the results."""
    w = workload
    grid = w["image_size"] // w["patch_size"]
    return (f"plain-PyTorch ViT training step (Conv2d patch embedding, nn.TransformerEncoder pre-norm GELU, linear "
            f"head; forward, cross-entropy, backward, clip 1.0, AdamW): D={w['dim']}, depth {w['depth']}, "
            f"{w['heads']} heads, MLP {w['mlp_dim']}, {w['patch_size']}x{w['patch_size']} patches of "
            f"{w['image_size']}-px images ({grid * grid} tokens + class token), {w['num_classes']} classes, "
            f"batch {w['batch_size']} of random images, seeded")


class ReferenceViT(nn.Module):
    """A small ViT in plain PyTorch: (B, C, H, W) -> (B, num_classes) logits."""

    def __init__(self, image_size: int, patch_size: int, in_channels: int, dim: int, depth: int, heads: int,
                 mlp_dim: int, num_classes: int, **_):
        super().__init__()
        n = (image_size // patch_size) ** 2
        self.patch = nn.Conv2d(in_channels, dim, kernel_size=patch_size, stride=patch_size)  # (B, D, H/P, W/P)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, mlp_dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)  # (B, N, D)
        x = torch.cat([self.cls.expand(len(x), -1, -1), x], dim=1) + self.pos  # (B, N + 1, D)
        return self.head(self.norm(self.encoder(x))[:, 0])  # (B, K)


def scaled_budget(budget_ref: float, reference_rate: float, measured_rate: float) -> float:
    """Wall-clock seconds that hold as much work as `budget_ref` seconds on the reference machine:
    budget_ref * reference_rate / measured_rate (rates in the same unit, e.g. steps/s)."""
    if not budget_ref >= 0 or not reference_rate > 0 or not measured_rate > 0:  # `not` also refuses NaN
        raise ValueError(f"need budget_ref >= 0 and positive rates, got {budget_ref}, {reference_rate}, "
                         f"{measured_rate}")
    return budget_ref * reference_rate / measured_rate


def measure_rate(device="cpu", *, seconds: float = 7.0, rounds: int = 7, warmup: int = 3,
                 workload: dict = WORKLOAD) -> dict:
    """Time training steps of the reference workload on `device` with this process's threads; return a dict:

    steps_per_s: the median round's rate; round_steps_per_s: every round's; steps_per_round, rounds, warmup,
    seconds (the timed rounds, in all), threads, device, workload (`describe`).

    `warmup` untimed steps (at least 1) come first; their last one sets how many steps a round gets so that the
    `rounds` rounds take about `seconds` together (at least one step each). Seeded; torch's global RNG is left as
    it was.
    """
    if rounds < 1 or warmup < 1 or not seconds > 0:
        raise ValueError(f"need rounds >= 1, warmup >= 1 and seconds > 0, got {rounds}, {warmup}, {seconds}")
    device = torch.device(device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = ReferenceViT(**workload).to(device).train()
        g = torch.Generator().manual_seed(0)
        b, c, s = workload["batch_size"], workload["in_channels"], workload["image_size"]
        x = torch.randn(b, c, s, s, generator=g).to(device)  # (B, C, H, W)
        y = torch.randint(0, workload["num_classes"], (b,), generator=g).to(device)  # (B,)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

    def steps(n: int) -> float:  # seconds for n training steps
        sync()
        t = time.perf_counter()
        for _ in range(n):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        sync()
        return time.perf_counter() - t

    for _ in range(warmup - 1):
        steps(1)
    per_step = steps(1)
    n = max(1, round(seconds / rounds / per_step))
    times = [steps(n) for _ in range(rounds)]
    rates = [n / t for t in times]
    return {"steps_per_s": statistics.median(rates), "round_steps_per_s": [round(r, 4) for r in rates],
            "steps_per_round": n, "rounds": rounds, "warmup": warmup, "seconds": round(sum(times), 2),
            "threads": torch.get_num_threads(), "device": str(device), "workload": describe(workload)}
