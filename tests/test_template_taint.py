"""Template scanning that follows values (issue #25): a key reaching a subscript through a binding is seen, in every
template location; an unknown key on an escape route is an escape; the same forms on plain data are silent; each
payload really escapes a plain jinja2 Environment (rendered with a marker in place of os.popen) and not the
sandbox; real templates from packages stay clean."""

from __future__ import annotations

import ast
import glob
import importlib.util
import os
import tarfile
from pathlib import Path

import jinja2
import jinja2.sandbox
import pytest
from hypothesis import given, strategies as st

from gguf_construct.breaking import crafting
from gguf_construct.breaking.crafting_security import template_with
from gguf_construct.checker import check, jinja_scan

from template_corpus import FOLLOWED, FOLLOWED_BENIGN, PopenProbe

_LOCATIONS = ("tokenizer.chat_template", "tokenizer.chat_template.tool_use", "array of string")


def _file(text: str, location: str) -> bytes:
    raw = crafting.carrier()
    if location == "array of string":
        third = len(text) // 3
        raw.set(
            "tokenizer.chat_template",
            "ARRAY",
            [text[:third], text[third : 2 * third], text[2 * third :]],
            item_type="STRING",
        )
    else:
        raw.set(location, "STRING", text)
    return raw.to_bytes()


def _followed_escapes(issues) -> list:
    """The escapes that come from following a value (not from a literal dunder written in the template)."""
    return [
        i
        for i in issues
        if i.kind == jinja_scan.ESCAPE
        and (i.construct.startswith("[...] = ") or i.problem.startswith("key computed at render time"))
    ]


@pytest.mark.parametrize("location", _LOCATIONS)
@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_followed_payloads_are_errors_in_every_location(name, location):
    payload, _ = FOLLOWED[name]
    report = check(_file(template_with(payload), location))
    escapes = [f for f in report.errors() if f.rule == "TPL-ESCAPE"]
    assert escapes and not report.valid, [f.message for f in report.findings]


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_the_escape_comes_from_the_followed_key(name):
    payload, _ = FOLLOWED[name]
    assert _followed_escapes(jinja_scan.scan(payload)), jinja_scan.scan(payload)


def test_every_binding_form_has_two_payloads():
    forms = [
        "namespace-constructor",
        "namespace-assigned",
        "macro-",
        "loop-",
        "dict-",
        "with",
        "caller-",
        "block-set",
        "context-key",
        "unmodelled-filter",
        "past-the-",
        "global",
    ]
    for form in forms:
        assert sum(name.startswith(form) for name in FOLLOWED) >= 2, form


@pytest.mark.parametrize("location", _LOCATIONS)
@pytest.mark.parametrize("name", sorted(FOLLOWED_BENIGN))
def test_benign_binding_forms_are_silent(name, location):
    text = template_with(FOLLOWED_BENIGN[name])
    assert jinja_scan.scan(FOLLOWED_BENIGN[name]) == ()
    report = check(_file(text, location))
    assert not [f for f in report.findings if f.rule.startswith("TPL-")] and report.valid


