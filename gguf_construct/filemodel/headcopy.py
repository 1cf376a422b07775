"""Writing a loaded file's head again from the bytes it was read from, wherever nothing changed.

A file loaded and written again (``set`` of one key, ``rename-tensor``, ``save`` after an edit) used to build every
KV pair and tensor info anew through the generated structs: tens of microseconds a record, so a head of millions of
records took minutes to write back.  A record whose key and value object are the ones read is written as the bytes
it was read from (which is what building it would give: the round trip is byte-exact), runs of such records in one
copy; only new or changed records are built.  The head's shape comes from spec/gguf.yaml (``file_head``: a header
whose count fields give the lengths of the record lists after it); a spec of another shape writes whole, as before.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
from construct import Container

from ..format import structs

__all__ = ["KeptRecords", "kept_records", "count_fields", "head_counts", "header_bytes", "write_kvs"]


@dataclass
class KeptRecords:
    """Where each KV pair of a loaded file was read and which value object it became (8 bytes a record each)."""

    version: int
    byte_order: str
    buf: Any
    starts: np.ndarray
    ends: np.ndarray
    keys: list  # the key objects of the loaded Metadata, in file order
    values: list  # the GGUFValue made from each record, in file order


def kept_records(version: int, byte_order: str, buf, starts: Iterable[int], ends: Iterable[int], items: Mapping):
    """The :class:`KeptRecords` of a head read from ``buf`` whose records became ``items`` (key -> GGUFValue, in
    file order)."""
    n = len(items)
    return KeptRecords(
        version,
        byte_order,
        buf,
        np.fromiter(starts, dtype=np.int64, count=n),
        np.fromiter(ends, dtype=np.int64, count=n),
        list(items),
        list(items.values()),
    )


@functools.lru_cache(maxsize=None)
def count_fields(version: int) -> dict[str, str]:
    """The record lists of ``file_head`` whose length a header field gives (spec/gguf.yaml ``repeat:
    header.X``): list id -> that header field."""
    out = {}
    for f in structs.container_spec_for(version)["types"]["file_head"]["seq"]:
        holder, _, name = f.get("repeat", "").partition(".")
        if holder == "header" and name:
            out[f["id"]] = name
    return out


@functools.lru_cache(maxsize=None)
def head_counts(version: int) -> tuple[str, str] | None:
    """The header's count fields of the KV pairs and of the tensor infos, when ``file_head`` is a header followed
    by exactly those two repeated records (spec/gguf.yaml); None for any other shape."""
    seq = structs.container_spec_for(version)["types"]["file_head"]["seq"]
    counts = count_fields(version)
    if [f["id"] for f in seq] != ["header", "metadata_kv", "tensor_infos"] or len(counts) != 2:
        return None
    return counts["metadata_kv"], counts["tensor_infos"]


def write_kvs(out: Any, items: Mapping, kept: KeptRecords | None, build, flush=None) -> None:
    """Write the KV records of ``items`` (key -> GGUFValue, in order): each one whose key and value are the very
    objects load made of record ``i`` of ``kept`` (records deleted or given another value since are passed over)
    as the bytes it was read from, runs of them in one write; any other through ``build(key, value)``, which writes
    it or holds it until ``flush()`` (called before every copied run and at the end)."""
    if kept is None:
        for key, value in items.items():
            build(key, value)
        if flush is not None:
            flush()
        return
    mv = memoryview(kept.buf)
    keys, values, n = kept.keys, kept.values, len(kept.values)
    i = 0
    run_start = run_end = -1
    for key, value in items.items():
        while i < n and values[i] is not value and items.get(keys[i]) is not values[i]:
            i += 1  # record i was deleted or given another value
        read_as = i < n and values[i] is value and keys[i] is key  # record i, as load made it
        if read_as and not _editable_in_place(value):
            a = int(kept.starts[i])
            if a != run_end:
                if run_end > run_start >= 0:
                    out.write(mv[run_start:run_end])
                elif flush is not None:
                    flush()
                run_start = a
            run_end = int(kept.ends[i])
            i += 1
            continue
        if read_as:
            i += 1  # record i, built again: its contents may have been edited in place
        if run_end > run_start >= 0:
            out.write(mv[run_start:run_end])
        run_start = run_end = -1
        build(key, value)
    if run_end > run_start >= 0:
        out.write(mv[run_start:run_end])
    if flush is not None:
        flush()


def _editable_in_place(value: Any) -> bool:
    """True when a value's contents may have changed since load without a new value object: a writable numpy
    array (arrays are read as copies) or a list (arrays of arrays read one by one).  Such a value is built again,
    never copied from the bytes it was read from."""
    data = value.value
    kind = type(data)
    return kind is list or (kind is np.ndarray and data.flags.writeable)


def header_bytes(fam, version: int, n_kv: int, n_tensors: int, extra: dict) -> bytes | None:
    """The header of a head with these counts (None when the spec's head is not header + KVs + tensor infos)."""
    counts = head_counts(version)
    if counts is None:
        return None
    return fam.types["header"].build(Container(version=version, **extra, **{counts[0]: n_kv, counts[1]: n_tensors}))
