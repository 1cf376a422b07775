"""The symbolic layout of the spec types (:mod:`gguf_construct.format.fieldlayout`) agrees with what the permissive build and
the located read report for concrete records, in every family, for every spec type."""

from __future__ import annotations

import numpy as np
import pytest

from gguf_construct.format import fieldlayout, structs
from gguf_construct.format.fieldlayout import Extent
from gguf_construct.format.fieldtree import Node

TYPES = list(structs.container_spec()["types"])
VALUE_TYPES = sorted(structs.value_types())
VARIANTS = range(len(VALUE_TYPES))  # each variant selects another value type for the switch fields


def _target(selector: int) -> str:
    vt = structs.value_types()[selector]
    return vt.get("encoding") or vt["type"]


def _sample(type_name: str, k: int, skip: frozenset[str] = frozenset(), outer: tuple[str, ...] = ()) -> dict:
    """A value of ``type_name`` for the permissive build, made from the spec's ``seq``: strings of ``k`` bytes,
    arrays of ``k`` items, switch fields of the ``k``-th value type (no type nested in itself); counts and lengths
    are left out (the build writes the length of their data), as are ``skip`` (counted by an outer record)."""
    seq = structs.container_spec()["types"][type_name]["seq"]
    outer = outer + (type_name,)
    counted = {f[key] for f in seq for key in ("repeat", "size") if key in f}
    candidates = [s for s in VALUE_TYPES if _target(s) not in outer]
    selectors = {f["switch_on"]: candidates[(k + len(outer)) % len(candidates)] for f in seq if "switch_on" in f}
    value: dict = {}
    for f in seq:
        fid = f["id"]
        if "contents" in f or fid in counted or fid in skip:
            continue
        if fid in selectors:
            value[fid] = selectors[fid]
        elif "size" in f:
            value[fid] = bytes(range(65, 65 + k))
        else:
            item = _target(selectors[f["switch_on"]]) if "switch_on" in f else f["type"]
            inner = frozenset(c.split(".", 1)[1] for c in counted if c.startswith(fid + "."))
            one = _sample(item, k, inner, outer) if item in structs.container_spec()["types"] else 1
            value[fid] = [one] * k if "repeat" in f else one
    return value


def _check_against_layout(fam, node: Node) -> int:
    """Every record in the tree: each field's offset and size, and the record's size, as its layout predicts
    wherever the layout is not variable.  Returns how many constant or symbolic extents were compared."""
    compared = 0
    for rec in node.walk():
        if rec.type not in TYPES or not rec.fields or next(iter(rec.fields)).startswith("["):
            continue  # a primitive, or an array of records (its elements are checked on their own)
        lay = fam.layout(rec.type)
        assert [f.id for f in lay.fields] == list(rec.fields), rec.path

        def value_of(path: str, rec=rec) -> int:
            return rec.find(path).value

        for f in lay.fields:
            got = rec.fields[f.id]
            for extent, actual in ((f.offset, got.start - rec.start), (f.size, got.end - got.start)):
                if not extent.variable:
                    assert extent.evaluate(value_of) == actual, (fam.version, rec.path, f.id, str(extent))
                    compared += 1
        if not lay.size.variable:
            assert lay.size.evaluate(value_of) == rec.end - rec.start, (fam.version, rec.path)
            compared += 1
    return compared


def _same_spans(read: Node, built: Node) -> None:
    """Every field the read located lies where the build put it (the build has a node for every field; the read
    locates the elements of string arrays on demand)."""
    for n in read.walk():
        b = built.find(n.path) if n.path else built
        assert (n.start, n.end) == (b.start, b.end), n.path


@pytest.mark.parametrize("version,byte_order", structs.each_family())
@pytest.mark.parametrize("type_name", TYPES)
def test_layout_agrees_with_build_and_read(version, byte_order, type_name):
    fam = structs.family(version, byte_order)
    compared = 0
    for k in VARIANTS:
        raw, built = fam.build(type_name, _sample(type_name, k))
        reading = fam.read(type_name, raw)
        assert reading.problem is None, reading.problem
        assert reading.end == len(raw) == built.end
        _same_spans(reading.root, built)
        compared += _check_against_layout(fam, built) + _check_against_layout(fam, reading.root)
    assert compared >= 2 * len(VARIANTS)  # every type has a field at a known offset (at least the first)


@pytest.mark.parametrize("version,byte_order", structs.each_family())
def test_fixed_size_types_are_plain_numbers_equal_to_min_sizes(version, byte_order):
    fam = structs.family(version, byte_order)
    for type_name in TYPES:
        size = fam.layout(type_name).size
        if not size.variable:  # with every value term at zero, the record is as small as it can be
            assert size.const == fam.min_sizes[type_name], type_name
    header = fam.layout("header")
    assert header.size.fixed == fam.min_sizes["header"]
    assert all(f.offset.fixed is not None and f.size.fixed is not None for f in header.fields)
    count = fam.primitive_width("count_t")
    assert header["metadata_kv_count"].size.fixed == count
    assert header["metadata_kv_count"].offset.fixed == header.size.fixed - count


