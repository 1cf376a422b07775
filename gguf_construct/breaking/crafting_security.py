"""Breakages of issue #16: one reproducer per advisory of spec/advisories.yaml (named there) and crafted chat
templates, registered in :data:`~.crafted.BREAKAGES` like every other breakage (imported by :mod:`.crafting`, on
top of :mod:`.crafted` as :mod:`.crafting` is)."""

from __future__ import annotations

import struct

from ..format import keynames, structs
from ..rulebook.walk import ALIGNMENT_KEY
from .crafted import RawFile, RawTensor
from .crafted import breakage as _breakage
from .crafted import struct_order as _le


def _uint(value: int, width: int, byte_order: str) -> bytes:
    """``value`` as an unsigned integer of ``width`` bytes (wrapped), for lengths that lie."""
    return (value % (1 << (8 * width))).to_bytes(width, byte_order)


__all__ = ["CLASSIC_INJECTION", "template_with"]

CLASSIC_INJECTION = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
_CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def template_with(payload: str) -> str:
    """A ChatML template with ``payload`` inside its loop, where a real attack would hide it."""
    return _CHATML.replace("{% endfor %}", payload + "{% endfor %}")


def _width(raw: RawFile, prim: str) -> int:
    return structs.family(raw.version, raw.byte_order).primitive_width(prim)


def _f32_tensor(raw: RawFile, name: str, dims: list[int], offset: int = 0) -> None:
    raw.tensors.append(RawTensor(name.encode(), dims, 0, offset))


# -- advisories --------------------------------------------------------------------------------------------------
@_breakage("advisory-kv-count-wrap", "HDR-COUNT")
def _(raw):
    """metadata_kv_count = 2^61: times any record size, the allocation wraps (CVE-2024-23605)."""
    raw.n_kv = 2**61


@_breakage("advisory-tensor-count-wrap", "HDR-COUNT")
def _(raw):
    """tensor_count = 2^60: times sizeof(gguf_tensor_info), the allocation wraps (CVE-2024-21836)."""
    raw.n_tensors = 2**60


@_breakage("advisory-string-length-wrap", "STR-EOF")
def _(raw):
    """general.name declares 2^64 - 1 bytes: calloc(n + 1) is calloc(0) (CVE-2024-23496)."""
    raw.set_raw(keynames.GENERAL_NAME, "STRING", _uint(2**64 - 1, _width(raw, "strlen_t"), raw.byte_order) + b"Tiny")


@_breakage("advisory-string-array-wrap", "ARR-EOF", carrier_only=False)
def _(raw):
    """An ARRAY of STRING declaring 2^61 elements, appended last (CVE-2024-21825)."""
    head = struct.pack(_le(raw) + "I", 8) + _uint(2**61, _width(raw, "arrlen_t"), raw.byte_order)
    raw.set_raw("test.strings", "ARRAY", head + raw.value_bytes("STRING", "a"))


@_breakage("advisory-n-dims", "TI-NDIMS")
def _(raw):
    """The F32 vector declared with 9 dimensions: ne[4] is written past its end (CVE-2024-21802)."""
    raw.tensors[-1].dims = raw.tensors[-1].dims + [1] * 8


@_breakage("advisory-data-size-wrap", "SEC-DATA-SIZE-OVERFLOW", "DATA-BOUNDS")
def _(raw):
    """Two more F32 tensors of 2^61 elements (2^63 bytes each, each fine on its own): the padded sizes add up
    to 2^64 (CVE-2025-53630)."""
    end = len(raw.data)
    _f32_tensor(raw, "huge.0", [2**61], end)
    _f32_tensor(raw, "huge.1", [2**61], end + 2**63)


@_breakage("advisory-mem-size-wrap", "SEC-DATA-SIZE-OVERFLOW", "DATA-BOUNDS")
def _(raw):
    """The F32 vector as 2^62 - 96 elements: the data size (2^64 - 224) fits, but adding ggml's per-tensor
    context overhead wraps mem_size (CVE-2026-27940)."""
    raw.tensors[-1].dims = [2**62 - 96]


@_breakage("advisory-nbytes-wrap", "TI-NBYTES-OVERFLOW")
def _(raw):
    """The F32 vector as 2^62 + 1 elements: 2^64 + 4 bytes, 4 after wrapping (CVE-2026-33298)."""
    raw.tensors[-1].dims = [2**62 + 1]


@_breakage("advisory-pad-wrap", "TI-NBYTES-OVERFLOW")
def _(raw):
    """The F32 vector as [4, 2^30 - 1, 2^30 + 1]: 2^64 - 16 bytes, which GGML_PAD to 32 wraps to 0 (llama.cpp
    PR #24759)."""
    raw.tensors[-1].dims = [4, 2**30 - 1, 2**30 + 1]


