"""Make the first cell of every notebook the course's set-up cell, `.ci/first_cell.py`, and keep the "Open in Colab"
links in step with its `MINIVIT_REPO` (tooling; the cell is described in README.md, "Colab").

    python .ci/sync_first_cell.py                  # every notebooks/NN_*.ipynb, and README.md's links
    python .ci/sync_first_cell.py notebooks/00_start_here.ipynb
    python .ci/sync_first_cell.py --check          # exit 1 and name the files that differ; change nothing

The set-up cell. A notebook whose cell 0 is the set-up cell (its id is `CELL_ID`) gets that cell's text replaced;
any other notebook gets the cell inserted as cell 0, before its title. The cell's outputs stay empty (where minivit
imports it prints nothing, so nbval compares it as it is and no notebook needs re-executing).

The Colab links. Colab opens a notebook straight from GitHub
(https://colab.research.google.com/github/<owner>/<repo>/blob/<branch>/notebooks/NN_x.ipynb), so once `MINIVIT_REPO`
names a GitHub repository (`https://github.com/<owner>/<repo>`, optionally `.git` and `@<branch>`; `main` by
default) each notebook's title cell (its first markdown cell) gets a line `[Open in Colab](...)` under its heading,
and each row of README.md's notebook table that links a notebook gets `· [Colab](...)` after that link. README.md is
changed only between the lines `README_BEGIN` and `README_END`, which the table must stand between. While
`MINIVIT_REPO` is the placeholder (`https://github.com/OWNER/...`) those links are removed: they would open nothing.

Running it twice changes nothing. Notebooks are written as nbformat writes them (indent 1, sorted keys, a final
newline). `--root DIR` works on another copy of the repository (DIR/.ci/first_cell.py, DIR/notebooks, DIR/README.md).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "minivit-setup"  # the cell's id in every notebook (nbformat 4.5 cell ids)
PLACEHOLDER = "/OWNER/"  # in MINIVIT_REPO until a course sets its repository (the cell tests the same text)
README_BEGIN = "<!-- colab-links: python .ci/sync_first_cell.py -->"
README_END = "<!-- end colab-links -->"

REPO_LINE = re.compile(r'^MINIVIT_REPO = "([^"]*)"', re.M)
GITHUB = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?(?:@([\w./-]+))?")
COLAB = r"https://colab\.research\.google\.com/github/[^)\s]+"
TITLE_LINK = re.compile(r"\n\n\[Open in Colab\]\(" + COLAB + r"\)|^\[Open in Colab\]\(" + COLAB + r"\)\n\n")
ROW_LINK = re.compile(r" · \[Colab\]\(" + COLAB + r"\)")
ROW = re.compile(r"^(\| \[[^\]]+\]\((notebooks/\d\d_[\w-]+\.ipynb)\))", re.M)
BLOCK = re.compile(re.escape(README_BEGIN) + r"\n.*?" + re.escape(README_END), re.S)


def cell_text(root: Path = ROOT) -> str:
    """The set-up cell's source, without a final newline (as Jupyter stores a cell)."""
    return (root / ".ci" / "first_cell.py").read_text().rstrip("\n")


def repo_url(cell: str) -> str:
    """The cell's `MINIVIT_REPO`."""
    m = REPO_LINE.search(cell)
    if m is None:
        raise SystemExit('.ci/first_cell.py: expected a line MINIVIT_REPO = "https://github.com/<owner>/<repo>"')
    return m.group(1)


def colab_base(url: str) -> str | None:
    """The Colab address that notebook paths are appended to, or None (the placeholder: no links)."""
    if PLACEHOLDER in url:
        return None
    m = GITHUB.fullmatch(url)
    if m is None:
        raise SystemExit(f"MINIVIT_REPO = {url!r}: Colab opens notebooks from GitHub only; expected "
                         "https://github.com/<owner>/<repo> (optionally @<branch>), or the placeholder "
                         "https://github.com/OWNER/minivit for no links")
    owner, repo, branch = m.groups()
    return f"https://colab.research.google.com/github/{owner}/{repo}/blob/{branch or 'main'}/"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def with_title_link(text: str, link: str | None) -> str:
    """A title cell's markdown with its Colab line removed, then (when `link`) written under its heading."""
    text = TITLE_LINK.sub("", text)
    if link is None:
        return text
    line = f"[Open in Colab]({link})"
    if text.startswith("#"):  # under the heading, which stays the cell's first line
        head, sep, rest = text.partition("\n")
        return f"{head}\n\n{line}" + (f"\n{rest}" if sep else "")
    return f"{line}\n\n{text}"


def synced(nb: dict, root: Path = ROOT, link: str | None = None) -> dict:
    """`nb` with the set-up cell as cell 0 and its title cell's Colab line for `link` (a new dict; `nb` is not
    changed)."""
    cells = [dict(c) for c in nb["cells"]]
    cell = {"cell_type": "code", "execution_count": None, "id": CELL_ID, "metadata": {}, "outputs": [],
            "source": _lines(cell_text(root))}
    if cells and cells[0].get("id") == CELL_ID:  # keep what an execution recorded (its count, timing metadata)
        cell["execution_count"] = cells[0].get("execution_count")
        cell["metadata"] = cells[0].get("metadata", {})
        cells[0] = cell
    else:
        cells.insert(0, cell)
    title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), None)
    if title is not None:
        text = "".join(cells[title]["source"])
        new = with_title_link(text, link)
        if new != text:
            cells[title]["source"] = _lines(new)
    return {**nb, "cells": cells}


def readme_synced(text: str, base: str | None) -> str:
    """README.md's text with the Colab links of its notebook table (between the markers) for `base`."""
    def rows(m: re.Match) -> str:
        block = ROW_LINK.sub("", m.group(0))
        if base is None:
            return block
        return ROW.sub(lambda r: f"{r.group(1)} · [Colab]({base}{r.group(2)})", block)
    return BLOCK.sub(rows, text)


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _in_repo(path: Path, root: Path) -> str:
    """The notebook's path in the repository, as Colab's address names it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return f"notebooks/{path.name}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: every notebooks/NN_*.ipynb)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file differs")
    p.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    a = p.parse_args(argv)
    root = a.root
    base = colab_base(repo_url(cell_text(root)))
    paths = a.notebooks or sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    readme = root / "README.md"
    stale = []
    for path in [*paths, *([readme] if not a.notebooks and readme.is_file() else [])]:
        raw = path.read_text()
        if path == readme:
            new = readme_synced(raw, base)
        else:
            new = dumps(synced(json.loads(raw), root, base + _in_repo(path, root) if base else None))
        if new == raw:
            continue
        stale.append(path)
        if not a.check:
            path.write_text(new)
            print(f"{path}: written")
    if a.check and stale:
        print("these files differ from .ci/first_cell.py (its cell, its MINIVIT_REPO's Colab links): " +
              ", ".join(map(str, stale)) + "\nrun: python .ci/sync_first_cell.py", file=sys.stderr)
        return 1
    if base and readme.is_file() and not BLOCK.search(readme.read_text()):
        print(f"{readme}: no Colab links written: its notebook table must stand between the lines\n"
              f"{README_BEGIN}\n{README_END}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
