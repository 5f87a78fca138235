"""The set-up cell (.ci/first_cell.py) is the first cell of every notebook, and what it does: nothing where minivit
imports; install the course and prepare the data where it does not (Colab). The sync script keeps the notebooks in
step (.ci/sync_first_cell.py)."""
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SYNC = ROOT / ".ci" / "sync_first_cell.py"
TEXT = (ROOT / ".ci" / "first_cell.py").read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_starts_with_the_setup_cell(path):
    cell = json.loads(path.read_text())["cells"][0]
    assert cell["cell_type"] == "code" and "".join(cell["source"]) == TEXT.rstrip("\n"), (
        f"{path.name}: cell 0 is not .ci/first_cell.py; run python .ci/sync_first_cell.py")
    assert cell["outputs"] == []  # nbval compares it: nothing where minivit imports


def _run_cell(monkeypatch, capsys, installed: bool) -> list:
    calls = []
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (find_spec(name, *a) if installed else None) if name == "minivit"
                        else find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    exec(compile(TEXT, "first_cell.py", "exec"), {})
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    return calls


def test_the_cell_does_nothing_where_minivit_imports(monkeypatch, capsys):
    assert _run_cell(monkeypatch, capsys, installed=True) == []


def test_the_cell_installs_the_course_and_prepares_the_data_where_minivit_is_missing(monkeypatch, capsys):
    namespace = {}
    exec(compile(TEXT, "first_cell.py", "exec"), namespace)  # minivit imports here: only the URL is defined
    url = namespace["MINIVIT_REPO"]
    assert url.startswith("https://") and TEXT.count(url) == 1  # the repository in one place
    calls = _run_cell(monkeypatch, capsys, installed=False)
    assert [cmd for cmd, _ in calls] == [[sys.executable, "-m", "pip", "install", "--quiet", f"git+{url}"],
                                        [sys.executable, "-m", "minivit.data", "prepare"]]
    assert all(kw == {"check": True} for _, kw in calls)  # a failed install stops the cell


def test_sync_inserts_once_updates_and_checks(tmp_path):
    nb = tmp_path / "00_x.ipynb"
    shutil.copy(NOTEBOOKS[1], nb)  # any notebook
    original = json.loads(nb.read_text())
    if original["cells"][0].get("id") == "minivit-setup":  # already synced: start from the notebook without it
        original["cells"] = original["cells"][1:]
        nb.write_text(json.dumps(original, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    run = lambda *args: subprocess.run([sys.executable, str(SYNC), *args, str(nb)], capture_output=True, text=True)
    before = nb.read_text()
    done = run("--check")
    assert done.returncode == 1 and "differs" in done.stderr and nb.read_text() == before  # --check changes nothing
    assert run().returncode == 0
    after = json.loads(nb.read_text())
    assert after["cells"][1:] == original["cells"] and after["cells"][0]["id"] == "minivit-setup"
    assert run("--check").returncode == 0
    synced = nb.read_text()
    assert run().returncode == 0 and nb.read_text() == synced  # idempotent
    after["cells"][0]["source"] = ["an old version of the cell"]
    nb.write_text(json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert run().returncode == 0 and nb.read_text() == synced  # updated in place, not inserted again
