"""The choice of PyTorch build for `make install`, tested without installing anything."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "torch_pip_args.py"
spec = importlib.util.spec_from_file_location("torch_pip_args", SCRIPT)
tpa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tpa)
CPU = ["--index-url", tpa.CPU_INDEX, "--extra-index-url", tpa.PYPI]


def never(): raise AssertionError("the index should not be asked")


@pytest.mark.parametrize("variant, system, gpu, up, expected", [
    ("auto", "Linux", False, True, CPU),  # no GPU, index answers: CPU-only build
    ("auto", "Linux", False, False, []),  # offline (e.g. a local wheel cache): pip's default, still works
    ("auto", "Linux", True, None, []),  # NVIDIA GPU: default CUDA build, index not asked
    ("auto", "Darwin", False, None, []),  # macOS wheels on PyPI are CPU/MPS already
    ("auto", "Windows", False, True, CPU),
    ("cpu", "Linux", True, None, CPU),  # forced
    ("cuda", "Linux", False, None, []),
    ("default", "Linux", False, None, []),
])
def test_choice(variant, system, gpu, up, expected):
    args, reason = tpa.choose(variant, system, gpu, never if up is None else (lambda: up))
    assert args == expected and reason


def test_bad_variant_is_a_clear_error():
    with pytest.raises(ValueError, match="TORCH_VARIANT='gpu' is not one of"):
        tpa.choose("gpu", "Linux", False, never)


@pytest.mark.parametrize("variant, stdout, rc", [("cpu", " ".join(CPU), 0), ("cuda", "", 0), ("nope", "", 2)])
def test_script_prints_only_the_arguments(variant, stdout, rc):
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                       env={**os.environ, "TORCH_VARIANT": variant})
    assert r.returncode == rc and r.stdout.strip() == stdout and r.stderr  # the reason goes to stderr


def test_makefile_passes_the_arguments_to_pip():
    r = subprocess.run(["make", "-n", "-B", "install", "TORCH_VARIANT=cpu", "VENV=/nonexistent-venv"],
                       capture_output=True, text=True, cwd=SCRIPT.parents[1])
    assert r.returncode == 0, r.stderr
    assert "TORCH_VARIANT=cpu python3 .ci/torch_pip_args.py" in r.stdout and "$args" in r.stdout
