"""Markdown reference documentation generated from ``spec/``.

``gguf-construct docs [--out docs/] [--check]`` renders one page per part of the specification (file layout,
metadata values, tensor types, lookup tables, metadata keys, file types, naming convention, conformance rules,
errata, ...) plus an index page; each page is a module of :mod:`.pages`.  The pictures (file layout per version, the
differences between versions, every tensor type's block) are SVG files in ``pictures/`` written by
:mod:`.pictures` and checked like the pages.  Generated text sits between splice
markers::

    <!-- BEGIN GENERATED: tensor-types-summary -->
    ...
    <!-- END GENERATED -->

Regenerating replaces only what is inside the markers, so hand-written prose around them survives.  A page that
does not exist yet is created from the checked-in page of the source tree when there is one (so ``--out`` into a
fresh folder keeps the hand-written prose), else from a short default template.  Every spec entry (type, field,
key, rule, ...) is defined by exactly one HTML anchor (``<a id="...">``, see :func:`anchor`); every other mention is
a link to it.  Output is deterministic: spec order or sorted order, no timestamps.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..format import spec as _spec
from ..base.atomic import atomic_path
from .context import Ctx, Page, Section, SpecData, definitions, load_spec
from .markdown import anchor
from .pages import pages
from .pictures import PICTURE_DIR, pictures as all_pictures

__all__ = [
    "Page",
    "Section",
    "PAGES",
    "anchor",
    "definitions",
    "render_all",
    "splice",
    "write_docs",
    "check_docs",
    "default_out_dir",
    "pages_dir",
    "load_spec",
    "SpecData",
    "Ctx",
]

BEGIN = "<!-- BEGIN GENERATED: {name} -->"
END = "<!-- END GENERATED -->"
_BLOCK_RE = re.compile(r"<!-- BEGIN GENERATED: ([A-Za-z0-9_.-]+) -->\n(.*?)<!-- END GENERATED -->", re.S)

PAGES: tuple[Page, ...] = pages()


def _block(name: str, body: str) -> str:
    return f"{BEGIN.format(name=name)}\n{body}{END}"


def render_sections(page: Page, ctx: Ctx) -> dict[str, str]:
    """The generated content of each section of a page (heading included), keyed by marker name."""
    ctx.page = page.file
    out = {}
    for s in page.sections:
        body = s.render(ctx).rstrip("\n") + "\n"
        out[s.name] = body if page.file == "README.md" else f'## <a id="{s.name}"></a>{s.title}\n\n{body}'
    return out


def splice(existing: str | None, page: Page, sections: dict[str, str]) -> str:
    """Put the generated sections into a page: inside its markers, or into a new page from the default intro.

    Sections whose markers are missing from an existing page are appended at its end; markers of sections the
    generator no longer knows are left as they are (``check_docs`` reports them).
    """
    if existing is None:
        parts = [page.intro] + [_block(n, body) + "\n" for n, body in sections.items()]
        return "\n".join(parts)
    seen = set()

    def repl(m: re.Match) -> str:
        name = m.group(1)
        if name not in sections:
            return m.group(0)
        seen.add(name)
        return _block(name, sections[name])

    text = _BLOCK_RE.sub(repl, existing)
    missing = [n for n in sections if n not in seen]
    if missing:
        text = text.rstrip("\n") + "\n\n" + "\n".join(_block(n, sections[n]) + "\n" for n in missing)
    return text


def render_all(out_dir: Path | str) -> dict[Path, str]:
    """The full text every page of ``out_dir`` should have, given its current hand-written parts, and every
    picture (``pictures/*.svg``)."""
    out_dir = Path(out_dir)
    ctx = Ctx(load_spec(), PAGES)
    result = {}
    for page in PAGES:
        path = out_dir / page.file
        existing = path.read_text(encoding="utf-8") if path.is_file() else _seed(out_dir, page)
        result[path] = splice(existing, page, render_sections(page, ctx))
    for name, svg in all_pictures().items():
        result[out_dir / PICTURE_DIR / name] = svg
    return result


def pages_dir() -> Path | None:
    """Where the checked-in pages (their hand-written prose) are: docs/ of a source checkout, else the copy an
    installed package ships (``gguf_construct/_docs``); None when neither is there."""
    for candidate in (
        default_out_dir() if _spec.in_checkout() else None,
        Path(__file__).resolve().parent.parent / "_docs",
    ):
        if candidate is not None and (candidate / "rules.md").is_file():
            return candidate
    return None


def _seed(out_dir: Path, page: Page) -> str | None:
    """The checked-in page (:func:`pages_dir`), for a page that ``out_dir`` does not have yet, with its links to
    ``spec/`` made relative to ``out_dir``; None when there is none."""
    where = pages_dir()
    source = where / page.file if where is not None else None
    if source is None or not source.is_file() or source.resolve() == (out_dir / page.file).resolve():
        return None
    text = source.read_text(encoding="utf-8")
    spec_link = Path(os.path.relpath(_spec.spec_dir(), (out_dir / page.file).parent)).as_posix()
    return text.replace("](../spec)", f"]({spec_link})").replace("](../spec/", f"]({spec_link}/")


def _unknown_markers(text: str, page: Page) -> list[str]:
    known = {s.name for s in page.sections}
    return [m.group(1) for m in _BLOCK_RE.finditer(text) if m.group(1) not in known]


def write_docs(out_dir: Path | str) -> list[Path]:
    """Regenerate the documentation in ``out_dir``; returns the files that changed."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    for path, text in render_all(out_dir).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                Path(tmp).write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    return changed


def check_docs(out_dir: Path | str) -> list[str]:
    """Problems that make the checked-in docs differ from what the spec generates ([] when up to date)."""
    out_dir = Path(out_dir)
    problems = []
    pages = {p.file: p for p in PAGES}
    for path, text in render_all(out_dir).items():
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        current = path.read_text(encoding="utf-8")
        if current != text:
            problems.append(f"{path}: stale")
        page = pages.get(path.relative_to(out_dir).as_posix())
        for name in _unknown_markers(current, page) if page else ():
            problems.append(f"{path}: unknown generated section {name!r}")
    expected = {p.name for p in render_all(out_dir) if p.parent == out_dir / PICTURE_DIR}
    for path in sorted((out_dir / PICTURE_DIR).glob("*.svg")):
        if path.name not in expected:
            problems.append(f"{path}: not generated (remove it)")
    return problems


def default_out_dir() -> Path:
    """docs/ next to the spec/ directory of a source checkout, else ./docs."""
    spec_dir = _spec.spec_dir()
    return spec_dir.parent / "docs" if spec_dir.name == "spec" else Path("docs")