def test_symbolic_terms_name_the_fields_they_depend_on():
    v1, v3 = structs.family(1, "little"), structs.family(3, "big")
    assert str(v3.layout("tensor_info")["type"].offset) == "12 + name.len + 8 × n_dimensions"
    assert str(v1.layout("tensor_info")["dimensions"].size) == "4 × n_dimensions"
    assert str(v3.layout("metadata_kv")["key"].size) == "8 + key.len"
    assert str(v3.layout("gguf_string")["data"].size) == "len"
    assert v3.layout("metadata_kv")["value"].size.variable
    assert str(v3.layout("metadata_kv").size) == "variable"
    assert str(v3.layout("file_head")["metadata_kv"].offset) == str(v3.min_sizes["header"])
    assert str(fieldlayout.case_size(v1, 8)) == "4 + len"
    assert fieldlayout.case_size(v3, 6).fixed == 4


def test_extent_arithmetic():
    a = Extent(4, ((1, "key.len"),))
    b = Extent(8, ((8, "n"), (2, "key.len")))
    assert a + b == Extent(12, ((3, "key.len"), (8, "n")))
    assert (a + Extent(variable=True)).variable
    assert a.within("kv") == Extent(4, ((1, "kv.key.len"),))
    assert (a + b).evaluate({"key.len": 5, "n": 2}.__getitem__) == 12 + 15 + 16
    assert Extent(variable=True).evaluate(lambda p: 0) is None
    assert str(Extent()) == "0" and str(Extent(0, ((1, "len"),))) == "len"


@pytest.mark.parametrize("version,byte_order", structs.each_family())
def test_field_at_places_nested_fields_where_the_build_puts_them(version, byte_order):
    fam = structs.family(version, byte_order)
    raw, tree = fam.build("file_head", _sample("file_head", 2))
    paths = [f"header.{f['id']}" for f in structs.container_spec()["types"]["header"]["seq"]]
    for path in paths:
        place = fieldlayout.field_at(fam, "file_head", path)
        node = tree.find(path)
        assert place.id == path
        assert (place.offset.fixed, place.offset.fixed + place.size.fixed) == (node.start, node.end), path
    _raw, kv = fam.build("metadata_kv", _sample("metadata_kv", 3))
    data = fieldlayout.field_at(fam, "metadata_kv", "key.data")
    assert str(data.size) == "key.len"
    assert data.offset.evaluate(lambda p: kv.find(p).value) == kv.find("key.data").start
    assert data.size.evaluate(lambda p: kv.find(p).value) == 3
    with pytest.raises(KeyError):
        fieldlayout.field_at(fam, "file_head", "metadata_kv.key")  # an array of records has no one place


def test_common_field_is_the_place_every_family_agrees_on():
    word = fieldlayout.common_field("file_head", "header.version")
    for version, byte_order in structs.each_family():
        raw, _tree = structs.family(version, byte_order).build("header", _sample("header", 0) | {"version": version})
        end = word.offset.fixed + word.size.fixed
        assert int.from_bytes(raw[word.offset.fixed : end], byte_order) == version
        assert structs.detect(raw[:end]) == (version, byte_order)
    with pytest.raises(ValueError, match="tensor_count"):  # count_t: 4 bytes in v1, 8 later
        fieldlayout.common_field("file_head", "header.tensor_count")


@pytest.mark.parametrize("version,byte_order", structs.each_family())
def test_scalars_are_what_the_family_writes(version, byte_order):
    """A primitive's or alias's width and kind: the bytes the builder writes for a field of that type, read back
    with numpy as that kind."""
    fam = structs.family(version, byte_order)
    for type_name, field_id, value in (
        ("tensor_info", "dimensions", [3]),
        ("header", "tensor_count", 5),
        ("gguf_array", "type", 6),
    ):
        f = structs.field_spec(type_name, field_id)
        s = fieldlayout.scalar(fam, f["type"])
        raw, tree = fam.build(type_name, {**_sample(type_name, 1), field_id: value})
        node = tree.find(field_id)
        assert node.end - node.start == s.width * (len(value) if isinstance(value, list) else 1)
        dtype = np.dtype(f"{s.kind}{s.width}").newbyteorder("<" if byte_order == "little" else ">")
        assert np.frombuffer(raw[node.start : node.end], dtype).tolist() == (
            value if isinstance(value, list) else [value]
        )
    assert fieldlayout.scalar(fam, "dim_t") == fieldlayout.common_scalar(structs.resolve_alias("dim_t", version))


def test_common_scalars_and_alias_cases():
    assert fieldlayout.common_scalar("i4") == fieldlayout.Scalar("i4", 4, "i")
    assert fieldlayout.common_scalar("f2").kind == "f" and fieldlayout.common_scalar("bf2").kind == "u"
    with pytest.raises(ValueError, match="count_t"):
        fieldlayout.common_scalar("count_t")
    for alias, spec_alias in structs.container_spec()["aliases"].items():
        cases = fieldlayout.alias_cases(alias)
        assert list(cases) == list(spec_alias["cases"])
        for version in structs.versions():
            case = cases.get(version, cases["_"])
            assert case == fieldlayout.scalar(structs.family(version, "big"), alias), (alias, version)
