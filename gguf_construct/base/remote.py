"""GGUF files behind URLs (``https://``, ``hf://``, ``s3://``, any fsspec URL), read without downloading them.

A :class:`RemoteFile` is a read-only buffer as long as the remote file whose bytes arrive on demand: its
:attr:`~RemoteFile.view` is a memoryview of an anonymous memory map (pages cost memory only once written), and
:meth:`~RemoteFile.ensure` fetches the ranges not yet there with ranged reads.  The existing parser and checker index
that view as they index a memory-mapped local file, so there is no second reader.  Bytes not fetched read as zeros,
so callers run their parse through :func:`header_only`, which fetches a first chunk, runs the parse, and grows the
fetched prefix until everything the parse consumed (the records it read, the offsets it reported) lies inside it.
A fence of 0xFF bytes after the fetched prefix makes a parse that runs past it fail at once (every length read
there is huge) instead of parsing zeros at length.

Fetching goes through fsspec (``pip install "gguf-construct[remote]"``), with huggingface_hub's file system for
``hf://``.  Failures (HTTP errors, timeouts after retries, a server without range support or size, a file shorter
than it says) raise :class:`RemoteError`, an ``OSError`` whose message names the URL and what went wrong.
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import sys
import tempfile
import time
from typing import Any, Callable, Iterator, TypeVar

from .errors import GGUFError

__all__ = [
    "RemoteError",
    "RemoteFile",
    "is_url",
    "open_remote",
    "header_only",
    "exists",
    "sibling_url",
    "FIRST_READ",
    "MARGIN",
]

FIRST_READ = 2 << 20  # the first ranged read; later reads grow the fetched prefix by GROWTH
GROWTH = 4
MARGIN = 64 << 10  # bytes past the last record read that a parse may have peeked at
FENCE = 64 << 10  # 0xFF bytes written after the fetched prefix while a header parse runs
MAX_REQUEST = 64 << 20  # one request fetches at most this much (bounded memory per request)
STREAM_CHUNK = 1 << 20
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PERMANENT_STATUS = range(400, 500)
_RETRY_STATUS = (408, 425, 429)

T = TypeVar("T")


class RemoteError(OSError):
    """A remote file could not be read: the message names the URL and the cause (never a traceback)."""


def is_url(source: Any) -> bool:
    """True for strings with a URL scheme (``https://``, ``hf://``, ``s3://``, ...), which :func:`open_remote`
    reads; plain paths (also ``C:\\...``) are not URLs."""
    return isinstance(source, str) and bool(_URL.match(source))


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise RemoteError('reading URLs needs the remote extra: pip install "gguf-construct[remote]"') from None
    return fsspec


def _filesystem(url: str, timeout: float, storage_options: dict | None):
    """The fsspec file system and the path inside it for ``url``."""
    fsspec = _fsspec()
    options = dict(storage_options or {})
    protocol = url.split("://", 1)[0].lower()
    if protocol in ("http", "https") and "client_kwargs" not in options:
        try:
            import aiohttp
        except ImportError:
            raise RemoteError('reading http(s) URLs needs aiohttp: pip install "gguf-construct[remote]"') from None
        options["client_kwargs"] = {
            "timeout": aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        }
    try:
        return fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        raise RemoteError(f"{url}: the file system for {protocol}:// is not installed ({exc})") from None
    except ValueError as exc:
        raise RemoteError(f"{url}: {exc}") from None


def _status(exc: BaseException) -> int | None:
    for attr in ("status", "code", "status_code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _root(exc: BaseException) -> BaseException:
    """The exception a client library wrapped (fsspec turns a failed HEAD into FileNotFoundError)."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, FileNotFoundError) and cause is not None:
        return _root(cause)
    return exc


def _describe(exc: BaseException) -> str:
    exc = _root(exc)
    status = _status(exc)
    if isinstance(exc, FileNotFoundError):
        return "not found (HTTP 404 or no such object)"
    if isinstance(exc, PermissionError) or status in (401, 403):
        return f"access denied{f' (HTTP {status})' if status else ''}"
    if status is not None:
        return f"HTTP {status}: {getattr(exc, 'message', '') or exc}"
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        return "timed out"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _transient(exc: BaseException) -> bool:
    exc = _root(exc)
    if isinstance(
        exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotImplementedError, AttributeError, TypeError)
    ):
        return False
    status = _status(exc)
    if status is not None:
        return status in _RETRY_STATUS or status >= 500
    return True


