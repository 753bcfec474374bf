"""Fetch the registered data files (``sources.py``): offline mirror or internet, always verified.

Every file is written to a hidden file next to its destination, checked against its sha256
(or sha1) and only then renamed into place, so a destination never exists half-written or
unverified. Downloads use ``urllib`` with retries and exponential back-off on network errors,
HTTP 5xx and truncated bodies (shorter than Content-Length). HTTP downloads keep the bytes
received in ``.<name>.part`` across failed attempts and killed processes and ask for the rest
with a ``Range`` request; progress is logged every ``PROGRESS_EVERY`` seconds. Archives are
cached in ``dest.parent.parent / "_archives"``. Files without a published sha256 are trusted
on first use and their digest appended to ``dest.parent.parent / "recorded_sha256.tsv"``.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import http.client
import io
import os
import pickle
import pickletools
import re
import shutil
import tarfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

from rnnrepro.data.sources import Source, get_source
from rnnrepro.fileio import atomic_open

RECORD_FILE = "recorded_sha256.tsv"
ARCHIVE_DIR = "_archives"
USER_AGENT = "rnnrepro-fetch/0.1 (+python-urllib)"
CHUNK = 1 << 20
PROGRESS_EVERY = 5.0  # seconds between progress lines
_CONTENT_RANGE = re.compile(r"bytes (\d+)-\d+/(?:\d+|\*)")

Log = Callable[[str], object]


def print_flush(message: str) -> None:
    """The default ``log``: print and flush, so progress reaches a piped job log at once."""
    print(message, flush=True)


class Writable(Protocol):
    """Anything with a binary ``write`` (files, ``BytesIO``, the hashing writer)."""

    def write(self, data: bytes, /) -> int: ...


class ChecksumError(ValueError):
    """A file's content does not match its expected digest."""

    def __init__(
        self, label: str, source: str, expected: str, actual: str, algorithm: str = "sha256"
    ):
        super().__init__(
            f"{algorithm} mismatch for {label} from {source}: expected {expected}, got {actual}"
        )
        self.label, self.source = label, source
        self.expected, self.actual, self.algorithm = expected, actual, algorithm


class DownloadError(RuntimeError):
    """A server answered but did not deliver the file (HTTP error, truncated body)."""


class DataUnavailable(DownloadError):
    """The file cannot be obtained: network unreachable, or the mirror lacks it."""


class UnsafePickleError(ValueError):
    """A pickle uses opcodes beyond plain str/int/tuple/list/dict data."""


def hint(url: str) -> str:
    """The two ways out of a missing file, for error messages."""
    return (
        "set the config key `data_mirror` to a local directory holding the files at their "
        "mirror paths (docs/data.md; gzip members `<file>.gz` accepted), or allow internet "
        f"access to {url} (with `data_mirror` empty)"
    )


# ----------------------------------------------------------------------------- atomic writes


class _HashWriter:
    """Binary file wrapper hashing (sha256 and sha1) and counting what is written.

    ``resumed`` tells that the content continues bytes received before a ``Range`` request.
    """

    def __init__(self, f: BinaryIO):
        self.f = f
        self.reset(truncate=False)

    def reset(self, truncate: bool = True) -> None:
        if truncate:
            self.f.seek(0)
            self.f.truncate()
        self.sha256 = hashlib.sha256()
        self.sha1 = hashlib.sha1()
        self.nbytes = 0
        self.resumed = False

    def rehash(self) -> None:
        """Hash the bytes already in the file and stay at its end, to append."""
        self.reset(truncate=False)
        self.f.seek(0)
        while chunk := self.f.read(CHUNK):
            self._update(chunk)

    def _update(self, data: bytes) -> None:
        self.sha256.update(data)
        self.sha1.update(data)
        self.nbytes += len(data)

    def write(self, data: bytes) -> int:
        self.f.write(data)
        self._update(data)
        return len(data)


@contextlib.contextmanager
def _atomic_target(dest: Path) -> Iterator[_HashWriter]:
    """Yield a hashing writer on a hidden temp file; rename it to ``dest`` on success only."""
    with atomic_open(dest, "wb") as f:
        yield _HashWriter(f)


def _verify(out: _HashWriter, sha256: str | None, sha1: str | None, label: str, source: str) -> str:
    actual = out.sha256.hexdigest()
    if sha256 is not None and actual != sha256:
        raise ChecksumError(label, source, sha256, actual)
    if sha1 is not None and out.sha1.hexdigest() != sha1:
        raise ChecksumError(label, source, sha1, out.sha1.hexdigest(), "sha1")
    return actual


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- HTTP


