"""``gguf-construct docs --site``: the HTML site builds, every internal link and anchor resolves, and in a real
browser (Chromium through Playwright) the pictures render and search finds what a reader types.

Needs the ``[docs]`` extra (mkdocs, mkdocs-material); the browser part also needs ``playwright`` (the
``[docs-test]`` extra) and a Chromium (Debian: ``apt-get install chromium``; or ``GGUF_CONSTRUCT_CHROMIUM=PATH``),
and skips naming what is missing.  Screenshots go to ``GGUF_CONSTRUCT_SCREENSHOTS`` (a folder) when set, else
next to the built site.  At 1280 px no table reaches past the page's text column (it wraps, or scrolls inside
the page), and every picture shows its smallest label at least 10 px high.
"""

from __future__ import annotations

import functools
import html
import http.server
import importlib.util
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from gguf_construct.commands import main as cli
from gguf_construct.docgen import site

pytestmark = pytest.mark.skipif(
    bool(site.missing_requirements()), reason='needs the [docs] extra: pip install -e ".[docs]"'
)

HREF_RE = re.compile(r'<(?:a|link)\b[^>]*\bhref="([^"]*)"')
SRC_RE = re.compile(r'<(?:img|script)\b[^>]*\bsrc="([^"]*)"')
ID_RE = re.compile(r'\bid="([^"]*)"')


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    assert cli.main(["docs", "--site", str(out)]) == 0
    return out


def test_site_has_every_page_and_picture(built):
    assert (built / "index.html").is_file()
    assert (built / "tensor-types.html").is_file()
    assert (built / "architectures" / "qwen2.html").is_file()
    assert len(list((built / "architectures").glob("*.html"))) >= 150
    assert (built / "pictures" / "block-q4_k.svg").is_file()
    assert (built / "search" / "search_index.json").is_file()
    assert not list(built.rglob("*.md")), "Markdown sources are not part of the site"
    index = (built / "index.html").read_text(encoding="utf-8")
    assert re.search(
        r'<li>\s*<a href="tensor-types.html">Tensor types</a>[^<]*<ul>\s*<li>\s*<a href="tensor-types.html#'
        r'tensor-types-summary">',
        index,
    ), "the index nests each page's sections"
    assert "fonts.googleapis.com" not in index, "the site makes no third-party requests"


