"""Issue #38's adversarial set (tests/template_adversarial.py): every payload is proven against a plain jinja2
Environment (os.popen replaced by a probe: nothing runs) and is an error under ``--profile spec``; payloads whose
keys come from message content are TPL-GADGET; the look-alike benign templates draw no template finding."""

from __future__ import annotations

import os

import jinja2
import pytest

from gguf_construct.breaking import crafting
from gguf_construct.checker import check

from template_adversarial import BENIGN, GADGET, ORDINARY, PAYLOADS
from template_corpus import PopenProbe


Probe = PopenProbe  # stands in for os.popen: a call is recorded and reads probe-output; written out it is probe-marker


def _raise_exception(message):
    raise jinja2.TemplateError(message)


def plain_render(text: str, context: dict | None) -> str:
    """``text`` rendered by a plain (unsandboxed) Environment with ``context`` (an ordinary conversation by
    default) and the runtimes' raise_exception."""
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do"])
    return env.from_string(text).render(**{**(context or ORDINARY), "raise_exception": _raise_exception})


def _file(text: str) -> bytes:
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", text)
    return raw.to_bytes()


def _template_findings(report) -> list:
    return [f for f in report.findings if f.rule.startswith("TPL-")]


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_payload_is_proven_in_a_plain_environment(name, monkeypatch):
    _, text, context = PAYLOADS[name]
    probe = Probe()
    monkeypatch.setattr(os, "popen", probe)
    out = plain_render(text, context)
    assert "probe-output" in out or "probe-marker" in out, out[:300]
    assert all(args == ("probe",) for args in probe.calls)


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_payload_is_an_error(name):
    family, text, _ = PAYLOADS[name]
    report = check(_file(text), profile="spec")
    rules = {f.rule for f in report.errors()}
    assert rules & {"TPL-ESCAPE", "TPL-GADGET"}, _template_findings(report)
    if family == GADGET:
        assert "TPL-GADGET" in rules, _template_findings(report)


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_look_alikes_are_silent(name):
    report = check(_file(BENIGN[name]))
    assert _template_findings(report) == [] and report.valid
    assert plain_render(BENIGN[name], {**ORDINARY, "tools": []})


def test_every_family_has_three_payloads():
    families: dict = {}
    for family, _, _ in PAYLOADS.values():
        families[family] = families.get(family, 0) + 1
    assert set(families) == {
        "hidden-key",
        "first-hop",
        "dotted-path",
        "format-field",
        "binding",
        "key-discovery",
        "trigger",
        "gadget",
    }
    assert min(families.values()) >= 3, families
