"""The assignment kit's housekeeping: what nbgrader writes while grading (students' grades, downloads, submissions,
feedback, the gradebook) is ignored by git, so it cannot be committed into the course repository by accident; and
`make assignments` refuses a KIT folder that is not an nbgrader course folder without writing anything."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRITTEN_BY_GRADING = ["grades.csv", "downloaded/alice.ipynb", "submitted/alice/a/a.ipynb", "autograded/alice/a/a.ipynb",
                      "feedback/alice/a/a.html", "release/a/a.ipynb", "gradebook.db", ".nbgrader.log",
                      "exchange/minivit/inbound/x", "outbound/a/a.ipynb"]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
@pytest.mark.parametrize("path", WRITTEN_BY_GRADING)
def test_what_grading_writes_is_ignored(path):
    run = subprocess.run(["git", "check-ignore", "-q", f"assignments/{path}"], cwd=ROOT)
    assert run.returncode == 0, f"assignments/{path} is not git-ignored: grading output could be committed"


def test_the_kits_sources_are_not_ignored():
    run = subprocess.run(["git", "check-ignore", "-q", "assignments/source/a_patches_and_attention/a.ipynb"], cwd=ROOT)
    assert run.returncode == 1


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_assignments_refuses_a_folder_that_is_no_kit(tmp_path):
    run = subprocess.run(["make", "-s", "assignments", f"KIT={tmp_path}"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode != 0 and "no source/ folder" in run.stdout + run.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


def _source_cells(name: str) -> list[dict]:
    import json
    return json.loads((ROOT / "assignments" / "source" / name / f"{name}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "assignments" / "source").iterdir() if p.is_dir()))
def test_each_assignment_has_a_rubric_and_its_table_of_points_is_true(name):
    """Every written answer carries a rubric (in the source only: nbgrader clears the cell), and the intro's table
    of parts and points adds up to the points of the test cells."""
    import re
    cells = _source_cells(name)
    meta = [c["metadata"].get("nbgrader", {}) for c in cells]
    written = [c for c, m in zip(cells, meta) if c["cell_type"] == "markdown" and m.get("solution")]
    assert written and all("**Rubric.**" in "".join(c["source"]) for c in written), f"{name}: a written answer lacks its rubric"
    auto = sum(m.get("points", 0) for c, m in zip(cells, meta) if c["cell_type"] == "code" and m.get("grade"))
    table = re.findall(r"^\| \d+ \| .* \| (\d+)(?: \(graded by hand\))? \|$", "".join(cells[0]["source"]), re.M)
    by_hand = sum(m.get("points", 0) for c, m in zip(cells, meta) if c["cell_type"] == "markdown" and m.get("grade"))
    assert table and sum(map(int, table)) == auto + by_hand, f"{name}: the intro's table says {table}, the cells {auto} + {by_hand}"
