"""Verdicts that respect the user (#13): exact counts behind the per-rule cap, what llama.cpp writes on purpose,
rule selection."""

from __future__ import annotations

import struct

import pytest

from gguf_construct.breaking import crafting
from gguf_construct.checker import check
from gguf_construct.rulebook.catalog import findings_per_rule, matches

from conftest import corpus_files


def _bad_tokens(n: int) -> bytes:
    """The carrier with a tokens array of ``n`` strings that are not UTF-8."""
    raw = crafting.carrier()
    payload = struct.pack("<IQ", 8, n) + b"".join(struct.pack("<Q", 2) + b"\xff\xfe" for _ in range(n))
    raw.set_raw("tokenizer.ggml.tokens", "ARRAY", payload)
    return raw.to_bytes()


def test_every_occurrence_is_counted_beyond_the_cap():
    report = check(_bad_tokens(1500), max_per_rule=100)
    listed = [f for f in report.findings if f.rule == "STR-UTF8"]
    assert len(listed) == 100
    assert report.counts["STR-UTF8"] == 1500
    assert report.omitted()["STR-UTF8"] == 1400
    assert report.to_dict()["omitted"]["STR-UTF8"] == 1400
    assert report.severity_counts()["error"] >= 1500
    full = check(_bad_tokens(1500), max_per_rule=None)  # as many as the spec's findings_per_rule keeps
    ceiling = findings_per_rule()
    assert len([f for f in full.findings if f.rule == "STR-UTF8"]) == min(1500, ceiling)
    assert full.counts["STR-UTF8"] == 1500 and full.omitted().get("STR-UTF8", 0) == max(0, 1500 - ceiling)


def test_rule_patterns_match_ids_and_prefixes():
    assert matches("KV-KEY-HYPHEN", ["KV"]) and matches("KV-KEY-HYPHEN", ["kv-key-"])
    assert matches("KV-KEY-HYPHEN", ["KV-KEY-HYPHEN"]) and not matches("KV-KEY-HYPHENS", ["KV-KEY-HYPHEN"])
    assert not matches("KVX-A", ["KV"]) and not matches("META-ARCH-KEYS", ["KV", ""])


def test_select_and_ignore():
    data = _bad_tokens(3)
    assert {f.rule for f in check(data, select=["STR"]).findings} == {"STR-UTF8"}
    assert "STR-UTF8" not in {f.rule for f in check(data, ignore=["STR-UTF8"]).findings}
    assert not check(data, select=["STR"], ignore=["STR"]).findings


def _by_rule(report):
    out = {}
    for f in report.findings:
        out.setdefault(f.rule, []).append(f)
    return out


def test_llama_cpp_practice_is_one_finding_under_spec_and_none_under_ggml():
    raw = crafting.carrier()
    raw.set("general.architecture", "STRING", "command-r")
    for k in ("context_length", "block_count", "embedding_length"):
        raw.set(f"command-r.{k}", "UINT32", 8)
    raw.set("command-r.my-own", "UINT32", 1)  # a hyphen of the writer's own: reported as always
    data = raw.to_bytes()
    spec = _by_rule(check(data))
    arch_keys = [f for f in spec["KV-KEY-HYPHEN"] if f.count > 1]
    assert len(arch_keys) == 1 and arch_keys[0].count == 3 and "hyphenated-architectures" in arch_keys[0].message
    assert [f.count for f in spec["KV-KEY-HYPHEN"]].count(1) == 1
    ggml = _by_rule(check(data, profile="ggml"))
    assert len(ggml["KV-KEY-HYPHEN"]) == 1 and "my-own" in ggml["KV-KEY-HYPHEN"][0].message
    assert "META-ARCH-CHARSET" not in ggml and "META-ARCH-CHARSET" in spec


def test_unknown_hyphenated_architecture_still_warns_under_ggml():
    raw = crafting.carrier()
    raw.set("general.architecture", "STRING", "not-llama")
    raw.set("not-llama.context_length", "UINT32", 8)
    rules = _by_rule(check(raw.to_bytes(), profile="ggml"))
    assert "KV-KEY-HYPHEN" in rules and "META-ARCH-CHARSET" in rules


@pytest.mark.skipif(not corpus_files(), reason="../shared/corpus is not present")
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_official_files_do_not_warn_under_ggml_and_once_per_rule_under_spec(path):
    ggml = check(str(path), profile="ggml")
    assert not ggml.at_least("warning"), [f.message for f in ggml.findings]
    spec = check(str(path))
    rules = [f.rule for f in spec.findings]
    assert len(rules) == len(set(rules)), rules
