"""A small HTTP file server with single-range ``Range`` support, for tests and benchmarks of remote reading.

The standard library's ``http.server`` ignores ``Range``.  This one serves a folder over loopback, answers
``bytes=a-b`` with 206, counts requests and bytes sent, and can misbehave on purpose: the first path segment picks
a mode (``/ok/``, ``/norange/`` ignores Range, ``/short/`` claims 4096 bytes more than it has, ``/flaky/`` fails
every other request with 503, ``/slow/`` answers after ``slow_seconds``, ``/error/`` always 500, ``/oversend/``
answers a range with 206 and no Content-Length, then sends the file to its end), followed by the file's path below
the folder.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["RangeServer", "MODES"]

MODES = ("ok", "norange", "short", "flaky", "slow", "error", "oversend")
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_SHORT_BY = 4096


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _resolve(self):
        parts = self.path.split("?", 1)[0].lstrip("/").split("/", 1)
        if len(parts) != 2 or parts[0] not in MODES:
            return None, None
        mode, rel = parts
        full = os.path.normpath(os.path.join(self.server.root, rel))  # no "..", but links may point anywhere
        if not full.startswith(self.server.root + os.sep) or not os.path.isfile(full):
            return mode, None
        return mode, full

    def _fail(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _prelude(self):
        owner = self.server.owner
        with owner.lock:
            owner.requests += 1
            n = owner.requests
        mode, full = self._resolve()
        if mode == "error" or (mode == "flaky" and n % 2 == 1):
            self._fail(503 if mode == "flaky" else 500)
            return None, None
        if mode == "slow":
            time.sleep(owner.slow_seconds)
        if full is None:
            self._fail(404)
            return None, None
        return mode, full

    def do_HEAD(self) -> None:  # noqa: N802
        mode, full = self._prelude()
        if full is None:
            return
        size = os.path.getsize(full) + (_SHORT_BY if mode == "short" else 0)
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        if mode != "norange":
            self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        mode, full = self._prelude()
        if full is None:
            return
        size = os.path.getsize(full)
        claimed = size + (_SHORT_BY if mode == "short" else 0)
        match = _RANGE.match(self.headers.get("Range", "")) if mode != "norange" else None
        if match and (match.group(1) or match.group(2)):
            a, b = match.group(1), match.group(2)
            start = int(a) if a else max(0, claimed - int(b))
            end = min(claimed - 1, int(b)) if a and b else claimed - 1
            if start >= claimed:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{claimed}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            real_end = min(end, size - 1)
            if mode == "oversend":  # a broken server: claims the range, sends everything after it, no length
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{claimed}")
                self.end_headers()
                self.close_connection = True
                self._send(full, start, size)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{claimed}")
            self.send_header("Content-Length", str(max(0, real_end - start + 1)))
            self.end_headers()
            self._send(full, start, real_end + 1)
            if real_end < end:
                self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self._send(full, 0, size)

    def _send(self, full: str, start: int, end: int) -> None:
        with open(full, "rb") as fh:
            fh.seek(start)
            pos = start
            while pos < end:
                chunk = fh.read(min(1 << 20, end - pos))
                if not chunk:
                    break
                with self.server.owner.lock:  # counted before sending: the client may be done before we are
                    self.server.owner.bytes_sent += len(chunk)
                try:
                    self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    return
                pos += len(chunk)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: str
    owner: "RangeServer"

    def handle_error(self, request, client_address) -> None:
        """A client that hung up (a timeout test, a streaming reader that had enough) is not an error."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class RangeServer:
    """Serve ``root`` on 127.0.0.1 (a free port) in a background thread; use as a context manager.

    ``url(rel, mode="ok")`` is the address of a file; ``requests`` and ``bytes_sent`` count the traffic (reset with
    :meth:`reset`).
    """

    def __init__(self, root: str, *, slow_seconds: float = 2.0):
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes_sent = 0
        self.slow_seconds = slow_seconds
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.root = os.path.abspath(root)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, rel: str, mode: str = "ok") -> str:
        """The URL of ``rel`` (a path below the served folder) in ``mode``."""
        return f"{self.base}/{mode}/{rel.lstrip('/')}"

    def reset(self) -> None:
        """Zero the counters."""
        with self.lock:
            self.requests = 0
            self.bytes_sent = 0

    def start(self) -> "RangeServer":
        """Start serving."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "RangeServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
