"""Build another faithful copy of the course's data, as a user without the course's own copies meets it.

    python benchmarks/other_copy.py OUT [--source DIR] [--quality 90]

A user who downloads the official files gets other pixels and another order than the course's copies: torchvision's
lossless CIFAR-10 (the course's is JPEG at about quality 75) and fast.ai's 160-px Imagenette (the course's is a
128-px WebP). Those files cannot be downloaded here, so this script makes a stand-in from the offline copies, with
the same two differences:

- CIFAR-10: every image decoded and re-encoded as JPEG at `--quality` (default 90; other pixels), the files of each
  class renamed by a seeded permutation (another order, since the course reads them sorted by name);
- Imagenette: the course's JPEG copy instead of its WebP one (the WebP copy was made from it: 36 dB PSNR), its files
  renamed the same way;
- Fashion-MNIST: the same files (the official files hold the same bytes, so no other copy exists).

OUT becomes a data root: `MINIVIT_DATA=OUT` makes minivit read it, with no caches or checkpoints from earlier runs.
The lane `make other-copy` (CI) runs the notebooks on it; `benchmarks/zoo_other_copy.py` measures the zoo on it.
A refused call writes nothing; OUT must not exist yet (nothing is overwritten).
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
SEED = 1  # the permutation of the files within each class (the course's order is seed-free: sorted names)


def _members(path: Path):
    """(member name parts, bytes) of every regular file of a tar archive, in the archive's order."""
    with tarfile.open(path, "r:*") as tf:
        for m in tf:
            if m.isfile():
                yield m.name.split("/"), tf.extractfile(m).read()


def _write_tar(path: Path, files: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        for name, blob in files:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(blob), 0
            tf.addfile(info, io.BytesIO(blob))


def _renamed(files: list[tuple[list[str], bytes]], rng: np.random.Generator, recode=None) -> list[tuple[str, bytes]]:
    """Image files of <top>/<split>/<class>/<file> renamed within each class by a permutation (the extension kept),
    each optionally re-encoded by `recode`; other files (classes.tsv) unchanged."""
    groups, out = {}, []
    for parts, blob in files:
        if len(parts) == 4:
            groups.setdefault(tuple(parts[:3]), []).append((parts[3], blob))
        else:
            out.append(("/".join(parts), blob))
    for folder, items in sorted(groups.items()):
        items.sort()
        order = rng.permutation(len(items))
        width = max(4, len(str(len(items))))
        for new_index, (fname, blob) in zip(order, items):
            ext = os.path.splitext(fname)[1]
            out.append(("/".join(folder) + f"/{new_index:0{width}d}{ext}", recode(blob) if recode else blob))
    return out


def _jpeg(quality: int):
    def recode(blob: bytes) -> bytes:
        buf = io.BytesIO()
        Image.open(io.BytesIO(blob)).convert("RGB").save(buf, "JPEG", quality=quality)
        return buf.getvalue()
    return recode


def build(out: Path, source: Path, quality: int = 90) -> Path:
    """Write the other copy into the new folder `out` (built in a temporary folder beside it, then renamed)."""
    need = [source / "cifar10-jpeg.tar.gz", source / "imagenette-128.tar.gz", source / "fashion-mnist"]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        raise FileNotFoundError(f"the offline copies are needed to build another copy; missing: {', '.join(missing)}")
    if out.exists():
        raise FileExistsError(f"{out} exists already; give a new folder (nothing is overwritten)")
    if not 1 <= quality <= 100 or quality == 75:
        raise ValueError(f"quality must be a JPEG quality from 1 to 100 other than the course's 75, got {quality}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + "."))
    try:
        rng = np.random.default_rng(SEED)
        _write_tar(tmp / "cifar10-jpeg.tar.gz", _renamed(list(_members(need[0])), rng, _jpeg(quality)))
        _write_tar(tmp / "imagenette-128.tar.gz", _renamed(list(_members(need[1])), rng))
        shutil.copytree(need[2], tmp / "fashion-mnist", copy_function=shutil.copyfile)
        for folder in (tmp, tmp / "fashion-mnist"):  # mkdtemp makes 0700; copytree keeps the source's read-only mode
            folder.chmod(0o755)
        (tmp / "OTHER_COPY.txt").write_text(
            f"Another copy of the course's data, built by benchmarks/other_copy.py from {source}: CIFAR-10 re-encoded "
            f"as JPEG quality {quality}, Imagenette from its JPEG copy, the files of each class renamed by a "
            f"permutation seeded {SEED}; Fashion-MNIST unchanged.\n")
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/other_copy.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="the new data root to write (must not exist)")
    p.add_argument("--source", type=Path, default=Path(os.environ.get("MINIVIT_SHARED_DATASETS")
                                                        or REPO.parent / "shared" / "datasets"),
                   help="the course's offline copies (default: $MINIVIT_SHARED_DATASETS or ../shared/datasets)")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality of the re-encoded CIFAR-10 (default 90)")
    a = p.parse_args(argv)
    try:
        print("wrote", build(a.out, a.source, a.quality))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        p.exit(2, f"other_copy: error: {e}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
