"""The offline GPU route (tooling, no notebook introduces it): a bundle to carry to a GPU machine without internet.

    python -m minivit.gpu bundle 04                 # -> gpu-bundle/: wheels + the data sets notebook 04 loads
    python -m minivit.gpu datasets                  # which data sets each notebook loads

A GPU machine's image has Python 3.12, torch and torchvision, and the course's other runtime packages (einops,
matplotlib, tqdm, safetensors, pytest, ...), but not nbval and its Jupyter stack, and no internet. `bundle` builds
an ignored folder (`gpu-bundle/` in the checkout, at most `LIMIT_MIB`) that travels with the tree:

    gpu-bundle/BUNDLE.json   what it holds (notebook, data sets, wheels, bytes): marks the folder as a bundle
    gpu-bundle/wheels/       cp312 manylinux x86_64 wheels of `WHEELS` and their dependencies, less `ON_THE_IMAGE`
    gpu-bundle/datasets/     the offline copies of the notebook's data sets (`minivit.data.OFFLINE_FILES`), as
                             files (a symbolic link would travel as a dangling link), with their SHA256SUMS

Which data sets a notebook needs is read from its code (`notebook_datasets`: its `load_dataset("name", ...)`
calls), so it cannot drift from the notebooks. The steps on the GPU machine are in docs/gpu.md, "Without
internet". A bundle too big, or a folder in the way that is not a bundle, is refused with no file changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .data import OFFLINE_FILES, REPO, SHAPES, shared_source

NOTEBOOKS = REPO / "notebooks"  # the course notebooks (a source checkout)
DEFAULT_OUT = REPO / "gpu-bundle"  # ignored by git (.gitignore)
LIMIT_MIB = 60  # the most a bundle may hold
CALL_MIB = 64  # what one call to a GPU machine carries: the tracked tree and the bundle together
FORMAT = "minivit-gpu-bundle/1"  # BUNDLE.json's "format": a folder with it is a bundle `bundle` may replace
# What nbval needs to run a notebook in a kernel (pip downloads their dependencies too).
WHEELS = ("nbval", "ipykernel", "jupyter_client", "jupyter_core", "nbformat")
# Dependencies the GPU image has already (carrying them would shadow its versions), and what a kernel run by nbval
# never imports (the debugger, completion): left out of the bundle. The same list as ../shared/tools/device-carry,
# the recipe that ran on the course's GPU machine.
ON_THE_IMAGE = ("numpy", "torch", "pytest", "packaging", "pyyaml", "typing_extensions", "coverage", "attrs", "six",
                "python_dateutil", "pygments", "iniconfig", "pluggy", "psutil", "debugpy", "jedi", "parso", "tzdata",
                "widgetsnbextension", "jupyterlab_widgets")
# The GPU image's Python and platform, for `pip download`.
PIP_TARGET = ("--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
              "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
              "--platform", "manylinux2014_x86_64", "--platform", "manylinux1_x86_64")
_LOADS = re.compile(r"""load_dataset\(\s*["']([A-Za-z0-9_-]+)["']""")  # a literal data set name in a notebook's code


def notebook_path(notebook: str | os.PathLike) -> Path:
    """A notebook by path, by name ('04_training_a_vit') or by number ('04', '4')."""
    p = Path(notebook)
    if p.suffix == ".ipynb":
        if not p.is_file():
            raise FileNotFoundError(f"no notebook {p}")
        return p
    key = str(notebook)
    key = key.zfill(2) if key.isdigit() else key
    found = sorted(NOTEBOOKS.glob(f"{key}*.ipynb"))
    if len(found) != 1:
        names = ", ".join(q.stem for q in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
        raise ValueError(f"{notebook!r} names {'no' if not found else 'more than one'} notebook; expected a number "
                         f"or a name of: {names}")
    return found[0]


def notebook_datasets(notebook: str | os.PathLike) -> tuple[str, ...]:
    """The data sets a notebook loads, read from its code: every `load_dataset("name", ...)` with a literal name, in
    `SHAPES`' order. (Notebook 00 also looks at every data set that is present, without needing any but these.)"""
    cells = json.loads(notebook_path(notebook).read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    names = set(_LOADS.findall(code))
    unknown = names - set(SHAPES)
    if unknown:
        raise ValueError(f"{notebook} loads unknown data sets {sorted(unknown)}; expected names of {sorted(SHAPES)}")
    return tuple(n for n in SHAPES if n in names)


def dataset_files(name: str, source: Path) -> list[str]:
    """The files of data set `name` to carry, relative to `source`: its preferred offline copy that is there."""
    files = OFFLINE_FILES[name]
    if name == "fashion-mnist":  # four files, all needed
        missing = [f for f in files if not (source / f).is_file()]
        if missing:
            raise FileNotFoundError(f"fashion-mnist's offline files {missing} are not in {source}")
        return list(files)
    for f in files:  # alternatives, preferred first (Imagenette: the WebP copy)
        if (source / f).is_file():
            return [f]
    raise FileNotFoundError(f"no offline copy of {name} ({' or '.join(files)}) in {source}; set "
                            "MINIVIT_SHARED_DATASETS or pass --source")


def _is_on_the_image(wheel: str) -> bool:
    project = re.split(r"-\d", wheel, maxsplit=1)[0].lower().replace("-", "_")
    return project in ON_THE_IMAGE


def _download_wheels(dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", *PIP_TARGET, "-d", str(dest), *WHEELS]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip download failed (exit {done.returncode}): {' '.join(cmd)}\n{done.stderr.strip()}\n"
                           "It needs a package index; offline, pass --wheels-from a folder of the wheels.")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def is_bundle(folder: Path) -> bool:
    """Whether `folder` is a bundle `bundle` built (a real folder with a BUNDLE.json of `FORMAT`)."""
    marker = Path(folder) / "BUNDLE.json"
    if Path(folder).is_symlink() or not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("format") == FORMAT
    except (ValueError, AttributeError, OSError):
        return False


def tracked_bytes(repo: Path = REPO) -> int:
    """The bytes of the files git tracks in `repo` (what travels with a bundle besides it); 0 outside a checkout."""
    try:
        names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum((repo / n).stat().st_size for n in names.decode().split("\0") if n and (repo / n).is_file())


def bundle(notebook, out=None, *, datasets=None, wheels: bool = True, source=None, wheels_from=None,
           limit_mib: float = LIMIT_MIB, tree_bytes: int | None = None) -> dict:
    """Build the bundle for `notebook` at `out` (default `DEFAULT_OUT`); return its manifest (BUNDLE.json).

    datasets: which of the notebook's data sets to carry (default: all it loads; [] for none, e.g. when a warm
    machine has them decoded already). wheels: carry the wheels (False: data only, for a first call that
    prepares the data). source: the offline data copies (default `minivit.data.shared_source()`). wheels_from: a
    folder of wheels to copy instead of `pip download`ing them (offline).
    The limit is `limit_mib`, or less where the tracked tree (`tree_bytes`, default `tracked_bytes()`) leaves less
    of the `CALL_MIB` a call carries. The bundle is built beside `out` and moved into place only when complete and
    within the limit; a bundle already at `out` is then replaced. Refused, with nothing changed: `out` exists and
    is not a bundle (FileExistsError), the data sets alone or the whole bundle exceed the limit (ValueError), a
    data set's offline copy is missing (FileNotFoundError)."""
    path = notebook_path(notebook)
    out = Path(out) if out is not None else DEFAULT_OUT
    source = shared_source(source)
    tree = tracked_bytes() if tree_bytes is None else tree_bytes
    limit = min(int(limit_mib * 2**20), CALL_MIB * 2**20 - tree)
    why = (f"the bundle's {limit_mib:g} MiB" if limit == int(limit_mib * 2**20) else
           f"the {_mib(limit)} that {CALL_MIB} MiB a call carries leaves beside the tracked tree ({_mib(tree)})")
    if (out.exists() or out.is_symlink()) and not is_bundle(out):
        raise FileExistsError(f"{out} exists and is not a GPU bundle (no BUNDLE.json of {FORMAT}); "
                              "remove it or pass another --out")
    needs = notebook_datasets(path)
    names = needs if datasets is None else tuple(n for n in SHAPES if n in set(datasets))
    if set(datasets or ()) - set(needs):
        raise ValueError(f"{path.stem} loads {', '.join(needs) or 'no data set'}; it cannot use "
                         f"{sorted(set(datasets) - set(needs))}")
    files = [f for n in names for f in dataset_files(n, source)]
    data_bytes = sum((source / f).stat().st_size for f in files)
    if data_bytes > limit:
        raise ValueError(f"the data sets of {path.stem} ({', '.join(names)}) take {_mib(data_bytes)}, over {why}; "
                         "nothing was written. Carry them over several calls to one warm machine (--datasets, "
                         "--no-wheels: docs/gpu.md, 'Without internet')")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / "wheels").mkdir()
        if not wheels:
            pass
        elif wheels_from is not None:
            found = sorted(Path(wheels_from).glob("*.whl"))
            if not found:
                raise FileNotFoundError(f"no wheels (*.whl) in {wheels_from}")
            for w in found:
                shutil.copyfile(w, tmp / "wheels" / w.name)
        else:
            _download_wheels(tmp / "wheels")
        for w in (tmp / "wheels").iterdir():
            if _is_on_the_image(w.name) or w.suffix != ".whl":
                w.unlink()
        for f in files:
            (tmp / "datasets" / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / f, tmp / "datasets" / f)  # follows links: the file itself travels
        sums = source / "SHA256SUMS"
        if files and sums.is_file():
            lines = [ln for ln in sums.read_text().splitlines() if ln.split() and ln.split()[-1] in files]
            (tmp / "datasets" / "SHA256SUMS").write_text("".join(ln + "\n" for ln in lines))
        wheels = sorted(w.name for w in (tmp / "wheels").iterdir())
        wheel_bytes = _size(tmp / "wheels")
        manifest = {"format": FORMAT, "notebook": path.stem, "datasets": list(names), "dataset_files": files,
                    "wheels": wheels, "wheel_bytes": wheel_bytes, "dataset_bytes": data_bytes,
                    "bytes": wheel_bytes + data_bytes, "tree_bytes": tree}
        (tmp / "BUNDLE.json").write_text(json.dumps(manifest, indent=1) + "\n")
        total = _size(tmp)
        if total > limit:
            raise ValueError(f"the bundle for {path.stem} would take {_mib(total)} (wheels {_mib(wheel_bytes)}, data "
                             f"{_mib(data_bytes)}), over {why}; nothing was written. Carry the data and the wheels "
                             "in two calls to one warm machine (--no-wheels, then --datasets with no name: docs/gpu.md)")
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "bundle")
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old)
        return manifest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minivit.gpu",
                                description="The offline GPU route: carry wheels and data to a GPU machine.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help=f"build the bundle for one notebook (at most {LIMIT_MIB} MiB)")
    b.add_argument("notebook", help="a notebook's number (04), name or path")
    b.add_argument("--out", help=f"the bundle's folder (default: {DEFAULT_OUT})")
    b.add_argument("--source",
                   help="offline data copies (default: $MINIVIT_SHARED_DATASETS or <repo>/../shared/datasets)")
    b.add_argument("--datasets", nargs="*", metavar="NAME",
                   help="carry only these of the notebook's data sets (none when no name follows)")
    b.add_argument("--no-wheels", action="store_true", help="carry no wheels (a call that only prepares the data)")
    b.add_argument("--wheels-from", help="copy the wheels from this folder instead of downloading them (offline)")
    sub.add_parser("datasets", help="the data sets each notebook loads (read from its code)")
    a = p.parse_args(argv)
    try:
        if a.cmd == "datasets":
            for nb in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
                print(f"{nb.stem:40} {' '.join(notebook_datasets(nb)) or '-'}")
            return 0
        m = bundle(a.notebook, a.out, datasets=a.datasets, wheels=not a.no_wheels, source=a.source,
                   wheels_from=a.wheels_from)
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as e:
        p.exit(2, f"minivit.gpu: error: {e}\n")
    out = Path(a.out) if a.out else DEFAULT_OUT
    print(f"minivit.gpu: {out} for {m['notebook']}: {len(m['wheels'])} wheels {_mib(m['wheel_bytes'])} + data "
          f"{', '.join(m['datasets']) or 'none'} {_mib(m['dataset_bytes'])} = {_mib(m['bytes'])}; with the tracked "
          f"tree {_mib(m['bytes'] + m['tree_bytes'])} of the {CALL_MIB} MiB a call carries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
