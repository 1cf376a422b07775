"""Text from untrusted files made safe for a terminal."""

from __future__ import annotations

import re

__all__ = ["printable"]

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters (C0, DEL, C1, line/paragraph separators, bidi overrides) and backslashes
    escaped as Python does (``\\x1b``, ``\\n``, ``\\u202e``), so that a key or tensor name cannot drive the terminal."""
    if not _UNSAFE.search(text) and "\\" not in text:
        return text
    return _UNSAFE.sub(lambda m: repr(m.group())[1:-1], text.replace("\\", "\\\\"))
