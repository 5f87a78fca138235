"""`pytest tests/` runs where nbval is not installed (a GPU image has torch and pytest, not nbval): the notebooks'
nbval options live in notebooks/conftest.py, which applies them only where notebooks are collected with nbval."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def test_unit_tests_run_with_the_nbval_plugin_disabled():
    # with nbval options in pyproject's addopts, this exits 4 ("unrecognized arguments") before any test runs
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:nbval", "-p", "no:cacheprovider", "-q",
                          "tests/test_stats.py"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert " passed" in run.stdout


def test_the_notebooks_conftest_sanitises_without_options_on_the_command_line(tmp_path):
    # a stored output with one memory address, a fresh run prints another: equal only after the course's sanitiser
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(NOTEBOOKS / "nbval_sanitize.cfg", tmp_path / "nbval_sanitize.cfg")
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "print(object())",
            "outputs": [{"name": "stdout", "output_type": "stream", "text": "<object object at 0x7f0000000001>\n"}]}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                       "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb))
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q", "demo.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    (tmp_path / "conftest.py").unlink()  # without the conftest the addresses differ: the test can fail
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
                          "-q", "demo.ipynb"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout[-3000:]
