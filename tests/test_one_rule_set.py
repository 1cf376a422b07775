"""load and check are one read and one rule set: load refuses a file exactly when check finds a rule the catalog
marks ``load: refuse``, and names the first of those findings (rule, offset and path)."""

import subprocess
import sys

import pytest
from hypothesis import given, settings

import gguf_construct as g
from gguf_construct.breaking import crafting
from gguf_construct.checker import check_buffer
from gguf_construct.rulebook import load_rules
from gguf_construct.rulebook.catalog import severity
from gguf_construct.strategies import gguf_files, invalid_gguf_files


def _load_findings(data: bytes) -> list[tuple]:
    report = check_buffer(data, max_per_rule=None)
    refused = load_rules()
    return sorted((f.rule, f.offset, f.path) for f in report.findings if f.rule in refused)


def _assert_load_agrees(data: bytes) -> None:
    expected = _load_findings(data)
    try:
        g.load(data).close()
    except g.GGUFError as exc:
        assert expected, f"load refuses ({exc}) but check finds no load rule"
        got = sorted((f.rule, f.offset, f.path) for f in exc.findings)
        assert got == expected
        first = exc.findings[0]
        assert (exc.rule, exc.offset, exc.path) == (first.rule, first.offset, first.path)
        assert all((first.offset is None, first.offset or 0) <= (f.offset is None, f.offset or 0) for f in exc.findings)
        return
    assert not expected, f"load accepts, check finds {expected}"


def test_load_rules_are_declared_in_the_catalog():
    rules = load_rules()
    assert {"KV-KEY-DUP", "DATA-BOUNDS", "HDR-MAGIC", "TI-OFFSET-ALIGN"} <= rules
    assert "TI-TYPE" not in rules  # an unknown tensor type loads, as an opaque tensor
    # each is an error under every profile, but the legacy-magic fact, which never comes without HDR-MAGIC
    for rule_id in rules - {"HDR-MAGIC-LEGACY"}:
        assert all(severity(rule_id, p) == "error" for p in ("spec", "ggml", "llama.cpp")), rule_id


def test_load_rules_are_checked_below_the_checker():
    """The file model imports the rulebook, never the checker: every rule load refuses has its predicate (or the
    walk) there."""
    code = (
        "import sys, gguf_construct.filemodel.gguffile\n"
        "from gguf_construct.rulebook import load_rules\n"
        "from gguf_construct.rulebook.catalog import implemented\n"
        "assert not any(m.startswith('gguf_construct.checker') for m in sys.modules), 'checker imported'\n"
        "missing = load_rules() - implemented()\n"
        "assert not missing, missing\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", sorted(crafting.BREAKAGES))
def test_load_agrees_with_check_on_crafted_files(name):
    crafted = crafting.craft(name)
    if crafted.files or crafted.limits:
        pytest.skip("a set of files, or lowered limits")
    _assert_load_agrees(crafted.data)


@settings(max_examples=120)
@given(invalid_gguf_files(max_kv=3))
def test_load_agrees_with_check_on_broken_files(sample):
    _assert_load_agrees(sample[0])


@settings(max_examples=40)
@given(gguf_files(max_kv=3, max_tensors=2))
def test_valid_files_load(sample):
    _assert_load_agrees(sample[0])


def test_an_opaque_tensor_must_start_inside_the_data_section():
    """A tensor of unknown type has no size, but its data cannot start past the end of the file."""
    raw = crafting.carrier()
    raw.tensors[0].type, raw.tensors[0].offset = 1000, 1 << 20
    with pytest.raises(g.GGUFError) as info:
        g.load(raw.to_bytes())
    assert info.value.rule == "DATA-BOUNDS" and info.value.path == "tensor_infos[0].offset"
    _assert_load_agrees(raw.to_bytes())
