"""notebooks/conftest.py: a failing cell is reported the moment it fails (stderr and MINIVIT_REPORT_DIR), and a run
of two notebooks at a time keeps each lane's notebooks in order on one worker."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbval", reason="runs pytest --nbval: needs nbval (pip install nbval, a [dev] extra)")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _notebook(cells):
    return {"cells": [{"cell_type": "code", "execution_count": i + 1, "metadata": {}, "outputs": [],
                       "source": src} for i, src in enumerate(cells)],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def test_a_failing_cell_is_written_down_at_once(tmp_path):
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "07_demo.ipynb").write_text(json.dumps(_notebook(["x = 1", "assert x == 2, 'x is not two'",
                                                                  "y = 3"])))
    reports = tmp_path / "reports"
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
                          "07_demo.ipynb"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MINIVIT_REPORT_DIR": str(reports)})
    assert run.returncode == 1
    assert "FAILED 07_demo.ipynb::Cell 1" in run.stderr and "x is not two" in run.stderr
    files = sorted(p.name for p in reports.iterdir())
    assert files == ["07_demo-cell1.txt"] and "x is not two" in (reports / files[0]).read_text()
    assert "time per notebook" in run.stdout


def test_the_notebooks_times_are_written_where_asked(tmp_path):
    """MINIVIT_NOTEBOOK_TIMES: the seconds of every notebook as JSON (README's line of notebook times is rendered from
    the committed one), with whether the run passed and how many notebooks ran at a time."""
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "00_quick.ipynb").write_text(json.dumps(_notebook(["x = 1"])))
    (tmp_path / "01_slow.ipynb").write_text(json.dumps(_notebook(["import time; time.sleep(1.5)"])))
    out = tmp_path / "results" / "times.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MINIVIT_NOTEBOOK_TIMES": str(out)})
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads(out.read_text())
    assert record["passed"] is True and record["notebooks_at_a_time"] == 1 and record["cores"] >= 1
    assert list(record["seconds"]) == ["00_quick", "01_slow"] and record["seconds"]["01_slow"] >= 1.5
    assert not list(out.parent.glob("*.tmp"))  # written whole, then moved into place


def test_two_lanes_keep_dependent_notebooks_in_order(tmp_path):
    """`pytest --nbval -n 2 --dist loadscope`: a notebook runs after the one whose results it loads (06 after 04, in
    one lane, while 07 runs in the other), each kernel gets half the cores as threads, and the wall clock is reported."""
    pytest.importorskip("xdist", reason="runs pytest -n 2: needs pytest-xdist (pip install pytest-xdist, a [dev] extra)")
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    marker = tmp_path / "04-finished"
    threads = str(max(1, len(os.sched_getaffinity(0)) // 2))
    (tmp_path / "04_first.ipynb").write_text(json.dumps(_notebook([
        f"import pathlib, time; time.sleep(3); _ = pathlib.Path({str(marker)!r}).write_text('done')"])))
    (tmp_path / "06_second.ipynb").write_text(json.dumps(_notebook([
        f"import pathlib; assert pathlib.Path({str(marker)!r}).exists(), '06 ran before 04 finished'"])))
    (tmp_path / "07_other.ipynb").write_text(json.dumps(_notebook([
        f"import os; assert os.environ.get('OMP_NUM_THREADS') == {threads!r}, os.environ.get('OMP_NUM_THREADS')"])))
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
                          "-n", "2", "--dist", "loadscope", "-v"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout and "wall clock, 2 notebooks at a time" in run.stdout
    assert re.search(r"\[(gw\d)\] .* PASSED 04_first.*\n.*\n?.*\[\1\] .* PASSED 06_second", run.stdout), run.stdout  # one worker
