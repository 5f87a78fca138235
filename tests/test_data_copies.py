"""Which copy of the data a run reads (minivit.data.copy_info, copies_read), recorded in the benchmarks' JSON, and
the builder of another copy (benchmarks/other_copy.py) that `make other-copy` runs the notebooks on."""
import io
import json
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from minivit import data as mdata

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import other_copy  # noqa: E402
import results_io  # noqa: E402


def _jpeg(rng, quality=75) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def _tar(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tf:
        for name, blob in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tf.addfile(info, io.BytesIO(blob))


@pytest.fixture
def source(tmp_path) -> Path:
    """A tiny stand-in of the offline copies: 8 images per class and split, 2 classes."""
    rng, src = np.random.default_rng(0), tmp_path / "shared"
    src.mkdir()
    _tar(src / "cifar10-jpeg.tar.gz", {f"cifar10/{s}/{c}/{i:04d}.jpg": _jpeg(rng) for s in ("train", "test")
                                       for c in ("airplane", "bird") for i in range(8)})
    files = {f"imagenette-128/{s}/{w}/img{i}.jpg": _jpeg(rng, 90) for s in ("train", "val")
             for w in ("n01440764", "n02102040") for i in range(3)}
    _tar(src / "imagenette-128.tar.gz", {"imagenette-128/classes.tsv": b"n01440764\ttench\nn02102040\tspringer\n", **files})
    (src / "fashion-mnist").mkdir()
    (src / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz").write_bytes(b"x")
    return src


def _decoded(path: Path, top: str) -> dict[str, np.ndarray]:
    with tarfile.open(path) as tf:
        return {m.name: np.asarray(Image.open(io.BytesIO(tf.extractfile(m).read())).convert("RGB"), dtype=np.int16)
                for m in tf if m.isfile() and m.name.startswith(top) and m.name.endswith(".jpg")}


def test_another_copy_has_other_pixels_in_another_order_and_the_same_images_per_class(source, tmp_path):
    out = other_copy.build(tmp_path / "other", source, quality=90)
    before, after = (_decoded(p, "cifar10/") for p in (source / "cifar10-jpeg.tar.gz", out / "cifar10-jpeg.tar.gz"))
    assert sorted(before) == sorted(after)  # the same file names: each class keeps its count of images
    for folder in {n.rsplit("/", 1)[0] for n in before}:  # within each class the images are renamed ...
        names = sorted(n for n in before if n.startswith(folder + "/"))
        old = np.stack([before[n] for n in names])
        new = np.stack([after[n] for n in names])
        # ... to a permutation of the same images (each matched to its nearest), re-encoded: other pixels
        nearest = [int(np.abs(old - im).mean(axis=(1, 2, 3)).argmin()) for im in new]
        assert sorted(nearest) == list(range(len(names))) and nearest != list(range(len(names)))
        assert all(np.abs(old[j] - im).max() > 0 for j, im in zip(nearest, new))
    assert (out / "OTHER_COPY.txt").exists() and (out / "fashion-mnist").is_dir()


def test_another_copy_refuses_what_it_cannot_build_and_writes_nothing(source, tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError, match="nothing is overwritten"):
        other_copy.build(tmp_path / "taken", source)
    with pytest.raises(ValueError, match="other than the course's 75"):
        other_copy.build(tmp_path / "q75", source, quality=75)
    (source / "imagenette-128.tar.gz").unlink()
    with pytest.raises(FileNotFoundError, match="imagenette-128.tar.gz"):
        other_copy.build(tmp_path / "new", source)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared", "taken"]  # no half-built folder left


def test_copy_info_names_the_file_origin_and_fingerprint_and_benchmarks_record_it(source, tmp_path, monkeypatch):
    root = tmp_path / "root"
    assert mdata.prepare(["cifar10"], root=root, source=source) == 0  # linked: not the course's archive by SHA-256
    monkeypatch.setattr(mdata, "_READ", set())
    test = mdata.load_dataset("cifar10", "test", root=root, download=False)
    info = mdata.copy_info("cifar10", "test", root=root)
    from minivit.recipes import fingerprint
    assert info == {"name": "cifar10", "split": "test", "file": "cifar10-jpeg.tar.gz", "origin": "local",
                    "sha256": None, "fingerprint": fingerprint(test)}
    path = results_io.save_result("bench", {"benchmark": "x"}, folder=tmp_path / "results")
    assert json.loads(path.read_text())["data_copies"] == [info]  # every benchmark JSON says which copy it read
    kept = results_io.save_result("bench2", {"data_copies": "given"}, folder=tmp_path / "results")
    assert json.loads(kept.read_text())["data_copies"] == "given"


def test_the_zoo_records_name_the_course_copy_they_were_measured_on():
    from minivit import sources, zoo
    for name, rec in zoo.records().items():
        c = rec["test"]["copy"]
        assert c["origin"] == "course" and (sources.PUBLISHED.get(c["file"]) or sources.UNPUBLISHED[c["file"]]).sha256 \
            == c["sha256"], name
        assert len(c["fingerprint"]) == 16 and rec["test"]["data"], name
