"""The reader's ground floor: open a source, bootstrap (magic, version, byte order), size tensors and align
offsets.  The one read of a file's head built on it is :func:`gguf_construct.rulebook.read_head`, used by both
``load`` and ``check``.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from dataclasses import dataclass
from typing import Any, Iterable

from . import fieldrules, structs
from ..base import mapwatch
from ..base.remote import RemoteFile, is_url, open_remote
from .spec import TensorTypeSpec, tensor_type_by_id

__all__ = [
    "Bootstrap",
    "bootstrap",
    "TensorExtent",
    "tensor_extent",
    "open_source",
    "align_offset",
    "LEGACY_MAGICS",
    "DEFAULT_ALIGNMENT",
    "ALIGNMENT_KEY",
    "MAX_DIMS",
    "MAX_KEY_BYTES",
    "MAX_NAME_BYTES",
]

_SPEC = structs.container_spec()
LEGACY_MAGICS: dict[bytes, str] = {k.encode("ascii"): v for k, v in _SPEC["meta"]["legacy_magics"].items()}
DEFAULT_ALIGNMENT: int = _SPEC["layout"]["alignment"]["default"]
ALIGNMENT_KEY: str = _SPEC["layout"]["alignment"]["key"]
MAX_DIMS: int = structs.field_limit("tensor_info", "n_dimensions")  # GGML_MAX_DIMS
MAX_KEY_BYTES: int = structs.field_limit("metadata_kv", "key", "max_size")
MAX_NAME_BYTES: int = structs.field_limit("tensor_info", "name", "max_size")


@dataclass
class TensorExtent:
    """What a tensor info's shape and type make of its data: the type, element count and byte size (None where
    undefined; which rule that breaks is the rule predicates' to say)."""

    spec: TensorTypeSpec | None
    nelem: int | None
    nbytes: int | None


_INT64 = 2**63


def tensor_extent(shape: tuple[int, ...], type_id: int) -> TensorExtent:
    """The element count and byte size of a tensor (a tensor without dimensions is a scalar: ne[0] is 1): no
    element count for a dimension of 2^63 or more, no byte size for an unknown or removed type, a row that is not
    a whole number of blocks, or an element count of 2^63 or more."""
    spec_t = tensor_type_by_id().get(type_id)
    if any(d >= _INT64 for d in shape):
        return TensorExtent(spec_t, None, None)
    nelem = 1
    for d in shape:
        nelem *= d
    if spec_t is None or not spec_t.is_current or (shape[0] if shape else 1) % spec_t.block_size or nelem >= _INT64:
        return TensorExtent(spec_t, nelem, None)
    return TensorExtent(spec_t, nelem, nelem // spec_t.block_size * spec_t.type_size)


def align_offset(offset: int, alignment: int) -> int:
    """``offset`` rounded up to a multiple of ``alignment`` (spec: align_offset)."""
    return offset + (alignment - offset % alignment) % alignment


def open_source(source) -> tuple[Any, str | None, Any]:
    """Return ``(buffer, path, keepalive)`` for a path, URL, bytes-like object or binary file object.

    Paths and real files are memory-mapped read-only; nothing is read until used.  A path must name a regular
    file (a device or pipe has no size to map: ``OSError``); a file object that is not a regular file (a pipe,
    ``sys.stdin.buffer``) is read to its end.  URLs (and an open :class:`~gguf_construct.base.remote.RemoteFile`) give
    its lazily fetched buffer: run parses through :func:`gguf_construct.base.remote.header_only`.
    """
    if is_url(source):
        remote = open_remote(source)
        return remote.view, source, remote
    if isinstance(source, RemoteFile):
        return source.view, source.url, None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        # O_NONBLOCK: opening a named pipe must not wait for a writer before it can be refused
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            kind = _not_regular(fd)
        except BaseException:
            os.close(fd)
            raise
        if kind:  # refused before fdopen, which would name the descriptor instead of the path
            os.close(fd)
            if kind == "a directory":
                raise IsADirectoryError(errno.EISDIR, "is a directory; name a GGUF file in it", path)
            raise OSError(
                errno.EINVAL,
                f"not a regular file ({kind}); GGUF files are memory-mapped, so save "
                f"the stream to a file first (the command line reads standard input "
                f"as '-')",
                path,
            )
        with os.fdopen(fd, "rb") as fh:
            return _map_file(fh, path)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return memoryview(source).cast("B"), None, None
    if hasattr(source, "read"):
        try:
            fileno = source.fileno()
        except (OSError, AttributeError, ValueError):
            fileno = None
        if fileno is not None and not _not_regular(fileno):
            return _map_file(source, getattr(source, "name", None))
        data = source.read()
        return memoryview(data).cast("B"), None, None
    raise TypeError(f"cannot read GGUF from {type(source).__name__}")


def _not_regular(fileno: int) -> str | None:
    """What kind of non-regular file ``fileno`` is (character device, pipe, ...), or None for a regular file."""
    mode = os.fstat(fileno).st_mode
    if stat.S_ISREG(mode):
        return None
    for test, kind in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def _map_file(fh, path):
    size = os.fstat(fh.fileno()).st_size
    if size == 0:
        return memoryview(b""), path, None
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    mapwatch.mapped(fh.fileno(), path, mm)
    return memoryview(mm), path, mm


@dataclass
class Bootstrap:
    """What the first bytes say: the version and byte order, or the header problem that stops every reader."""

    version: int | None = None
    byte_order: str | None = None
    raw_version: int | None = None  # the version word as read little-endian
    rule: str | None = None  # HDR-TRUNC, HDR-MAGIC or HDR-VERSION when the file cannot be read on
    path: str = ""
    field_start: int = 0  # where the field named by ``path`` starts
    magic: bytes = b""
    legacy: str | None = None  # the pre-GGUF format a wrong magic names


def bootstrap(buf) -> Bootstrap:
    """Read magic and version through the generated family (they read alike in every family) and detect the byte
    order; the one bootstrap of the reader and the checker.  The rules it names are the spec's for those fields
    (:mod:`gguf_construct.format.fieldrules`): the read's own problem for a magic or version it cannot read, the
    version's ``invalid`` rule for a version the spec does not define."""
    probe = structs.family(structs.current_version(), structs.BYTE_ORDERS[0])
    reading = probe.read("header", buf[: probe.min_sizes["header"]], 0, "header")
    head, problem = reading.root, reading.problem
    magic, version = head["magic"], head.fields.get("version")
    out = Bootstrap(magic=magic.value)
    if magic.end is None or version is None or version.end is None:
        out.rule, out.path, out.field_start = problem.rule, problem.path, problem.offset
        out.legacy = LEGACY_MAGICS.get(magic.value) if magic.end is None else None
        return out
    out.raw_version = version.value
    out.version, out.byte_order = structs.detect(bytes(buf[: version.end]))
    if not structs.is_valid("header", "version", out.version):
        out.rule, out.path, out.field_start = (
            fieldrules.field_rule("header", "version", "invalid"),
            version.path,
            version.start,
        )
    return out


def tensor_nbytes(ggml_type: int, shape: Iterable[int]) -> int:
    """Bytes of a tensor's data (Python integers: no overflow)."""
    t = tensor_type_by_id()[int(ggml_type)]
    n = 1  # a tensor without dimensions is a scalar (every ne[i] is 1)
    for d in shape:
        n *= int(d)
    return n // t.block_size * t.type_size
