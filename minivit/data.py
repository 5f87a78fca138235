"""Data sets, normalisation and stratified subsets for minivit (augmentation: `minivit.augment`, re-exported here).

Introduced in 03_transformer_encoder.ipynb.

`load_dataset(name, split)` returns a whole split as uint8 tensors (B C H W):
  cifar10        3 x 32 x 32,   10 classes, 50,000 train / 10,000 test (offline copy: JPEG q~75)
  fashion-mnist  1 x 28 x 28,   10 classes, 60,000 train / 10,000 test
  imagenette     3 x 128 x 128, 10 ImageNet classes, 9,469 train / 3,925 test (= official val)

Order: every split comes in one fixed, seeded order that mixes the classes (`ORDER_SEED`): the same on every
machine for a given copy of the data, so `test.images[:8]` shows several classes, not eight airplanes (the offline
archives are sorted by class).

The offline CIFAR-10 copy is a JPEG re-encoding (quality about 75) of the official images, so its pixels, figures
and accuracies differ slightly from the official binary release that torchvision downloads.

Data root (where files and caches live): the `root` argument, else env MINIVIT_DATA, else the
repository's `data/` folder when it exists (source checkout / editable install), else ~/.cache/minivit.
Sources, tried in order: the course's offline copies in the root (linked by `python -m minivit.data prepare` from
`--source DIR`, env MINIVIT_SHARED_DATASETS or <repo>/../shared/datasets), files in torchvision's own layout,
the course's published archives (`minivit.sources`: fetched, SHA-256 checked, when its URL is set and answers),
then a download of the official files (other pixels than the course's copy, with a warning). `download=False`
fetches nothing. The first load decodes and writes <root>/cache/<name>-<split>.pt (atomic), which records where
the pixels came from (`origin`); later loads read that cache in about a second.
"""
from __future__ import annotations

import argparse, gzip, hashlib, io, operator, os, shutil, sys, tarfile, tempfile, urllib.request, warnings, zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import smoke, sources
from .augment import POLICIES, Augment, make_augment, random_crop, random_flip  # noqa: F401  (re-exported)
from .checkpoint import atomic_save

REPO = Path(__file__).resolve().parents[1]
IMAGENETTE_URL = "https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-160.tgz"
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
IMAGENETTE_CLASSES = {"n01440764": "tench", "n02102040": "English springer", "n02979186": "cassette player",
                      "n03000684": "chain saw", "n03028079": "church", "n03394916": "French horn",
                      "n03417042": "garbage truck", "n03425413": "gas pump", "n03445777": "golf ball",
                      "n03888257": "parachute"}
SHAPES = {"cifar10": (3, 32, 32), "fashion-mnist": (1, 28, 28), "imagenette": (3, 128, 128)}  # (C, H, W)
# per-channel mean / std of the train split, in [0, 1] units (CIFAR-10: the JPEG copy's numbers)
NORMALIZATION = {"cifar10": ((0.4913, 0.4821, 0.4465), (0.2452, 0.2428, 0.2606)),
                 "fashion-mnist": ((0.2860,), (0.3530,)),
                 # ImageNet's; Imagenette-128's own are (.462, .458, .430) / (.278, .275, .297)
                 "imagenette": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}
SPLITS = ("train", "test")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".webp")  # the image files read from tar archives
ORDER_SEED = 0  # seed of the fixed permutation every split is stored and returned in (mixes the classes)
CACHE_FORMAT = "minivit-data/2"  # the cache's "format" entry; a cache without it is rebuilt (older caches: class-sorted)
# The offline copies, preferred first. Imagenette's WebP copy (46 MB; the same images and split as the 81 MB JPEG
# copy, WebP quality 80, 36 dB PSNR against it) is the smaller copy; when both are present the WebP
# one is read, so every machine sees the same pixels.
OFFLINE_FILES = {"cifar10": ("cifar10-jpeg.tar.gz",),
                 "imagenette": ("imagenette-128-webp.tar.gz", "imagenette-128.tar.gz"),
                 "fashion-mnist": tuple(f"fashion-mnist/{s}-{k}-idx{d}-ubyte.gz" for s in ("train", "t10k")
                                        for k, d in (("images", 3), ("labels", 1)))}
_FMNIST_PREFIX = {"train": "train", "test": "t10k"}
LOCAL_LAYOUT = {"cifar10": ("cifar-10-batches-py",), "fashion-mnist": ("FashionMNIST/raw",),
                "imagenette": ("imagenette2-160.tgz",)}  # files of the data set's own source, already in the root


