"""The GGUF file model: load, inspect, edit, build and save GGUF files.

``load`` memory-maps paths and reads nothing of the tensor data until asked.  A loaded file written again without
changes is byte-identical (padding, gaps, tensor order and trailing bytes are kept).  Editing metadata keeps the
data section as it is (streamed, not loaded); adding or removing tensors lays the data out canonically.
"""

from __future__ import annotations

import bisect
import io
import os
from operator import attrgetter
from typing import Any, BinaryIO, Iterable

import numpy as np
from construct import Container, ListContainer

from .. import codecs
from ..format import structs
from ..format.enums import GGMLType, GGUFValueType, ggml_type_or_none
from ..base.atomic import atomic_path
from ..base.gcpause import without_gc
from ..base.errors import GGUFError
from ..format.reader import ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_DIMS, align_offset, open_source, tensor_nbytes
from ..rulebook import Context, load_rules, read_head, refusals
from ..rulebook.walk import TensorInfo
from ..rulebook.container import later_type_rule
from ..rulebook.tensors import UNKNOWN_TYPE_RULE, ZERO_DIMENSION_RULE
from ..base.remote import exists, is_url, remote_of
from ..format import splitset
from ..format.spec import tensor_type_by_id
from ..format.constructs import InnerArrays
from ..format.lazystring import LazyString
from ..format.stringlist import StringList
from ..format.values import GGUFValue, Metadata
from . import headcopy, headencode
from ..rulebook.records import kv_shape, tensor_info_shape

__all__ = ["GGUFFile", "Tensor", "load", "DEFAULT_ALIGNMENT", "MAX_DIMS"]

_COPY_CHUNK = 16 << 20
_RUN = 1 << 16  # records encoded at once when a head is written (bounds the temporaries)


class Tensor:
    """One tensor: name, shape (ggml order, ne[0] first), type, offset in the data section, and its data.

    A tensor whose type this library cannot size (an id ggml never defined, e.g. from a fork, or a removed type) is
    *opaque*: ``ggml_type`` is then the plain int id, its bytes run from its offset to the next tensor's offset (or
    the end of the file), ``raw()`` gives them and ``numpy()`` raises :class:`GGUFError` saying why.
    ``file`` is the path of the file holding the data (the shard, for a split model).
    """

    # slots, not a __dict__: a head of a million tensor infos is a million of these (about 150 bytes each, not 650)
    __slots__ = (
        "name",
        "shape",
        "ggml_type",
        "file",
        "offset",
        "nbytes",
        "_source",
        "_source_offset",
        "byte_order",
        "_info",
        "_remote",
    )

    def __init__(
        self,
        name: str,
        shape: tuple[int, ...],
        ggml_type: "GGMLType | int",
        offset: int,
        nbytes: int,
        *,
        source=None,
        source_offset: int = 0,
        byte_order: str = "little",
        info_path: str = "",
        file: str | None = None,
    ):
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        known = ggml_type_or_none(int(ggml_type))
        self.ggml_type = known if known is not None else int(ggml_type)
        self.file = file
        self.offset = offset
        self.nbytes = nbytes
        self._source = source  # buffer holding the data (mmap view or bytes)
        self._source_offset = source_offset
        self.byte_order = byte_order
        self._info: str | int = info_path  # where the tensor info was read: a path, or its index when loaded
        self._remote: Any = None  # a RemoteFile whose buffer is _source: fetch the range before reading it

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={self.shape}, type={self.type_name}, offset={self.offset})"

    @property
    def info_path(self) -> str:
        """Where the tensor info was read, e.g. ``tensor_infos[3]`` (``""`` for a tensor built in memory)."""
        return self._info if isinstance(self._info, str) else f"tensor_infos[{self._info}]"

    @info_path.setter
    def info_path(self, path: str) -> None:
        self._info = path

    @property
    def type_name(self) -> str:
        """The type's name, or ``"type N"`` for an id ggml never defined."""
        return self.ggml_type.name if isinstance(self.ggml_type, GGMLType) else f"type {self.ggml_type}"

    @property
    def opaque(self) -> bool:
        """True when the type cannot be sized or decoded here (unknown id or removed type): only raw() works."""
        spec_t = tensor_type_by_id().get(int(self.ggml_type))
        return spec_t is None or not spec_t.is_current

    @property
    def n_elements(self) -> int:
        """Number of elements (product of the shape)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def raw(self) -> memoryview:
        """The tensor's bytes in the file's byte order, without copying (a view of the mapped file)."""
        if self._source is None:
            return memoryview(b"")
        if self._remote is not None:
            self._remote.ensure(self._source_offset, self._source_offset + self.nbytes)
        return memoryview(self._source)[self._source_offset : self._source_offset + self.nbytes]

    def numpy(self, threads: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Decoded values in numpy order (the reverse of :attr:`shape`), decoded in chunks.

        float32 for float and quantized types, the type's own dtype for F64 and integer types.  Peak memory is
        the output plus a small constant: the data is read from the (mapped) source chunk by chunk.
        ``threads``: cores the compiled codecs may use (see :func:`gguf_construct.codecs.decode_blocks`).
        ``out``: an existing C-contiguous array of that dtype and element count (any shape) to decode into,
        returned as given (see :func:`gguf_construct.codecs.dequantize`).
        """
        if self.opaque:
            state = "a removed" if isinstance(self.ggml_type, GGMLType) else "an unknown"
            raise GGUFError(
                f"tensor {self.name!r} has {state} ggml type ({self.type_name}, id "
                f"{int(self.ggml_type)}; forks such as ik_llama.cpp and newer ggml versions add types): "
                f"its block layout is unknown, so it cannot be decoded; raw() gives its {self.nbytes} "
                "bytes",
                path=f"{self.info_path}.type" if self.info_path else "",
                rule=UNKNOWN_TYPE_RULE,
            )
        t = tensor_type_by_id()[int(self.ggml_type)]
        raw = self.raw()
        n_blocks = self.nbytes // t.type_size
        dtype = codecs.decoded_dtype(t.id)
        span = dtype.itemsize  # numpy refuses shapes whose nonzero sizes multiply past its index range
        for d in self.shape:
            span *= d or 1
        if span > np.iinfo(np.intp).max:
            raise GGUFError(
                f"tensor {self.name!r}: shape {self.shape} is too large for a numpy array (a zero "
                "dimension makes it empty, the others still overflow numpy's index range)",
                path=f"{self.info_path}.dimensions" if self.info_path else "",
                rule=ZERO_DIMENSION_RULE,
            )
        if out is not None:
            blocks = codecs.blocks_view(t.id, out, n_blocks * t.type_size)
            codecs.decode_blocks(t.id, raw, byte_order=self.byte_order, out=blocks, threads=threads)
            return out
        blocks = np.empty((n_blocks, t.block_size), dtype=dtype)  # new memory: normal stores, straight in
        codecs.decode_blocks(t.id, raw, byte_order=self.byte_order, out=blocks, threads=threads, stream=False)
        return blocks.reshape(tuple(reversed(self.shape)) if self.shape else ())


