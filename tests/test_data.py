"""Tests for minivit.data: parsing, caching, errors, subsets, normalisation, augmentation, batching.

Synthetic fixtures are built in tmp_path; one test reads the real offline Fashion-MNIST when present.
"""
import gzip
import hashlib
import io
import sys
import tarfile
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from minivit import data
from minivit.data import ImageDataset, first_of_each_class, load_dataset, normalize, stratified_subset


# ---------------------------------------------------------------- fixtures
def _jpeg(value, size=(32, 32)) -> bytes:
    buf = io.BytesIO()  # a flat colour survives JPEG almost exactly
    Image.fromarray(np.full((*size, 3), value % 256, dtype=np.uint8)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def _write_tar(path, members: dict):
    with tarfile.open(path, "w:gz") as tf:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))


CIFAR_CLASSES = ("airplane", "bird", "cat")


def _cifar_tar(root, n=3):
    members = {f"cifar10/{split}/{c}/{i:04d}.jpg": _jpeg(40 * k + 10 * i)
               for split in ("train", "test") for k, c in enumerate(CIFAR_CLASSES) for i in range(n)}
    members["cifar10/README.txt"] = b"not an image"
    _write_tar(root / "cifar10-jpeg.tar.gz", members)
    return root / "cifar10-jpeg.tar.gz"


