"""How long the nbgrader kit takes to grade, and what dominates: seconds per submission, one at a time and in parallel.

    python benchmarks/grading_time.py                      # B, the slowest: 4 submissions, --jobs 1 then 2
    python benchmarks/grading_time.py a_patches_and_attention c_inspecting_vit --students 2

For each assignment, in a temporary course folder (the kit's source/, config and templates, released with
`nbgrader generate_assignment`), `--students` copies of the instructor's source notebook are submitted and graded by
the kit's grading command, `python -m minivit.autograde NAME --jobs J` (sandboxed where bubblewrap can be had, as an
instructor runs it; `--unsandboxed` otherwise), for each J of `--jobs`; every submission must get full marks. Then one
source notebook is run cell by cell with nbclient in a plain kernel, `NBGRADER_EXECUTION=autograde` set as nbgrader
sets it, to show which cells the time goes to. Writes benchmarks/results/grading_time.json with the load average before and after
each timing (the course machine's 2 cores are shared: a busy machine gives longer times). Measures; asserts nothing
about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.results_io import save_result  # noqa: E402

KIT = ROOT / "assignments"


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` from PATH
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def course_with(name: str, students: int, folder: Path) -> Path:
    """A released course folder for `name` with `students` copies of the source notebook submitted."""
    course = folder / name
    shutil.copytree(KIT / "source" / name, course / "source" / name)
    shutil.copy(KIT / "nbgrader_config.py", course)
    if (KIT / "mathjax_templates").is_dir():
        shutil.copytree(KIT / "mathjax_templates", course / "mathjax_templates")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, f"--CourseDirectory.root={course}"],
                   cwd=course, env=_env(), check=True, capture_output=True)
    for i in range(students):
        sub = course / "submitted" / f"s{i}" / name
        sub.mkdir(parents=True)
        shutil.copy(course / "source" / name / f"{name}.ipynb", sub)
    return course


def scores(course: Path, name: str) -> dict:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        out = {}
        for sub in sorted((course / "submitted").iterdir()):
            nb = gradebook.find_submission_notebook(name, name, sub.name)
            code = [g for g in nb.grades if g.cell_type == "code"]
            out[sub.name] = (sum(g.auto_score or 0 for g in code), sum(g.max_score for g in code))
        return out


def time_grading(course: Path, name: str, jobs: int, sandboxed: bool) -> dict:
    args = [sys.executable, "-m", "minivit.autograde", name, "--kit", str(course), "--jobs", str(jobs), "--force"]
    if not sandboxed:
        args.append("--unsandboxed")
    load_before = os.getloadavg()
    start = time.perf_counter()
    run = subprocess.run(args, cwd=ROOT, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"grading failed ({run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    got = scores(course, name)
    short = {s: v for s, v in got.items() if v[0] != v[1]}
    if short:
        raise SystemExit(f"the source notebook lost points while timed: {short}")
    n = len(got)
    return {"jobs": jobs, "submissions": n, "wall_s": round(wall, 1), "s_per_submission": round(wall / n, 1),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}


def cell_times(course: Path, name: str) -> list[dict]:
    """Each code cell of the source notebook, run with nbclient with NBGRADER_EXECUTION=autograde as nbgrader sets
    it (a plain kernel: no sandbox, no grading kernel's keeper): seconds, grade_id, points."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
    os.environ["NBGRADER_EXECUTION"] = "autograde"  # the kernel inherits it, as under nbgrader
    client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(course / "source" / name)}})
    rows = []
    try:
        start = time.perf_counter()
        with client.setup_kernel():
            rows.append({"cell": "kernel start", "s": round(time.perf_counter() - start, 2)})
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                meta = cell.metadata.get("nbgrader", {})
                t = time.perf_counter()
                client.execute_cell(cell, i)
                rows.append({"cell": meta.get("grade_id", f"cell {i}"), "points": meta.get("points"),
                             "s": round(time.perf_counter() - t, 2),
                             "error": any(o.get("output_type") == "error" for o in cell.outputs)})
    finally:
        os.environ.pop("NBGRADER_EXECUTION", None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("assignments", nargs="*", default=["b_higher_resolution"])
    parser.add_argument("--students", type=int, default=4, help="submissions graded per timing (default 4)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="--jobs values timed (default 1 2)")
    parser.add_argument("--unsandboxed", action="store_true", help="grade without bubblewrap")
    args = parser.parse_args()

    from minivit.autograde import sandbox_problem
    sandboxed = not args.unsandboxed and sandbox_problem() is None
    out = {"cpu_count": os.cpu_count(), "sandboxed": sandboxed, "students": args.students, "assignments": {}}
    with tempfile.TemporaryDirectory(prefix="grading-time-") as tmp:
        for name in args.assignments:
            course = course_with(name, args.students, Path(tmp))
            grading = [time_grading(course, name, jobs, sandboxed) for jobs in args.jobs]
            cells = cell_times(course, name)
            out["assignments"][name] = {"grading": grading, "cells": cells}
            print(f"\n{name}: {args.students} submissions, each given full marks")
            for g in grading:
                print(f"  --jobs {g['jobs']}: {g['wall_s']:.0f} s, {g['s_per_submission']:.1f} s a submission "
                      f"(load {g['load_before'][0]:.1f} -> {g['load_after'][0]:.1f})")
            total = sum(c["s"] for c in cells)
            print(f"  one notebook, cell by cell ({total:.1f} s in all); the slowest:")
            for c in sorted(cells, key=lambda c: -c["s"])[:5]:
                print(f"    {c['s']:6.2f} s  {c['cell']}")
    save_result("grading_time", out)


if __name__ == "__main__":
    main()