class GGUFFile:
    """A GGUF file in memory: version, byte order, metadata and tensors (data stays in the source until used)."""

    def __init__(self, version: int = 3, byte_order: str = "little", alignment: int | None = None):
        if version not in structs.versions():
            raise ValueError(f"GGUF version must be one of {structs.versions()}")
        if byte_order not in structs.BYTE_ORDERS:
            raise ValueError(f"byte_order must be one of {structs.BYTE_ORDERS}")
        self.version = version
        self.byte_order = byte_order
        self.metadata = Metadata()
        self.tensors: list[Tensor] = []
        if alignment is not None and alignment != DEFAULT_ALIGNMENT:
            self.metadata.set(ALIGNMENT_KEY, alignment, GGUFValueType.UINT32)
        self.path: str | None = None
        self._buf: Any = None
        self._keepalive: Any = None
        self._remote: Any = None  # the RemoteFile of a file loaded from a URL
        self._orig: Any = None  # layout facts of the loaded file (a dict), None once the layout changes
        self._kv_source: headcopy.KeptRecords | None = None  # which records were read where (written back as read)
        self._shards: list[GGUFFile] = []  # the shard files of a split model loaded as one set
        # header fields the spec declares beyond the magic, the version and the counts (a field new in a
        # version), as read: written back as they were (a file made here writes their spec default)
        self._header_extra: dict[str, Any] = {}
        self.metadata.changed = False

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def new(cls, version: int = 3, byte_order: str = "little", alignment: int = DEFAULT_ALIGNMENT) -> "GGUFFile":
        """An empty file to fill with metadata and tensors."""
        return cls(version, byte_order, alignment)

    def add_tensor(
        self, name: str, data, ggml_type=None, *, shape: Iterable[int] | None = None, imatrix=None
    ) -> Tensor:
        """Append a tensor.

        ``data`` is a numpy array (encoded to ``ggml_type``, default: its own float/int type; quantized types are
        encoded by the codecs) or raw bytes already in ``ggml_type`` (then ``shape`` in ggml order is required).
        A numpy array's shape is in numpy order; the tensor's shape is its reverse (ggml order).
        """
        if any(t.name == name for t in self.tensors):
            raise ValueError(f"duplicate tensor name {name!r}")
        if isinstance(data, (bytes, bytearray, memoryview)):
            if ggml_type is None or shape is None:
                raise ValueError("raw tensor data needs ggml_type and shape")
            gtype = _as_ggml_type(ggml_type)
            shape = tuple(int(d) for d in shape)
            raw = bytes(data)  # taken to be in the file's byte order already
        else:
            arr = np.asarray(data)
            gtype = _as_ggml_type(ggml_type) if ggml_type is not None else _default_type(arr.dtype)
            shape = tuple(reversed(arr.shape)) if shape is None else tuple(int(d) for d in shape)
            spec_t = codecs.type_spec(gtype)
            if shape and shape[0] % spec_t.block_size:
                raise ValueError(f"{gtype.name}: ne[0]={shape[0]} is not a multiple of {spec_t.block_size}")
            rows = arr.reshape(-1, shape[0] if shape else 1)
            raw = codecs.quantize(gtype, rows, imatrix=imatrix, byte_order=self.byte_order)
        t = codecs.type_spec(gtype)
        expected = tensor_nbytes(t.id, shape)
        if len(raw) != expected:
            raise ValueError(f"{name}: {len(raw)} bytes of data, {gtype.name}{list(shape)} needs {expected}")
        tensor = Tensor(name, shape, gtype, 0, len(raw), source=raw, byte_order=self.byte_order)
        self.tensors.append(tensor)
        self._orig = None  # layout changes: write canonically
        return tensor

    def remove_tensor(self, name: str) -> None:
        """Remove a tensor by name."""
        self.tensors = [t for t in self.tensors if t.name != name]
        self._orig = None

    def rename_tensor(self, old: str, new: str) -> None:
        """Rename a tensor; the data section is kept as it is (offsets do not change)."""
        if any(t.name == new for t in self.tensors):
            raise ValueError(f"duplicate tensor name {new!r}")
        t = self.tensor(old)
        t.name = new
        if self._orig is not None:
            self._orig["infos"].rename(old, new)
            self._orig["infos_renamed"] = True  # the infos' bytes as read no longer hold the names

    def reuse_records_of(self, other: "GGUFFile") -> None:
        """Write the KV records this file shares with the loaded file ``other`` (the same key and value objects,
        e.g. copied by ``out.metadata[key] = value`` from ``other.metadata.typed_items()``) as ``other`` read them,
        when the two have one version and byte order (:mod:`.headcopy`)."""
        self._kv_source = other._kv_source

    def tensor(self, name: str) -> Tensor:
        """The tensor called ``name``."""
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    # -- properties ---------------------------------------------------------------------------------------
    @property
    def _kv_offsets(self) -> list[int] | None:
        """Offsets of the KV records as read (None for a file built in memory)."""
        return self._kv_source.starts.tolist() if self._kv_source is not None else None

    @property
    def alignment(self) -> int:
        """ALIGNMENT: general.alignment when present, else 32."""
        if ALIGNMENT_KEY in self.metadata:
            value = self.metadata.typed(ALIGNMENT_KEY)
            if value.type == GGUFValueType.UINT32 and value.value > 0:
                return value.value
        return DEFAULT_ALIGNMENT

    @property
    def data_offset(self) -> int | None:
        """Where the tensor data section starts in the loaded file (None for a file built in memory)."""
        return self._orig["data_start"] if self._orig is not None else None

    @property
    def source_size(self) -> int | None:
        """Size in bytes of the loaded file (None for a file built in memory)."""
        return len(self._buf) if self._buf is not None else None

    @property
    def shards(self) -> "list[GGUFFile]":
        """The files of a split model loaded as a set (first shard first, each with its own tensors), or
        ``[self]`` for a single file."""
        return self._shards or [self]

    @property
    def transfer(self) -> dict | None:
        """What reading a file loaded from a URL cost so far (URL, size, bytes fetched, requests); None for local
        files and built ones; summed over the shards of a split model)."""
        if self._shards:
            parts = [f.transfer for f in self._shards if f.transfer]
            return (
                {"url": self.path, **{k: sum(p[k] for p in parts) for k in ("size", "bytes_fetched", "requests")}}
                if parts
                else None
            )
        return self._remote.stats() if self._remote is not None else None

    def __repr__(self) -> str:
        return (
            f"GGUFFile(version={self.version}, byte_order={self.byte_order!r}, {len(self.metadata)} keys, "
            f"{len(self.tensors)} tensors)"
        )

    # -- output -------------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The file as bytes (identical to the input for an unchanged loaded file)."""
        out = io.BytesIO()
        self.write_to(out)
        return out.getvalue()

    def save(self, path: str | os.PathLike, *, pad_head: bool = False) -> None:
        """Write the file atomically: to a temporary file in the same directory, then rename over ``path``.

        ``pad_head``: pad the head to the alignment even when there are no tensors (as ggml's writer does)."""
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            self.write_to(fh, pad_head=pad_head)

    def write_to(self, out: BinaryIO, *, pad_head: bool = False) -> None:
        """Stream the file into a binary file object (a file loaded from a URL is fetched whole first);
        ``pad_head`` as for :meth:`save`."""
        _refuse_later_types(self.metadata, self.version, "write")
        if len(self.shards) > 1:
            raise ValueError(
                "this is a split model loaded as a set of shards; merge it (gguf-construct merge) or "
                "load one shard with load(path, shards=False) to rewrite that file"
            )
        if self._remote is not None and self._orig is not None:
            self._remote.ensure(0, self._remote.size)
        keep = self._orig is not None and self._orig["alignment"] == self.alignment
        if keep and not self._tensor_infos_unchanged():
            keep = False
        head_len = self._write_head(out, self.tensors if keep else self._canonical_offsets(), keep)
        if keep:
            self._write_kept_data(out, head_len)
        else:
            self._write_canonical_data(out, head_len)
        if pad_head and not self.tensors:
            out.write(b"\0" * (align_offset(head_len, self.alignment) - head_len))

    # -- internals ----------------------------------------------------------------------------------------
    def _tensor_infos_unchanged(self) -> bool:
        return self._orig["infos"].matches(self.tensors)

    def _canonical_offsets(self) -> list[Tensor]:
        offset, alignment = 0, self.alignment
        for t in self.tensors:
            t.offset = offset
            offset = align_offset(offset + t.nbytes, alignment)
        return self.tensors

    def _head_tree(self, tensors: list[Tensor]) -> Container:
        """The head as a value of the generated ``file_head`` (counts and the magic are the struct's own)."""
        kvs = ListContainer(
            Container(key=k, value_type=int(v.type), value=_value_to_tree(v)) for k, v in self.metadata.typed_items()
        )
        infos = ListContainer(
            Container(
                name=t.name, dimensions=np.asarray(t.shape, dtype=np.uint64), type=int(t.ggml_type), offset=t.offset
            )
            for t in tensors
        )
        header = Container(version=self.version, **self._header_extra)  # a field the version lacks is not written
        return Container(header=header, metadata_kv=kvs, tensor_infos=infos)

    def _write_head(self, out: BinaryIO, tensors: list[Tensor], infos_as_read: bool = False) -> int:
        """Write the head; its length.  Records are written in runs: a loaded file written in its own version and
        byte order keeps the bytes of every record it still holds unchanged (:mod:`.headcopy`; the tensor infos too
        when ``infos_as_read``), runs of scalar and STRING pairs and of tensor infos are encoded at once
        (:mod:`.headencode`), and the rest is built by the generated structs.  A head holding values read lazily
        from a file (a long STRING's LazyString, a string array's StringList) is written straight into ``out``,
        such values a chunk at a time; any other is made in memory first (nothing is written when it cannot be
        encoded)."""
        fam = structs.family(self.version, self.byte_order)
        header = headcopy.header_bytes(fam, self.version, len(self.metadata), len(tensors), self._header_extra)
        kv_layout = kv_shape(self.version, self.byte_order)
        ti_layout = tensor_info_shape(self.version, self.byte_order)
        lazy = any(isinstance(v.value, (LazyString, StringList)) for v in self.metadata.typed_view().values())
        target = _CountedWriter(out) if lazy else _CountedWriter(io.BytesIO())
        try:
            if header is None or kv_layout is None or ti_layout is None:  # a head of another shape: built whole
                fam.types["file_head"].build_stream(self._head_tree(tensors), target)
            else:
                target.write(header)
                self._write_kvs(target, fam, kv_layout)
                self._write_infos(target, fam, ti_layout, tensors, infos_as_read)
        except Exception as exc:  # noqa: BLE001
            raise ValueError(
                f"cannot encode this file as GGUF v{self.version} {self.byte_order}-endian: {exc}"
            ) from exc
        if not lazy:
            out.write(target.out.getbuffer())  # type: ignore[attr-defined]
        return target.count

    def _build_head(self, tensors: list[Tensor]) -> bytes:
        """The head as bytes (as :meth:`_write_head` writes it)."""
        out = io.BytesIO()
        self._write_head(out, tensors)
        return out.getvalue()

    def _write_kvs(self, out: "_CountedWriter", fam, layout) -> None:
        """The KV records: those load read and still held as read copied, runs of encodable ones encoded at once,
        the others built one by one."""
        kept = self._kv_source
        if kept is not None and (kept.version, kept.byte_order) != (self.version, self.byte_order):
            kept = None
        kv_type = fam.types["metadata_kv"]
        keys: list[str] = []
        values: list[GGUFValue] = []

        def build_one(key: str, value: GGUFValue) -> None:
            kv_type.build_stream(Container(key=key, value_type=int(value.type), value=_value_to_tree(value)), out)

        def flush() -> None:
            if not keys:
                return
            got = headencode.encode_kvs(keys, values, layout)
            if got is None:  # a number out of its type's range: the struct says which
                for key, value in zip(keys, values):
                    build_one(key, value)
            else:
                out.write(got)
            keys.clear()
            values.clear()

        def build(key: str, value: GGUFValue) -> None:
            if headencode.kv_encodable(layout, value):
                keys.append(key)
                values.append(value)
                if len(keys) >= _RUN:
                    flush()
                return
            flush()
            build_one(key, value)

        headcopy.write_kvs(out, self.metadata.typed_view(), kept, build, flush)

    def _write_infos(self, out: "_CountedWriter", fam, layout, tensors: list[Tensor], infos_as_read: bool) -> None:
        """The tensor infos: as read when unchanged (and not renamed), else encoded in runs (built one by one where
        a run cannot be encoded)."""
        orig, kept = self._orig, self._kv_source
        same_family = kept is not None and (kept.version, kept.byte_order) == (self.version, self.byte_order)
        if infos_as_read and same_family and orig is not None and "ti_start" in orig and not orig.get("infos_renamed"):
            out.write(memoryview(kept.buf)[orig["ti_start"] : orig["head_end"]])  # type: ignore[union-attr]
            return
        ti_type = fam.types["tensor_info"]
        limit = len(layout.sizes) - 1
        for first in range(0, len(tensors), _RUN):
            run = tensors[first : first + _RUN]
            got = headencode.encode_tensor_infos(
                [(t.name, t.shape, int(t.ggml_type), t.offset) for t in run], layout, limit
            )
            if got is not None:
                out.write(got)
                continue
            for t in run:  # the struct encodes them, or says why it cannot
                dims = np.asarray(t.shape, dtype=np.uint64)
                ti_type.build_stream(
                    Container(name=t.name, dimensions=dims, type=int(t.ggml_type), offset=t.offset), out
                )

    def _write_kept_data(self, out: BinaryIO, head_len: int) -> None:
        orig = self._orig
        buf = self._buf
        if head_len == orig["head_end"]:
            out.write(buf[orig["head_end"] : orig["data_start"]])
            new_start = orig["data_start"]
        else:
            new_start = align_offset(head_len, self.alignment) if self.tensors else head_len
            out.write(b"\0" * (new_start - head_len))
        tail = buf[orig["data_start"] :]
        if orig["byte_order"] == self.byte_order:
            _copy(out, tail)
            return
        # byte order changed: swap every tensor's blocks in place, copy everything else verbatim
        pos = 0
        for t in sorted(self.tensors, key=lambda t: t.offset):
            if t.offset < pos:
                raise ValueError("tensors overlap; cannot convert byte order")
            _copy(out, tail[pos : t.offset])
            _swap_copy(out, t, orig["byte_order"], self.byte_order)
            pos = t.offset + t.nbytes
        _copy(out, tail[pos:])

    def _write_canonical_data(self, out: BinaryIO, head_len: int) -> None:
        if not self.tensors:
            return
        alignment = self.alignment
        start = align_offset(head_len, alignment)
        out.write(b"\0" * (start - head_len))
        pos = 0
        for t in self.tensors:
            out.write(b"\0" * (t.offset - pos))
            if t.byte_order == self.byte_order:
                _copy(out, t.raw())
            else:
                _swap_copy(out, t, t.byte_order, self.byte_order)
            pos = t.offset + t.nbytes
            end = align_offset(pos, alignment)
            out.write(b"\0" * (end - pos))
            pos = end

    def convert(self, *, version: int | None = None, byte_order: str | None = None) -> "GGUFFile":
        """Change version and/or byte order in place (tensor data is swapped when written); returns self."""
        if version is not None:
            if version not in structs.versions():
                raise ValueError(f"GGUF version must be one of {structs.versions()}")
            _refuse_later_types(self.metadata, version)
            self.version = version
        if byte_order is not None:
            if byte_order not in structs.BYTE_ORDERS:
                raise ValueError(f"byte_order must be one of {structs.BYTE_ORDERS}")
            self.byte_order = byte_order
        return self

    def close(self) -> None:
        """Release the memory map (tensors of this file can no longer be read)."""
        for shard in self._shards:
            if shard is not self:
                shard.close()
        self._buf = None
        self._kv_source = None  # its view of the map would keep the map open
        for t in self.tensors:
            if self._orig is not None:
                t._source = None
        if self._keepalive is not None:
            try:
                self._keepalive.close()
            except BufferError:
                pass  # views still exported; the map is freed when they go
            self._keepalive = None

    def __enter__(self) -> "GGUFFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _CountedWriter:
    """A write-only stream that passes writes on to ``out`` and counts the bytes (``tell`` is the count)."""

    def __init__(self, out: BinaryIO):
        self.out, self.count = out, 0

    def write(self, data) -> int:
        self.out.write(data)
        self.count += len(data)
        return len(data)

    def tell(self) -> int:
        return self.count