@dataclass(frozen=True, eq=False)
class ImageDataset:
    """A whole split in memory: images uint8 (N, C, H, W), labels int64 (N,), class names."""
    images: torch.Tensor  # uint8 (N, C, H, W)
    labels: torch.Tensor  # int64 (N,), values in [0, len(classes))
    classes: tuple  # class names (str), indexed by label
    name: str  # data set name, e.g. "cifar10"
    split: str  # "train" or "test"

    def __post_init__(self):
        if self.images.dtype != torch.uint8 or self.images.ndim != 4:
            raise ValueError(f"images must be uint8 (N, C, H, W), got {self.images.dtype} {tuple(self.images.shape)}")
        if self.labels.dtype != torch.int64 or self.labels.shape != (len(self.images),):
            raise ValueError(f"labels must be int64 ({len(self.images)},), got {self.labels.dtype} "
                             f"{tuple(self.labels.shape)}")

    def __len__(self):
        return len(self.labels)

    def __repr__(self):
        return (f"ImageDataset(name={self.name!r}, split={self.split!r}, n={len(self)}, "
                f"image_shape={tuple(self.images.shape[1:])}, classes={len(self.classes)})")

    def resized(self, size: int | tuple[int, int], chunk: int = 4096) -> "ImageDataset":
        """The same images resized to `size` (H, W) (antialiased bilinear, uint8 again), e.g. for training at a
        lower resolution first (notebook 07, benchmarks). (N, C, H, W) -> (N, C, H', W')."""
        from torchvision.transforms.v2.functional import resize
        h, w = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
        if min(h, w) < 1:
            raise ValueError(f"size must be positive (H, W), got {size!r}")
        if (h, w) == tuple(self.images.shape[-2:]):
            return self
        out = torch.cat([resize(self.images[i:i + chunk], [h, w], antialias=True)
                         for i in range(0, len(self), chunk)])  # (N, C, h, w) uint8
        return ImageDataset(out, self.labels, self.classes, self.name, self.split)

    def subset(self, indices) -> "ImageDataset":
        """The examples at `indices` (sequence or int64 tensor (M,)), in that order."""
        idx = torch.as_tensor(indices, dtype=torch.int64)
        return ImageDataset(self.images[idx], self.labels[idx], self.classes, self.name, self.split)


def data_root(root=None) -> Path:
    """The data folder: `root`, else $MINIVIT_DATA, else <repo>/data in a source checkout that this user can
    write, else ~/.cache/minivit. A checkout whose data/ cannot be written (a shared or read-only class install)
    falls back to ~/.cache/minivit with a warning, instead of failing at the first cache it writes."""
    if root is not None:
        return Path(root).expanduser()
    if os.environ.get("MINIVIT_DATA"):
        return Path(os.environ["MINIVIT_DATA"]).expanduser()
    cache = Path.home() / ".cache" / "minivit"
    checkout = (REPO / "data").is_dir() and (REPO / "pyproject.toml").is_file()  # not site-packages/data
    if not checkout:
        return cache
    if not _writable(REPO / "data"):
        warnings.warn(f"minivit: the checkout's data folder {REPO / 'data'} cannot be written (a shared or read-only "
                      f"install), so data and caches go to {cache}; set MINIVIT_DATA to choose another folder",
                      stacklevel=2)
        return cache
    return REPO / "data"


def _writable(folder: Path) -> bool:
    """Whether this user may create files in `folder`."""
    return os.access(folder, os.W_OK | os.X_OK)


def shared_source(source=None) -> Path:
    """Folder holding the offline copies: `source`, else $MINIVIT_SHARED_DATASETS, else <repo>/../shared/datasets."""
    return Path(source or os.environ.get("MINIVIT_SHARED_DATASETS") or REPO.parent / "shared" / "datasets")


