"""The offline route (tooling, no notebook introduces it): a kit, made on a machine with internet, that installs and
runs the course on one without (an air-gapped GPU server).

    make offline-kit OFFLINE_ARGS="--python-version 3.12"      # -> offline-kit/, in a clone of the course
    python -m minivit.gpu kit --python-version 3.12 --torch cpu --out /media/usb/minivit-kit

A kit holds everything the target needs but Python itself, with no size cap:

    install.sh   the target's steps: check the files against SHA256SUMS, create a fresh venv course/.venv and
                 install every wheel into it with `pip --no-index` (nothing is downloaded), the course editable
                 as `make install` does
    wheels/      every wheel the notebooks and the tests need (minivit[dev], torch, torchvision and what they
                 depend on) for the target's Python and platform: `pip download --only-binary=:all:`
    course/      the checkout's tracked files (notebooks, tests, the minivit source, the model zoo), with the data
                 sets in course/data/: copied from this machine's data folder where it has them, else fetched from
                 their official sources by `minivit.data.load_dataset`'s own download
    KIT.json     what it holds: target, torch build, packages, data sets, bytes
    SHA256SUMS   the checksums of the wheels and the data sets, checked by install.sh

On the target: `sh install.sh`, then `cd course && .venv/bin/python -m pytest --nbval notebooks/` (docs/gpu.md,
"Without internet"); the notebooks choose their profile as anywhere else. A folder in the way is refused, a kit
included unless `replace=True` (--replace); a refused call writes nothing, and a failed one leaves nothing behind.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from importlib.metadata import version as installed_version
from pathlib import Path

from .data import REPO, SPLITS, _sha256, data_root, load_dataset

DEFAULT_OUT = REPO / "offline-kit"
FORMAT = "minivit-offline-kit/1"  # KIT.json's "format": a folder with it is a kit that --replace may replace
TORCH_SPEC = ("torch==2.14.1", "torchvision==0.29.1")  # the Makefile's TORCH_SPEC, the release the course tests
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"  # Linux x86_64 with glibc 2.28 or newer (torch 2.14's own floor)
PYTORCH_INDEX = "https://download.pytorch.org/whl/"  # + "cpu", "cu126", ...: PyTorch's per-build indexes
TORCH_CHOICES = ("cuda", "cpu", "none")  # or the URL of one of PyTorch's indexes
# Left out by --torch none (the target has torch already): torch, torchvision and the libraries only torch uses.
TORCH_PACKAGES = re.compile(r"^(torch|torchvision|triton|nvidia-.*|cuda-.*)$")
# Where load_dataset looks in a data folder after its cache, in its order: a file, or a folder carried whole.
DATA_FILES = {"cifar10": ("cifar10-jpeg.tar.gz", "cifar-10-batches-py"),
              "fashion-mnist": ("fashion-mnist", "FashionMNIST/raw"),
              "imagenette": ("imagenette-128-webp.tar.gz", "imagenette-128.tar.gz", "imagenette2-160.tgz")}


def expand_platform(tag: str) -> list[str]:
    """pip's --platform tags for one target: 'manylinux_2_28_x86_64' (glibc 2.28 or newer) means every manylinux tag
    up to it, as pip itself accepts on such a machine (PEP 600); any other tag ('macosx_11_0_arm64') stands alone."""
    m = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", tag)
    if not m:
        if not re.fullmatch(r"[a-z0-9_]+", tag):
            raise ValueError(f"{tag!r} is not a platform tag; expected e.g. {DEFAULT_PLATFORM} or macosx_11_0_arm64")
        return [tag]
    glibc, arch = int(m[1]), m[2]
    legacy = [f"manylinux2014_{arch}"] if glibc >= 17 else []  # pip adds manylinux2010 and manylinux1 to it
    return [f"manylinux_2_{v}_{arch}" for v in range(glibc, 4, -1)] + legacy


def torch_index(torch: str) -> list[str]:
    """pip's index arguments for a --torch choice: 'cuda' (PyPI's build; on Linux with CUDA's libraries) and 'none'
    need none; 'cpu' and a URL add one of PyTorch's indexes (its local versions, 2.14.1+cpu, win over PyPI's)."""
    if torch in ("cuda", "none"):
        return []
    url = PYTORCH_INDEX + "cpu" if torch == "cpu" else torch
    if not re.match(r"https?://", url):
        raise ValueError(f"--torch {torch!r}: expected one of {', '.join(TORCH_CHOICES)} or the URL of a PyTorch "
                         f"index, e.g. {PYTORCH_INDEX}cu126")
    return ["--extra-index-url", url]


def _answers(url: str, timeout: float = 15) -> str | None:
    """None when `url` answers, else why not."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return None
    except Exception as e:  # DNS, refused, TLS, HTTP errors
        return f"{type(e).__name__}: {e}"