class _Incomplete(Exception):
    """An attempt ended before the whole body arrived; the next attempt resumes."""


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f}"


def _progress(label: str, nbytes: int, total: int | None) -> str:
    if total:
        return f"{label}: {_mb(nbytes)} of {_mb(total)} MB ({100 * nbytes / total:.0f}%)"
    return f"{label}: {_mb(nbytes)} MB received"


def _receive(url: str, out: _HashWriter, *, timeout: float, log: Log, label: str) -> None:
    """One request for the bytes ``out`` lacks (``Range: bytes=<out.nbytes>-``), appended on a
    matching 206 and written from zero on a 200; raise ``_Incomplete`` if the body falls short."""
    start = out.nbytes
    headers = {"User-Agent": USER_AGENT} | ({"Range": f"bytes={start}-"} if start else {})
    with urlopen(Request(url, headers=headers), timeout=timeout) as r:
        if r.status == 206:
            match = _CONTENT_RANGE.fullmatch(r.headers.get("Content-Range", "").strip())
            if match is None or int(match[1]) != start:
                out.reset()
                raise _Incomplete(f"unrequested range {r.headers.get('Content-Range')!r}")
            if start:
                out.resumed = True
                log(f"{label}: resuming at {_mb(start)} MB")
        elif start:
            log(f"{label}: the server ignored the range request; starting again from zero")
            out.reset()
        length = r.headers.get("Content-Length", "")
        total = out.nbytes + int(length) if length.isdigit() else None
        shown = time.monotonic()
        while chunk := r.read1(CHUNK):
            out.write(chunk)
            if time.monotonic() - shown >= PROGRESS_EVERY:
                log(_progress(label, out.nbytes, total))
                shown = time.monotonic()
    log(_progress(label, out.nbytes, total))
    if total is not None and out.nbytes < total:
        raise _Incomplete(f"truncated body ({out.nbytes} of {total} bytes)")


def _http_get(
    url: str,
    out: _HashWriter,
    *,
    retries: int,
    backoff: float,
    timeout: float,
    log: Log,
    label: str,
) -> None:
    """Stream ``url`` into ``out``, retrying (``retries`` times) on transient failures; every
    attempt resumes after the bytes ``out`` holds. A 416 answer to a range request leaves the
    bytes held as they are, for the caller's checksum to judge."""
    last, unreachable = "", False
    for attempt in range(retries + 1):
        if attempt:
            delay = backoff * 2 ** (attempt - 1)
            log(f"{label}: {last}; retry {attempt}/{retries} in {delay:.1f}s")
            time.sleep(delay)
        try:
            _receive(url, out, timeout=timeout, log=log, label=label)
            return
        except _Incomplete as exc:
            last, unreachable = str(exc), False
        except HTTPError as exc:
            if exc.code == 416 and out.nbytes:
                log(f"{label}: HTTP 416 at {_mb(out.nbytes)} MB (complete?); verifying it")
                out.resumed = True
                return
            if exc.code >= 500 or exc.code in (408, 429):
                last, unreachable = f"HTTP {exc.code} {exc.reason}", False
                continue
            raise DownloadError(
                f"{label}: {url} answered HTTP {exc.code} {exc.reason}; {hint(url)}"
            ) from exc
        except http.client.IncompleteRead:
            last, unreachable = f"connection closed early after {out.nbytes} bytes", False
        except (URLError, ConnectionError, TimeoutError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, URLError) else exc
            last, unreachable = f"network error: {reason}", True
    cls = DataUnavailable if unreachable else DownloadError
    raise cls(
        f"could not download {label} from {url} after {retries + 1} attempts ({last}); {hint(url)}"
    )


def partial_path(dest: Path) -> Path:
    """The hidden file holding the bytes of ``dest`` received so far."""
    return dest.with_name(f".{dest.name}.part")


