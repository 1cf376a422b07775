"""Writing a file atomically: everything the project writes goes to a temporary file beside the target and is
renamed over it only when complete, so a failure never leaves half a file."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import signal
import tempfile
import threading
from typing import Iterator, Sequence

__all__ = ["atomic_path", "atomic_paths"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """A temporary path in ``path``'s directory to write to.  When the block ends normally the file is synced and
    renamed over ``path`` with the mode a plain ``open(path, "w")`` would give (an existing file's mode is kept);
    when it raises, the temporary file is removed.  ``OSError`` names ``path``, never the temporary file."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    _refuse_special(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        os.close(fd)
    except OSError as exc:
        raise _about_target(exc, path) from None
    try:
        os.chmod(tmp, _mode_for(path))
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _about_target(exc, path) from None
        raise


@contextlib.contextmanager
def atomic_paths(paths: Sequence[str | os.PathLike]) -> Iterator[list[str]]:
    """Temporary paths for several files that appear together or not at all (a split model's shards): when the
    block ends normally every file is synced, then all are renamed over their targets with Ctrl-C held back until
    the last rename; when it raises (an interrupt included), every temporary file is removed and no target is
    touched."""
    with contextlib.ExitStack() as stack:
        managers = [atomic_path(p) for p in paths]
        tmps = [stack.enter_context(m) for m in managers]
        yield tmps
        stack.pop_all()  # the renames below are ours to make, together
    with _interrupts_held():
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Delay SIGINT until the block ends (on the main thread; elsewhere signals cannot be caught anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


def _refuse_special(path: str) -> None:
    """A device, pipe, socket or folder at ``path`` is never replaced by a rename (``--out /dev/null`` must not
    turn the system's /dev/null into a file): ``OSError`` naming it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _about_target(exc, path) from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise OSError(errno.EEXIST, f"is {kind}; only a regular file is replaced", path)


def _about_target(exc: OSError, path: str) -> OSError:
    """``exc`` naming the file the user asked for instead of the temporary file it happened on."""
    if exc.errno is None:
        return exc
    folder = os.path.dirname(os.path.abspath(path))
    if exc.errno == errno.ENOENT and not os.path.isdir(folder):  # the file is new: what is missing is its folder
        shown = os.path.dirname(path) or folder
        return OSError(exc.errno, f"cannot write it: the folder {shown} does not exist", path)
    return OSError(exc.errno, exc.strerror or str(exc), path)


def _mode_for(path: str) -> int:
    """The mode a written file gets: the existing file's (an in-place rewrite keeps it), else what a plain
    ``open(path, "w")`` would give under the current umask (mkstemp's own 0600 would hide the file from others)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