class RemoteFile:
    """A remote file as a lazily filled buffer of its full length (see the module docstring).

    ``bytes_fetched`` and ``requests`` count what went over the network; :meth:`stats` reports them.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        first_read: int = FIRST_READ,
        storage_options: dict | None = None,
    ):
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.first_read = first_read
        self.bytes_fetched = 0
        self.requests = 0
        self.note: str | None = None
        self._fs, self._path = _filesystem(url, timeout, storage_options)
        # plain http(s): ranges are fetched with a bounded read of our own (fsspec reads a 206 body whole, so a
        # server that sends more than asked could fill memory); other file systems use their own ranged reads
        self._http_headers = (
            dict((storage_options or {}).get("headers") or {})
            if url.split("://", 1)[0].lower() in ("http", "https")
            else None
        )
        self._ranges: list[list[int]] = []  # sorted, disjoint [start, end) ranges that hold the file's bytes
        self._stream = None
        self._stream_pos = 0
        self._fh = self._retrying("open", self._open)
        size = getattr(self._fh, "size", None)
        if size is None:
            self._close_handles()
            raise RemoteError(
                f"{url}: the server does not say how long the file is (no Content-Length), so it "
                "cannot be read in ranges; download it and check the local copy"
            )
        self.size = int(size)
        self._map, self._spill = _lazy_map(self.size)
        self.view = memoryview(self._map) if self._map is not None else memoryview(b"")

    # -- what is there -------------------------------------------------------------------------------------
    @property
    def prefix_end(self) -> int:
        """End of the fetched range that starts at offset 0 (0 when nothing is fetched)."""
        return self._ranges[0][1] if self._ranges and self._ranges[0][0] == 0 else 0

    def has(self, start: int, end: int) -> bool:
        """True when every byte of [start, end) has been fetched."""
        return not list(self._missing(start, end))

    def stats(self) -> dict:
        """What reading this file cost: URL, file size, bytes fetched, requests (the size lookup included; and a
        note on fallbacks)."""
        out = {"url": self.url, "size": self.size, "bytes_fetched": self.bytes_fetched, "requests": self.requests}
        if self.note:
            out["note"] = self.note
        return out

    # -- fetching ------------------------------------------------------------------------------------------
    def ensure(self, start: int, end: int) -> None:
        """Fetch the bytes of [start, end) not fetched yet (clipped to the file), in as few requests as allowed."""
        start, end = max(0, start), min(self.size, end)
        for a, b in list(self._missing(start, end)):
            for c in range(a, b, MAX_REQUEST):
                d = min(b, c + MAX_REQUEST)
                data = self._read(c, d)
                self._map[c:d] = data
                self._add(c, d)

    def fence(self) -> None:
        """Fill the unfetched bytes just after the fetched prefix with 0xFF (see the module docstring)."""
        start = self.prefix_end
        for a, b in self._missing(start, min(self.size, start + FENCE)):
            self._map[a:b] = b"\xff" * (b - a)

    def release(self, start: int, end: int) -> None:
        """Give back the memory of the whole pages inside [start, end) (they are fetched again when needed)."""
        if self._spill is not None or self._map is None:
            return
        page = mmap.PAGESIZE
        a = -(-max(0, start) // page) * page
        b = min(self.size, end) // page * page
        if b <= a:
            return
        if hasattr(self._map, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED, a, b - a)
            self._remove(a, b)

    def close(self) -> None:
        """Release the buffer and the connections (views still alive keep the memory until they go)."""
        self._close_handles()
        try:
            self.view.release()
            if self._map is not None:
                self._map.close()
        except BufferError:
            pass  # views of tensors are still alive; the memory goes with them
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def __enter__(self) -> "RemoteFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------------------
    def _open(self):
        self.requests += 1  # the size lookup (HEAD for http)
        return self._fs.open(self._path, "rb", block_size=self.first_read, cache_type="none")

    def _close_handles(self) -> None:
        for handle in (getattr(self, "_fh", None), self._stream):
            try:
                if handle is not None:
                    handle.close()
            except Exception:  # noqa: BLE001 - closing a broken connection must not hide the real error
                pass
        self._stream = None

    def _retrying(self, what: str, fn: Callable[[], T]) -> T:
        for attempt in range(self.retries + 1):
            try:
                return fn()
            except (RemoteError, _NoRanges):
                raise
            except Exception as exc:  # noqa: BLE001 - every client library raises its own types
                if attempt == self.retries or not _transient(exc):
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise RemoteError(f"{self.url}: {what} failed{tries}: {_describe(exc)}") from None
                time.sleep(min(2.0, 0.1 * 2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(self, start: int, end: int) -> bytes:
        if self._stream is None:
            try:
                data = self._retrying(f"reading bytes {start}-{end - 1}", lambda: self._ranged(start, end))
            except _NoRanges:
                self.note = (
                    "the server does not support range requests: read by streaming from the start "
                    "of the file (every byte before the ones needed is transferred)"
                )
                data = self._streamed(start, end)
        else:
            data = self._streamed(start, end)
        if len(data) != end - start:
            raise RemoteError(
                f"{self.url}: the file is shorter than it claims: asked for bytes {start}-{end - 1} "
                f"of a {self.size}-byte file, got {len(data)} bytes"
            )
        return data

    def _ranged(self, start: int, end: int) -> bytes:
        self.requests += 1
        fetch = getattr(self._fh, "_fetch_range", None)  # one request (fsspec's buffered files bound what it reads)
        try:
            if self._http_headers is not None:
                data = _http_range(self.url, start, end, self.timeout, self._http_headers)
            elif fetch is not None:
                data = fetch(start, end)
            else:  # files without ranged fetching of their own (in-memory, local, ...)
                self._fh.seek(start)
                data = self._fh.read(end - start + 1)
        except ValueError as exc:
            if "range" in str(exc).lower():
                raise _NoRanges() from None
            raise
        data = bytes(data[: end - start + 1])  # one byte more than asked is enough to tell "too long"
        self.bytes_fetched += len(data)
        if len(data) > end - start:
            raise RemoteError(
                f"{self.url}: the server sent more than the {end - start} bytes asked for "
                f"(bytes {start}-{end - 1}); it does not honour range requests correctly"
            )
        return data

    def _streamed(self, start: int, end: int) -> bytes:
        """Read [start, end) from a sequential stream (servers without ranges), restarting it when behind."""
        if self._stream is None or self._stream_pos > start:
            if self._stream is not None:
                self._stream.close()
            self._stream = self._retrying("opening a stream", lambda: self._fs.open(self._path, "rb", block_size=0))
            self._stream_pos = 0
            self.requests += 1
        parts = []
        while self._stream_pos < end:
            want = min(STREAM_CHUNK, end - self._stream_pos)
            try:
                chunk = self._stream.read(want)
            except Exception as exc:  # noqa: BLE001
                raise RemoteError(
                    f"{self.url}: streaming failed at byte {self._stream_pos}: {_describe(exc)}"
                ) from None
            if not chunk:
                break
            chunk = chunk[:want]
            self.bytes_fetched += len(chunk)
            lo = max(0, start - self._stream_pos)
            if lo < len(chunk):
                parts.append(chunk[lo:])
            self._stream_pos += len(chunk)
        return b"".join(parts)

    def _missing(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        pos = start
        i = bisect.bisect_right([r[1] for r in self._ranges], start)
        for a, b in self._ranges[i:]:
            if a >= end:
                break
            if a > pos:
                yield pos, a
            pos = max(pos, b)
        if pos < end:
            yield pos, end

    def _add(self, start: int, end: int) -> None:
        merged = [start, end]
        keep = []
        for r in self._ranges:
            if r[1] < merged[0] or r[0] > merged[1]:
                keep.append(r)
            else:
                merged = [min(r[0], merged[0]), max(r[1], merged[1])]
        keep.append(merged)
        self._ranges = sorted(keep)

    def _remove(self, start: int, end: int) -> None:
        out = []
        for a, b in self._ranges:
            if b <= start or a >= end:
                out.append([a, b])
                continue
            if a < start:
                out.append([a, start])
            if b > end:
                out.append([end, b])
        self._ranges = out


class _NoRanges(Exception):
    """The server answered a ranged read with the whole file."""


def _http_range(url: str, start: int, end: int, timeout: float, headers: dict) -> bytes:
    """Bytes [start, end) of an http(s) URL in one ranged GET, reading at most one byte more than asked whatever
    the server sends (enough to tell that it ignored the range); ``_NoRanges`` when it answers a range past the
    start with the whole file."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={**headers, "Range": f"bytes={start}-{end - 1}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's URL
            if response.status == 206:
                return response.read(end - start + 1)
            if start == 0:  # the whole file from its start: the first bytes are the ones asked for
                return response.read(end - start)
            raise _NoRanges()
    except urllib.error.HTTPError as exc:
        if exc.code == 416:  # the range starts past the end: nothing there
            return b""
        raise


