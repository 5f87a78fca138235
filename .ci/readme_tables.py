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

README's line of notebook times -- how long each notebook took alone on the course's 2-core machine -- is rendered
the same way from `benchmarks/results/notebook_times_cpu.json`, which `notebooks/conftest.py` writes when
`MINIVIT_NOTEBOOK_TIMES` names it (benchmarks/README.md says how it was run), between

    <!-- generated: python .ci/readme_tables.py (notebook times) -->
    ...
    <!-- end generated -->

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
TIMES = ROOT / "benchmarks" / "results" / "notebook_times_cpu.json"
TIMES_BEGIN = "<!-- generated: python .ci/readme_tables.py (notebook times) -->"
TIMES_BLOCK = re.compile(re.escape(TIMES_BEGIN) + r"\n.*?" + re.escape(END), re.S)
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


def render_times(record: dict | None = None) -> str:
    """The notebook-times block, markers included: one row of minutes per notebook, from the committed record."""
    record = json.loads(TIMES.read_text()) if record is None else record
    if not record.get("passed") or record.get("notebooks_at_a_time") != 1:
        raise SystemExit(f"{TIMES.name}: expected a passing run of one notebook at a time, got passed="
                         f"{record.get('passed')}, notebooks_at_a_time={record.get('notebooks_at_a_time')}")
    seconds = record["seconds"]
    head = [name[:2] for name in seconds] + ["all ten" if len(seconds) == 10 else "all"]
    cells = [f"{s / 60:.1f}" for s in seconds.values()] + [f"{sum(seconds.values()) / 60:.1f}"]
    lines = [f"Minutes per notebook alone (the quick profile needs no GPU and uses every CPU core PyTorch finds), one "
             f"at a time in order, on {record['cores']} cores of an {record['cpu']}, {record['date']}:", "",
             "| notebook | " + " | ".join(head) + " |", "|" + "---|" * (len(head) + 1),
             "| minutes | " + " | ".join(cells) + " |"]
    return "\n".join([TIMES_BEGIN, *lines, END])


def replace_block(text: str, block: str, path: Path, pattern: re.Pattern = BLOCK, begin: str = BEGIN) -> str:
    found = pattern.findall(text)
    if len(found) != 1:
        raise SystemExit(f"{path.relative_to(ROOT)}: expected one block between {begin!r} and {END!r}, "
                         f"found {len(found)}")
    return pattern.sub(lambda m: block, text)


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"], ["--write"]):
        print("usage: python .ci/readme_tables.py [--check | --write]", file=sys.stderr)
        return 2
    block = render()
    if not argv:
        print(block + "\n\n" + render_times())
        return 0
    stale = []
    for path in FILES:
        text = path.read_text()
        new = replace_block(text, block, path)
        if path.name == "README.md":
            new = replace_block(new, render_times(), path, TIMES_BLOCK, TIMES_BEGIN)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if argv == ["--write"]:
                path.write_text(new)
    if argv == ["--write"]:
        print(f"rewrote {', '.join(map(str, stale))}" if stale else "the tables were up to date")
        return 0
    if stale:
        print(f"the generated tables in {', '.join(map(str, stale))} differ from minivit/zoo/records.json or "
              f"benchmarks/results/{TIMES.name}: python .ci/readme_tables.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