def availability(name: str, root=None, source=None) -> str | None:
    """How data set `name` would load on this machine now, without loading it:
    "cached" -- both splits' caches are in the data root; "prepared" -- its offline copy is in the root;
    "linkable" -- its offline copy is in the shared folder (`shared_source(source)`), and `prepare` links it;
    "download" -- no folder of offline copies exists (a machine meant to download: Colab), so loading downloads it;
    None -- offline copies are set up here but not this one (a machine given only some data sets): skip it.
    Notebook 00 checks the data sets that are not None."""
    _check_name_split(name, "train")
    root, src = data_root(root), shared_source(source)
    if all((root / "cache" / f"{name}-{split}.pt").exists() for split in SPLITS):
        return "cached"
    if _has_offline(name, root):
        return "prepared"
    if src.is_dir():
        return "linkable" if _has_offline(name, src) else None
    return "download"


def _has_offline(name: str, folder: Path) -> bool:
    """Whether `folder` holds an offline copy of `name` (Fashion-MNIST: all four files)."""
    return (all if name == "fashion-mnist" else any)((folder / f).exists() for f in OFFLINE_FILES[name])


def origin(name: str, root=None, split: str | None = None) -> str | None:
    """Where the cached pixels of `name` came from: "course" (the course's archives, linked or fetched, size and
    SHA-256 checked), "official" (downloaded from torchvision's or fast.ai's servers), "local" (files that were in
    the root already: torchvision's layout, fast.ai's archive, or an archive that is not the course's by its
    checksum); "unknown" for a cache written before origins were recorded; None when not cached. Without
    `split`, the origin of the cached splits ("mixed" when they differ)."""
    found = set()
    for s in (_check_name_split(name, split),) if split else SPLITS:
        try:  # mmap: reads the small entries, not the images
            found.add(torch.load(data_root(root) / "cache" / f"{name}-{s}.pt", weights_only=True, mmap=True)
                      .get("origin", "unknown"))
        except Exception:  # not cached, or unusable (the next load rebuilds it)
            pass
    return None if not found else found.pop() if len(found) == 1 else "mixed"


def _check_name_split(name, split):
    if name not in SHAPES:
        raise ValueError(f"unknown data set {name!r}; expected one of {sorted(SHAPES)}")
    split = "test" if (name == "imagenette" and split == "val") else split
    if split not in SPLITS:
        extra = " (or 'val', an alias of 'test')" if name == "imagenette" else ""
        raise ValueError(f"unknown split {split!r} for {name!r}; expected one of {list(SPLITS)}{extra}")
    return split


def load_dataset(name: str, split: str, root=None, download: bool = True) -> ImageDataset:
    """Load split "train" or "test" of "cifar10" | "fashion-mnist" | "imagenette" as uint8 (N, C, H, W).

    The examples come in a fixed order that mixes the classes: the sources' order permuted by a generator
    seeded with `ORDER_SEED` (the same on every machine for a given copy of the data).
    Reads <root>/cache/<name>-<split>.pt when present (rebuilt with a warning if corrupt), else
    decodes the sources (see the module docstring) and writes that cache atomically.
    In a smoke run (`minivit.smoke`, MINIVIT_SMOKE=1) it returns a stratified sliver of the split instead.
    """
    ds = _load_whole(name, split, root, download)
    _READ.add((str(data_root(root)), name, ds.split))  # loaded: `copies_read` lists it
    if smoke.active():
        ds = stratified_subset(ds, smoke.per_class(ds.split), seed=0)
    return ds


_READ: set = set()  # (data root, name, split) of every split this process has loaded: `copies_read`


def _load_whole(name: str, split: str, root=None, download: bool = True) -> ImageDataset:
    split = _check_name_split(name, split)
    root = data_root(root)
    cache = root / "cache" / f"{name}-{split}.pt"
    source = next((f for f in OFFLINE_FILES[name] if (root / f).exists()), None)  # what a decode would read
    if cache.exists():
        try:
            d = torch.load(cache, weights_only=True)
            # rebuilt quietly: a cache of an older minivit (class-sorted), or of another copy than the preferred one
            if d.get("format") == CACHE_FORMAT and not _stale(d, name, source):
                return _validated(ImageDataset(d["images"], d["labels"], tuple(d["classes"]), name, split))
        except Exception as e:  # unreadable, truncated, wrong keys/shapes/dtypes
            warnings.warn(f"cache {cache} is unusable ({type(e).__name__}: {e}); rebuilding it from the source")
    images, labels, classes, came_from = _build(name, split, root, download)
    source = next((f for f in OFFLINE_FILES[name] if (root / f).exists()), None)  # fetched since
    if came_from != "course" and name not in sources.SAME_AS_OFFICIAL:
        warnings.warn(f"minivit: {name} {split} is decoded from {'the official' if came_from == 'official' else 'local'}"
                      " files: other pixels than the course's copy; stored outputs and zoo records were made on the "
                      "course's copy", stacklevel=3)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(ORDER_SEED))  # (N,)
    ds = _validated(ImageDataset(images[order], labels[order], tuple(classes), name, split))
    try:
        atomic_save({"format": CACHE_FORMAT, "source": source, "origin": came_from, "images": ds.images, "labels": ds.labels,
                     "classes": list(ds.classes)}, cache)
    except OSError as e:
        warnings.warn(f"could not write cache {cache} ({e}); the next load decodes again")
    return ds


