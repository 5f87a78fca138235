"""environment.yml (conda) and pyproject.toml (pip) must ask for the same packages."""

import re
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="environment.yml is read with PyYAML (pip install pyyaml, a [dev] extra)")

ROOT = Path(__file__).resolve().parents[1]


def test_environment_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {r for r in pip if not r.startswith("-e")}
    assert listed == wanted, f"only in environment.yml: {listed - wanted}; only in pyproject: {wanted - listed}"
    assert "-e ." in pip, "environment.yml must install minivit itself (-e .)"
    assert "conda-forge" in env["channels"]
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    minimum = re.search(r">=\s*3\.(\d+)", project["requires-python"]).group(1)
    assert int(python.split("=")[-1].split(".")[1]) >= int(minimum)


def test_dev_holds_every_other_extra():
    """[dev] is what `make install`, CI and environment.yml install: a narrower extra ([docs]) adds nothing to it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name, requirements in extras.items():
        assert set(requirements) <= set(extras["dev"]), f"[{name}] asks for {set(requirements) - set(extras['dev'])}, not in [dev]"
