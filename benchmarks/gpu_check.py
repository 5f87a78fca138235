"""All ten notebooks on one GPU in one run: strict, in order, with a report written as it goes (docs/gpu.md).

    make gpu-check                                               # -> gpu-check/ (report.md, report.json, ...)
    python benchmarks/gpu_check.py --out DIR --limit-min 9.5      # the same, another folder and wall-clock limit
    python benchmarks/gpu_check.py --out DIR 04 05 06             # some notebooks only (by number or path)

Each notebook runs alone, one after the other in number order (04 trains the models 06 loads), as
`python -m pytest --nbval <notebook>` under the full profile (MINIVIT_PROFILE=full, unless --profile says otherwise):
strict, so a changed deterministic output fails as it does in `make notebooks`. Into the folder it is given, the
run writes, and rewrites after every cell:

    report.json   the machine (GPU, CPU cores, torch), the commit, the profile, and per notebook: passed, failed,
                  error (pytest itself failed), stopped (at the limit) or not run; its seconds (kernel start in);
                  every cell's seconds and outcome; each failing cell's report
    report.md     the same as a table, for a person (and for benchmarks/results/)
    cells.jsonl   one line per cell as it ends: what the pytest plugin below records
    claims.jsonl  one line per claim a notebook checks (`minivit.claims`, MINIVIT_CLAIMS_LOG): its statistic, its
                  bounds, whether it held -- every statistic of the run comes back, not only the failures
    log.txt       pytest's own output, notebook after notebook

`--limit-min` is a wall-clock limit for the whole run: the notebook running when it is `--margin-s` away is stopped
(its kernel and pytest killed), the rest are marked not run, the report is written and the command exits, so a
machine that is taken back at a fixed time still returns a report that says how far it got. The exit status is 0
when every notebook passed, 1 otherwise.

It needs only the course's own environment: `make install` (the Makefile's target) or an offline kit's
`course/.venv` (`.venv/bin/python benchmarks/gpu_check.py`, docs/gpu.md). `--lax` compares no output (nbval's
--nbval-lax): with MINIVIT_SMOKE=1 this is the smoke run, notebook by notebook, which tests/test_gpu_check.py runs on
the CPU. This file is also the pytest plugin that records the cells (`-p gpu_check`, with this folder on the path).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELLS_VAR = "MINIVIT_GPU_CHECK_CELLS"  # the plugin appends each cell's record to the file this names
POLL_S = 1.0  # how often the runner reads the cells' file and rewrites the report


# --- the pytest plugin (loaded in the pytest process that runs one notebook) ------------------------------------

def pytest_runtest_logreport(report):
    """Append one line per cell to $MINIVIT_GPU_CHECK_CELLS: its call's seconds and outcome (kernel start: setup)."""
    target = os.environ.get(CELLS_VAR)
    kernel_start = report.when == "setup" and report.duration > 1  # the notebook's first cell starts its kernel
    if not target or not (report.when == "call" or report.failed or kernel_start):
        return
    line = {"cell": report.nodeid.rpartition("::")[2], "when": report.when, "outcome": report.outcome,
            "seconds": round(report.duration, 3)}
    if report.failed:
        line["report"] = re.sub(r"\x1b\[[0-9;]*m", "", report.longreprtext)[-4000:]  # without terminal colours
    with open(target, "a") as f:
        f.write(json.dumps(line) + "\n")


# --- the runner -------------------------------------------------------------------------------------------------

def notebooks(selected: list[str]) -> list[Path]:
    """The course's notebooks in number order, or those `selected` (numbers like '04', or paths)."""
    every = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not selected:
        return every
    chosen = []
    for s in selected:
        by_number = [p for p in every if p.name[:2] == s.zfill(2)] if s.isdigit() else []
        path = by_number[0] if by_number else Path(s).resolve()
        if not path.is_file() or path.suffix != ".ipynb":
            raise SystemExit(f"gpu_check: {s!r} is neither a notebook's number (00-{every[-1].name[:2]}) nor a "
                             f".ipynb file")
        chosen.append(path)
    return chosen


def machine() -> dict:
    """What ran it: the GPU (or none), CPU cores, Python, torch, the commit."""
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):  # an offline kit's course/ is no git checkout
        commit, dirty = None, None
    return {"gpu": gpu, "cpu_cores": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
            "commit": commit, "uncommitted_changes": dirty}


