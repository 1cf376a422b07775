"""Markdown building blocks of the generated pages: anchors, escaping, tables, headings, fences."""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = [
    "anchor",
    "esc",
    "code",
    "table",
    "heading",
    "mermaid_label",
    "mermaid",
    "fence",
    "num",
    "bytes_range",
    "join_nonempty",
    "intro",
    "image",
]


def anchor(kind: str, *parts: Any) -> str:
    """The HTML anchor id that defines one spec entry, e.g. ``anchor("tt", "Q4_0") == "tt-q4_0"``.

    Kinds: ``prim`` primitive, ``alias`` version alias, ``version``, ``vt`` value type, ``struct`` / ``field``
    container structure and its fields, ``tt`` / ``ttf`` tensor type and its block fields, ``table`` lookup table,
    ``keysec`` / ``key`` key registry section and key, ``arch`` documented architecture, ``ftype`` file type,
    ``naming`` naming component, ``rulegroup`` / ``rule`` conformance rules, ``erratum``.
    """
    text = "-".join([kind, *(str(p) for p in parts)]).lower().replace("{", "").replace("}", "")
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9._-]+", "-", text)).strip("-")


def esc(text: Any) -> str:
    """Escape Markdown/HTML specials in spec prose, leaving `code spans` alone; whitespace is collapsed."""
    text = " ".join(str(text).split())
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        s = parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("[", "\\[").replace("]", "\\]")
        s = s.replace("<", "&lt;")
        s = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", s)
        parts[i] = s
    return "".join(parts)


def code(text: Any) -> str:
    """Inline code that survives backticks in the text."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: Iterable[str], rows: Iterable[Iterable[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; cells are Markdown already (``|`` is escaped here)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |"]
    spec = list(align) if align else ["l"] * len(header)
    lines.append("|" + "|".join({"l": "---", "r": "---:", "c": ":---:"}[a] for a in spec) + "|")
    for row in rows:
        cells = [str(c).replace("\n", "<br>").replace("|", "\\|") for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def heading(level: int, target: str | None, text: str) -> str:
    """A heading, optionally carrying the definition anchor ``target``."""
    mark = f'<a id="{target}"></a>' if target else ""
    return f"{'#' * level} {mark}{text}\n"


def mermaid_label(text: str) -> str:
    """Text for a quoted Mermaid node label."""
    return text.replace('"', "#quot;")


def mermaid(lines: Iterable[str]) -> str:
    """A fenced Mermaid diagram."""
    return "```mermaid\n" + "\n".join(lines) + "\n```\n"


def image(alt: str, src: str) -> str:
    """A picture (Markdown image syntax) on a line of its own."""
    return f"![{alt}]({src})\n"


def fence(text: str, lang: str = "text") -> str:
    """A fenced code block."""
    return f"```{lang}\n{text}\n```\n"


def num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


def bytes_range(offset: int, size: int) -> str:
    return f"byte {offset}" if size == 1 else f"bytes {offset}–{offset + size - 1}"


def join_nonempty(parts: Iterable[str], sep: str = " ") -> str:
    return sep.join(p for p in parts if p)


def intro(title: str, text: str) -> str:
    """The default opening of a new page: its title and a paragraph."""
    return f"# {title}\n\n{text}\n"
