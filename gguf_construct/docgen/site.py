"""``gguf-construct docs --site OUT``: the reference as a static HTML site with navigation and search.

The pages are rendered into a scratch folder exactly as ``docs/`` is (hand-written prose kept in a source
checkout), links that leave the reference (to ``spec/``, ``exports/``) become plain text, and MkDocs with the
Material theme (the ``[docs]`` extra) builds the site: a navigation of every page (the architectures as one
section), a client-side search index, no web fonts or other requests to third parties (the site works offline).

Made to be read in a 1280 px window: the table of contents joins the navigation so the page gets the width, wide
tables wrap their cells (and scroll inside the page when they still do not fit), and each picture is shown at its
natural size or larger -- large enough that its smallest label is :data:`MIN_LABEL_PX` high -- scrolling inside
the page when wider, and opens alone at full size when clicked (zoom).
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .pages import pages as reference_pages

__all__ = ["DOCS_EXTRA_HINT", "MIN_LABEL_PX", "missing_requirements", "site_config", "prepare_sources", "build_site"]

DOCS_EXTRA_HINT = 'the site needs the [docs] extra: pip install "gguf-construct[docs]"'
_LINK_RE = re.compile(r"(!?)\[((?:\\.|[^\]\\])*)\]\(([^)\s]+)\)")
_PICTURE_RE = re.compile(r"^!\[((?:\\.|[^\]\\])*)\]\(((?:\.\./)*pictures/[^)\s]+\.svg)\)$", re.M)
_SVG_WIDTH_RE = re.compile(r'<svg\b[^>]*\bwidth="([0-9.]+)"')
_SVG_FONT_RE = re.compile(r'font-size="([0-9.]+)"')
MIN_LABEL_PX = 10.5  # the smallest text of a picture, in CSS pixels, as the site shows it (tests ask for >= 10)
STYLESHEET = "stylesheets/gguf-construct.css"
_CSS = """\
/* gguf-construct's site: readable in a 1280 px window (docgen/site.py) */
.md-grid { max-width: 90rem; }
/* tables: cells wrap (long code too); a table that still does not fit scrolls inside the page */
.md-typeset__scrollwrap { overflow-x: auto; }
.md-typeset__table { display: block; max-width: 100%; }
.md-typeset table:not([class]) { display: table; width: 100%; max-width: 100%; font-size: .68rem; }
.md-typeset table:not([class]) th, .md-typeset table:not([class]) td { overflow-wrap: anywhere; padding: .6em .8em; }
.md-typeset table:not([class]) code { white-space: normal; overflow-wrap: anywhere; word-break: normal; }
/* a row's name (first column: a rule ID, key, field, tensor) breaks only where it must */
.md-typeset table:not([class]) td:first-child code { overflow-wrap: break-word; }
/* pictures: natural size or larger, never shrunk to the column; wider ones scroll; a click opens one alone */
.md-typeset .gguf-picture { display: block; overflow-x: auto; margin: 1em 0; }
.md-typeset .gguf-picture img { max-width: none; height: auto; cursor: zoom-in; }
"""
_SITE_MARKERS = ("sitemap.xml", "search/search_index.json")


def missing_requirements() -> list[str]:
    """The Python packages of the ``[docs]`` extra that are not installed."""
    return [
        name
        for module, name in (("mkdocs", "mkdocs"), ("material", "mkdocs-material"))
        if importlib.util.find_spec(module) is None
    ]


def _local_target(page: str, target: str) -> str | None:
    """The docs-relative path a link of ``page`` points to, or None for URLs and anchors of the same page."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return None
    path = target.split("#", 1)[0]
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), path))


def _site_markdown(page: str, text: str) -> str:
    """A page's Markdown for the site: links out of the reference become their text; README.md is index.md."""

    def repl(m: re.Match) -> str:
        bang, label, target = m.groups()
        resolved = _local_target(page, target)
        if resolved is None:
            return m.group(0)
        if resolved == ".." or resolved.startswith("../"):
            return label if not bang else m.group(0)
        if resolved == "README.md":
            rel = posixpath.relpath("index.md", posixpath.dirname(page) or ".")
            anchor = target[len(target.split("#", 1)[0]) :]
            return f"{bang}[{label}]({rel}{anchor})"
        return m.group(0)

    return _LINK_RE.sub(repl, text)


def hand_written_pages() -> list[Path]:
    """The pages of a source checkout's docs/ that no generator writes (``docs/cost.md`` ...), which the site shows
    after the reference; none for an installed package."""
    from ..format import spec as _spec

    if not _spec.in_checkout():
        return []
    docs = _spec.spec_dir().parent / "docs"
    generated = {page.file for page in reference_pages()}
    return sorted(p for p in docs.glob("*.md") if p.name not in generated)


