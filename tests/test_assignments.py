"""The nbgrader assignment kit (assignments/): each assignment through nbgrader's own commands, offline.

Tooling test. For each assignment, in a course folder of its own: `nbgrader generate_assignment` makes the
students' version; it must hold none of the solutions' text, hidden tests, test markers or instructors' notes.
Then the submissions are graded by the kit's grading command (`python -m minivit.autograde`, nbgrader autograde with
each notebook in a bubblewrap sandbox, two at a time): the instructor's source (full marks), the released
version unanswered (0 everywhere, and the autograder finishes; these two come in through `nbgrader zip_collect`
from downloads named as docs/instructors.md says), and the submissions of
tests/assignment_submissions_<a|b|c>.py -- plausible mistakes and attempts to call the package's (or PyTorch's)
own solution -- each of which loses exactly the points of the parts it got wrong. Scores are read from
nbgrader's gradebook. Then `nbgrader generate_feedback`: no feedback file holds hidden-test code, tracebacks included.

Skipped, saying why, where nbgrader is not installed (it is in [dev]); B and C need CIFAR-10 (`make data`).
"""

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "assignments"
HAVE_NBGRADER = importlib.util.find_spec("nbgrader") is not None


def _have_cifar10() -> bool:
    from minivit.data import load_dataset
    try:
        load_dataset("cifar10", "test", download=False)
        return True
    except FileNotFoundError:
        return False


NEEDS_CIFAR10 = pytest.mark.skipif(not _have_cifar10(), reason="CIFAR-10 is not on this machine (make data)")
SHORT = {"a_patches_and_attention": "a", "b_higher_resolution": "b", "c_inspecting_vit": "c"}


def submissions(name: str) -> dict:
    """tests/assignment_submissions_<a|b|c>.py: student -> ({solution grade_id: edit}, parts that lose their points),
    where an edit is (anchor, replacement), a list of such pairs, or a whole new cell source."""
    return importlib.import_module(f"tests.assignment_submissions_{SHORT[name]}").SUBMISSIONS


ASSIGNMENTS = [
    pytest.param("a_patches_and_attention"),
    pytest.param("b_higher_resolution", marks=NEEDS_CIFAR10),
    pytest.param("c_inspecting_vit", marks=NEEDS_CIFAR10),
]

# An integration test (`make integration`; `make unit` leaves it out): nbgrader on whole assignments.
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not HAVE_NBGRADER, reason="nbgrader is not installed (pip install -e '.[dev]')")]


def test_every_assignment_is_tested():
    assert sorted(p.name for p in (KIT / "source").iterdir() if p.is_dir()) == sorted(SHORT)
    for name in SHORT:
        assert submissions(name), f"{name}: no submissions with mistakes or bypasses"


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in the course folder `course`; fail the test with its output if it fails."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` from PATH: this environment's
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    run = subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"],
                         cwd=course, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run