# -- the renderer decides: each payload escapes a plain Environment, and the sandbox stops it ------------------------
_CONTEXT = {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": False}


def _render(env, text: str, context: dict) -> str | None:
    try:
        return env.from_string(text).render(**{**_CONTEXT, **context})
    except jinja2.TemplateError:
        return None


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_payload_escapes_a_plain_environment_and_not_the_sandbox(name, monkeypatch):
    payload, context = FOLLOWED[name]
    probe = PopenProbe()
    monkeypatch.setattr(os, "popen", probe)
    out = _render(jinja2.Environment(), payload, context)
    assert probe.calls == [("id",)] and "probe-output" in out
    probe.calls.clear()
    _render(jinja2.sandbox.SandboxedEnvironment(), payload, context)
    assert probe.calls == []


@pytest.mark.parametrize("name", sorted(FOLLOWED_BENIGN))
def test_benign_forms_render_in_the_sandbox(name):
    context = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    out = jinja2.sandbox.SandboxedEnvironment().from_string(FOLLOWED_BENIGN[name]).render(**context)
    assert any(word in out for word in ("hi", "yo", "U"))


# -- real templates from packages ------------------------------------------------------------------------------------
def _python_templates(source: str, where: str) -> dict[str, str]:
    """The string constants of Python source that are Jinja templates (llama-cpp-python's chat formats)."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "{%" in node.value:
            found[f"{where}:{node.lineno}"] = node.value
    return found


def _package_templates() -> dict[str, str]:
    """Chat templates shipped in packages: llama.cpp's models/templates/*.jinja and llama-cpp-python's chat formats
    (llama_cpp/llama_chat_format.py), from the llama-cpp-python sdists, directories and .py files named by
    GGUF_CONSTRUCT_REAL_TEMPLATES (separated by os.pathsep), and from an installed llama-cpp-python (its source
    read as text, not imported)."""
    found: dict[str, str] = {}
    for entry in filter(None, os.environ.get("GGUF_CONSTRUCT_REAL_TEMPLATES", "").split(os.pathsep)):
        if entry.endswith(".tar.gz") and os.path.isfile(entry):
            with tarfile.open(entry) as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    if "/models/templates/" in member.name and member.name.endswith(".jinja"):
                        found[member.name] = tar.extractfile(member).read().decode("utf-8")
                    elif member.name.endswith("llama_cpp/llama_chat_format.py"):
                        found.update(_python_templates(tar.extractfile(member).read().decode("utf-8"), member.name))
        elif entry.endswith(".py") and os.path.isfile(entry):
            found.update(_python_templates(Path(entry).read_text(encoding="utf-8"), entry))
        else:
            for path in glob.glob(os.path.join(entry, "**", "*.jinja"), recursive=True):
                found[path] = Path(path).read_text(encoding="utf-8")
    spec = importlib.util.find_spec("llama_cpp")
    for location in (spec.submodule_search_locations or []) if spec else []:
        source = Path(location, "llama_chat_format.py")
        if source.is_file():
            found.update(_python_templates(source.read_text(encoding="utf-8"), str(source)))
    return found


def test_real_templates_from_packages_stay_clean():
    templates = _package_templates()
    if not templates:
        pytest.skip(
            "no package templates: set GGUF_CONSTRUCT_REAL_TEMPLATES to a llama-cpp-python sdist or to "
            "llama.cpp's models/templates"
        )
    flagged = {}
    for name, text in templates.items():
        issues = [i for i in jinja_scan.scan(text) if i.kind != jinja_scan.UNPARSED]  # UNPARSED is info
        if issues:
            flagged[name] = issues
    assert flagged == {}
    assert len(templates) >= 10


def test_values_that_do_not_settle_become_unknown():
    # a chain that flows against document order needs one pass per link: past the budget, what was not reached
    # yet may be anything, so the key on lipsum is unknown (an escape) and the budget is reported
    passes = jinja_scan._facts()["limits"]["passes"]
    chain = "".join(f"{{% set v{i} = v{i + 1} %}}" for i in range(2 * passes))
    text = chain + f"{{% set v{2 * passes} = '__glo' ~ 'bals__' %}}{{{{ lipsum[v0] }}}}"
    kinds = [i.kind for i in jinja_scan.scan(text)]
    assert jinja_scan.ESCAPE in kinds and jinja_scan.LIMIT in kinds
    # the same chain in document order settles and folds the name itself
    forward = "".join(f"{{% set v{i + 1} = v{i} %}}" for i in range(2 * passes))
    issues = jinja_scan.scan("{% set v0 = '__glo' ~ 'bals__' %}" + forward + f"{{{{ lipsum[v{2 * passes}] }}}}")
    assert [i.problem for i in issues] == ["private attribute __globals__ reached by subscript"]


def test_members_and_values_are_bounded():
    limits = jinja_scan._facts()["limits"]
    many = ", ".join(f"'k{i}': 'v{i}'" for i in range(4 * limits["members"]))
    # a dict with more members than followed one by one: the rest share an unknown member
    text = "{% set d = {" + many + ", 'last': '__globals__'} %}{{ lipsum[d['last']] }}{{ d[m.role] }}"
    assert jinja_scan.ESCAPE in [i.kind for i in jinja_scan.scan(text)]
    assert jinja_scan.scan("{% set d = {" + many + "} %}{{ d[m.role] }}") == ()


# -- property: any nesting of the binding forms carries the key, and the scan follows it -----------------------------
def _bind(kind: str, i: int, expr: str, body) -> str:
    """Template text that binds ``expr`` by one binding form and hands the bound value's expression to ``body``."""
    if kind == "set":
        return f"{{% set v{i} = {expr} %}}" + body(f"v{i}")
    if kind == "namespace":
        return f"{{% set ns{i} = namespace(a={expr}) %}}" + body(f"ns{i}.a")
    if kind == "namespace-assign":
        return f"{{% set ns{i} = namespace() %}}{{% set ns{i}.a = {expr} %}}" + body(f"ns{i}.a")
    if kind == "macro":
        return f"{{% macro m{i}(p{i}) %}}" + body(f"p{i}") + f"{{% endmacro %}}{{{{ m{i}({expr}) }}}}"
    if kind == "loop":
        return f"{{% for v{i} in [{expr}] %}}" + body(f"v{i}") + "{% endfor %}"
    if kind == "dict":
        return f"{{% set d{i} = {{'k': {expr}}} %}}" + body(f"d{i}['k']")
    if kind == "with":
        return f"{{% with v{i} = {expr} %}}" + body(f"v{i}") + "{% endwith %}"
    if kind == "caller":
        return (
            f"{{% macro c{i}() %}}{{{{ caller({expr}) }}}}{{% endmacro %}}{{% call(v{i}) c{i}() %}}"
            + body(f"v{i}")
            + "{% endcall %}"
        )
    if kind == "block-set":
        return f"{{% set v{i} %}}{{{{ {expr} }}}}{{% endset %}}" + body(f"v{i}")
    return body(f"(undefined{i}|default({expr}))")


_KINDS = ["set", "namespace", "namespace-assign", "macro", "loop", "dict", "with", "caller", "block-set", "default"]


def _nest(kinds: list, expr: str, use) -> str:
    if not kinds:
        return use(expr)
    return _bind(kinds[0], len(kinds), expr, lambda bound: _nest(kinds[1:], bound, use))


@given(st.lists(st.sampled_from(_KINDS), min_size=1, max_size=3))
def test_nested_bindings_carry_the_key(kinds):
    payload = _nest(kinds, "'__glo' ~ 'bals__'", lambda key: "{{ lipsum[" + key + "]['os']['popen']('id').read() }}")
    probe = PopenProbe()
    saved, os.popen = os.popen, probe
    try:
        _render(jinja2.Environment(), payload, {})
    finally:
        os.popen = saved
    assert probe.calls == [("id",)], payload  # the generated payload is real
    assert _followed_escapes(jinja_scan.scan(payload)), payload
    benign = _nest(kinds, "'content'", lambda key: "{{ messages[0][" + key + "] }}{{ messages[0][m.role] }}")
    assert "hi" in _render(jinja2.sandbox.SandboxedEnvironment(), benign, {"m": {"role": "role"}})
    assert jinja_scan.scan(benign) == (), benign
