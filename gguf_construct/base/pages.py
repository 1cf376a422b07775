"""Giving back the pages of a memory-mapped file once a read has judged them.

Reading a file through its map makes every page read part of the process's resident memory until the map is
closed, so a 4 GiB string read once would stay 4 GiB of RSS.  :func:`release` tells the kernel that a range of a
read-only map is not needed for now (``MADV_DONTNEED``): the pages leave the process (the kernel's page cache may
keep them) and are read again from the file, unchanged, if the range is touched later.  Buffers that are not
maps (bytes, a remote file's buffer) and systems without ``madvise`` are left alone.
"""

from __future__ import annotations

import mmap

__all__ = ["release", "RELEASE_MIN"]

RELEASE_MIN = 1 << 20  # ranges shorter than this are not worth a system call


def release(buf, start: int, end: int) -> None:
    """Drop the pages wholly inside ``[start, end)`` of ``buf`` from the process when ``buf`` is a read-only view
    of a memory map (the bytes stay readable).  A writable view is left alone: a private (copy-on-write) map
    would lose its changes."""
    if end - start < RELEASE_MIN or not getattr(buf, "readonly", False):
        return
    mm = getattr(buf, "obj", None)
    advise = getattr(mm, "madvise", None)
    if not isinstance(mm, mmap.mmap) or advise is None or not hasattr(mmap, "MADV_DONTNEED"):
        return
    page = mmap.PAGESIZE
    lo = -(-start // page) * page
    hi = end // page * page
    if hi > lo:
        try:
            advise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError):  # a closed map or a range the kernel refuses: nothing to give back
            pass
