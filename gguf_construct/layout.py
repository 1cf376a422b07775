"""Reading the raw structure of a GGUF file: bootstrap, parse the head with the generated structs, and compute
the data layout.  Used by the file model (:mod:`gguf_construct.model`) and the conformance checker.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from dataclasses import dataclass
from typing import Any

from . import structs
from .constructs import BufferStream, FieldError
from .errors import GGUFError, construct_path_to_field_path
from .remote import RemoteFile, is_url, open_remote

__all__ = ["RawHead", "open_source", "parse_head", "align_offset", "LEGACY_MAGICS"]

# Pre-GGUF ggml formats, as the first four bytes of a little-endian file.
LEGACY_MAGICS = {b"lmgg": "GGML (unversioned ggml)", b"fmgg": "GGMF", b"tjgg": "GGJT", b"algg": "GGLA (LoRA adapter)"}


def align_offset(offset: int, alignment: int) -> int:
    """``offset`` rounded up to a multiple of ``alignment`` (spec: align_offset)."""
    return offset + (alignment - offset % alignment) % alignment


@dataclass
class RawHead:
    """The parsed head of a file (everything up to the end of the tensor infos)."""

    version: int
    byte_order: str
    tree: Any  # Construct Container: header, metadata_kv, tensor_infos
    end: int  # offset just after the tensor infos
    family: structs.StructFamily


def open_source(source) -> tuple[Any, str | None, Any]:
    """Return ``(buffer, path, keepalive)`` for a path, URL, bytes-like object or binary file object.

    Paths and real files are memory-mapped read-only; nothing is read until used.  A path must name a regular
    file (a device or pipe has no size to map: ``OSError``); a file object that is not a regular file (a pipe,
    ``sys.stdin.buffer``) is read to its end.  URLs (and an open :class:`~gguf_construct.remote.RemoteFile`) give
    its lazily fetched buffer: run parses through :func:`gguf_construct.remote.header_only`.
    """
    if is_url(source):
        remote = open_remote(source)
        return remote.view, source, remote
    if isinstance(source, RemoteFile):
        return source.view, source.url, None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as fh:
            kind = _not_regular(fh.fileno())
            if kind:
                raise OSError(errno.EINVAL, f"not a regular file ({kind}); GGUF files are memory-mapped, so save "
                                            f"the stream to a file first (the command line reads standard input "
                                            f"as '-')", path)
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
    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


def _map_file(fh, path):
    size = os.fstat(fh.fileno()).st_size
    if size == 0:
        return memoryview(b""), path, None
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return memoryview(mm), path, mm


def parse_head(buf) -> RawHead:
    """Bootstrap (magic, version, byte order), then parse the head with the generated structs.

    Raises :class:`GGUFError` naming the offset and field of the first problem.
    """
    size = len(buf)
    magic = bytes(buf[:4])
    if size < 4:
        raise GGUFError(f"file too short for the magic: {size} bytes", offset=0, path="header.magic",
                        rule="HDR-TRUNC")
    if magic != b"GGUF":
        legacy = LEGACY_MAGICS.get(magic)
        what = f"legacy {legacy} file, not GGUF" if legacy else f"bad magic {magic!r}, expected b'GGUF'"
        raise GGUFError(what, offset=0, path="header.magic", rule="HDR-MAGIC")
    if size < 8:
        raise GGUFError("file too short for the version", offset=4, path="header.version", rule="HDR-TRUNC")
    version, byte_order = structs.detect(bytes(buf[:8]))
    if version not in structs.versions():
        raise GGUFError(f"unsupported GGUF version {version}", offset=4, path="header.version",
                        rule="HDR-VERSION")
    fam = structs.family(version, byte_order)
    stream = BufferStream(buf)
    try:
        tree = fam.compiled_head.parse_stream(stream)
    except RecursionError:
        raise GGUFError("arrays nested too deeply", offset=None, path="metadata_kv", rule="ARR-DEPTH") from None
    except Exception as exc:  # noqa: BLE001 - compiled code raises struct.error etc.; all become GGUFError
        raise _explain(buf, fam, exc) from None
    return RawHead(version, byte_order, tree, stream.pos, fam)


def _explain(buf, fam: structs.StructFamily, fast_exc: BaseException) -> GGUFError:
    """Re-parse with the interpreted, offset-reporting structs to name the failing field."""
    try:
        fam.types["file_head"].parse_stream(BufferStream(buf))
    except FieldError as exc:
        return GGUFError(_message(exc), offset=exc.offset, path=construct_path_to_field_path(exc.path or ""),
                         rule=exc.rule)
    except RecursionError:
        return GGUFError("arrays nested too deeply", offset=None, path="metadata_kv", rule="ARR-DEPTH")
    except Exception as exc:  # noqa: BLE001 - everything becomes our error type
        return GGUFError(f"malformed GGUF: {type(exc).__name__}: {exc}", offset=None, path="")
    return GGUFError(f"malformed GGUF: {type(fast_exc).__name__}: {fast_exc}", offset=None, path="")


def _message(exc: FieldError) -> str:
    text = str(exc)
    # Construct prefixes "Error in path ..." lines; keep the last, human part
    return text.strip().splitlines()[-1] if text else type(exc).__name__
