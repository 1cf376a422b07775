"""Pausing Python's cyclic garbage collector while many objects are made in bulk.

The collector runs each time allocations outnumber deallocations by a threshold (700 objects), and each of its
older generations is examined again as the heap grows: making millions of small objects that live on (a KV pair,
a tensor info and its value each) costs the collector more than making them, 2-3 times on 150,000 KV pairs.  The
objects a read makes hold no reference cycles, so nothing is lost by not looking for them meanwhile; collection
resumes when the outermost pause ends.

Objects made while the collector is paused are still its youngest generation, which its next run (at the next
allocation after the pause) would go through, all of them.  When a pause made many (:data:`AGE_AFTER`), they are
moved to the oldest generation as they are (``gc.freeze()`` then ``gc.unfreeze()``: no pass over them), which is
examined only when it has grown by a quarter since its last examination.  The objects of the process that were
young at that moment age with them: a reference cycle among them is then freed by that rarer full collection.
A program that froze objects itself (``gc.freeze()`` before a fork) is left as it is.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

__all__ = ["gc_paused", "without_gc", "AGE_AFTER"]

AGE_AFTER = 100_000  # new objects a pause made past which they are moved to the oldest generation

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
            if gc.get_count()[0] > AGE_AFTER and not gc.get_freeze_count():  # a program's own freeze is kept
                gc.freeze()  # the young generation to the permanent one, then to the oldest: no pass over them
                gc.unfreeze()
            gc.enable()


def without_gc(fn: F) -> F:
    """``fn`` run inside :func:`gc_paused`."""

    @functools.wraps(fn)
    def paused(*args, **kwargs):
        with gc_paused():
            return fn(*args, **kwargs)

    return paused  # type: ignore[return-value]
