"""Tests for minivit.gpu, the offline kit, without a network: pip's two steps (resolve, download) replaced by fakes
that write real tiny wheels, a small git clone as the course, a data folder of fake files. What is checked: the
kit's layout (wheels, the course's tracked files, the data sets as files, KIT.json, SHA256SUMS, install.sh), the
target's platform tags and torch builds, the refusals (nothing written) and install.sh's own refusals, run with sh.
The real kit, installed offline and its notebooks run, is tests/test_offline_kit.py."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minivit import gpu
from minivit.data import REPO


def fake_wheel(folder: Path, name: str, version: str) -> Path:
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    path.write_bytes(f"{name} {version}".encode())
    return path


@pytest.fixture
def course(tmp_path):
    """A git clone with the course's pyproject, a notebook, a tracked data/README.md and an untracked file."""
    repo = tmp_path / "clone"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "data").mkdir()
    (repo / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (repo / "notebooks" / "00_start_here.ipynb").write_text("{}")
    (repo / "data" / "README.md").write_text("data\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    (repo / "notes.txt").write_text("not tracked")
    return repo


@pytest.fixture
def data(tmp_path):
    """A data folder: CIFAR-10's offline copy as a symbolic link (as `make data` leaves it), Fashion-MNIST in
    torchvision's layout, no Imagenette (so the kit fetches it)."""
    store, root = tmp_path / "store", tmp_path / "data"
    (root / "FashionMNIST" / "raw").mkdir(parents=True)
    store.mkdir()
    (store / "cifar10-jpeg.tar.gz").write_bytes(b"c" * 3000)
    (root / "cifar10-jpeg.tar.gz").symlink_to(store / "cifar10-jpeg.tar.gz")
    (root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"f" * 500)
    return root


@pytest.fixture
def pip(monkeypatch):
    """pip's resolve and download as fakes; records what they were asked. The resolution holds the course itself,
    torch's CUDA libraries and an ordinary package."""
    calls = {}

    def resolve(requirements, target, index, workdir):
        calls["resolve"] = (requirements, target, index)
        return {"minivit": "0.1.0", "torch": "2.14.1", "torchvision": "0.29.1", "nvidia-cublas": "13.1.1.3",
                "triton": "3.8.0", "einops": "0.8.2", "setuptools": "84.2.1"}

    def fake_pip(args, what):
        calls["download"] = args
        dest = Path(args[args.index("--dest") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        for pin in (a for a in args if "==" in a):
            fake_wheel(dest, *pin.split("=="))

    def fetch(name, split, root):  # load_dataset's download: official files, then a cache
        (root / "imagenette2-160.tgz").write_bytes(b"i" * 700)
        (root / "cache").mkdir(exist_ok=True)
        (root / "cache" / f"{name}-{split}.pt").write_bytes(b"decoded")
        calls.setdefault("fetched", []).append((name, split))

    monkeypatch.setattr(gpu, "resolve", resolve)
    monkeypatch.setattr(gpu, "_pip", fake_pip)
    monkeypatch.setattr(gpu, "load_dataset", fetch)
    monkeypatch.setattr(gpu, "_answers", lambda url, timeout=15: None)
    return calls


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_platform_tags_and_torch_builds():
    tags = gpu.expand_platform("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and tags[-2:] == ["manylinux_2_5_x86_64", "manylinux2014_x86_64"]
    assert "manylinux_2_27_x86_64" in tags and not [t for t in tags if "aarch64" in t]
    assert gpu.expand_platform("manylinux_2_12_aarch64")[-1] == "manylinux_2_5_aarch64"  # no manylinux2014 below 2.17
    assert gpu.expand_platform("macosx_11_0_arm64") == ["macosx_11_0_arm64"]
    with pytest.raises(ValueError, match="not a platform tag; expected e.g. manylinux_2_28_x86_64"):
        gpu.expand_platform("Linux x86-64")
    assert gpu.torch_index("cuda") == gpu.torch_index("none") == []
    assert gpu.torch_index("cpu") == ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert gpu.torch_index("https://download.pytorch.org/whl/cu126")[1].endswith("cu126")
    with pytest.raises(ValueError, match="expected one of cuda, cpu, none or the URL of a PyTorch index"):
        gpu.torch_index("gpu")


def test_the_kit_pins_the_torch_release_the_makefile_installs():
    spec = re.search(r"^TORCH_SPEC \?= (.+)$", (REPO / "Makefile").read_text(), re.M)[1]
    assert tuple(spec.split()) == gpu.TORCH_SPEC


def test_a_kit_holds_the_wheels_the_course_and_the_data_sets_as_files(tmp_path, course, data, pip):
    out = tmp_path / "usb" / "kit"
    m = gpu.kit(out, python_version="3.12", torch="cuda", data_from=data, repo=course)
    requirements, target, index = pip["resolve"]
    assert requirements == [f"{course}[dev]", "setuptools>=77", "torch==2.14.1", "torchvision==0.29.1"]
    assert target[:5] == ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp"]
    assert "manylinux_2_17_x86_64" in target and index == []
    assert sorted(p.name for p in (out / "wheels").iterdir()) == sorted(
        f"{n.replace('-', '_')}-{v}-py3-none-any.whl" for n, v in m["packages"].items())
    assert "minivit" not in m["packages"] and m["packages"]["torch"] == "2.14.1"  # the course travels as itself
    # the course: its tracked files only, the data sets in its data/ as files (links followed), caches dropped
    course_files = {str(p.relative_to(out / "course")) for p in (out / "course").rglob("*") if p.is_file()}
    assert course_files == {"pyproject.toml", "notebooks/00_start_here.ipynb", "data/README.md",
                            "data/cifar10-jpeg.tar.gz", "data/FashionMNIST/raw/train-images-idx3-ubyte",
                            "data/imagenette2-160.tgz"}
    carried = out / "course" / "data" / "cifar10-jpeg.tar.gz"
    assert not carried.is_symlink() and carried.read_bytes() == b"c" * 3000
    assert m["datasets"] == {"cifar10": ["cifar10-jpeg.tar.gz"], "fashion-mnist": ["FashionMNIST/raw"],
                             "imagenette": ["imagenette2-160.tgz"]}
    assert pip["fetched"] == [("imagenette", "train"), ("imagenette", "test")]  # only the data set data/ lacked
    assert m["data_bytes"] == 3000 + 500 + 700 and m["course_files"] == 3
    assert json.loads((out / "KIT.json").read_text()) == m and gpu.is_kit(out)
    sums = dict(reversed(line.split("  ")) for line in (out / "SHA256SUMS").read_text().splitlines())
    assert len(sums) == len(m["packages"]) + 3 and all(
        hashlib.sha256((out / f).read_bytes()).hexdigest() == h for f, h in sums.items())
    script = (out / "install.sh").read_text()
    assert 'want, machine, system_torch = "3.12", "x86_64", False' in script
    assert "--no-index --find-links wheels --editable './course[dev]'" in script and "--system-site" not in script
    assert oct(out.stat().st_mode & 0o777) != "0o700"  # an ordinary folder, not mkdtemp's private one
    assert sorted(p.name for p in out.parent.iterdir()) == ["kit"]  # nothing half-built left beside it


def test_torch_none_leaves_torch_and_its_libraries_out(tmp_path, course, data, pip):
    m = gpu.kit(tmp_path / "kit", python_version="3.11", torch="none", data_from=data, repo=course)
    assert sorted(m["packages"]) == ["einops", "setuptools"] and m["torch_spec"] == []
    assert "torch==2.14.1" not in pip["resolve"][0]
    script = (tmp_path / "kit" / "install.sh").read_text()
    assert 'system_torch = "3.11", "x86_64", True' in script and "venv --system-site-packages course/.venv" in script


def test_refusals_write_nothing(tmp_path, course, data, pip):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    for kwargs in ({}, {"replace": True}):  # a folder that is not a kit is never replaced
        with pytest.raises(FileExistsError, match="exists and is not a kit .*nothing was written"):
            gpu.kit(mine, data_from=data, repo=course, **kwargs)
    assert snapshot(mine) == {Path("notes.txt"): b"keep"}
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="expected the target's Python as MAJOR.MINOR"):
        gpu.kit(tmp_path / "a" / "kit", python_version="312", data_from=data, repo=course)
    with pytest.raises(ValueError, match="expected one of cuda, cpu, none"):
        gpu.kit(tmp_path / "a" / "kit", torch="rocm", data_from=data, repo=course)
    with pytest.raises(ValueError, match="no such folder"):
        gpu.kit(tmp_path / "a" / "kit", data_from=tmp_path / "nowhere", repo=course)
    with pytest.raises(ValueError, match="made from a git clone of the course"):
        gpu.kit(tmp_path / "a" / "kit", data_from=data, repo=tmp_path / "mine")
    assert sorted(tmp_path.rglob("*")) == before


def test_a_failed_download_leaves_nothing_and_a_kit_is_replaced_only_when_asked(tmp_path, course, data, pip,
                                                                                monkeypatch):
    out = tmp_path / "a" / "b" / "kit"
    gpu.kit(out, data_from=data, repo=course)
    with pytest.raises(FileExistsError, match="is a kit: pass --replace"):
        gpu.kit(out, data_from=data, repo=course)
    kit = snapshot(out)

    def offline(args, what):
        raise RuntimeError(f"pip could not {what}")
    monkeypatch.setattr(gpu, "_pip", offline)
    with pytest.raises(RuntimeError, match="could not download the wheels"):
        gpu.kit(out, data_from=data, repo=course, replace=True)
    assert snapshot(out) == kit and sorted(p.name for p in out.parent.iterdir()) == ["kit"]
    with pytest.raises(RuntimeError):
        gpu.kit(tmp_path / "c" / "d" / "kit", data_from=data, repo=course)
    assert not (tmp_path / "c").exists()  # the folders made for it are gone too
    monkeypatch.setattr(gpu, "_answers", lambda url, timeout=15: "URLError: no route")
    with pytest.raises(RuntimeError, match="index https://download.pytorch.org/whl/cpu does not answer"):
        gpu.kit(tmp_path / "e", torch="cpu", data_from=data, repo=course)
    assert not (tmp_path / "e").exists()


def _install_sh(folder: Path, python: str, damaged: bool = False) -> subprocess.CompletedProcess:
    folder.mkdir()
    (folder / "wheels").mkdir()
    wheel = fake_wheel(folder / "wheels", "einops", "0.8.2")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (folder / "SHA256SUMS").write_text(f"{'0' * 64 if damaged else digest}  wheels/{wheel.name}\n")
    (folder / "install.sh").write_text(gpu.install_script(python, [gpu.DEFAULT_PLATFORM], False))
    env = {**os.environ, "PYTHON": sys.executable, "PIP_NO_INDEX": "1"}
    return subprocess.run(["sh", str(folder / "install.sh")], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.skipif(os.uname().machine != "x86_64" or not shutil.which("sha256sum"),
                    reason="needs an x86_64 machine (the kit's) with sha256sum")
def test_install_sh_refuses_another_python_and_damaged_files(tmp_path):
    done = _install_sh(tmp_path / "old", "3.1")
    have = "%d.%d" % sys.version_info[:2]
    assert done.returncode == 2 and f"wheels are for Python 3.1, and {sys.executable} is Python {have}" in done.stderr
    assert "PYTHON=python3.1 sh install.sh" in done.stderr and not (tmp_path / "old" / "course").exists()
    done = _install_sh(tmp_path / "bad", have, damaged=True)
    assert done.returncode == 2 and "damaged: copy the kit again" in done.stderr
    assert not (tmp_path / "bad" / "course").exists()


def test_cli_refuses_with_exit_2_and_a_message(tmp_path):
    (tmp_path / "x").mkdir()
    done = subprocess.run([sys.executable, "-m", "minivit.gpu", "kit", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 2 and "exists and is not a kit" in done.stderr and list((tmp_path / "x").iterdir()) == []
