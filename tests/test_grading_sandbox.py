"""Grading a submission cannot reach (issue 38 item 1): `python -m minivit.autograde`, the kit's grading command,
runs each notebook in a bubblewrap sandbox. Tooling test, on assignment A (the cheapest to grade).

The hunt's three attacks (../shared/reviews/assignments-bypass-hunt.md, rows 30 and 31, and the graded notebook read
at run time), each a blank release with Part 1's answer cell replaced, are graded with the source (full marks) and
the blank release (the honest zero): the attack that reads `source/` and runs its solutions, the one that leaves a
detached process to raise its grades in gradebook.db after autograde, and the one that reads the notebook nbgrader
executes (hidden tests put back) and every other notebook of the course folder. Each must get nothing: the blank
release's scores, reads that fail or find no hidden test, no process alive after grading, no manual score written.
Without bwrap, grading refuses in one sentence and changes no file.

Skipped, saying why, where nbgrader is not installed or bwrap is not (not Linux, or no bubblewrap);
MINIVIT_REQUIRE_SANDBOX=1 (set by .ci/run, which installs bubblewrap) makes that a failure.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from minivit.autograde import sandbox_problem

ROOT = Path(__file__).resolve().parents[1]
NAME = "a_patches_and_attention"
HAVE_NBGRADER = importlib.util.find_spec("nbgrader") is not None
REQUIRE_VAR = "MINIVIT_REQUIRE_SANDBOX"
MARKER = f"minivit-sandbox-attack-{uuid.uuid4().hex}"  # in the detached process's command line, to find it

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not HAVE_NBGRADER, reason="nbgrader is not installed (pip install -e '.[dev]')")]

# Part 1's answer cell of each attacking submission (a blank release otherwise). Each prints one line, ATTACK ...,
# saying what it got, which the test reads from the graded notebook.
READS_SOURCE = """
import glob, json, os
course = os.path.abspath("../../..")
paths = ["../../../source/NAME/NAME.ipynb", *glob.glob(course + "/source/**/*.ipynb", recursive=True)]
ran, errors = 0, []
for path in paths:
    try:
        with open(path) as f:
            nb = json.load(f)
    except Exception as error:
        errors.append(type(error).__name__)
        continue
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "### BEGIN SOLUTION" in "".join(cell["source"]):
            exec("".join(cell["source"]), globals())
            ran += 1
print(f"ATTACK source: ran {ran} solution cells; errors {sorted(set(errors))}")
""".replace("NAME", NAME)

DETACHED = """
import os, subprocess, sys, time
db = os.path.abspath("../../../gradebook.db")
code = '''# MARKER
import sqlite3, time
open("/tmp/MARKER", "w").close()
for _ in range(1200):  # two minutes: long after autograde has written the grades
    try:
        con = sqlite3.connect("file:DB?mode=rw", uri=True)
        con.execute("UPDATE grade SET manual_score = 1")  # full marks: each code grade is worth a point
        con.commit()
        con.close()
    except Exception:
        pass
    time.sleep(0.1)
'''.replace("DB", db)
subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    if os.path.exists("/tmp/MARKER"):
        break
    time.sleep(0.05)
print(f"ATTACK detached: running {os.path.exists('/tmp/MARKER')}; gradebook visible {os.path.exists(db)}")
""".replace("MARKER", MARKER)

READS_GRADED = """
import glob, os
course = os.path.abspath("../../..")
paths = ["NAME.ipynb", *glob.glob(course + "/**/*.ipynb", recursive=True), course + "/gradebook.db"]
read, hidden, errors = 0, 0, []
for path in paths:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except Exception as error:
        errors.append(type(error).__name__)
        continue
    read += 1
    hidden += data.count(("BEGIN HIDDEN" + " TESTS").encode())  # not spelled out: this cell is in the notebook
