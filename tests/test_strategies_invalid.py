"""invalid_gguf_files(): the labels are each breakage's declared intent, checked against the checker from both sides.

(a) the checker reports every rule a breakage declares it breaks, and every error it reports was declared (broken
or a declared side effect) or is the unbroken carrier's own; (b) nothing else fires but the carrier's findings and
the layers the breakages do not speak for (META-*, MODEL-*, NAME-*, infos), so an edit that silently causes an
undeclared finding fails.  ``HYPOTHESIS_PROFILE=long`` runs each property twenty times longer.
"""

import functools
import os
import random

import pytest
from hypothesis import given, settings

import gguf_construct as g
from gguf_construct.breaking.intent import compose
from gguf_construct.breaking.mutations import MUTATIONS, RandomPick, mutations_for
from gguf_construct.breaking.rawfile import ALIGNMENT_KEY, UINT32, RawFile, RawKV
from gguf_construct.rulebook.catalog import catalog
from gguf_construct.strategies import broken_gguf_files, documents, gguf_files, invalid_gguf_files, violations

PROFILES = ("spec", "ggml")
SCALE = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 1


def _unpredicted(rule: str) -> bool:
    """Findings no breakage speaks for: the metadata-schema, model and file-name layers, and infos."""
    return rule.startswith(("META-", "MODEL-", "NAME-")) or all(catalog()[rule].severity(p) == "info" for p in PROFILES)


@functools.lru_cache(maxsize=512)
def _carrier_rules(data: bytes, profile: str) -> frozenset:
    return frozenset(g.check(data, profile=profile).rules())


def _assert_declared(data: bytes, breaks: frozenset, may: frozenset, carrier: bytes) -> None:
    for profile in PROFILES:
        report = g.check(data, profile=profile)
        assert not report.internal_errors, report.internal_errors
        fired = report.rules()
        assert breaks <= fired, (profile, "declared but not reported", breaks - fired, report.findings)
        allowed = breaks | may | _carrier_rules(carrier, profile)
        errors = {f.rule for f in report.errors()}
        assert errors <= allowed, (profile, "undeclared errors", errors - allowed, report.findings)
        undeclared = {r for r in fired - allowed if not _unpredicted(r)}
        assert not undeclared, (profile, "undeclared findings", undeclared, report.findings)


def _check(b) -> None:
    assert b.labels and b.labels <= b.intent.breaks
    _assert_declared(b.data, b.intent.breaks, b.intent.may, b.carrier)


@settings(max_examples=100 * SCALE)
@given(broken_gguf_files())
def test_checker_reports_what_the_breakage_declares(b):
    _check(b)


@settings(max_examples=40 * SCALE)
@given(broken_gguf_files(mutations=2, max_kv=3))
def test_two_mutations_at_once(b):
    _check(b)


@settings(max_examples=60)
@given(gguf_files(max_kv=4, max_tensors=2))
def test_valid_files_have_no_error(sample):
    data, doc = sample
    report = g.check(data)
    assert report.valid and not report.internal_errors, report.findings


@pytest.mark.parametrize("mutation", [m.name for m in MUTATIONS])
def test_every_mutation_is_declared_exactly(mutation):
    """Each mutation alone, on its own targets: two-sided against the checker."""
    m = next(m for m in MUTATIONS if m.name == mutation)

    @settings(max_examples=5 * SCALE)
    @given(broken_gguf_files(rules=sorted(violations(m.targets)), max_kv=3))
    def run(b):
        _check(b)

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


def test_a_declaration_outside_the_targets_is_refused():
    bad = type(MUTATIONS[0])("bad", frozenset({"KV-BOOL"}), lambda raw, pick: MUTATIONS[0].edit(raw, pick))
    raw = RawFile(3, "little")
    with pytest.raises(AssertionError, match="outside its targets"):
        bad.apply(raw, RandomPick(random.Random(0)))


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


def test_a_stop_hides_what_comes_after_it():
    """A breakage after the point where reading stops is no longer a label, but stays allowed."""
    raw = RawFile(3, "little")
    rng = random.Random(3)
    by_name = {m.name: m for m in MUTATIONS}
    by_name["bool"].apply(raw, RandomPick(rng))
    raw.kvs.append(raw.kvs.pop())  # the bool last
    by_name["magic"].apply(raw, RandomPick(rng))
    labels = compose(raw)
    assert "HDR-MAGIC" in labels.breaks and "KV-BOOL" not in labels.breaks and "KV-BOOL" in labels.may


