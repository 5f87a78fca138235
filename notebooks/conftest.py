"""pytest hooks for `pytest --nbval notebooks/`: each failing cell's report the moment it fails, and the time of
every notebook at the end.

- A cell that fails is reported at once on stderr -- and, when the environment variable MINIVIT_REPORT_DIR names a
  folder, written to `<folder>/<notebook>-cell<N>.txt` -- so a run that is killed at a time limit (a GPU machine's
  10-minute command) still says why its cells failed; pytest itself prints failures only at the end.
- The course's budgets are per notebook (quick profile: a few minutes each on 2 CPU cores), so the run reports the
  time of every notebook -- its kernel start and all its cells -- beside pytest's total.
"""

import os
import re
import sys
from collections import defaultdict
from pathlib import Path

REPORT_DIR = "MINIVIT_REPORT_DIR"  # environment variable: a folder for the failing cells' reports
_seconds: dict[str, float] = defaultdict(float)


def _report_name(nodeid: str) -> str:
    """'notebooks/04_x.ipynb::Cell 12' -> '04_x-cell12.txt'."""
    path, _, cell = nodeid.partition("::")
    return f"{Path(path).stem}-{re.sub(r'[^A-Za-z0-9]+', '', cell.lower()) or 'setup'}.txt"


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if not path.endswith(".ipynb"):
        return
    _seconds[path] += report.duration  # setup (the kernel's start), call, teardown
    if report.failed:
        text = f"FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n"
        sys.stderr.write("\n" + text)
        sys.stderr.flush()
        folder = os.environ.get(REPORT_DIR)
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / _report_name(report.nodeid)).write_text(text)


def pytest_terminal_summary(terminalreporter):
    if _seconds:
        terminalreporter.section("time per notebook")
        for name, s in _seconds.items():
            terminalreporter.write_line(f"{s:7.1f} s  {name}")
        terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  all {len(_seconds)} notebooks")
