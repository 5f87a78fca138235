"""Grading the nbgrader kit where a submission cannot reach the grading: each notebook runs in a bubblewrap sandbox.

    python -m minivit.autograde a_patches_and_attention --kit "$HOME/minivit-kit"
    make autograde KIT="$HOME/minivit-kit" ASSIGNMENT=a_patches_and_attention        # the same, from the repository

runs `nbgrader autograde NAME` in the course folder `--kit` with the kernel that executes each student's notebook
started inside bubblewrap (`bwrap`, https://github.com/containers/bubblewrap), so that the code of a submission,
which runs as the instructor, sees:

- a throwaway copy of its own folder (the files the release gives and the student's own notebooks) at the path
  nbgrader runs it in, and no other part of the course folder: no `source/` (solutions, hidden tests), no
  `autograded/` (the notebook being executed, with the hidden tests nbgrader put back), no other submission, no
  `gradebook.db`, no `feedback/`; it may write only that copy and a private /tmp, both thrown away;
- read-only: the system's programs and libraries (/usr, a few files of /etc), this Python environment, the
  `minivit` package and the data folder (its decoded caches must exist: `make data`); nothing else of the machine
  (no home folder, no other file of the repository);
- no network (its own network namespace: only a loopback of its own), no other process (its own PID namespace),
  no capabilities, and a cleared environment (a few variables passed on, below);
- no life after the notebook: bwrap is the namespace's init, so every process the notebook started -- detached,
  `setsid`, double-forked -- is killed when the kernel ends (and the kernel when nbgrader goes away).

The hidden tests reach the kernel only as the cells nbgrader sends it. The kernel talks to nbgrader over ZeroMQ's
`ipc` transport (Unix sockets in a folder of this run, bound into the sandbox), as TCP cannot cross the network
namespace. Interrupts (a cell past nbgrader's timeout) go as messages, the kernel being in a session of its own.

What it does not do: limit memory or CPU (a cell past `ExecutePreprocessor.timeout` is interrupted, nothing more), or
stop a submission that fakes its checks from inside the kernel it shares with the test cells (the answer and the
tests run in one namespace: minivit.grading's guards and the review of issue 38 item 2), or hide what is public
(the package implements every part; its source is readable). It needs Linux and a bwrap that can create user
namespaces; where it cannot, grading refuses, saying why in one sentence, unless `--unsandboxed` says to grade
without it (every submission then runs as you, in the course folder).

This file is also the kernel's launcher (run by path, before the sandbox exists): its top level imports only the
standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KERNEL_NAME = "minivit-sandbox"
KEEPER = "minivit.grading_kernel"  # the IPython extension each kernel loads: refuses the cells after a tampering one
SPEC_VARIABLE = "MINIVIT_SANDBOX_SPEC"  # the sandbox's layout, from the grading command to the kernel's launcher
HOW_TO_GET = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`, Fedora: `sudo dnf install "
              "bubblewrap`)")
# Namespaces, capabilities, a session and a life of the sandbox's own: the same flags in the probe and the kernel.
ISOLATION = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
# What of /etc a Python kernel reads (the loader's cache, names of users and groups, the time zone, Debian's
# alternatives); not the rest (root-only files such as /etc/shadow are readable to a kernel run by root).
ETC_FILES = ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
             "/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives", "/etc/fonts", "/etc/mime.types"]
# The variables the kernel gets (the sandbox starts from an empty environment): locale, threads, minivit's and
# nbgrader's own; no tokens, no paths into the machine.
PASSED_ON = ("LANG", "LANGUAGE", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
PASSED_ON_PREFIXES = ("LC_", "MINIVIT_", "NBGRADER_")
SANDBOX_HOME = "/tmp/home"


class SandboxUnavailable(RuntimeError):
    """Grading's sandbox cannot be made on this machine (the message says why, and how to get it)."""


