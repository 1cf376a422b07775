"""Consistency of the spec data files: keys.yaml, file_types.yaml, naming.yaml, rules.yaml.

Each file is validated against its JSON Schema in spec/schema/, then checked for what a schema cannot express:
unique ids, cross-references between the files, the naming examples against the regex, and the rule catalog
against the researched catalog in ../shared/reference (skipped when that directory is absent).
"""

from __future__ import annotations

import importlib.util
import json
import re
import string
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
SHARED_REF = ROOT.parent / "shared" / "reference"

DATA_FILES = ("file_types", "keys", "naming", "rules")
VALUE_TYPES = (
    "UINT8",
    "INT8",
    "UINT16",
    "INT16",
    "UINT32",
    "INT32",
    "FLOAT32",
    "BOOL",
    "STRING",
    "ARRAY",
    "UINT64",
    "INT64",
    "FLOAT64",
)
TOP_LEVEL = {
    "file_types": ["meta", "file_types"],
    "keys": ["meta", "sections", "keys", "architectures"],
    "naming": ["meta", "regex", "components", "shard", "examples"],
    "rules": ["meta", "groups", "placeholders", "rules"],
}
# field order inside list entries (fields may be absent, but never out of order)
ENTRY_ORDER = {
    ("file_types", "file_types"): ["value", "name", "c_name", "status", "tensor_type", "doc", "doc_ref"],
    ("keys", "keys"): [
        "key",
        "type",
        "item_type",
        "alt_types",
        "required",
        "required_by",
        "optional_for",
        "section",
        "doc",
        "doc_ref",
        "aliases",
        "errata",
        "values",
        "values_from",
    ],
    ("naming", "components"): ["id", "optional", "pattern", "values", "metadata_key", "doc", "doc_ref"],
    ("naming", "examples"): ["name", "valid", "parse", "note", "rules", "source"],
    ("rules", "rules"): [
        "id",
        "severity",
        "profiles",
        "load",
        "scope",
        "title",
        "doc",
        "message",
        "source",
        "doc_ref",
        "applies_to",
        "c_reader",
        "gguf_py",
        "adversarial",
        "see_also",
        "notes",
        "dormant",
    ],
}
COMPONENTS = ["Sidecar", "BaseName", "SizeLabel", "FineTune", "Version", "Encoding", "Type", "Shard"]

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_cache: dict[str, object] = {}


def load(name: str):
    if name not in _cache:
        with open(SPEC / f"{name}.yaml", "rb") as fh:
            _cache[name] = yaml.load(fh, Loader=_Loader)
    return _cache[name]


def gguf_py_constants():
    """gguf-py's constants module, loaded on its own (importing the gguf package pulls in numpy and is slow)."""
    spec = importlib.util.find_spec("gguf")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gguf-py is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "constants.py"
    if "gguf_constants" not in _cache:
        mod_spec = importlib.util.spec_from_file_location("_gguf_constants_for_tests", path)
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
        _cache["gguf_constants"] = module
    return _cache["gguf_constants"]


def schema(name: str) -> dict:
    with open(SPEC / "schema" / f"{name}.schema.json", encoding="utf-8") as fh:
        return json.load(fh)


# ----------------------------------------------------------------------------------------------------------------
# all files: schema and layout
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATA_FILES)
def test_schema_valid(name):
    sch = schema(name)
    jsonschema.Draft202012Validator.check_schema(sch)
    errors = sorted(jsonschema.Draft202012Validator(sch).iter_errors(load(name)), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])


@pytest.mark.parametrize("name", DATA_FILES)
def test_section_and_field_order(name):
    data = load(name)
    assert list(data) == TOP_LEVEL[name]
    assert list(data["meta"])[:4] == ["id", "title", "doc", "doc_ref"]
    assert data["meta"]["id"] == name
    for (fname, section), order in ENTRY_ORDER.items():
        if fname != name:
            continue
        for entry in data[section]:
            fields = list(entry)
            assert set(fields) <= set(order), (entry, set(fields) - set(order))
            assert fields == sorted(fields, key=order.index), f"{section}: fields out of order in {fields}"


# ----------------------------------------------------------------------------------------------------------------
# file_types.yaml
# ----------------------------------------------------------------------------------------------------------------


def test_file_types_unique_and_consistent():
    entries = load("file_types")["file_types"]
    values = [e["value"] for e in entries]
    names = [e["name"] for e in entries]
    assert len(values) == len(set(values)), "duplicate file_type values"
    assert len(names) == len(set(names)), "duplicate file_type names"
    assert values == sorted(values)
    for e in entries:
        assert e["c_name"] == "LLAMA_FTYPE_" + e["name"]
        assert (e["status"] == "never_stored") == (e["tensor_type"] is None), e["name"]


def test_file_types_tensor_types_exist():
    tt_dir = SPEC / "tensor_types"
    if not tt_dir.is_dir():
        pytest.skip("spec/tensor_types not present")
    known = set()
    for path in tt_dir.glob("*.yaml"):
        m = re.search(r"^name:\s*(\S+)", path.read_text(encoding="utf-8"), re.M)
        if m:
            known.add(m.group(1))
    if not known:
        pytest.skip("no tensor type names found")
    for e in load("file_types")["file_types"]:
        if e["tensor_type"] is not None:
            assert e["tensor_type"] in known, (e["name"], e["tensor_type"])


