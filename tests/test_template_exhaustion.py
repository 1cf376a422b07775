"""Templates that exhaust a renderer's resources on an ordinary conversation (unbounded macro recursion, one
allocation past any sane size): each is proven by rendering it with a plain ``jinja2.Environment()`` in a child
process with the render worker's address space (it ends in RecursionError or MemoryError), and ``check`` reports it as
TPL-RESOURCE from the render oracle (spec/templates.yaml ``render.resource_errors``).  Bounded look-alikes stay
silent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gguf_construct.breaking import crafting
from gguf_construct.checker import check, template_contexts, template_render

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not template_render.rendering_enabled(), reason="the render oracle needs POSIX rlimits"
)

EXHAUSTING = {
    "macro recursion": "{% macro r(n) %}{{ r(n) }}{% endmacro %}{{ r(1) }}",
    "mutual recursion": "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
    "recursive loop on itself": "{% for x in [[1]] recursive %}{{ loop([x]) }}{% endfor %}",
    "center a gigabyte": "{% for m in messages %}{{ m.content|center(10**9) }}{% endfor %}",
    "format width": "{{ '%999999999d'|format(messages|length) }}",
    "doubling in a loop": (
        "{% set ns = namespace(x=bos_token) %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}"
        "{{ ns.x|length }}"
    ),
}

# harmless with ordinary messages; a chat message holding a number makes the render exhaust a limit
CONTENT_DRIVEN = {
    "repeat by content": "{% for m in messages %}{{ '-' * (m.content|int) }}{{ m.content }}{% endfor %}",
    "width from content": "{% for m in messages %}{{ m.role|center(m.content|int) }}{% endfor %}",
}

BOUNDED = {
    "bounded recursion": (
        "{% macro r(n) %}{% if n > 0 %}{{ r(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ r(messages|length) }}"
    ),
    "center a line": "{% for m in messages %}{{ m.content|center(80) }}{% endfor %}",
    "doubling a little": (
        "{% set ns = namespace(x=bos_token) %}{% for i in range(4) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}"
    ),
}

_PROOF = """
import resource, sys, jinja2
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
t = jinja2.Environment().from_string(sys.stdin.read())
try:
    t.render(messages=[{"role": "user", "content": sys.argv[2]}], bos_token="<s>", add_generation_prompt=True)
except (RecursionError, MemoryError) as exc:
    print(type(exc).__name__)
else:
    print("rendered")
"""


def _proof(text: str, content: str = "Hi") -> str:
    done = subprocess.run(
        [sys.executable, "-I", "-c", _PROOF, str(template_contexts.settings()["memory_bytes"]), content],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env={},
    )
    return done.stdout.strip()


def _template_findings(text: str) -> list[tuple[str, str]]:
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", text)
    return [(f.rule, f.message) for f in check(raw.to_bytes()).findings if f.rule.startswith("TPL-")]


@pytest.mark.parametrize("name", sorted(EXHAUSTING))
def test_exhausting_template_is_proven_in_a_plain_environment(name):
    assert _proof(EXHAUSTING[name]) in ("RecursionError", "MemoryError")


@pytest.mark.parametrize("name", sorted(EXHAUSTING))
def test_exhausting_template_is_a_resource_finding(name):
    found = _template_findings(EXHAUSTING[name])
    assert any(rule == "TPL-RESOURCE" for rule, _ in found), found


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_bounded_look_alike_renders_and_is_silent(name):
    assert _proof(BOUNDED[name]) == "rendered"
    assert _template_findings(BOUNDED[name]) == []


@pytest.mark.parametrize("name", sorted(CONTENT_DRIVEN))
def test_content_driven_exhaustion_is_proven_and_reported(name):
    text = CONTENT_DRIVEN[name]
    assert _proof(text) == "rendered"
    assert _proof(text, "999999999") == "MemoryError"
    found = _template_findings(text)
    assert [rule for rule, _ in found] == ["TPL-RESOURCE"], found
    assert "999999999" in found[0][1]
