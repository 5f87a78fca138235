"""The course's text never points at a notebook that does not exist (yet); README is a short front page whose links,
and those of the pages it links to (docs/*.md), resolve in the repository as they do on GitHub."""

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
    for path in [ROOT / "README.md", *sorted(ROOT.glob("*/README.md")), *sorted((ROOT / "docs").glob("*.md")),
                 *sorted((ROOT / "minivit").rglob("*.py")), *sorted((ROOT / "benchmarks").glob("*.py"))]:
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


# README is the front page: what the course is, the two commands, the notebooks, where to go next. The rest lives in
# pages of the course site kept as markdown in docs/ (issue 32); the site's browser test (tests/test_site.py) checks
# the rendered links, these check the files as GitHub shows them.
PAGES = ["install", "profiles", "gpu", "package", "zoo", "results", "instructors", "site"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _local_links(path: Path) -> list[tuple[str, Path, str]]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # another host
        file, _, fragment = target.partition("#")
        out.append((target, (path.parent / file).resolve() if file else path, fragment))
    return out


def _anchors(path: Path) -> set[str]:
    """GitHub's (and the site's, myst_heading_anchors) slugs of a markdown file's headings."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    heads = re.findall(r"^#{1,6}\s+(.*)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12_000, f"README.md is {len(readme.encode()):,} bytes; keep it a front page (about 10 KB)"
    for command in ("make lab", "make test"):
        assert command in readme
    for nb in NOTEBOOKS:
        assert f"](notebooks/{nb.name})" in readme, f"README's table of notebooks lacks {nb.name}"
    linked = {target for target, _, _ in _local_links(ROOT / "README.md")}
    missing = [p for p in PAGES if not any(t.split("#")[0] == f"docs/{p}.md" for t in linked)]
    assert not missing, f"README does not link to these pages: {missing}"
    index = (ROOT / "docs" / "index.md").read_text()
    assert not [p for p in PAGES if f"\n{p}\n" not in index], "every page is in the site's toctree (docs/index.md)"


@pytest.mark.parametrize("path", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_local_links_resolve(path):
    broken = []
    for target, file, fragment in _local_links(path):
        if not file.exists():
            broken.append(f"{target} (no file)")
        elif fragment and file.suffix == ".md" and fragment not in _anchors(file):
            broken.append(f"{target} (no heading #{fragment})")
    assert not broken, f"{path.relative_to(ROOT)}: broken links {broken}"


@pytest.mark.parametrize("path", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_development_machine_limits_in_the_product(path):
    # the development GPU machines' transfer limits are theirs, not a user's (issue 32): no caps, $OUT or warm
    # machines in README or the site's pages (their history stays in benchmarks/README.md)
    text = path.read_text()
    found = [s for s in ("64 MiB", "60 MiB", "$OUT", "warm machine", "machine warm") if s in text]
    assert not found, f"{path.relative_to(ROOT)} mentions {found}"
