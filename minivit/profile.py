"""Run profiles: `quick` (CPU, what CI runs) and `full` (GPU, the real recipes).

Introduced in 00_start_here.ipynb.

Every notebook starts with

    profile = get_profile()
    print(profile)                      # one line: profile, device, torch version, threads, and why
    epochs = profile.pick(quick=3, full=200)

The profile is chosen by the machine (`choose`): "full" only on a CUDA GPU with bf16 tensor cores (compute
capability >= 8.0), at least `full_min_cores()` (8) CPU cores (the full profile is timed only on 16-core hosts),
and a full-profile time that is known: on the H100 the course was timed on, or ESTIMATED for the GPU's class
(`GPU_CLASSES`, from vendor datasheet peaks) at most `FULL_BUDGET_NOTEBOOK_MIN` (10) minutes for the longest
notebook (today the H100 variants, the H200 and the A100). "quick" on any other GPU (a T4, an L4, one not in the
table, a 2-core Colab machine), on Apple
MPS and on the CPU. `print(profile)` says in one line what was chosen and why; on a CUDA GPU other than the H100
it adds the full profile's estimated minutes there and the setting that chooses the other profile. It can be
forced with the environment variable MINIVIT_PROFILE=quick|full (for example to run the quick notebooks on a GPU,
or the full ones on a patient CPU). MINIVIT_SMOKE=1 adds
the smoke run (`minivit.smoke`): the profile's code paths with a sliver of its work, so
`MINIVIT_PROFILE=full MINIVIT_SMOKE=1` checks the GPU path on a CPU in minutes;
`profile.smoke` is then True and the profile's line says "smoke".
Nothing happens on import: the device is looked up when `get_profile()` is called.
"""

from __future__ import annotations

import os
import platform
import re
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

# The full profile's time on other GPUs: ESTIMATES, not measurements. Nothing of the full profile has run on any
# GPU but one H100 (SXM, "NVIDIA H100 80GB HBM3", 16 host cores). Its minutes there, all ten notebooks and the
# longest (04 since 05 reads its sweep from a record, 2026-12-08), are themselves estimated, by
# `benchmarks/full_profile_plan.py` (calibrated on the H100 runs of 04, 05 and 06 measured on 2026-11-27;
# docs/results.md): (calibrated figures, a pessimistic host).
H100_FULL_MIN = {"all ten notebooks": (10.0, 11.6), "the longest": (2.1, 2.5)}
# The share of those H100 minutes that is GPU work (FLOPs at the sustained rate, RandAugment's pixels, evaluation),
# in the same plan: all ten 0.136, the longest (04) 0.244. The rest (per-step
# launch overhead, kernel start, data decode) runs on the host and need not slow down on a slower GPU.
GPU_BOUND_SHARE = {"all ten notebooks": 0.136, "the longest": 0.244}
FULL_BUDGET_NOTEBOOK_MIN = 10.0  # the course's goal for one notebook on a student's GPU (benchmarks/t4_estimate.py)
REFERENCE_GPU = "H100"  # the class the full profile was timed on


@dataclass(frozen=True)
class GpuClass:
    """A class of CUDA GPU with its vendor datasheet peaks: the basis of the full profile's ESTIMATED time on it."""

    name: str  # as printed, e.g. "A100"
    pattern: str  # regular expression searched (case-insensitive) in torch.cuda.get_device_name()
    tflops: float  # peak dense bf16 tensor-core TFLOP/s (fp16 where the GPU has no bf16)
    tb_per_s: float  # peak memory bandwidth, TB/s

    @property
    def factor(self) -> float:
        """ESTIMATED time of the GPU's work relative to the H100's: the larger of the ratios of the peak tensor
        throughput and of the memory bandwidth (a workload bound by whichever the slower GPU lacks more of)."""
        ref = next(g for g in GPU_CLASSES if g.name == REFERENCE_GPU)
        return max(ref.tflops / self.tflops, ref.tb_per_s / self.tb_per_s)


# Vendor datasheet figures (NVIDIA's product datasheets; tensor rates there are quoted "with sparsity", halved here
# to dense). First match wins, so the H100's PCIe and NVL cards come before the SXM one.
GPU_CLASSES = (
    GpuClass("H100 PCIe", r"H100.*PCIe", 756.0, 2.0),  # H100 PCIe: bf16 1,513 TFLOPS sparse; HBM2e 2.0 TB/s
    GpuClass("H100 NVL", r"H100.*NVL", 835.5, 3.9),  # H100 NVL: bf16 1,671 TFLOPS sparse; HBM3 3.9 TB/s
    GpuClass("H100", r"H100", 989.5, 3.35),  # H100 SXM: bf16 1,979 TFLOPS sparse; HBM3 3.35 TB/s
    GpuClass("H200", r"(?<!G)H200", 989.5, 4.8),  # H200 SXM: bf16 1,979 TFLOPS sparse; HBM3e 4.8 TB/s
    GpuClass("A100", r"A100", 312.0, 1.555),  # A100: bf16 312 dense (624 sparse); 1,555 GB/s (40GB) to
    #                                           2,039 GB/s (80GB SXM): the throughput ratio (3.2) is the larger
    GpuClass("L4", r"\bL4\b", 121.0, 0.3),  # L4: bf16 242 TFLOPS sparse; GDDR6 300 GB/s
    GpuClass("T4", r"\bT4\b", 65.0, 0.32),  # T4: fp16 mixed precision 65 TFLOPS (no bf16); GDDR6 320 GB/s
)