def _pip(args: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"pip could not {what} (exit {done.returncode}); it needs the package index, as "
                           f"configured for pip on this machine:\n{tail}")


def resolve(requirements: list[str], target: list[str], index: list[str], workdir: Path) -> dict[str, str]:
    """{name: version} of every package `requirements` need on the target, resolved by pip without installing
    (`pip install --dry-run --report`), as pip on the target would resolve them."""
    report = workdir / "resolved.json"
    _pip(["install", "--dry-run", "--quiet", "--ignore-installed", "--report", str(report), "--target",
          str(workdir / "unused"), *target, *index, *requirements], "resolve the packages for the target")
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}


def course_files(repo: Path = REPO) -> list[str]:
    """The files git tracks in the checkout `repo` (as they are in its working tree), relative to it."""
    try:
        names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ValueError(f"a kit is made from a git clone of the course; {repo} is not one ({e})") from None
    return [n for n in names.decode().split("\0") if n and (repo / n).is_file()]


def local_data(name: str, root: Path) -> str | None:
    """The copy of data set `name` in the data folder `root` that load_dataset reads there, relative to `root`."""
    for rel in DATA_FILES[name]:
        p = root / rel
        if p.is_file() or (p.is_dir() and any(p.iterdir())):
            return rel
    return None


def carry_data(source: Path, dest: Path) -> dict[str, list[str]]:
    """Copy each data set from the data folder `source` into `dest` (links followed: files travel); fetch the
    ones it lacks from their official sources into `dest` by load_dataset's download, without its caches."""
    carried = {}
    for name in DATA_FILES:
        rel = local_data(name, source)
        if rel is not None:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            if (source / rel).is_dir():
                shutil.copytree(source / rel, dest / rel, copy_function=shutil.copyfile)
            else:
                shutil.copyfile(source / rel, dest / rel)
            carried[name] = [rel]
            continue
        dest.mkdir(parents=True, exist_ok=True)
        before = set(dest.iterdir())
        try:
            for split in SPLITS:
                load_dataset(name, split, root=dest)  # downloads the official files, decodes, writes a cache
        except FileNotFoundError as e:
            raise RuntimeError(f"{name}: no copy in {source} ({', '.join(DATA_FILES[name])}), and its download "
                               f"failed; nothing was written:\n{e}") from None
        shutil.rmtree(dest / "cache", ignore_errors=True)  # derived; the target decodes for itself
        carried[name] = sorted(p.name for p in set(dest.iterdir()) - before)
    return carried


INSTALL_SH = """#!/bin/sh
# Installs the minivit course from this kit without a network: a fresh virtual environment course/.venv with every
# wheel from wheels/ (pip --no-index; nothing is downloaded). Made by `python -m minivit.gpu kit` on {made}.
#   sh install.sh                      (PYTHON=python{python} sh install.sh to choose the Python)
# then: cd course && .venv/bin/python -m pytest --nbval notebooks/
set -eu
cd "$(dirname "$0")"
PYTHON=${{PYTHON:-python3}}
"$PYTHON" - <<'EOF' || exit 2
import platform, sys
want, machine, system_torch = "{python}", "{machine}", {system_torch}
have = "%d.%d" % sys.version_info[:2]
if have != want:
    sys.exit(f"install.sh: this kit's wheels are for Python {{want}}, and {{sys.executable}} is Python {{have}}: "
             f"run PYTHON=python{{want}} sh install.sh, or make a kit for this Python (--python-version {{have}})")
if machine and platform.machine() != machine:
    sys.exit(f"install.sh: this kit's wheels are for {{machine}}, and this machine is {{platform.machine()}}")
if system_torch:
    try:
        import torch, torchvision
    except ImportError as e:
        sys.exit(f"install.sh: this kit leaves torch out (made with --torch none), so {{sys.executable}} must have "
                 f"torch and torchvision installed ({{e}}); or make a kit with torch (--torch cuda)")
EOF
if command -v sha256sum >/dev/null 2>&1; then
    sha256sum --quiet --check SHA256SUMS || {{ echo "install.sh: the files above are damaged: copy the kit again" >&2; exit 2; }}
fi
"$PYTHON" -m venv {venv_flags}course/.venv || {{ echo "install.sh: $PYTHON cannot create a virtual environment: \\
install its venv module (Debian, Ubuntu: apt install python{python}-venv)" >&2; exit 2; }}
course/.venv/bin/python -m pip install --no-index --find-links wheels --editable './course[dev]'
echo "install.sh: done. From course/: .venv/bin/python -m pytest --nbval notebooks/ (or tests/, or .venv/bin/jupyter lab)"
"""