@_breakage("advisory-data-past-eof", "DATA-BOUNDS")
def _(raw):
    """The F32 vector as [32, 1000]: its data would run 127872 bytes past the end of the file (CVE-2026-7482)."""
    raw.tensors[-1].dims = [32, 1000]


@_breakage("advisory-array-length-hang", "ARR-EOF", carrier_only=False)
def _(raw):
    """A UINT8 array declaring 2^63 elements, appended last (gguf-py 0.19.0 hangs)."""
    head = struct.pack(_le(raw) + "I", 0) + _uint(2**63, _width(raw, "arrlen_t"), raw.byte_order)
    raw.set_raw("test.bomb", "ARRAY", head)


@_breakage("advisory-string-length-sign", "STR-EOF")
def _(raw):
    """general.name declares 2^63 bytes: negative as a signed 64-bit length (gguf-parser-go)."""
    raw.set_raw(keynames.GENERAL_NAME, "STRING", _uint(2**63, _width(raw, "strlen_t"), raw.byte_order) + b"Tiny")


@_breakage("advisory-scores-int8", "META-TOKENIZER-TYPE")
def _(raw):
    """tokenizer.ggml.scores as an ARRAY of INT8 (read as float32 by llama.cpp before PR #26690)."""
    raw.set(keynames.TOKENIZER_GGML_SCORES, "ARRAY", [0, 0, 0, -1, -2], item_type="INT8")


@_breakage("advisory-alignment-2-31", "SEC-ALIGN-HUGE")
def _(raw):
    """general.alignment = 2^31 in a file without tensors (a legal power of two; negative as int32)."""
    raw.tensors, raw.data = [], b""
    raw.set(ALIGNMENT_KEY, "UINT32", 2**31)


@_breakage("advisory-template-injection", "TPL-ESCAPE")
def _(raw):
    """tokenizer.chat_template with the classic ''.__class__.__mro__[1].__subclasses__() payload
    (CVE-2024-34359)."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", template_with(CLASSIC_INJECTION))


# -- chat templates ----------------------------------------------------------------------------------------------
@_breakage("template-array-of-strings", "TPL-ESCAPE", carrier_only=False)
def _(raw):
    """tokenizer.chat_template as an ARRAY of STRING, the payload split between two pieces."""
    text = template_with("{{ cycler.__init__.__glo" + "bals__.os.popen('id').read() }}")
    cut = text.index("__glo") + 5
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "ARRAY", [text[:cut], text[cut:]], item_type="STRING")


@_breakage("template-obfuscated", "TPL-ESCAPE", carrier_only=False)
def _(raw):
    """A named template reaching __globals__ through a name built by concatenation and a set variable."""
    raw.set(
        "tokenizer.chat_template.tool_use",
        "STRING",
        template_with("{% set u = '_' * 2 %}{{ lipsum|attr(u ~ 'glob' ~ 'als' ~ u) }}"),
    )


@_breakage("template-suspicious", "TPL-SUSPICIOUS", carrier_only=False)
def _(raw):
    """A template that looks a module name up in the messages (inert: a list has no member os)."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", template_with("{{ messages['os'] }}"))


@_breakage("template-gadget", "TPL-GADGET", "TPL-ESCAPE", carrier_only=False)
def _(raw):
    """A template that formats each message's content with the message itself: harmless with ordinary messages,
    a walk to Python internals for a message such as '{0.__init__.__globals__}' (found by rendering; the static
    scan sees a format string computed at render time)."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", template_with("{{ message.content.format(message) }}"))


@_breakage("template-unparsed", "TPL-UNPARSED", carrier_only=False)
def _(raw):
    """A template with a tag jinja2 does not know ({% reasoning %}: no runtime tag the scan knows either)."""
    raw.set(
        keynames.TOKENIZER_CHAT_TEMPLATE,
        "STRING",
        "{% for m in messages %}{% reasoning %}{{ m.content }}{% endreasoning %}{% endfor %}",
    )


@_breakage("template-too-large", "TPL-LIMIT", carrier_only=False)
def _(raw):
    """A template of 300 000 characters (above the 128 KiB analysis limit)."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", template_with("{# " + "x" * 300_000 + " #}"))


@_breakage("template-too-deep", "TPL-LIMIT", carrier_only=False)
def _(raw):
    """A template nesting 500 parentheses."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", "{{ " + "(" * 500 + "1" + ")" * 500 + " }}")


@_breakage("template-resource", "TPL-RESOURCE", carrier_only=False)
def _(raw):
    """A template whose loop runs a billion times (range(10**9))."""
    raw.set(keynames.TOKENIZER_CHAT_TEMPLATE, "STRING", template_with("{% for i in range(10**9) %}{{ i }}{% endfor %}"))


@_breakage("template-stray", "TPL-STRAY", carrier_only=False)
def _(raw):
    """general.description holds a Jinja template with a loop."""
    raw.set(keynames.GENERAL_DESCRIPTION, "STRING", "{% for m in messages %}{{ m.content }}{% endfor %}")
