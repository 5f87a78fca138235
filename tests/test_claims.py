"""minivit.claims.claim: prints the statistic beside the claim, raises when it fails, only prints in a smoke run."""

import json
import math

import pytest
import torch

from minivit.claims import ClaimError, claim
from minivit.profile import Profile

QUICK, FULL, SMOKE = Profile("quick", "cpu"), Profile("full", "cpu"), Profile("full", "cpu", smoke=True)


def test_a_claim_that_holds_prints_and_returns_true(capsys):
    assert claim("the CNN beats the ViT (McNemar z)", 5.43, above=3, profile=QUICK) is True
    out = capsys.readouterr().out
    assert out.startswith("✓") and "McNemar z" in out and "5.43" in out and "> 3" in out and "[quick]" in out


@pytest.mark.parametrize("profile", [QUICK, FULL])
def test_a_claim_that_fails_raises_in_quick_and_full(profile, capsys):
    with pytest.raises(ClaimError, match=rf"{profile.name} profile.*accuracy: 0\.3 \(claim: > 0\.5\)"):
        claim("accuracy", 0.3, above=0.5, profile=profile)
    assert capsys.readouterr().out.startswith("✗")
    assert issubclass(ClaimError, AssertionError)  # a failed claim reads like a failed assert


def test_smoke_prints_not_checked_and_never_raises(capsys):
    assert claim("accuracy", 0.3, above=0.5, profile=SMOKE) is False
    assert "not checked (smoke run)" in capsys.readouterr().out


def test_bounds_between_and_below_and_tensors():
    assert claim("gap", torch.tensor(0.2), above=0.1, below=0.3, profile=QUICK)
    with pytest.raises(ClaimError):
        claim("gap", 0.35, above=0.1, below=0.3, profile=QUICK)
    with pytest.raises(ClaimError):
        claim("loss", math.nan, below=1.0, profile=QUICK)  # NaN never satisfies a claim
    assert claim("loss", 0.5, below=1.0, profile=QUICK)


def test_profile_specific_strength():
    z = 1.0
    assert claim("the CNN is not worse", z, above=FULL.pick(quick=3, full=-2), profile=FULL)
    with pytest.raises(ClaimError):
        claim("the CNN wins", z, above=QUICK.pick(quick=3, full=-2), profile=QUICK)


def test_misuse_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a bound"):
        claim("something", 1.0, profile=QUICK)
    with pytest.raises(ValueError, match="claim in words"):
        claim("", 1.0, above=0, profile=QUICK)


def test_default_profile_follows_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("MINIVIT_SMOKE", "1")
    assert claim("x", 0.0, above=1.0) is False
    assert "not checked" in capsys.readouterr().out


def test_every_claim_is_logged_where_asked(tmp_path, monkeypatch, capsys):
    log = tmp_path / "claims.jsonl"
    claim("held", 5.0, above=3, profile=FULL)  # no log asked for: no file
    assert not log.exists()
    monkeypatch.setenv("MINIVIT_CLAIMS_LOG", str(log))
    claim("the CNN beats the ViT (McNemar z)", torch.tensor(5.5), above=3, profile=FULL)
    with pytest.raises(ClaimError):
        claim("accuracy", 0.3, above=0.5, below=0.9, profile=QUICK)  # logged before it raises
    claim("loss", math.nan, below=1, profile=SMOKE)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [
        {"claim": "the CNN beats the ViT (McNemar z)", "value": 5.5, "above": 3.0, "below": None, "held": True,
         "profile": "full", "checked": True},
        {"claim": "accuracy", "value": 0.3, "above": 0.5, "below": 0.9, "held": False, "profile": "quick",
         "checked": True},
        {"claim": "loss", "value": None, "above": None, "below": 1.0, "held": False, "profile": "full",
         "checked": False}]