def _idx(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def _fashion(folder, split="t10k", n=20, compress=True, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), np.arange(n) % 10
    folder.mkdir(parents=True, exist_ok=True)
    for kind, arr, d in (("images", x, 3), ("labels", y, 1)):
        name = folder / f"{split}-{kind}-idx{d}-ubyte"
        if compress:
            with gzip.open(str(name) + ".gz", "wb") as f:
                f.write(_idx(arr))
        else:
            name.write_bytes(_idx(arr))
    return x, y


WNIDS = {"n01440764": "tench", "n03888257": "parachute"}


def _imagenette_tar(path, top, ext, size, tsv=True):
    members = {f"{top}/{split}/{w}/img{i}{ext}": _jpeg(100 * k + 20 * i, size)
               for split in ("train", "val") for k, w in enumerate(WNIDS) for i in range(2)}
    if tsv:
        members[f"{top}/classes.tsv"] = "".join(f"{w}\t{n}\n" for w, n in WNIDS.items()).encode()
    _write_tar(path, members)


def _order(n):
    """The documented fixed order of a split of n examples (the source's order permuted)."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(data.ORDER_SEED))


def _toy(n_per_class=(5, 7, 3), shape=(3, 8, 8)):
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(n_per_class)])
    images = torch.randint(0, 256, (len(labels), *shape), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    return ImageDataset(images, labels, tuple(f"c{i}" for i in range(len(n_per_class))), "cifar10", "train")


# ---------------------------------------------------------------- loading
def test_cifar_tar_parsed_labelled_and_in_the_seeded_mixed_order(tmp_path):
    _cifar_tar(tmp_path)  # the archive is sorted by class, like the offline copy
    ds = load_dataset("cifar10", "test", root=tmp_path)
    assert ds.images.shape == (9, 3, 32, 32) and ds.images.dtype == torch.uint8 and ds.labels.dtype == torch.int64
    assert ds.classes == CIFAR_CLASSES and (ds.name, ds.split, len(ds)) == ("cifar10", "test", 9)
    order = torch.randperm(9, generator=torch.Generator().manual_seed(data.ORDER_SEED))  # the documented order
    sorted_labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    assert torch.equal(ds.labels, sorted_labels[order]) and not torch.equal(ds.labels, sorted_labels)
    expected = torch.tensor([40 * k + 10 * i for k in range(3) for i in range(3)], dtype=torch.float)[order]
    assert torch.allclose(ds.images.float().mean((1, 2, 3)), expected, atol=2)  # each image keeps its label
    again = load_dataset("cifar10", "test", root=tmp_path)  # from the cache: the same order
    assert torch.equal(again.labels, ds.labels) and torch.equal(again.images, ds.images)


def test_old_class_sorted_cache_is_rebuilt_in_the_mixed_order(tmp_path):
    _cifar_tar(tmp_path)
    first = load_dataset("cifar10", "test", root=tmp_path)
    cache = tmp_path / "cache" / "cifar10-test.pt"
    d = torch.load(cache, weights_only=True)
    idx = d["labels"].argsort(stable=True)
    torch.save({"images": d["images"][idx], "labels": d["labels"][idx], "classes": d["classes"]}, cache)  # old format
    again = load_dataset("cifar10", "test", root=tmp_path)
    assert torch.equal(again.labels, first.labels) and torch.equal(again.images, first.images)


def test_pil_fallback_decodes_the_same(tmp_path, monkeypatch):
    _cifar_tar(tmp_path)
    fast = load_dataset("cifar10", "test", root=tmp_path, download=False)
    monkeypatch.setitem(sys.modules, "torchvision.io", None)  # as if torchvision had no image io
    slow = data._build("cifar10", "test", tmp_path, download=False)[0][_order(9)]
    assert (fast.images.int() - slow.int()).abs().max() <= 2  # decoders may round differently


def test_second_load_reads_cache_without_source(tmp_path):
    archive = _cifar_tar(tmp_path)
    first = load_dataset("cifar10", "train", root=tmp_path)
    assert (tmp_path / "cache" / "cifar10-train.pt").exists()
    archive.unlink()  # only the cache is left
    second = load_dataset("cifar10", "train", root=tmp_path)
    assert torch.equal(first.images, second.images) and torch.equal(first.labels, second.labels)
    assert first.classes == second.classes
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["cifar10-train.pt"]  # no temp files


def test_failed_cache_write_leaves_nothing(tmp_path, monkeypatch):
    _cifar_tar(tmp_path)

    def broken_save(obj, f):
        f.write(b"half a cache")
        raise OSError("disk full")
    monkeypatch.setattr(data.torch, "save", broken_save)
    with pytest.warns(UserWarning, match="could not write cache"):
        ds = load_dataset("cifar10", "train", root=tmp_path)
    assert len(ds) == 9 and list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize("bad", ["garbage", "wrong_shape"])
def test_corrupt_cache_is_rebuilt_with_warning(tmp_path, bad):
    _cifar_tar(tmp_path)
    good = load_dataset("cifar10", "train", root=tmp_path)
    cache = tmp_path / "cache" / "cifar10-train.pt"
    if bad == "garbage":
        cache.write_bytes(cache.read_bytes()[:100])  # truncated
    else:
        torch.save({"format": data.CACHE_FORMAT, "images": torch.zeros(9, 3, 8, 8, dtype=torch.uint8),
                    "labels": good.labels, "classes": list(good.classes)}, cache)
    with pytest.warns(UserWarning, match="rebuilding"):
        again = load_dataset("cifar10", "train", root=tmp_path)
    assert torch.equal(again.images, good.images)
    assert torch.equal(torch.load(cache, weights_only=True)["images"], good.images)  # cache repaired


def test_truncated_archive_clear_error_and_no_cache(tmp_path):
    archive = _cifar_tar(tmp_path, n=20)
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(RuntimeError, match="cifar10-jpeg.tar.gz.*(truncated|corrupt).*prepare"):
        load_dataset("cifar10", "train", root=tmp_path)
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []


def test_corrupt_jpeg_names_the_member(tmp_path):
    _write_tar(tmp_path / "cifar10-jpeg.tar.gz", {"cifar10/test/cat/0000.jpg": _jpeg(9),
                                                  "cifar10/test/cat/0001.jpg": _jpeg(9)[:40]})
    with pytest.raises(RuntimeError, match="cifar10/test/cat/0001.jpg in .*cifar10-jpeg.tar.gz"):
        load_dataset("cifar10", "test", root=tmp_path)
    assert not (tmp_path / "cache").exists()


def test_fashion_idx_gz_and_torchvision_raw_layout(tmp_path):
    x, y = _fashion(tmp_path / "a" / "fashion-mnist")
    ds = load_dataset("fashion-mnist", "test", root=tmp_path / "a")
    order = _order(20)
    assert ds.images.shape == (20, 1, 28, 28) and torch.equal(ds.images[:, 0], torch.from_numpy(x)[order])
    assert ds.labels.tolist() == y[order.numpy()].tolist() and ds.classes[0] == "T-shirt/top" and len(ds.classes) == 10
    x2, _ = _fashion(tmp_path / "b" / "FashionMNIST" / "raw", split="train", compress=False, seed=1)
    train = load_dataset("fashion-mnist", "train", root=tmp_path / "b")
    assert torch.equal(train.images[:, 0], torch.from_numpy(x2)[_order(len(x2))])


def test_truncated_idx_names_the_file(tmp_path):
    folder = tmp_path / "FashionMNIST" / "raw"
    _fashion(folder, compress=False)
    f = folder / "t10k-images-idx3-ubyte"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(RuntimeError, match="t10k-images-idx3-ubyte is truncated"):
        load_dataset("fashion-mnist", "test", root=tmp_path)


def test_imagenette_offline_layout_val_alias_and_names(tmp_path):
    _imagenette_tar(tmp_path / "imagenette-128.tar.gz", "imagenette-128", ".jpg", (128, 128))
    ds = load_dataset("imagenette", "val", root=tmp_path)
    assert ds.split == "test" and ds.images.shape == (4, 3, 128, 128)
    assert ds.classes == ("tench", "parachute") and ds.labels.tolist() == torch.tensor([0, 0, 1, 1])[_order(4)].tolist()
    assert (tmp_path / "cache" / "imagenette-test.pt").exists()


def test_imagenette_download_path_resizes_to_128(tmp_path, monkeypatch):
    calls = []

    def fake_download(url, dest):  # what the official archive looks like: 160 px short side, .JPEG
        calls.append(url)
        _imagenette_tar(dest, "imagenette2-160", ".JPEG", (160, 213), tsv=False)
    monkeypatch.setattr(data, "_download", fake_download)
    ds = load_dataset("imagenette", "train", root=tmp_path)
    assert calls == [data.IMAGENETTE_URL] and ds.images.shape == (4, 3, 128, 128)
    assert ds.classes == ("tench", "parachute")
    source_image_2 = ds.images[_order(4).argsort()[2]]  # the archive's third image
    assert abs(source_image_2.float().mean().item() - 100) < 3  # flat colour kept by the resize
    load_dataset("imagenette", "test", root=tmp_path)  # reuses the downloaded archive
    assert len(calls) == 1


@pytest.mark.parametrize("name", ["cifar10", "fashion-mnist", "imagenette"])
def test_missing_data_one_clear_error(tmp_path, name):
    with pytest.raises(FileNotFoundError) as e:
        load_dataset(name, "train", root=tmp_path, download=False)
    msg = str(e.value)
    assert repr(name) in msg and str(tmp_path) in msg and "make data" in msg
    assert data.OFFLINE_FILES[name][0] in msg


def test_missing_imagenette_failed_download_is_reported(tmp_path, monkeypatch):
    def no_net(url, dest):
        raise urllib.error.URLError("Name or service not known")
    monkeypatch.setattr(data, "_download", no_net)
    with pytest.raises(FileNotFoundError, match="(?s)imagenette.*download of .*failed"):
        load_dataset("imagenette", "test", root=tmp_path)


def test_download_writes_through_its_own_temporary_file(tmp_path):
    """`_download` (file:// URLs work offline): the file arrives whole and readable, no temporary file is left, a
    failed fetch leaves nothing, and each call writes a temporary file of its own (two notebooks side by side)."""
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    dest = tmp_path / "out" / "file.bin"
    names = []
    real_mkstemp = data.tempfile.mkstemp

    def spy(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        names.append(name)
        return fd, name
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(data.tempfile, "mkstemp", spy)
        data._download(src.as_uri(), dest)
        data._download(src.as_uri(), dest)  # again: replaces the finished file
        with pytest.raises(urllib.error.URLError):
            data._download((tmp_path / "missing.bin").as_uri(), tmp_path / "out" / "missing.bin")
    assert dest.read_bytes() == src.read_bytes() and dest.stat().st_mode & 0o044 == 0o044
    assert len(set(names)) == 3 and all(Path(n).parent == dest.parent for n in names)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["file.bin"]


def test_bad_name_or_split():
    with pytest.raises(ValueError, match="cifar10.*fashion-mnist.*imagenette"):
        load_dataset("mnist", "train")
    with pytest.raises(ValueError, match="'train', 'test'"):
        load_dataset("cifar10", "val")
    with pytest.raises(ValueError, match="expected one of"):
        load_dataset("imagenette", "validation")


def test_data_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path / "env"))
    assert data.data_root(tmp_path / "arg") == tmp_path / "arg"
    assert data.data_root() == tmp_path / "env"
    monkeypatch.delenv("MINIVIT_DATA")
    assert data.data_root() in (data.REPO / "data", data.Path.home() / ".cache" / "minivit")


def test_dataset_checks_and_repr():
    with pytest.raises(ValueError, match="uint8"):
        ImageDataset(torch.zeros(2, 3, 4, 4), torch.zeros(2, dtype=torch.int64), ("a",), "cifar10", "train")
    with pytest.raises(ValueError, match="int64"):
        ImageDataset(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(3, dtype=torch.int64), ("a",), "x", "y")
    assert repr(_toy()) == "ImageDataset(name='cifar10', split='train', n=15, image_shape=(3, 8, 8), classes=3)"


# ---------------------------------------------------------------- prepare
def _source(tmp_path, corrupt=False):
    src = tmp_path / "shared"
    _fashion(src / "fashion-mnist", "train")
    _fashion(src / "fashion-mnist", "t10k")
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  fashion-mnist/{p.name}\n"
                   for p in sorted((src / "fashion-mnist").iterdir()))
    (src / "SHA256SUMS").write_text(sums.replace(sums[:4], "0000", 1) if corrupt else sums)
    return src


def test_prepare_links_then_is_idempotent(tmp_path, capsys):
    src, root = _source(tmp_path), tmp_path / "root"
    assert data.prepare(["fashion-mnist"], root=root, source=src) == 0
    linked = root / "fashion-mnist" / "t10k-images-idx3-ubyte.gz"
    assert linked.is_symlink() and linked.resolve() == (src / "fashion-mnist" / linked.name).resolve()
    assert data.prepare(["fashion-mnist"], root=root, source=src) == 0
    assert "already present" in capsys.readouterr().out
    assert len(load_dataset("fashion-mnist", "train", root=root)) == 20


def test_prepare_copy_and_checksum_failure(tmp_path):
    root = tmp_path / "root"
    assert data.prepare(["fashion-mnist"], root=root, source=_source(tmp_path), copy=True) == 0
    assert not (root / "fashion-mnist" / "train-labels-idx1-ubyte.gz").is_symlink()
    bad_root = tmp_path / "bad"
    assert data.prepare(["fashion-mnist"], root=bad_root, source=_source(tmp_path / "x", corrupt=True)) == 1
    assert len(list((bad_root / "fashion-mnist").iterdir())) == 3  # the failing file is not linked


def test_prepare_without_source_does_not_fail(tmp_path, capsys):
    assert data.prepare(root=tmp_path / "root", source=tmp_path / "nowhere") == 0
    assert "downloaded on first use" in capsys.readouterr().out
    with pytest.raises(ValueError):
        data.prepare(["mnist"], root=tmp_path, source=tmp_path)
    with pytest.raises(SystemExit):
        data.main(["prepare", "mnist", "--root", str(tmp_path)])
    assert "unknown data set 'mnist'" in capsys.readouterr().err


REAL = data.shared_source()


@pytest.mark.skipif(not (REAL / "fashion-mnist").is_dir(), reason=f"no offline data sets at {REAL}")
def test_real_fashion_mnist_test_split(tmp_path):
    assert data.prepare(["fashion-mnist"], root=tmp_path) == 0  # verifies the real SHA256SUMS
    ds = load_dataset("fashion-mnist", "test", root=tmp_path)
    assert ds.images.shape == (10_000, 1, 28, 28) and ds.images.dtype == torch.uint8
    assert torch.bincount(ds.labels).tolist() == [1000] * 10
    assert abs(ds.images.float().mean().item() / 255 - 0.286) < 0.01


# ---------------------------------------------------------------- subsets, normalisation
def test_stratified_subset_counts_and_determinism():
    ds = _toy()
    a, b, c = (stratified_subset(ds, 3, seed=s) for s in (0, 0, 1))
    assert torch.bincount(a.labels).tolist() == [3, 3, 3] and a.images.shape == (9, 3, 8, 8)
    assert torch.equal(a.images, b.images) and not torch.equal(a.images, c.images)
    with pytest.raises(ValueError, match="class 2 .*3 examples.*n_per_class=4"):
        stratified_subset(ds, 4)


def test_stratified_subset_of_a_class_sorted_set_is_mixed():
    ds = _toy(n_per_class=(20,) * 10)  # sorted by class: the first 20 are all class 0
    sub = stratified_subset(ds, 10, seed=0)
    assert torch.bincount(sub.labels).tolist() == [10] * 10
    assert len(set(sub.labels[:10].tolist())) >= 5  # the first ten span many classes
    runs = (sub.labels[1:] != sub.labels[:-1]).sum().item()  # label changes between neighbours
    assert runs > 50  # about 89 for a random order on average, 9 for a class-sorted one


def test_normalize():
    x = torch.tensor([0, 255], dtype=torch.uint8).view(2, 1, 1, 1).expand(2, 3, 2, 2)
    y = normalize(x, "cifar10")
    mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in data.NORMALIZATION["cifar10"])
    assert y.dtype == torch.float32 and y.shape == x.shape
    assert torch.allclose(y[:1], (0 - mean) / std) and torch.allclose(y[1:], (1 - mean) / std)
    with pytest.raises(ValueError, match="uint8 or float \\(B, 1, H, W\\)"):
        normalize(x, "fashion-mnist")
    with pytest.raises(ValueError, match="unknown data set"):
        normalize(x, "mnist")


def test_normalize_takes_float_images_in_0_1_and_names_its_statistics():
    """D5a of the instructor trial: float images were refused; the docstring now names NORMALIZATION."""
    x = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    torch.testing.assert_close(normalize(x.float() / 255, "cifar10"), normalize(x, "cifar10"))
    assert "NORMALIZATION" in normalize.__doc__
    with pytest.raises(ValueError, match="look in 0..255 \\(divide by 255\\)"):
        normalize(x.float(), "cifar10")
    with pytest.raises(ValueError, match="look normalised already"):
        normalize(normalize(x, "cifar10"), "cifar10")


def test_data_root_of_a_read_only_checkout_falls_back_to_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("MINIVIT_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data.data_root() == data.REPO / "data"  # a checkout this user can write
    monkeypatch.setattr(data, "_writable", lambda folder: False)
    with pytest.warns(UserWarning, match="cannot be written .* so data and caches go to .*minivit; set MINIVIT_DATA"):
        root = data.data_root()
    assert root == tmp_path / ".cache" / "minivit"
    monkeypatch.setenv("MINIVIT_DATA", str(tmp_path / "mine"))
    assert data.data_root() == tmp_path / "mine"  # the environment variable still wins, without a warning


def test_resized_keeps_labels_and_averages_pixels():
    ds = _toy(n_per_class=(2, 2), shape=(3, 8, 8))
    small = ds.resized(4)
    assert small.images.shape == (4, 3, 4, 4) and small.images.dtype == torch.uint8
    assert torch.equal(small.labels, ds.labels) and small.classes == ds.classes and small.name == ds.name
    reference = torch.nn.functional.interpolate(ds.images.float(), size=(4, 4), mode="bilinear", antialias=True)
    assert (small.images.float() - reference).abs().max() <= 1.0  # antialiased bilinear, rounded to uint8
    assert small.images.float().std() < 0.8 * ds.images.float().std()  # an average of pixels, not a pick
    assert ds.resized((8, 8)) is ds and ds.resized((4, 6)).images.shape == (4, 3, 4, 6)
    with pytest.raises(ValueError, match="size must be positive"):
        ds.resized(0)


def _webp(value, size=(128, 128)) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((*size, 3), value % 256, dtype=np.uint8)).save(buf, "WEBP", quality=90)
    return buf.getvalue()


def test_imagenette_webp_copy_is_read_and_preferred(tmp_path):
    _imagenette_tar(tmp_path / "imagenette-128.tar.gz", "imagenette-128", ".jpg", (128, 128))
    jpeg = load_dataset("imagenette", "test", root=tmp_path)
    members = {f"imagenette-128/{split}/{w}/img{i}.webp": _webp(100 * k + 20 * i + 7)
               for split in ("train", "val") for k, w in enumerate(WNIDS) for i in range(2)}
    members["imagenette-128/classes.tsv"] = "".join(f"{w}\t{n}\n" for w, n in WNIDS.items()).encode()
    _write_tar(tmp_path / "imagenette-128-webp.tar.gz", members)
    webp = load_dataset("imagenette", "test", root=tmp_path)  # the JPEG copy's cache is stale now: rebuilt
    assert webp.classes == jpeg.classes and torch.equal(webp.labels, jpeg.labels)
    assert (webp.images.float() - jpeg.images.float()).mean().item() == pytest.approx(7, abs=2)
    cached = torch.load(tmp_path / "cache" / "imagenette-test.pt", weights_only=True)
    assert cached["source"] == "imagenette-128-webp.tar.gz"
    assert torch.equal(load_dataset("imagenette", "test", root=tmp_path).images, webp.images)  # from the cache


@pytest.mark.parametrize("n", [0, -1, 2.5, True, "3"])
def test_stratified_subset_refuses_a_non_positive_count(n):
    ds = ImageDataset(torch.zeros(6, 1, 2, 2, dtype=torch.uint8), torch.tensor([0, 1] * 3), ("a", "b"),
                      "fashion-mnist", "test")
    with pytest.raises(ValueError, match="positive int"):
        stratified_subset(ds, n)


def test_make_mosaics_puts_the_labelled_image_top_left():
    labels = torch.arange(6) % 3
    images = (torch.arange(6) * 40).view(6, 1, 1, 1).expand(6, 3, 8, 8).to(torch.uint8).contiguous()  # flat colours
    ds = ImageDataset(images, labels, ("a", "b", "c"), "cifar10", "train")
    m = data.make_mosaics(ds, 8, seed=1)
    assert m.images.shape == (6, 3, 8, 8) and torch.equal(m.labels, labels) and m.name == "cifar10"
    assert torch.equal(m.images[:, :, :4, :4], images[:, :, :4, :4])  # top-left tile: image i (flat, so resizing keeps it)
    big = data.make_mosaics(ds, 16, seed=1)  # the same content at another size
    assert torch.equal(big.images[:, :, ::2, ::2], m.images)
    assert not torch.equal(data.make_mosaics(ds, 8, seed=2).images, m.images)
    with pytest.raises(ValueError, match="even"):
        data.make_mosaics(ds, 7)


def test_first_of_each_class_picks_the_first_example_of_every_class():
    labels = torch.tensor([2, 0, 2, 1, 0, 1])
    ds = ImageDataset(torch.zeros(6, 1, 2, 2, dtype=torch.uint8), labels, ("a", "b", "c"), "fashion-mnist", "test")
    assert first_of_each_class(ds) == [1, 3, 0]
    assert first_of_each_class(ds, 2) == [1, 3]
    for bad in (0, 4, 1.5, True):
        with pytest.raises(ValueError, match="from 1 to 3"):
            first_of_each_class(ds, bad)
    missing = ImageDataset(torch.zeros(2, 1, 2, 2, dtype=torch.uint8), torch.tensor([0, 0]), ("a", "b"),
                           "fashion-mnist", "test")
    with pytest.raises(ValueError, match="class 1 .'b'. has no example"):
        first_of_each_class(missing)


def test_availability_says_how_a_data_set_would_load(tmp_path, monkeypatch):
    """cached, prepared (in the root), linkable (in the shared folder), download (no shared folder), None (a shared
    folder without it: a GPU machine that carried one data set)."""
    from minivit.data import availability
    root, shared = tmp_path / "root", tmp_path / "shared"
    root.mkdir()
    assert availability("cifar10", root, shared) == "download"  # no offline copies anywhere
    shared.mkdir()
    assert availability("cifar10", root, shared) is None
    (shared / "cifar10-jpeg.tar.gz").write_bytes(b"x")
    assert availability("cifar10", root, shared) == "linkable"
    (root / "cifar10-jpeg.tar.gz").symlink_to(shared / "cifar10-jpeg.tar.gz")
    assert availability("cifar10", root, shared) == "prepared"
    (root / "fashion-mnist").mkdir()
    (root / "fashion-mnist" / "train-images-idx3-ubyte.gz").write_bytes(b"x")
    assert availability("fashion-mnist", root, shared) is None  # one of its four files is not enough
    (root / "cache").mkdir()
    for split in ("train", "test"):
        (root / "cache" / f"fashion-mnist-{split}.pt").write_bytes(b"x")
    assert availability("fashion-mnist", root, shared) == "cached"
    with pytest.raises(ValueError, match="unknown data set"):
        availability("mnist", root, shared)