def _title_of(page: Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


def prepare_sources(src: Path, write_docs: Callable[[Path], object]) -> list[str]:
    """Render the reference into ``src`` with ``write_docs`` (Markdown and pictures) ready for MkDocs; returns the
    pages' paths."""
    write_docs(src)
    for page in hand_written_pages():
        shutil.copy(page, src / page.name)
        for picture in re.findall(r"!\[[^\]]*\]\(([\w.-]+\.svg)\)", page.read_text(encoding="utf-8")):
            if (page.parent / picture).is_file():  # its own pictures, beside it (docs/readers.svg)
                shutil.copy(page.parent / picture, src / picture)
    (src / STYLESHEET).parent.mkdir(parents=True, exist_ok=True)
    (src / STYLESHEET).write_text(_CSS, encoding="utf-8", newline="\n")
    pages = []
    for path in sorted(src.rglob("*.md")):
        rel = path.relative_to(src).as_posix()
        text = _site_pictures(path.parent, _site_markdown(rel, path.read_text(encoding="utf-8")))
        if rel == "README.md":
            # Python-Markdown nests a list item under four spaces, GitHub under two (the index's section links)
            text = re.sub(r"^  - ", "    - ", text, flags=re.M)
            path.unlink()
            rel = "index.md"
            path = src / rel
        path.write_text(text, encoding="utf-8", newline="\n")
        pages.append(rel)
    return pages


def _picture_width(svg: Path) -> int | None:
    """The width to show a picture at: its natural width, scaled up until its smallest label is MIN_LABEL_PX
    high (None when the file is not a readable SVG with a width)."""
    try:
        text = svg.read_text(encoding="utf-8")
    except OSError:
        return None
    width = _SVG_WIDTH_RE.search(text)
    if width is None:
        return None
    fonts = [float(f) for f in _SVG_FONT_RE.findall(text)]
    scale = max(1.0, MIN_LABEL_PX / min(fonts)) if fonts else 1.0
    return round(float(width.group(1)) * scale)


def _site_pictures(folder: Path, text: str) -> str:
    """A page's pictures (a line of their own, ``![alt](pictures/x.svg)``) as HTML for the site: at the width of
    :func:`_picture_width`, in a block that scrolls when wider than the page, linked to the picture itself."""

    def repl(m: re.Match) -> str:
        alt, src = m.groups()
        width = _picture_width(folder / src)
        if width is None:
            return m.group(0)
        label = html.escape(alt.replace("\\", ""), quote=True)
        return (
            f'<a class="gguf-picture" href="{src}" title="{label}: open at full size">'
            f'<img src="{src}" alt="{label}" width="{width}"></a>'
        )

    return _PICTURE_RE.sub(repl, text)


def site_config(docs_dir: Path, site_dir: Path) -> dict:
    """The MkDocs configuration: Material theme without web fonts, search, and the navigation in index order."""
    nav: list = [{"Reference": "index.md"}]
    archs = []
    for page in reference_pages():
        if page.file == "README.md":
            continue
        if page.file.startswith("architectures/"):
            archs.append({page.title: page.file})
        elif page.file == "architectures.md":
            nav.append({page.title: [{"All architectures": page.file}]})
        else:
            nav.append({page.title: page.file})
    for entry in nav:
        if "Architectures" in entry:
            entry["Architectures"] += archs
    nav += [{_title_of(page): page.name} for page in hand_written_pages()]
    return {
        "site_name": "GGUF reference",
        "site_description": "The GGUF model-file format, generated from gguf-construct's executable spec",
        "docs_dir": str(docs_dir),
        "site_dir": str(site_dir),
        "use_directory_urls": False,
        "theme": {
            "name": "material",
            "font": False,
            "features": [
                "navigation.top",
                "navigation.tracking",
                "search.highlight",
                "search.suggest",
                "toc.follow",
                "toc.integrate",
            ],
        },
        "extra_css": [STYLESHEET],
        "plugins": ["search"],
        "markdown_extensions": ["tables", "attr_list", "md_in_html", {"toc": {"permalink": True}}],
        "nav": nav,
    }


def _is_previous_site(out: Path) -> bool:
    return any((out / m).is_file() for m in _SITE_MARKERS)


def build_site(out: Path | str, write_docs: Callable[[Path], object], quiet: bool = True) -> tuple[float, int]:
    """Build the HTML site into ``out`` (replaced when it holds an earlier site; refused when it holds other
    files) from the reference ``write_docs`` renders into a folder; returns (seconds taken, number of pages).
    Raises ``OSError`` with the reason on failure."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not _is_previous_site(out))):
        raise OSError(f"{out}: exists and is not an earlier site; give an empty or new directory")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gguf-site-") as tmp:
        src, built = Path(tmp) / "docs", Path(tmp) / "site"
        pages = prepare_sources(src, write_docs)
        config = Path(tmp) / "mkdocs.yml"
        config.write_text(json.dumps(site_config(src, built), indent=1), encoding="utf-8")  # JSON is YAML
        cmd = [sys.executable, "-m", "mkdocs", "build", "--config-file", str(config)] + (["--quiet"] if quiet else [])
        run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
        if run.returncode != 0:
            raise OSError(f"mkdocs build failed:\n{run.stderr.strip() or run.stdout.strip()}")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(built), str(out))  # built whole in the scratch folder, then put in place
    return time.monotonic() - start, len(pages)
