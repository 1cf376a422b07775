"""Pausing Python's cyclic garbage collector while many objects are made in bulk.

The collector runs each time allocations outnumber deallocations by a threshold (700 objects), and each of its
older generations is examined again as the heap grows: making millions of small objects that live on (a KV pair,
a tensor info and its value each) costs the collector more than making them, 2-3 times on 150,000 KV pairs.  The
objects a read makes hold no reference cycles, so nothing is lost by not looking for them meanwhile; collection
resumes when the outermost pause ends.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

__all__ = ["gc_paused", "without_gc"]

F = TypeVar("F", bound=Callable)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (re-enabled after it when it was enabled before it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def without_gc(fn: F) -> F:
    """``fn`` run inside :func:`gc_paused`."""

    @functools.wraps(fn)
    def paused(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)

    return paused  # type: ignore[return-value]