def test_file_types_cover_gguf_py():
    gguf_constants = gguf_py_constants()
    ours = {e["value"]: e["name"] for e in load("file_types")["file_types"]}
    for member in gguf_constants.LlamaFileType:
        assert ours.get(int(member)) == member.name, member


# ----------------------------------------------------------------------------------------------------------------
# keys.yaml
# ----------------------------------------------------------------------------------------------------------------


def test_keys_unique_and_typed():
    data = load("keys")
    names = []
    for e in data["keys"]:
        names.append(e["key"])
        names.extend(e.get("aliases", []))
        assert e["type"] in VALUE_TYPES, e["key"]
        assert ("item_type" in e) == (e["type"] == "ARRAY"), e["key"]
        if "item_type" in e:
            assert e["item_type"] in VALUE_TYPES, e["key"]
        for alt in e.get("alt_types", []):
            alt_name = alt if isinstance(alt, str) else alt["type"]
            assert alt_name in VALUE_TYPES, e["key"]
            if isinstance(alt, dict):
                assert alt["item_type"] in VALUE_TYPES, e["key"]
            assert alt != e["type"], f"{e['key']}: alt_types repeats the main type"
    dups = {n for n in names if names.count(n) > 1}
    assert not dups, f"duplicate keys or aliases: {dups}"


def test_keys_value_types_match_container_spec():
    """If gguf.yaml declares the value types, the registry must use exactly those names."""
    path = SPEC / "gguf.yaml"
    if not path.is_file():
        pytest.skip("spec/gguf.yaml not present")
    container = yaml.load(path.read_bytes(), Loader=_Loader)
    declared = container.get("value_types") if isinstance(container, dict) else None
    if not declared:
        pytest.skip("gguf.yaml has no value_types section yet")
    names = {str(v.get("name", v.get("id")) if isinstance(v, dict) else v).upper() for v in declared}
    if not names & set(VALUE_TYPES):
        pytest.skip("gguf.yaml names its value types differently; nothing to compare")
    assert set(VALUE_TYPES) <= names, f"value types missing from gguf.yaml: {set(VALUE_TYPES) - names}"


def test_keys_cross_references():
    data = load("keys")
    sections = {s["id"] for s in data["sections"]}
    archs = [a["id"] for a in data["architectures"]]
    assert len(archs) == len(set(archs))
    placeholders = set(data["meta"]["placeholders"])
    required_seen = set()
    for e in data["keys"]:
        assert e["section"] in sections, e["key"]
        for a in e.get("required_by", []) + e.get("optional_for", []):
            assert a in archs, (e["key"], a)
        required_seen.update(e.get("required_by", []))
        for name in [e["key"], *e.get("aliases", [])]:
            assert set(re.findall(r"\{(\w+)\}", name)) <= placeholders, name
        if "values_from" in e:
            assert (SPEC / f"{e['values_from']}.yaml").is_file()
    assert required_seen == set(archs), f"architectures without required keys: {set(archs) - required_seen}"
    required = {e["key"] for e in data["keys"] if e["required"]}
    assert {"general.architecture", "general.quantization_version"} <= required
    assert "general.alignment" not in required


def test_known_architectures_cover_gguf_py():
    """Every architecture of the installed gguf-py is one of llama.cpp's (spec/architectures/), or is newer than the
    llama.cpp the spec was extracted from (listed)."""
    from gguf_construct.arch import architectures

    gguf_constants = gguf_py_constants()
    missing = set(gguf_constants.MODEL_ARCH_NAMES.values()) - set(architectures())
    assert not missing, f"architectures of the installed gguf-py missing from spec/architectures: {sorted(missing)}"


# ----------------------------------------------------------------------------------------------------------------
# naming.yaml
# ----------------------------------------------------------------------------------------------------------------


def _naming_regex():
    data = load("naming")
    flags = 0
    for flag in data["regex"]["flags"]:
        flags |= getattr(re, flag)
    return re.compile(data["regex"]["python"], flags)


def test_naming_regex_matches_javascript_source():
    rx = load("naming")["regex"]
    assert rx["python"] == rx["javascript"].replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!")
    assert list(_naming_regex().groupindex) == COMPONENTS


def test_naming_components_appear_in_regex():
    data = load("naming")
    assert [c["id"] for c in data["components"]] == COMPONENTS
    for c in data["components"]:
        assert f"(?P<{c['id']}>{c['pattern']})" in data["regex"]["python"], c["id"]
        re.compile(c["pattern"])


def test_naming_examples_parse_as_declared():
    rx = _naming_regex()
    rule_ids = {r["id"] for r in load("rules")["rules"]}
    examples = load("naming")["examples"]
    assert len({e["name"] for e in examples}) == len(examples)
    for e in examples:
        m = rx.match(e["name"])
        assert bool(m) == e["valid"], e["name"]
        if m:
            assert {k: m.group(k) for k in COMPONENTS} == e["parse"], e["name"]
        for rule in e.get("rules", []):
            assert rule in rule_ids, rule


