"""Tests for minivit.gpu, the offline GPU route: which data sets a notebook loads, the bundle builder (offline: wheels
from a local folder, a fake data folder) and its refusals, and docs/gpu.md's steps on the bundle (install the wheels
with pip offline, prepare the carried data)."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from minivit import gpu
from minivit.data import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def make_wheel(folder: Path, name: str = "minivitfake", version: str = "1.0") -> Path:
    """A real (tiny) pure-Python wheel, installable by pip: `import <name>` then gives `VALUE = 42`."""
    files = {f"{name}/__init__.py": b"VALUE = 42\n",
             f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()},{len(b)}"
              for p, b in files.items()] + [f"{name}-{version}.dist-info/RECORD,,"]
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, b in files.items():
            z.writestr(p, b)
    return path


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """A fake data folder (CIFAR-10 as a symbolic link, as in data/, and Fashion-MNIST), a wheels folder with one
    real wheel and one the GPU image has already, and no pip download."""
    store, source, wheels = tmp_path / "store", tmp_path / "datasets", tmp_path / "wheels"
    for d in (store, source / "fashion-mnist", wheels):
        d.mkdir(parents=True)
    (store / "cifar10-jpeg.tar.gz").write_bytes(b"c" * 3000)
    (source / "cifar10-jpeg.tar.gz").symlink_to(store / "cifar10-jpeg.tar.gz")
    for s in ("train", "t10k"):
        for k, d in (("images", 3), ("labels", 1)):
            (source / f"fashion-mnist/{s}-{k}-idx{d}-ubyte.gz").write_bytes(b"f" * 500)
    sums = [f"{hashlib.sha256((source / f).read_bytes()).hexdigest()}  {f}" for f in
            ["cifar10-jpeg.tar.gz"] + [f"fashion-mnist/{p.name}" for p in (source / "fashion-mnist").iterdir()]]
    (source / "SHA256SUMS").write_text("\n".join(sums + ["0" * 64 + "  imagenette-128-webp.tar.gz"]) + "\n")
    make_wheel(wheels)
    (wheels / "numpy-2.0.0-cp312-cp312-manylinux2014_x86_64.whl").write_bytes(b"not carried")

    def no_network(dest):
        raise AssertionError("the test must not download")
    monkeypatch.setattr(gpu, "_download_wheels", no_network)
    return source, wheels


def test_the_data_sets_each_notebook_loads_come_from_its_code():
    assert gpu.notebook_datasets("04") == ("cifar10",)
    assert gpu.notebook_datasets("3") == ("fashion-mnist",)
    assert gpu.notebook_datasets("07_finetuning_at_higher_resolution") == ("imagenette",)
    assert gpu.notebook_datasets(REPO / "notebooks/08_inspecting_vit.ipynb") == ("cifar10", "imagenette")
    assert gpu.notebook_datasets("01") == ()
    assert gpu.notebook_datasets("00") == ("cifar10",)  # its cell that shows images; the others are checked if present
    with pytest.raises(ValueError, match="names no notebook.*04_training_a_vit"):
        gpu.notebook_path("42")


def test_an_unknown_data_set_in_a_notebook_is_an_error(tmp_path):
    nb = tmp_path / "x.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["load_dataset('mnist', 'train')"]}]}))
    with pytest.raises(ValueError, match="unknown data sets \\['mnist'\\]"):
        gpu.notebook_datasets(nb)


def test_bundle_copies_wheels_and_the_notebooks_data_as_files(tmp_path, offline):
    source, wheels = offline
    out = tmp_path / "gpu-bundle"
    m = gpu.bundle("04", out, source=source, wheels_from=wheels, tree_bytes=0)
    assert m["notebook"] == "04_training_a_vit" and m["datasets"] == ["cifar10"]
    assert m["wheels"] == ["minivitfake-1.0-py3-none-any.whl"]  # numpy: the GPU image has it
    carried = out / "datasets" / "cifar10-jpeg.tar.gz"
    assert carried.is_file() and not carried.is_symlink() and carried.read_bytes() == b"c" * 3000
    assert (out / "datasets/SHA256SUMS").read_text().count("\n") == 1  # its own line only
    assert json.loads((out / "BUNDLE.json").read_text()) == m and gpu.is_bundle(out)
    assert m["dataset_bytes"] == 3000 and m["bytes"] == m["wheel_bytes"] + 3000
    m = gpu.bundle("03", out, source=source, wheels_from=wheels, tree_bytes=0)  # a bundle is replaced
    assert sorted(p.name for p in (out / "datasets" / "fashion-mnist").iterdir()) == [
        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz"]
    assert not (out / "datasets/cifar10-jpeg.tar.gz").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".gpu-bundle")] == []  # no half-built copy left


def test_data_only_and_wheels_only_bundles(tmp_path, offline):
    source, wheels = offline
    m = gpu.bundle("04", tmp_path / "a", source=source, wheels_from=wheels, wheels=False, tree_bytes=0)
    assert m["wheels"] == [] and m["datasets"] == ["cifar10"]
    m = gpu.bundle("04", tmp_path / "b", source=source, wheels_from=wheels, datasets=[], tree_bytes=0)
    assert m["datasets"] == [] and len(m["wheels"]) == 1 and not (tmp_path / "b/datasets").exists()
    with pytest.raises(ValueError, match="cannot use \\['fashion-mnist'\\]"):
        gpu.bundle("04", tmp_path / "c", source=source, wheels_from=wheels, datasets=["fashion-mnist"])
    assert not (tmp_path / "c").exists()


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_refusals_change_no_file(tmp_path, offline):
    source, wheels = offline
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="is not a GPU bundle"):
        gpu.bundle("04", other, source=source, wheels_from=wheels, tree_bytes=0)
    assert _snapshot(other) == {Path("notes.txt"): b"keep"}
    out = tmp_path / "gpu-bundle"
    gpu.bundle("03", out, source=source, wheels_from=wheels, tree_bytes=0)
    before, listing = _snapshot(out), sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match="take 0.0 MiB, over the bundle's 0.001 MiB; nothing was written"):
        gpu.bundle("04", out, source=source, wheels_from=wheels, limit_mib=0.001, tree_bytes=0)
    with pytest.raises(ValueError, match="would take .* over the bundle's 0.003 MiB; nothing was written"):
        gpu.bundle("04", out, source=source, wheels_from=wheels, limit_mib=0.003, tree_bytes=0)
    with pytest.raises(ValueError, match="leaves beside the tracked tree"):  # the tree and the bundle: 64 MiB a call
        gpu.bundle("04", out, source=source, wheels_from=wheels, tree_bytes=64 * 2**20 - 3500)
    (source / "cifar10-jpeg.tar.gz").unlink()
    with pytest.raises(FileNotFoundError, match="no offline copy of cifar10"):
        gpu.bundle("04", out, source=source, wheels_from=wheels, tree_bytes=0)
    assert _snapshot(out) == before and sorted(p.name for p in tmp_path.iterdir()) == listing


def test_readme_steps_install_the_wheels_offline_and_prepare_the_carried_data(tmp_path, offline):
    """docs/gpu.md, 'Without internet': pip install --no-index --no-deps --target, PYTHONPATH, and
    MINIVIT_SHARED_DATASETS at the carried data for `python -m minivit.data prepare`."""
    source, wheels = offline
    out = tmp_path / "gpu-bundle"
    gpu.bundle("04", out, source=source, wheels_from=wheels, tree_bytes=0)
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                           str(site), *map(str, sorted((out / "wheels").glob("*.whl")))],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    env = {**ENV, "PYTHONPATH": f"{site}{os.pathsep}{REPO}", "MINIVIT_SHARED_DATASETS": str(out / "datasets"),
           "MINIVIT_DATA": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", "import minivitfake, minivit; print(minivitfake.VALUE)"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout == "42\n", done.stderr
    done = subprocess.run([sys.executable, "-m", "minivit.data", "prepare", "cifar10"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    linked = tmp_path / "data" / "cifar10-jpeg.tar.gz"
    assert linked.read_bytes() == b"c" * 3000 and "linked" in done.stdout


def test_cli_lists_data_sets_and_refuses_with_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "minivit.gpu", "datasets"], capture_output=True, text=True,
                          env=ENV, timeout=300)
    assert done.returncode == 0 and "08_inspecting_vit" in done.stdout and "cifar10 imagenette" in done.stdout
    (tmp_path / "x").mkdir()
    done = subprocess.run([sys.executable, "-m", "minivit.gpu", "bundle", "04", "--out", str(tmp_path / "x"),
                           "--wheels-from", str(tmp_path)], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 2 and "is not a GPU bundle" in done.stderr and list((tmp_path / "x").iterdir()) == []
