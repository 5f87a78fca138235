"""benchmarks/gpu_check.py (`make gpu-check`) on the CPU: the smoke run of the full profile, with CUDA played by
tests/cuda_standin.py inside each notebook's kernel (an IPython start-up file), so the command's path -- notebooks
one at a time, strict or lax, a report written as it goes, a clean stop at a wall-clock limit -- is checked without
a GPU. What it cannot check is what only a GPU run shows: the full profile's times and its claims at full size.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbval", reason="the GPU check runs the notebooks through nbval (pip install -e '.[dev]')")
nbformat = pytest.importorskip("nbformat")

# An integration test (`make integration`; `make unit` leaves it out): it runs notebooks through the runner.
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
STARTUP = """\
import sys
sys.path.insert(0, {root!r})
import torch
import minivit.profile
from tests.cuda_standin import standin_cuda
_standin = standin_cuda()
_standin.__enter__()  # for the kernel's life: every cell's tensors on "cuda" are the stand-in's
minivit.profile.default_device = lambda: torch.device("cuda")  # the profile's device, as on a GPU machine
"""


def notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def env(tmp_path):
    """The smoke run on the stand-in: an IPython directory whose start-up file enters it in every kernel, data and
    checkpoints as `make smoke` has them (checkpoints-smoke/), one thread per kernel."""
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-cuda-standin.py").write_text(STARTUP.format(root=str(ROOT)))
    return {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython"), "MINIVIT_SMOKE": "1", "OMP_NUM_THREADS": "1"}


def gpu_check(args, env, cwd=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=900)


def test_the_course_notebooks_pass_on_the_standin_and_the_report_says_so(tmp_path, env):
    probe = notebook(tmp_path / "probe.ipynb",
                     "import torch\nfrom minivit.profile import get_profile\nprofile = get_profile()\n"
                     "assert profile.device.type == 'cuda' and torch.ones(1, device=profile.device).device.type == "
                     "'cuda', 'the kernel does not run on the stand-in'\n"
                     "assert profile.name == 'full' and profile.smoke, profile")
    out = tmp_path / "report"
    done = gpu_check(["--out", "report", "--lax", probe, "00", "03"], env, cwd=tmp_path)  # --out relative to here
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["profile"] == "full" and report["smoke"] and report["lax"] and report["state"] == "finished"
    rows = {r["notebook"]: r for r in report["notebooks"]}
    assert [r["status"] for r in rows.values()] == ["passed"] * 3
    for name in ("00_start_here.ipynb", "03_transformer_encoder.ipynb"):
        code = [c for c in nbformat.read(ROOT / "notebooks" / name, 4).cells if c.cell_type == "code"]
        calls = [c for c in rows[name]["cells"] if c["when"] == "call"]
        assert [c["cell"] for c in calls] == [f"Cell {i}" for i in range(len(code))]  # every cell, in order, once
        assert rows[name]["seconds"] >= sum(c["seconds"] for c in calls) > 0
    claims = rows["03_transformer_encoder.ipynb"]["claims"]  # logged by minivit.claims from the kernel
    in_source = sum(c.source.count("claim(") for c in nbformat.read(ROOT / "notebooks" / "03_transformer_encoder.ipynb",
                                                                     4).cells if c.cell_type == "code")
    assert len(claims) == in_source > 0  # every claim of 03 (none in a loop) logged once, from the kernel
    assert not any(c["checked"] for c in claims) and not rows["00_start_here.ipynb"]["claims"]
    md = (out / "report.md").read_text()
    assert "# GPU check: 3 of 3 notebooks passed" in md and "| 03_transformer_encoder.ipynb | passed |" in md
    assert (out / "log.txt").read_text().count("passed") >= 3


def test_a_failure_is_reported_and_the_run_stops_cleanly_at_its_limit(tmp_path, env):
    failing = notebook(tmp_path / "failing.ipynb", "from minivit.claims import claim\nx = 1\n"
                       "claim('a statistic the report keeps', 2.5, above=1)",
                       "assert x == 2, 'a claim that no longer holds'",
                       "print('the cells after a failure still run (lax)')")
    slow = notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(3600)")
    out = tmp_path / "report"
    # A 75-s limit, stopping 15 s before it: failing.ipynb has 60 s to start its kernel and finish (a few seconds
    # on an idle machine, more on a loaded one) and the stop 15 s to end slow.ipynb and write the report (it takes
    # about one). The limit is the runner's promise: the report must say it stopped before it.
    limit_min, margin_s = 1.25, 15
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--out", str(out), "--lax", "--limit-min", str(limit_min),
                             "--margin-s", str(margin_s), str(failing), str(slow), "00"], cwd=ROOT,
                            env={**env, "GPU_CHECK_TEST": str(out)},  # a mark every process it starts inherits
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen_running = None  # the report as written while slow.ipynb runs: the failure is in it already
    while proc.poll() is None:
        if (out / "report.json").exists():
            report = json.loads((out / "report.json").read_text())
            if report["notebooks"][1]["status"] == "running":
                seen_running = report
        time.sleep(0.5)
    output = proc.stdout.read()
    assert proc.returncode == 1, output
    assert seen_running is not None and seen_running["notebooks"][0]["status"] == "failed", output

    report = json.loads((out / "report.json").read_text())
    assert [r["status"] for r in report["notebooks"]] == ["failed", "stopped", "not run"]
    assert report["state"] == "stopped at the limit" and report["elapsed_s"] < limit_min * 60
    failed = [c for c in report["notebooks"][0]["cells"] if c["outcome"] == "failed"]
    assert [c["cell"] for c in failed] == ["Cell 1"] and "a claim that no longer holds" in failed[0]["report"]
    assert "\x1b[" not in failed[0]["report"]
    assert [(c["claim"], c["value"]) for c in report["notebooks"][0]["claims"]] == [("a statistic the report keeps",
                                                                                    2.5)]
    assert "## failing.ipynb, Cell 1 (call): failed" in (out / "report.md").read_text()
    assert not running_with(f"GPU_CHECK_TEST={out}"), "the stopped notebook's processes run on"  # the runner's ended


def running_with(variable: str) -> list[int]:
    """The processes whose environment holds `variable` (inherited by pytest and the kernels it starts)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if variable.encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # gone, or not ours
            pass
    return found


def test_a_report_is_not_replaced_unasked_and_bad_input_is_refused(tmp_path, env):
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").write_text("{}")
    done = gpu_check(["--out", out, "00"], env)
    assert done.returncode == 2 and "--replace" in done.stderr
    assert (out / "report.json").read_text() == "{}" and sorted(p.name for p in out.iterdir()) == ["report.json"]
    done = gpu_check(["--out", tmp_path / "other", "42"], env)
    assert done.returncode != 0 and "neither a notebook's number" in done.stderr + done.stdout
    assert not (tmp_path / "other").exists()
    done = gpu_check(["--out", tmp_path / "other", "--limit-min", "0", "00"], env)
    assert done.returncode == 2 and "--limit-min must be > 0" in done.stderr and not (tmp_path / "other").exists()