def install_script(python: str, platforms: list[str], system_torch: bool) -> str:
    """install.sh for a kit: checks the Python (version, machine, torch when the kit leaves it out), then installs."""
    m = re.fullmatch(r"(?:many|musl)linux_\d+_\d+_(\w+)", platforms[0])
    return INSTALL_SH.format(made=datetime.date.today().isoformat(), python=python, machine=m[1] if m else "",
                             system_torch=system_torch, venv_flags="--system-site-packages " if system_torch else "")


def is_kit(folder: Path) -> bool:
    """Whether `folder` is a kit `kit` made (a real folder with a KIT.json of `FORMAT`)."""
    marker = Path(folder) / "KIT.json"
    try:
        return not Path(folder).is_symlink() and json.loads(marker.read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _size(path: Path) -> int:
    """Bytes of a file, or of the files in a folder."""
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def kit(out=None, *, python_version: str | None = None, platforms=None, torch: str = "cuda",
        torch_spec=TORCH_SPEC, data_from=None, replace: bool = False, repo: Path = REPO) -> dict:
    """Make the kit at `out` (default `DEFAULT_OUT`) for a target with `python_version` (default: this Python's) on
    `platforms` (default `DEFAULT_PLATFORM`), torch from `torch` (see `TORCH_CHOICES`); return its KIT.json.

    The data sets come from `data_from` (default: this machine's data folder, `minivit.data.data_root()`). Refused
    before anything is written: `out` exists (FileExistsError; a kit is replaced only with `replace`), a bad
    version, platform or torch choice (ValueError), `repo` not a git clone (ValueError), PyTorch's index silent
    (RuntimeError). The kit is built beside `out` and moved into place complete; a failure removes it."""
    out = Path(out) if out is not None else DEFAULT_OUT
    python = python_version or "%d.%d" % sys.version_info[:2]
    if not re.fullmatch(r"3\.\d+", python):
        raise ValueError(f"--python-version {python!r}: expected the target's Python as MAJOR.MINOR, e.g. 3.12")
    platforms = list(platforms or [DEFAULT_PLATFORM])
    tags = [t for p in platforms for t in expand_platform(p)]
    index = torch_index(torch)
    if (out.exists() or out.is_symlink()) and not (replace and is_kit(out)):
        why = "is a kit: pass --replace to make it again" if is_kit(out) else "exists and is not a kit (no KIT.json)"
        raise FileExistsError(f"{out} {why}; nothing was written (or pass another --out)")
    files = course_files(repo)
    if int(installed_version("pip").split(".")[0]) < 23:
        raise RuntimeError(f"pip {installed_version('pip')} is too old to make a kit (needs 23 or newer): "
                           f"{sys.executable} -m pip install --upgrade pip")
    if index and (why := _answers(index[1].rstrip("/") + "/torch/")):
        raise RuntimeError(f"PyTorch's index {index[1]} does not answer ({why}); nothing was written. Check the "
                           "connection, or choose --torch cuda (PyPI's build)")
    if data_from is not None and not Path(data_from).is_dir():
        raise ValueError(f"--data-from {data_from}: no such folder; expected a data folder like the checkout's data/")
    source = data_root(data_from)
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0o22)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp's folder is the owner's alone; a kit is an ordinary folder
    try:
        for rel in files:  # the course, as its checkout has it
            (tmp / "course" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(repo / rel, tmp / "course" / rel)
        datasets = carry_data(source, tmp / "course" / "data")
        target = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
                  *[a for t in tags for a in ("--platform", t)]]
        build = re.findall(r'"([^"]+)"', re.search(r"requires\s*=\s*\[(.*?)\]", (repo / "pyproject.toml").read_text(),
                                                   re.S)[1])  # the course's build backend: the editable install
        wanted = [f"{repo}[dev]", *build, *([] if torch == "none" else torch_spec)]
        with tempfile.TemporaryDirectory() as work:
            pins = {n: v for n, v in resolve(wanted, target, index, Path(work)).items() if n.lower() != "minivit"}
        if torch == "none":
            pins = {n: v for n, v in pins.items() if not TORCH_PACKAGES.match(re.sub(r"[-_.]+", "-", n).lower())}
        _pip(["download", "--quiet", "--no-deps", "--dest", str(tmp / "wheels"), *target, *index,
              *[f"{n}=={v}" for n, v in sorted(pins.items())]], "download the wheels")
        (tmp / "install.sh").write_text(install_script(python, platforms, torch == "none"))
        manifest = {"format": FORMAT, "made": datetime.date.today().isoformat(), "python": python,
                    "platforms": platforms, "torch": torch, "torch_spec": [] if torch == "none" else list(torch_spec),
                    "packages": dict(sorted(pins.items(), key=lambda kv: kv[0].lower())),
                    "wheel_bytes": _size(tmp / "wheels"), "datasets": datasets,
                    "data_bytes": sum(_size(tmp / "course" / "data" / f) for fs in datasets.values() for f in fs),
                    "course_files": len(files), "course_bytes": sum((repo / f).stat().st_size for f in files)}
        manifest["bytes"] = manifest["wheel_bytes"] + manifest["data_bytes"] + manifest["course_bytes"]
        (tmp / "KIT.json").write_text(json.dumps(manifest, indent=1) + "\n")
        carried = [tmp / "wheels", *[tmp / "course" / "data" / f for fs in datasets.values() for f in fs]]
        sums = [f"{_sha256(p)}  {p.relative_to(tmp).as_posix()}" for c in carried
                for p in sorted(c.rglob("*") if c.is_dir() else [c]) if p.is_file()]
        (tmp / "SHA256SUMS").write_text("".join(s + "\n" for s in sums))
        if out.exists():  # a kit, and replace=True
            shutil.rmtree(out)
        os.replace(tmp, out)
        return manifest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
            for p in made:  # the folders made for it, innermost first
                if p.exists() and not any(p.iterdir()):
                    p.rmdir()


