"""Names of the shards of a split model (``<prefix>-00001-of-00003.gguf``), from spec/naming.yaml's ``shard``."""

from __future__ import annotations

import functools
import os
import re

from . import spec as _spec

__all__ = ["shard_path", "parse_shard_path", "shard_set_paths"]

_SUFFIX = re.compile(r"-(\d+)-of-(\d+)\.gguf\Z", re.IGNORECASE)


@functools.lru_cache(maxsize=None)
def _shard_spec() -> dict:
    return _spec.load_yaml("naming.yaml")["shard"]


def shard_path(prefix: str, index: int, count: int) -> str:
    """The path of shard ``index`` (0-based, as split.no) of ``count``: ``PREFIX-00001-of-00003.gguf``."""
    number = index + _shard_spec()["first_number"]
    return f"{prefix}-{_shard_spec()['format'].format(number=number, total=count)}.gguf"


def parse_shard_path(path: str) -> tuple[str, int, int, int] | None:
    """``(prefix, index, count, digits)`` of a shard path (index 0-based), or None when the name has no
    ``-N-of-M.gguf`` suffix.  ``digits`` is the width of the number as written (5 when conforming)."""
    m = _SUFFIX.search(os.fspath(path))
    if m is None:
        return None
    index = int(m.group(1)) - _shard_spec()["first_number"]
    count = int(m.group(2))
    if index < 0 or count < 1 or index >= count:
        return None
    return os.fspath(path)[:m.start()], index, count, len(m.group(1))


def shard_set_paths(path: str) -> list[str] | None:
    """Every shard path of the set ``path`` belongs to (in order, whether present or not), or None when ``path``
    is not named as a shard.  Numbers keep the width used in ``path``."""
    found = parse_shard_path(path)
    if found is None:
        return None
    prefix, _, count, digits = found
    m = _SUFFIX.search(os.fspath(path))
    total, extension = m.group(2), os.fspath(path)[-len(".gguf"):]  # as written (width, letter case)
    first = _shard_spec()["first_number"]
    return [f"{prefix}-{n + first:0{digits}d}-of-{total}{extension}" for n in range(count)]
