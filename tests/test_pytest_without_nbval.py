"""`pytest tests/` runs where nbval is not installed (a GPU image has torch and pytest, not nbval): the notebooks'
nbval options live in notebooks/conftest.py, which applies them only where notebooks are collected with nbval."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def test_unit_tests_run_with_the_nbval_plugin_disabled():
    # with nbval options in pyproject's addopts, this exits 4 ("unrecognized arguments") before any test runs
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:nbval", "-p", "no:cacheprovider", "-q",
                          "tests/test_profile.py"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert " passed" in run.stdout


def test_the_notebooks_conftest_sanitises_without_options_on_the_command_line(tmp_path):
    pytest.importorskip("nbval", reason="runs pytest --nbval: needs nbval (pip install nbval, a [dev] extra)")
    # a stored output with one memory address, a fresh run prints another: equal only after the course's sanitiser
    shutil.copy(NOTEBOOKS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(NOTEBOOKS / "nbval_sanitize.cfg", tmp_path / "nbval_sanitize.cfg")
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "print(object())",
            "outputs": [{"name": "stdout", "output_type": "stream", "text": "<object object at 0x7f0000000001>\n"}]}
    nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                       "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb))
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q", "demo.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    (tmp_path / "conftest.py").unlink()  # without the conftest the addresses differ: the test can fail
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
                          "-q", "demo.ipynb"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout[-3000:]


# The import names of the [dev] extras (and of the packages they bring) that a test module may need: such a module
# must skip, naming the package, where it is missing (`pytest.importorskip` before the import), so that `pytest
# tests/` runs in an environment of the main dependencies alone.
OPTIONAL = {"nbval": "nbval", "pytest-xdist": "xdist", "hypothesis": "hypothesis", "jupyterlab": "jupyterlab",
            "ipykernel": "ipykernel", "ipywidgets": "ipywidgets", "timm": "timm", "pyyaml": "yaml",
            "scikit-image": "skimage", "sphinx": "sphinx", "myst-nb": "myst_nb", "sphinx-book-theme": "sphinx_book_theme",
            "django-static-mathjax": "mathjax", "playwright": "playwright", "nbgrader": "nbgrader",
            "jupyter-server-mathjax": "jupyter_server_mathjax", "psutil": "psutil"}
BROUGHT = {"scipy", "nbformat", "nbclient", "jupyter_client", "jupyter_server", "IPython"}  # installed by the extras above, not asked for


def _dev_only() -> set[str]:
    import re
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in project["optional-dependencies"]["dev"]}
    main = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in project["dependencies"]}
    unmapped = names - main - set(OPTIONAL) - {"pytest"}
    assert not unmapped, f"add the import name of {sorted(unmapped)} to OPTIONAL"
    return {OPTIONAL[n] for n in names - main - {"pytest"}} | BROUGHT


def test_test_modules_skip_where_a_dev_extra_is_missing():
    import ast
    dev_only, unguarded = _dev_only(), []
    for path in sorted((ROOT / "tests").glob("*.py")):
        guarded = set()
        for node in ast.parse(path.read_text()).body:  # the module's top level: what runs at collection
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "importorskip"
                        and call.args and isinstance(call.args[0], ast.Constant)):
                    guarded.add(call.args[0].value.split(".")[0])
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                unguarded += [f"{path.name}: {m}" for m in modules
                              if m.split(".")[0] in dev_only and m.split(".")[0] not in guarded]
    assert not unguarded, f"imported at collection without pytest.importorskip first: {unguarded}"


def test_pytest_nbval_without_nbval_says_to_install_it():
    # `-p no:nbval` stands for an environment without nbval: the repository's conftest.py then answers --nbval
    for flag in ("--nbval", "--nbval-lax"):
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:nbval", "-p", "no:cacheprovider", flag,
                              "notebooks/00_start_here.ipynb"], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert run.returncode == 4, run.stdout[-2000:] + run.stderr[-2000:]  # a usage error: nothing ran
        assert "pytest --nbval needs the nbval plugin: pip install nbval (or make install)" in run.stderr
