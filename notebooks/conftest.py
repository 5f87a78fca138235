"""pytest hooks for `pytest --nbval notebooks/`: how long each notebook took, printed at the end of the run.

The course's budgets are per notebook (quick profile: a few minutes each on 2 CPU cores), so the run reports the
time of every notebook -- its kernel start and all its cells -- beside pytest's total.
"""

from collections import defaultdict

_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    if report.nodeid.split("::")[0].endswith(".ipynb"):
        _seconds[report.nodeid.split("::")[0]] += report.duration  # setup (the kernel's start), call, teardown


def pytest_terminal_summary(terminalreporter):
    if _seconds:
        terminalreporter.section("time per notebook")
        for name, s in _seconds.items():
            terminalreporter.write_line(f"{s:7.1f} s  {name}")
        terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  all {len(_seconds)} notebooks")
