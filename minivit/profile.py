"""Run profiles: `quick` (CPU, what CI runs) and `full` (GPU, the real recipes).

Introduced in 00_start_here.ipynb.

Every notebook starts with

    profile = get_profile()
    print(profile)                      # one line: profile, device, torch version, threads
    epochs = profile.pick(quick=3, full=200)

The profile is chosen by the machine (`choose`): "full" only on a CUDA GPU with bf16 tensor cores (compute
capability >= 8.0) and at least `full_min_cores()` (8) CPU cores (the full profile is timed only on 16-core
hosts); "quick" on any other GPU (a T4, a 2-core Colab machine), on Apple MPS and on the CPU. `print(profile)`
says in one line what was chosen and why. It can be forced with the environment variable MINIVIT_PROFILE=quick|full (for example to
run the quick notebooks on a GPU, or the full ones on a patient CPU). MINIVIT_SMOKE=1 adds
the smoke run (`minivit.smoke`): the profile's code paths with a sliver of its work, so
`MINIVIT_PROFILE=full MINIVIT_SMOKE=1` checks the GPU path on a CPU in minutes;
`profile.smoke` is then True and the profile's line says "smoke".
Nothing happens on import: the device is looked up when `get_profile()` is called.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field

import torch

PROFILES = ("quick", "full")  # the valid profile names
ENV_VAR = "MINIVIT_PROFILE"  # environment variable that overrides the choice by device
# DataLoader workers for the per-image RandAugment pipeline on the course's 16-core GPU machine (14 workers, the
# main process and the pin-memory thread), e.g. `recipes.get("cifar10", "full").with_(workers=FULL_LOADER_WORKERS)`.
# The full recipes used them until 2026-11-27; they now run RandAugment batched on the GPU, with no workers.
FULL_LOADER_WORKERS = 14
FULL_MIN_CORES = 8  # CPU cores the full profile asks for (`full_min_cores` says why)
FULL_MIN_CAPABILITY = (8, 0)  # CUDA compute capability of bf16 tensor cores (Ampere); a T4 (7.5) emulates bf16


def default_device() -> torch.device:
    """CUDA if available, else Apple MPS if available, else CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def cpu_cores() -> int:
    """The CPU cores this process may use (its affinity where the OS reports it, else `os.cpu_count()`)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def full_min_cores() -> int:
    """CPU cores the full profile asks for: `FULL_MIN_CORES`, 8.

    Why: the full profile's notebooks have been timed only on GPU hosts with 16 cores (one H100, 2026-11-27), so
    a host with far fewer is untested. The number 8 comes from when the full recipes ran RandAugment per image in
    14 DataLoader workers (half of them plus the main process); since they run it batched on the GPU
    (`minivit.augment.BatchRandAugment`) that reason is gone, and 8 is kept as a cautious floor, not a measured
    need: no run on fewer cores has been timed."""
    return FULL_MIN_CORES


def choose(device: torch.device) -> tuple[str, str]:
    """(profile name, why) for `device` when MINIVIT_PROFILE is not set: "full" only on a CUDA GPU of compute
    capability >= `FULL_MIN_CAPABILITY` with >= `full_min_cores()` CPU cores, else "quick"."""
    device = torch.device(device)
    override = f"set {ENV_VAR}=quick|full to override"
    if device.type != "cuda":
        return "quick", f"chosen: no CUDA GPU ({override})"
    cores, needed = cpu_cores(), full_min_cores()
    try:
        major, minor = torch.cuda.get_device_capability(device)
    except Exception as e:  # no driver, or a CUDA device that is not there
        return "quick", f"chosen: the GPU's compute capability cannot be read ({type(e).__name__}); {override}"
    missing = []
    if (major, minor) < FULL_MIN_CAPABILITY:
        missing.append(f"compute capability {major}.{minor} < {FULL_MIN_CAPABILITY[0]}.{FULL_MIN_CAPABILITY[1]} "
                       "(no bf16 tensor cores)")
    if cores < needed:
        missing.append(f"{cores} CPU cores < {needed} (the full profile is timed only on 16-core hosts)")
    if missing:
        return "quick", f"chosen: quick on this GPU, {' and '.join(missing)}; {override}"
    return "full", (f"chosen: CUDA GPU of compute capability {major}.{minor} (bf16 tensor cores) and {cores} CPU "
                    f"cores; {override}")


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
    reason: str = field(default="", compare=False)  # why this profile was chosen ("" when the caller named it)

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
        """`describe()`, and why the profile was chosen when `get_profile` chose it (still one line)."""
        return f"{self.describe()}; {self.reason}" if self.reason else self.describe()


def get_profile(name: str | None = None, device: torch.device | str | None = None,
                smoke: bool | None = None) -> Profile:
    """The run profile: `name`, else $MINIVIT_PROFILE, else `choose(device)` ("full" only on a CUDA GPU with bf16
    tensor cores and enough CPU cores; "quick" otherwise). `str(profile)` then says why, in the same line.

    `device` defaults to `default_device()`; `smoke` to $MINIVIT_SMOKE (`minivit.smoke.active()`). A bad name
    raises ValueError listing the valid ones.
    """
    from . import smoke as _smoke
    device = torch.device(device) if device is not None else default_device()
    reason = ""
    if name is None:
        env = os.environ.get(ENV_VAR, "").strip()
        if env:
            if env.lower() not in PROFILES:
                raise ValueError(f"environment variable {ENV_VAR}={env!r} is not a profile; "
                                 f"expected one of {PROFILES} (or unset it to choose by device)")
            name, reason = env.lower(), f"chosen by {ENV_VAR}={env.lower()}"
        else:
            name, reason = choose(device)
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {name!r}")
    return Profile(name, device, _smoke.active() if smoke is None else bool(smoke), reason)
