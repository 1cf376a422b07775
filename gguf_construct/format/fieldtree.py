"""The field tree of the generated family: every field's start, end and path, read from bytes or located in a tree.

Three questions about the bytes of a spec type (``metadata_kv``, ``tensor_info`` ...) in one (version, byte order),
all answered from the spec's ``seq`` lists and nothing else:

* :func:`read` - a located, *tolerant* read: the fields are read one by one into a :class:`Node` tree; the first
  field that cannot be read ends the read with a :class:`Problem` (rule, offset, path and the partially read
  record around it) instead of an exception, and everything read before it stays in the tree.
* :func:`locate` - the same tree for a record the compiled parser already read: each field's start and end
  follow from the parsed values and the family's widths (no re-read of the bytes).

Paths are field paths as the checker reports them: ``tensor_infos[3].dimensions[1]``, ``metadata_kv[0].value.data``.
The rule a problem names is the one the spec declares for the field that failed (:mod:`gguf_construct.format.fieldrules`),
the same the compiled read's error names.  The family is any object with the generated family's ``version``,
``byte_order``, ``min_sizes`` and widths (:class:`~gguf_construct.format.structs.StructFamily`).
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from . import containerspec, fieldrules
from . import spec as _spec
from ..base.stringscan import scan_string_offsets
from .constructs import Float32Field, decode_text, encode_text
from .lazystring import LAZY_STRING_BYTES, LazyString, text_nbytes
from .containerspec import STRUCT_FORMATS as _FORMAT
from .stringlist import StringList

__all__ = ["Node", "Problem", "Reading", "Raw", "read", "locate", "sizeof", "offset_of", "build"]


@dataclass(slots=True)
class Node:
    """One field (or the whole record) as read: where it starts and ends, its value, and its sub-fields."""

    path: str
    start: int
    end: int | None = None  # None when the field could not be read to its end
    value: Any = None
    fields: dict[str, "Node"] = field(default_factory=dict)  # by field id, or "[i]" for array elements
    type: str | None = None  # the spec type or primitive of the field
    item_width: int | None = None  # arrays of fixed-size items: the width of one (elements located on demand)
    item_spans: Any = None  # arrays of strings: (starts, ends) of every element, located on demand

    def __getitem__(self, name: str) -> "Node":
        return self.find(name)

    def find(self, rel: str) -> "Node":
        """The node at a path relative to this one (``value.data``, ``dimensions[1]``, ``data[3]``)."""
        node = self
        for part in _split(rel):
            if part in node.fields:
                node = node.fields[part]
            elif part.startswith("[") and node.item_width is not None:
                i = int(part[1:-1])
                start = node.start + i * node.item_width
                node = Node(
                    f"{node.path}{part}",
                    start,
                    start + node.item_width,
                    node.value[i] if node.value is not None and i < len(node.value) else None,
                )
            elif part.startswith("[") and node.item_spans is not None:
                i = int(part[1:-1])
                starts, ends = node.item_spans
                node = Node(f"{node.path}{part}", int(starts[i]), int(ends[i]), node.value[i], type=node.type)
            else:
                raise KeyError(f"{self.path}: no field {rel!r}")
        return node

    def offset(self, rel: str = "") -> int:
        """Start offset of this node or of a field below it."""
        return self.find(rel).start if rel else self.start

    def walk(self) -> Iterator["Node"]:
        """This node and every node below it, in file order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            if node.fields:
                stack.extend(reversed(node.fields.values()))


@dataclass
class Problem:
    """Why a read stopped: the rule broken, the offset and path of the field, and the record being read."""

    rule: str | None
    offset: int
    path: str
    message: str
    record: Node  # the innermost compound node that was being read (partially filled)


@dataclass
class Reading:
    """The result of :func:`read`: the (possibly partial) tree and the problem that stopped it, if any."""

    root: Node
    problem: Problem | None

    @property
    def end(self) -> int | None:
        """Offset just after the record, None when it could not be read to its end."""
        return self.root.end


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _split(rel: str) -> list[str]:
    out: list[str] = []
    for dotted in rel.split("."):
        head, _, rest = dotted.partition("[")
        if head:
            out.append(head)
        if rest:
            out.extend("[" + p for p in rest.split("["))
    return out


class _Stop(Exception):
    def __init__(self, problem: Problem):
        self.problem = problem


