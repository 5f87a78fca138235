"""The offline kit end to end (docs/gpu.md, "Without internet"): a real kit made with `minivit.gpu.kit` for Python
3.12 (this machine's Python where no 3.12 is found), then its commands run as the page writes them, in a fresh
virtual environment, with pip barred from every index (--no-index in install.sh, PIP_NO_INDEX=1, no pip
configuration) and every proxy variable pointing at a closed local port, so that downloads through Python's HTTP
clients fail: `sh install.sh`, then every test module collected (each imports what it needs), notebooks 00 and 03
passed with `pytest --nbval` on the CPU, their data sets found only in the kit, and the GPU check's command
(`benchmarks/gpu_check.py`) run on 00 in the smoke run.

The kit is made once per session in a temporary folder. It needs the package index (and this checkout's data/
with the three data sets, which are otherwise downloaded from their official sources); without them the test is
skipped and says why. torch: the CPU-only build when PyTorch's CPU index answers, else PyPI's build, which brings
CUDA's libraries (a kit of about 3.4 GB). Measured times are printed (pytest -s), never asserted.
"""
import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minivit import gpu
from minivit.data import data_root

NOTEBOOKS = ["notebooks/00_start_here.ipynb", "notebooks/03_transformer_encoder.ipynb"]
# An integration test (`make integration`; `make unit` leaves it out): it builds a real kit of every wheel.
pytestmark = pytest.mark.integration

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, so a connection through this "proxy" fails at once


def target_python() -> str:
    """$MINIVIT_KIT_PYTHON, else a Python 3.12 (on PATH, or pyenv's), else this one."""
    found = [os.environ.get("MINIVIT_KIT_PYTHON"), shutil.which("python3.12"),
             *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))]
    for python in filter(None, found):
        if subprocess.run([python, "-c", "import venv, ensurepip"], capture_output=True).returncode == 0:
            return python
    return sys.executable


def offline_env() -> dict:
    """This environment less pip's configuration, minivit's and pytest's variables, with every proxy closed."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "MINIVIT_", "PYTEST_", "VIRTUAL_ENV", "PYTHON"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            **{k: CLOSED for k in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                   "ALL_PROXY")}}


def run(cmd, cwd, env, timeout=1800) -> subprocess.CompletedProcess:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"{' '.join(map(str, cmd))[:100]}: exit {done.returncode} in {time.perf_counter() - start:.0f} s")
    return done


@pytest.fixture(scope="session")
def offline_kit(tmp_path_factory):
    """(kit folder, target Python): the kit, made once per session."""
    missing = [n for n in gpu.DATA_FILES if gpu.local_data(n, data_root()) is None]
    if missing:
        pytest.skip(f"{data_root()} lacks {', '.join(missing)} (make data): this test does not download data sets")
    probe = tmp_path_factory.mktemp("probe")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir",
                           "--only-binary=:all:", "--dest", str(probe), "iniconfig"], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        pytest.skip(f"no package index answers (pip download failed: {done.stderr.strip()[-300:]}); making a kit "
                    "needs one")
    python = target_python()
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    torch = "cpu" if gpu._answers(gpu.PYTORCH_INDEX + "cpu/torch/") is None else "cuda"
    out = tmp_path_factory.mktemp("offline") / "offline-kit"
    start = time.perf_counter()
    m = gpu.kit(out, python_version=version, torch=torch)
    print(f"kit for Python {version}, torch {torch}: {len(m['packages'])} wheels {m['wheel_bytes'] / 1e9:.2f} GB, "
          f"data {m['data_bytes'] / 1e6:.0f} MB, course {m['course_bytes'] / 1e6:.0f} MB in "
          f"{time.perf_counter() - start:.0f} s")
    yield out, python
    shutil.rmtree(out.parent)  # several GB with its virtual environment


def test_the_kits_commands_install_offline_and_pass_notebooks_00_and_03(offline_kit):
    kit, python = offline_kit
    env = offline_env()
    done = run(["sh", "install.sh"], kit, {**env, "PYTHON": python})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    venv = kit / "course" / ".venv" / "bin" / "python"
    done = run([str(venv), "-c", "import sys, minivit, torch; print('%d.%d' % sys.version_info[:2], minivit.__file__)"],
               kit / "course", env)
    want = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                          text=True).stdout.strip()
    assert done.returncode == 0 and done.stdout.split() == [want, str(kit / "course" / "minivit" / "__init__.py")], \
        done.stderr  # the kit's Python, the course installed editable from the kit
    # every test module imports: the kit has each package the tests need (a missing one would skip its module)
    done = run([".venv/bin/python", "-m", "pytest", "--collect-only", "-q", "tests/"], kit / "course", env)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0 and " collected" in summary and "skipped" not in summary, done.stdout[-3000:]
    done = run([".venv/bin/python", "-m", "pytest", "--nbval", *NOTEBOOKS], kit / "course", env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert " passed" in out and " failed" not in out and "00_start_here.ipynb" in out and "03_transformer_encoder" in out
    print("\n".join(done.stdout.splitlines()[-5:]))  # notebooks/conftest.py's time per notebook
    # the GPU check's command as docs/gpu.md gives it for a kit (here on the CPU, its smoke run of 00)
    report = kit / "gpu-check-report"
    done = run([".venv/bin/python", "benchmarks/gpu_check.py", "--lax", "--out", str(report), "00"], kit / "course",
               {**env, "MINIVIT_SMOKE": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "# GPU check: 1 of 1 notebooks passed" in (report / "report.md").read_text()
