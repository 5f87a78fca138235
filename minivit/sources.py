"""The course's own copies of its data sets, published on a GitHub release, and a checked, resumable download of them.

Introduced in 00_start_here.ipynb, whose data check loads the data sets: on a machine without the course's shared
folder (Colab, a laptop) they come from here.

The course's machines read the offline copies in `../shared/datasets/`, which `python -m minivit.data prepare` links
into the data root. The official files (torchvision's lossless CIFAR-10, fast.ai's imagenette2-160) have other pixels
and another order, so the notebooks' stored outputs and the zoo's records would not match them. This module fetches
the course's own archives instead, from release `DATA_TAG` of the course's repository:

  PUBLISHED      {file name relative to the data root: Archive(sha256, size)}, the same files as the shared folder;
                 on the release each is the asset `asset_name(rel)`: a release has no folders, so "/" becomes "-"
                 (fashion-mnist/train-images-idx3-ubyte.gz -> fashion-mnist-train-images-idx3-ubyte.gz)
  base_url()     $MINIVIT_DATA_URL (a mirror, a test server), else {repository}/releases/download/{DATA_TAG}/ with
                 the repository $MINIVIT_REPO, else `COURSE_REPO`; None while that is the placeholder (`not_published()`
                 says what to set)
  fetch(rel, dest_root)  downloads to <dest>.part (resumed with an HTTP Range request), checks the size and SHA-256,
                 then renames it into place atomically: a file that fails is refused and named, never installed

`minivit.data` uses it in `prepare` and at a first load: shared copies -> the course's archive -> the official files.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import NamedTuple

try:
    import fcntl  # a second process fetching the same file waits for the first
except ImportError:  # Windows: no lock; the SHA-256 check still refuses a file two downloads wrote into
    fcntl = None

# The course's GitHub repository: the same URL as MINIVIT_REPO in .ci/first_cell.py (tests/test_data_sources.py
# checks it). "/OWNER/" marks the placeholder, until the course is published.
COURSE_REPO = "https://github.com/OWNER/minivit"
PLACEHOLDER = "/OWNER/"
DATA_TAG = "data-v1"  # the release whose assets are the archives; a new tag for archives with other contents
TIMEOUT = 60  # seconds a connection may wait for a byte before the download counts as failed


class Archive(NamedTuple):
    sha256: str  # hex digest of the file
    size: int  # bytes


PUBLISHED = {  # from ../shared/datasets/SHA256SUMS
    "cifar10-jpeg.tar.gz": Archive("12b07ce5e9968968d3c508f8381c1c150ee28824d31994eb0a25f131c9dc71c3", 19_633_791),
    "imagenette-128-webp.tar.gz": Archive("bdcf12093b723be26f012e0e18bb741476e2f19365f3b514f1c5ea5a0940e7b3",
                                          45_945_512),
    "fashion-mnist/train-images-idx3-ubyte.gz": Archive(
        "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7", 26_421_856),
    "fashion-mnist/train-labels-idx1-ubyte.gz": Archive(
        "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056", 29_491),
    "fashion-mnist/t10k-images-idx3-ubyte.gz": Archive(
        "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa", 4_422_079),
    "fashion-mnist/t10k-labels-idx1-ubyte.gz": Archive(
        "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05", 5_125),
}
# The course's JPEG Imagenette (quality 90) is on the shared folders but not published: wherever the WebP copy is
# present minivit.data reads the WebP one, so the notebooks' outputs were made on WebP pixels, and a fetched JPEG
# copy would be 81 MB that no load reads. It still counts as the course's copy where a shared folder links it.
UNPUBLISHED = {"imagenette-128.tar.gz": Archive("fe974f5648e6e5ba9a74da11447d89f00549f177a7bc7fdfa8fd655cb2407a46",
                                                81_083_263)}
# Data sets whose course copy holds the official contents (Fashion-MNIST: the original IDX data, other .gz
# wrappers): the official files give the same pixels in the same order.
SAME_AS_OFFICIAL = ("fashion-mnist",)


class FetchError(RuntimeError):
    """The course's archive was not fetched. The message is one paragraph: what, why, what to do. `kind` is
    "not-published" (the URL is the placeholder), "unreachable" (offline, a timeout, an HTTP error, an interrupted
    transfer) or "refused" (the server's file is not the course's, or a file of another content is in the way)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def course_repo() -> str:
    """The course's GitHub repository: $MINIVIT_REPO, else `COURSE_REPO`."""
    return (os.environ.get("MINIVIT_REPO") or COURSE_REPO).rstrip("/")


def base_url() -> str | None:
    """The folder URL of the archives (ends with "/"), or None while the repository is the placeholder."""
    if os.environ.get("MINIVIT_DATA_URL"):
        return os.environ["MINIVIT_DATA_URL"].rstrip("/") + "/"
    repo = course_repo()
    return None if PLACEHOLDER in repo else f"{repo}/releases/download/{DATA_TAG}/"


def not_published() -> str:
    """The one sentence said while the archives have no address."""
    return (f"minivit: the course's data archives have no address yet (its repository is the placeholder "
            f"{course_repo()}): set the environment variable MINIVIT_REPO to the course's GitHub repository, or "
            "MINIVIT_DATA_URL to a folder URL that holds its archives (maintainers: COURSE_REPO in minivit/sources.py, "
            "with MINIVIT_REPO in .ci/first_cell.py); until then the official files are used.")


def asset_name(rel: str) -> str:
    """The release asset of file `rel`: its path with "/" as "-" (release assets have no folders)."""
    return rel.replace("/", "-")


