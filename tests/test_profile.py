"""Tests for minivit.profile: profile choice, env override, errors, one-line description."""
import subprocess
import sys

import pytest
import torch

import minivit.profile as mprofile
from minivit.profile import ENV_VAR, PROFILES, Profile, choose, default_device, full_min_cores, get_profile


def _machine(monkeypatch, capability=None, cores=16, name="NVIDIA H100 80GB HBM3"):
    """Pretend this machine has a CUDA GPU of `capability` (None: none) named `name`, and `cores` CPU cores."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: capability is not None)

    def get_capability(device=None):
        if capability is None:
            raise RuntimeError("Found no NVIDIA driver on your system")
        return capability
    monkeypatch.setattr(torch.cuda, "get_device_capability", get_capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(mprofile.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(mprofile.os, "cpu_count", lambda: cores)


def test_default_follows_device(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert get_profile(device="cpu").name == "quick"
    assert get_profile().device == default_device()


def test_full_recipes_need_no_loader_workers_and_the_core_floor_stays():
    from minivit.recipes import RECIPES
    full = [r for n, r in RECIPES.items() if n.endswith("-full")]
    assert all(r.workers == 0 for r in full)  # RandAugment batched on the GPU (BatchRandAugment), no workers
    assert full_min_cores() == mprofile.FULL_MIN_CORES == 8 and mprofile.FULL_LOADER_WORKERS == 14


H100, A100, L4, T4 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA L4", "Tesla T4"


@pytest.mark.parametrize("capability, cores, gpu, name, why", [
    ((9, 0), 16, H100, "full", "compute capability 9.0 (bf16 tensor cores) and 16 CPU cores"),
    ((9, 0), 8, H100, "full", "compute capability 9.0"),  # the fewest cores that do
    ((9, 0), 7, H100, "quick", "7 CPU cores < 8"),
    ((8, 0), 12, A100, "full", "compute capability 8.0"),  # Colab's A100: its longest estimated at up to 9.2 min
    ((8, 9), 12, L4, "quick", "estimated at up to 28 min, over the 10-minute goal"),  # an L4 with enough cores
    ((8, 9), 2, L4, "quick", "2 CPU cores < 8 (the full profile is timed only on 16-core hosts) and its longest "
                             "full-profile notebook is estimated at up to 28 min"),  # an L4 on a small machine
    ((7, 5), 2, T4, "quick", "compute capability 7.5 < 8.0 (no bf16 tensor cores) and 2 CPU cores < 8"),  # Colab T4
    ((7, 5), 32, T4, "quick", "compute capability 7.5 < 8.0"),  # a T4 on a big machine
    ((8, 9), 32, "NVIDIA GeForce RTX 4090", "quick", "its full-profile time is unknown"),
])
def test_choice_by_capability_cores_and_gpu_class(monkeypatch, capability, cores, gpu, name, why):
    _machine(monkeypatch, capability, cores, gpu)
    chosen, reason = choose(torch.device("cuda"))
    assert chosen == name and why in reason, reason
    profile = get_profile()
    assert profile.name == name and profile.device.type == "cuda" and profile.reason == reason
    line = str(profile)
    assert "\n" not in line and line == f"{profile.describe()}; {reason}"
    assert f"profile={name}" in line and f"({gpu})" in line


def test_the_h100_line_has_no_estimate_and_keeps_its_wording(monkeypatch):
    _machine(monkeypatch, (9, 0), 16, H100)
    assert choose(torch.device("cuda")) == ("full", "chosen: CUDA GPU of compute capability 9.0 (bf16 tensor cores) "
                                                    "and 16 CPU cores; set MINIVIT_PROFILE=quick|full to override")
    assert "estimated" not in str(get_profile())


@pytest.mark.parametrize("gpu, capability, cores, minutes", [
    (L4, (8, 9), 12, "24-130 min for all ten notebooks, 7.3-28 min the longest (its GPU work 11.2x an H100's"),
    (T4, (7, 5), 2, "29-177 min for all ten notebooks, 9.4-38 min the longest (its GPU work 15.2x an H100's"),
])
def test_other_gpus_print_the_estimate_and_how_to_choose_full(monkeypatch, gpu, capability, cores, minutes):
    _machine(monkeypatch, capability, cores, gpu)
    line = str(get_profile())
    klass = mprofile.gpu_class(gpu).name
    assert f"full profile on this {klass} estimated at {minutes}" in line and "not measured" in line
    assert line.endswith("; MINIVIT_PROFILE=full chooses the full profile") and "\n" not in line


@pytest.mark.parametrize("gpu, capability, cores, minutes", [
    ("NVIDIA H100 PCIe", (9, 0), 16, "11-19 min for all ten notebooks, 2.4-4.2 min the longest"),  # 1.7x the SXM's
    (A100, (8, 0), 12, "13-37 min for all ten notebooks, 3.2-7.9 min the longest (its GPU work 3.2x an H100's"),
])
def test_a_gpu_estimated_within_the_goal_gets_full_and_says_how_to_choose_quick(monkeypatch, gpu, capability, cores,
                                                                              minutes):
    _machine(monkeypatch, capability, cores, gpu)
    profile = get_profile()
    assert profile.name == "full"
    assert f"full profile on this {mprofile.gpu_class(gpu).name} estimated at {minutes}" in str(profile)
    assert str(profile).endswith("; MINIVIT_PROFILE=quick chooses the quick profile")


def test_an_unknown_gpu_gets_quick_and_says_there_is_no_estimate(monkeypatch):
    _machine(monkeypatch, (12, 0), 64, "Some Future GPU")
    profile = get_profile()
    assert profile.name == "quick"
    assert "no estimate of the full profile's time on this GPU" in str(profile)
    assert str(profile).endswith("MINIVIT_PROFILE=full chooses the full profile")


def test_forcing_the_profile_on_another_gpu_still_prints_the_estimate(monkeypatch):
    _machine(monkeypatch, (8, 9), 12, L4)
    monkeypatch.setenv(ENV_VAR, "full")
    line = str(get_profile())
    assert "chosen by MINIVIT_PROFILE=full; full profile on this L4 estimated at 24-130 min" in line
    _machine(monkeypatch, (9, 0), 16, H100)
    monkeypatch.setenv(ENV_VAR, "quick")
    assert str(get_profile()).endswith("; chosen by MINIVIT_PROFILE=quick")  # the H100: nothing estimated


@pytest.mark.parametrize("device_name, klass", [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100 80GB PCIe", "A100"),
    ("NVIDIA A100-PCIE-40GB", "A100"), ("NVIDIA L4", "L4"), ("Tesla T4", "T4"),
    ("NVIDIA L40S", None), ("NVIDIA A10G", None), ("NVIDIA GH200 480GB", None), ("NVIDIA GeForce RTX 4090", None),
])
def test_gpu_classes_by_device_name(device_name, klass):
    found = mprofile.gpu_class(device_name)
    assert (found.name if found else None) == klass


def test_factors_follow_the_datasheet_ratios():
    by_name = {g.name: g for g in mprofile.GPU_CLASSES}
    assert by_name["H100"].factor == 1.0 and by_name["H200"].factor == 1.0  # same tensor peak, more bandwidth
    assert by_name["A100"].factor == pytest.approx(989.5 / 312)  # bound by throughput
    assert by_name["L4"].factor == pytest.approx(3.35 / 0.3)  # bound by bandwidth
    assert by_name["T4"].factor == pytest.approx(989.5 / 65)
    for g in mprofile.GPU_CLASSES:  # the low end never above the high end, both at least the H100's
        for (lo, hi), (h_lo, h_hi) in zip(mprofile.full_minutes(g).values(), mprofile.H100_FULL_MIN.values()):
            assert h_lo <= lo <= hi and hi >= h_hi


def test_choice_without_a_gpu(monkeypatch):
    _machine(monkeypatch, None, 2)
    assert choose(torch.device("cpu")) == ("quick", "chosen: no CUDA GPU (set MINIVIT_PROFILE=quick|full to override)")
    name, reason = choose(torch.device("cuda"))  # a CUDA device asked for where none answers
    assert name == "quick" and "cannot be read" in reason
    assert get_profile().name == "quick" and str(get_profile()).endswith("to override)")


def test_env_var_wins_over_the_choice_and_says_so(monkeypatch):
    _machine(monkeypatch, (7, 5), 2)
    monkeypatch.setenv(ENV_VAR, "full")
    profile = get_profile()
    assert profile.name == "full" and str(profile).endswith("; chosen by MINIVIT_PROFILE=full")
    assert str(get_profile("quick")) == get_profile("quick").describe()  # named by the caller: no reason


@pytest.mark.parametrize("value, name", [("quick", "quick"), ("full", "full"), (" FULL ", "full")])
def test_env_var_overrides(monkeypatch, value, name):
    monkeypatch.setenv(ENV_VAR, value)
    assert get_profile(device="cpu").name == name


def test_bad_env_var_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "fast")
    with pytest.raises(ValueError, match=r"MINIVIT_PROFILE='fast'.*quick.*full"):
        get_profile()


def test_bad_name_is_a_clear_error():
    with pytest.raises(ValueError, match="quick"):
        get_profile("medium")
    with pytest.raises(ValueError, match="quick"):
        Profile("medium", torch.device("cpu"))


def test_pick_and_describe(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    quick, full = get_profile("quick", "cpu"), get_profile("full", "cpu")
    assert quick.pick(quick=3, full=200) == 3 and full.pick(quick=3, full=200) == 200
    assert quick.is_quick and not full.is_quick
    line = str(quick)
    assert line == quick.describe() and "\n" not in line  # named by the caller: no reason added
    for part in ("profile=quick", "device=cpu", f"torch={torch.__version__}", f"threads={torch.get_num_threads()}"):
        assert part in line
    assert set(PROFILES) == {"quick", "full"}
    assert quick.device == torch.device("cpu") and isinstance(quick.device, torch.device)


def test_import_has_no_side_effects():
    out = subprocess.run([sys.executable, "-c", "import minivit.profile"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
