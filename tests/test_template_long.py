"""A chat template far past the analysed size stays a view over the file: its lexical scan reads it a chunk at a
time (memory a chunk, not the value), and finds a name wherever it lies, a chunk edge included."""

from __future__ import annotations

import random
import re
import tracemalloc

from hypothesis import given, settings, strategies as st

from gguf_construct.breaking import crafting
from gguf_construct.checker import check, jinja_scan
from gguf_construct.format.lazystring import CHUNK_BYTES


def _template_findings(path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(str(path)).findings:
        if f.rule.startswith("TPL-"):
            out.setdefault(f.rule, []).append(f.message)
    return out


def _long_template(tmp_path, inside: str, at: int, size: int):
    filler = "Hello {{ messages[0].content }} and some text. "
    body = (filler * (size // len(filler) + 1))[:size]
    text = body[:at] + inside + body[at:]
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", text)
    path = tmp_path / "long-template.gguf"
    path.write_bytes(raw.to_bytes())
    return path


def test_a_name_across_a_chunk_edge_of_a_long_template_is_found(tmp_path):
    path = _long_template(tmp_path, "{{ cycler.gi_frame }}{{ ().__class__ }}", CHUNK_BYTES - 13, 3 * CHUNK_BYTES)
    found = _template_findings(path)
    assert "TPL-LIMIT" in found
    escapes = " ".join(found.get("TPL-ESCAPE", []))
    assert "gi_frame" in escapes and "__class__" in escapes


def test_a_long_template_is_scanned_in_bounded_memory(tmp_path):
    size = 24 * CHUNK_BYTES
    path = _long_template(tmp_path, "{{ ().__class__ }}", size - 100, size)
    tracemalloc.start()
    found = _template_findings(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "__class__" in " ".join(found.get("TPL-ESCAPE", []))
    assert peak < size / 4, peak


def _inside_tags(text: str) -> str:
    """The reference: the text inside {{ }} and {% %} tags of a whole text (an unclosed tag runs to the end)."""
    parts, start = [], None
    for m in re.finditer(r"\{\{|\{%|\}\}|%\}", text):
        if m.group() in ("{{", "{%"):
            if start is None:
                start = m.end()
        elif start is not None:
            parts.append(text[start : m.start()])
            start = None
    if start is not None:
        parts.append(text[start:])
    return "\n".join(parts)


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 12))
def test_the_chunked_lexical_scan_is_the_whole_texts(rnd: random.Random, cuts: int):
    atoms = ["{{", "}}", "{%", "%}", "{", "}", "%", " ", "__class__", "gi_frame", "xgi_frame", "_", "a", "\n"]
    text = "".join(rnd.choice(atoms) for _ in range(rnd.randint(0, 300)))
    edges = sorted(rnd.sample(range(len(text) + 1), min(len(text) + 1, cuts)))
    pieces = [text[a:b] for a, b in zip([0, *edges], [*edges, len(text)])]
    code = _inside_tags(text)
    names = jinja_scan._names("internal_attributes") & set(re.findall(r"\b[a-z]\w*\b", code))
    want = sorted(set(jinja_scan._dunder_in_text().findall(code))) + sorted(names)
    assert [i.construct for i in jinja_scan.lexical_chunks(pieces)] == want
