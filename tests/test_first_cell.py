"""The set-up cell (.ci/first_cell.py) is the first cell of every notebook, and what it does: nothing where minivit
imports; install the course and prepare the data where it does not (Colab); stop there with one sentence while
MINIVIT_REPO is the placeholder. The sync script keeps the notebooks in step with it, and writes "Open in Colab"
links once MINIVIT_REPO names a repository (.ci/sync_first_cell.py; tried on copies, never on the notebooks)."""
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SYNC = ROOT / ".ci" / "sync_first_cell.py"
TEXT = (ROOT / ".ci" / "first_cell.py").read_text()
PLACEHOLDER = "https://github.com/OWNER/minivit"


def with_repo(url: str) -> str:
    """The cell's text with MINIVIT_REPO set to `url` (these tests hold whether or not the course has set it)."""
    return re.sub(r'^MINIVIT_REPO = "[^"]*"', f'MINIVIT_REPO = "{url}"', TEXT, count=1, flags=re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_starts_with_the_setup_cell(path):
    cell = json.loads(path.read_text())["cells"][0]
    assert cell["cell_type"] == "code" and "".join(cell["source"]) == TEXT.rstrip("\n"), (
        f"{path.name}: cell 0 is not .ci/first_cell.py; run python .ci/sync_first_cell.py")
    assert cell["outputs"] == []  # nbval compares it: nothing where minivit imports


def _colab(monkeypatch):
    """What a Colab runtime has and a course machine has not: the google.colab module."""
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))


def _run_cell(monkeypatch, capsys, installed: bool, text: str = TEXT, calls: list | None = None) -> list:
    """Run the cell's code here, with minivit importable or not, subprocess.run recorded into `calls` (not run)."""
    calls = [] if calls is None else calls
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (find_spec(name, *a) if installed else None) if name == "minivit"
                        else find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    exec(compile(text, "first_cell.py", "exec"), {})
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    return calls


@pytest.mark.parametrize("on_colab", [False, True], ids=["course machine", "Colab once installed"])
def test_the_cell_does_nothing_where_minivit_imports(monkeypatch, capsys, on_colab):
    if on_colab:
        _colab(monkeypatch)
    assert _run_cell(monkeypatch, capsys, installed=True) == []


def test_the_placeholder_stops_the_cell_with_one_sentence_on_colab(monkeypatch, capsys):
    _colab(monkeypatch)  # a fresh Colab runtime: google.colab there, minivit not installed
    calls = []
    with pytest.raises(Exception) as stop:
        _run_cell(monkeypatch, capsys, installed=False, text=with_repo(PLACEHOLDER), calls=calls)
    assert capsys.readouterr() == ("", "") and calls == [], f"the cell printed or ran something: {calls}"
    message = str(stop.value)
    assert stop.value._render_traceback_() == [message]  # what IPython shows: the sentence, not a traceback
    assert "\n" not in message and message.endswith(".") and len(re.findall(r"[.!?](?:\s|$)", message)) == 1, (
        f"not one sentence: {message!r}")
    for what in ("MINIVIT_REPO", "https://github.com/OWNER/minivit", "this cell", ".ci/first_cell.py",
                 "python .ci/sync_first_cell.py"):
        assert what in message, f"the message does not say {what!r}: {message!r}"


def test_jupyter_shows_the_sentence_alone_and_stops_run_all(tmp_path):
    """In a real IPython kernel (what Jupyter and Colab run), as on a fresh Colab runtime: the cell's error output
    is the sentence, no traceback, and the cell fails, so that "Run all" stops there."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    colab = """import sys, types, importlib.util, subprocess
sys.modules["google"] = types.ModuleType("google"); sys.modules["google.colab"] = types.ModuleType("google.colab")
_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "minivit" else _spec(name, *a)
subprocess.run = lambda *a, **k: print("subprocess.run:", a)"""
    cells = [colab, with_repo(PLACEHOLDER), "print('after the set-up cell')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}})
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        client.execute()
    outputs = nb.cells[1].outputs
    assert [o["output_type"] for o in outputs] == ["error"], outputs
    message = outputs[0]["evalue"]
    assert outputs[0]["traceback"] == [message] and message.startswith("MINIVIT_REPO is still the placeholder")
    assert nb.cells[2].outputs == [], "the cell after the set-up cell ran"


def test_the_cell_installs_the_course_and_prepares_the_data_where_minivit_is_missing(monkeypatch, capsys):
    namespace = {}
    exec(compile(TEXT, "first_cell.py", "exec"), namespace)  # minivit imports here: only the URL is defined
    url = namespace["MINIVIT_REPO"]
    assert url.startswith("https://") and TEXT.count(url) == 1  # the repository in one place
    url = "https://github.com/someone/minivit"  # as a course sets it
    calls = _run_cell(monkeypatch, capsys, installed=False, text=with_repo(url))
    assert [cmd for cmd, _ in calls] == [[sys.executable, "-m", "pip", "install", "--quiet", f"git+{url}"],
                                        [sys.executable, "-m", "minivit.data", "prepare"]]
    assert all(kw == {"check": True} for _, kw in calls)  # a failed install stops the cell


def test_sync_inserts_once_updates_and_checks(tmp_path):
    nb = tmp_path / NOTEBOOKS[1].name
    shutil.copy(NOTEBOOKS[1], nb)  # any notebook (its name: the name its Colab link, if any, names)
    original = json.loads(nb.read_text())
    if original["cells"][0].get("id") == "minivit-setup":  # already synced: start from the notebook without it
        original["cells"] = original["cells"][1:]
        nb.write_text(json.dumps(original, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    run = lambda *args: subprocess.run([sys.executable, str(SYNC), *args, str(nb)], capture_output=True, text=True)
    before = nb.read_text()
    done = run("--check")
    assert done.returncode == 1 and "run: python .ci/sync_first_cell.py" in done.stderr
    assert nb.read_text() == before  # --check changes nothing
    assert run().returncode == 0
    after = json.loads(nb.read_text())
    assert after["cells"][1:] == original["cells"] and after["cells"][0]["id"] == "minivit-setup"
    assert run("--check").returncode == 0
    synced = nb.read_text()
    assert run().returncode == 0 and nb.read_text() == synced  # idempotent
    after["cells"][0]["source"] = ["an old version of the cell"]
    nb.write_text(json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert run().returncode == 0 and nb.read_text() == synced  # updated in place, not inserted again


COLAB = "https://colab.research.google.com/github/"
README = """# A course