class _Spec:
    """What the reader needs of the spec and of one family, looked up once per family."""

    def __init__(self, fam):
        self.fam = fam
        self.spec = containerspec.container_spec_for(fam.version)
        self.value_types = containerspec.value_types()
        self.order = _spec.byte_order(fam.byte_order).struct
        self.f4 = Float32Field(fam.byte_order)
        prims = _spec.primitives()
        # every name a field can have as its type, resolved once: primitive (or None) and whether it is a string
        self.prim_of: dict[str, str | None] = {name: name for name in prims}
        self.prim_of.update({name: fam._resolve_primitive(name) for name in self.spec["aliases"]})
        self.prim_of.update({name: None for name in self.spec["types"]})
        self.string_types = {name for name in self.spec["types"] if containerspec.is_string_type(name)}
        self.truncated = {name: fieldrules.truncated_rule(name) for name in self.spec["types"]}
        self.plans: dict[str, list] = {}
        self.packers: dict[str, tuple] = {}

    def primitive(self, name: str) -> str | None:
        return self.prim_of.get(name)

    def width(self, prim: str) -> int:
        return _spec.primitives()[prim].size

    def dtype(self, prim: str) -> np.dtype:
        return _spec.numpy_dtype(prim, self.fam.byte_order)

    def is_string(self, name: str) -> bool:
        return name in self.string_types

    def case(self, selector: int) -> str | None:
        vt = self.value_types.get(selector)
        return None if vt is None else (vt.get("encoding") or vt["type"])

    def min_size(self, name: str) -> int:
        prim = self.primitive(name)
        return self.width(prim) if prim else self.fam.min_sizes[name]


_SPECS: dict[tuple[int, str], _Spec] = {}


def _spec_of(fam) -> _Spec:
    key = (fam.version, fam.byte_order)
    if key not in _SPECS or _SPECS[key].fam is not fam:
        _SPECS[key] = _Spec(fam)
    return _SPECS[key]


# ---------------------------------------------------------------------------------------------------------------
# the tolerant read
# ---------------------------------------------------------------------------------------------------------------


def read(fam, type_name: str, buf, start: int = 0, path: str = "") -> Reading:
    """Read one instance of spec type ``type_name`` at ``start`` of ``buf``, field by field, never raising on bad
    input: the first field that cannot be read ends the read with a :class:`Problem`."""
    reader = _Reader(_spec_of(fam), buf)
    root = Node(path, start, type=type_name)
    try:
        reader.compound(type_name, root)
    except _Stop as stop:
        return Reading(root, stop.problem)
    except RecursionError:
        return Reading(
            root, Problem(fieldrules.nesting_rule(type_name), start, root.path, "arrays nested too deeply", root)
        )
    return Reading(root, None)