def _lazy_map(size: int):
    """(map, spill file): anonymous memory that costs nothing until written; a sparse temporary file where the
    system refuses an anonymous map that large."""
    if size == 0:
        return None, None
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    noreserve = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
    if flags:
        try:
            return mmap.mmap(-1, size, flags=flags | noreserve), None
        except (OSError, ValueError, OverflowError):
            pass
    spill = tempfile.TemporaryFile(prefix="gguf-remote-")
    spill.truncate(size)
    return mmap.mmap(spill.fileno(), size), spill


def open_remote(url: str, **options) -> RemoteFile:
    """Open ``url`` for ranged reading (nothing but its size is fetched yet); ``options`` are those of
    :class:`RemoteFile` (``timeout``, ``retries``, ``first_read``, ``storage_options``)."""
    return RemoteFile(url, **options)


def header_only(
    remote: RemoteFile,
    attempt: Callable[[], T],
    reach: Callable[[T], int],
    error_reach: Callable[[GGUFError], int] | None = None,
) -> T:
    """Run ``attempt`` (a parse of ``remote.view``) on a fetched prefix that grows until it covers ``reach`` of
    the result (the end of what the parse consumed) plus :data:`MARGIN`; a :class:`GGUFError` raised by the parse
    is judged the same way by its offset.  Returns (or raises) what the parse of the whole file would."""
    remote.ensure(0, remote.first_read)
    while True:
        remote.fence()
        try:
            result = attempt()
            need = reach(result)
            error = None
        except GGUFError as exc:
            error = exc
            need = error_reach(exc) if error_reach is not None else (exc.offset or 0)
        need = min(remote.size, need + MARGIN)
        if remote.prefix_end >= need:
            if error is not None:
                raise error
            return result
        remote.ensure(0, min(remote.size, max(need + remote.first_read, remote.prefix_end * GROWTH)))


