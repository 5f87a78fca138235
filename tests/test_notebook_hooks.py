"""notebooks/conftest.py: a failing cell is reported the moment it fails (stderr and MINIVIT_REPORT_DIR)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

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
                         env={**__import__("os").environ, "MINIVIT_REPORT_DIR": str(reports)})
    assert run.returncode == 1
    assert "FAILED 07_demo.ipynb::Cell 1" in run.stderr and "x is not two" in run.stderr
    files = sorted(p.name for p in reports.iterdir())
    assert files == ["07_demo-cell1.txt"] and "x is not two" in (reports / files[0]).read_text()
    assert "time per notebook" in run.stdout
