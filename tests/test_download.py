"""Data download layer: checksums, retries, resume, atomic writes, archives, mirror, TOFU."""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import re
import socket
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rnnrepro.data import download, sources
from rnnrepro.data.download import (
    ChecksumError,
    DataUnavailable,
    DownloadError,
    UnsafePickleError,
    check_plain_pickle,
    fetch,
    load_plain_pickle,
    partial_path,
    write_syneval_tsv,
)
from rnnrepro.data.sources import Source
from rnnrepro.scripts import fetch_data

SHARED = Path("/work/shared/data")
FAST = dict(retries=2, backoff=0.0, timeout=5.0)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(directory: Path) -> list[str]:
    """Temporary or partial files left in ``directory`` (recursively)."""
    if not directory.exists():
        return []
    return [p.name for p in directory.rglob("*") if p.name.endswith(".part")]


# ----------------------------------------------------------------------------- loopback server


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server API)
        self.server.hits[self.path] = self.server.hits.get(self.path, 0) + 1
        self.server.ranges.setdefault(self.path, []).append(self.headers.get("Range"))
        route = self.server.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        route(self, self.server.hits[self.path])

    def log_message(self, *args):
        pass

    def send_body(self, body: bytes, length: int | None = None, status: int = 200):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def send_ranged(self, body: bytes, limit: int | None = None):
        """Answer ``Range: bytes=N-`` with 206 (416 past the end), else 200 with the whole body;
        stop after ``limit`` bytes of the body (the connection closes early)."""
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        start = int(match[1]) if match else 0
        if match and start >= len(body):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.close_connection = True
            return
        self.send_response(206 if match else 200)
        if match:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        self.wfile.write(body[start:][:limit])
        self.wfile.flush()
        self.close_connection = True


def ok(body: bytes):
    return lambda h, hit: h.send_body(body)


def truncated(body: bytes, extra: int = 100):
    return lambda h, hit: h.send_body(body, length=len(body) + extra)


def ranged(body: bytes, cut: int | None = None):
    """Range support; the first answer closes the connection after ``cut`` bytes."""
    return lambda h, hit: h.send_ranged(body, cut if hit == 1 else None)


def no_range(body: bytes, cut: int):
    """Always 200 with the whole body (Range ignored); the first answer stops after ``cut``."""
    return lambda h, hit: h.send_body(body[:cut] if hit == 1 else body, length=len(body))


def failing(times: int, body: bytes, status: int = 503):
    def route(h, hit):
        if hit <= times:
            h.send_error(status)
        else:
            h.send_body(body)

    return route


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.routes, httpd.hits, httpd.ranges = {}, {}, {}
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/data/file.txt"


@pytest.fixture
def toy(monkeypatch):
    """Register ``toy/<name>`` entries for the duration of a test."""
    entries: dict[str, Source] = {}
    monkeypatch.setitem(sources.REGISTRY, "toy", entries)

    def add(name: str, **fields) -> Source:
        fields.setdefault("sha256", None)
        fields.setdefault("mirror_path", f"toy/{name}")
        entries[name] = Source("toy", name, **fields)
        return entries[name]

    return add


def quiet(*_):
    pass


# ----------------------------------------------------------------------------- downloads


def fetch_url(toy, url: str, dest: Path, sha256: str | None, **kwargs) -> Path:
    """``fetch`` of a toy entry named ``dest.name`` that downloads ``url`` (with ``sha256``):
    the HTTP path, its checksums, retries and resume."""
    toy(dest.name, sha256=sha256, url=url)
    return fetch("toy", dest.name, dest, **kwargs)


def test_download_ok(server, tmp_path, toy):
    body = b"hello world\n"
    server.routes["/a.txt"] = ok(body)
    dest = fetch_url(toy, f"{server.url}/a.txt", tmp_path / "d" / "a.txt", sha(body), log=quiet)
    assert dest.read_bytes() == body
    assert leftovers(tmp_path) == []


