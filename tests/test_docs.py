"""The course's text never points at a notebook that does not exist (yet)."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NAMES = {p.stem for p in NOTEBOOKS}
NUMBERS = {n[:2] for n in NAMES}
FILE = re.compile(r"\b(\d\d_[a-z][a-z0-9_]*)")  # 03_transformer_encoder
NUMBER = re.compile(r"\b[Nn]otebooks? (\d\d)\b")  # "notebook 07"


def _documents():
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        yield nb.relative_to(ROOT), "\n".join("".join(c["source"]) for c in cells)
    for path in [ROOT / "README.md", *sorted(ROOT.glob("*/README.md")), *sorted((ROOT / "minivit").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]:
        yield path.relative_to(ROOT), path.read_text()


def dangling(text: str) -> set[str]:
    """Notebook names and numbers mentioned in `text` that are not in notebooks/."""
    files = {m.removesuffix(".ipynb") for m in FILE.findall(text)} - NAMES
    numbers = {f"notebook {n}" for n in NUMBER.findall(text)} - {f"notebook {n}" for n in NUMBERS}
    return files | numbers


def test_the_finder_finds_what_it_should():
    assert dangling("see 42_quantum_vit.ipynb and notebook 42, or Notebooks 41") == {
        "42_quantum_vit", "notebook 42", "notebook 41"}
    assert dangling(f"{sorted(NAMES)[0]} and notebook {sorted(NUMBERS)[0]}; 10_000 images; 3_x") == set()


@pytest.mark.parametrize("path, text", list(_documents()), ids=lambda v: str(v) if isinstance(v, Path) else "")
def test_no_reference_to_a_missing_notebook(path, text):
    assert not dangling(text), f"{path} names notebooks that are not in notebooks/: {sorted(dangling(text))}"