def _download(
    url: str,
    dest: Path,
    sha256: str | None,
    sha1: str | None,
    label: str,
    *,
    retries: int,
    backoff: float,
    timeout: float,
    log: Log,
) -> str:
    """Download ``url`` to ``dest`` through ``partial_path(dest)``; the caller holds
    ``_locked(dest)``. Bytes left by an earlier process are resumed only when a digest can check
    them. A resumed transfer that fails its checksum is downloaded once more from zero; any
    checksum failure deletes the partial file, other failures keep it for the next attempt."""
    part = partial_path(dest)
    get = dict(retries=retries, backoff=backoff, timeout=timeout, log=log, label=label)
    with os.fdopen(os.open(part, os.O_RDWR | os.O_CREAT, 0o666), "r+b") as f:  # 0666 & ~umask
        out = _HashWriter(f)
        if sha256 is None and sha1 is None:
            out.reset()  # nothing could tell stale bytes from good ones
        else:
            out.rehash()
        log(f"{label}: downloading {url}")
        try:
            _http_get(url, out, **get)
            try:
                actual = _verify(out, sha256, sha1, label, url)
            except ChecksumError as exc:
                if not out.resumed:
                    raise
                log(f"{label}: {exc.algorithm} mismatch after resuming; downloading from zero")
                out.reset()
                _http_get(url, out, **get)
                actual = _verify(out, sha256, sha1, label, url)
        except ChecksumError:
            part.unlink()
            raise
        except BaseException:
            if not out.nbytes:
                part.unlink(missing_ok=True)
            raise
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, dest)
    return actual


def get_bytes(
    url: str,
    *,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
    log: Log = print_flush,
    label: str | None = None,
) -> bytes:
    """Download ``url`` into memory (the retries of ``fetch``'s downloads; a retry resumes
    after the bytes received)."""
    buf = io.BytesIO()
    out = _HashWriter(buf)
    opts = dict(retries=retries, backoff=backoff, timeout=timeout, log=log)
    _http_get(url, out, label=label or url, **opts)
    return buf.getvalue()


def _rebase(url: str, base_url: str | None) -> str:
    """Replace scheme and host of ``url`` by ``base_url`` (which may carry a path prefix)."""
    if not base_url:
        return url
    parts = urlsplit(url)
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    return base_url.rstrip("/") + tail


# ----------------------------------------------------------------------------- archives


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (so parallel jobs download a shared archive only
    once, and one process at a time writes a partial file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def archive_path(url: str, downloads_dir: str | os.PathLike) -> Path:
    """Where the archive at ``url`` is cached under the downloads directory: named after its
    directory and file (``wmt15-test.tgz``; WMT's test sets of two years are both ``test.tgz``).
    """
    path = Path(urlsplit(url).path)
    name = f"{path.parent.name}-{path.name}" if path.parent.name else path.name
    return Path(downloads_dir) / ARCHIVE_DIR / name


def _cached_archive(url: str, sha256: str | None, downloads_dir: Path, opts: dict) -> Path:
    path = archive_path(url, downloads_dir)
    with _locked(path):
        if path.is_file():
            if sha256 is None or sha256_file(path) == sha256:
                opts["log"](f"using cached archive {path}")
                return path
            opts["log"](f"cached archive {path} does not match its sha256; downloading again")
        _download(url, path, sha256, None, f"archive {path.name}", **opts)
    return path


def _norm(member: str) -> str:
    while member.startswith("./"):
        member = member[2:]
    return member.lstrip("/")


def _find_member(names: Iterable[str], member: str, archive: Path, log: Log) -> str:
    """The archive entry for ``member`` (a leading ``./`` is ignored; a unique base-name match
    is accepted when the exact path is absent)."""
    names = list(names)
    for n in names:
        if _norm(n) == _norm(member):
            return n
    base = _norm(member).rsplit("/", 1)[-1]
    same = [n for n in names if _norm(n).rsplit("/", 1)[-1] == base]
    if len(same) == 1:
        log(f"{archive.name}: no member {member!r}, using {same[0]!r}")
        return same[0]
    raise DownloadError(f"archive {archive} has no member {member!r}")


_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, gzip.BadGzipFile)


def extract_member(
    archive: str | os.PathLike, member: str, out: Writable, log: Log = print_flush
) -> None:
    """Copy ``member`` of a zip or tar(.gz) ``archive`` into the binary stream ``out``."""
    archive = Path(archive)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            name = _find_member(zf.namelist(), member, archive, log)
            with zf.open(name) as f:
                shutil.copyfileobj(f, out, CHUNK)
        return
    with tarfile.open(archive, "r:*") as tf:
        names = [m.name for m in tf.getmembers() if m.isfile()]
        f = tf.extractfile(_find_member(names, member, archive, log))
        assert f is not None  # a regular file
        with f:
            shutil.copyfileobj(f, out, CHUNK)


# ----------------------------------------------------------------------------- syneval pickles