def test_wrong_bytes_raise_checksum_error_and_leave_nothing(server, tmp_path, toy):
    good, bad = b"the right content\n", b"the wrong content\n"
    server.routes["/a.txt"] = ok(bad)
    dest = tmp_path / "d" / "a.txt"
    with pytest.raises(ChecksumError) as info:
        fetch_url(toy, f"{server.url}/a.txt", dest, sha(good), log=quiet, **FAST)
    msg = str(info.value)
    assert "a.txt" in msg and sha(good) in msg and sha(bad) in msg and server.url in msg
    assert not dest.exists()
    assert [p.name for p in dest.parent.iterdir()] == [".a.txt.lock"]  # partial file deleted


def test_truncated_body_retried_then_clear_error(server, tmp_path, toy):
    server.routes["/t.txt"] = truncated(b"0123456789" * 10)
    dest = tmp_path / "d" / "t.txt"
    with pytest.raises(DownloadError, match="truncated") as info:
        fetch_url(toy, f"{server.url}/t.txt", dest, None, log=quiet, **FAST)
    assert "after 3 attempts" in str(info.value) and "data_mirror" in str(info.value)
    assert server.hits["/t.txt"] == 3
    assert server.ranges["/t.txt"] == [None, "bytes=100-", "bytes=100-"]  # Range ignored
    assert not dest.exists() and leftovers(dest.parent) == [".t.txt.part"]  # kept to resume
    assert partial_path(dest).read_bytes() == b"0123456789" * 10


def test_503_twice_then_success(server, tmp_path, toy):
    body = b"eventually\n"
    server.routes["/r.txt"] = failing(2, body)
    messages: list[str] = []
    dest = fetch_url(
        toy, f"{server.url}/r.txt", tmp_path / "r.txt", sha(body), log=messages.append, **FAST
    )
    assert dest.read_bytes() == body
    assert server.hits["/r.txt"] == 3
    # count the retry messages only: the URL in other messages may hold "503" in its port
    assert sum("503" in m and "retry" in m for m in messages) == 2


def test_404_is_not_retried(server, tmp_path, toy):
    with pytest.raises(DownloadError, match="404"):
        fetch_url(toy, f"{server.url}/missing", tmp_path / "m", None, log=quiet, **FAST)
    assert server.hits["/missing"] == 1
    assert leftovers(tmp_path) == [] and not (tmp_path / "m").exists()


# ----------------------------------------------------------------------------- resume and progress

BIG = bytes(range(256)) * 1024  # 262,144 bytes
K = 100_000


def watching(dest: Path, messages: list[str]):
    """A ``log`` that records messages and fails if ``dest`` exists unverified meanwhile."""

    def log(message: str):
        messages.append(message)
        assert not dest.exists() or dest.read_bytes() == BIG

    return log


def test_resume_after_connection_closed_early(server, tmp_path, toy):
    server.routes["/big.bin"] = ranged(BIG, cut=K)
    dest, messages = tmp_path / "d" / "big.bin", []
    fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=watching(dest, messages), **FAST)
    assert dest.read_bytes() == BIG
    assert server.ranges["/big.bin"] == [None, f"bytes={K}-"]
    assert any("truncated body (100000 of 262144 bytes)" in m for m in messages)
    assert any("resuming at 0.1 MB" in m for m in messages)
    assert leftovers(tmp_path) == []


def test_resume_partial_file_left_by_killed_process(server, tmp_path, toy):
    toy("big.bin", sha256=sha(BIG), url=f"{server.url}/big.bin")
    server.routes["/big.bin"] = ranged(BIG)
    dest = tmp_path / "downloads" / "toy" / "big.bin"
    dest.parent.mkdir(parents=True)
    partial_path(dest).write_bytes(BIG[:K])
    fetch("toy", "big.bin", dest, log=watching(dest, []), **FAST)
    assert dest.read_bytes() == BIG
    assert server.ranges["/big.bin"] == [f"bytes={K}-"]
    assert leftovers(tmp_path) == []


