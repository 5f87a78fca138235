"""pytest hooks for `pytest --nbval notebooks/`: each failing cell's report the moment it fails, and the time of
every notebook at the end.

- A cell that fails is reported at once on stderr -- and, when the environment variable MINIVIT_REPORT_DIR names a
  folder, written to `<folder>/<notebook>-cell<N>.txt` -- so a run that is killed at a time limit (a GPU machine's
  10-minute command) still says why its cells failed; pytest itself prints failures only at the end.
- The course's budgets are per notebook (quick profile: a few minutes each on 2 CPU cores), so the run reports the
  time of every notebook -- its kernel start and all its cells -- beside the wall-clock time of the whole run.
- Two notebooks at a time: `pytest --nbval -n 2 --dist loadscope notebooks/` (pytest-xdist; what `make notebooks`
  runs on a machine without a CUDA GPU) runs the notebooks in two lanes (`lanes_for` below), one lane per worker, each
  notebook's kernel with half the CPU cores as threads. Two threads made a training step only about a third
  faster than one on the course's 2-core machine, so two kernels of one thread each finish more work in the same
  time (measured in benchmarks/README.md). Each lane runs its notebooks in order: 05 and 06 load the models 04
  trained (in a lane of their own, they would train them again); 07 and 08 share no training since 08 takes its
  mosaic model from the zoo.
"""

import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

REPORT_DIR = "MINIVIT_REPORT_DIR"  # environment variable: a folder for the failing cells' reports
TIMES = "MINIVIT_NOTEBOOK_TIMES"  # environment variable: a JSON file for the notebooks' times (benchmarks/README.md)
# The lanes of a parallel run are drawn for the notebooks collected (all ten, or `make other-copy`'s six): longest
# first, each to the lane with the fewest seconds so far (`lanes_for`). SECONDS: one-thread times with the other lane
# busy, measured in a rehearsal of CI on 2026-12-02 (c8405f3), but 06 and 08, estimated on 2026-12-04 from their new
# one-at-a-time times (06 trains only its hybrid; 08 trains 6 epochs, not 3), and 05 estimated on 2026-12-08 (its sweep
# comes from a record; it trains one model); a notebook not listed counts as 60 s. TOGETHER: 05 and 06 load the ViT
# and CNN 04 trained (06 since 2026-12-04, 05 since 2026-12-08), so those of the three that run share a lane (in order);
# 07 and 08 share nothing (08 takes its mosaic model from the zoo).
SECONDS = {"00": 7, "01": 9, "02": 8, "03": 73, "04": 397, "05": 90, "06": 150, "07": 233, "08": 250, "09": 185}
TOGETHER = (("04", "05", "06"),)
_seconds: dict[str, float] = defaultdict(float)
_start = time.perf_counter()


def lanes_for(numbers, n_lanes: int = 2) -> dict[str, str]:
    """{notebook number: lane name} for the notebooks `numbers` ("00" ... "09") on `n_lanes` workers: the units (a
    notebook, or those of a TOGETHER group that are there) longest first, each to the least loaded lane."""
    numbers, units = sorted(set(numbers)), []
    for group in TOGETHER:
        present = tuple(x for x in group if x in numbers)
        if len(present) > 1:  # e.g. 04 and 05 without 06: still one lane, in order
            units.append(present)
    grouped = {x for u in units for x in u}
    units += [(x,) for x in numbers if x not in grouped]
    load, lanes = [0.0] * max(1, n_lanes), {}
    for unit in sorted(units, key=lambda u: (-sum(SECONDS.get(x, 60) for x in u), u)):
        k = min(range(len(load)), key=lambda i: (load[i], i))
        load[k] += sum(SECONDS.get(x, 60) for x in unit)
        lanes.update({x: f"lane-{k + 1}" for x in unit})
    return lanes


SANITIZE = Path(__file__).with_name("nbval_sanitize.cfg")  # volatile text (addresses, timings) nbval must not compare


def pytest_configure(config):
    """The notebooks' nbval options, here rather than in pyproject's addopts so that `pytest tests/` runs where nbval
    is not installed: each notebook runs in this environment's kernel (`--nbval-current-env`, unless a kernel is
    named) with the course's sanitiser (`--nbval-sanitize-with`, unless another is given).
    In an xdist worker: the notebooks' kernels (started with this process's environment) get an equal share of the
    cores as threads, unless OMP_NUM_THREADS is set already."""
    if config.pluginmanager.hasplugin("nbval"):
        if not config.option.nbval_kernel_name:
            config.option.nbval_current_env = True
        given = config.option.nbval_sanitize_with or getattr(config.option, "sanitize_with", None)
        if not given and SANITIZE.exists():
            config.option.nbval_sanitize_with = str(SANITIZE)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and "OMP_NUM_THREADS" not in os.environ:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        os.environ["OMP_NUM_THREADS"] = str(max(1, cores // workers))


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: ignored where xdist is not installed
def pytest_xdist_make_scheduler(config, log):
    """Under `-n N --dist loadscope`, a notebook's scope is its lane: all the cells of a lane's notebooks go to one
    worker, in order. (pytest-xdist's own `--dist loadgroup` marks do not group items under pytest 9.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):
        lanes: dict[str, str] = {}

        def schedule(self) -> None:
            if self.collection is None and self.registered_collections:  # the first call: draw the lanes
                paths = {i.split("::")[0] for i in next(iter(self.registered_collections.values()))}
                self.lanes = lanes_for([Path(p).name[:2] for p in paths if p.endswith(".ipynb")], len(self.nodes))
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            if not path.endswith(".ipynb"):
                return super()._split_scope(nodeid)
            return self.lanes.get(Path(path).name[:2], "lane-1")

    return LaneScheduling(config, log)


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


def pytest_terminal_summary(terminalreporter, exitstatus):
    if _seconds:
        terminalreporter.section("time per notebook")
        for name, s in _seconds.items():
            terminalreporter.write_line(f"{s:7.1f} s  {name}")
        terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  all {len(_seconds)} notebooks, summed")
        workers = getattr(terminalreporter.config.option, "numprocesses", None)
        wall = time.perf_counter() - _start
        if workers:  # xdist: the notebooks ran side by side, so the wall clock is what the run took
            terminalreporter.write_line(f"{wall:7.1f} s  wall clock, {workers} notebooks at a time")
        if os.environ.get(TIMES):
            _write_times(Path(os.environ[TIMES]), workers or 1, wall, exitstatus == 0)


def _write_times(path: Path, at_a_time: int, wall: float, passed: bool) -> None:
    """The run's seconds per notebook as JSON (README's table of notebook times is rendered from the committed one,
    .ci/readme_tables.py): written whole, then moved into place, so a reader never sees half a file."""
    import json
    import platform
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:  # Linux names the CPU model in /proc/cpuinfo
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name")) or cpu
    except (OSError, StopIteration):
        pass
    record = {"what": "seconds per notebook of `pytest --nbval` (kernel start and every cell), as notebooks/conftest.py "
                      "timed them", "passed": passed, "notebooks_at_a_time": at_a_time,
              "threads": os.environ.get("OMP_NUM_THREADS") or "all cores", "cores": cores, "cpu": cpu,
              "date": time.strftime("%Y-%m-%d"), "wall_clock_s": round(wall, 1),
              "seconds": {Path(name).stem: round(s, 1) for name, s in sorted(_seconds.items())}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)
