"""The scan of the submissions before grading (minivit.grading_scan, issue 38 item 2): each construct the hunt used
(../shared/reviews/assignments-bypass-hunt.md) is flagged with its line; the three assignments' own solutions flag
nothing; only answer cells and cells a student added are read; the report and `python -m minivit.autograde scan`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minivit.grading_scan import answer_cells, locked_names, report, scan, scan_notebook, scan_source

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "assignments" / "source").glob("*/*.ipynb"))
LOCKED = ({"guarded", "check_cases", "check_patchify", "flax_params", "torch", "minivit", "rearrange"},
          {"torch", "minivit", "rearrange"})

CONSTRUCTS = [  # (a line of an answer, what the report must say of it)
    ("get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])", "the kernel (get_ipython)"),
    ("ip.input_transformers_post.append(f)", "the kernel's input transformers"),
    ("%load_ext something", "the kernel (get_ipython)"),  # a magic, as IPython runs it
    ("f = types.FunctionType(minivit.patchify.__code__, dict(g))", "a function's code (__code__)"),
    ("g = minivit.patchify.__globals__", "a function's globals (__globals__)"),
    ("d = fn.__defaults__", "a function's defaults (__defaults__)"),
    ("import importlib", "modules loaded by name (importlib)"),
    ("m = sys.modules['minivit.attention']", "modules by name (sys.modules)"),
    ("exec(src, globals())", "code run from text (exec)"),
    ("y = eval('1 + 1')", "code run from text (eval)"),
    ("c = compile(src, 'x', 'exec')", "code compiled (compile)"),
    ("src = inspect.getsource(minivit.patching)", "the package's source (inspect.getsource)"),
    ("torch.allclose = torch.equal = lambda *a, **k: True", "an attribute of a module changed (torch.allclose)"),
    ("minivit.attention_rollout = mine", "an attribute of a module changed (minivit.attention_rollout)"),
    ("F.interpolate = mine", "an attribute of a module changed (F.interpolate)"),
    ("guarded = lambda fn, paths, hint='': fn", "the locked cells' name `guarded` rebound"),
    ("check_cases = lambda *a, **k: None", "the locked cells' name `check_cases` rebound"),
    ("def check_patchify(fn):\n    return True", "the locked cells' name `check_patchify` rebound"),
    ("from mymodule import guarded", "the locked cells' name `guarded` rebound"),
    ("z = torch.zeros(3).as_subclass(Yes)", "a tensor subclass (as_subclass)"),
    ("class Yes(torch.Tensor):\n    pass", "a tensor subclass (Yes)"),
    ("import subprocess", "another process (subprocess)"),
    ("os.system('cat /etc/passwd')", "a shell (os.system)"),
    ("pid = os.fork()", "another process (os.fork)"),
    ("os.execv('/bin/sh', ['sh'])", "another program (os.execv)"),
    ("from multiprocessing import Process", "another process (multiprocessing)"),
    ("import sqlite3", "a database (sqlite3: the gradebook?)"),
    ("import ctypes", "C memory (ctypes)"),
    ("import gc", "every object (gc)"),
    ("text = open('../../../source/a/a.ipynb').read()", "a path outside the submission"),
    ("text = open('/etc/hosts').read()", "a path outside the submission"),
    ("minivit.grading._ORIGINAL.clear()", "grading's record (_ORIGINAL)"),
    ("sys.setprofile(None)", "the profile hook (sys.setprofile)"),
    ("mod = F.__dict__['scaled_dot_product_attention']", "a module's or class's namespace (__dict__)"),
    ("import threading", "a thread (threading)"),
]


@pytest.mark.parametrize("line, what", CONSTRUCTS, ids=[w for _, w in CONSTRUCTS])
def test_each_construct_is_flagged_at_its_line(line, what):
    source = "x = 1\n" + line + "\n"
    found = scan_source(source, *LOCKED)
    assert any(number == 2 and what in said for number, said in found), found


@pytest.mark.parametrize("line, what", CONSTRUCTS[:12], ids=[w for _, w in CONSTRUCTS[:12]])
def test_a_cell_that_does_not_parse_is_read_line_by_line(line, what):
    source = "def broken(:\n" + line + "\n"
    assert any(number == 2 for number, _ in scan_source(source, *LOCKED)), scan_source(source, *LOCKED)


def test_honest_lines_flag_nothing():
    honest = ("model.eval()\nx = re.compile('a')\nm = torch.compile(model)\nimport torch.nn.functional as F\n"
              "from minivit.grading import guarded\nself_attention = rearrange(x, 'b n (h d) -> b h n d', h=2)\n"
              "path = os.path.join('data', 'x')\nmodel.head = torch.nn.Linear(3, 4)\nanswer = 3\n...\n")
    assert scan_source(honest, *LOCKED) == []


@pytest.mark.parametrize("notebook", SOURCES, ids=[p.stem for p in SOURCES])
def test_the_assignments_own_solutions_flag_nothing(notebook):
    nb = json.loads(notebook.read_text())
    names, modules = locked_names(nb)
    assert {"torch", "minivit", "guarded", "check_cases"} <= names and "torch" in modules
    assert len(answer_cells(nb)) >= 4
    assert scan_notebook(notebook, names, modules) == []


def test_only_answer_cells_and_added_cells_are_read(tmp_path):
    nb = json.loads(SOURCES[0].read_text())
    locked = [c for c in nb["cells"] if c["cell_type"] == "code" and not c["metadata"]["nbgrader"]["solution"]]
    locked[0]["source"] = "import gc\n" + "".join(locked[0]["source"])  # nbgrader puts a locked cell back
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "import ctypes\n", "outputs": [],
                        "execution_count": None})
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb))
    found = scan_notebook(path)
    assert [(f.where, f.line, f.what) for f in found] == [("added cell", 1, "C memory (ctypes)")], found


@pytest.fixture
def kit(tmp_path):
    """A course folder with A's source and three submissions: the source, an attack, a notebook that is not one."""
    name = SOURCES[0].parent.name
    course = tmp_path / "course"
    shutil.copytree(SOURCES[0].parent, course / "source" / name)
    nb = json.loads(SOURCES[0].read_text())
    for student, edit in (("honest", None), ("mallory", "guarded = lambda fn, paths, hint='': fn\n"), ("broken", "")):
        folder = course / "submitted" / student / name
        folder.mkdir(parents=True)
        if student == "broken":
            (folder / f"{name}.ipynb").write_text("{not json")
            continue
        cells = json.loads(json.dumps(nb["cells"]))
        if edit:
            cell = next(c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id") == "patchify")
            cell["source"] = edit + "".join(cell["source"])
        (folder / f"{name}.ipynb").write_text(json.dumps({**nb, "cells": cells}))
    return course, name


def test_the_report_lists_each_student_cell_and_line(kit):
    course, name = kit
    results = scan(course, name)
    assert sorted(results) == ["broken", "honest", "mallory"]
    text = report(name, results)
    assert text.splitlines()[0].startswith(f"scan of {name}: 3 submissions, 2 with constructs to read")
    assert "a reading aid, not proof" in text.splitlines()[0]
    assert f"mallory:\n  {name}.ipynb cell 3 (answer patchify), line 1: the locked cells' name `guarded` rebound" \
           "  | guarded = lambda fn, paths, hint='': fn" in text, text
    assert "not readable as a notebook (JSONDecodeError)" in text and text.endswith("nothing flagged: honest")


def test_the_command_prints_the_report(kit):
    course, name = kit
    run = subprocess.run([sys.executable, "-m", "minivit.autograde", "scan", name, "--kit", str(course)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"scan of {name}: 3 submissions") and "mallory:" in run.stdout
    wrong = subprocess.run([sys.executable, "-m", "minivit.autograde", "scan", "nope", "--kit", str(course)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "expected one of" in wrong.stderr, wrong.stderr