def sha256(path) -> str:
    """The SHA-256 (hex) of the file at `path`, read in 1-MiB blocks: the one file hash of minivit (the data
    archives, the zoo's weights, the offline kit)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_course_copy(path, rel: str) -> bool:
    """Whether `path` is the course's file `rel` (published or not): its size, then its SHA-256, match."""
    want, path = {**PUBLISHED, **UNPUBLISHED}.get(rel), Path(path)
    return want is not None and path.is_file() and path.stat().st_size == want.size and sha256(path) == want.sha256


def fetch(rel: str, dest_root, timeout: float = TIMEOUT) -> Path:
    """Download the course's archive `rel` (a key of `PUBLISHED`) to dest_root/rel and return that path.

    Already there and the course's: returned as it is. The bytes go to <dest>.part; a .part left by an interrupted
    transfer is resumed (a Range request; from byte 0 when the server ignores it). The size and SHA-256 are checked
    before an atomic `os.replace`. Raises `FetchError`: a wrong file is refused and named and its .part removed; an
    interrupted transfer keeps its .part for the next call; a refused call leaves the destination as it found it."""
    if rel not in PUBLISHED:
        raise ValueError(f"{rel!r} is not one of the course's published archives; expected one of {sorted(PUBLISHED)}")
    want, dest = PUBLISHED[rel], Path(dest_root).expanduser() / rel
    if dest.exists():
        return _existing(dest, rel)
    base = base_url()
    if base is None:
        raise FetchError(not_published(), "not-published")
    url = base + urllib.parse.quote(asset_name(rel))
    made = [p for p in reversed(dest.parents) if not p.exists()]  # folders this call creates (removed if it fails)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        if dest.exists():  # another process fetched it while this one waited
            _drop_if_empty(fd, part)
            return _existing(dest, rel)
        with os.fdopen(fd, "r+b", closefd=False) as f:
            _transfer(url, f, rel, part, dest, timeout)
            f.flush()
            os.fsync(f.fileno())
        if sha256(part) != want.sha256:
            part.unlink()
            raise _refused(url, rel, part, "its SHA-256 differs")
        os.replace(part, dest)
        return dest
    except BaseException:
        _drop_if_empty(fd, part)
        for folder in reversed(made):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise
    finally:
        os.close(fd)


def _transfer(url, f, rel: str, part: Path, dest: Path, timeout):
    """Append the rest of `url` to the open .part `f` until it holds the size of the course's `rel`."""
    want = PUBLISHED[rel]
    have = f.seek(0, os.SEEK_END)
    if have > want.size:  # longer than the file can be: not a start of it
        f.truncate(0)
        have = 0
    if have == want.size:
        return
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            if have and r.status != 206:  # the server ignored the Range header: it sends the whole file
                f.truncate(0)
                have = f.seek(0)
            while chunk := r.read(1 << 20):
                if have + len(chunk) > want.size:
                    part.unlink()
                    raise _refused(url, rel, part, f"it is longer than {want.size:,} bytes")
                f.write(chunk)
                have += len(chunk)
    except urllib.error.HTTPError as e:
        if e.code == 416:  # the .part already holds more than the server's file: another file
            part.unlink()
            raise _refused(url, rel, part, f"it is shorter than the {have:,} bytes already fetched") from e
        raise FetchError(f"{url} answered HTTP {e.code} ({e.reason}): the course's archive is not there. Check that "
                         f"release {DATA_TAG} holds the asset {url.rsplit('/', 1)[1]} (docs/instructors.md, "
                         "\"Publishing the course's data\") or that MINIVIT_DATA_URL names the right folder.",
                         "unreachable") from e
    except (OSError, http.client.HTTPException) as e:  # URLError, refused, reset, timeout, a broken response
        if have == 0:
            reason = getattr(e, "reason", None) or e
            raise FetchError(f"could not fetch the course's archive {url} ({type(e).__name__}: {reason}): this "
                             "machine looks offline, or the server does not answer, or the address is wrong (it "
                             "comes from MINIVIT_DATA_URL, else MINIVIT_REPO, else minivit.sources.COURSE_REPO). "
                             f"Connect and run `python -m minivit.data prepare` again, or put the file at {dest} "
                             "yourself.", "unreachable") from e
        raise _interrupted(url, have, want, part, f"{type(e).__name__}: {e}") from e
    if have < want.size:
        raise _interrupted(url, have, want, part, "the connection closed early")


def _interrupted(url, have, want, part, why) -> FetchError:
    return FetchError(f"the download of {url} stopped at {have:,} of {want.size:,} bytes ({why}); the bytes so far "
                      f"are kept in {part}, and the next `python -m minivit.data prepare` (or load) resumes from "
                      "there.", "unreachable")


def _refused(url, rel, part, why) -> FetchError:
    return FetchError(f"the file at {url} is not the course's {rel}: {why}. It was refused ({part} removed) and "
                      "nothing was installed; the release (or the mirror in MINIVIT_DATA_URL) holds another file: "
                      "upload the archive again (docs/instructors.md) or use another mirror.", "refused")


def _existing(dest: Path, rel: str) -> Path:
    if is_course_copy(dest, rel):
        return dest
    raise FetchError(f"{dest} is there but is not the course's {rel} (its size or SHA-256 differ); it was left as "
                     "it is: delete it to fetch the course's copy.", "refused")


def _drop_if_empty(fd, part: Path):
    """Remove `part` when it is the empty file this call opened (nothing fetched, nothing to resume)."""
    try:
        st = os.stat(part)
    except FileNotFoundError:
        return
    if st.st_ino == os.fstat(fd).st_ino and st.st_size == 0:
        part.unlink()