def test_naming_shard_examples_obey_shard_rule():
    shard = load("naming")["shard"]
    srx = re.compile(shard["regex"])
    for e in load("naming")["examples"]:
        if e["valid"] and e["parse"]["Shard"]:
            m = srx.match(e["parse"]["Shard"])
            assert m, e["name"]
            ok = shard["first_number"] <= int(m["number"]) <= int(m["total"])
            assert ok == ("NAME-SHARD" not in e.get("rules", [])), e["name"]
            assert shard["format"].format(number=int(m["number"]), total=int(m["total"])) == e["parse"]["Shard"]


# ----------------------------------------------------------------------------------------------------------------
# rules.yaml
# ----------------------------------------------------------------------------------------------------------------


def test_rule_ids_unique_and_grouped():
    data = load("rules")
    ids = [r["id"] for r in data["rules"]]
    assert len(ids) == len(set(ids)), {i for i in ids if ids.count(i) > 1}
    prefixes = [g["prefix"] for g in data["groups"]]
    assert len(prefixes) == len(set(prefixes))
    # rules are listed group by group, in the order of the groups
    order = [prefixes.index(i.split("-")[0]) for i in ids]
    assert order == sorted(order)


def test_rule_profiles_and_references():
    data = load("rules")
    ids = {r["id"] for r in data["rules"]}
    declared = set(data["placeholders"])
    keys = load("keys")["keys"]
    key_names = {e["key"] for e in keys} | {a for e in keys for a in e.get("aliases", [])}
    for r in data["rules"]:
        assert r["profiles"]["spec"] == r["severity"], r["id"]
        for other in r.get("see_also", []):
            assert other in ids and other != r["id"], (r["id"], other)
        used = {f for _, f, _, _ in string.Formatter().parse(r["message"]) if f}
        assert used <= declared, (r["id"], used - declared)
        for loc in r["applies_to"]:
            if loc.startswith("metadata:"):
                assert loc.split(":", 1)[1] in key_names, (r["id"], loc)


def test_rule_ggml_profile_follows_ggml():
    """Rules that ggml enforces but gguf.md does not are errors only in the ggml profile."""
    by_id = {r["id"]: r for r in load("rules")["rules"]}
    for rid in ("ALIGN-POW2", "ARR-NESTED", "TI-NAME-64", "DATA-ORDER", "HDR-V1-UNSUPPORTED", "DATA-TRAILING-PAD"):
        assert {p: by_id[rid]["profiles"][p] for p in ("spec", "ggml")} == {"spec": "warning", "ggml": "error"}, rid
    assert by_id["KV-BOOL"]["severity"] == "error"
    for r in by_id.values():
        if r["profiles"]["spec"] == "error" and r["profiles"]["ggml"] != "error":
            assert r["c_reader"] in ("no", "partial"), r["id"]
        if r["profiles"]["ggml"] == "error" and r["profiles"]["spec"] != "error":
            assert r["c_reader"] in ("yes", "partial"), r["id"]


def _catalog_ids() -> list[str]:
    path = SHARED_REF / "conformance-rules.md"
    if not path.is_file():
        pytest.skip("../shared/reference/conformance-rules.md not present")
    text = path.read_text(encoding="utf-8")
    return re.findall(r"^\|\s*((?:HDR|KV|STR|ARR|TI|ALIGN|DATA|META|NAME)-[A-Z0-9-]+)", text, re.M)


def test_every_catalog_rule_once():
    catalog = _catalog_ids()
    assert len(catalog) > 50, "catalog parse found too few rule IDs"
    ids = [r["id"] for r in load("rules")["rules"]]
    for rid in set(catalog):
        assert ids.count(rid) == 1, f"{rid} appears {ids.count(rid)} times in rules.yaml"


def test_catalog_severities_kept():
    path = SHARED_REF / "conformance-rules.md"
    if not path.is_file():
        pytest.skip("../shared/reference/conformance-rules.md not present")
    by_id = {r["id"]: r for r in load("rules")["rules"]}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(
            r"^\|\s*((?:HDR|KV|STR|ARR|TI|ALIGN|DATA|META)-[A-Z0-9-]+)[^|]*\|[^|]*\|\s*(error|warning|info)\b", line
        )
        if m:
            assert by_id[m.group(1)]["severity"] == m.group(2), m.group(1)


def test_adversarial_classes_exist():
    path = SHARED_REF / "adversarial-inputs.md"
    if not path.is_file():
        pytest.skip("../shared/reference/adversarial-inputs.md not present")
    classes = {int(n) for n in re.findall(r"^\|\s*(\d+)\s*\|", path.read_text(encoding="utf-8"), re.M)}
    for r in load("rules")["rules"]:
        assert set(r["adversarial"]) <= classes, r["id"]
    covered = {c for r in load("rules")["rules"] for c in r["adversarial"]}
    assert covered == classes, f"classes without a rule: {classes - covered}"