def test_server_ignoring_range_restarts_from_zero(server, tmp_path, toy):
    server.routes["/big.bin"] = no_range(BIG, cut=K)
    dest, messages = tmp_path / "d" / "big.bin", []
    fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=watching(dest, messages), **FAST)
    assert dest.read_bytes() == BIG  # not the first K bytes twice
    assert server.ranges["/big.bin"] == [None, f"bytes={K}-"]
    assert any("ignored the range request" in m for m in messages)
    assert leftovers(tmp_path) == []


def test_corrupt_partial_file_is_deleted_and_downloaded_again(server, tmp_path, toy):
    """A resumed transfer that fails its checksum is downloaded once more from zero."""
    server.routes["/big.bin"] = ranged(BIG)
    dest, messages = tmp_path / "d" / "big.bin", []
    dest.parent.mkdir()
    partial_path(dest).write_bytes(b"x" * K)
    fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=watching(dest, messages), **FAST)
    assert dest.read_bytes() == BIG
    assert server.ranges["/big.bin"] == [f"bytes={K}-", None]
    assert any("sha256 mismatch after resuming" in m for m in messages)
    assert leftovers(tmp_path) == []


def test_checksum_error_after_resume_leaves_nothing_to_resume(server, tmp_path, toy):
    bad = b"y" + BIG[1:]
    server.routes["/big.bin"] = ranged(bad)
    dest = tmp_path / "d" / "big.bin"
    dest.parent.mkdir()
    partial_path(dest).write_bytes(b"x" * K)
    with pytest.raises(ChecksumError):
        fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=watching(dest, []), **FAST)
    assert server.ranges["/big.bin"] == [f"bytes={K}-", None]  # only one download from zero
    assert not dest.exists() and leftovers(tmp_path) == []
    server.routes["/big.bin"] = ranged(BIG)
    fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=quiet, **FAST)
    assert dest.read_bytes() == BIG and server.ranges["/big.bin"][2:] == [None]


@pytest.mark.parametrize("complete", [True, False])
def test_416_checks_the_partial_file(server, tmp_path, toy, complete):
    server.routes["/big.bin"] = ranged(BIG)
    dest = tmp_path / "d" / "big.bin"
    dest.parent.mkdir()
    partial_path(dest).write_bytes(BIG if complete else BIG[:-1] + b"!")
    fetch_url(toy, f"{server.url}/big.bin", dest, sha(BIG), log=watching(dest, []), **FAST)
    assert dest.read_bytes() == BIG
    expected = [f"bytes={len(BIG)}-"] + ([] if complete else [None])
    assert server.ranges["/big.bin"] == expected
    assert leftovers(tmp_path) == []


def test_partial_file_without_digest_is_not_resumed(server, tmp_path, toy):
    toy("big.bin", url=f"{server.url}/big.bin")  # trust on first use: stale bytes undetectable
    server.routes["/big.bin"] = ranged(BIG)
    dest = tmp_path / "downloads" / "toy" / "big.bin"
    dest.parent.mkdir(parents=True)
    partial_path(dest).write_bytes(b"x" * K)
    fetch("toy", "big.bin", dest, log=quiet, **FAST)
    assert dest.read_bytes() == BIG and server.ranges["/big.bin"] == [None]


def test_progress_lines(server, tmp_path, toy, monkeypatch):
    def slow(h, hit):
        h.send_response(200)
        h.send_header("Content-Length", str(len(BIG)))
        h.end_headers()
        for i in range(0, len(BIG), K):
            h.wfile.write(BIG[i : i + K])
            h.wfile.flush()
            time.sleep(0.05)
        h.close_connection = True

    server.routes["/big.bin"] = slow
    url = f"{server.url}/big.bin"
    messages: list[str] = []
    fetch_url(toy, url, tmp_path / "a.bin", sha(BIG), log=messages.append, **FAST)
    progress = [m for m in messages if " MB (" in m]
    assert progress == ["toy/a.bin: 0.3 of 0.3 MB (100%)"]  # within 5 s: the final line only

    monkeypatch.setattr(download, "PROGRESS_EVERY", 0.0)
    messages.clear()
    fetch_url(toy, url, tmp_path / "b.bin", sha(BIG), log=messages.append, **FAST)
    progress = [m for m in messages if " MB (" in m]
    assert len(progress) >= 3 and progress[-1] == "toy/b.bin: 0.3 of 0.3 MB (100%)"
    first = re.fullmatch(r"toy/b\.bin: 0\.\d of 0\.3 MB \((\d+)%\)", progress[0])
    assert first and int(first[1]) < 100


