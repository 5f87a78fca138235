"""minivit.profile's H100 reference minutes and GPU-bound shares are benchmarks/full_profile_plan.py's, so the
estimates printed on other GPUs move with the plan (a figure changed there fails here until copied)."""

import sys
from pathlib import Path

import pytest

from minivit import profile as mprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import full_profile_plan as planning  # noqa: E402


def _gpu_free(figures: dict) -> dict:
    """The plan's figures with the GPU's own work made free: FLOPs, RandAugment's pixels and evaluation."""
    return {**figures, "flops_per_s": float("inf"), "eval_images_per_s": float("inf"),
            "rand_augment_image_s": {k: 0.0 for k in planning.FIGURES["rand_augment_image_s"]}}


def test_the_h100_minutes_are_the_plans():
    ranges = planning.plan_range()
    longest = max(ranges, key=lambda nb: ranges[nb][1])
    every = (sum(lo for lo, _ in ranges.values()) / 60, sum(hi for _, hi in ranges.values()) / 60)
    assert mprofile.H100_FULL_MIN["all ten notebooks"] == pytest.approx(every, abs=0.05)
    assert mprofile.H100_FULL_MIN["the longest"] == pytest.approx((ranges[longest][0] / 60, ranges[longest][1] / 60),
                                                                  abs=0.05)


def test_the_gpu_bound_shares_are_the_plans():
    full, host = planning.plan(), planning.plan(_gpu_free(planning.FIGURES))
    longest = max(full, key=full.get)
    assert mprofile.GPU_BOUND_SHARE["all ten notebooks"] == pytest.approx(
        1 - sum(host.values()) / sum(full.values()), abs=0.005)
    assert mprofile.GPU_BOUND_SHARE["the longest"] == pytest.approx(1 - host[longest] / full[longest], abs=0.005)


def test_the_budget_is_the_t4_estimates_goal():
    import t4_estimate
    assert mprofile.FULL_BUDGET_NOTEBOOK_MIN * 60 == t4_estimate.GOAL_S


def test_the_docs_table_is_the_modules():
    # docs/profiles.md's table of estimates: each class's row holds its factor and minutes as the module computes them
    rows = {line.split("|")[1].split(" (")[0].strip(): line for line in (ROOT / "docs" / "profiles.md").read_text().splitlines()
            if line.startswith("| ") and "|" in line[2:]}
    for gpu in mprofile.GPU_CLASSES:
        if gpu.name == mprofile.REFERENCE_GPU:
            continue
        cells = [c.strip() for c in rows[gpu.name].split("|")[1:-1]]
        every, longest = (mprofile._span(*m).replace("-", "–") for m in mprofile.full_minutes(gpu).values())
        assert cells[3:6] == [f"{gpu.factor:.1f}", every, longest], (gpu.name, cells)
        assert cells[1].split()[0] == f"{gpu.tflops:g}"
