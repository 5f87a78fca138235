"""README's tables of results, generated from the committed records, never typed (tests/test_readme_tables.py).

The zoo's table -- one line per model: its name, preset, data and resolution, epochs, test accuracy with the
right answers over the test set, what it was trained on, minutes of training and the notebooks that load it -- is
rendered from `minivit/zoo/records.json` (what each run measured) and `minivit.zoo.registry` (what each model is
and which notebooks use it). An entry of the registry without a record (a model still training) is listed as "not
trained yet". The table stands between the markers

    <!-- generated: python .ci/readme_tables.py -->
    ...
    <!-- end generated -->

in README.md and in docs/zoo.md; .ci/prose.py exempts those blocks from the rule against typed numbers.

    python .ci/readme_tables.py            # print the table
    python .ci/readme_tables.py --check    # exit 1 when a file's block differs from the records (0 when it matches)
    python .ci/readme_tables.py --write    # rewrite the blocks from the records
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "minivit" / "zoo" / "records.json"
REGISTRY = ROOT / "minivit" / "zoo" / "registry.py"
FILES = [ROOT / "README.md", ROOT / "docs" / "zoo.md"]
BEGIN = "<!-- generated: python .ci/readme_tables.py -->"
END = "<!-- end generated -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
COLUMNS = ["model", "preset", "data, resolution", "epochs", "test accuracy (right / test set)", "trained on",
           "minutes", "notebooks"]


def _registry():
    """minivit.zoo.registry, read from its file (plain dataclasses: no torch import for a table)."""
    spec = importlib.util.spec_from_file_location("_zoo_registry", REGISTRY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _machine(trained_on: dict) -> str:
    if trained_on.get("gpu"):
        return f"GPU: one {trained_on['gpu']}"
    threads = trained_on.get("threads")
    return (f"CPU: {trained_on.get('cpu', '?')}, {threads} thread{'s' if threads != 1 else ''} of "
            f"{trained_on.get('cores', '?')} cores")


def _minutes(seconds: float) -> str:
    m = seconds / 60
    return f"{m:.1f}" if m < 10 else f"{m:.0f}"


def zoo_rows(records: dict | None = None, entries: dict | None = None) -> list[list[str]]:
    """One row per zoo entry (in `python -m minivit.zoo list`'s order: by run, then epoch)."""
    records = json.loads(RECORDS.read_text()) if records is None else records
    entries = _registry().ENTRIES if entries is None else entries
    rows = []
    for name, e in sorted(entries.items(), key=lambda kv: (kv[1].run.name, kv[1].epoch)):
        data = f"{e.run.dataset}, {e.run.image_size} px"
        if e.run.train_images == "mosaics":
            data = f"{e.run.dataset} mosaics, {e.run.image_size} px"
        planned = e.run.recipe.get("epochs")
        epochs = str(e.epoch) if planned in (None, e.epoch) else f"{e.epoch} of {planned}"
        rec = records.get(name)
        if rec is None:
            rows.append([f"`{name}`", e.preset, data, epochs, "not trained yet", "–", "–", e.used_by])
            continue
        t = rec["test"]
        what = " colour (pretext)" if e.arch == "mpp" else ""
        accuracy = f"{t['correct'] / t['n']:.2%}{what} ({t['correct']:,} / {t['n']:,})"
        rows.append([f"`{name}`", e.preset, data, epochs, accuracy, _machine(rec["trained_on"]),
                     _minutes(rec["train_seconds"]), e.used_by])
    return rows


def render(rows: list[list[str]] | None = None) -> str:
    """The block, markers included."""
    rows = zoo_rows() if rows is None else rows
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([BEGIN, *lines, END])


def replace_block(text: str, block: str, path: Path) -> str:
    found = BLOCK.findall(text)
    if len(found) != 1:
        raise SystemExit(f"{path.relative_to(ROOT)}: expected one block between {BEGIN!r} and {END!r}, "
                         f"found {len(found)}")
    return BLOCK.sub(lambda m: block, text)


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"], ["--write"]):
        print("usage: python .ci/readme_tables.py [--check | --write]", file=sys.stderr)
        return 2
    block = render()
    if not argv:
        print(block)
        return 0
    stale = []
    for path in FILES:
        text = path.read_text()
        new = replace_block(text, block, path)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if argv == ["--write"]:
                path.write_text(new)
    if argv == ["--write"]:
        print(f"rewrote {', '.join(map(str, stale))}" if stale else "the tables were up to date")
        return 0
    if stale:
        print(f"the zoo's table in {', '.join(map(str, stale))} differs from minivit/zoo/records.json: "
              "python .ci/readme_tables.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
