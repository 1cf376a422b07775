"""spec/ validates against its own JSON Schemas and is internally consistent."""

import json

import jsonschema
import numpy as np
import pytest

from gguf_construct import codecs
from gguf_construct.format import spec, structs

SCHEMAS = spec.spec_dir() / "schema"


def validate(data, schema_name):
    schema = json.loads((SCHEMAS / schema_name).read_text())
    jsonschema.Draft202012Validator(schema).validate(data)


def test_container_spec_matches_its_schema():
    validate(spec.load_yaml("gguf.yaml"), "gguf.schema.json")


@pytest.mark.parametrize("path", sorted((spec.spec_dir() / "tensor_types").glob("*.yaml")), ids=lambda p: p.name)
def test_tensor_type_matches_its_schema(path):
    raw = spec.load_yaml(f"tensor_types/{path.name}")
    validate(raw, "tensor_type.schema.json")
    assert path.name == f"{raw['id']:02d}_{raw['name'].lower()}.yaml"
    assert raw["c_name"] == f"GGML_TYPE_{raw['name']}"


@pytest.mark.parametrize("path", sorted((spec.spec_dir() / "tables").glob("*.yaml")), ids=lambda p: p.name)
def test_table_matches_its_schema(path):
    raw = spec.load_yaml(f"tables/{path.name}")
    validate(raw, "table.schema.json")
    arr = spec.table(raw["name"])
    assert arr.size == int(np.prod(raw.get("shape", [len(raw["values"])])))


def test_tensor_type_ids_and_sizes():
    types = spec.tensor_types()
    assert [t.id for t in types] == list(range(43))  # ggml 0.25: ids 0..42, removed ones included
    removed = {t.id for t in types if not t.is_current}
    assert removed == {4, 5, 31, 32, 33, 36, 37, 38}
    for t in types:
        if t.is_current:
            assert codecs.block_dtype(t.id).itemsize == t.type_size
            assert codecs.block_dtype(t.id, "big").itemsize == t.type_size
    by_name = {t.name: t for t in types}
    assert (by_name["Q8_1"].block_size, by_name["Q8_1"].type_size) == (32, 36)
    assert (by_name["Q2_0"].block_size, by_name["Q2_0"].type_size) == (64, 18)


def test_value_types_are_contiguous_and_versioned():
    vts = structs.container_spec()["value_types"]
    assert [vt["id"] for vt in vts] == list(range(13))
    assert {vt["name"] for vt in vts if vt["since"] > 1} == {"UINT64", "INT64", "FLOAT64"}


def test_aliases_cover_every_version():
    for name in structs.container_spec()["aliases"]:
        widths = {v: structs.resolve_alias(name, v) for v in structs.versions()}
        assert widths == {1: "u4", 2: "u8", 3: "u8"}


def test_types_reference_only_declared_names():
    c = structs.container_spec()
    known = {p["id"] for p in c["primitives"]} | set(c["aliases"]) | set(c["types"])
    for name, t in c["types"].items():
        earlier = set()
        for field in t["seq"]:
            if "type" in field:
                assert field["type"] in known, (name, field["id"])
            for ref in ("repeat", "size", "switch_on"):
                if ref in field:
                    assert field[ref].split(".")[0] in earlier, (name, field["id"], ref)
            earlier.add(field["id"])


def test_every_family_generates():
    for version, order in structs.each_family():
        fam = structs.family(version, order)
        assert fam.min_sizes["metadata_kv"] == (4 if version == 1 else 8) + 4 + 1
