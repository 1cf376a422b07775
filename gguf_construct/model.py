"""The GGUF file model: load, inspect, edit, build and save GGUF files.

``load`` memory-maps paths and reads nothing of the tensor data until asked.  A loaded file written again without
changes is byte-identical (padding, gaps, tensor order and trailing bytes are kept).  Editing metadata keeps the
data section as it is (streamed, not loaded); adding or removing tensors lays the data out canonically.
"""

from __future__ import annotations

import io
import os
import tempfile
from typing import Any, BinaryIO, Iterable

import numpy as np
from construct import Container, ListContainer

from . import codecs, structs
from .enums import GGMLType, GGUFValueType
from .errors import GGUFError
from .layout import RawHead, align_offset, open_source, parse_head
from .spec import tensor_type_by_id
from .values import GGUFValue, Metadata

__all__ = ["GGUFFile", "Tensor", "load", "DEFAULT_ALIGNMENT", "MAX_DIMS"]

DEFAULT_ALIGNMENT: int = structs.container_spec()["layout"]["alignment"]["default"]
ALIGNMENT_KEY: str = structs.container_spec()["layout"]["alignment"]["key"]
MAX_DIMS = 4
_COPY_CHUNK = 16 << 20


def tensor_nbytes(ggml_type: int, shape: Iterable[int]) -> int:
    """Bytes of a tensor's data (Python integers: no overflow)."""
    t = tensor_type_by_id()[int(ggml_type)]
    n = 1  # a tensor without dimensions is a scalar (every ne[i] is 1)
    for d in shape:
        n *= int(d)
    return n // t.block_size * t.type_size


