"""Chat-template rules (TPL-*): real templates are clean, injection payloads (plain, obfuscated, array-typed, in
named or stray keys) are errors, pathological templates are bounded findings, jinja2 loads only when needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import gguf_construct

from gguf_construct.breaking import crafting
from gguf_construct.checker import check, jinja_scan
from gguf_construct.breaking.crafting_security import template_with
from gguf_construct.checker.formats import render_sarif

from conftest import corpus_files
from template_corpus import HELD_OUT_MALICIOUS, HELD_OUT_REAL, MALICIOUS, REAL


def _file(key: str = "tokenizer.chat_template", value=None, vtype: str = "STRING", item_type=None) -> bytes:
    raw = crafting.carrier()
    raw.set(key, vtype, value, item_type=item_type)
    return raw.to_bytes()


def _tpl(report) -> list:
    return [f for f in report.findings if f.rule.startswith("TPL-")]


@pytest.mark.parametrize("name", sorted(REAL) + sorted(HELD_OUT_REAL))
def test_real_templates_draw_no_finding(name):
    text = {**REAL, **HELD_OUT_REAL}[name]
    assert jinja_scan.scan(text) == ()
    report = check(_file(value=text))
    assert _tpl(report) == [] and report.valid and not report.internal_errors


def test_real_templates_in_the_corpus_draw_no_finding():
    files = corpus_files()
    if not files:
        pytest.skip("../shared/corpus not present")
    seen = 0
    for path in files:
        report = check(path)
        assert _tpl(report) == [], (path, _tpl(report))
        seen += sum(k.startswith("tokenizer.chat_template") for k in gguf_construct.load(path).metadata)
    assert seen >= 5  # command-r (three templates), gemma, phi-3, qwen


@pytest.mark.parametrize("name", sorted(MALICIOUS) + sorted(HELD_OUT_MALICIOUS))
def test_injection_payloads_are_errors(name):
    payload = {**MALICIOUS, **HELD_OUT_MALICIOUS}[name]
    report = check(_file(value=template_with(payload)))
    escapes = [f for f in report.findings if f.rule == "TPL-ESCAPE"]
    assert escapes and not report.valid, _tpl(report)
    assert all(f.severity == "error" and "tokenizer.chat_template" in f.message for f in escapes)
    assert all("CVE-2024-34359" in f.message for f in escapes)


@pytest.mark.parametrize("name", ["mro-subclasses", "concat", "cycler-globals", "reverse-slice", "self-context"])
def test_array_of_strings_template_is_scanned(name):
    text = template_with(MALICIOUS[name])
    thirds = [text[: len(text) // 3], text[len(text) // 3 : 2 * len(text) // 3], text[2 * len(text) // 3 :]]
    report = check(_file(value=thirds, vtype="ARRAY", item_type="STRING"))
    assert "TPL-ESCAPE" in {f.rule for f in report.errors()}, _tpl(report)
    clean = check(_file(value=[REAL["chatml"][:40], REAL["chatml"][40:]], vtype="ARRAY", item_type="STRING"))
    assert _tpl(clean) == []


def test_named_template_is_scanned():
    report = check(_file("tokenizer.chat_template.tool_use", template_with(MALICIOUS["lipsum-globals"])))
    (f, *_) = [f for f in report.findings if f.rule == "TPL-ESCAPE"]
    assert "tokenizer.chat_template.tool_use" in f.message and f.path.endswith(".value")


def test_template_in_another_key_is_reported_with_its_key():
    report = check(_file("general.description", "{% for m in messages %}{{ m.__class__ }}{% endfor %}"))
    rules = {f.rule: f for f in report.findings}
    assert "TPL-STRAY" in rules and "TPL-ESCAPE" in rules
    assert "general.description" in rules["TPL-ESCAPE"].message
    # text with braces but no statement is not a template
    assert _tpl(check(_file("general.description", "set {x} to {{y}} % 3"))) == []


def test_inert_dunder_text_is_silent():
    # issue #38: a dunder name in text that is only written out is no finding (a key it reaches is checked)
    report = check(_file(value=template_with("{{ 'see __init__.py' }}{% set s = 'def __init__(self):' %}{{ s }}")))
    assert _tpl(report) == [] and report.valid


def test_generation_tag_is_a_known_extension():
    ok = check(_file(value="{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}"))
    assert _tpl(ok) == [] and ok.valid
    bad = check(_file(value="{% generation %}{{ lipsum['__glo' ~ 'bals__'] }}{% endgeneration %}"))
    assert "TPL-ESCAPE" in {f.rule for f in bad.errors()}


def test_llama_cpp_dialect_is_info_but_still_scanned():
    ok = check(_file(value="{% for m in messages %}{% reasoning %}{{ m.content }}{% endreasoning %}{% endfor %}"))
    assert {(f.rule, f.severity) for f in _tpl(ok)} == {("TPL-UNPARSED", "info")} and ok.valid
    bad = check(_file(value=MALICIOUS["unparsable-with-dunder"]))
    assert "TPL-ESCAPE" in {f.rule for f in bad.errors()}


def test_one_mib_template_is_bounded_and_still_scanned():
    big = template_with("{# " + "lorem ipsum " * 90_000 + " #}")
    assert len(big) > 2**20
    report = check(_file(value=big))
    assert {f.rule for f in _tpl(report)} == {"TPL-LIMIT"} and not report.internal_errors
    hidden = check(_file(value=big + "{{ lipsum.__globals__ }}"))
    assert "TPL-ESCAPE" in {f.rule for f in hidden.errors()}


@pytest.mark.parametrize(
    "text",
    [
        "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
        "{% if a %}" * 3000 + "x" + "{% endif %}" * 3000,
        "{{ " + "[" * 900 + "]" * 900 + " }}",
        "{{ x|attr(a" + "|b" * 20000 + ") }}",
    ],
)
def test_pathological_templates_are_findings_not_hangs(text):
    report = check(_file(value=text))
    assert {f.rule for f in _tpl(report)} <= {"TPL-LIMIT", "TPL-UNPARSED"} and _tpl(report)
    assert not report.internal_errors


def test_node_budget(monkeypatch):
    monkeypatch.setitem(jinja_scan._facts()["limits"], "nodes", 50)
    jinja_scan.scan.cache_clear()
    try:
        issues = jinja_scan.scan("{% for m in messages %}" + "{{ m.content }}" * 40 + "{% endfor %}")
    finally:
        jinja_scan.scan.cache_clear()
    assert [i.kind for i in issues] == [jinja_scan.LIMIT]


def test_folding_is_bounded():
    # 20 candidate values per variable, chained: folding gives up instead of multiplying them
    sets = "".join(f"{{% set v{i} = 'a' if x else 'b' %}}" for i in range(20))
    text = sets + "{{ y|attr(" + " ~ ".join(f"v{i}" for i in range(20)) + ") }}"
    issues = jinja_scan.scan(text)
    assert [i.problem for i in issues] == ["key computed at render time on any object, by the attr filter"]
    assert jinja_scan.scan("{{ y|attr('_' * 10**9) }}")  # repetition too long to fold: still an escape


def test_jinja2_is_imported_only_for_templates():
    code = (
        "import sys\nfrom gguf_construct.breaking import crafting\nfrom gguf_construct.checker import check\n"
        "check(crafting.carrier().to_bytes())\nprint('jinja2' in sys.modules)\n"
        "raw = crafting.carrier(); raw.set('tokenizer.chat_template', 'STRING', '{{ x }}')\n"
        "check(raw.to_bytes())\nprint('jinja2' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_sarif_names_the_advisory():
    report = check(crafting.craft("advisory-template-injection").data)
    log = json.loads(render_sarif([report]))
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert "CVE-2024-34359" in rules["TPL-ESCAPE"]["properties"]["tags"]
    assert "security" in rules["TPL-ESCAPE"]["properties"]["tags"]
    assert rules["TPL-ESCAPE"]["helpUri"].startswith("https://")
    assert "tags" not in rules["KV-KEY-FLAT"]["properties"]
    results = [r for r in log["runs"][0]["results"] if r["ruleId"] == "TPL-ESCAPE"]
    assert results and all("CVE-2024-34359" in r["message"]["text"] for r in results)


def test_lexical_scan_looks_inside_tags_only():
    text = "{% reasoning %}see __init__.py{# __class__ #}{{ m.content }}{% endreasoning %}"
    assert [i.kind for i in jinja_scan.scan(text)] == [jinja_scan.UNPARSED]
    unclosed = "{% reasoning %}{{ x.__globals__ "
    assert jinja_scan.ESCAPE in [i.kind for i in jinja_scan.scan(unclosed)]
