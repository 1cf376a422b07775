"""What every page renders from: the spec data, the page and section records, and the rendering context that
links a mention of a spec entry to the page defining it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..format import spec as _spec
from .markdown import anchor, code, esc

__all__ = ["SpecData", "load_spec", "Section", "Page", "Ctx", "definitions"]


@dataclass
class SpecData:
    """Everything the pages render, read from spec/ (optional files are None when absent)."""

    gguf: dict
    tensor_types: tuple
    tables: list[dict]
    keys: dict
    naming: dict
    file_types: dict
    rules: dict | None
    errata: dict | None


def _optional(relative: str) -> Any:
    path = _spec.spec_dir() / relative
    return _spec.load_yaml(relative) if path.is_file() else None


def _table_meta(path: Path) -> dict:
    """A lookup table's description without its values (parsing thousands of values would be slow)."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^values:", text, re.M)
    raw = _spec.yaml.load(text[: m.start()] if m else text, Loader=_spec._Loader) or {}
    return {k: v for k, v in raw.items() if k != "values"}


def load_spec() -> SpecData:
    """Read the specification files the documentation is generated from."""
    tables = [_table_meta(path) for path in sorted((_spec.spec_dir() / "tables").glob("*.yaml"))]
    return SpecData(
        gguf=_spec.load_yaml("gguf.yaml"),
        tensor_types=_spec.tensor_types(),
        tables=tables,
        keys=_spec.load_yaml("keys.yaml"),
        naming=_spec.load_yaml("naming.yaml"),
        file_types=_spec.load_yaml("file_types.yaml"),
        rules=_optional("rules.yaml"),
        errata=_optional("errata.yaml"),
    )


@dataclass(frozen=True)
class Section:
    """One generated block of a page: its marker name, heading and renderer."""

    name: str
    title: str
    render: Callable[["Ctx"], str]


def _nothing(data: SpecData) -> Iterable[str]:
    return ()


def _no_count(data: SpecData) -> str:
    return ""


@dataclass(frozen=True)
class Page:
    """One Markdown file of docs/: its title, index summary, default prose and generated sections; ``defines``
    lists the definition anchors (see :func:`~.markdown.anchor`) its sections contain, ``count`` says how many
    entries it holds (for the index)."""

    file: str
    title: str
    summary: str
    intro: str
    sections: tuple[Section, ...]
    defines: Callable[[SpecData], Iterable[str]] = field(default=_nothing, compare=False)
    count: Callable[[SpecData], str] = field(default=_no_count, compare=False)
    listed: bool = True  # shown in the index (pages reached from another page are not)


def definitions(data: SpecData, pages: Iterable[Page]) -> dict[str, str]:
    """Every definition anchor the pages contain, mapped to the page (file name) that defines it."""
    out: dict[str, str] = {}
    for page in pages:
        for target in page.defines(data):
            out[target] = page.file
    return out


class Ctx:
    """Rendering context: the spec, the pages and their definitions, and the page being rendered (for relative
    links)."""

    def __init__(self, data: SpecData, pages: tuple[Page, ...]) -> None:
        self.data = data
        self.pages = pages
        self.defs = {s.name: p.file for p in pages for s in p.sections}
        self.defs.update(definitions(data, pages))
        self.page = ""
        # Names that spec prose mentions and that get linked to their definition: rule IDs, literal keys and
        # tensor type names.
        terms: dict[str, str] = {}
        for t in data.tensor_types:
            terms[t.name] = anchor("tt", t.name)
        for k in data.keys["keys"]:
            if "{" not in k["key"]:
                terms[k["key"]] = anchor("key", k["key"])
        for r in data.rules["rules"] if data.rules else []:
            terms[r["id"]] = anchor("rule", r["id"])
        self._terms = terms
        self.errata_of: dict[str, list[dict]] = {}
        kinds = {"tensor_types": "tt", "keys": "key", "rules": "rule", "tensor_names": "tensor"}
        for item in (data.errata or {}).get("errata", []):
            for fld, kind in kinds.items():
                for name in (item.get("related") or {}).get(fld, []):
                    self.errata_of.setdefault(anchor(kind, name), []).append(item)
        names = sorted(terms, key=len, reverse=True)
        self._term_re = re.compile(r"(?<![\w.\\-])(" + "|".join(map(re.escape, names)) + r")(?![\w-]|\.\w)")

    def link(self, target: str, text: str) -> str:
        """A Markdown link to a definition anchor, or just ``text`` when nothing defines it."""
        page = self.defs.get(target)
        if page is None:
            return text
        if page == self.page:
            return f"[{text}](#{target})"
        return f"[{text}]({_relative(self.page, page)}#{target})"

    def page_link(self, page: str) -> str:
        """The relative link from the page being rendered to another page of docs/."""
        return _relative(self.page, page)

    def errata_note(self, kind: str, name: Any) -> str:
        """'Errata: <links>.' for the errata that name this spec entry, or ''."""
        items = self.errata_of.get(anchor(kind, name), [])
        if not items:
            return ""
        return "Errata: " + "; ".join(self.link(anchor("erratum", e["id"]), esc(e["title"])) for e in items) + "."

    def ref(self, kind: str, name: Any, text: str | None = None) -> str:
        """Link to the definition of spec entry ``name`` of the given kind, shown in code font by default."""
        return self.link(anchor(kind, name), text if text is not None else code(str(name)))

    def prose(self, text: Any) -> str:
        """Spec prose as Markdown: escaped, with rule IDs, keys and tensor type names linked to their definitions."""
        parts = re.split(r"(`[^`]*`)", esc(text))
        for i in range(0, len(parts), 2):
            parts[i] = self._term_re.sub(lambda m: self.link(self._terms[m.group(1)], m.group(1)), parts[i])
        return "".join(parts)


def _relative(src: str, dst: str) -> str:
    """Path of docs page ``dst`` relative to the folder of page ``src`` (both relative to docs/)."""
    depth = src.count("/")
    return "../" * depth + dst