# ----------------------------------------------------------------------------- fetch over HTTP


def test_fetch_plain_url_and_existing_dest(server, tmp_path, toy):
    body = b"a b c\n"
    toy("a.txt", sha256=sha(body), url=f"{server.url}/a.txt")
    server.routes["/a.txt"] = ok(body)
    dest = tmp_path / "downloads" / "toy" / "a.txt"
    assert fetch("toy", "a.txt", dest, log=quiet, **FAST).read_bytes() == body
    fetch("toy", "a.txt", dest, log=quiet, **FAST)  # verified copy kept, no new request
    assert server.hits["/a.txt"] == 1


def make_tgz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_fetch_tgz_member_cached_archive(server, tmp_path, toy):
    train, valid = b"t r a i n\n", b"v a l i d\n"
    archive = make_tgz({"./pkg/data/x.train.txt": train, "./pkg/data/x.valid.txt": valid})
    server.routes["/pkg.tgz"] = ok(archive)
    url = f"{server.url}/pkg.tgz"
    toy("train.txt", sha256=sha(train), url=url, member="./pkg/data/x.train.txt")
    toy("valid.txt", sha256=sha(valid), url=url, member="pkg/data/x.valid.txt")  # no "./"
    root = tmp_path / "downloads"
    assert fetch("toy", "train.txt", root / "toy" / "train.txt", log=quiet).read_bytes() == train
    assert fetch("toy", "valid.txt", root / "toy" / "valid.txt", log=quiet).read_bytes() == valid
    assert server.hits["/pkg.tgz"] == 1  # second member read from the cache
    assert (root / "_archives" / "pkg.tgz").read_bytes() == archive
    assert leftovers(root) == []


def test_fetch_zip_member_verifies_archive(server, tmp_path, toy):
    data = b" = Title = \n text \n"
    archive = make_zip({"corpus/wiki.train.tokens": data})
    server.routes["/c.zip"] = ok(archive)
    common = dict(url=f"{server.url}/c.zip", member="corpus/wiki.train.tokens")
    toy("train.txt", sha256=sha(data), archive_sha256=sha(archive), **common)
    toy("bad.txt", sha256=sha(data), archive_sha256=sha(b"other"), **common)
    root = tmp_path / "downloads"
    assert fetch("toy", "train.txt", root / "toy" / "train.txt", log=quiet).read_bytes() == data
    with pytest.raises(ChecksumError, match="archive c.zip"):
        fetch("toy", "bad.txt", root / "toy" / "bad.txt", log=quiet, **FAST)
    assert not (root / "toy" / "bad.txt").exists() and leftovers(root) == []


def test_member_basename_fallback_and_wrong_member(server, tmp_path, toy):
    data = b"VBZ\tthe dog\n"
    server.routes["/agr.tar.gz"] = ok(make_tgz({"other_dir/numpred.val": data}))
    url = f"{server.url}/agr.tar.gz"
    toy("numpred.val", sha256=sha(data), url=url, member="rnn_agr_simple/numpred.val")
    bad = b"not it\n"
    toy("numpred.x", sha256=sha(bad), url=url, member="rnn_agr_simple/numpred.val")
    root = tmp_path / "downloads"
    dest = fetch("toy", "numpred.val", root / "toy" / "numpred.val", log=quiet)
    assert dest.read_bytes() == data
    with pytest.raises(ChecksumError, match="cached archive .* removed"):
        fetch("toy", "numpred.x", root / "toy" / "numpred.x", log=quiet)
    assert not (root / "_archives" / "agr.tar.gz").exists()  # unverifiable archive dropped


