"""The call counter of the per-item-work tests (no timed tests: work is counted, not timed)."""

from __future__ import annotations

import gc
import sys

from gguf_construct.base.gcpause import gc_paused


def count_calls(fn, *, quiet_gc: bool = True) -> int:
    """Python-level and C-level calls made while ``fn()`` runs (sys.setprofile).  ``quiet_gc``: collect first and
    pause the collector while ``fn`` runs, so finalizers of earlier tests' objects are not counted as its work."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    if quiet_gc:
        gc.collect()
    sys.setprofile(profile)
    try:
        if quiet_gc:
            with gc_paused():
                fn()
        else:
            fn()
    finally:
        sys.setprofile(None)
    return calls