def sibling_url(url: str, name: str) -> str:
    """The URL of file ``name`` in the same folder as ``url``."""
    return url.rsplit("/", 1)[0] + "/" + name


def exists(url: str, *, timeout: float = 30.0, storage_options: dict | None = None) -> bool:
    """True when ``url`` names an existing file (False on any error)."""
    try:
        fs, path = _filesystem(url, timeout, storage_options)
        return bool(fs.exists(path))
    except Exception:  # noqa: BLE001 - a sibling that cannot be reached counts as absent
        return False


def size_hint(source: Any) -> int | None:
    """Size of a local file or a :class:`RemoteFile` (None otherwise)."""
    if isinstance(source, RemoteFile):
        return source.size
    if isinstance(source, (str, os.PathLike)) and not is_url(source):
        try:
            return os.path.getsize(source)
        except OSError:
            return None
    return None


def remote_of(source: Any, keepalive: Any) -> RemoteFile | None:
    """The :class:`RemoteFile` behind what :func:`gguf_construct.format.reader.open_source` returned, if any."""
    for candidate in (keepalive, source):
        if isinstance(candidate, RemoteFile):
            return candidate
    return None


def print_transfer_stats(transfers: list[dict], command: str) -> None:
    """The ``--stats`` line on stderr: bytes and requests fetched for URLs, against the files' total size."""
    if not transfers:
        print(f"gguf-construct {command}: no URLs read, nothing fetched", file=sys.stderr)
        return
    fetched = sum(t["bytes_fetched"] for t in transfers)
    requests = sum(t["requests"] for t in transfers)
    size = sum(t["size"] for t in transfers)
    share = f" ({100 * fetched / size:.3g}% of {size:,} bytes)" if size else ""
    print(
        f"gguf-construct {command}: fetched {fetched:,} bytes{share} in {requests} requests "
        f"for {len(transfers)} URL(s)",
        file=sys.stderr,
    )
    for t in transfers:
        if t.get("note"):
            print(f"gguf-construct {command}: {t['url']}: {t['note']}", file=sys.stderr)
