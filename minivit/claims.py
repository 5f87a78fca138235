"""Claims: a learned result, stated with the strength each profile can support, and checked.

Introduced in 03_transformer_encoder.ipynb (the first trained model).

A notebook checks two kinds of things. Structural facts -- shapes, a derivation by hand equal to the package,
an exact identity -- hold whatever the training did: they are plain `assert`s. Learned results -- an accuracy,
a McNemar z, "trained beats initial" -- depend on how long and on what the model trained, so the same sentence
can need a different strength in the quick profile (a CPU, minutes) and in the full one (a GPU, the whole data
set). They go through `claim`, which prints the statistic beside the claim and raises when it fails:

    z = mcnemar(right_cnn, right_vit).z
    claim("the CNN is right more often than the ViT (McNemar z)", z, above=profile.pick(quick=3, full=-2))
    # ✓ the CNN is right more often than the ViT (McNemar z): 20.9 > 3  [quick]

Write the claim the paper makes, at a strength the run is sized to detect -- not what the last run showed. In a
smoke run (`MINIVIT_SMOKE=1`, `minivit.smoke`) the models train on a sliver of the data, so a claim is printed
and marked "not checked" instead of raising.

Where the environment variable MINIVIT_CLAIMS_LOG names a file, every claim also appends one JSON line to it (the
claim, its statistic, bounds, profile and whether it held), so a run whose outputs are not kept -- the GPU check,
benchmarks/gpu_check.py -- still returns every statistic, not only the failures.
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["ClaimError", "claim"]

LOG_VAR = "MINIVIT_CLAIMS_LOG"  # environment variable: a file each claim appends its JSON line to


class ClaimError(AssertionError):
    """A learned result a notebook claims did not hold in this run."""


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def claim(what: str, value: float, *, above: float | None = None, below: float | None = None,
          profile=None) -> bool:
    """Check `above < value < below` (one bound or both) for the claim `what`; print the line; return whether
    it held. Raises ClaimError when it does not hold in a quick or full run; in a smoke run only prints.

    what: the claim in words, naming the statistic, e.g. "ViT-Nano/4 beats chance (test accuracy)".
    value: the statistic (a float, or a 0-d tensor). above, below: strict bounds; pass per-profile strengths
        with `profile.pick(quick=..., full=...)`. profile: a `minivit.Profile` (default: `get_profile()`).
    """
    if not isinstance(what, str) or not what:
        raise ValueError(f"what must be the claim in words, got {what!r}")
    if above is None and below is None:
        raise ValueError("a claim needs a bound: above=..., below=... or both")
    value = float(value.item() if hasattr(value, "item") else value)
    if profile is None:
        from .profile import get_profile
        profile = get_profile()
    bounds = [f"> {_fmt(above)}"] if above is not None else []
    bounds += [f"< {_fmt(below)}"] if below is not None else []
    held = (not math.isnan(value) and (above is None or value > above) and (below is None or value < below))
    line = f"{what}: {_fmt(value)} (claim: {' and '.join(bounds)})"
    smoke = bool(getattr(profile, "smoke", False))
    if os.environ.get(LOG_VAR):
        record = {"claim": what, "value": None if math.isnan(value) else value,
                  "above": above if above is None else float(above), "below": below if below is None else float(below),
                  "held": held, "profile": profile.name, "checked": not smoke}
        with open(os.environ[LOG_VAR], "a") as f:
            f.write(json.dumps(record) + "\n")
    if smoke:
        print(f"· not checked (smoke run) {line}")
        return held
    print(f"{'✓' if held else '✗'} {line}  [{profile.name}]")
    if not held:
        raise ClaimError(f"claim failed in the {profile.name} profile: {line}")
    return held