def test_every_internal_link_and_anchor_resolves(built):
    ids: dict[Path, set[str]] = {}

    def anchors(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = set(ID_RE.findall(path.read_text(encoding="utf-8")))
        return ids[path]

    broken = []
    pages = sorted(built.rglob("*.html"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for raw in HREF_RE.findall(text) + SRC_RE.findall(text):
            target = html.unescape(raw)
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith("mailto:"):
                continue
            if not parts.path:
                path = page
            elif parts.path.startswith("/"):  # 404.html links from the site's root
                path = (built / unquote(parts.path).lstrip("/")).resolve()
            else:
                path = (page.parent / unquote(parts.path)).resolve()
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{page.relative_to(built)}: {raw}")
            elif parts.fragment and path.suffix == ".html" and unquote(parts.fragment) not in anchors(path):
                broken.append(f"{page.relative_to(built)}: {raw} (no such anchor)")
    assert len(pages) > 160
    assert not broken, broken[:20]


def test_every_markdown_table_renders_as_a_table():
    """Python-Markdown (what MkDocs renders with) sees every table of docs/ as one (a table must start its line)."""
    import markdown

    docs = Path(__file__).resolve().parent.parent / "docs"
    wrong = []
    for path in sorted(docs.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        rendered = markdown.markdown(text, extensions=["tables", "attr_list", "md_in_html"]).count("<table>")
        expected = sum(1 for line in text.splitlines() if re.match(r"^\|:?---", line))
        if rendered != expected:
            wrong.append(f"{path.name}: {rendered} of {expected}")
    assert not wrong, wrong


def test_no_table_has_an_empty_header(built):
    empty = []
    for page in sorted(built.rglob("*.html")):
        for head in re.findall(r"<thead>(.*?)</thead>", page.read_text(encoding="utf-8"), re.S):
            cells = re.findall(r"<th\b[^>]*>(.*?)</th>", head, re.S)
            if any(not re.sub(r"<[^>]*>", "", c).strip() for c in cells):
                empty.append(f"{page.relative_to(built)}: {cells}")
    assert not empty, empty[:10]


def test_rules_overview_is_a_table_of_the_rule_fields(built):
    text = (built / "rules.html").read_text(encoding="utf-8")
    overview = text[text.index('id="rules-overview"') : text.index('id="rule-groups"')]
    heads = re.findall(r"<th\b[^>]*>(.*?)</th>", overview)
    assert "field of a rule" in heads
    for field in ("severity", "profiles.ggml", "profiles.llama.cpp", "applies_to", "load: refuse"):
        assert f"<td><code>{field}</code></td>" in overview, field
    longest = max(len(re.sub(r"<[^>]*>", "", p)) for p in re.findall(r"<p>(.*?)</p>", overview, re.S))
    assert longest < 400, "the overview's prose is laid out in the table, not one paragraph"


def test_pictures_are_shown_large_enough_for_their_labels(built):
    html_text = (built / "tensor-types.html").read_text(encoding="utf-8")
    shown = re.findall(
        r'<a class="gguf-picture" href="([^"]+)"[^>]*><img src="\1" alt="[^"]*" width="(\d+)"', html_text
    )
    assert len(shown) == 35
    for src, width in shown:
        svg = (built / src).read_text(encoding="utf-8")
        natural = float(re.search(r'<svg\b[^>]*\bwidth="([0-9.]+)"', svg).group(1))
        smallest = min(float(f) for f in re.findall(r'font-size="([0-9.]+)"', svg))
        assert int(width) >= natural, "never shrunk"
        assert smallest * int(width) / natural >= 10, (src, width)


def test_site_refuses_a_folder_with_other_files(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    assert cli.main(["docs", "--site", str(tmp_path)]) == 2
    assert "not an earlier site" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "mine"


def _chromium() -> str | None:
    return os.environ.get("GGUF_CONSTRUCT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser_page(built):
    if importlib.util.find_spec("playwright") is None:
        pytest.skip('needs playwright: pip install -e ".[docs-test]"')
    executable = _chromium()
    if executable is None:
        pytest.skip("needs Chromium (apt-get install chromium, or GGUF_CONSTRUCT_CHROMIUM=PATH)")
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            yield page, f"http://127.0.0.1:{server.server_port}/"
            browser.close()
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def _shots(built: Path) -> Path:
    folder = Path(os.environ.get("GGUF_CONSTRUCT_SCREENSHOTS") or built.parent / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize(
    "url, name, pictures",
    [
        ("index.html", "index", 0),
        ("tensor-types.html#tt-q4_k", "tensor-type", 35),
        ("format.html", "format", 5),  # v3 in the overview, each version, the differences
        ("architectures/qwen2.html", "architecture", 0),
    ],
)
def test_pages_render_in_chromium(browser_page, built, url, name, pictures):
    page, base = browser_page
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(r.url))
    response = page.goto(base + url)
    assert response is not None and response.status == 200
    page.wait_for_load_state("networkidle")
    assert "GGUF reference" in page.title()
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => [e.getAttribute('src'), e.complete && e.naturalWidth, e.naturalHeight])"
    )
    assert len([i for i in images if "pictures/" in i[0]]) == pictures
    not_rendered = [src for src, width, height in images if not width or height < 50]
    assert not not_rendered, not_rendered
    nav = page.eval_on_selector_all("nav.md-nav a.md-nav__link", "els => els.map(e => e.href)")
    assert len(nav) > 10
    shot = _shots(built) / f"{name}.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if name == "architecture":
        assert page.locator("article table").count() >= 2  # its keys and its tensors
    assert not failed, failed


@pytest.mark.parametrize("query, page_file", [("Q4_K", "tensor-types.html"), ("qwen2", "architectures/qwen2.html")])
def test_search_finds(browser_page, built, query, page_file):
    page, base = browser_page
    page.goto(base + "index.html")
    page.wait_for_load_state("networkidle")
    page.keyboard.press("/")  # Material's shortcut to the search box
    # the index builds in a worker ("Initializing search"); a query typed before it is ready is never run
    page.wait_for_function(
        "() => { const m = document.querySelector('.md-search-result__meta');"
        " return m !== null && m.textContent.trim() === 'Type to start searching'; }",
        timeout=90_000,
    )
    page.locator("input.md-search__input").press_sequentially(query)  # key by key, as a reader types
    page.wait_for_function(
        "q => [...document.querySelectorAll('.md-search-result__item a')]"
        ".some(a => new URL(a.href).searchParams.get('h') === q)",
        arg=query.lower(),
        timeout=30_000,
    )
    hits = page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.href)")
    assert any(urlsplit(h).path.endswith("/" + page_file) for h in hits), hits[:10]
    page.screenshot(path=str(_shots(built) / f"search-{query}.png"))
    first = urljoin(base, urlsplit(hits[0]).path)
    assert page.request.get(first).status == 200


# what a reader of a 1280 px window sees: tables inside the text column, pictures' smallest labels >= 10 px
_LAYOUT_JS = """() => {
  const article = document.querySelector('article').getBoundingClientRect();
  const scrolls = el => { for (let e = el; e && e.tagName !== 'ARTICLE'; e = e.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.getBoundingClientRect().right <= article.right + 1)
        return true; }
    return false; };
  const tables = [...document.querySelectorAll('article table')].map(t => {
    const r = t.getBoundingClientRect();
    return {right: r.right - article.right, fits: r.right <= article.right + 1, scrolls: scrolls(t),
            head: t.querySelector('th') ? t.querySelector('th').textContent.trim() : ''}; });
  const pictures = [...document.querySelectorAll('article img')].filter(i => i.getAttribute('src').includes('pictures/'))
    .map(i => ({src: i.getAttribute('src'), scale: i.getBoundingClientRect().width / i.naturalWidth,
                inside: i.closest('a.gguf-picture') !== null && scrolls(i)}));
  return {page: document.documentElement.scrollWidth, width: window.innerWidth, tables, pictures};
}"""


@pytest.mark.parametrize(
    "url",
    [
        "index.html",
        "tensor-types.html",
        "format.html",
        "rules.html",
        "errata.html",
        "keys.html",
        "architectures/qwen2.html",
        "architectures.html",
        "security.html",
    ],
)
def test_tables_and_pictures_fit_a_1280_px_window(browser_page, built, url):
    page, base = browser_page
    page.goto(base + url)
    page.wait_for_load_state("networkidle")
    layout = page.evaluate(_LAYOUT_JS)
    assert layout["page"] <= layout["width"], "the page itself scrolls sideways"
    overflowing = [t for t in layout["tables"] if not (t["fits"] or t["scrolls"])]
    assert not overflowing, overflowing[:5]
    small = []
    for pic in layout["pictures"]:
        svg = (built / Path(url).parent / pic["src"]).read_text(encoding="utf-8")
        smallest = min(float(f) for f in re.findall(r'font-size="([0-9.]+)"', svg))
        if smallest * pic["scale"] < 10 or not pic["inside"]:
            small.append((pic["src"], round(smallest * pic["scale"], 1)))
    assert not small, small[:5]
    page.screenshot(path=str(_shots(built) / f"layout-{url.replace('/', '-')}.png"), full_page=False)