def sandbox_problem() -> str | None:
    """None where bubblewrap can make grading's sandbox here; else one sentence saying why not, and how to get it."""
    if sys.platform != "linux":
        return (f"grading runs each submission in a bubblewrap sandbox, which needs Linux, and this is "
                f"{platform.system() or sys.platform}: grade on a Linux machine (a VM or a Debian container) with "
                f"bubblewrap installed")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"grading runs each submission in a bubblewrap sandbox, and `bwrap` is not on PATH: {HOW_TO_GET}"
    try:
        probe = subprocess.run([bwrap, *ISOLATION, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
                               capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"grading's sandbox did not start ({bwrap}: {error}): {HOW_TO_GET}, and check it runs"
    if probe.returncode != 0:
        said = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return (f"bubblewrap is installed but cannot make a sandbox here ({said}), most often because user "
                f"namespaces are disabled: enable them (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04 "
                f"an AppArmor profile for bwrap) or grade on a machine where `bwrap --unshare-all --ro-bind / / true` "
                f"succeeds")
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _links_under(folder: Path) -> set[Path]:
    """The real paths of the symbolic links under `folder` (the data folder links the offline copies)."""
    targets = set()
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            entry = Path(top) / name
            if entry.is_symlink() and entry.exists():
                targets.add(entry.resolve())
    return targets


def sandbox_spec(course: Path, work: Path) -> dict:
    """What grading's sandbox shows its kernel, for the course folder `course`: the read-only paths (this Python,
    the package, the data folder and what it links), the data folder, the kernel's environment. `work`: this run's
    folder (connection file, sockets, the submissions' copies). Refuses (ValueError) a layout that would put any of
    them inside the course folder, or the course folder inside one of them."""
    from minivit.data import data_root  # noqa: PLC0415 (the launcher's top level stays standard-library only)

    course = course.resolve()
    package = Path(__file__).resolve().parent
    data = data_root().resolve()
    read_only = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.prefix).absolute(),
                 Path(sys.base_prefix).absolute(), package}
    if data.is_dir():  # A reads no data; B and C need `make data` first
        read_only.add(data)
    for entry in sys.path:  # site-packages and the paths their .pth files add; not the working directory
        if entry and Path(entry).is_dir() and ("site-packages" in entry or "dist-packages" in entry
                                                or _inside(Path(entry).resolve(), Path(sys.base_prefix).resolve())):
            read_only.add(Path(entry).resolve())
    read_only |= _links_under(data) if data.is_dir() else set()
    for path in sorted(read_only):
        if _inside(path, course) or _inside(course, path):
            raise ValueError(f"grading's sandbox would show the course folder {course} to the submissions: {path} "
                             f"(this Python, the minivit package or the data folder) lies inside it or holds it; "
                             f"expected a course folder apart from them (a copy of the kit outside the repository)")
        if _inside(path, work) or _inside(work, path):
            raise ValueError(f"grading's work folder {work} lies inside {path} (or holds it): expected a temporary "
                             f"folder apart from the environment (set TMPDIR)")
    env = {k: v for k, v in os.environ.items()
           if k in PASSED_ON or k.startswith(PASSED_ON_PREFIXES) and k != SPEC_VARIABLE}
    env.update(HOME=SANDBOX_HOME, MINIVIT_DATA=str(data),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]))
    try:  # matplotlib's font cache, copied into each kernel's home (else each kernel rebuilds it, and says so)
        import matplotlib  # noqa: PLC0415

        mpl_cache = str(Path(matplotlib.get_cachedir()))
    except ImportError:
        mpl_cache = ""
    return {"course": str(course), "work": str(work), "python": sys.executable,
            "read_only": sorted(map(str, read_only)), "env": env, "mpl_cache": mpl_cache}


def _write_kernel(work: Path) -> Path:
    """The kernel spec (in a JUPYTER_PATH folder of this run) whose kernel is this file, run as the launcher."""
    spec = work / "jupyter" / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    argv = [sys.executable, "-I", str(Path(__file__).resolve()), "kernel", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({
        "argv": argv, "display_name": "Python 3 (minivit grading sandbox)", "language": "python",
        "interrupt_mode": "message", "metadata": {}}, indent=1))
    return work / "jupyter"


def bwrap_command(spec: dict, cwd: Path, copy: Path, connection_file: str, kernel_args: list[str]) -> list[str]:
    """The bwrap command that runs `python -m ipykernel_launcher -f connection_file` in grading's sandbox, with
    `copy` (the submission's throwaway copy) at `cwd` and nothing else of the course folder."""
    course, runtime = Path(spec["course"]), Path(connection_file).parent
    cmd = [shutil.which("bwrap") or "bwrap", *ISOLATION, "--clearenv"]
    for key, value in sorted(spec["env"].items()):
        cmd += ["--setenv", key, value]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # first: a bound path under /tmp stays visible
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ETC_FILES:
        cmd += ["--ro-bind-try", path, path]
    for path in spec["read_only"]:
        cmd += ["--ro-bind", path, path]
    cmd += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu",  # PyTorch's CPU count
            "--tmpfs", str(course),  # whatever of the course folder a bound path would show: an empty folder
            "--bind", str(copy), str(cwd),
            "--bind", str(runtime), str(runtime)]  # the connection file and the kernel's sockets
    cache = Path(spec["mpl_cache"]) if spec["mpl_cache"] else None
    if cache is not None and cache.is_dir():
        for item in sorted(cache.glob("*.json")):
            cmd += ["--ro-bind", str(item), f"{SANDBOX_HOME}/.cache/matplotlib/{item.name}"]
    # parent_handle=1: the kernel's parent is the namespace's init (bwrap), which outlives it; no parent to poll
    # (bwrap ends the kernel when nbgrader goes away), and no banner for a kernel started by hand on the terminal.
    cmd += ["--chdir", str(cwd), "--", spec["python"], "-m", "ipykernel_launcher", "-f", connection_file,
            "--IPKernelApp.parent_handle=1", f"--IPKernelApp.extensions={KEEPER}", *kernel_args]
    return cmd


