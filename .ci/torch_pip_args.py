"""Print the extra `pip install` arguments that choose the PyTorch build for this machine (stdlib only).

Used by the Makefile before anything else is installed:
    pip install "torch==2.14.1" "torchvision==0.29.1" $(python3 .ci/torch_pip_args.py)

TORCH_VARIANT=auto (default) | cpu | cuda | default
  auto     Linux or Windows without an NVIDIA GPU -> the CPU-only build from PyTorch's CPU index, when that
           index answers (about 0.2 GB of wheels instead of about 4 GB of CUDA libraries); otherwise (an NVIDIA
           GPU, macOS, or the index unreachable, e.g. offline with a local wheel cache) -> the default build.
  cpu      the CPU index, unconditionally.
  cuda, default   no extra arguments: pip's default (on Linux, PyPI's torch is the CUDA build).
The choice is explained on stderr; stdout holds only the arguments.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import urllib.request

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYPI = "https://pypi.org/simple"
VARIANTS = ("auto", "cpu", "cuda", "default")


def has_nvidia_gpu() -> bool:
    """An NVIDIA driver is installed (nvidia-smi on PATH, or the Linux driver's /proc entry)."""
    return shutil.which("nvidia-smi") is not None or os.path.exists("/proc/driver/nvidia/version")


def reachable(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "/torch/", method="HEAD"), timeout=timeout):
            return True
    except Exception:
        return False


def choose(variant: str, system: str, gpu: bool, index_up) -> tuple[list[str], str]:
    """(pip arguments, reason). `index_up` is called only when the answer depends on it."""
    if variant not in VARIANTS:
        raise ValueError(f"TORCH_VARIANT={variant!r} is not one of {VARIANTS}")
    cpu_args = ["--index-url", CPU_INDEX, "--extra-index-url", PYPI]
    if variant == "cpu":
        return cpu_args, "TORCH_VARIANT=cpu: the CPU-only build"
    if variant in ("cuda", "default"):
        return [], f"TORCH_VARIANT={variant}: pip's default build"
    if gpu:
        return [], "an NVIDIA GPU is present: pip's default (CUDA) build"
    if system == "Darwin":
        return [], "macOS: pip's default build (CPU and Apple MPS)"
    if index_up():
        return cpu_args, f"no NVIDIA GPU: the CPU-only build from {CPU_INDEX} (set TORCH_VARIANT=cuda to override)"
    return [], f"no NVIDIA GPU, but {CPU_INDEX} does not answer: pip's default build (may be the large CUDA one)"


def main() -> int:
    variant = os.environ.get("TORCH_VARIANT", "auto").strip().lower() or "auto"
    try:
        args, reason = choose(variant, platform.system(), has_nvidia_gpu(), lambda: reachable(CPU_INDEX))
    except ValueError as e:
        print(f"torch_pip_args: {e}", file=sys.stderr)
        return 2
    print(f"PyTorch build: {reason}", file=sys.stderr)
    print(" ".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
