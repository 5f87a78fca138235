"""Run profiles: `quick` (CPU, what CI runs) and `full` (GPU, the real recipes).

Introduced in 00_start_here.ipynb.

Every notebook starts with

    profile = get_profile()
    print(profile)                      # one line: profile, device, torch version, threads
    epochs = profile.pick(quick=3, full=200)

The profile is chosen by the device (CUDA -> "full", otherwise "quick") and can be
forced with the environment variable MINIVIT_PROFILE=quick|full (for example to
run the quick notebooks on a GPU, or the full ones on a patient CPU). MINIVIT_SMOKE=1 adds
the smoke run (`minivit.smoke`): the profile's code paths with a sliver of its work, so
`MINIVIT_PROFILE=full MINIVIT_SMOKE=1` checks the GPU path on a CPU in minutes;
`profile.smoke` is then True and the profile's line says "smoke".
Nothing happens on import: the device is looked up when `get_profile()` is called.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import torch

PROFILES = ("quick", "full")  # the valid profile names
ENV_VAR = "MINIVIT_PROFILE"  # environment variable that overrides the choice by device


def default_device() -> torch.device:
    """CUDA if available, else Apple MPS if available, else CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple MPS"
    try:  # Linux: the CPU model; elsewhere platform.processor() is good enough
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


@dataclass(frozen=True)
class Profile:
    """Which recipe to run ("quick" or "full") and on which device."""

    name: str  # "quick" (CPU, minutes) or "full" (GPU, the real recipe)
    device: torch.device  # where models and batches go
    smoke: bool = False  # a smoke run (minivit.smoke): this profile's code paths, a sliver of its work

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {self.name!r}")
        object.__setattr__(self, "device", torch.device(self.device))

    @property
    def is_quick(self) -> bool:
        return self.name == "quick"

    def pick(self, quick, full):
        """`quick` under the quick profile, `full` under the full one: `epochs = profile.pick(3, 200)`."""
        return quick if self.is_quick else full

    def describe(self) -> str:
        """One line for the top of a notebook: profile, device, torch version, CPU threads."""
        name = f"{self.name} (smoke: a sliver of the work, claims not checked)" if self.smoke else self.name
        return (f"minivit profile={name} device={self.device.type} ({_device_name(self.device)}) "
                f"torch={torch.__version__} threads={torch.get_num_threads()}")

    def __str__(self) -> str:
        return self.describe()


def get_profile(name: str | None = None, device: torch.device | str | None = None,
                smoke: bool | None = None) -> Profile:
    """The run profile: `name`, else $MINIVIT_PROFILE, else "full" on CUDA and "quick" otherwise.

    `device` defaults to `default_device()`; `smoke` to $MINIVIT_SMOKE (`minivit.smoke.active()`). A bad name
    raises ValueError listing the valid ones.
    """
    from . import smoke as _smoke
    device = torch.device(device) if device is not None else default_device()
    if name is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            if env.lower() not in PROFILES:
                raise ValueError(f"environment variable {ENV_VAR}={env!r} is not a profile; "
                                 f"expected one of {PROFILES} (or unset it to choose by device)")
            name = env.lower()
        else:
            name = "full" if device.type == "cuda" else "quick"
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {name!r}")
    return Profile(name, device, _smoke.active() if smoke is None else bool(smoke))