class Tensor:
    """One tensor: name, shape (ggml order, ne[0] first), type, offset in the data section, and its data."""

    def __init__(self, name: str, shape: tuple[int, ...], ggml_type: GGMLType, offset: int, nbytes: int,
                 *, source=None, source_offset: int = 0, byte_order: str = "little", info_path: str = ""):
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.ggml_type = GGMLType(ggml_type)
        self.offset = offset
        self.nbytes = nbytes
        self._source = source  # buffer holding the data (mmap view or bytes)
        self._source_offset = source_offset
        self.byte_order = byte_order
        self.info_path = info_path  # where the tensor info was read, e.g. "tensor_infos[3]" ("" when built)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={self.shape}, type={self.ggml_type.name}, offset={self.offset})"

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
        return memoryview(self._source)[self._source_offset:self._source_offset + self.nbytes]

    def numpy(self, threads: int | None = None) -> np.ndarray:
        """Decoded values in numpy order (the reverse of :attr:`shape`), decoded in chunks.

        float32 for float and quantized types, the type's own dtype for F64 and integer types.  Peak memory is
        the output plus a small constant: the data is read from the (mapped) source chunk by chunk.
        ``threads``: cores the compiled codecs may use (see :func:`gguf_construct.codecs.decode_blocks`).
        """
        t = tensor_type_by_id()[int(self.ggml_type)]
        raw = self.raw()
        n_blocks = self.nbytes // t.type_size
        first = codecs.decode_blocks(t.id, raw[: min(n_blocks, 1) * t.type_size], byte_order=self.byte_order)
        span = first.dtype.itemsize  # numpy refuses shapes whose nonzero sizes multiply past its index range
        for d in self.shape:
            span *= d or 1
        if span > np.iinfo(np.intp).max:
            raise GGUFError(f"tensor {self.name!r}: shape {self.shape} is too large for a numpy array (a zero "
                            "dimension makes it empty, the others still overflow numpy's index range)",
                            path=f"{self.info_path}.dimensions" if self.info_path else "", rule="TI-DIM-ZERO")
        out = np.empty((n_blocks, t.block_size), dtype=first.dtype)
        codecs.decode_blocks(t.id, raw, byte_order=self.byte_order, out=out, threads=threads)  # straight into out
        return out.reshape(tuple(reversed(self.shape)) if self.shape else ())


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
        self._buf = None
        self._keepalive = None
        self._orig: dict[str, Any] | None = None  # layout facts of the loaded file
        self.metadata.changed = False

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def new(cls, version: int = 3, byte_order: str = "little", alignment: int = DEFAULT_ALIGNMENT) -> "GGUFFile":
        """An empty file to fill with metadata and tensors."""
        return cls(version, byte_order, alignment)

    def add_tensor(self, name: str, data, ggml_type=None, *, shape: Iterable[int] | None = None,
                   imatrix=None) -> Tensor:
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

    def tensor(self, name: str) -> Tensor:
        """The tensor called ``name``."""
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    # -- properties ---------------------------------------------------------------------------------------
    @property
    def alignment(self) -> int:
        """ALIGNMENT: general.alignment when present, else 32."""
        if ALIGNMENT_KEY in self.metadata:
            value = self.metadata.typed(ALIGNMENT_KEY)
            if value.type == GGUFValueType.UINT32 and value.value > 0:
                return value.value
        return DEFAULT_ALIGNMENT

    def __repr__(self) -> str:
        return (f"GGUFFile(version={self.version}, byte_order={self.byte_order!r}, {len(self.metadata)} keys, "
                f"{len(self.tensors)} tensors)")

    # -- output -------------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The file as bytes (identical to the input for an unchanged loaded file)."""
        out = io.BytesIO()
        self.write_to(out)
        return out.getvalue()

    def save(self, path: str | os.PathLike) -> None:
        """Write the file atomically: to a temporary file in the same directory, then rename over ``path``."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".gguf-", suffix=".tmp", dir=directory)
        try:
            os.chmod(tmp, _mode_for(path))
            with os.fdopen(fd, "wb") as fh:
                self.write_to(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def write_to(self, out: BinaryIO) -> None:
        """Stream the file into a binary file object."""
        keep = self._orig is not None and self._orig["alignment"] == self.alignment
        if keep and not self._tensor_infos_unchanged():
            keep = False
        head = self._build_head(self.tensors if keep else self._canonical_offsets())
        out.write(head)
        if keep:
            self._write_kept_data(out, head)
        else:
            self._write_canonical_data(out, len(head))

    # -- internals ----------------------------------------------------------------------------------------
    def _tensor_infos_unchanged(self) -> bool:
        return [(t.name, t.shape, int(t.ggml_type), t.offset) for t in self.tensors] == self._orig["infos"]

    def _canonical_offsets(self) -> list[Tensor]:
        offset = 0
        for t in self.tensors:
            t.offset = offset
            offset = align_offset(offset + t.nbytes, self.alignment)
        return self.tensors

    def _head_tree(self, tensors: list[Tensor]) -> Container:
        kvs = ListContainer(Container(key=k, value_type=int(v.type), value=_value_to_tree(v))
                            for k, v in self.metadata.typed_items())
        infos = ListContainer(
            Container(name=t.name, n_dimensions=len(t.shape), dimensions=np.asarray(t.shape, dtype=np.uint64),
                      type=int(t.ggml_type), offset=t.offset)
            for t in tensors)
        header = Container(magic=b"GGUF", version=self.version, tensor_count=len(tensors),
                           metadata_kv_count=len(kvs))
        return Container(header=header, metadata_kv=kvs, tensor_infos=infos)

    def _build_head(self, tensors: list[Tensor]) -> bytes:
        fam = structs.family(self.version, self.byte_order)
        try:
            return fam.types["file_head"].build(self._head_tree(tensors))
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"cannot encode this file as GGUF v{self.version} {self.byte_order}-endian: {exc}") \
                from exc

    def _write_kept_data(self, out: BinaryIO, head: bytes) -> None:
        orig = self._orig
        buf = self._buf
        if len(head) == orig["head_end"]:
            out.write(buf[orig["head_end"]:orig["data_start"]])
            new_start = orig["data_start"]
        else:
            new_start = align_offset(len(head), self.alignment) if self.tensors else len(head)
            out.write(b"\0" * (new_start - len(head)))
        tail = buf[orig["data_start"]:]
        if orig["byte_order"] == self.byte_order:
            _copy(out, tail)
            return
        # byte order changed: swap every tensor's blocks in place, copy everything else verbatim
        pos = 0
        for t in sorted(self.tensors, key=lambda t: t.offset):
            if t.offset < pos:
                raise ValueError("tensors overlap; cannot convert byte order")
            _copy(out, tail[pos:t.offset])
            _swap_copy(out, t, orig["byte_order"], self.byte_order)
            pos = t.offset + t.nbytes
        _copy(out, tail[pos:])

    def _write_canonical_data(self, out: BinaryIO, head_len: int) -> None:
        if not self.tensors:
            return
        start = align_offset(head_len, self.alignment)
        out.write(b"\0" * (start - head_len))
        pos = 0
        for t in self.tensors:
            out.write(b"\0" * (t.offset - pos))
            if t.byte_order == self.byte_order:
                _copy(out, t.raw())
            else:
                _swap_copy(out, t, t.byte_order, self.byte_order)
            pos = t.offset + t.nbytes
            end = align_offset(pos, self.alignment)
            out.write(b"\0" * (end - pos))
            pos = end

    def convert(self, *, version: int | None = None, byte_order: str | None = None) -> "GGUFFile":
        """Change version and/or byte order in place (tensor data is swapped when written); returns self."""
        if version is not None:
            if version not in structs.versions():
                raise ValueError(f"GGUF version must be one of {structs.versions()}")
            self.version = version
        if byte_order is not None:
            if byte_order not in structs.BYTE_ORDERS:
                raise ValueError(f"byte_order must be one of {structs.BYTE_ORDERS}")
            self.byte_order = byte_order
        return self

    def close(self) -> None:
        """Release the memory map (tensors of this file can no longer be read)."""
        self._buf = None
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


def _copy(out: BinaryIO, view) -> None:
    view = memoryview(view)
    for i in range(0, len(view), _COPY_CHUNK):
        out.write(view[i:i + _COPY_CHUNK])


def _swap_copy(out: BinaryIO, t: Tensor, src_order: str, dst_order: str) -> None:
    spec_t = tensor_type_by_id()[int(t.ggml_type)]
    raw = t.raw()
    step = max(1, _COPY_CHUNK // spec_t.type_size) * spec_t.type_size
    for i in range(0, len(raw), step):
        out.write(codecs.swap_blocks(spec_t.id, raw[i:i + step], src_order, dst_order))


def _as_ggml_type(value) -> GGMLType:
    try:
        if isinstance(value, str):
            return GGMLType[value.upper()]
        return GGMLType(int(value))
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"unknown ggml type {value!r}; the types are: "
                         + ", ".join(t.name for t in GGMLType)) from None


def _default_type(dtype: np.dtype) -> GGMLType:
    mapping = {"f4": GGMLType.F32, "f2": GGMLType.F16, "f8": GGMLType.F64, "i1": GGMLType.I8,
               "i2": GGMLType.I16, "i4": GGMLType.I32, "i8": GGMLType.I64}
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
        data = [_value_from_tree(GGUFValueType.ARRAY, inner) for inner in data]
    return GGUFValue(vtype, data, item)


def _value_to_tree(value: GGUFValue) -> Any:
    if value.type != GGUFValueType.ARRAY:
        return int(value.value) if value.type == GGUFValueType.BOOL else value.value
    data = value.value
    if value.item_type == GGUFValueType.ARRAY:
        data = ListContainer(_value_to_tree(v) for v in data)
    return Container(type=int(value.item_type), len=len(data), data=data)


def load(source, *, lazy: bool = True) -> GGUFFile:
    """Read a GGUF file from a path, bytes-like object or binary file object.

    Paths are memory-mapped and tensor data is not read until asked (``lazy=False`` copies the whole input into
    memory instead).  Malformed input raises :class:`GGUFError` naming the offset and field.
    """
    buf, path, keepalive = open_source(source)
    if not lazy:
        buf, keepalive = memoryview(bytes(buf)), None
    head = parse_head(buf)
    gguf = GGUFFile(head.version, head.byte_order)
    gguf.path = path
    gguf._buf = buf
    gguf._keepalive = keepalive
    _fill_metadata(gguf, head)
    _fill_tensors(gguf, head, buf)
    return gguf


def _fill_metadata(gguf: GGUFFile, head: RawHead) -> None:
    items: dict[str, GGUFValue] = {}
    for i, kv in enumerate(head.tree.metadata_kv):
        if kv.key in items:
            raise GGUFError(f"duplicate key {kv.key!r}", offset=_kv_offset(head, i), path=f"metadata_kv[{i}].key",
                            rule="KV-KEY-DUP")
        items[kv.key] = _value_from_tree(kv.value_type, kv.value)
    gguf.metadata = Metadata(items)
    if ALIGNMENT_KEY in items:
        align = items[ALIGNMENT_KEY]
        index = list(items).index(ALIGNMENT_KEY)
        if align.type != GGUFValueType.UINT32:
            raise GGUFError(f"{ALIGNMENT_KEY} has type {align.type.name}, must be UINT32",
                            offset=_kv_offset(head, index), path=f"metadata_kv[{index}].value_type",
                            rule="ALIGN-TYPE")
        if align.value == 0:
            raise GGUFError(f"{ALIGNMENT_KEY} is 0", offset=_kv_offset(head, index),
                            path=f"metadata_kv[{index}].value", rule="ALIGN-ZERO")


def _offset_of(head: RawHead, n_kv: int, n_infos: int = 0) -> int:
    """Offset where metadata_kv[n_kv] (n_infos == 0) or tensor_infos[n_infos] starts: the length of what precedes
    it, re-encoded.  Only computed for error messages."""
    tree = Container(header=head.tree.header, metadata_kv=head.tree.metadata_kv[:n_kv],
                     tensor_infos=head.tree.tensor_infos[:n_infos])
    return len(head.family.types["file_head"].build(tree))


def _kv_offset(head: RawHead, index: int) -> int:
    """Offset of metadata_kv[index]."""
    return _offset_of(head, index)


def _info_offset(head: RawHead, index: int) -> int:
    """Offset of tensor_infos[index]."""
    return _offset_of(head, len(head.tree.metadata_kv), index)


def _fill_tensors(gguf: GGUFFile, head: RawHead, buf) -> None:
    alignment = gguf.alignment
    infos = head.tree.tensor_infos
    size = len(buf)
    data_start = align_offset(head.end, alignment)
    if not infos:
        data_start = min(data_start, size)
    elif data_start > size:
        raise GGUFError(f"file ends at {size}, before the data section at {data_start}", offset=size,
                        path="tensor_data", rule="DATA-START")
    names = set()
    tensors = []
    for i, info in enumerate(infos):
        path = f"tensor_infos[{i}]"
        where = lambda: _info_offset(head, i)  # noqa: E731 - computed only for errors
        if info.name in names:
            raise GGUFError(f"duplicate tensor name {info.name!r}", offset=where(), path=f"{path}.name",
                            rule="TI-NAME-DUP")
        names.add(info.name)
        if info.n_dimensions > MAX_DIMS:
            raise GGUFError(f"{info.n_dimensions} dimensions, at most {MAX_DIMS}", offset=where(),
                            path=f"{path}.n_dimensions", rule="TI-NDIMS")
        shape = tuple(int(d) for d in info.dimensions)
        if any(d >= 2**63 for d in shape):
            raise GGUFError(f"dimension out of range in {shape}", offset=where(), path=f"{path}.dimensions",
                            rule="TI-DIM-RANGE")
        spec_t = tensor_type_by_id().get(info.type)
        if spec_t is None or not spec_t.is_current:
            state = "removed" if spec_t is not None else "unknown"
            raise GGUFError(f"{state} tensor type {info.type}", offset=where(), path=f"{path}.type",
                            rule="TI-TYPE")
        row = shape[0] if shape else 1  # no dimensions: ne[0] is 1
        if row % spec_t.block_size:
            raise GGUFError(f"ne[0]={row} is not a multiple of {spec_t.name}'s block size "
                            f"{spec_t.block_size}", offset=where(), path=f"{path}.dimensions", rule="TI-BLOCK")
        nelem = 1
        for d in shape:
            nelem *= d
        if nelem >= 2**63:
            raise GGUFError(f"element count {nelem} overflows int64", offset=where(), path=f"{path}.dimensions",
                            rule="TI-NELEM-OVERFLOW")
        nbytes = tensor_nbytes(spec_t.id, shape)
        if info.offset % alignment:
            raise GGUFError(f"offset {info.offset} is not a multiple of the alignment {alignment}", offset=where(),
                            path=f"{path}.offset", rule="TI-OFFSET-ALIGN")
        if data_start + info.offset + nbytes > size:
            raise GGUFError(f"tensor {info.name!r} data [{info.offset}, {info.offset + nbytes}) lies outside the "
                            f"{size - data_start}-byte data section", offset=where(), path=f"{path}.offset",
                            rule="DATA-BOUNDS")
        tensors.append(Tensor(info.name, shape, GGMLType(spec_t.id), info.offset, nbytes, source=buf,
                              source_offset=data_start + info.offset, byte_order=head.byte_order, info_path=path))
    gguf.tensors = tensors
    gguf._orig = {"head_end": head.end, "data_start": data_start, "alignment": alignment,
                  "byte_order": head.byte_order,
                  "infos": [(t.name, t.shape, int(t.ggml_type), t.offset) for t in tensors]}


def _mode_for(path: str) -> int:
    """The mode a written file gets: the existing file's (an in-place rewrite keeps it), else what a plain
    ``open(path, "w")`` would give under the current umask (mkstemp's own 0600 would hide the file from others)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