print(f"ATTACK graded: read {read} files; hidden tests {hidden}; errors {sorted(set(errors))}")
""".replace("NAME", NAME)

ATTACKS = {"reads_source": READS_SOURCE, "detached": DETACHED, "reads_graded": READS_GRADED}


def _nbgrader(course: Path, *args: str) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    run = subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"],
                         cwd=course, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


def _grade(course: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minivit.autograde", NAME, "--kit", str(course), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)


def _submit(course: Path, student: str, notebook: Path, answer: str | None = None) -> None:
    nb = json.loads(notebook.read_text())
    if answer is not None:
        cells = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "patchify"]
        assert len(cells) == 1, "assignment A has no answer cell 'patchify'"
        cells[0]["source"] = answer
    folder = course / "submitted" / student / NAME
    folder.mkdir(parents=True)
    (folder / f"{NAME}.ipynb").write_text(json.dumps(nb, indent=1))


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A course folder with A released and the submissions in submitted/: the source, the blank release, the
    three attacks."""
    course = tmp_path_factory.mktemp("sandbox") / "course"
    shutil.copytree(ROOT / "assignments" / "source" / NAME, course / "source" / NAME)
    shutil.copy(ROOT / "assignments" / "nbgrader_config.py", course)
    _nbgrader(course, "generate_assignment", NAME)
    release = course / "release" / NAME / f"{NAME}.ipynb"
    _submit(course, "full", course / "source" / NAME / f"{NAME}.ipynb")
    _submit(course, "blank", release)
    for student, answer in ATTACKS.items():
        _submit(course, student, release, answer)
    return course


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def test_without_bwrap_grading_refuses_in_one_sentence_and_changes_nothing(released, tmp_path):
    empty = tmp_path / "bin"  # a PATH without bwrap on it (python is run by its full path)
    empty.mkdir()
    before = _tree(released)
    run = _grade(released, env={**os.environ, "PATH": str(empty)})
    assert run.returncode == 2, run.stdout + run.stderr
    message = run.stderr.strip()
    assert message.count("\n") == 0 and message.count(". ") == 0, f"not one sentence: {message!r}"
    assert "`bwrap` is not on PATH" in message and "apt-get install bubblewrap" in message, message
    assert "--unsandboxed" in message, message
    assert _tree(released) == before, "a refused grading changed the course folder"
    assert not (released / "autograded").exists()

    wrong = _grade(released.parent / "elsewhere")  # bad input: said, with what was expected
    assert wrong.returncode == 2 and "expected an nbgrader course folder" in wrong.stderr, wrong.stderr
    run = subprocess.run([sys.executable, "-m", "minivit.autograde", "b_nope", "--kit", str(released)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and f"expected one of {NAME}" in run.stderr, run.stderr
    run = _grade(released, "--jobs", "0")
    assert run.returncode == 2 and "at least 1" in run.stderr, run.stderr
    assert _tree(released) == before


def _need_sandbox() -> None:
    problem = sandbox_problem()
    if problem is None:
        return
    if os.environ.get(REQUIRE_VAR, "").strip() not in ("", "0"):
        pytest.fail(f"{problem} ({REQUIRE_VAR}=1 forbids skipping the grading sandbox's tests)", pytrace=False)
    if sys.platform == "linux" and shutil.which("bwrap"):  # installed but broken: a failure, not a skip
        pytest.fail(problem, pytrace=False)
    pytest.skip(problem)


def _alive(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and proc.name != str(os.getpid()):
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="module")
def graded(released) -> dict:
    """The course graded by `python -m minivit.autograde --jobs 2`: each student's code scores, manual scores and the
    ATTACK lines of Part 1's answer cell; the processes alive with the detached attack's marker right after."""
    _need_sandbox()
    run = _grade(released, "--jobs", "2")  # two at a time, as docs/instructors.md advises: each in its own sandbox
    survivors = _alive(MARKER)
    for pid in survivors:  # ours: do not leave them running, whatever the test says next
        os.kill(pid, 9)
    assert run.returncode == 0, f"grading failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    from nbgrader.api import Gradebook
    result = {"survivors": survivors, "scores": {}, "manual": {}, "lines": {}}
    with Gradebook(f"sqlite:///{released / 'gradebook.db'}") as gradebook:
        for student in ("full", "blank", *ATTACKS):
            notebook = gradebook.find_submission_notebook(NAME, NAME, student)
            result["scores"][student] = {g.name: g.auto_score for g in notebook.grades if g.cell_type == "code"}
            result["manual"][student] = [g.manual_score for g in notebook.grades if g.manual_score is not None]
            result["max"] = {g.name: g.max_score for g in notebook.grades if g.cell_type == "code"}
    for student in ATTACKS:
        nb = json.loads((released / "autograded" / student / NAME / f"{NAME}.ipynb").read_text())
        cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "patchify")
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        result["lines"][student] = [line for line in text.splitlines() if line.startswith("ATTACK")]
    return result


def test_the_sandbox_grades_right_answers_right(graded):
    scores, points = graded["scores"], graded["max"]
    assert len(points) >= 6 and scores["full"] == points, f"the source, graded in the sandbox: {scores['full']}"
    assert set(scores["blank"].values()) == {0}, f"the blank release: {scores['blank']}"


def test_reading_the_source_gets_nothing(graded, released):
    assert (released / "source" / NAME / f"{NAME}.ipynb").is_file()  # what the attack reads, outside the sandbox
    assert graded["lines"]["reads_source"] == ["ATTACK source: ran 0 solution cells; errors ['FileNotFoundError']"]
    assert graded["scores"]["reads_source"] == graded["scores"]["blank"]


def test_a_detached_process_dies_with_the_notebook_and_never_reaches_the_gradebook(graded):
    assert graded["lines"]["detached"] == ["ATTACK detached: running True; gradebook visible False"], \
        "the detached process did not start inside the sandbox, or saw the gradebook"
    assert graded["survivors"] == [], f"processes of a graded notebook alive after grading: {graded['survivors']}"
    assert graded["manual"]["detached"] == [] and graded["scores"]["detached"] == graded["scores"]["blank"]
    assert all(not manual for manual in graded["manual"].values()), graded["manual"]


def test_the_notebook_being_graded_and_the_course_folder_are_out_of_reach(graded, released):
    graded_file = released / "autograded" / "reads_graded" / NAME / f"{NAME}.ipynb"
    assert b"BEGIN HIDDEN TESTS" in graded_file.read_bytes()  # the file nbgrader executes, outside the sandbox
    line, = graded["lines"]["reads_graded"]
    # Inside: the student's own notebook at that path (the only notebook it finds), no hidden test, no gradebook.
    assert line == "ATTACK graded: read 2 files; hidden tests 0; errors ['FileNotFoundError']", line
    assert graded["scores"]["reads_graded"] == graded["scores"]["blank"]
