"""Tests for minivit.profile: profile choice, env override, errors, one-line description."""
import subprocess
import sys

import pytest
import torch

from minivit.profile import ENV_VAR, PROFILES, Profile, default_device, get_profile


def test_default_follows_device(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert get_profile(device="cpu").name == "quick"
    assert get_profile(device="cuda").name == "full"  # a torch.device needs no GPU to exist
    expected = "full" if torch.cuda.is_available() else "quick"
    assert get_profile().name == expected
    assert get_profile().device == default_device()


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
    assert line == quick.describe() and "\n" not in line
    for part in ("profile=quick", "device=cpu", f"torch={torch.__version__}", f"threads={torch.get_num_threads()}"):
        assert part in line
    assert set(PROFILES) == {"quick", "full"}
    assert quick.device == torch.device("cpu") and isinstance(quick.device, torch.device)


def test_import_has_no_side_effects():
    out = subprocess.run([sys.executable, "-c", "import minivit.profile"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
