"""Make the first cell of every notebook the course's set-up cell, `.ci/first_cell.py` (tooling; the cell is
described in README.md, "Colab").

    python .ci/sync_first_cell.py                  # every notebooks/NN_*.ipynb
    python .ci/sync_first_cell.py notebooks/00_start_here.ipynb
    python .ci/sync_first_cell.py --check          # exit 1 and name the notebooks that differ; change nothing

A notebook whose cell 0 is the set-up cell (its id is `CELL_ID`) gets that cell's text replaced; any other notebook
gets the cell inserted as cell 0, before its title. The cell's outputs stay empty (where minivit imports it prints
nothing, so nbval compares it as it is and no notebook needs re-executing). Running it twice changes nothing.
Notebooks are written as nbformat writes them (indent 1, sorted keys, a final newline).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_FILE = ROOT / ".ci" / "first_cell.py"  # the cell's text: the one place it is kept
CELL_ID = "minivit-setup"  # the cell's id in every notebook (nbformat 4.5 cell ids)


def cell_text() -> str:
    """The set-up cell's source, without a final newline (as Jupyter stores a cell)."""
    return CELL_FILE.read_text().rstrip("\n")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def synced(nb: dict) -> dict:
    """`nb` with the set-up cell as cell 0 (a new dict; `nb` is not changed)."""
    cells = [dict(c) for c in nb["cells"]]
    cell = {"cell_type": "code", "execution_count": None, "id": CELL_ID, "metadata": {}, "outputs": [],
            "source": _lines(cell_text())}
    if cells and cells[0].get("id") == CELL_ID:  # keep what an execution recorded (its count, timing metadata)
        cell["execution_count"] = cells[0].get("execution_count")
        cell["metadata"] = cells[0].get("metadata", {})
        cells[0] = cell
    else:
        cells.insert(0, cell)
    return {**nb, "cells": cells}


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: every notebooks/NN_*.ipynb)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook differs")
    a = p.parse_args(argv)
    paths = a.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    stale = []
    for path in paths:
        raw = path.read_text()
        new = dumps(synced(json.loads(raw)))
        if new == raw:
            continue
        stale.append(path)
        if not a.check:
            path.write_text(new)
            print(f"{path}: set-up cell written")
    if a.check and stale:
        print("the set-up cell differs from .ci/first_cell.py in: " + ", ".join(map(str, stale)) +
              "\nrun: python .ci/sync_first_cell.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
