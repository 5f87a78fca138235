"""`python -m minivit.autograde NAME --jobs N` (issue 38 item 6): N students graded at once, each by its own
`nbgrader autograde --student`, with the cores shared out -- in nbgrader's environment and in the sandbox's cleared
one. Unit test: nbgrader is not run (subprocess.run is replaced by a recorder); tests/test_grading_sandbox.py and
tests/test_assignments.py grade real submissions with --jobs 2."""

import json
import subprocess
from pathlib import Path

import pytest

from minivit import autograde

NAME = "a_patches_and_attention"


@pytest.fixture
def kit(tmp_path) -> Path:
    kit = tmp_path / "kit"
    (kit / "source" / NAME).mkdir(parents=True)
    (kit / "gradebook.db").write_bytes(b"")
    for student in ("bea", "al", "cy"):
        (kit / "submitted" / student / NAME).mkdir(parents=True)
    return kit


@pytest.fixture
def calls(monkeypatch):
    """Each nbgrader run: (its arguments, its environment, the sandbox's environment for its kernels)."""
    made, answers = [], {}  # student -> [(exit status, output), ...] for its runs, in order
    monkeypatch.setattr(autograde, "sandbox_problem", lambda: None)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)

    def run(args, cwd=None, env=None, **kwargs):
        spec = json.loads(env[autograde.SPEC_VARIABLE])
        made.append((list(args), dict(env), spec["env"]))
        queue = answers.get(_student(args), [])
        code, out = queue.pop(0) if queue else (0, "graded")
        return subprocess.CompletedProcess(args, code, stdout=out)

    monkeypatch.setattr(autograde.subprocess, "run", run)
    return made, answers


def _student(args) -> str:
    return next(a.split("=", 1)[1] for a in args if a.startswith("--student="))


def test_jobs_grade_each_student_once_with_the_cores_shared_out(kit, calls, monkeypatch):
    made, _ = calls
    monkeypatch.setattr(autograde, "_threads", lambda jobs: "3")  # as if the machine had 6 cores, 2 jobs
    assert autograde.autograde(NAME, kit, jobs=2) == 0
    assert sorted(_student(args) for args, _, _ in made) == ["al", "bea", "cy"]
    for args, env, kernel_env in made:
        assert args[1:4] == ["-m", "nbgrader", "autograde"] and NAME in args
        assert env["OMP_NUM_THREADS"] == "3" and kernel_env["OMP_NUM_THREADS"] == "3", (env, kernel_env)
        assert kernel_env["MKL_NUM_THREADS"] == "3"


def test_threads_share_the_cores_out():
    os = autograde.os  # the cores this process may use, as _threads counts them (no affinity outside Linux)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert autograde._threads(1) == str(cores)
    assert autograde._threads(cores) == "1" and autograde._threads(4 * cores) == "1"


def test_a_thread_count_set_by_the_user_is_kept(kit, calls, monkeypatch):
    made, _ = calls
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert autograde.autograde(NAME, kit, jobs=2) == 0
    assert {env["OMP_NUM_THREADS"] for _, env, _ in made} == {"5"}
    assert {kernel_env["OMP_NUM_THREADS"] for _, _, kernel_env in made} == {"5"}


def test_a_job_that_outwaited_the_gradebook_lock_is_graded_once_more(kit, calls, capsys):
    made, answers = calls
    answers["bea"] = [(1, "sqlite3.OperationalError: database is locked"), (0, "")]
    assert autograde.autograde(NAME, kit, student="bea", jobs=2) == 0
    assert [_student(args) for args, _, _ in made] == ["bea", "bea"]
    assert "--force" in made[1][0]  # its first run may have written part of its grades
    assert "graded 1 of 1" in capsys.readouterr().out


def test_a_failed_job_is_named_with_its_output_and_sets_the_exit_status(kit, calls, capsys):
    made, answers = calls
    answers["bea"] = [(3, "Traceback: something nbgrader said")]
    assert autograde.autograde(NAME, kit, jobs=2) == 3
    out = capsys.readouterr()
    assert "graded 2 of 3" in out.out and "failed: bea" in out.out
    assert "--- bea: nbgrader autograde exited with 3" in out.err and "something nbgrader said" in out.err
    assert "--- al" not in out.err and "--- cy" not in out.err
    assert len(made) == 3


@pytest.mark.parametrize("jobs", [0, -1, 1.5])
def test_jobs_below_one_are_refused(kit, calls, jobs):
    with pytest.raises(ValueError, match="at least 1"):
        autograde.autograde(NAME, kit, jobs=jobs)
    assert calls[0] == []


def test_jobs_with_no_submission_are_refused(kit, calls):
    with pytest.raises(ValueError, match="expected submitted/STUDENT/"):
        autograde.autograde(NAME, kit, student="nobody", jobs=2)
    assert calls[0] == []
