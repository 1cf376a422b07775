"""TPL-RESOURCE: chat templates whose rendering has no useful bound (a huge range, loops nested past the sandbox's
range limit, a repetition of megabytes), found without rendering; ordinary loops and repetitions are silent."""

from __future__ import annotations

import re

import jinja2.sandbox
import pytest

from gguf_construct.breaking import crafting
from gguf_construct.breaking.crafting_security import template_with
from gguf_construct.checker import check, jinja_scan

LIMITS = jinja_scan._facts()["limits"]

COSTLY = {
    "range": "{% for i in range(10**9) %}{{ i }}{% endfor %}",
    "range-start-stop-step": "{% for i in range(-5, 2 ** 40, 3) %}x{% endfor %}",
    "range-past-64-bits": "{% set n = 10 ** 30 %}{{ range(n)|list|length }}",
    "nested": "{% for i in range(1000) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}",
    "nested-three": (
        "{% for a in range(100) %}{% for b in range(100) %}{% for c in range(100) %}x"
        "{% endfor %}{% endfor %}{% endfor %}"
    ),
    "nested-over-a-list": "{% for c in 'abcdefghij' * 50 %}{% for i in range(1000) %}x{% endfor %}{% endfor %}",
    "repetition": "{{ 'x' * 10 ** 7 }}",
    "repetition-of-a-list": "{% set l = ['abc'] * 10 ** 6 %}{{ l|length }}",
}
CHEAP = {
    "small-range": "{% for i in range(3) %}{{ i }}{% endfor %}",
    "nested-below-the-limit": "{% for i in range(300) %}{% for j in range(300) %}x{% endfor %}{% endfor %}",
    "range-over-messages": "{% for i in range(messages|length) %}{{ messages[i].content }}{% endfor %}",
    "empty-range": "{% for i in range(10**9, 0) %}x{% endfor %}",
    "ruler": "{{ '=' * 80 }}{{ '  ' * 4 }}",
    "loops-side-by-side": "{% for i in range(90000) %}{% endfor %}{% for j in range(90000) %}{% endfor %}",
}


@pytest.mark.parametrize("name", sorted(COSTLY))
def test_costly_templates_are_reported(name):
    issues = jinja_scan.scan(COSTLY[name])
    assert [i.kind for i in issues] and {i.kind for i in issues} == {jinja_scan.RESOURCE}, issues


@pytest.mark.parametrize("name", sorted(CHEAP))
def test_ordinary_loops_and_repetitions_are_silent(name):
    assert jinja_scan.scan(CHEAP[name]) == ()


def test_the_range_limit_is_the_sandboxes():
    assert LIMITS["render_items"] == jinja2.sandbox.MAX_RANGE
    env = jinja2.sandbox.SandboxedEnvironment()
    with pytest.raises(OverflowError):
        env.from_string("{% for i in range(10**9) %}{% endfor %}").render()


def test_the_rule_is_a_warning_in_the_file_report():
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", template_with(COSTLY["nested"]))
    report = check(raw.to_bytes())
    found = [f for f in report.findings if f.rule == "TPL-RESOURCE"]
    assert found and found[0].severity == "warning" and "1000000 times" in found[0].message
    assert report.valid


def _key(finding) -> str:
    return re.match(r"key '([^']+)'", finding.message).group(1)


def test_a_file_of_many_large_templates_analyses_only_its_budget(monkeypatch):
    """Templates are analysed in full up to file_bytes per file; the rest get the lexical scan (TPL-LIMIT), which
    still finds a dunder name -- so a file of hundreds of large templates cannot make the checker run for minutes."""
    analysed = []
    run = jinja_scan._Walker.run
    monkeypatch.setattr(jinja_scan._Walker, "run", lambda self, tree: (analysed.append(1), run(self, tree))[1])
    jinja_scan.scan.cache_clear()
    size = LIMITS["bytes"] - 100
    raw = crafting.carrier()
    n = LIMITS["file_bytes"] // size + 3
    for i in range(n):
        payload = "{{ lipsum.__globals__ }}" if i == n - 1 else ""
        text = f"{{# template {i} #}}{payload}" + "{% for m in messages %}{{ m.content }}{% endfor %}" * (size // 52)
        raw.set(f"tokenizer.chat_template.t{i}", "STRING", text[:size])
    report = check(raw.to_bytes())
    assert len(analysed) == LIMITS["file_bytes"] // size
    limited = {_key(f) for f in report.findings if f.rule == "TPL-LIMIT"}
    assert limited == {f"tokenizer.chat_template.t{i}" for i in range(len(analysed), n)}
    assert [_key(f) for f in report.errors() if f.rule == "TPL-ESCAPE"] == [f"tokenizer.chat_template.t{n - 1}"]
    # small templates fit the budget: every one is analysed
    analysed.clear()
    jinja_scan.scan.cache_clear()
    raw = crafting.carrier()
    for i in range(20):
        raw.set(
            f"tokenizer.chat_template.t{i}", "STRING", f"{{% for m in messages %}}{{{{ m.content }}}}{i}{{% endfor %}}"
        )
    assert not [f for f in check(raw.to_bytes()).findings if f.rule.startswith("TPL-")] and len(analysed) == 20


def test_many_values_with_statements_are_parsed_within_the_budget(monkeypatch):
    """Other STRING values holding '{%' are parsed to tell templates (TPL-STRAY) only within file_bytes."""
    parsed = []
    is_template = jinja_scan.is_template
    monkeypatch.setattr(jinja_scan, "is_template", lambda text: (parsed.append(len(text)), is_template(text))[1])
    raw = crafting.carrier()
    text = "{% for m in messages %}{{ m.content }}{% endfor %}" * 2000
    for i in range(12):
        raw.set(f"general.note{i}", "STRING", text + str(i))
    report = check(raw.to_bytes())
    assert sum(parsed) <= LIMITS["file_bytes"]
    stray = {_key(f) for f in report.findings if f.rule == "TPL-STRAY"}
    assert stray == {f"general.note{i}" for i in range(12)}


def test_a_template_too_large_to_analyse_spends_none_of_the_budget():
    """An oversized template only gets the lexical scan, so it does not use up the file's budget: the template
    after it is still analysed in full (its dunder-free escape found)."""
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template.padding", "STRING", "{# " + "x" * (2 * LIMITS["file_bytes"]) + " #}")
    raw.set("tokenizer.chat_template", "STRING", "{{ (()|select).gi_frame.f_globals }}")
    report = check(raw.to_bytes())
    escapes = [f.message for f in report.errors() if f.rule == "TPL-ESCAPE"]
    assert any("internal attribute gi_frame reached by attribute access" in m for m in escapes), escapes


def test_the_lexical_scan_finds_internal_attributes():
    """A template past the size limit is scanned lexically: the frame attributes are found like dunder names."""
    payload = "{{ (()|select).gi_frame.f_globals['random']['_os']['popen']('id').read() }}"
    issues = jinja_scan.scan(payload + "{# " + "x" * LIMITS["bytes"] + " #}")
    assert {(i.kind, i.construct) for i in issues if i.kind == jinja_scan.ESCAPE} == {
        (jinja_scan.ESCAPE, "f_globals"),
        (jinja_scan.ESCAPE, "gi_frame"),
    }
    # plain text and comments are not code
    assert [i.kind for i in jinja_scan.scan("gi_frame {# f_globals #}" + "x" * LIMITS["bytes"])] == [jinja_scan.LIMIT]
