"""The render oracle's worker pool (issue #38): workers are reused, start with no environment, and a hostile
template cannot hang them, exhaust their memory or write past the output limit; the oracle reports refused
accesses as TPL-ESCAPE, content-driven ones as TPL-GADGET, and stays silent on plain data."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings, strategies as st

from gguf_construct.checker import template_contexts, template_oracle, template_render
from gguf_construct.checker.jinja_scan import ESCAPE, GADGET, RESOURCE

pytestmark = pytest.mark.skipif(os.name != "posix", reason="render workers need POSIX rlimits")


@pytest.fixture(scope="module")
def pool():
    """A pool with tight limits, shared by the tests of this module (one worker start)."""
    p = template_render.RenderPool(1, cpu_seconds=1, wall_seconds=3, memory_bytes=384 << 20, output_chars=100_000)
    yield p
    p.close()


def _render(pool, text: str, attacks=()) -> dict:
    return pool.render(
        text,
        template_contexts.canonical_contexts()[:2],
        template_contexts.attack_contexts(list(attacks)) if attacks else [],
    )


def test_workers_are_reused_and_start_with_no_environment(pool):
    _render(pool, "{{ messages[0].content }}")
    worker = pool.idle.queue[0]
    _render(pool, "{{ messages[-1].content }}")
    assert pool.idle.queue[0] is worker and pool.started == 1
    with open(f"/proc/{worker.proc.pid}/environ", "rb") as f:
        assert f.read() == b""


def test_a_hanging_template_is_stopped_and_the_worker_replaced(pool):
    spin = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    t0 = time.monotonic()
    with pytest.raises(template_render.RenderFailure) as err:
        _render(pool, spin)
    assert err.value.reason in ("cpu", "timeout") and time.monotonic() - t0 < 10
    assert _render(pool, "{{ messages[0].content }}")["renders"][0]["chars"] == len("Hello")  # a new worker


def test_memory_exhaustion_is_bounded(pool):
    hog = (
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
        "{% set ns.l = ns.l + [(i|string) * 99999] %}{% endfor %}{{ ns.l|length }}"
    )
    t0 = time.monotonic()
    try:
        result = _render(pool, hog)
        assert all(r["error"] for r in result["renders"])  # MemoryError inside the worker
    except template_render.RenderFailure as exc:
        assert exc.reason in ("memory", "cpu", "timeout", "died")
    assert time.monotonic() - t0 < 10
    assert _render(pool, "{{ messages[0].content }}")["renders"][0]["chars"] == len("Hello")


def test_output_past_the_limit_is_cut(pool):
    flood = "{% for i in range(100000) %}{{ 'x' * 9999 }}{% endfor %}"
    result = _render(pool, flood)
    assert all(r["stopped"] and r["chars"] <= 100_000 + 9999 for r in result["renders"])
    big = _render(pool, "{{ 'x' * 10**9 }}")
    assert all(r["stopped"] for r in big["renders"])
    assert {i.kind for i in template_oracle.render_issues(result)} == {RESOURCE}


def test_refused_accesses_are_escapes_and_content_driven_ones_gadgets(pool):
    escape = _render(pool, "{% if messages|length > 6 %}{{ cycler.next.__globals__ }}{% endif %}")
    issues = template_oracle.render_issues(escape)
    assert [i.kind for i in issues] == [ESCAPE] and "function.__globals__" in issues[0].problem
    gadget = _render(pool, "{% for m in messages %}{{ m.content.format(m) }}{% endfor %}", ["{0.__init__.__globals__}"])
    issues = template_oracle.render_issues(gadget)
    assert [i.kind for i in issues] == [GADGET] and "{0.__init__.__globals__}" in issues[0].problem
    # a dict the template built, indexed by content that is a dunder name: one inert hop, silent
    silent = _render(
        pool,
        "{% set d = {'user': 'U'} %}{% for m in messages %}{{ d[m.role] }}{{ d[m.content] }}{% endfor %}",
        ["__class__", "__init__"],
    )
    assert template_oracle.render_issues(silent) == []


def test_rendering_is_off_with_no_render_or_an_old_jinja2(monkeypatch):
    monkeypatch.setenv(template_render.NO_RENDER_ENV, "1")
    assert not template_render.rendering_enabled()
    monkeypatch.delenv(template_render.NO_RENDER_ENV)
    template_render.jinja2_is_safe.cache_clear()
    monkeypatch.setitem(template_contexts.settings(), "min_jinja2", "99.0")
    try:
        assert not template_render.rendering_enabled()
    finally:
        template_render.jinja2_is_safe.cache_clear()


_STEMS = ["__class__", "__init__", "__doc__", "__module__", "__reduce__", "__getattribute__", "__dict__"]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(_STEMS), min_size=1, max_size=3), st.sampled_from([".", " ", ",", "/"]))
def test_attack_string_variants_reveal_a_gadget(pool, parts, sep):
    # the content names attributes every object has; the template looks the first up on loop
    text = "{% for m in messages %}{{ loop[m.content.split('" + sep + "')[0]] }}{% endfor %}"
    issues = template_oracle.render_issues(_render(pool, text, [sep.join(parts)]))
    assert issues and {i.kind for i in issues} == {GADGET}


def test_check_renders_unless_told_not_to(tmp_path, capsys):
    from gguf_construct.breaking import crafting
    from gguf_construct.commands.main import main

    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", "{% for m in messages %}{{ m.content.format(m) }}{% endfor %}")
    path = tmp_path / "gadget.gguf"
    path.write_bytes(raw.to_bytes())
    assert main(["check", str(path)]) == 1
    assert "TPL-GADGET" in capsys.readouterr().out
    assert main(["check", "--no-render", str(path)]) == 1  # the static scan: a computed format string
    out = capsys.readouterr().out
    assert "TPL-ESCAPE" in out and "TPL-GADGET" not in out
    assert template_render.NO_RENDER_ENV not in os.environ  # only while the command ran


def test_package_templates_draw_no_finding_when_rendered():
    import test_template_taint
    from gguf_construct.breaking import crafting
    from gguf_construct.checker import check

    templates = test_template_taint._package_templates()
    if not templates:
        pytest.skip("no package templates: set GGUF_CONSTRUCT_REAL_TEMPLATES (see tests/test_template_taint.py)")
    flagged = {}
    for name, text in templates.items():
        raw = crafting.carrier()
        raw.set("tokenizer.chat_template", "STRING", text)
        found = [
            f.message for f in check(raw.to_bytes()).findings if f.rule.startswith("TPL-") and f.severity != "info"
        ]
        if found:
            flagged[name] = found
    assert flagged == {}
