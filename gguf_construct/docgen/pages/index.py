"""The page README.md: the index of all pages."""

from __future__ import annotations


from ..context import Ctx, Page, Section
from ..markdown import intro


def _sec_index(ctx: Ctx) -> str:
    out = []
    for page in ctx.pages:
        if page.file == "README.md" or not page.listed:
            continue
        count = page.count(ctx.data)
        out.append(f"- [{page.title}]({page.file})" + (f" ({count})" if count else "") + f": {page.summary}")
        for s in page.sections:
            out.append(f"  - [{s.title}]({page.file}#{s.name})")
    return "\n".join(out) + "\n"


PAGE = Page(
    "README.md",
    "GGUF reference",
    "index",
    intro(
        "GGUF reference",
        "A complete description of GGUF, the model file format of ggml and llama.cpp. Every page is "
        "generated from the YAML specification in [`spec/`](../spec) that gguf-construct's reader, writer "
        "and checker execute, so the text cannot drift from the code. Regenerate with "
        "`gguf-construct docs`; `gguf-construct docs --check` fails when these files are stale.",
    ),
    (Section("contents", "Contents", _sec_index),),
)