@pytest.mark.parametrize("alignment", [2**31, 0xFFFFFFFF])
def test_huge_alignment_then_a_tensor_stays_small(alignment):
    """A second mutation may add a tensor after the alignment became huge: the encoded file ends inside the
    padding (bounded size) instead of allocating gigabytes, and the declarations still hold against the checker."""
    raw = RawFile(3, "little", kvs=[RawKV(ALIGNMENT_KEY, UINT32, 0)])
    carrier = raw.encode()[0]
    alignment_mutation = next(m for m in MUTATIONS if m.name == "alignment")
    pick = RandomPick(random.Random(0), wanted=["SEC-ALIGN-HUGE"])
    while True:  # the huge value this test is about
        raw.kvs[0].value, raw.intents = 0, []
        intent = alignment_mutation.apply(raw, pick)
        if raw.kvs[0].value == alignment:
            break
    offset = next(m for m in MUTATIONS if m.name == "offset")
    offset.apply(raw, RandomPick(random.Random(0), wanted=["TI-OFFSET-ALIGN"]))  # adds a tensor, misaligns it
    assert raw.tensors
    data = raw.encode()[0]
    assert len(data) < 2 << 20
    labels = compose(raw)
    assert "SEC-ALIGN-HUGE" in labels.breaks and "DATA-START" in intent.may
    assert "DATA-START" in g.check(data).rules()
    _assert_declared(data, labels.breaks, labels.may, carrier)


def _plain_carriers() -> list[RawFile]:
    """Small valid files with few findings of their own (no nested arrays), so any side effect shows."""
    from gguf_construct.breaking.rawfile import VT, Arr, RawTI

    out = []
    for version, order, tensors in ((3, "little", 2), (2, "big", 1), (1, "little", 0)):
        raw = RawFile(
            version,
            order,
            kvs=[
                RawKV(b"general.architecture", VT["STRING"], b"llama"),
                RawKV(b"test.count", VT["UINT32"], 3),
                RawKV(b"test.names", VT["ARRAY"], Arr(VT["STRING"], [b"a", b"bc"])),
            ],
        )
        shapes = [([4, 3], 0, 48), ([32], 8, 34)][:tensors]  # F32 [4, 3]; Q8_0 [32]: one block
        raw.tensors = [
            RawTI(b"t%d" % i, dims, gtype, 0, bytes(range(1, n + 1))) for i, (dims, gtype, n) in enumerate(shapes)
        ]
        raw.relayout()
        out.append(raw)
    return out


@pytest.mark.parametrize("mutation", [m.name for m in MUTATIONS])
def test_every_mutation_on_plain_carriers(mutation):
    """Each mutation from seeded choices (as the fuzzer draws them) on carriers with few findings of their own."""
    from gguf_construct.breaking.mutations import Skip

    m = next(m for m in MUTATIONS if m.name == mutation)
    applied = 0
    for seed in range(4 * SCALE):
        for carrier in _plain_carriers():
            before = carrier.encode()[0]
            try:
                m.apply(carrier, RandomPick(random.Random(seed)))
            except Skip:
                continue
            labels = compose(carrier)
            _assert_declared(carrier.encode()[0], labels.breaks, labels.may, before)
            applied += 1
    assert applied


class _Forced(RandomPick):
    """Seeded choices, except that an aimed choice among options containing ``option`` takes it."""

    def __init__(self, option, seed=0):
        super().__init__(random.Random(seed))
        self.option = option

    def aimed(self, options, rules_of):
        return self.option if self.option in options else super().aimed(options, rules_of)


def _table_entries():
    from gguf_construct.breaking import mutations as mm

    yield from (("magic", o) for o in mm._MAGICS)
    yield from (("key-syntax", o) for o in mm._BAD_KEYS)
    yield from (("alignment", (mm.UINT32, v, r, False)) for v, r in mm._ALIGNMENTS)
    yield from (("alignment", (mm.UINT32, v, r, True)) for v, r in mm._HUGE_ALIGNMENTS)
    yield from (("alignment", (vt, v, {"ALIGN-TYPE"}, False)) for vt, v in mm._WRONG_ALIGNMENT_TYPES)
    yield from (("size-overflow", o) for o in mm._OVERFLOWS)


_ENTRIES = list(_table_entries())


@pytest.mark.parametrize("mutation,option", _ENTRIES, ids=[f"{m}-{i}" for i, (m, _) in enumerate(_ENTRIES)])
def test_every_declared_table_entry(mutation, option):
    """Every entry of the mutations' tables (keys, magics, alignments, size overflows) with the rules it carries,
    on each plain carrier it applies to."""
    from gguf_construct.breaking.mutations import Skip

    m = next(m for m in MUTATIONS if m.name == mutation)
    applied = 0
    for carrier in _plain_carriers():
        before = carrier.encode()[0]
        try:
            m.apply(carrier, _Forced(option))
        except Skip:
            continue
        labels = compose(carrier)
        _assert_declared(carrier.encode()[0], labels.breaks, labels.may, before)
        applied += 1
    assert applied or mutation == "size-overflow"


def test_fuzz_samples_carry_their_intent():
    """The fuzzer's stream (seeded choices, one or two mutations) records what each broken file was made for; the
    checker reports every rule declared."""
    import itertools

    from gguf_construct.fuzzing.samples import carriers, generate

    pool = carriers(7, count=12, max_kv=3)
    broken = [s for s in itertools.islice(generate(7, pool=pool), 40) if s.mutation != "valid"]
    assert broken
    declared = 0
    for sample in broken:
        breaks = sample.intent.breaks
        assert breaks <= g.check(sample.data).rules(), (sample.mutation, breaks)
        declared += bool(breaks)
    assert declared > len(broken) // 2