<!-- colab-links: python .ci/sync_first_cell.py -->
| notebook | what it builds |
|---|---|
| [00_start_here](notebooks/00_start_here.ipynb) | the set-up |
| [08_inspecting_vit](notebooks/08_inspecting_vit.ipynb) | attention maps |
<!-- end colab-links -->

| [08_inspecting_vit](notebooks/08_inspecting_vit.ipynb) | outside the block: left alone |
"""


def _copy(tmp_path: Path, url: str, readme: str = README) -> Path:
    """A copy of the repository's parts the sync reads: the cell (with `url`), two notebooks, a README."""
    (tmp_path / ".ci").mkdir(exist_ok=True)
    (tmp_path / ".ci" / "first_cell.py").write_text(with_repo(url))
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    for name in ("00_start_here.ipynb", "08_inspecting_vit.ipynb"):
        if not (tmp_path / "notebooks" / name).exists():
            shutil.copy(ROOT / "notebooks" / name, tmp_path / "notebooks" / name)
    (tmp_path / "README.md").write_text(readme)
    return tmp_path


def _sync(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SYNC), "--root", str(root), *args], capture_output=True, text=True)


def _title(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])


@pytest.mark.parametrize("url, blob", [("https://github.com/someone/minivit", "someone/minivit/blob/main"),
                                       ("https://github.com/a-b/vit.course.git@spring-2027",
                                        "a-b/vit.course/blob/spring-2027")])
def test_sync_writes_colab_links_once_the_repository_is_set_and_removes_them_for_the_placeholder(tmp_path, url, blob):
    root = _copy(tmp_path, PLACEHOLDER)
    assert _sync(root).returncode == 0  # the notebooks as they are with the placeholder, whatever the course set
    originals = {p.name: p.read_text() for p in (root / "notebooks").iterdir()}
    _copy(root, url)
    done = _sync(root)
    assert done.returncode == 0, done.stderr
    for name, before in originals.items():
        path = root / "notebooks" / name
        link = f"[Open in Colab]({COLAB}{blob}/notebooks/{name})"
        heading, rest = _title(path).split("\n", 1)
        assert heading.startswith(f"# {name[:2]} ") and rest.startswith(f"\n{link}\n\n"), _title(path)[:300]
        old, new = json.loads(before)["cells"], json.loads(path.read_text())["cells"]
        changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
        assert len(old) == len(new) and changed == [0, 1], f"{name}: cells changed besides these two: {changed}"
        cell = (root / ".ci" / "first_cell.py").read_text().rstrip("\n")
        assert new[0] == {**old[0], "source": cell.splitlines(keepends=True)}  # its outputs as nbval compares them
    readme = (root / "README.md").read_text()
    for name in originals:
        row = f"| [{name[:-6]}](notebooks/{name}) · [Colab]({COLAB}{blob}/notebooks/{name}) |"
        assert row in readme, readme
    assert readme.endswith(README.split("<!-- end colab-links -->")[1])  # outside the markers: untouched
    written = {p: p.read_text() for p in [*(root / "notebooks").iterdir(), root / "README.md"]}
    assert _sync(root).returncode == 0 and _sync(root, "--check").returncode == 0  # once is enough
    assert all(p.read_text() == text for p, text in written.items())

    _copy(root, PLACEHOLDER, readme=readme)  # back to the placeholder: no links
    assert _sync(root, "--check").returncode == 1
    assert _sync(root).returncode == 0
    assert {p.name: p.read_text() for p in (root / "notebooks").iterdir()} == originals
    assert (root / "README.md").read_text() == README


def test_sync_refuses_what_colab_cannot_open(tmp_path):
    done = _sync(_copy(tmp_path, "https://gitlab.com/someone/minivit"))
    assert done.returncode != 0 and "Colab opens notebooks from GitHub only" in done.stderr
    done = _sync(_copy(tmp_path, "https://github.com/someone/minivit", readme="# no table markers\n"))
    assert done.returncode == 1 and "<!-- colab-links: python .ci/sync_first_cell.py -->" in done.stderr


def test_the_repository_is_in_step():
    done = subprocess.run([sys.executable, str(SYNC), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