def test_unreadable_or_incomplete_archive(server, tmp_path, toy):
    server.routes["/page.tgz"] = ok(b"<html>moved</html>")
    server.routes["/pkg.zip"] = ok(make_zip({"pkg/other.txt": b"x"}))
    toy("a.txt", sha256=sha(b"x"), url=f"{server.url}/page.tgz", member="pkg/a.txt")
    toy("b.txt", sha256=sha(b"x"), url=f"{server.url}/pkg.zip", member="pkg/b.txt")
    root = tmp_path / "downloads"
    with pytest.raises(DownloadError, match="page.tgz"):
        fetch("toy", "a.txt", root / "toy" / "a.txt", log=quiet, **FAST)
    assert not (root / "_archives" / "page.tgz").exists()
    with pytest.raises(DownloadError, match="no member 'pkg/b.txt'"):
        fetch("toy", "b.txt", root / "toy" / "b.txt", log=quiet, **FAST)
    assert list((root / "toy").iterdir()) == []


def test_no_network_no_mirror_is_data_unavailable(tmp_path, toy, closed_port_url):
    toy("a.txt", sha256=sha(b"x"), url=closed_port_url)
    dest = tmp_path / "downloads" / "toy" / "a.txt"
    with pytest.raises(DataUnavailable) as info:
        fetch("toy", "a.txt", dest, None, log=quiet, **FAST)
    msg = str(info.value)
    assert "data_mirror" in msg and closed_port_url in msg and "toy/a.txt" in msg
    assert not dest.exists() and leftovers(tmp_path) == []


def test_base_url_override(server, tmp_path, toy):
    body = b"rebased\n"
    toy("a.txt", sha256=sha(body), url="https://example.invalid/some/dir/a.txt")
    server.routes["/prefix/some/dir/a.txt"] = ok(body)
    dest = tmp_path / "downloads" / "toy" / "a.txt"
    fetch("toy", "a.txt", dest, log=quiet, base_url=f"{server.url}/prefix/", **FAST)
    assert dest.read_bytes() == body


# ----------------------------------------------------------------------------- mirror


def test_mirror_plain_and_gz(tmp_path, toy):
    plain, packed = b"plain file\n", b"compressed file\n" * 100
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "plain.txt").write_bytes(plain)
    (mirror / "toy" / "packed.txt.gz").write_bytes(gzip.compress(packed))
    toy("plain.txt", sha256=sha(plain), url="http://127.0.0.1:9/unused")
    toy("packed.txt", sha256=sha(packed), url="http://127.0.0.1:9/unused")
    out = tmp_path / "downloads" / "toy"
    assert fetch("toy", "plain.txt", out / "plain.txt", mirror, log=quiet).read_bytes() == plain
    assert fetch("toy", "packed.txt", out / "packed.txt", str(mirror), log=quiet).read_bytes() == (
        packed
    )
    assert leftovers(tmp_path) == []


def test_mirror_corrupt_file_names_mirror_path(tmp_path, toy):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.txt.gz").write_bytes(gzip.compress(b"tampered\n"))
    long = "".join(f"line {i}\n" for i in range(2000)).encode()
    (mirror / "toy" / "b.txt.gz").write_bytes(gzip.compress(long)[:-100])
    toy("a.txt", sha256=sha(b"original\n"), url="http://127.0.0.1:9/a")
    toy("b.txt", sha256=sha(long), url="http://127.0.0.1:9/b")
    out = tmp_path / "downloads" / "toy"
    with pytest.raises(ChecksumError) as info:
        fetch("toy", "a.txt", out / "a.txt", mirror, log=quiet)
    msg = str(info.value)
    assert str(mirror / "toy" / "a.txt.gz") in msg and "toy/a.txt" in msg
    assert sha(b"original\n") in msg and sha(b"tampered\n") in msg
    with pytest.raises(ChecksumError, match="unreadable"):
        fetch("toy", "b.txt", out / "b.txt", mirror, log=quiet)
    assert not out.exists() or list(out.iterdir()) == []


def test_mirror_missing_file_is_data_unavailable(tmp_path, toy):
    toy("a.txt", sha256=sha(b"x"), url="https://example.org/a.txt")
    with pytest.raises(DataUnavailable) as info:
        fetch("toy", "a.txt", tmp_path / "d" / "toy" / "a.txt", tmp_path, log=quiet)
    assert "data_mirror" in str(info.value) and "https://example.org/a.txt" in str(info.value)