def _human(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minivit.gpu",
                                description="The offline route: a kit that installs and runs the course on a machine "
                                            "without internet (docs/gpu.md).")
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kit", help="make the kit (on a machine with internet, in a clone of the course)")
    k.add_argument("--out", help=f"the kit's folder (default: {DEFAULT_OUT})")
    k.add_argument("--python-version", help="the target's Python, MAJOR.MINOR (default: this Python's)")
    k.add_argument("--platform", action="append", metavar="TAG",
                   help=f"the target's platform tag (default: {DEFAULT_PLATFORM}: Linux x86_64, glibc 2.28 or newer; "
                        "e.g. manylinux_2_28_aarch64); repeat for several")
    k.add_argument("--torch", default="cuda", metavar="BUILD",
                   help="cuda (default: PyPI's build, with CUDA's libraries), cpu (the CPU-only build), a PyTorch "
                        f"index URL ({PYTORCH_INDEX}cu126: CUDA 12.6), or none (the target's Python has torch)")
    k.add_argument("--torch-spec", default=" ".join(TORCH_SPEC), help="the torch release (default: %(default)s)")
    k.add_argument("--data-from", metavar="DIR", help="the data folder to copy (default: minivit.data's data root)")
    k.add_argument("--replace", action="store_true", help="make an existing kit at --out again")
    a = p.parse_args(argv)
    try:
        m = kit(a.out, python_version=a.python_version, platforms=a.platform, torch=a.torch,
                torch_spec=tuple(a.torch_spec.split()), data_from=a.data_from, replace=a.replace)
    except (ValueError, FileExistsError, FileNotFoundError, RuntimeError) as e:
        p.exit(2, f"minivit.gpu: error: {e}\n")
    out = Path(a.out) if a.out else DEFAULT_OUT
    print(f"minivit.gpu: {out} for Python {m['python']} on {', '.join(m['platforms'])}, torch {m['torch']}: "
          f"{len(m['packages'])} wheels {_human(m['wheel_bytes'])}, data sets {', '.join(m['datasets'])} "
          f"{_human(m['data_bytes'])}, course {m['course_files']} files {_human(m['course_bytes'])}. On the target: "
          f"sh {out}/install.sh (docs/gpu.md, 'Without internet')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