def autograde(course: Path, name: str) -> None:
    """Grade every submission of `name` with the kit's grading command, as docs/instructors.md gives it:
    `python -m minivit.autograde NAME --kit COURSE --jobs 2`, each notebook in the bubblewrap sandbox. Where the
    sandbox cannot be had, graded with --unsandboxed (the same nbgrader run, without the sandbox) -- unless
    MINIVIT_REQUIRE_SANDBOX=1 (.ci/run), which makes that a failure."""
    from minivit.autograde import sandbox_problem
    problem = sandbox_problem()
    if problem and os.environ.get("MINIVIT_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"MINIVIT_REQUIRE_SANDBOX=1, and grading's sandbox cannot be had: {problem}")
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` from PATH: this environment's
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    args = [sys.executable, "-m", "minivit.autograde", name, "--kit", str(course), "--jobs", "2"]
    run = subprocess.run(args + (["--unsandboxed"] if problem else []), cwd=ROOT, capture_output=True, text=True,
                         timeout=1800, env=env)
    assert run.returncode == 0, f"{' '.join(args)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _text(cell: dict) -> str:
    return "".join(cell["source"])


def _regions(cell: dict, marker: str, region: bool = False):
    """(line stripped, inside the region) for each line of 20 characters or more of `cell`, where the regions run
    from `### BEGIN <marker>` to `### END <marker>` (`region`: whether the cell starts inside one)."""
    for line in _text(cell).splitlines():
        stripped = line.strip()
        if stripped.startswith(f"### BEGIN {marker}"):
            region = True
        elif stripped.startswith(f"### END {marker}"):
            region = False
        elif len(stripped) >= 20:
            yield stripped, region


def _solution_lines(cells: list[dict]) -> set[str]:
    """The lines of the solutions (inside BEGIN/END SOLUTION, and the written answers), of 20 characters or more,
    that appear nowhere else in the notebook."""
    inside, outside = set(), set()
    for cell in cells:
        meta = cell["metadata"].get("nbgrader", {})
        written = bool(meta.get("solution") and cell["cell_type"] == "markdown")  # a written answer: the whole cell
        for line, region in _regions(cell, "SOLUTION", written):
            (inside if region else outside).add(line)
    return inside - outside


def _hidden_lines(cells: list[dict]) -> tuple[set[str], set[str]]:
    """(hidden, visible): the test cells' lines of 20 characters or more inside BEGIN/END HIDDEN TESTS that appear
    nowhere outside those regions, not even within a longer line, and the test cells' lines outside them."""
    inside, outside, visible = set(), set(), set()
    for cell in cells:
        test = cell["metadata"].get("nbgrader", {}).get("grade") and cell["cell_type"] == "code"
        for line, region in _regions(cell, "HIDDEN TESTS"):
            (inside if region else outside).add(line)
            if test and not region:
                visible.add(line)
    elsewhere = "\n".join(outside)
    return {line for line in inside if line not in elsewhere}, visible


def _page_text(path: Path) -> str:
    """The text of an HTML page (tags removed, entities decoded), as a reader sees it."""
    return html.unescape(re.sub(r"<[^>]*>", "", path.read_text(encoding="utf-8")))


def _submit(course: Path, name: str, student: str, cells: list[dict], like: Path) -> None:
    nb = json.loads(like.read_text())
    nb["cells"] = cells
    folder = course / "submitted" / student / name
    folder.mkdir(parents=True)
    (folder / f"{name}.ipynb").write_text(json.dumps(nb, indent=1))


def _edit(cells: list[dict], grade_id: str, edit) -> None:
    target = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id]
    assert len(target) == 1, f"no solution cell {grade_id!r}"
    text = _text(target[0])
    if isinstance(edit, str):
        text = edit
    else:
        for anchor, replacement in [edit] if isinstance(edit, tuple) else edit:
            assert anchor in text, f"the anchor {anchor!r} is no longer in cell {grade_id}"
            text = text.replace(anchor, replacement)
    target[0]["source"] = text


