"""ESTIMATES (nothing here ran on a T4): each notebook's minutes on a T4-class GPU with 2 CPU cores (Colab).

    python benchmarks/t4_estimate.py

Tooling (no notebook introduces it). Two tables:

1. The full profile on a T4, from `benchmarks/full_profile_plan.py`'s model (imported, not copied) with the T4's
   figures below: what a student got before `minivit.profile.choose` picked "quick" there. The T4 runs fp16 on
   its tensor cores (`autocast_dtype`); the FLOP rate is a range (`T4_FLOPS`), the per-step overheads are the
   H100's times `T4_OVERHEAD_FACTOR` (a slower host dispatches the same kernels), and the loader gets the plan's
   per-worker rates with the 2 cores the machine has (the plan keeps 2 cores for the main process and the
   pin-memory thread, so 1 worker): the full recipes of then, RandAugment per image in loader workers (the plan's
   `loader=True`; since 2026-11-27 they run it batched on the GPU).
2. The quick profile on a T4, which `choose` now picks there: bounded above by the measured one-at-a-time CPU
   times of the quick profile on the course's 2-core machine (`QUICK_CPU_S`), on the assumptions that a T4 never
   trains these models slower than 2 CPU cores do and that a Colab machine's 2 cores are about as fast as the
   course machine's. A first run on Colab adds the install and the data's download (not counted).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import full_profile_plan as plan  # noqa: E402

T4_CORES = 2  # Colab's T4 machines: 2 vCPUs
T4_FLOPS = (4e12, 16e12)  # training FLOP/s the T4 may sustain on these small models in fp16: about 6% of its
# 65 TFLOP/s tensor-core peak (the share the plan's H100 figure, 58.2 of 989, assumes) up to 25% (guesses, a range)
T4_OVERHEAD_FACTOR = 1.5  # per-step overhead relative to the H100 machine's (a guess: a slower host CPU)
# The quick profile measured on the course's 2-core CPU, one notebook at a time (2 threads), seconds per notebook
# 00..09: `make notebooks NB_JOBS=1` in the fresh clone of 83fef7b, 2026-11-27 (benchmarks/README.md, "Notebook
# timings"; the decoded data sets kept from its CI run, the checkpoints deleted first).
QUICK_CPU_S = dict(zip(plan.notebook_runs(), (7, 11, 9, 57, 141, 130, 106, 150, 99, 111)))
GOAL_S = 600.0  # the goal: each notebook within 10 minutes on a T4


def full_on_t4(flops_per_s: float) -> dict[str, float]:
    """The plan's full-profile seconds per notebook with the T4's figures (the plan's GPU_CORES set to 2 meanwhile)."""
    figures = {**plan.FIGURES, "flops_per_s": flops_per_s,
               "overhead_s": {k: v * T4_OVERHEAD_FACTOR for k, v in plan.FIGURES["overhead_s"].items()}}
    saved, plan.GPU_CORES = plan.GPU_CORES, T4_CORES
    try:
        return plan.plan(figures, loader=True)
    finally:
        plan.GPU_CORES = saved


def main() -> int:
    fast, slow = full_on_t4(T4_FLOPS[1]), full_on_t4(T4_FLOPS[0])
    print("ESTIMATES, not measured: minutes per notebook on a T4 with 2 CPU cores")
    print(f"{'notebook':38} {'full (old choice)':>18} {'quick (chosen now), at most':>28}")
    for nb in plan.notebook_runs():
        print(f"{nb:38} {fast[nb] / 60:7.1f} - {slow[nb] / 60:5.1f} min {QUICK_CPU_S[nb] / 60:20.1f} min")
    print(f"{'all ten':38} {sum(fast.values()) / 60:7.1f} - {sum(slow.values()) / 60:5.1f} min "
          f"{sum(QUICK_CPU_S.values()) / 60:20.1f} min")
    over = [nb for nb in plan.notebook_runs() if QUICK_CPU_S[nb] > GOAL_S]
    print(f"quick profile over the {GOAL_S / 60:.0f}-minute goal: {', '.join(over) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