def _copy(out: BinaryIO, view) -> None:
    view = memoryview(view)
    for i in range(0, len(view), _COPY_CHUNK):
        out.write(view[i : i + _COPY_CHUNK])


def _swap_copy(out: BinaryIO, t: Tensor, src_order: str, dst_order: str) -> None:
    if t.opaque:
        raise ValueError(
            f"tensor {t.name!r} has {t.type_name}, whose layout is unknown: its bytes cannot be "
            "converted to the other byte order"
        )
    spec_t = tensor_type_by_id()[int(t.ggml_type)]
    raw = t.raw()
    step = max(1, _COPY_CHUNK // spec_t.type_size) * spec_t.type_size
    for i in range(0, len(raw), step):
        out.write(codecs.swap_blocks(spec_t.id, raw[i : i + step], src_order, dst_order))


def _as_ggml_type(value) -> GGMLType:
    try:
        if isinstance(value, str):
            return GGMLType[value.upper()]
        return GGMLType(int(value))
    except (KeyError, ValueError, TypeError):
        raise ValueError(
            f"unknown ggml type {value!r}; the types are: " + ", ".join(t.name for t in GGMLType)
        ) from None


def _default_type(dtype: np.dtype) -> GGMLType:
    mapping = {
        "f4": GGMLType.F32,
        "f2": GGMLType.F16,
        "f8": GGMLType.F64,
        "i1": GGMLType.I8,
        "i2": GGMLType.I16,
        "i4": GGMLType.I32,
        "i8": GGMLType.I64,
    }
    key = dtype.kind + str(dtype.itemsize)
    if key not in mapping:
        raise ValueError(f"no default ggml type for numpy dtype {dtype}; pass ggml_type=")
    return mapping[key]


# -- parse tree <-> values -------------------------------------------------------------------------------------
def _value_from_tree(vtype: int, node: Any) -> GGUFValue:
    vtype = GGUFValueType(vtype)
    if vtype != GGUFValueType.ARRAY:
        if vtype == GGUFValueType.BOOL:
            node = bool(node) if node in (0, 1) else int(node)
        return GGUFValue(vtype, node)
    item = GGUFValueType(node.type)
    data = node.data
    if item == GGUFValueType.ARRAY:
        if isinstance(data, InnerArrays):  # located in bulk: each inner value is made when it is read
            data = data.mapped(_inner_value)
        else:
            data = [_value_from_tree(GGUFValueType.ARRAY, inner) for inner in data]
    return GGUFValue(vtype, data, item)


def _inner_value(node: Any) -> GGUFValue:
    """The value of one inner array of an array of arrays."""
    return _value_from_tree(GGUFValueType.ARRAY, node)


_VALUE_TYPE_OF = {int(vt): vt for vt in GGUFValueType if vt not in (GGUFValueType.ARRAY, GGUFValueType.BOOL)}
_ITEM_TYPE_OF = {int(vt): vt for vt in GGUFValueType if vt != GGUFValueType.ARRAY}  # arrays of arrays: mapped
_ARRAY_ID, _BOOL_ID = int(GGUFValueType.ARRAY), int(GGUFValueType.BOOL)
_NEW_VALUE = object.__new__


def _value_of(vtype: int, node: Any) -> GGUFValue:
    """:func:`_value_from_tree` for a read head: a value of a known type becomes its :class:`GGUFValue` without the
    checks of its constructor (the types are members already; an array's data is the parsed one, a BOOL 0 or 1 a
    bool and any other byte kept as read); millions of KV pairs cost one object each."""
    member = _VALUE_TYPE_OF.get(vtype)
    item = None
    if member is None:
        if vtype == _ARRAY_ID:
            item = _ITEM_TYPE_OF.get(node["type"])
            if item is None:  # arrays of arrays (each inner value made when read), unknown element types
                return _value_from_tree(vtype, node)
            member, node = GGUFValueType.ARRAY, node["data"]
        elif vtype == _BOOL_ID:
            member, node = GGUFValueType.BOOL, bool(node) if node in (0, 1) else int(node)
        else:  # unknown types
            return _value_from_tree(vtype, node)
    return GGUFValue.trusted(member, node, item)


def _value_to_tree(value: GGUFValue) -> Any:
    if value.type != GGUFValueType.ARRAY:
        return int(value.value) if value.type == GGUFValueType.BOOL else value.value
    data = value.value
    if value.item_type == GGUFValueType.ARRAY:
        if isinstance(data, InnerArrays) and data.convert is _inner_value:  # as read: written back byte for byte
            data = data.mapped(None)
        else:
            data = ListContainer(_value_to_tree(v) for v in data)
    return Container(type=int(value.item_type), data=data)  # type: ignore[arg-type]  # an ARRAY has one


def _types_used(value: GGUFValue) -> Iterable[GGUFValueType]:
    """The value types ``value`` holds, its own first; the inner arrays of an array of arrays located in bulk by
    their type column (only inner arrays of arrays are read)."""
    yield value.type
    if value.item_type is not None:
        yield value.item_type
        if value.item_type == GGUFValueType.ARRAY:
            data = value.value
            if not isinstance(data, InnerArrays):
                for inner in data:
                    yield from _types_used(inner)
                return
            types = data.item_types()
            yield from (GGUFValueType(t) for t in np.unique(types).tolist() if t in _KNOWN_VALUE_TYPES)
            for i in np.flatnonzero(types == int(GGUFValueType.ARRAY)).tolist():
                yield from _types_used(data[i])


_KNOWN_VALUE_TYPES = frozenset(int(t) for t in GGUFValueType)


def _refuse_later_types(metadata: Metadata, version: int, verb: str = "convert to") -> None:
    """GGUFError when a value of ``metadata`` has a type that ``version`` does not have and that ``load`` refuses
    there (a converted or written file ``load`` could not read back), from the spec's ``since``.  The types in use
    are gathered first (two set comprehensions: millions of keys cost no call each) and the values walked only to
    name the first key of a refused type."""
    values = metadata.typed_view().values()
    used = {v.type for v in values} | {v.item_type for v in values if v.item_type is not None}
    if GGUFValueType.ARRAY in used:  # arrays of arrays: the inner types too
        for value in values:
            if value.item_type == GGUFValueType.ARRAY:
                used.update(_types_used(value))
    refused = set()
    for vtype in used:
        rule_id = later_type_rule(vtype, version)
        if rule_id is not None and rule_id in load_rules():
            refused.add(vtype)
    if not refused:
        return
    for index, (key, value) in enumerate(metadata.typed_items()):
        for vtype in _types_used(value):
            rule_id = later_type_rule(vtype, version)
            if rule_id is not None and rule_id in load_rules():
                raise GGUFError(
                    f"cannot {verb} GGUF v{version}: key {key!r} uses value type {vtype.name}, new in "
                    f"v{structs.value_since(vtype)}",
                    path=f"metadata_kv[{index}].value_type",
                    rule=rule_id,
                )


def load(source, *, lazy: bool = True, shards: bool = True) -> GGUFFile:
    """Read a GGUF file from a path, bytes-like object or binary file object.

    A ``str`` or ``os.PathLike`` is a path; ``bytes``, ``bytearray`` and ``memoryview`` are the file's contents
    (``load(b"model.gguf")`` does not open a file).  Paths are memory-mapped and tensor data is not read until
    asked (``lazy=False`` copies the whole input into memory instead).  The file is read as ``check`` reads it
    (:func:`gguf_construct.rulebook.read_head`); one that breaks a rule spec/rules.yaml marks ``load: refuse``
    raises :class:`GGUFError` naming the rule, offset and field of the first such finding (``findings`` has all).

    A path named as a shard of a split model (``...-00002-of-00005.gguf``, holding a ``split.count`` of 2 or more:
    :mod:`gguf_construct.format.splitset`) loads the whole set: the metadata of the first shard, the tensors of every
    shard in order (each :class:`Tensor` reads from its own file, lazily), the
    files in :attr:`GGUFFile.shards`.  A missing shard raises :class:`GGUFError`.  ``shards=False`` loads just the
    named file.  A set cannot be saved as one file (merge it).

    URLs (``https://``, ``hf://``, any fsspec URL; see :mod:`gguf_construct.base.remote`) fetch only the head, and each
    tensor's range when its data is asked for; a shard URL finds its siblings next to it.
    """
    if shards and isinstance(source, (str, os.PathLike)):
        paths = splitset.shard_set_paths(os.fspath(source))
        if paths is not None and len(paths) > 1:
            named = _load_one(source, lazy)
            if (
                splitset.role(_split_key(named, splitset.SPLIT_NO), _split_key(named, splitset.SPLIT_COUNT))
                == splitset.SINGLE
            ):
                return named  # named like a shard, but a whole file (split.count 0 or 1: merged, say)
            return _load_set(paths, lazy, {os.fspath(source): named})
    return _load_one(source, lazy)


def _present(path: str) -> bool:
    return exists(path) if is_url(path) else os.path.isfile(path)


def _load_set(paths: list[str], lazy: bool, loaded: dict[str, GGUFFile]) -> GGUFFile:
    """The split model named by ``paths`` (its shards by name; ``loaded``: those already read), judged by
    :func:`splitset.set_problems`: a missing shard or a tensor in two shards is refused (the model is undefined
    without them); the other set findings are ``check``'s."""
    missing = [p for p in paths if p not in loaded and not _present(p)]
    if missing:
        for f in loaded.values():
            f.close()
        raise splitset.missing_shards(missing, len(paths))
    files = [loaded[p] if p in loaded else _load_one(p, lazy) for p in paths]
    first = files[0]
    facts = [
        splitset.ShardFacts(
            f.path,  # type: ignore[arg-type]
            split_no=_split_key(f, splitset.SPLIT_NO),
            split_count=len(paths),
            split_tensors=_split_key(f, splitset.SPLIT_TENSORS),
            tensor_names=[t.name for t in f.tensors],
        )
        for f in files
    ]
    refusal = splitset.load_refusal(splitset.set_problems(facts[0], facts[1:]), [f.path for f in files])  # type: ignore[misc]
    if refusal is not None:
        raise refusal
    whole = GGUFFile(first.version, first.byte_order)
    whole.path = first.path
    whole.metadata = first.metadata
    whole._shards = files
    whole.tensors = [t for f in files for t in f.tensors]
    return whole


def _split_key(f: GGUFFile, key: str) -> int | None:
    value = f.metadata.get(key) if key in f.metadata else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@without_gc  # a head of millions of records is millions of objects (base/gcpause.py)
def _load_one(source, lazy: bool) -> GGUFFile:
    buf, path, keepalive = open_source(source)
    remote = remote_of(source, keepalive)
    if remote is not None and not lazy:
        remote.ensure(0, remote.size)
    if not lazy:
        buf, keepalive, remote = memoryview(bytes(buf)), None, None
    view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
    head = read_head(view, remote=remote)
    refused = refusals(head)
    if refused:
        raise _refusal_error(refused, bytes_given=isinstance(source, (bytes, bytearray, memoryview)))
    gguf = GGUFFile(head.version, head.byte_order)  # type: ignore[arg-type]  # set: refusals() found nothing
    gguf.path = path
    gguf._buf = buf
    gguf._keepalive = keepalive
    gguf._remote = remote
    gguf.metadata = Metadata({kv.key: _value_of(kv.vtype, kv.value) for kv in head.kvs})
    gguf._kv_source = headcopy.kept_records(  # where each record was read (dump --json says) and what it became
        head.version,  # type: ignore[arg-type]
        head.byte_order,  # type: ignore[arg-type]
        view,
        map(attrgetter("offset"), head.kvs),
        map(attrgetter("end"), head.kvs),
        gguf.metadata.typed_view(),
    )
    gguf._header_extra = _header_extra(head, view)
    _fill_tensors(gguf, head, buf)
    for t in gguf.tensors:
        t._remote = remote
    return gguf


def _header_extra(head: Context, buf) -> dict[str, Any]:
    """The values of the header fields of a read file other than the magic, the version and the counts (none in
    the GGUF versions so far: then nothing is parsed again)."""
    spec = structs.container_spec_for(head.version)  # type: ignore[arg-type]
    counted = set(headcopy.count_fields(head.version).values())
    extra = [f["id"] for f in spec["types"]["header"]["seq"] if "contents" not in f and f["id"] != "version"]
    extra = [name for name in extra if name not in counted]
    if not extra:
        return {}
    fam = structs.family(head.version, head.byte_order)
    parsed = fam.types["header"].parse(bytes(buf[: head.header_size]))
    return {name: parsed[name] for name in extra}


def _refusal_error(refused: list, bytes_given: bool) -> GGUFError:
    """The :class:`GGUFError` for the first refusal of :func:`~gguf_construct.rulebook.refusals` (the others
    found at the same place join its message); all of them are its ``findings``."""
    first = refused[0]
    same = [f.message for f in refused[1:] if (f.offset, f.path) == (first.offset, first.path)]
    message = "; ".join([first.message] + same)
    if bytes_given and first.path == "header.magic":
        message += "; bytes are read as the file's contents, pass a str or os.PathLike to open a file"
    return GGUFError(message, offset=first.offset, path=first.path, rule=first.rule, findings=refused)


def _fill_tensors(gguf: GGUFFile, head: Context, buf) -> None:
    """The tensors of a read head whose layout ``load`` accepts (:func:`~gguf_construct.rulebook.refusals` found
    nothing): each at its offset in the data section, opaque ones sized up to the next tensor."""
    size = len(buf)
    data_start = head.data_start if head.tensors else min(head.data_start, size)  # type: ignore[type-var]
    tensors = [_tensor_of(t, buf, data_start, head.byte_order, gguf.path) for t in head.tensors]  # type: ignore[arg-type]
    if any(t.spec is None or not t.spec.is_current for t in head.tensors):
        _size_opaque(tensors, size - data_start)  # type: ignore[operator]
    gguf.tensors = tensors
    gguf._orig = {
        "head_end": head.head_end,
        "data_start": data_start,
        "alignment": head.alignment,
        "byte_order": head.byte_order,
        "infos": _InfosAsRead(head.tensors),
        "ti_start": head.tensors[0].offset if head.tensors else head.head_end,  # the infos' bytes as read
    }


class _InfosAsRead:
    """The name, shape, type and offset of every tensor info as read (a few bytes a tensor: the names and shapes
    are the tensors' own objects), to tell whether the tensors still say the same."""

    __slots__ = ("names", "shapes", "types", "offsets")

    def __init__(self, infos: list[TensorInfo]):
        n = len(infos)
        self.names = list(map(attrgetter("name"), infos))
        self.shapes = list(map(attrgetter("dims"), infos))
        self.types = np.fromiter(map(attrgetter("type"), infos), dtype=np.int64, count=n)
        self.offsets = np.fromiter(map(attrgetter("data_offset"), infos), dtype=np.uint64, count=n)

    def rename(self, old: str, new: str) -> None:
        """The tensor ``old`` is now called ``new``."""
        self.names = [new if name == old else name for name in self.names]

    def matches(self, tensors: list[Tensor]) -> bool:
        """True when ``tensors`` have the names, shapes, types and offsets read, in order."""
        n = len(tensors)
        if n != len(self.names) or list(map(attrgetter("name"), tensors)) != self.names:
            return False
        if list(map(attrgetter("shape"), tensors)) != self.shapes:
            return False
        try:
            types = np.fromiter((int(t.ggml_type) for t in tensors), dtype=np.int64, count=n)
            offsets = np.fromiter(map(attrgetter("offset"), tensors), dtype=np.uint64, count=n)
        except (OverflowError, TypeError, ValueError):
            return False
        return bool(np.array_equal(types, self.types) and np.array_equal(offsets, self.offsets))


_GGML_TYPE_OF = {int(t): t for t in GGMLType}


def _tensor_of(t: TensorInfo, buf, data_start: int, byte_order: str, file: str | None) -> Tensor:
    """The :class:`Tensor` of a tensor info ``load`` accepted, made as its constructor would (the shape is a tuple
    of ints already, the type a member when ggml defines it) without its conversions: one object per tensor."""
    tensor = _NEW_VALUE(Tensor)
    tensor.name = t.name
    tensor.shape = t.dims
    tensor.ggml_type = _GGML_TYPE_OF.get(t.type, t.type)
    tensor.file = file
    tensor.offset = t.data_offset
    tensor.nbytes = t.nbytes if t.nbytes is not None else 0
    tensor._source = buf
    tensor._source_offset = data_start + t.data_offset
    tensor.byte_order = byte_order
    tensor._info = t.index  # its path is made when asked (an error message names it)
    tensor._remote = None
    return tensor


def _size_opaque(tensors: list[Tensor], data_size: int) -> None:
    """An opaque tensor's bytes run from its offset to the next larger offset of any tensor, or to the end."""
    offsets = sorted({t.offset for t in tensors} | {data_size})
    for t in tensors:
        if t.opaque:
            nxt = offsets[bisect.bisect_right(offsets, t.offset)] if t.offset < data_size else data_size
            t.nbytes = nxt - t.offset
