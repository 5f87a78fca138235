"""Tests for minivit.profile: profile choice, env override, errors, one-line description."""
import subprocess
import sys

import pytest
import torch

import minivit.profile as mprofile
from minivit.profile import ENV_VAR, PROFILES, Profile, choose, default_device, full_min_cores, get_profile


def _machine(monkeypatch, capability=None, cores=16):
    """Pretend this machine has a CUDA GPU of `capability` (None: none) and `cores` CPU cores."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: capability is not None)

    def get_capability(device=None):
        if capability is None:
            raise RuntimeError("Found no NVIDIA driver on your system")
        return capability
    monkeypatch.setattr(torch.cuda, "get_device_capability", get_capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
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


@pytest.mark.parametrize("capability, cores, name, why", [
    ((9, 0), 16, "full", "compute capability 9.0 (bf16 tensor cores) and 16 CPU cores"),  # an H100
    ((8, 0), 8, "full", "compute capability 8.0"),  # an A100 with the fewest cores that do
    ((8, 9), 2, "quick", "2 CPU cores < 8 (the full profile is timed only on 16-core hosts)"),  # an L4 on Colab
    ((7, 5), 2, "quick", "compute capability 7.5 < 8.0 (no bf16 tensor cores) and 2 CPU cores < 8"),  # a T4 on Colab
    ((7, 5), 32, "quick", "compute capability 7.5 < 8.0"),  # a T4 on a big machine
    ((8, 0), 7, "quick", "7 CPU cores < 8"),
])
def test_choice_by_capability_and_cores(monkeypatch, capability, cores, name, why):
    _machine(monkeypatch, capability, cores)
    chosen, reason = choose(torch.device("cuda"))
    assert chosen == name and why in reason and "MINIVIT_PROFILE=quick|full" in reason
    profile = get_profile()
    assert profile.name == name and profile.device.type == "cuda" and profile.reason == reason
    line = str(profile)
    assert "\n" not in line and line == f"{profile.describe()}; {reason}"
    assert f"profile={name}" in line and "Fake GPU" in line


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
