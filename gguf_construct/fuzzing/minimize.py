"""Minimising reproducers: first structurally (drop whole KV pairs, tensors and array items of the
:class:`~gguf_construct.breaking.rawfile.RawFile`, so the result stays well-formed around the bug), then by delta
debugging over bytes (1-minimal by chunk removal, then zeroing).

The property is "the target still disagrees with the oracle in the same way" (see
:func:`gguf_construct.fuzzing.runner.signature`); each test runs the target, so the number of tests is bounded.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from ..breaking.rawfile import Arr, RawFile

__all__ = ["ddmin", "shrink_raw"]


def ddmin(data: bytes, keeps: Callable[[bytes], bool], *, max_tests: int = 300, max_seconds: float = 30.0) -> bytes:
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
            candidate = best[:start] + best[start + chunk :]
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
            part = best[start : start + chunk]
            if any(part):
                candidate = best[:start] + bytes(len(part)) + best[start + chunk :]
                if test(candidate):
                    best = candidate
            start += chunk
            if tests >= max_tests or time.monotonic() > deadline:
                return best
        chunk //= 2
    return best


def shrink_raw(raw: RawFile, keeps: Callable[[bytes], bool], *, max_tests: int = 120) -> RawFile:
    """Drop KV pairs, tensors, array items and trailing bytes of ``raw`` while ``keeps(encoded)`` holds."""
    tests = 0

    def attempt(candidate: RawFile) -> bool:
        nonlocal tests
        if tests >= max_tests:
            return False
        tests += 1
        try:
            data = candidate.encode()[0]
        except (ValueError, OverflowError, MemoryError):
            return False
        return bool(keeps(data))

    changed = True
    while changed and tests < max_tests:
        changed = False
        for i in reversed(range(len(raw.kvs))):
            cand = raw.copy()
            del cand.kvs[i]
            if attempt(cand):
                raw, changed = cand, True
        for i in reversed(range(len(raw.tensors))):
            cand = raw.copy()
            del cand.tensors[i]
            if attempt(cand):
                raw, changed = cand, True
        for i, kv in enumerate(raw.kvs):
            v = kv.value
            if isinstance(v, Arr) and v.length is None and len(v.items) > 1:
                cand = raw.copy()
                cand.kvs[i] = replace(kv, value=Arr(v.item_type, v.items[: len(v.items) // 2]))
                if attempt(cand):
                    raw, changed = cand, True
        if raw.tail:
            cand = raw.copy()
            cand.tail = raw.tail[: len(raw.tail) // 2]
            if attempt(cand):
                raw, changed = cand, True
    return raw
