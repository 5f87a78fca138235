"""minivit.sources (the course's published archives) and its use in minivit.data, against a real HTTP server on
127.0.0.1 that serves small synthetic archives in the course's layout (their hashes patched into PUBLISHED)."""

import gzip
import hashlib
import http.server
import io
import re
import socket
import tarfile
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from minivit import data, sources
from minivit.data import load_dataset

REPO = Path(__file__).resolve().parents[1]
CIFAR = "cifar10-jpeg.tar.gz"
FASHION = list(data.OFFLINE_FILES["fashion-mnist"])


# ---------------------------------------------------------------- synthetic archives
def _jpeg(value, size=(32, 32)) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((*size, 3), value % 256, dtype=np.uint8)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def _tar(members: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tf.addfile(info, io.BytesIO(payload))
    return buf.getvalue()


def _cifar() -> bytes:  # 3 classes x 4 images per split; big enough (tens of kB) to be cut in half
    return _tar({f"cifar10/{s}/{c}/{i:04d}.jpg": _jpeg(40 * k + 10 * i) + bytes(2000)
                 for s in ("train", "test") for k, c in enumerate(("airplane", "bird", "cat")) for i in range(4)})


def _fashion() -> dict:
    rng, out = np.random.default_rng(0), {}
    for p in ("train", "t10k"):
        for kind, arr in (("images", rng.integers(0, 256, (20, 28, 28))), ("labels", np.arange(20) % 10)):
            raw = bytes([0, 0, 8, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
            out[f"fashion-mnist/{p}-{kind}-idx{3 if kind == 'images' else 1}-ubyte.gz"] = gzip.compress(
                raw + arr.astype(np.uint8).tobytes())
    return out


def _official_imagenette() -> bytes:  # fast.ai's layout: imagenette2-160/{train,val}/<wnid>/*.JPEG, 160 px
    return _tar({f"imagenette2-160/{s}/{w}/img{i}.JPEG": _jpeg(100 * k + 20 * i, (160, 213))
                 for s in ("train", "val") for k, w in enumerate(("n01440764", "n03888257")) for i in range(2)})


def _publish(monkeypatch, files: dict) -> dict:
    """Make `files` {rel: bytes} the course's published archives; returns {asset name: bytes} to serve."""
    for rel, blob in files.items():
        monkeypatch.setitem(sources.PUBLISHED, rel, sources.Archive(hashlib.sha256(blob).hexdigest(), len(blob)))
    return {sources.asset_name(rel): blob for rel, blob in files.items()}


# ---------------------------------------------------------------- a real HTTP server
class Server:
    """A ThreadingHTTPServer on 127.0.0.1. mode: "range" (honours Range), "ignore" (always the whole file),
    "drop" (the first request of each file sends half of it, then closes the connection; later ones honour Range).
    `requests` lists (path, Range header or None)."""

    def __init__(self, files: dict, mode="range"):
        self.files, self.mode, self.requests, self.dropped = dict(files), mode, [], set()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                name, rng = self.path.lstrip("/").split("/")[-1], self.headers.get("Range")
                server.requests.append((self.path, rng))
                blob = server.files.get(name)
                if blob is None:
                    self.send_error(404)
                    return
                start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1)) if rng and server.mode != "ignore" else 0
                if start >= len(blob) and rng:
                    self.send_error(416)
                    return
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(blob) - 1}/{len(blob)}")
                self.send_header("Content-Length", str(len(blob) - start))
                self.end_headers()
                if server.mode == "drop" and name not in server.dropped:
                    server.dropped.add(name)
                    self.wfile.write(blob[start:start + (len(blob) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(blob[start:])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/data-v1/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve(monkeypatch):
    """serve(files {asset: bytes}, mode) -> a Server, with MINIVIT_DATA_URL pointing at it."""
    started = []

    def start(files, mode="range"):
        s = Server(files, mode)
        started.append(s)
        monkeypatch.setenv("MINIVIT_DATA_URL", s.url)
        return s
    yield start
    for s in started:
        s.close()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/data-v1/"  # nothing listens there now: connection refused


def _tree(folder: Path) -> list:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


# ---------------------------------------------------------------- fetch
def test_good_fetch_is_checked_and_lands_whole(tmp_path, monkeypatch, serve):
    blob = _cifar()
    server = serve(_publish(monkeypatch, {CIFAR: blob}))
    dest = sources.fetch(CIFAR, tmp_path)
    assert dest == tmp_path / CIFAR and dest.read_bytes() == blob and dest.stat().st_mode & 0o644 == 0o644
    assert _tree(tmp_path) == [CIFAR]  # no .part left
    assert server.requests == [(f"/data-v1/{CIFAR}", None)]
    assert sources.fetch(CIFAR, tmp_path) == dest and len(server.requests) == 1  # there and checked: not fetched


def test_resume_after_a_dropped_connection_continues_from_the_part(tmp_path, monkeypatch, serve):
    blob = _cifar()
    server = serve(_publish(monkeypatch, {CIFAR: blob}), mode="drop")
    with pytest.raises(sources.FetchError) as e:
        sources.fetch(CIFAR, tmp_path)
    part = tmp_path / (CIFAR + ".part")
    assert e.value.kind == "unreachable" and "stopped at" in str(e.value) and str(part) in str(e.value)
    assert _tree(tmp_path) == [CIFAR + ".part"] and part.read_bytes() == blob[:len(blob) // 2]  # nothing prepared
    assert data.availability("cifar10", root=tmp_path, source=tmp_path / "nowhere") == "download"
    sources.fetch(CIFAR, tmp_path)
    assert server.requests[1] == (f"/data-v1/{CIFAR}", f"bytes={len(blob) // 2}-")
    assert (tmp_path / CIFAR).read_bytes() == blob and _tree(tmp_path) == [CIFAR]


def test_a_server_that_ignores_range_restarts_from_zero(tmp_path, monkeypatch, serve):
    blob = _cifar()
    server = serve(_publish(monkeypatch, {CIFAR: blob}), mode="ignore")
    (tmp_path / (CIFAR + ".part")).write_bytes(b"x" * 1000)  # a start that is not the file's: must be dropped
    sources.fetch(CIFAR, tmp_path)
    assert server.requests == [(f"/data-v1/{CIFAR}", "bytes=1000-")]
    assert (tmp_path / CIFAR).read_bytes() == blob and _tree(tmp_path) == [CIFAR]


@pytest.mark.parametrize("bad", ["one byte changed", "longer"])
def test_a_corrupt_file_is_refused_named_and_leaves_nothing(tmp_path, monkeypatch, serve, bad):
    blob = _cifar()
    assets = _publish(monkeypatch, {CIFAR: blob, FASHION[0]: blob})
    wrong = blob[:100] + bytes([blob[100] ^ 1]) + blob[101:] if bad == "one byte changed" else blob + b"extra"
    serve({**assets, CIFAR: wrong, sources.asset_name(FASHION[0]): wrong})
    for rel in (CIFAR, FASHION[0]):  # FASHION[0]: in a folder this call creates, removed again
        with pytest.raises(sources.FetchError) as e:
            sources.fetch(rel, tmp_path)
        assert e.value.kind == "refused" and rel in str(e.value) and "not the course's" in str(e.value)
    assert _tree(tmp_path) == []


def test_a_wrong_file_in_the_way_is_named_and_left_alone(tmp_path, monkeypatch, serve):
    server = serve(_publish(monkeypatch, {CIFAR: _cifar()}))
    (tmp_path / CIFAR).write_bytes(b"mine")
    with pytest.raises(sources.FetchError, match="is there but is not the course's") as e:
        sources.fetch(CIFAR, tmp_path)
    assert e.value.kind == "refused" and (tmp_path / CIFAR).read_bytes() == b"mine" and _tree(tmp_path) == [CIFAR]
    assert server.requests == []
    with pytest.raises(ValueError, match="not one of the course's published archives"):
        sources.fetch("mnist.tar.gz", tmp_path)


def test_unreachable_is_one_paragraph_and_leaves_nothing(tmp_path, monkeypatch):
    url = _closed_port_url()
    monkeypatch.setenv("MINIVIT_DATA_URL", url)
    with pytest.raises(sources.FetchError) as e:
        sources.fetch(FASHION[0], tmp_path)
    msg = str(e.value)
    assert e.value.kind == "unreachable" and "\n" not in msg and url + sources.asset_name(FASHION[0]) in msg
    assert "offline" in msg and "prepare" in msg and _tree(tmp_path) == []


def test_unreachable_course_falls_back_to_the_official_download_and_the_error_names_both(tmp_path, monkeypatch,
                                                                                      serve):
    course = _closed_port_url()
    monkeypatch.setattr(data, "IMAGENETTE_URL", _closed_port_url() + "imagenette2-160.tgz")
    monkeypatch.setenv("MINIVIT_DATA_URL", course)
    with pytest.warns(UserWarning, match="could not fetch the course's archive"), \
            pytest.raises(FileNotFoundError) as e:
        load_dataset("imagenette", "train", root=tmp_path)
    assert course + "imagenette-128-webp.tar.gz" in str(e.value) and data.IMAGENETTE_URL in str(e.value)
    # the official archive answers: it is used, said to have other pixels, and recorded as "official"
    official = serve({"imagenette2-160.tgz": _official_imagenette()})
    monkeypatch.setattr(data, "IMAGENETTE_URL", official.url + "imagenette2-160.tgz")
    monkeypatch.setenv("MINIVIT_DATA_URL", course)
    with pytest.warns(UserWarning) as said:
        ds = load_dataset("imagenette", "train", root=tmp_path)
    text = " ".join(str(w.message) for w in said)
    assert "could not fetch the course's archive" in text and "other pixels than the course's copy" in text
    assert ds.images.shape == (4, 3, 128, 128) and data.origin("imagenette", tmp_path, "train") == "official"


def test_download_false_fetches_nothing(tmp_path, monkeypatch, serve):
    server = serve(_publish(monkeypatch, {CIFAR: _cifar()}))
    with pytest.raises(FileNotFoundError, match="download=False"):
        load_dataset("cifar10", "train", root=tmp_path, download=False)
    assert server.requests == [] and _tree(tmp_path) == []


# ---------------------------------------------------------------- the URL
def test_placeholder_url_says_one_sentence_then_the_official_sources(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MINIVIT_DATA_URL", raising=False)
    monkeypatch.delenv("MINIVIT_REPO", raising=False)
    assert sources.PLACEHOLDER in sources.COURSE_REPO and sources.base_url() is None
    with pytest.raises(sources.FetchError) as e:
        sources.fetch(CIFAR, tmp_path)
    sentence = sources.not_published()
    assert e.value.kind == "not-published" and str(e.value) == sentence and _tree(tmp_path) == []
    assert sentence.count(". ") == 0 and "MINIVIT_REPO" in sentence and "MINIVIT_DATA_URL" in sentence
    assert data.prepare(["cifar10", "fashion-mnist"], root=tmp_path, source=tmp_path / "nowhere") == 0
    out = capsys.readouterr()
    assert out.out.count(sentence) == 1 and "Traceback" not in out.out + out.err
    assert "cifar10: the official files will be downloaded on first use (other pixels" in out.out
    assert "fashion-mnist: the official files will be downloaded on first use\n" in out.out


def test_base_url_from_the_repository_or_the_override(monkeypatch):
    monkeypatch.delenv("MINIVIT_DATA_URL", raising=False)
    monkeypatch.setenv("MINIVIT_REPO", "https://github.com/someone/minivit/")
    assert sources.base_url() == f"https://github.com/someone/minivit/releases/download/{sources.DATA_TAG}/"
    monkeypatch.setenv("MINIVIT_DATA_URL", "http://mirror.example/minivit")
    assert sources.base_url() == "http://mirror.example/minivit/"
    assert sources.asset_name("fashion-mnist/t10k-labels-idx1-ubyte.gz") == "fashion-mnist-t10k-labels-idx1-ubyte.gz"


def test_course_repo_is_the_colab_cells_setting():
    cell = (REPO / ".ci" / "first_cell.py").read_text()
    assert re.search(r'^MINIVIT_REPO = "([^"]*)"', cell, re.M).group(1) == sources.COURSE_REPO


# ---------------------------------------------------------------- minivit.data
def test_prepare_without_a_shared_folder_fetches_into_the_root(tmp_path, monkeypatch, serve, capsys):
    files = {CIFAR: _cifar(), **_fashion()}
    server = serve(_publish(monkeypatch, files))
    root = tmp_path / "root"
    assert data.prepare(["cifar10", "fashion-mnist"], root=root, source=tmp_path / "nowhere") == 0
    out = capsys.readouterr().out
    assert "cifar10: fetched the course's copy" in out and "fashion-mnist: fetched the course's copy" in out
    assert sorted(p for p, _ in server.requests) == sorted(f"/data-v1/{sources.asset_name(r)}" for r in files)
    assert all((root / rel).read_bytes() == blob for rel, blob in files.items())
    assert data.availability("cifar10", root=root, source=tmp_path / "nowhere") == "prepared"
    assert data.origin("cifar10", root) is None  # not decoded yet
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the course's copy: no warning
        assert len(load_dataset("cifar10", "test", root=root)) == 12
        load_dataset("fashion-mnist", "train", root=root)
    assert data.origin("cifar10", root) == "course" and data.origin("fashion-mnist", root, "train") == "course"
    assert data.prepare(["cifar10"], root=root, source=tmp_path / "nowhere") == 0 and len(server.requests) == 5


def test_first_load_fetches_the_course_archive(tmp_path, monkeypatch, serve):
    serve(_publish(monkeypatch, {CIFAR: _cifar()}))
    ds = load_dataset("cifar10", "train", root=tmp_path)
    assert len(ds) == 12 and (tmp_path / CIFAR).is_file() and data.origin("cifar10", tmp_path) == "course"


def test_prepare_refuses_a_corrupt_course_file(tmp_path, monkeypatch, serve, capsys):
    assets = _publish(monkeypatch, {CIFAR: _cifar()})
    serve({name: blob[::-1] for name, blob in assets.items()})
    assert data.prepare(["cifar10"], root=tmp_path, source=tmp_path / "nowhere") == 1
    assert "not the course's cifar10-jpeg.tar.gz" in capsys.readouterr().err and _tree(tmp_path) == []


def test_origin_local_for_an_archive_that_is_not_the_courses_and_rebuilt_when_the_course_copy_comes(
        tmp_path, monkeypatch):
    monkeypatch.setenv("MINIVIT_DATA_URL", _closed_port_url())
    (tmp_path / CIFAR).write_bytes(_cifar())  # same layout, not the published bytes
    with pytest.warns(UserWarning, match="decoded from local files: other pixels than the course's copy"):
        load_dataset("cifar10", "test", root=tmp_path)
    assert data.origin("cifar10", tmp_path, "test") == "local" and data.origin("cifar10", tmp_path, "train") is None
    # Fashion-MNIST in torchvision's layout, then the course's files: the cache is rebuilt from the course's copy
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    files = _fashion()
    for rel, blob in files.items():
        (raw / Path(rel).name).write_bytes(blob)
    load_dataset("fashion-mnist", "test", root=tmp_path)
    assert data.origin("fashion-mnist", tmp_path, "test") == "local"
    _publish(monkeypatch, files)
    for rel, blob in files.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_bytes(blob)
    load_dataset("fashion-mnist", "test", root=tmp_path)
    assert data.origin("fashion-mnist", tmp_path, "test") == "course"


# ---------------------------------------------------------------- the published table
SUMS = REPO.parent / "shared" / "datasets" / "SHA256SUMS"


@pytest.mark.skipif(not SUMS.exists(), reason=f"no {SUMS} on this machine")
def test_published_hashes_and_sizes_are_the_shared_folders():
    sums = dict(line.split()[::-1] for line in SUMS.read_text().splitlines() if line.strip())
    known = {**sources.PUBLISHED, **sources.UNPUBLISHED}
    assert {rel: a.sha256 for rel, a in known.items()} == sums
    for rel, a in known.items():
        if (SUMS.parent / rel).exists():
            assert (SUMS.parent / rel).stat().st_size == a.size, rel
    assert set(sources.PUBLISHED) <= {f for files in data.OFFLINE_FILES.values() for f in files}
