"""benchmarks/t4_estimate.py: the T4 estimates come from the plan's model (not a copy of it) and cover every notebook."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import full_profile_plan as planning  # noqa: E402
import t4_estimate  # noqa: E402


def test_t4_estimates_use_the_plans_model_with_two_cores():
    cores = planning.GPU_CORES
    fast, slow = t4_estimate.full_on_t4(t4_estimate.T4_FLOPS[1]), t4_estimate.full_on_t4(t4_estimate.T4_FLOPS[0])
    assert planning.GPU_CORES == cores  # put back
    assert set(fast) == set(slow) == set(planning.plan()) == set(t4_estimate.QUICK_CPU_S)
    assert all(slow[nb] >= fast[nb] for nb in fast)  # a lower FLOP rate is never faster
    h100 = planning.plan(loader=True)  # the full recipes of then: RandAugment in loader workers
    assert fast["04_training_a_vit"] > 2 * h100["04_training_a_vit"]  # 1 loader worker instead of 14


def test_the_quick_profile_meets_the_t4_goal_by_its_measured_cpu_times():
    assert max(t4_estimate.QUICK_CPU_S.values()) <= t4_estimate.GOAL_S