def _part(grade_id: str) -> str:
    """test_<part>_<k> -> part."""
    assert grade_id.startswith("test_"), grade_id
    return grade_id[len("test_"):].rsplit("_", 1)[0]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_an_assignment_through_nbgrader(tmp_path, name):
    """Through nbgrader's own commands: the students' version holds no solution, hidden test or test marker; the
    source scores full marks, the release 0, and each submission with mistakes or bypasses loses exactly the points
    of the parts it got wrong (every test cell of those parts 0, every other test cell full: no cascade)."""
    course = tmp_path / "course"
    shutil.copytree(KIT / "source" / name, course / "source" / name)
    shutil.copy(KIT / "nbgrader_config.py", course)
    source = course / "source" / name / f"{name}.ipynb"

    nbgrader(course, "generate_assignment", name)
    released = course / "release" / name / f"{name}.ipynb"
    release_text = "\n".join(_text(c) for c in _cells(released))
    solutions = _solution_lines(_cells(source))
    assert len(solutions) >= 5, "the finder found too few solution lines to mean anything"
    leaked = sorted(line for line in solutions if line in release_text)
    assert not leaked, f"solution text in the students' version: {leaked}"
    assert "BEGIN SOLUTION" not in release_text and "YOUR CODE HERE" in release_text
    assert "YOUR ANSWER HERE" in release_text  # the written answer, cleared
    source_text = "\n".join(_text(c) for c in _cells(source))
    assert "BEGIN HIDDEN TESTS" in source_text and "HIDDEN TESTS" not in release_text
    for noise in ("NBVAL_", "measured with the solution", "../../../"):  # test markers, instructors' notes, links
        assert noise.lower() not in release_text.lower(), f"{noise!r} in the students' version"

    plan = submissions(name)
    # The source and the blank release come in as docs/instructors.md says downloads do: in
    # downloaded/NAME/archive/, named STUDENT_NOTEBOOK.ipynb, one alone and one inside a zip file; nbgrader
    # zip_collect (with the kit's FileNameCollectorPlugin.named_regexp) puts them in submitted/.
    archive = course / "downloaded" / name / "archive"
    archive.mkdir(parents=True)
    shutil.copy(source, archive / f"full_{name}.ipynb")
    with zipfile.ZipFile(archive / "downloads.zip", "w") as downloads:
        downloads.write(released, f"blank_{name}.ipynb")
    nbgrader(course, "zip_collect", name)
    for student, notebook in (("full", source), ("blank", released)):
        collected = course / "submitted" / student / name / f"{name}.ipynb"
        assert collected.is_file(), f"zip_collect did not put {student}_{name}.ipynb at {collected}"
        assert _cells(collected) == _cells(notebook), f"zip_collect's copy of {student}'s notebook differs"
    for student, (edits, _) in plan.items():
        cells = _cells(source)
        for grade_id, edit in edits.items():
            _edit(cells, grade_id, edit)
        _submit(course, name, student, cells, source)
    autograde(course, name)

    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {}
        for student in ("full", "blank", *plan):
            notebook = gradebook.find_submission_notebook(name, name, student)
            scores[student] = {g.name: (g.auto_score, g.max_score) for g in notebook.grades if g.cell_type == "code"}
            written = [g for g in notebook.grades if g.cell_type == "markdown"]
            assert written, "each assignment has a written answer"
            if student == "blank":  # nbgrader scores an answer left as the stub 0 by itself
                assert all(g.auto_score == 0 for g in written), [(g.name, g.auto_score) for g in written]
            else:  # an answer written is left to the instructor
                assert all(g.auto_score is None and g.needs_manual_grade for g in written), \
                    [(g.name, g.auto_score, g.needs_manual_grade) for g in written]
    tests = scores["full"]
    assert len(tests) >= 6 and all(points > 0 for _, points in tests.values())
    assert {k: s for k, (s, _) in tests.items()} == {k: p for k, (_, p) in tests.items()}, \
        f"the source does not get full marks: {tests}"
    assert all(score == 0 for score, _ in scores["blank"].values()), f"unanswered scores: {scores['blank']}"
    parts = {_part(k) for k in tests}
    for student, (_, wrong_parts) in plan.items():
        assert set(wrong_parts) <= parts, f"{student}: unknown parts {set(wrong_parts) - parts}"
        got = {k: s for k, (s, _) in scores[student].items()}
        want = {k: 0 if _part(k) in wrong_parts else p for k, (_, p) in tests.items()}
        assert got == want, f"{student} (wrong in {sorted(wrong_parts)}): scored {got}, expected {want}"

    # Feedback (nbgrader generate_feedback, with the kit's preprocessors): no hidden test, not even in the lines a
    # traceback shows around a failed one (blank's and the mistakes' feedback have many). The hidden lines were in
    # the notebook autograde ran, and the feedback shows the visible test code, so the search can find them.
    nbgrader(course, "generate_feedback", name)
    hidden, visible = _hidden_lines(_cells(source))
    assert len(hidden) >= 5 and visible, "the finder found too few test lines to mean anything"
    graded = "\n".join(_text(c) for c in _cells(course / "autograded" / "full" / name / f"{name}.ipynb"))
    assert hidden <= set(line.strip() for line in graded.splitlines()), "the hidden tests were not run"
    for student in ("full", "blank", *plan):
        page = _page_text(course / "feedback" / student / name / f"{name}.html")
        assert "HIDDEN TESTS" not in page, f"{student}'s feedback holds a hidden-test marker"
        leaked = sorted(line for line in hidden if line in page)  # in the cells or in a traceback's lines
        assert not leaked, f"hidden test code in {student}'s feedback: {leaked[:5]}"
        if student == "full":
            assert visible <= set(line.strip() for line in page.splitlines()), "the feedback lacks visible tests"
