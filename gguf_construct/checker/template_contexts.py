"""What the render oracle renders a template with: the canonical conversations and the attack conversations of
spec/templates.yaml ``render``, as JSON-ready dicts for a render worker."""

from __future__ import annotations

import functools

from ..format import spec as _spec

__all__ = ["settings", "canonical_contexts", "attack_context", "attack_contexts"]


@functools.lru_cache(maxsize=1)
def settings() -> dict:
    """The ``render`` section of spec/templates.yaml."""
    return _spec.load_yaml("templates.yaml")["render"]


def canonical_contexts() -> list[dict]:
    """The conversations runtimes test chat templates with (system, multi-turn, tools and tool calls, tool
    results, ``add_generation_prompt`` both ways, reasoning, documents)."""
    return [dict(c) for c in settings()["contexts"]]


def attack_context(text: str) -> dict:
    """A conversation whose every field a chat user or tool can set holds ``text``: the contents, a role, a
    name, a tool name and description, a tool call's name, argument name and value, and a document."""
    call = {"id": text, "type": "function", "function": {"name": text, "arguments": {text: text}}}
    return {
        "messages": [
            {"role": "system", "content": text},
            {"role": "user", "content": text, "name": text},
            {"role": text, "content": text},
            {"role": "assistant", "content": text, "tool_calls": [call], "reasoning_content": text},
            {"role": "tool", "tool_call_id": text, "name": text, "content": text},
            {"role": "user", "content": text},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": text,
                    "description": text,
                    "parameters": {
                        "type": "object",
                        "required": [text],
                        "properties": {text: {"type": "string", "description": text}},
                    },
                },
            }
        ],
        "documents": [{"title": text, "text": text}],
        "add_generation_prompt": True,
    }


def attack_contexts(strings: list[str] | None = None) -> list[dict]:
    """One attack conversation per attack string (spec/templates.yaml ``attack_strings`` by default)."""
    return [{"string": s, "context": attack_context(s)} for s in (strings or settings()["attack_strings"])]