_PLAIN_OPCODES = frozenset(
    {
        *("PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE"),
        *("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"),
        *("FLOAT", "BINFLOAT", "NEWTRUE", "NEWFALSE"),
        *("STRING", "BINSTRING", "SHORT_BINSTRING"),
        *("UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"),
        *("BINBYTES", "SHORT_BINBYTES", "BINBYTES8"),
        *("EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"),
        *("EMPTY_LIST", "LIST", "APPEND", "APPENDS"),
        *("EMPTY_DICT", "DICT", "SETITEM", "SETITEMS"),
        *("EMPTY_SET", "ADDITEMS", "FROZENSET"),
        *("PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET", "MEMOIZE"),
    }
)
"""Opcodes that only build str/bytes/numbers/containers; anything else (GLOBAL, STACK_GLOBAL,
REDUCE, BUILD, INST, OBJ, NEWOBJ, EXT*, PERSID, buffers) is refused."""


def check_plain_pickle(data: bytes) -> None:
    """Raise ``UnsafePickleError`` unless ``data`` only builds plain data (no GLOBAL, REDUCE,
    INST, OBJ, BUILD, NEWOBJ, PERSID, ...), checked with ``pickletools`` before unpickling."""
    try:
        ops = [op.name for op, _, _ in pickletools.genops(data)]
    except Exception as exc:  # malformed stream
        raise UnsafePickleError(f"unreadable pickle: {exc}") from exc
    bad = sorted(set(ops) - _PLAIN_OPCODES)
    if bad:
        raise UnsafePickleError(f"pickle uses non-data opcodes: {', '.join(bad)}")


class _NoClassUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # second line of defence
        raise UnsafePickleError(f"pickle references {module}.{name}")


def load_plain_pickle(data: bytes) -> object:
    """Unpickle ``data`` after ``check_plain_pickle``; Python 2 ``str`` is decoded as UTF-8."""
    check_plain_pickle(data)
    return _NoClassUnpickler(io.BytesIO(data), encoding="utf-8").load()


SYNEVAL_COLUMNS = ("template", "condition", "grammatical", "ungrammatical", "ungrammatical_2")


def syneval_rows(template: str, obj: object) -> Iterator[tuple[str, ...]]:
    """Rows of one LM_syneval template pickle (``{condition: [(gram, ungram[, ungram_2])]}``),
    every tuple in the original order; ``ungrammatical_2`` is empty for pairs."""
    if not isinstance(obj, dict):
        raise ValueError(f"{template}: expected a dict of conditions, got {type(obj).__name__}")
    for condition, items in obj.items():
        if not isinstance(items, list | tuple):
            raise ValueError(f"{template}/{condition}: expected a list of tuples")
        for item in items:
            if not isinstance(item, tuple | list) or not 2 <= len(item) <= 3:
                raise ValueError(f"{template}/{condition}: bad item {item!r}")
            fields = (template, condition, *item) + ("",) * (3 - len(item))
            if not all(isinstance(x, str) for x in fields):
                raise ValueError(f"{template}/{condition}: bad item {item!r}")
            if any(c in x for x in fields for c in "\t\n\r"):
                raise ValueError(f"{template}/{condition}: tab or newline in {item!r}")
            yield fields


def write_syneval_tsv(templates: Iterable[tuple[str, bytes]], out: Writable) -> int:
    """Write ``(template name, pickle bytes)`` pairs as the syneval TSV; return the row count."""
    out.write(("\t".join(SYNEVAL_COLUMNS) + "\n").encode())
    n = 0
    for template, data in templates:
        for row in syneval_rows(template, load_plain_pickle(data)):
            out.write(("\t".join(row) + "\n").encode("utf-8"))
            n += 1
    return n


# ----------------------------------------------------------------------------- fetch


def recorded_sha256(record: Path, corpus: str, name: str) -> str | None:
    """The first digest recorded for ``corpus/name`` in a trust-on-first-use record file."""
    if not record.is_file():
        return None
    for line in record.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[:2] == [corpus, name]:
            return fields[2]
    return None


