"""Shared by the benchmark scripts: where results go and how they are written (atomically)."""

from __future__ import annotations

import json
import os
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def save_result(name: str, out: dict, folder: Path = RESULTS) -> Path:
    """Write `out` as <folder>/<name>.json (default benchmarks/results/) via a temp file + rename, so a crash leaves
    no half file. It adds to `out` which copy of each data set the run read ("data_copies",
    `minivit.data.copies_read`) unless `out` has that entry already."""
    from minivit.data import copies_read
    if "data_copies" not in out:  # which copy of each data set it measured on (file, origin, SHA-256, fingerprint)
        out["data_copies"] = copies_read()  # in `out` itself: what the benchmark returns is what it wrote
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2))
    os.replace(tmp, path)
    print("wrote", path)
    return path