def gpu_class(device_name: str) -> GpuClass | None:
    """The first of `GPU_CLASSES` whose pattern is in `device_name` ("NVIDIA A100-SXM4-40GB" -> A100), else None."""
    return next((g for g in GPU_CLASSES if re.search(g.pattern, device_name, re.IGNORECASE)), None)


def full_minutes(gpu: GpuClass) -> dict[str, tuple[float, float]]:
    """ESTIMATED full-profile minutes on `gpu`, as `H100_FULL_MIN`'s (low, high) for all ten notebooks and the longest.

    low: only the GPU-bound share of the H100's calibrated minutes slows, by `gpu.factor`; high: all of the H100's
    pessimistic minutes do. Both rest on the H100's own estimate and on peak figures, not on a run on `gpu`."""
    f = gpu.factor
    return {k: (lo * (1 + GPU_BOUND_SHARE[k] * (f - 1)), hi * f) for k, (lo, hi) in H100_FULL_MIN.items()}


def full_estimate(device_name: str) -> str:
    """The full profile's estimated minutes on a CUDA GPU of this name, in words ("" for the H100 it was timed on)."""
    gpu = gpu_class(device_name)
    if gpu is None:
        return "no estimate of the full profile's time on this GPU (its class is not in minivit.profile.GPU_CLASSES)"
    if gpu.name == REFERENCE_GPU:
        return ""
    every, longest = (_span(*minutes) for minutes in full_minutes(gpu).values())
    return (f"full profile on this {gpu.name} estimated at {every} min for all ten notebooks, {longest} min the "
            f"longest (its GPU work {gpu.factor:.1f}x an H100's by datasheet peaks; not measured)")


def _span(low: float, high: float) -> str:
    """'20-55', '4.5-11': minutes, with a decimal below 10."""
    return "-".join(f"{m:.1f}" if m < 10 else f"{m:.0f}" for m in (low, high))


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
    capability >= `FULL_MIN_CAPABILITY` with >= `full_min_cores()` CPU cores whose longest full-profile notebook
    is known to fit `FULL_BUDGET_NOTEBOOK_MIN` (the H100, or a class of `GPU_CLASSES` estimated within it), else
    "quick". On a GPU other than the H100, `why` adds the estimate and the setting that chooses the other profile."""
    device = torch.device(device)
    override = f"set {ENV_VAR}=quick|full to override"
    if device.type != "cuda":
        return "quick", f"chosen: no CUDA GPU ({override})"
    cores, needed = cpu_cores(), full_min_cores()
    try:
        major, minor = torch.cuda.get_device_capability(device)
        name = torch.cuda.get_device_name(device)
    except Exception as e:  # no driver, or a CUDA device that is not there
        return "quick", f"chosen: the GPU's compute capability cannot be read ({type(e).__name__}); {override}"
    missing = []
    if (major, minor) < FULL_MIN_CAPABILITY:
        missing.append(f"compute capability {major}.{minor} < {FULL_MIN_CAPABILITY[0]}.{FULL_MIN_CAPABILITY[1]} "
                       "(no bf16 tensor cores)")
    if cores < needed:
        missing.append(f"{cores} CPU cores < {needed} (the full profile is timed only on 16-core hosts)")
    gpu, estimate = gpu_class(name), full_estimate(name)
    if gpu is None:
        missing.append("its full-profile time is unknown")
    elif gpu.name != REFERENCE_GPU:
        longest = full_minutes(gpu)["the longest"][1]
        if longest > FULL_BUDGET_NOTEBOOK_MIN:
            up_to = f"{longest:.1f}" if longest < 20 else f"{longest:.0f}"  # 10.1, not "10 min, over the 10"
            missing.append(f"its longest full-profile notebook is estimated at up to {up_to} min, over the "
                           f"{FULL_BUDGET_NOTEBOOK_MIN:.0f}-minute goal")
    other = f"{ENV_VAR}=full chooses the full profile" if missing else f"{ENV_VAR}=quick chooses the quick profile"
    tail = f"{estimate}; {other}" if estimate else override
    if missing:
        return "quick", f"chosen: quick on this GPU, {' and '.join(missing)}; {tail}"
    return "full", (f"chosen: CUDA GPU of compute capability {major}.{minor} (bf16 tensor cores) and {cores} CPU "
                    f"cores; {tail}")


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
    tensor cores, enough CPU cores and a full-profile time known to fit; "quick" otherwise). `str(profile)` then
    says why, in the same line, with the full profile's estimated minutes on a CUDA GPU other than the H100.

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
            if device.type == "cuda":  # the estimate on this GPU still helps whoever forced the profile
                try:
                    estimate = full_estimate(torch.cuda.get_device_name(device))
                except Exception:  # no driver: nothing to estimate
                    estimate = ""
                reason = f"{reason}; {estimate}" if estimate else reason
        else:
            name, reason = choose(device)
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {name!r}")
    return Profile(name, device, _smoke.active() if smoke is None else bool(smoke), reason)