def _fetch_mirror(
    src: Source, mirror: Path, dest: Path, sha256: str | None, label: str, log: Log
) -> str:
    plain = mirror / src.mirror_path
    packed = plain.with_name(plain.name + ".gz")
    if plain.is_file():
        path, opener = plain, open
    elif packed.is_file():
        path, opener = packed, gzip.open
    else:
        raise DataUnavailable(
            f"{label} is not in the data mirror {mirror} (looked for {plain} and {packed}); "
            f"{hint(_source_url(src))}"
        )
    log(f"{label}: copying from mirror {path}")
    with _atomic_target(dest) as out, opener(path, "rb") as f:
        try:
            shutil.copyfileobj(f, out, CHUNK)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise ChecksumError(label, str(path), sha256 or "?", f"unreadable ({exc})") from exc
        return _verify(out, sha256, src.sha1, label, str(path))


def _source_url(src: Source, base_url: str | None = None) -> str:
    return _rebase(src.url, base_url)


def _fetch_remote(
    src: Source, dest: Path, sha256: str | None, label: str, base_url: str | None, opts: dict
) -> str:
    url = _source_url(src, base_url)
    if src.method == "syneval_pickles":
        blobs = [
            (t, get_bytes(f"{url}{t}.pickle", label=f"{label} [{t}]", **opts)) for t in src.parts
        ]
        with _atomic_target(dest) as out:
            try:
                rows = write_syneval_tsv(blobs, out)
            except UnsafePickleError:
                raise
            except (ValueError, pickle.UnpicklingError) as exc:  # incl. UnicodeDecodeError
                raise DownloadError(f"{label}: cannot convert the template pickles: {exc}") from exc
            opts["log"](f"{label}: converted {len(blobs)} template pickles, {rows} rows")
            return _verify(out, sha256, src.sha1, label, url)
    if src.method != "url":
        raise ValueError(f"{label}: unknown fetch method {src.method!r}")
    if src.member is None:
        with _locked(dest):
            return _download(url, dest, sha256, src.sha1, label, **opts)
    archive = _cached_archive(url, src.archive_sha256, dest.parent.parent, opts)
    with _atomic_target(dest) as out:
        try:
            extract_member(archive, src.member, out, opts["log"])
        except (DownloadError, *_ARCHIVE_ERRORS) as exc:
            if src.archive_sha256 is None and not isinstance(exc, DownloadError):
                archive.unlink(missing_ok=True)  # e.g. an HTML error page served as 200
            raise DownloadError(f"{label}: {exc} (archive {archive}); {hint(url)}") from exc
        try:
            return _verify(out, sha256, src.sha1, label, f"{url} member {src.member}")
        except ChecksumError as exc:
            if src.archive_sha256 is None:  # the cached archive may be the culprit
                archive.unlink(missing_ok=True)
                exc.args = (f"{exc} (cached archive {archive} removed)",)
            raise


def fetch(
    corpus: str,
    name: str,
    dest: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
    log: Log = print_flush,
    base_url: str | None = None,
) -> Path:
    """Obtain the registered file ``corpus/name`` as ``dest``, verified, written atomically.

    With ``mirror`` (a directory holding the files at their mirror paths),
    ``<mirror>/<mirror_path>`` or its ``.gz`` is copied; otherwise the file is downloaded
    (``base_url`` replaces scheme and host of the registry URL, e.g. for a local HTTP mirror
    or tests). An existing ``dest`` that verifies is kept. Unpublished digests are trusted on
    first use and recorded in ``dest.parent.parent / "recorded_sha256.tsv"``.
    """
    src = get_source(corpus, name)
    dest, label = Path(dest), src.key
    record = dest.parent.parent / RECORD_FILE
    sha256 = src.sha256 or recorded_sha256(record, corpus, name)
    if sha256 is not None and dest.is_file() and sha256_file(dest) == sha256:
        log(f"{label}: {dest} already present and verified")
        return dest
    if src.sha256 is None and sha256 is not None:
        log(f"{label}: no published sha256, checking against {record}")
    opts = dict(retries=retries, backoff=backoff, timeout=timeout, log=log)
    try:
        if mirror is not None and str(mirror) != "":
            actual = _fetch_mirror(src, Path(mirror), dest, sha256, label, log)
        else:
            actual = _fetch_remote(src, dest, sha256, label, base_url, opts)
    except ChecksumError as exc:
        if sha256 is not None and src.sha256 is None:
            exc.args = (f"{exc} (expected value recorded in {record})",)
        raise
    if sha256 is None:
        with open(record, "a") as f:
            f.write(f"{corpus}\t{name}\t{actual}\n")
        log(
            f"{label}: no published sha256; recorded {actual} in {record} "
            "(trust on first use) - add it to rnnrepro/data/sources.py"
        )
    log(f"{label}: {dest} ok (sha256 {actual[:12]})")
    return dest