class _Reader:
    def __init__(self, sp: _Spec, buf):
        self.sp = sp
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        self.size = len(self.buf)

    def stop(self, rule: str | None, node: Node, parent: Node, message: str, offset: int | None = None):
        raise _Stop(Problem(rule, node.start if offset is None else offset, node.path, message, parent))

    # -- compound types --------------------------------------------------------------------------------------
    def compound(self, type_name: str, node: Node) -> None:
        if self.sp.is_string(type_name):
            self.string(node, node)
            return
        pos = node.start
        for f in self.sp.spec["types"][type_name]["seq"]:
            child = Node(_join(node.path, f["id"]), pos)
            node.fields[f["id"]] = child
            self.field(f, child, node)
            pos = child.end
        node.end = pos

    def sibling(self, record: Node, dotted: str, root_fields: dict[str, Node]) -> Any:
        if "." in dotted:
            head, rest = dotted.split(".", 1)
            return root_fields[head].find(rest).value
        return record.fields[dotted].value

    def field(self, f: dict, node: Node, record: Node) -> None:
        if "contents" in f:
            want = f["contents"].encode("ascii")
            got = bytes(self.buf[node.start : node.start + len(want)])
            node.value, node.type = got, "contents"
            if len(got) < len(want):
                self.stop(
                    self.sp.truncated.get(record.type), node, record, f"{len(want)} bytes expected, {len(got)} left"
                )
            if got != want:
                self.stop(
                    fieldrules.field_rule(record.type, f["id"], "mismatch"),
                    node,
                    record,
                    f"expected {want!r}, found {got!r}",
                )
            node.end = node.start + len(want)
            return
        if "switch_on" in f:
            selector = record.fields[f["switch_on"]].value
            target = self.sp.case(int(selector))
            if target is None:
                self.stop(
                    fieldrules.field_rule(record.type, f["id"], "selector"),
                    node,
                    record,
                    f"unknown value type {selector}",
                )
            is_bool = self.sp.value_types[int(selector)]["name"] == "BOOL"
            if "repeat" in f:
                self.repeat(target, f, node, record, as_bool=is_bool)
            else:
                self.single(target, node, record)
            return
        if "repeat" in f:
            self.repeat(f["type"], f, node, record)
            return
        self.single(f["type"], node, record)

    def single(self, type_name: str, node: Node, record: Node) -> None:
        node.type = type_name
        prim = self.sp.primitive(type_name)
        if prim is None:
            self.compound(type_name, node)
            return
        width = self.sp.width(prim)
        if node.start + width > self.size:
            self.stop(
                self.sp.truncated.get(record.type),
                node,
                record,
                f"{prim} truncated: need {width} bytes, {max(0, self.size - node.start)} left",
            )
        raw = bytes(self.buf[node.start : node.start + width])
        if prim == "f4":
            node.value = self.sp.f4.parse(raw)
        else:
            node.value = _struct.unpack(self.sp.order + _FORMAT[prim] if width > 1 else _FORMAT[prim], raw)[0]
        node.end = node.start + width

    def string(self, node: Node, record: Node) -> None:
        seq = self.sp.spec["types"][node.type or "gguf_string"]["seq"] if node.type else None
        len_id, data_id = (seq[0]["id"], seq[1]["id"]) if seq else ("len", "data")
        width = self.sp.width(self.sp.primitive(seq[0]["type"] if seq else "strlen_t"))
        rule = self.sp.truncated.get(node.type or "gguf_string")
        ln = Node(_join(node.path, len_id), node.start)
        node.fields[len_id] = ln
        if node.start + width > self.size:
            self.stop(
                rule, node, node, f"string length truncated: need {width} bytes, {max(0, self.size - node.start)} left"
            )
        ln.value = int.from_bytes(self.buf[node.start : node.start + width], self.sp.fam.byte_order)
        ln.end = node.start + width
        data = Node(_join(node.path, data_id), ln.end)
        node.fields[data_id] = data
        left = self.size - ln.end
        if ln.value > left:
            self.stop(rule, node, node, f"string length {ln.value} exceeds the {left} bytes remaining")
        data.end = node.end = ln.end + ln.value
        if ln.value > LAZY_STRING_BYTES:  # a long string stays a view over the buffer, as the compiled read's
            data.value = node.value = LazyString(self.buf, ln.end, ln.value)
            return
        data.value = bytes(self.buf[ln.end : data.end])
        node.value = decode_text(data.value)

    def repeat(self, item: str, f: dict, node: Node, record: Node, as_bool: bool = False) -> None:
        count = self.count(f["repeat"], record)
        node.type = item
        prim = self.sp.primitive(item)
        left = self.size - node.start
        if prim is not None:
            width = self.sp.width(prim)
            if count * width > left:
                self.stop(
                    fieldrules.field_rule(record.type, f["id"], "count"),
                    node,
                    record,
                    f"array element count {count} needs at least {count * width} bytes, {left} remaining",
                )
            arr = np.frombuffer(self.buf, dtype=self.sp.dtype(prim), count=count, offset=node.start)
            arr = arr.astype(arr.dtype.newbyteorder("="), copy=True)
            node.value = arr.view(np.bool_) if as_bool else arr
            node.item_width = width
            node.end = node.start + count * width
            return
        if self.sp.is_string(item):
            width = self.sp.min_size(item)
            if count * width > left:
                self.stop(
                    fieldrules.field_rule(record.type, f["id"], "count"),
                    node,
                    record,
                    f"string array element count {count} needs at least {count * width} bytes, {left} remaining",
                )
            try:
                starts, ends, end = scan_string_offsets(
                    self.buf, node.start, count, width, _spec.byte_order(self.sp.fam.byte_order).struct
                )
            except IndexError as exc:
                index, offset, length = exc.args
                elem = Node(f"{node.path}[{index}]", offset, type=item)
                node.fields[f"[{index}]"] = elem
                self.string(elem, elem)
                raise AssertionError("unreachable: the element was found not to fit") from None
            node.value = StringList.from_records(self.buf, starts, ends, width, self.sp.fam.byte_order)
            node.item_spans = (starts - width, ends)  # elements located on demand, not one node each
            node.end = end
            return
        need = count * self.sp.min_size(item)
        if need > left:
            self.stop(
                fieldrules.field_rule(record.type, f["id"], "count"),
                node,
                record,
                f"{item.replace('_', ' ')} count {count} needs at least {need} bytes, {left} remaining",
            )
        pos = node.start
        values = []
        for i in range(count):
            elem = Node(f"{node.path}[{i}]", pos, type=item)
            node.fields[f"[{i}]"] = elem
            self.compound(item, elem)
            values.append(elem)
            pos = elem.end
        node.value = values
        node.end = pos

    def count(self, count_field: str, record: Node) -> int:
        node = record
        for part in count_field.split("."):
            node = node.fields[part] if part in node.fields else None
            if node is None:
                raise KeyError(f"{record.path}: count field {count_field} not read")
        return int(node.value)


