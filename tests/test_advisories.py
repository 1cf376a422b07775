"""Every advisory of spec/advisories.yaml has its rules and a crafted reproducer that they catch, naming it."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gguf_construct.format import spec
from gguf_construct.breaking import crafting
from gguf_construct.checker import check
from gguf_construct.rulebook.catalog import catalog, implemented
from gguf_construct.checker.security import advisories, annotate, matching

ADVISORIES = {a["id"]: a for a in advisories()}
REQUIRED = [
    "CVE-2024-21802",
    "CVE-2024-21825",
    "CVE-2024-21836",
    "CVE-2024-23496",
    "CVE-2024-23605",
    "CVE-2025-53630",
    "CVE-2026-27940",
    "CVE-2026-33298",
    "CVE-2026-7482",
    "CVE-2024-34359",
]


def _rules(adv: dict) -> set[str]:
    return {r if isinstance(r, str) else r["rule"] for r in adv["rules"]}


@pytest.mark.parametrize("name", ["advisories", "templates"])
def test_security_spec_matches_its_schema(name):
    schema = json.loads((spec.spec_dir() / "schema" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(spec.load_yaml(f"{name}.yaml"))


def test_the_issue_advisories_are_all_there():
    ids = set(ADVISORIES) | {alias for a in ADVISORIES.values() for alias in a.get("aliases", [])}
    assert set(REQUIRED) <= ids
    assert "GHSA-3p4r-fq3f-q74v" in ids and "GHSA-96jg-mvhq-q7q7" in ids
    assert len(ADVISORIES) == len(advisories())  # IDs are unique


@pytest.mark.parametrize("adv_id", sorted(ADVISORIES))
def test_advisory_has_rules_and_a_reproducer_that_fires_them(adv_id):
    adv = ADVISORIES[adv_id]
    assert _rules(adv) <= set(catalog()) and _rules(adv) <= implemented()
    assert adv["reproducer"] in crafting.BREAKAGES
    crafted = crafting.craft(adv["reproducer"])
    assert _rules(adv) <= crafted.rules
    report = check(crafted.data)
    named = [f for f in report.findings if f.rule in _rules(adv) and adv_id in f.message]
    assert named, report.findings
    assert not report.internal_errors


@pytest.mark.parametrize("adv_id", sorted(ADVISORIES))
def test_which_profiles_flag_each_advisory(adv_id):
    """Every advisory is reported under every profile; the container-level ones are errors under ggml."""
    adv = ADVISORIES[adv_id]
    data = crafting.craft(adv["reproducer"]).data
    for profile in ("spec", "ggml", "llama.cpp"):
        fired = {f.rule for f in check(data, profile=profile).findings}
        assert _rules(adv) & fired, (profile, fired)
    ggml_errors = {f.rule for f in check(data, profile="ggml").errors()}
    container = _rules(adv) - {"META-TOKENIZER-TYPE", "SEC-ALIGN-HUGE", "TPL-ESCAPE"}
    assert container <= ggml_errors


def test_matching_narrows_by_path_and_parameters():
    assert [a["id"] for a in matching("HDR-COUNT", "header.tensor_count")] == ["CVE-2024-21836"]
    assert [a["id"] for a in matching("HDR-COUNT", "header.metadata_kv_count")] == ["CVE-2024-23605"]
    assert matching("STR-EOF", "x", {"length": 100}) == []
    assert {a["id"] for a in matching("STR-EOF", "x", {"length": 2**64 - 1})} == {
        "CVE-2024-23496",
        "gguf-parser-go-string-length",
    }
    assert annotate("KV-KEY-FLAT", "msg") == "msg"
    assert annotate("TI-NDIMS", "msg") == "msg [CVE-2024-21802]"


def test_padded_size_smaller_than_raw_size_is_caught():
    """GGML_PAD wrap: 2^64 - 16 bytes fit, padded to 32 they wrap to 0."""
    report = check(crafting.craft("advisory-pad-wrap").data)
    assert "TI-NBYTES-OVERFLOW" in {f.rule for f in report.errors()}
    raw = crafting.carrier()
    raw.tensors[-1].dims = [4, 2**30 - 1, 2**30 - 1]  # 2^64 - 2^33 bytes: padding does not wrap
    assert "TI-NBYTES-OVERFLOW" not in check(raw.to_bytes()).rules()


def test_data_size_sum_needs_more_than_one_tensor():
    raw = crafting.carrier()
    raw.tensors[-1].dims = [2**61]  # 2^63 bytes alone: no overflow of the sum
    assert "SEC-DATA-SIZE-OVERFLOW" not in check(raw.to_bytes()).rules()
    assert "SEC-DATA-SIZE-OVERFLOW" in check(crafting.craft("advisory-data-size-wrap").data).rules()


def test_alignment_below_the_limit_is_not_flagged():
    raw = crafting.carrier()
    raw.tensors, raw.data = [], b""
    raw.set("general.alignment", "UINT32", 2**30)
    assert "SEC-ALIGN-HUGE" not in check(raw.to_bytes()).rules()