# ----------------------------------------------------------------------------- trust on first use


def test_tofu_records_then_verifies(server, tmp_path, toy):
    first, changed = b"first version\n", b"changed upstream\n"
    toy("big.txt", url=f"{server.url}/big.txt")  # sha256=None: nothing published
    server.routes["/big.txt"] = ok(first)
    root = tmp_path / "downloads"
    messages: list[str] = []
    fetch("toy", "big.txt", root / "toy" / "big.txt", log=messages.append, **FAST)
    record = root / "recorded_sha256.tsv"
    assert record.read_text() == f"toy\tbig.txt\t{sha(first)}\n"
    assert any("recorded" in m and "sources.py" in m for m in messages)

    fetch("toy", "big.txt", root / "toy" / "big.txt", log=quiet)  # verified against record
    assert server.hits["/big.txt"] == 1
    (root / "toy" / "big.txt").unlink()
    server.routes["/big.txt"] = ok(changed)
    with pytest.raises(ChecksumError) as info:
        fetch("toy", "big.txt", root / "toy" / "big.txt", log=quiet, **FAST)
    assert sha(first) in str(info.value) and str(record) in str(info.value)
    assert not (root / "toy" / "big.txt").exists()
    assert record.read_text().count("\n") == 1


def test_sha1_is_checked_when_published(tmp_path, toy):
    data = b"wiki text\n"
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "w.txt").write_bytes(data)
    toy("w.txt", sha1=hashlib.sha1(b"something else").hexdigest(), url="http://127.0.0.1:9/w")
    with pytest.raises(ChecksumError, match="sha1 mismatch"):
        fetch("toy", "w.txt", tmp_path / "d" / "toy" / "w.txt", mirror, log=quiet)
    assert not (tmp_path / "d" / "recorded_sha256.tsv").exists()


# ----------------------------------------------------------------------------- syneval pickles

# What Python 2 pickle.dump (protocol 0) writes for a template dict: S'...' strings, PUT memo.
PY2_PICKLE = (
    b"(dp0\nS'sing_MS_MV'\np1\n(lp2\n(S'the author laughs'\np3\nS'the author laugh'\np4\ntp5\n"
    b"a(S'the pilot smiles'\np6\nS'the pilot smile'\np7\ntp8\nasS'plur_MS_MV'\np9\n(lp10\n"
    b"(S'the authors laugh'\np11\nS'the authors laughs'\np12\ntp13\nas."
)


def test_syneval_converter_pairs_and_triples():
    npi = {
        "past": [("no author has ever been", "the author that no guards like has ever been",
                  "most authors have ever been")],
    }  # fmt: skip
    out = io.BytesIO()
    rows = write_syneval_tsv(
        [("simple_agrmt", PY2_PICKLE), ("simple_npi_anim", pickle.dumps(npi, protocol=4))], out
    )
    assert rows == 4
    assert out.getvalue().decode().split("\n") == [
        "template\tcondition\tgrammatical\tungrammatical\tungrammatical_2",
        "simple_agrmt\tsing_MS_MV\tthe author laughs\tthe author laugh\t",
        "simple_agrmt\tsing_MS_MV\tthe pilot smiles\tthe pilot smile\t",
        "simple_agrmt\tplur_MS_MV\tthe authors laugh\tthe authors laughs\t",
        "simple_npi_anim\tpast\t" + "\t".join(npi["past"][0]),
        "",
    ]