# ---------------------------------------------------------------------------------------------------------------
# locating the fields of an already parsed record
# ---------------------------------------------------------------------------------------------------------------


def sizeof(fam, type_name: str, value: Any) -> int:
    """Bytes an instance of a spec type, alias or primitive with this parsed value occupies in ``fam``."""
    return _size(_spec_of(fam), type_name, value)


def _size(sp: _Spec, type_name: str, value: Any) -> int:
    prim = sp.primitive(type_name)
    if prim is not None:
        return sp.width(prim)
    if sp.is_string(type_name):
        return sp.min_size(type_name) + text_nbytes(value)
    total = 0
    for f in sp.spec["types"][type_name]["seq"]:
        total += _field_size(sp, f, value, getattr(value, f["id"]))
    return total


def _field_size(sp: _Spec, f: dict, record: Any, value: Any) -> int:
    if "contents" in f:
        return len(f["contents"])
    item = f.get("type")
    if "switch_on" in f:
        item = sp.case(int(_get(record, f["switch_on"])))
    if "repeat" in f:
        prim = sp.primitive(item)
        if prim is not None:
            return sp.width(prim) * len(value)
        return sum(_size(sp, item, v) for v in value)
    return _size(sp, item, value)


def _get(record: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        record = getattr(record, part)
    return record


def offset_of(fam, type_name: str, value: Any, start: int, rel: str) -> int:
    """Start offset of the field at ``rel`` (``value``, ``value.data``, ``dimensions[2]``) of a record the compiled
    parser read at ``start``; only the fields before it are sized."""
    sp = _spec_of(fam)
    pos = start
    parts = _split(rel)
    for k, part in enumerate(parts):
        if part.startswith("["):
            i = int(part[1:-1])
            prim = sp.primitive(type_name)
            pos += i * sp.width(prim) if prim else sum(_size(sp, type_name, v) for v in value[:i])
            if k + 1 < len(parts):
                value = value[i]
            continue
        for f in sp.spec["types"][type_name]["seq"]:
            sub = getattr(value, f["id"], None)
            if f["id"] == part:
                item = sp.case(int(_get(value, f["switch_on"]))) if "switch_on" in f else f.get("type")
                type_name, value = item, sub
                break
            pos += _field_size(sp, f, value, sub)
        else:
            raise KeyError(f"{type_name} has no field {part!r}")
    return pos


def locate(fam, type_name: str, value: Any, start: int = 0, path: str = "") -> Node:
    """The field tree of a record the compiled parser read at ``start``: each field's start and end from the
    parsed values and the family's widths."""
    return _locate(_spec_of(fam), type_name, value, start, path)


def _locate(sp: _Spec, type_name: str, value: Any, start: int, path: str) -> Node:
    node = Node(path, start, value=value, type=type_name)
    prim = sp.primitive(type_name)
    if prim is not None:
        node.end = start + sp.width(prim)
        return node
    if sp.is_string(type_name):
        seq = sp.spec["types"][type_name]["seq"]
        width = sp.min_size(type_name)
        data = (
            value if isinstance(value, LazyString) else encode_text(value) if isinstance(value, str) else bytes(value)
        )
        n = text_nbytes(data)
        node.fields[seq[0]["id"]] = Node(_join(path, seq[0]["id"]), start, start + width, n)
        node.fields[seq[1]["id"]] = Node(_join(path, seq[1]["id"]), start + width, start + width + n, data)
        node.end = start + width + n
        return node
    pos = start
    for f in sp.spec["types"][type_name]["seq"]:
        sub_path = _join(path, f["id"])
        if "contents" in f:
            child = Node(sub_path, pos, pos + len(f["contents"]), f["contents"].encode("ascii"), type="contents")
        else:
            item = f.get("type")
            if "switch_on" in f:
                item = sp.case(int(_get(value, f["switch_on"])))
            sub = getattr(value, f["id"])
            if "repeat" in f:
                child = Node(sub_path, pos, value=sub, type=item)
                prim = sp.primitive(item)
                if prim is not None:
                    child.item_width = sp.width(prim)
                    child.end = pos + child.item_width * len(sub)
                elif sp.is_string(item):
                    width = sp.min_size(item)
                    lengths = np.fromiter(
                        (len(encode_text(v) if isinstance(v, str) else v) for v in sub), dtype=np.int64, count=len(sub)
                    )
                    ends = pos + np.cumsum(lengths + width)
                    child.item_spans = (ends - lengths - width, ends)
                    child.end = int(ends[-1]) if len(sub) else pos
                else:
                    p = pos
                    for i, v in enumerate(sub):
                        elem = _locate(sp, item, v, p, f"{sub_path}[{i}]")
                        child.fields[f"[{i}]"] = elem
                        p = elem.end
                    child.end = p
            else:
                child = _locate(sp, item, sub, pos, sub_path)
        node.fields[f["id"]] = child
        pos = child.end
    node.end = pos
    return node


# ---------------------------------------------------------------------------------------------------------------
# the permissive build
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """Bytes written verbatim in place of a field's encoding (a count in the other byte order, a value of an
    unknown type, a magic that is not GGUF ...)."""

    data: bytes


def build(fam, type_name: str, value: Any, path: str = "") -> tuple[bytes, Node]:
    """Encode ``value`` as spec type ``type_name`` in ``fam``, accepting any value in any field, and return the bytes
    with the field tree of what was written (every field's start, end and path).

    Compound values are mappings or attribute objects (a parsed tree works).  A count or string length left out is
    the length of its data; given, it is written as given, even when it lies.  Numbers wrap to their field's width;
    a :class:`Raw` field, or the value of an unknown value type, is written verbatim; ``contents`` may be replaced.
    """
    out = bytearray()
    node = Node(path, 0, type=type_name)
    _Builder(_spec_of(fam), out).value(type_name, value, node, {})
    return bytes(out), node


def _member(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


class _Builder:
    def __init__(self, sp: _Spec, out: bytearray):
        self.sp, self.out = sp, out

    def packer(self, prim: str):
        """(struct for one value, bits, signed) of a primitive in this family."""
        got = self.sp.packers.get(prim)
        if got is None:
            fmt = _FORMAT[prim]
            width = self.sp.width(prim)
            got = (
                _struct.Struct((self.sp.order if width > 1 else "") + fmt),
                8 * width,
                fmt.islower() and fmt not in "efd",
                fmt in "efd",
            )
            self.sp.packers[prim] = got
        return got

    def plan(self, type_name: str) -> list[tuple]:
        """The fields of a compound type as (id, kind, spec field, count fields of later repeats), once."""
        got = self.sp.plans.get(type_name)
        if got is None:
            got = []
            for f in self.sp.spec["types"][type_name]["seq"]:
                if "contents" in f:
                    kind = "contents"
                elif "switch_on" in f:
                    kind = "switch"
                elif "repeat" in f:
                    kind = "repeat"
                else:
                    kind = "single"
                got.append((f["id"], kind, f))
            self.sp.plans[type_name] = got
        return got

    def put(self, node: Node, data: bytes) -> None:
        node.start = len(self.out)
        self.out += data
        node.end = len(self.out)

    def number(self, prim: str, v: Any) -> int | float:
        _, bits, signed, is_float = self.packer(prim)
        if is_float:
            return float(v)
        v = int(v) % (1 << bits)
        return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v

    def scalar(self, prim: str, v: Any) -> bytes:
        if prim == "f4":
            return self.sp.f4.build(v)
        one = self.sp.packers.get(prim) or self.packer(prim)
        try:
            return one[0].pack(v)
        except (_struct.error, TypeError, OverflowError):  # out of range or not a plain number: wrap it
            return one[0].pack(self.number(prim, v))

    def value(self, type_name: str, v: Any, node: Node, defaults: dict[str, Any]) -> None:
        node.type, node.value = type_name, v
        node.start = len(self.out)
        if isinstance(v, Raw):
            self.put(node, v.data)
            return
        prim = self.sp.primitive(type_name)
        if prim is not None:
            self.put(node, self.scalar(prim, v))
            return
        if self.sp.is_string(type_name):
            self.string(type_name, v, node)
            return
        plan = self.plan(type_name)
        counts = dict(defaults) if defaults else {}
        for fid, kind, f in plan:
            if "repeat" in f:
                data = _member(v, fid)
                if data is not None and not isinstance(data, Raw):
                    counts.setdefault(f["repeat"], len(data))
        dotted = any("." in k for k in counts)
        base = node.path
        fields = node.fields
        for fid, kind, f in plan:
            child = Node(f"{base}.{fid}" if base else fid, len(self.out))
            fields[fid] = child
            given = _member(v, fid)
            if given is None and fid in counts:
                given = counts[fid]
            elif given is None and "default" in f:
                given = f["default"]
            inner = {k[len(fid) + 1 :]: n for k, n in counts.items() if k.startswith(fid + ".")} if dotted else None
            self.field(kind, f, given, child, v, inner)
        node.end = len(self.out)

    def string(self, type_name: str, v: Any, node: Node) -> None:
        len_f, data_f = self.sp.spec["types"][type_name]["seq"]
        if isinstance(v, (str, bytes, bytearray, LazyString)):
            data, length = (bytes(v) if isinstance(v, (bytes, bytearray)) else encode_text(v)), None
        else:
            data, length = _member(v, data_f["id"]), _member(v, len_f["id"])
            data = encode_text(data) if isinstance(data, str) else bytes(data)
        base = node.path
        ln = Node(f"{base}.{len_f['id']}" if base else len_f["id"], len(self.out))
        node.fields[len_f["id"]] = ln
        self.value(len_f["type"], len(data) if length is None else length, ln, {})
        body = Node(f"{base}.{data_f['id']}" if base else data_f["id"], len(self.out), value=data, type="bytes")
        node.fields[data_f["id"]] = body
        self.put(body, data)
        node.end = len(self.out)

    def field(self, kind: str, f: dict, v: Any, node: Node, record: Any, defaults: dict[str, Any]) -> None:
        if kind == "contents":
            self.put(node, f["contents"].encode("ascii") if v is None else bytes(getattr(v, "data", v)))
            node.type, node.value = "contents", v
            return
        item = f.get("type")
        if kind == "switch":
            item = self.sp.case(int(_member(record, f["switch_on"])))
            if item is None:  # an unknown value type: whatever bytes were given
                if isinstance(v, list):
                    v = Raw(b"".join(x.data if isinstance(x, Raw) else bytes(x) for x in v))
                raw = v if isinstance(v, Raw) else Raw(bytes(v or b""))
                self.put(node, raw.data)
                node.type, node.value = "raw", raw
                return
        if "repeat" in f and not isinstance(v, Raw):
            self.repeat(item, v if v is not None else (), node)
            return
        self.value(item, v, node, defaults)

    def repeat(self, item: str, v: Any, node: Node) -> None:
        node.type, node.value = item, v
        prim = self.sp.primitive(item)
        if prim is not None and prim != "f4":
            one = self.packer(prim)[0]
            node.item_width = one.size
            fmt = one.format[:1] + one.format[1:] * len(v) if one.size > 1 else one.format * len(v)
            try:
                data = _struct.pack(fmt, *v)
            except (_struct.error, TypeError, OverflowError):  # out of range or not plain numbers: wrap each
                data = _struct.pack(fmt, *[self.number(prim, x) for x in v])
            self.put(node, data)
            return
        if prim == "f4":
            node.item_width = 4
            self.put(node, b"".join(self.sp.f4.build(x) for x in v))
            return
        base = node.path
        for i, x in enumerate(v):
            elem = Node(f"{base}[{i}]", len(self.out))
            node.fields[f"[{i}]"] = elem
            self.value(item, x, elem, {})
        node.end = len(self.out)
