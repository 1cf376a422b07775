"""Delta debugging over bytes: the smallest input (1-minimal by chunk removal) that keeps a property.

The property is "the target still disagrees with the oracle in the same way" (see
:func:`gguf_construct.fuzzing.runner.signature`); each test runs the target, so the number of tests is bounded.
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["ddmin"]


def ddmin(data: bytes, keeps: Callable[[bytes], bool], *, max_tests: int = 300,
          max_seconds: float = 30.0) -> bytes:
    """Shrink ``data`` while ``keeps(candidate)`` holds: remove chunks (halves, quarters, ... single bytes),
    then try zeroing the remaining bytes in chunks.  Stops after ``max_tests`` calls or ``max_seconds``.
    """
    deadline = time.monotonic() + max_seconds
    tests = 0
    seen: dict[bytes, bool] = {}

    def test(candidate: bytes) -> bool:
        nonlocal tests
        if candidate in seen:
            return seen[candidate]
        if tests >= max_tests or time.monotonic() > deadline:
            return False
        tests += 1
        ok = seen[candidate] = bool(keeps(candidate))
        return ok

    best = data
    n = 2
    while len(best) >= 2:
        chunk = max(1, len(best) // n)
        reduced = False
        start = 0
        while start < len(best):
            candidate = best[:start] + best[start + chunk:]
            if candidate and test(candidate):
                best = candidate
                reduced = True
            else:
                start += chunk
            if tests >= max_tests or time.monotonic() > deadline:
                return best
        if not reduced:
            if chunk == 1:
                break
            n = min(len(best), n * 2)
    # simplify the remaining bytes: zero runs that do not matter
    chunk = max(1, len(best) // 4)
    while chunk >= 1:
        start = 0
        while start < len(best):
            part = best[start:start + chunk]
            if any(part):
                candidate = best[:start] + bytes(len(part)) + best[start + chunk:]
                if test(candidate):
                    best = candidate
            start += chunk
            if tests >= max_tests or time.monotonic() > deadline:
                return best
        chunk //= 2
    return best