def _stale(cache: dict, name: str, source: str | None) -> bool:
    """Whether a cache was decoded from another offline copy than `source`, the one preferred now. Caches of
    older versions name no source; of the data sets, only Imagenette had another copy then, its JPEG one."""
    if source is None:
        return False
    if "origin" in cache:  # names its source exactly (None: not an offline copy, e.g. official files read before)
        return cache.get("source") != source
    return (cache.get("source") or ("imagenette-128.tar.gz" if name == "imagenette" else source)) != source


def _validated(ds: ImageDataset) -> ImageDataset:
    if tuple(ds.images.shape[1:]) != SHAPES[ds.name] or len(ds) == 0:
        raise ValueError(f"expected {ds.name} images of shape (N>0, {SHAPES[ds.name]}), got {tuple(ds.images.shape)}")
    if not all(isinstance(c, str) for c in ds.classes) or not 0 <= int(ds.labels.min()) <= int(ds.labels.max()) < len(ds.classes):
        raise ValueError(f"labels must lie in [0, {len(ds.classes)}) and class names be strings")
    return ds


def _build(name, split, root: Path, download: bool):
    """Decode one split from the first source found -> (uint8 (N, C, H, W), int64 (N,), class names, origin)."""
    course = None  # why the course's archive was not fetched, if it was tried
    if download and not any((root / f).exists() for f in OFFLINE_FILES[name] + LOCAL_LAYOUT[name]):
        course = _fetch_course(name, root)
        if course:
            warnings.warn(str(course), stacklevel=4)
    if name == "cifar10":
        if (root / "cifar10-jpeg.tar.gz").exists():
            return (*_decode_tar(root / "cifar10-jpeg.tar.gz", "cifar10", split, None, SHAPES[name]),
                    _course_or_local(root, ["cifar10-jpeg.tar.gz"]))
        looked = [root / "cifar10-jpeg.tar.gz", root / "cifar-10-batches-py"]
    elif name == "imagenette":
        tsv, tv_split = None, {"train": "train", "test": "val"}[split]
        for f in OFFLINE_FILES[name]:
            if (root / f).exists():
                return (*_decode_tar(root / f, "imagenette-128", tv_split, "classes.tsv", SHAPES[name]),
                        _course_or_local(root, [f]))
        official = root / "imagenette2-160.tgz"
        looked, came_from = [root / f for f in OFFLINE_FILES[name]] + [official], "local"
        if not official.exists() and download:
            try:
                _download(IMAGENETTE_URL, official)
                came_from = "official"
            except Exception as e:
                raise _not_found(name, split, root, looked, _and(course, f"download of {IMAGENETTE_URL} failed: {e}")) from e
        if official.exists():
            return (*_decode_tar(official, "imagenette2-160", tv_split, tsv, SHAPES[name]), came_from)
        raise _not_found(name, split, root, looked, "downloading is disabled (download=False)")
    else:
        p = _FMNIST_PREFIX[split]
        for folder in (root / "fashion-mnist", root / "FashionMNIST" / "raw"):
            for ext in (".gz", ""):
                x, y = folder / f"{p}-images-idx3-ubyte{ext}", folder / f"{p}-labels-idx1-ubyte{ext}"
                if x.exists() and y.exists():
                    images = torch.from_numpy(_read_idx(x)).unsqueeze(1)  # (N, 1, 28, 28)
                    return (images, torch.from_numpy(_read_idx(y).astype(np.int64)), FASHION_CLASSES,
                            _course_or_local(root, [x.relative_to(root).as_posix(), y.relative_to(root).as_posix()]))
        looked = [root / "fashion-mnist", root / "FashionMNIST" / "raw"]
    # cifar10 / fashion-mnist: torchvision's own layout, or its download
    import torchvision.datasets as tvd
    cls = tvd.CIFAR10 if name == "cifar10" else tvd.FashionMNIST
    came_from = "local" if any((root / f).exists() for f in LOCAL_LAYOUT[name]) else "official"
    try:
        ds = cls(str(root), train=split == "train", download=download)
    except Exception as e:
        why = _and(course, f"torchvision download failed: {e}") if download else "downloading is disabled (download=False)"
        raise _not_found(name, split, root, looked, why) from e
    images = torch.as_tensor(np.asarray(ds.data))
    images = images.permute(0, 3, 1, 2) if name == "cifar10" else images.unsqueeze(1)  # (N, C, H, W)
    return (images.contiguous(), torch.as_tensor(ds.targets, dtype=torch.int64),
            FASHION_CLASSES if name != "cifar10" else ds.classes, came_from)