def test_pickle_guard_refuses_code(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()  # GLOBAL + REDUCE
    with pytest.raises(UnsafePickleError, match="GLOBAL"):
        check_plain_pickle(evil)
    with pytest.raises(UnsafePickleError):
        write_syneval_tsv([("evil", evil)], io.BytesIO())
    assert not marker.exists()
    with pytest.raises(UnsafePickleError):  # STACK_GLOBAL / REDUCE of a class instance
        load_plain_pickle(pickle.dumps(Path("x"), protocol=4))
    with pytest.raises(UnsafePickleError):
        check_plain_pickle(b"\x80\x04not a pickle")
    with pytest.raises(ValueError, match="bad item"):  # plain data, wrong shape
        write_syneval_tsv([("t", pickle.dumps({"c": ["ab"]}))], io.BytesIO())
    assert load_plain_pickle(PY2_PICKLE)["plur_MS_MV"] == [
        ("the authors laugh", "the authors laughs")
    ]


def test_syneval_fetch_method(server, tmp_path, toy):
    agr = pickle.dumps({"sing_MS_MV": [("a b", "a c")]}, protocol=2)
    npi = pickle.dumps({"past": [("x y", "x z", "x w")]}, protocol=0)
    server.routes["/t/agr.pickle"] = failing(1, agr)
    server.routes["/t/npi.pickle"] = ok(npi)
    expected = (
        b"template\tcondition\tgrammatical\tungrammatical\tungrammatical_2\n"
        b"agr\tsing_MS_MV\ta b\ta c\t\nnpi\tpast\tx y\tx z\tx w\n"
    )
    common = dict(url=f"{server.url}/t/", method="syneval_pickles", parts=("agr", "npi"))
    toy("pairs.tsv", sha256=sha(expected), **common)
    dest = fetch("toy", "pairs.tsv", tmp_path / "d" / "toy" / "pairs.tsv", log=quiet, **FAST)
    assert dest.read_bytes() == expected
    server.routes["/t/npi.pickle"] = ok(b"cos\nsystem\n(S'true'\ntR.")
    toy("evil.tsv", sha256=sha(expected), **common)
    with pytest.raises(UnsafePickleError):
        fetch("toy", "evil.tsv", tmp_path / "d" / "toy" / "evil.tsv", log=quiet, **FAST)
    assert not (tmp_path / "d" / "toy" / "evil.tsv").exists() and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- registry and CLI


def test_registry_names():
    assert sources.corpora() == [
        "ptb", "ptb_char", "wikitext2", "wikitext103", "linzen", "linzen_full", "syneval",
        "gulordava", "wmt14_de_en",
    ]  # fmt: skip
    for corpus in ("ptb", "ptb_char", "wikitext2", "wikitext103"):
        assert sources.files(corpus) == ["train.txt", "valid.txt", "test.txt"]
    assert sources.files("syneval") == ["emnlp2018_pairs.tsv"]
    for corpus in sources.corpora():
        for name in sources.files(corpus):
            src = sources.get_source(corpus, name)
            assert (src.sha256 is None) == (corpus in ("wikitext103", "linzen_full", "wmt14_de_en"))
            assert src.url.startswith(("http://", "https://"))
    assert sources.get_source("wikitext2", "train.txt").archive_sha256.startswith("92675f1d")
    # WMT's two test archives share a file name: each is cached under its own
    wmt15, wmt16 = (
        sources.get_source("wmt14_de_en", f"newstest20{y}.de.sgm").url for y in (15, 16)
    )
    assert download.archive_path(wmt15, "d") != download.archive_path(wmt16, "d")
    with pytest.raises(sources.UnknownSource, match="known"):
        sources.get_source("ptb", "training.txt")


def test_cli_mirror_and_errors(tmp_path, toy, capsys, closed_port_url):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "a.txt").write_bytes(b"cli\n")
    toy("a.txt", sha256=sha(b"cli\n"), url=closed_port_url)
    toy("b.txt", sha256=sha(b"other\n"), mirror_path="toy/a.txt", url=closed_port_url)
    out = tmp_path / "downloads" / "toy"

    def run(name: str, mirror_arg: str) -> int:
        argv = ["--corpus", "toy", "--name", name, "--out", str(out / name)]
        try:
            fetch_data.main(argv + ["--mirror", mirror_arg, "--retries", "0", "--timeout", "2"])
        except SystemExit as exc:
            return exc.code
        return 0

    assert run("a.txt", str(mirror)) == 0 and (out / "a.txt").read_bytes() == b"cli\n"
    capsys.readouterr()
    for name, mirror_arg, expected in [
        ("b.txt", str(mirror), "sha256 mismatch"),  # ChecksumError
        ("c.txt", str(mirror), "unknown file toy/c.txt"),  # not registered
        ("a.txt", "", "data_mirror"),  # '' = no mirror; network unreachable
    ]:
        (out / "a.txt").unlink(missing_ok=True)
        assert run(name, mirror_arg) == 1
        err = capsys.readouterr().err
        assert err.startswith("fetch_data: error:") and expected in err
        assert err.count("\n") == 1 and "Traceback" not in err


