"""The command line's guard against input files changed underneath it by another process.

A mapped file that another process truncates kills the reader with SIGBUS the moment it touches a page past the
new end (a ``cp`` over the model while ``check --data`` or ``hash`` reads it).  While a command runs, every file it
maps gets a read lease (Linux ``F_SETLEASE``): another process that opens the file for writing or truncates it is
held by the kernel (up to ``/proc/sys/fs/lease-break-time`` seconds) and this process is sent SIGIO first.  The
handler raises :class:`SourceChanged` naming the file, so the command stops with one line before it reads a changed
byte; the other process goes on once the lease is let go.  Where leases are not available (another system, a file
of another owner without CAP_LEASE, a file open for writing already, a filesystem without leases), the file is read
unguarded, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import weakref
from typing import Any, Iterator

from ..base import mapwatch

try:
    import fcntl

    _LEASE = getattr(fcntl, "F_SETLEASE", None)
    _GETLEASE = getattr(fcntl, "F_GETLEASE", None)
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None  # type: ignore[assignment]
    _LEASE = _GETLEASE = None

__all__ = ["SourceChanged", "leased_inputs"]

_held: dict[int, tuple[str, Any]] = {}  # descriptor holding a lease -> the path it guards, a weak ref to its map


class SourceChanged(BaseException):
    """Another process opened an input file for writing or truncated it while a command read it (a BaseException,
    as KeyboardInterrupt: no ``except Exception`` on the way may take it for a problem of the file)."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


def _release(fd: int) -> None:
    if _held.pop(fd, None) is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _take(fileno: int, path: str, mapping: Any) -> None:
    """Hold a read lease on the file open as ``fileno`` until ``mapping`` goes (best effort)."""
    try:
        fd = os.dup(fileno)
    except OSError:
        return
    try:
        fcntl.fcntl(fd, _LEASE, fcntl.F_RDLCK)
    except OSError:  # not ours, open for writing elsewhere, no lease on this filesystem
        os.close(fd)
        return
    try:
        ref = weakref.ref(mapping)
        weakref.finalize(mapping, _release, fd)
    except TypeError:  # pragma: no cover - a mapping without weak references: held until the command ends
        ref = None
    _held[fd] = (path, ref)


def _on_break(signum: int, frame: Any) -> None:
    """SIGIO: raise :class:`SourceChanged` for a lease being broken (its descriptor's lease reads F_UNLCK) while
    its file is still mapped; a lease whose map was closed already is let go (the command is done with the file)."""
    for fd, (path, ref) in list(_held.items()):
        try:
            state = fcntl.fcntl(fd, _GETLEASE)
        except OSError:
            continue
        if state != fcntl.F_UNLCK:
            continue
        mapping = ref() if ref is not None else None
        if ref is not None and (mapping is None or getattr(mapping, "closed", False)):
            _release(fd)
            continue
        raise SourceChanged(path)


@contextlib.contextmanager
def leased_inputs() -> Iterator[None]:
    """While active, every file mapped for reading is guarded by a read lease (see the module); every lease taken
    is let go on the way out.  Does nothing off Linux or outside the main thread (where signals cannot be handled)."""
    if _LEASE is None or _GETLEASE is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGIO, _on_break)
    mapwatch.watch(_take)
    try:
        yield
    finally:
        mapwatch.unwatch(_take)
        for fd in list(_held):
            _release(fd)
        signal.signal(signal.SIGIO, before)