def _fetch_course(name: str, root: Path) -> "sources.FetchError | None":
    """Fetch the course's published archives of `name` missing from `root`; None when done, else why not."""
    try:
        for rel in (f for f in OFFLINE_FILES[name] if f in sources.PUBLISHED and not (root / f).exists()):
            sources.fetch(rel, root)
    except sources.FetchError as e:
        return e
    return None


def _course_or_local(root: Path, files) -> str:
    """ "course" when every one of `files` (relative to `root`) is the course's copy by size and SHA-256, else "local"."""
    return "course" if all(sources.is_course_copy(root / f, f) for f in files) else "local"


def _and(course, why: str) -> str:
    return f"the course's archive was not fetched ({course}), and the {why}" if course else why


def _not_found(name, split, root, looked, why) -> FileNotFoundError:
    where, files = "\n".join(f"  {p}" for p in looked), ", ".join(OFFLINE_FILES[name])
    return FileNotFoundError(
        f"data set {name!r} ({split} split) is not available. Looked in:\n{where}\nand {str(why).strip()}.\n"
        f"Fix: run `python -m minivit.data prepare --root {root}` (`make data` does it for the default root): it "
        f"links {files} from {shared_source()} (or --source DIR); or place those files in {root} yourself, or set MINIVIT_DATA "
        "to a folder that holds them, or connect to the internet so they download.")