def render(report: dict) -> str:
    """report.md: a header and one row per notebook, then the failing cells' reports."""
    m, rows = report["machine"], report["notebooks"]
    lines = [f"# GPU check: {sum(r['status'] == 'passed' for r in rows)} of {len(rows)} notebooks passed",
             "", f"- measured on: {m['gpu'] or 'no GPU (CPU)'}, {m['cpu_cores']} CPU cores, Python {m['python']}, "
             f"torch {m['torch']}", f"- commit: {m['commit'] or 'unknown'}"
             f"{' (with uncommitted changes)' if m['uncommitted_changes'] else ''}",
             f"- profile: {report['profile']}{' (smoke)' if report['smoke'] else ''}, "
             f"{'lax (no output compared)' if report['lax'] else 'strict (nbval)'}",
             f"- started {report['started']}; wall-clock limit {report['limit_s'] / 60:.1f} min; "
             f"{report['state']} after {report['elapsed_s'] / 60:.2f} min", "",
             "| notebook | status | seconds | cells run | slowest cell (s) |", "|---|---|---|---|---|"]
    for r in rows:
        calls = [c for c in r["cells"] if c["when"] == "call"]
        slow = max(calls, key=lambda c: c["seconds"], default=None)
        slowest = f"{slow['cell']}: {slow['seconds']:.1f}" if slow else "-"
        lines.append(f"| {r['notebook']} | {r['status']} | {r['seconds']:.1f} | {len(calls)} | {slowest} |")
    lines.append(f"| all | | {sum(r['seconds'] for r in rows):.1f} | | |")
    claims = [(r["notebook"], c) for r in rows for c in r["claims"]]
    if claims:
        lines += ["", f"## Claims ({sum(c['held'] for _, c in claims)} of {len(claims)} held"
                      f"{'; a smoke run checks none' if report['smoke'] else ''})", "",
                  "| notebook | claim | statistic | bounds | held |", "|---|---|---|---|---|"]
        for name, c in claims:
            bounds = " and ".join(([f"> {c['above']:.4g}"] if c["above"] is not None else [])
                                  + ([f"< {c['below']:.4g}"] if c["below"] is not None else []))
            value = "nan" if c["value"] is None else f"{c['value']:.4g}"
            lines.append(f"| {name[:2]} | {c['claim'].replace('|', '/')} | {value} | {bounds} | "
                         f"{'yes' if c['held'] else '**no**'} |")
    for r in rows:
        for c in r["cells"]:
            if c.get("report"):
                lines += ["", f"## {r['notebook']}, {c['cell']} ({c['when']}): failed", "", "```",
                          c["report"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict) -> None:
    """report.json and report.md, each replaced whole (a reader never sees half a file)."""
    for name, text in (("report.json", json.dumps(report, indent=1) + "\n"), ("report.md", render(report))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)


def run(paths: list[Path], out: Path, limit_s: float, margin_s: float, profile: str, lax: bool) -> dict:
    """Run `paths` one at a time, writing the report into `out` as it goes; returns the report."""
    from minivit import smoke
    from minivit.claims import LOG_VAR
    start = time.monotonic()
    cells_file, claims_file, log = out / "cells.jsonl", out / "claims.jsonl", open(out / "log.txt", "w")
    cells_file.write_text("")
    claims_file.write_text("")
    env = {**os.environ, "MINIVIT_PROFILE": profile, CELLS_VAR: str(cells_file), LOG_VAR: str(claims_file),
           "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), str(ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    report = {"format": "minivit-gpu-check/1", "machine": machine(), "profile": profile, "smoke": smoke.active(),
              "lax": lax, "limit_s": limit_s, "started": datetime.datetime.now().isoformat(timespec="seconds"),
              "state": "running", "elapsed_s": 0.0,
              "notebooks": [{"notebook": p.name, "status": "not run", "seconds": 0.0, "cells": [], "claims": []}
                            for p in paths]}
    seen = {"cells": 0, "claims": 0}
    current = {"row": None}  # the notebook running: the cells and claims read now are its own

    def new_lines(path: Path, key: str) -> list[dict]:  # whole lines only: the last may be being written
        lines = path.read_text().split("\n")[:-1]
        fresh, seen[key] = lines[seen[key]:], len(lines)
        return [json.loads(line) for line in fresh]

    def collect() -> None:  # the new cells and claims into their notebooks' rows, then the report rewritten
        cells, claims = new_lines(cells_file, "cells"), new_lines(claims_file, "claims")
        if current["row"] is not None:  # none yet when the limit came before the first notebook
            current["row"]["cells"] += cells
            current["row"]["claims"] += claims
        report["elapsed_s"] = round(time.monotonic() - start, 1)
        write(out, report)

    for path, row in zip(paths, report["notebooks"]):
        if time.monotonic() - start > limit_s - margin_s:
            break
        row["status"], current["row"] = "running", row
        began = time.monotonic()
        cmd = [sys.executable, "-m", "pytest", "--nbval-lax" if lax else "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", str(ROOT / "notebooks" / "nbval_sanitize.cfg"), "-p", "gpu_check",
               "-p", "no:cacheprovider", "-q", str(path)]
        log.write(f"$ {' '.join(cmd[2:])}\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # a process group: the kernel too
        try:
            while proc.poll() is None:
                if time.monotonic() - start > limit_s - margin_s:
                    row["status"] = "stopped"
                    break
                row["seconds"] = round(time.monotonic() - began, 1)
                collect()
                time.sleep(POLL_S)
        finally:  # stopped at the limit, finished, or the runner itself interrupted: nothing of it runs on
            end_all(proc)
        if row["status"] == "running":
            row["status"] = {0: "passed", 1: "failed"}.get(proc.returncode, "error")
            if row["status"] == "error":
                row["pytest_exit"] = proc.returncode
        row["seconds"] = round(time.monotonic() - began, 1)
        collect()
    log.close()
    stopped = any(r["status"] in ("stopped", "not run") for r in report["notebooks"])
    report["state"] = "stopped at the limit" if stopped else "finished"
    collect()
    return report


def end_all(proc: subprocess.Popen) -> None:
    """Kill `proc`, its process group and every process it started, and wait until they are gone.

    The group alone is not enough: jupyter_client starts each kernel in a session of its own, and an orphaned kernel
    only notices its parent's death a poll later. psutil is there wherever nbval is (ipykernel requires it).
    """
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()
    deadline = time.monotonic() + 30
    while (alive := [p for p in family if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive:
        print(f"gpu_check: processes {[p.pid for p in alive]} outlived SIGKILL for 30 s", file=sys.stderr)


def _alive(p) -> bool:
    """Still running: not gone and not a zombie (dead, waiting for its new parent to reap it)."""
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("notebooks", nargs="*", help="numbers (04) or paths; all of notebooks/ by default")
    p.add_argument("--out", type=Path, default=ROOT / "gpu-check", help="the report's folder (default: gpu-check/)")
    p.add_argument("--replace", action="store_true", help="replace a report already in --out")
    p.add_argument("--limit-min", type=float, default=60.0, help="wall-clock limit of the whole run (default 60)")
    p.add_argument("--margin-s", type=float, default=15.0, help="stop this long before the limit (default 15)")
    p.add_argument("--profile", default="full", choices=("full", "quick"), help="the run profile (default full)")
    p.add_argument("--lax", action="store_true", help="compare no output (nbval-lax), as the smoke run does")
    a = p.parse_args(argv)
    if a.limit_min <= 0 or a.margin_s < 0:
        p.error(f"--limit-min must be > 0 and --margin-s >= 0, got {a.limit_min} and {a.margin_s}")
    paths = notebooks(a.notebooks)
    a.out = a.out.resolve()  # the kernels run in notebooks/: every path they are given is absolute
    if a.out.exists() and not a.out.is_dir():
        p.error(f"--out {a.out} is a file: expected a folder for the report")
    if (a.out / "report.json").exists() and not a.replace:
        p.error(f"{a.out} holds a report already: pass --replace to replace it, or another --out")
    a.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` or `kill`: the notebook's group goes too
    report = run(paths, a.out, a.limit_min * 60, a.margin_s, a.profile, a.lax)
    print(render(report).split("\n\n## ")[0])
    print(f"report: {a.out / 'report.md'}")
    return 0 if all(r["status"] == "passed" for r in report["notebooks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