def _submission_copy(spec: dict, cwd: Path) -> Path:
    """A throwaway copy of what the submission may read, for the kernel nbgrader starts in `cwd`
    (<course>/autograded/STUDENT/NAME): that folder's files but its notebooks (nbgrader has written there the
    notebook it executes, hidden tests included), and the student's own notebooks from submitted/STUDENT/NAME.
    Links are copied as links (inside the sandbox they point at nothing), never followed."""
    course = Path(spec["course"])
    try:
        student, name = cwd.relative_to(course / "autograded").parts
    except ValueError:
        raise SystemExit(f"minivit grading sandbox: the kernel was started in {cwd}, expected a folder "
                         f"{course}/autograded/STUDENT/NAME (nbgrader autograde): not starting it") from None
    kernels = Path(spec["work"]) / "k"
    kernels.mkdir(exist_ok=True)
    copy = Path(tempfile.mkdtemp(dir=kernels, prefix=f"{student}-"))
    shutil.copytree(cwd, copy, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.ipynb"))
    submitted = course / "submitted" / student / name
    if submitted.is_dir() and not submitted.is_symlink():
        for notebook in submitted.rglob("*.ipynb"):
            if ".ipynb_checkpoints" in notebook.parts:
                continue
            target = copy / notebook.relative_to(submitted)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(notebook, target, follow_symlinks=False)
    return copy


def launch_kernel(argv: list[str]) -> None:
    """The kernel spec's command (nbgrader starts it in the notebook's folder): exec bwrap with the kernel inside."""
    if not argv:
        raise SystemExit("usage: autograde.py kernel CONNECTION_FILE [KERNEL ARGS...]")
    if SPEC_VARIABLE not in os.environ:
        raise SystemExit(f"minivit grading sandbox: {SPEC_VARIABLE} is not set: this kernel is started by "
                         f"`python -m minivit.autograde`, not by hand")
    spec = json.loads(os.environ[SPEC_VARIABLE])
    cwd = Path.cwd().resolve()
    copy = _submission_copy(spec, cwd)
    cmd = bwrap_command(spec, cwd, copy, str(Path(argv[0]).resolve()), argv[1:])
    os.execv(cmd[0], cmd)


def _students(kit: Path, name: str, student: str | None) -> list[str]:
    """The students with a submission of `name` in `kit` (only `student`, if given), sorted."""
    found = sorted(p.parent.name for p in (kit / "submitted").glob(f"*/{name}") if p.is_dir())
    if student is not None:
        return [student] if student in found else []
    return found


def _threads(jobs: int) -> str:
    """Threads for each of `jobs` kernels at once: the cores this process may use, shared out (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return str(max(1, cores // jobs))


def autograde(name: str, kit: Path, student: str | None = None, force: bool = False,
              unsandboxed: bool = False, jobs: int = 1) -> int:
    """`nbgrader autograde name` in the course folder `kit`, each notebook run in grading's sandbox (or, with
    `unsandboxed`, as nbgrader runs it). With `jobs` > 1, that many students are graded at once, each by its own
    `nbgrader autograde --student` (one kernel each, the cores shared out among them). Refuses, changing no file,
    when the sandbox cannot be had (SandboxUnavailable) or the arguments name no assignment (ValueError). Returns
    nbgrader's exit status (with `jobs`, the first non-zero one)."""
    kit = Path(kit).expanduser().resolve()
    names = sorted(p.name for p in (kit / "source").iterdir() if p.is_dir()) if (kit / "source").is_dir() else []
    if not names:
        raise ValueError(f"{kit} has no source/ folder with assignments: expected an nbgrader course folder")
    if name not in names:
        raise ValueError(f"no assignment {name!r} in {kit / 'source'}: expected one of {', '.join(names)}")
    if not (kit / "gradebook.db").is_file():
        raise ValueError(f"{kit} has no gradebook.db: release the assignment first (make assignments KIT={kit})")
    from minivit.grading_scan import report, scan  # noqa: PLC0415 (the launcher's top level: standard library)

    print(report(name, scan(kit, name)), flush=True)  # what to read in the answers (docs/instructors.md)
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of at least 1, got {jobs!r}")
    problem = None if unsandboxed else sandbox_problem()
    if problem:
        raise SandboxUnavailable(problem)
    if unsandboxed:
        print("minivit.autograde: --unsandboxed: each submission runs as you, in the course folder, and can read the "
              "solutions and hidden tests and write the gradebook", file=sys.stderr, flush=True)
    if jobs == 1:
        return _nbgrader_autograde(name, kit, student, force, unsandboxed)
    students = _students(kit, name, student)
    if not students:
        raise ValueError(f"no submission of {name!r} in {kit / 'submitted'}"
                         + (f" from {student!r}" if student else "") + ": expected submitted/STUDENT/" + name)
    env = {} if any(v in os.environ for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")) else \
        {"OMP_NUM_THREADS": _threads(jobs), "MKL_NUM_THREADS": _threads(jobs)}
    def grade(s: str) -> tuple[str, tuple[int, str]]:
        code, output = _nbgrader_autograde(name, kit, s, force, unsandboxed, env, capture=True)
        if code != 0 and "database is locked" in output:  # SQLite's lock outwaited by another job: once more
            code, output = _nbgrader_autograde(name, kit, s, True, unsandboxed, env, capture=True)
        return s, (code, output)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(grade, students))
    failed = [s for s, (code, _) in runs if code != 0]
    for s, (code, output) in runs:
        if code != 0:  # what went wrong, the student named; the others' logs are nbgrader's usual chatter
            print(f"--- {s}: nbgrader autograde exited with {code}\n{output[-4000:]}", file=sys.stderr)
    print(f"minivit.autograde: graded {len(students) - len(failed)} of {len(students)} submissions of {name}, "
          f"{jobs} at a time" + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return next((code for _, (code, _) in runs if code != 0), 0)


def _nbgrader_autograde(name: str, kit: Path, student: str | None, force: bool, unsandboxed: bool,
                        extra_env: dict | None = None, capture: bool = False):
    """One `nbgrader autograde` (of `student`'s submission, or of all), sandboxed unless `unsandboxed`: its exit
    status, or with `capture` (exit status, its output)."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` from PATH: this environment's
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), **(extra_env or {})}
    args = [sys.executable, "-m", "nbgrader", "autograde", name, f"--CourseDirectory.root={kit}"]
    if student:
        args.append(f"--student={student}")
    if force:
        args.append("--force")

    def run():
        if capture:
            done = subprocess.run(args, cwd=kit, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            return done.returncode, done.stdout
        return subprocess.run(args, cwd=kit, env=env).returncode

    if unsandboxed:
        return run()
    work = Path(tempfile.mkdtemp(prefix="mvg-"))  # short: a Unix socket's path holds at most 107 bytes
    try:
        spec = sandbox_spec(kit, work)
        spec["env"].update(extra_env or {})  # the threads of each of several jobs' kernels
        runtime = work / "rt"
        runtime.mkdir()
        env.update({SPEC_VARIABLE: json.dumps(spec), "JUPYTER_PATH": str(_write_kernel(work)),
                    "JUPYTER_RUNTIME_DIR": str(runtime)})
        args += [f"--Execute.kernel_name={KERNEL_NAME}", "--KernelManager.transport=ipc",
                 f"--KernelManager.connection_file={runtime / 'kernel.json'}", f"--KernelManager.ip={runtime / 'k'}"]
        return run()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["kernel"]:
        launch_kernel(argv[1:])
        return 0  # not reached: exec
    if argv[:1] == ["scan"]:  # the scan alone; grading prints it first
        from minivit.grading_scan import main as scan_main  # noqa: PLC0415

        return scan_main(argv[1:])
    if argv[:1] == ["check"]:  # `make autograde`'s first step: the sandbox, before anything is installed
        problem = None if "--unsandboxed" in argv[1:] else sandbox_problem()
        if problem:
            print(f"minivit.autograde: {problem} (or set AUTOGRADE_ARGS=--unsandboxed to grade without it, trusting "
                  f"every submission)", file=sys.stderr)
            return 2
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m minivit.autograde",
        description="nbgrader autograde, each submission's notebook run in a bubblewrap sandbox (docs/instructors.md)")
    parser.add_argument("assignment", help="the assignment's name (a folder of the kit's source/)")
    parser.add_argument("--kit", default="assignments", help="the nbgrader course folder (default: assignments)")
    parser.add_argument("--student", help="grade this student's submission only")
    parser.add_argument("--force", action="store_true", help="grade again submissions already graded")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="grade without the sandbox (every submission runs as you, in the course folder)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="grade this many submissions at once, the cores shared out among them (default: 1)")
    args = parser.parse_args(argv)
    try:
        return autograde(args.assignment, Path(args.kit), args.student, args.force, args.unsandboxed, args.jobs)
    except SandboxUnavailable as error:
        print(f"minivit.autograde: {error} (or pass --unsandboxed to grade without it, trusting every submission)",
              file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"minivit.autograde: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
