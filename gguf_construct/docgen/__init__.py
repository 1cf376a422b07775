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

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..format import spec as _spec
from ..base.atomic import atomic_path
from .context import Ctx, Page, Section, SpecData, definitions, load_spec
from .markdown import anchor
from .pages import pages
from .pictures import PICTURE_DIR, pictures as all_pictures

__all__ = ["Page", "Section", "PAGES", "anchor", "definitions", "render_all", "splice", "write_docs", "check_docs",
           "default_out_dir", "add_cli", "load_spec", "SpecData", "Ctx"]

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


def _seed(out_dir: Path, page: Page) -> str | None:
    """The checked-in page of the source tree, for a page that ``out_dir`` does not have yet, with its links to
    ``spec/`` made relative to ``out_dir``; None outside a source checkout."""
    source = default_out_dir() / page.file
    if not source.is_file() or source.resolve() == (out_dir / page.file).resolve():
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


def _cmd_site(out: str) -> int:
    from .site import DOCS_EXTRA_HINT, build_site, missing_requirements

    if missing_requirements():
        print(f"gguf-construct: {DOCS_EXTRA_HINT}", file=sys.stderr)
        return 2
    seconds, n = build_site(out, write_docs)
    print(f"wrote {out}: {n} pages in {seconds:.1f} s (open {Path(out) / 'index.html'}; search needs it served, "
          f"e.g. python -m http.server -d {out})")
    return 0


def _cmd_docs(args: argparse.Namespace) -> int:
    if getattr(args, "site", None):
        if args.check or args.out is not None:
            print("gguf-construct: docs --site builds the HTML site only (no --out, no --check)", file=sys.stderr)
            return 2
        return _cmd_site(args.site)
    if args.check:
        why = _spec.nothing_to_check(args.out, "docs")
        if why:
            print(f"gguf-construct: {why}", file=sys.stderr)
            return 2
    if args.out is None:
        args.out = default_out_dir()
    # the docs of a source checkout: its exports/ and the key-name constants module too
    exports = _spec.in_checkout() and Path(args.out).resolve() == default_out_dir().resolve()
    if args.check:
        problems = check_docs(args.out)
        if exports:
            from ..export import check_exports
            from .keynames import check_keynames
            problems += check_exports(compile_parser=False) + check_keynames()
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print("gguf-construct: docs are stale; run `gguf-construct docs` and commit the result", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    changed = write_docs(args.out)
    if exports:
        from ..export import write_exports
        from .keynames import write_keynames
        written, notes = write_exports()
        changed += written + write_keynames()
        for note in notes:
            print(note, file=sys.stderr)
    for path in changed:
        print(f"wrote {path}")
    if not changed:
        print(f"{args.out}: up to date")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``docs`` sub-command on the CLI's subparsers."""
    p = subparsers.add_parser("docs", help="render the Markdown reference in docs/ from spec/",
                              description="Render the GGUF reference (Markdown) in docs/ from spec/; hand-written "
                                          "prose outside the generated blocks is kept.")
    p.add_argument("--out", default=None,
                   help="output directory (default: docs/ beside spec/ in a source checkout, else ./docs)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 listing the files that differ from what the spec generates")
    p.add_argument("--site", metavar="OUT",
                   help="build the reference as a static HTML site with navigation and search into OUT (MkDocs "
                        "with the Material theme: pip install \"gguf-construct[docs]\"); docs/ is not touched")
    p.set_defaults(func=_cmd_docs)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_cmd_docs(argparse.Namespace(out=sys.argv[1] if len(sys.argv) > 1 else None, check=False,
                                                  site=None)))
