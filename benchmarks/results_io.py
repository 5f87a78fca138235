"""Shared by the benchmark scripts: where results go and how they are written (atomically)."""

from __future__ import annotations

import json
import os
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def save_result(name: str, out: dict) -> Path:
    """Write `out` as benchmarks/results/<name>.json via a temp file + rename, so a crash leaves no half file."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2))
    os.replace(tmp, path)
    print("wrote", path)
    return path
