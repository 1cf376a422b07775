"""invalid_gguf_files(): the checker reports exactly the labelled rules; gguf_files(): no error at all."""

import pytest
from hypothesis import given, settings

import gguf_construct as g
from gguf_construct.rulebook.catalog import catalog, severity
from gguf_construct.breaking.mutations import MUTATIONS, mutations_for
from gguf_construct.breaking.rawfile import expected_rules, from_document
from gguf_construct.strategies import documents, gguf_files, invalid_gguf_files, violations

# Findings the labels do not predict, at any severity: the metadata-schema, model and file-name layers (the
# container labels say nothing about what llama.cpp's model loader wants), the info
# KV-NAMESPACE / TI-TYPE-NEW / ALIGN-DEFAULT / HDR-VER-LEGACY / ARR-DEPTH / HDR-MAGIC-LEGACY facts.  None of
# them is ever an error, so error-level equality is exact.
def _unpredicted(rule: str) -> bool:
    return rule.startswith(("META-", "MODEL-", "NAME-")) or all(catalog()[rule].severity(p) == "info" for p in ("spec", "ggml"))


def _assert_matches(data: bytes, labels: frozenset, profiles=("spec", "ggml")) -> None:
    for profile in profiles:
        report = g.check(data, profile=profile)
        assert not report.internal_errors, report.internal_errors
        errors = {f.rule for f in report.errors()}
        assert errors == {r for r in labels if severity(r, profile) == "error"}, (profile, report.findings)
        fired = report.rules()
        assert labels <= fired, (profile, labels - fired)
        assert all(_unpredicted(r) for r in fired - labels), (profile, fired - labels)


@settings(max_examples=100)
@given(invalid_gguf_files())
def test_checker_reports_exactly_the_labelled_rules(sample):
    data, labels = sample
    assert labels, "every drawn file breaks something"
    _assert_matches(data, labels)


@settings(max_examples=40)
@given(invalid_gguf_files(mutations=2, max_kv=3))
def test_two_mutations_at_once(sample):
    _assert_matches(*sample)


@settings(max_examples=60)
@given(gguf_files(max_kv=4, max_tensors=2))
def test_valid_files_have_no_error(sample):
    data, doc = sample
    report = g.check(data)
    assert report.valid and not report.internal_errors, report.findings
    assert violations(expected_rules(from_document(doc))) == {r for r in report.rules() if not _unpredicted(r)}


@pytest.mark.parametrize("mutation", [m.name for m in MUTATIONS])
def test_every_mutation_is_labelled_exactly(mutation):
    m = next(m for m in MUTATIONS if m.name == mutation)

    @settings(max_examples=5)
    @given(invalid_gguf_files(rules=sorted(violations(m.targets)), max_kv=3))
    def run(sample):
        _assert_matches(*sample)

    run()


_LABELLED_TARGETS = sorted(violations(set().union(*(m.targets for m in MUTATIONS))))


@pytest.mark.parametrize("rule", _LABELLED_TARGETS)
def test_rules_filter(rule):
    """Every rule a mutation aims at can be asked for alone (the mutations aim their kinds at it, so Hypothesis
    does not give up filtering)."""
    @settings(max_examples=5)
    @given(invalid_gguf_files(rules=[rule], max_kv=2))
    def run(sample):
        assert rule in sample[1]

    run()


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError):
        mutations_for(["META-ARCH-MISSING"])
    with pytest.raises(ValueError):
        invalid_gguf_files(rules=["META-ARCH-MISSING"])


def test_info_rules_are_refused():
    assert "ARR-DEPTH" in set().union(*(m.targets for m in MUTATIONS))
    with pytest.raises(ValueError, match="ARR-DEPTH"):
        invalid_gguf_files(rules=["ARR-DEPTH", "ARR-NESTED"])


@settings(max_examples=25)
@given(documents(versions=[3], byte_orders=["little"], nested_arrays=False, max_kv=3))
def test_v3_little_endian_carriers_are_valid_for_ggml_too(doc):
    report = g.check(doc.to_bytes(), profile="ggml")
    assert report.valid, report.errors()


@settings(max_examples=30)
@given(invalid_gguf_files(rules=["KV-TRUNC", "STR-EOF", "TI-TRUNC", "HDR-TRUNC"], max_kv=3))
def test_load_refuses_what_the_labels_call_unreadable(sample):
    data, labels = sample
    with pytest.raises(g.GGUFError):
        g.load(data)


@pytest.mark.parametrize("alignment", [2**31, 0xFFFFFFFF])
def test_huge_alignment_then_a_tensor_stays_small(alignment):
    """A second mutation may add a tensor after the alignment became huge: the encoded file ends inside the
    padding (bounded size) instead of allocating gigabytes, and the labels still match the checker."""
    import random

    from gguf_construct.breaking.mutations import RandomPick
    from gguf_construct.breaking.rawfile import ALIGNMENT_KEY, UINT32, RawFile, RawKV

    raw = RawFile(3, "little", kvs=[RawKV(ALIGNMENT_KEY, UINT32, alignment)])
    offset = next(m for m in MUTATIONS if m.name == "offset")
    offset.apply(raw, RandomPick(random.Random(0)))
    assert raw.tensors
    data = raw.encode()[0]
    assert len(data) < 2 << 20
    labels = violations(expected_rules(raw))
    assert "DATA-START" in labels
    _assert_matches(data, labels)