# ----------------------------------------------------------------------------- the real mirror


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared data mirror not present")
def test_real_mirror_verifies(tmp_path):
    root = tmp_path / "downloads"
    for corpus in ("ptb", "ptb_char", "wikitext2", "linzen", "syneval", "gulordava"):
        for name in sources.files(corpus):
            dest = fetch(corpus, name, root / corpus / name, SHARED, log=quiet)
            assert dest.stat().st_size > 0
    assert not (root / "recorded_sha256.tsv").exists() and leftovers(root) == []


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared data mirror not present")
def test_base_url_with_real_registry_entry(server, tmp_path):
    src = sources.get_source("gulordava", "generated.eval")
    body = (SHARED / src.mirror_path).read_bytes()
    server.routes[src.url.split("raw.githubusercontent.com", 1)[1]] = ok(body)
    dest = tmp_path / "d" / "gulordava" / "generated.eval"
    fetch("gulordava", "generated.eval", dest, log=quiet, base_url=server.url, **FAST)
    assert dest.read_bytes() == body


def test_overrides_replace_registry_fields(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "REGISTRY", {k: dict(v) for k, v in sources.REGISTRY.items()})
    mirror = tmp_path / "mirror"
    (mirror / "ptb").mkdir(parents=True)
    (mirror / "ptb" / "train.txt").write_text("tiny\n")
    digest = hashlib.sha256(b"tiny\n").hexdigest()
    overrides = tmp_path / "sources.yaml"
    overrides.write_text(f"ptb:\n  train.txt: {{sha256: {digest}}}\n")
    sources.apply_overrides(str(overrides))
    out = fetch("ptb", "train.txt", tmp_path / "out" / "train.txt", mirror, log=lambda _: 0)
    assert out.read_text() == "tiny\n"
    overrides.write_text("ptb:\n  train.txt: {colour: red}\n")
    with pytest.raises(ValueError, match="colour"):
        sources.apply_overrides(str(overrides))


def test_pinned_content_is_the_checksums_after_overrides(tmp_path, toy):
    """What a download's rerun depends on: the checksums, not where a copy is read from."""
    toy("sum.txt", sha256="ab" * 32, url="http://a/sum.txt")
    toy("tofu.txt", url="http://a/tofu.txt")
    assert sources.pinned_content("toy", "sum.txt") == f"sha256={'ab' * 32}"
    assert sources.pinned_content("toy", "tofu.txt") == "url=http://a/tofu.txt"
    overrides = tmp_path / "sources.yaml"
    overrides.write_text("toy:\n  sum.txt: {mirror_path: elsewhere.txt, url: http://b/s}\n")
    assert sources.pinned_content("toy", "sum.txt", str(overrides)) == f"sha256={'ab' * 32}"
    overrides.write_text(f"toy:\n  sum.txt: {{sha256: {'cd' * 32}}}\n")
    assert sources.pinned_content("toy", "sum.txt", str(overrides)) == f"sha256={'cd' * 32}"
    assert sources.get_source("toy", "sum.txt").sha256 == "ab" * 32  # the registry is untouched
    with pytest.raises(sources.UnknownSource, match="toy/none.txt"):
        sources.pinned_content("toy", "none.txt", str(overrides))


def test_docs_list_the_registry():
    """docs/data.md embeds the registry table; regenerate with `python -m rnnrepro.data.sources`."""
    text = (Path(__file__).resolve().parents[1] / "docs/data.md").read_text()
    embedded = text.split("<!-- registry:begin -->\n")[1].split("<!-- registry:end -->")[0]
    assert embedded == sources.registry_markdown()