def _download(url: str, dest: Path):
    """Fetch `url` to `dest` through a temporary file of its own, so an interrupted download leaves nothing behind
    and two processes fetching the same file at once (two notebooks run side by side) do not write into one file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f, urllib.request.urlopen(url, timeout=60) as r:
            shutil.copyfileobj(r, f, 1 << 20)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _read_idx(path: Path) -> np.ndarray:
    """Parse an IDX file (optionally gzipped) of uint8 values -> array of the shape in its header."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise RuntimeError(f"cannot read {path}: {e}. Delete it and re-run `python -m minivit.data prepare`.") from e
    ndim = raw[3] if len(raw) >= 4 else 0
    if len(raw) < 4 or raw[:3] != b"\x00\x00\x08" or len(raw) < 4 + 4 * ndim:
        raise RuntimeError(f"{path} is not a uint8 IDX file (bad header). Delete it and re-run prepare.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    if len(raw) != 4 + 4 * ndim + int(np.prod(shape)):
        raise RuntimeError(f"{path} is truncated or corrupt: header says {shape}, size {len(raw)} bytes. "
                           "Delete it and re-run `python -m minivit.data prepare`.")
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(shape).copy()


def _decode_tar(path: Path, top: str, split: str, tsv, shape):
    """Decode every <top>/<split>/<class>/*.jp(e)g or *.webp member of a tar archive, sorted by (class, file)."""
    from torchvision.transforms.v2.functional import resize
    files, names = [], None
    try:
        with tarfile.open(path, "r:*") as tf:
            for m in tf:
                parts = m.name.split("/")
                if tsv and m.name == f"{top}/{tsv}":
                    rows = [r.split("\t") for r in tf.extractfile(m).read().decode().splitlines() if r.strip()]
                    names = {w: n for w, n in rows}
                if m.isfile() and len(parts) == 4 and parts[:2] == [top, split] and parts[3].lower().endswith(IMAGE_EXTENSIONS):
                    files.append((parts[2], parts[3], tf.extractfile(m).read()))
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise RuntimeError(f"cannot read archive {path}: {type(e).__name__}: {e}. It is truncated or corrupt: "
                           "delete it and re-run `python -m minivit.data prepare` (or let it download again).") from e
    if not files:
        raise RuntimeError(f"archive {path} holds no {top}/{split}/<class>/*.jpg or *.webp images")
    files.sort(key=lambda f: f[:2])
    wnids = sorted({f[0] for f in files})
    names = names or (IMAGENETTE_CLASSES if top.startswith("imagenette") else {w: w for w in wnids})
    label_of = {w: i for i, w in enumerate(wnids)}
    decode, decoded = _image_decoder(), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 deprecates its image io
        for cls, fname, blob in files:
            try:
                im = decode(blob)  # (3, h, w)
            except (RuntimeError, OSError) as e:
                raise RuntimeError(f"cannot decode {top}/{split}/{cls}/{fname} in {path}: {e}. The archive is corrupt: "
                                   "delete it and re-run `python -m minivit.data prepare`.") from e
            decoded.append(im if im.shape[1:] == shape[1:] else resize(im, list(shape[1:]), antialias=True))
    images = torch.from_numpy(np.stack([im.numpy() for im in decoded]))  # (N, 3, H, W); numpy: no thread pool
    labels = torch.tensor([label_of[f[0]] for f in files], dtype=torch.int64)  # (N,)
    return images, labels, [names.get(w, w) for w in wnids]


def _image_decoder():
    """A function JPEG or WebP bytes -> uint8 (3, H, W): torchvision's decoder (WebP from torchvision 0.20), else
    PIL (about 2x slower)."""
    from PIL import Image

    def with_pil(b):
        return torch.from_numpy(np.array(Image.open(io.BytesIO(b)).convert("RGB"))).permute(2, 0, 1)
    try:
        from torchvision.io import ImageReadMode, decode_image
    except ImportError:
        return with_pil

    def decode(b):
        try:
            return decode_image(torch.frombuffer(bytearray(b), dtype=torch.uint8), mode=ImageReadMode.RGB)
        except RuntimeError:  # a torchvision without WebP support; PIL's error names a corrupt file
            return with_pil(b)
    return decode


def first_of_each_class(dataset: ImageDataset, classes: int | None = None) -> list[int]:
    """Indices of the first example of classes 0, 1, ..., `classes` - 1 (default: every class) in `dataset`'s
    order: one image per class, for figures whose samples must span the classes."""
    k = len(dataset.classes)
    n = k if classes is None else classes
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= k:
        raise ValueError(f"classes must be an int from 1 to {k} (the data set's classes), got {classes!r}")
    first = []
    for c in range(n):
        idx = (dataset.labels == c).nonzero()  # (n_c, 1)
        if len(idx) == 0:
            raise ValueError(f"class {c} ({dataset.classes[c]!r}) has no example in this data set")
        first.append(idx[0, 0].item())
    return first


def stratified_subset(dataset: ImageDataset, n_per_class: int, seed: int = 0) -> ImageDataset:
    """Exactly `n_per_class` (>= 1) examples of every class, chosen by `seed`, in an order (also from `seed`) that
    mixes the classes whatever the order of `dataset`. In a smoke run (`minivit.smoke`) a request beyond what a
    class has takes all of it, since the smoke run's splits are slivers."""
    try:
        n_per_class = None if isinstance(n_per_class, bool) else operator.index(n_per_class)
    except TypeError:
        n_per_class = None
    if n_per_class is None or n_per_class < 1:
        raise ValueError(f"n_per_class must be a positive int (images per class), got {n_per_class!r}")
    g = torch.Generator().manual_seed(seed)
    picked, capped = [], smoke.active()
    for c in range(len(dataset.classes)):
        idx = (dataset.labels == c).nonzero().squeeze(1)  # (n_c,)
        if len(idx) < n_per_class and not capped:
            raise ValueError(f"class {c} ({dataset.classes[c]!r}) has {len(idx)} examples, fewer than n_per_class={n_per_class}")
        picked.append(idx[torch.randperm(len(idx), generator=g)[:n_per_class]])
    picked = torch.cat(picked)  # (K * n_per_class,), grouped by class
    return dataset.subset(picked[torch.randperm(len(picked), generator=g)])


def make_mosaics(dataset: ImageDataset, size: int | tuple[int, int], seed: int = 0) -> ImageDataset:
    """2x2 mosaics of `dataset`'s images, labelled by the class of the **top-left** tile: a task where the position
    of a patch decides the label (notebooks 07 and 08). Mosaic i has image i top-left and three images drawn by
    `seed` elsewhere; each tile is its image resized (antialiased) to half of `size`. The same images land in the
    same places at every size for a given seed, so mosaics at 64 and at 128 px show the same content.
    (N, C, H, W) -> (N, C, size_h, size_w); labels and class names of the top-left images."""
    h, w = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
    if h < 2 or w < 2 or h % 2 or w % 2:
        raise ValueError(f"size must be even (two tiles per side), got {size!r}")
    tiles = dataset.resized((h // 2, w // 2)).images  # (N, C, h/2, w/2)
    others = torch.randint(0, len(dataset), (len(dataset), 3), generator=torch.Generator().manual_seed(seed))  # (N, 3)
    top = torch.cat([tiles, tiles[others[:, 0]]], dim=3)  # (N, C, h/2, w): top-left | top-right
    bottom = torch.cat([tiles[others[:, 1]], tiles[others[:, 2]]], dim=3)  # (N, C, h/2, w)
    return ImageDataset(torch.cat([top, bottom], dim=2).contiguous(), dataset.labels, dataset.classes, dataset.name,
                        dataset.split)  # (N, C, h, w)


def normalize(images: torch.Tensor, name: str) -> torch.Tensor:
    """uint8 (B, C, H, W) in 0..255, or float in [0, 1] -> float32 (B, C, H, W), (x - mean) / std, same device.

    mean and std are `NORMALIZATION[name]`: the per-channel statistics of data set `name`'s training split in
    [0, 1] units (ImageNet's for Imagenette). For an image of your own (a JPEG, a PIL image), resized to a
    model's input first: `minivit.preprocess`."""
    if name not in NORMALIZATION:
        raise ValueError(f"unknown data set {name!r}; expected one of {sorted(NORMALIZATION)}")
    mean, std = (torch.tensor(v, device=images.device).view(-1, 1, 1) for v in NORMALIZATION[name])  # (C, 1, 1)
    if images.dtype not in (torch.uint8, torch.float16, torch.bfloat16, torch.float32, torch.float64) or \
            images.ndim != 4 or images.shape[1] != len(mean):
        raise ValueError(f"expected uint8 or float (B, {len(mean)}, H, W) images for {name}, got {images.dtype} "
                         f"{tuple(images.shape)}")
    if images.dtype == torch.uint8:
        return (images.float() / 255 - mean) / std
    lo, hi = images.min().item(), images.max().item()
    if lo < -1e-3 or hi > 1 + 1e-3:
        looks = "normalised already" if lo < 0 else "in 0..255 (divide by 255)"
        raise ValueError(f"expected float images in [0, 1], got values in [{lo:.3g}, {hi:.3g}]: these look {looks}")
    return (images.float() - mean) / std


def fingerprint(data) -> str | None:
    """A short hash of a data set's images and labels (an ImageDataset or an (images, labels) pair), or None."""
    if data is None:
        return None
    images, labels = (data.images, data.labels) if hasattr(data, "images") else data
    h = hashlib.sha1()
    for t in (images, labels):
        h.update(str(tuple(t.shape)).encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def copy_info(name: str, split: str = "test", root=None) -> dict:
    """Which copy of data set `name` this machine reads: {"name", "split", "file" (the archive it was decoded from,
    None for torchvision's files), "origin" (see `origin`; None for a cache of an older minivit), "sha256" (of the
    course's archive when the origin is "course", else None),
    "fingerprint" (of the split's images and labels, as the zoo's records keep it)}. Loads the split (from its
    cache once decoded). Printed by 00, kept in every zoo record and benchmark JSON: outputs made on one copy are
    compared on another with the tolerance the copy allows (`minivit.zoo.COPY_SHIFT`)."""
    ds = _load_whole(name, split, root)
    split = _check_name_split(name, split)
    meta = torch.load(data_root(root) / "cache" / f"{name}-{split}.pt", weights_only=True, mmap=True)  # small entries
    file, came_from = meta.get("source"), meta.get("origin")
    archive = (sources.PUBLISHED.get(file) or sources.UNPUBLISHED.get(file)) if came_from == "course" else None
    return {"name": name, "split": split, "file": file, "origin": came_from,
            "sha256": archive.sha256 if archive else None, "fingerprint": fingerprint(ds)}


def copies_read() -> list[dict]:
    """`copy_info` of every split this process has loaded with `load_dataset` (sorted): what a benchmark's JSON
    records it measured on (benchmarks/results_io.py). A split that can no longer be described (its data root
    removed since) is listed with the reason instead, so that a long run's results are never lost to it."""
    out = []
    for root, name, split in sorted(_READ):
        try:
            out.append(copy_info(name, split, root))
        except (OSError, RuntimeError, ValueError) as e:
            out.append({"name": name, "split": split, "root": root, "error": f"{type(e).__name__}: {e}"})
    return out


_sha256 = sources.sha256  # a file's SHA-256 (hex): one helper for the data, the zoo and the offline kit


def prepare(names=None, root=None, source=None, copy=False, decode=False) -> int:
    """Link (or copy) the offline copies of `names` from `source` into the data root; fetch the course's archives
    (`minivit.sources`) of those the shared folder lacks; 0 on success (also when they are left to download)."""
    root, src, status, url = data_root(root), shared_source(source), 0, sources.base_url()
    names = names or list(SHAPES)
    for n in names:
        _check_name_split(n, "train")
    sums = {}
    if (src / "SHA256SUMS").exists():
        sums = dict(line.split()[::-1] for line in (src / "SHA256SUMS").read_text().splitlines() if line.strip())
    if not src.is_dir():
        print(f"minivit.data: no offline copies at {src}; " + (f"fetching the course's archives from {url}" if url else
              "data sets will be downloaded on first use (needs internet)."))
    if url is None and not all(_has_offline(n, src) or _has_offline(n, root) for n in names):
        print(sources.not_published())
    for n in names:
        for rel in OFFLINE_FILES[n] if src.is_dir() else ():
            s, d = src / rel, root / rel
            if d.exists():  # follows links: a dangling link counts as missing
                print(f"  {n}: {d} ok (already present)"); continue
            if not s.exists():
                print(f"  {n}: {s} missing"); continue
            if rel in sums and _sha256(s) != sums[rel]:
                print(f"  {n}: {s} FAILS its SHA256 check; not linked", file=sys.stderr); status = 1; continue
            d.parent.mkdir(parents=True, exist_ok=True)
            if d.is_symlink():
                d.unlink()
            if copy:  # through a temporary file: an interrupted copy leaves nothing that looks prepared
                shutil.copyfile(s, d.with_name(d.name + ".part")); os.replace(d.with_name(d.name + ".part"), d)
            else:
                d.symlink_to(s.resolve())
            print(f"  {n}: {'copied' if copy else 'linked'} {s} -> {d}")
        if not _has_offline(n, root):  # not in the shared folder: the course's archive, else the official files
            status |= _prepare_course(n, root, url)
        if decode and status == 0:
            for split in SPLITS:
                print(f"  {n}: {load_dataset(n, split, root)}")
    return status


def _prepare_course(name: str, root: Path, url: str | None) -> int:
    """Fetch the course's archives of `name` (when `url` is set) and say which copy `name` will use; 1 if refused."""
    e = _fetch_course(name, root) if url else None
    if url and e is None:
        print(f"  {name}: fetched the course's copy from {url} into {root} (size and SHA-256 checked)")
        return 0
    if e is not None:
        print(f"  {name}: {e}", file=sys.stderr if e.kind == "refused" else sys.stdout)
    pixels = "" if name in sources.SAME_AS_OFFICIAL else " (other pixels than the course's copy)"
    print(f"  {name}: the official files will be downloaded on first use{pixels}")
    return int(e is not None and e.kind == "refused")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minivit.data", description="Prepare the minivit data sets.")
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("prepare", help="link the offline copies into the data root (quick when done)")
    q.add_argument("names", nargs="*", help=f"data sets (default: all of {sorted(SHAPES)})")
    q.add_argument("--root", help="data root (default: $MINIVIT_DATA, <repo>/data or ~/.cache/minivit)")
    q.add_argument("--source", help="offline copies (default: $MINIVIT_SHARED_DATASETS or <repo>/../shared/datasets)")
    q.add_argument("--copy", action="store_true", help="copy the files instead of symlinking them")
    q.add_argument("--decode", action="store_true", help="also decode both splits and write the caches")
    a = p.parse_args(argv)
    print(f"minivit.data: data root {data_root(a.root)}")
    try:
        return prepare(a.names, a.root, a.source, a.copy, a.decode)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        p.exit(2, f"minivit.data: error: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
