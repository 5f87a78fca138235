"""README's tables of results are generated from the committed records (.ci/readme_tables.py), never typed."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "readme_tables.py"
_spec = importlib.util.spec_from_file_location("readme_tables", SCRIPT)
tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tables)


def test_readme_zoo_table_matches_the_records():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr or done.stdout


def test_every_zoo_entry_has_a_line():
    registry = tables._registry()
    records = json.loads(tables.RECORDS.read_text())
    rows = tables.zoo_rows()
    assert [r[0].strip("`") for r in rows] == sorted(registry.ENTRIES, key=lambda n: (
        registry.ENTRIES[n].run.name, registry.ENTRIES[n].epoch))
    for row in rows:
        name = row[0].strip("`")
        if name in records:
            t = records[name]["test"]
            assert f"{t['correct']:,} / {t['n']:,}" in row[4] and registry.ENTRIES[name].used_by == row[-1]
        else:
            assert row[4] == "not trained yet"


def test_an_entry_without_a_record_is_not_trained_yet():
    registry = tables._registry()
    records = json.loads(tables.RECORDS.read_text())
    name = next(iter(records))
    rows = tables.zoo_rows({k: v for k, v in records.items() if k != name}, registry.ENTRIES)
    row = next(r for r in rows if r[0] == f"`{name}`")
    assert row[4] == "not trained yet" and row[5:7] == ["–", "–"]


def test_check_fails_on_a_changed_block_and_write_restores_it(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    block = tables.render()
    typed = block.replace(tables.END, "| a line typed by hand | 99.99% |\n" + tables.END)
    times = tables.render_times()
    readme.write_text(f"# x\n\n{typed}\n\ntext after\n\n{times}\n")
    monkeypatch.setattr(tables, "FILES", [readme])
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    assert tables.main(["--check"]) == 1
    assert tables.main(["--write"]) == 0
    assert readme.read_text() == f"# x\n\n{block}\n\ntext after\n\n{times}\n"
    readme.write_text(f"# x\n\n{block}\n\n{times.replace('| minutes |', '| minutes | 0.1 |')}\n")  # typed
    assert tables.main(["--check"]) == 1 and tables.main(["--write"]) == 0 and tables.main(["--check"]) == 0
    assert tables.main(["--check"]) == 0
    assert tables.main(["--bogus"]) == 2


def test_the_prose_rule_exempts_only_the_generated_block():
    spec = importlib.util.spec_from_file_location("prose", ROOT / ".ci" / "prose.py")
    prose = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prose)
    readme = (ROOT / "README.md").read_text()
    assert tables.BEGIN in readme and tables.END in readme
    assert prose.check_readme() == []
    assert "%" in tables.render()  # the numbers are there, inside the generated block


def test_the_notebook_times_come_from_a_passing_run_of_one_notebook_at_a_time():
    record = json.loads(tables.TIMES.read_text())
    block = tables.render_times(record)
    assert block.startswith(tables.TIMES_BEGIN) and block.endswith(tables.END)
    assert f"{record['seconds']['04_training_a_vit'] / 60:.1f}" in block and record["cpu"] in block
    with pytest.raises(SystemExit, match="one notebook at a time"):
        tables.render_times({**record, "notebooks_at_a_time": 2})
    with pytest.raises(SystemExit, match="passed=False"):
        tables.render_times({**record, "passed": False})
