"""A small SVG writer for the generated pictures: boxes, text and lines, written deterministically (fixed number
formatting, elements in drawing order, no ids or timestamps), so regenerating gives the same bytes."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

__all__ = ["Svg", "text_width", "FONT", "FONT_SIZE"]

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
FONT_SIZE = 11


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """The drawn width of ``text`` in the monospace font (0.6 em per character)."""
    return 0.6 * size * len(text)


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


class Svg:
    """An SVG picture built element by element; :meth:`render` gives the document text."""

    def __init__(self, width: float, title: str) -> None:
        self.width = width
        self.height = 0.0
        self.title = title
        self._parts: list[str] = []

    def _grow(self, y: float) -> None:
        self.height = max(self.height, y)

    def rect(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        fill: str,
        stroke: str = "#333",
        tooltip: str | None = None,
        dash: bool = False,
    ) -> None:
        """A box; ``tooltip`` is shown when hovering it."""
        attrs = f'x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{fill}" stroke="{stroke}"'
        if dash:
            attrs += ' stroke-dasharray="4 3"'
        if tooltip:
            self._parts.append(f"<rect {attrs}><title>{escape(tooltip)}</title></rect>")
        else:
            self._parts.append(f"<rect {attrs}/>")
        self._grow(y + h)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = FONT_SIZE,
        anchor: str = "start",
        bold: bool = False,
        fill: str = "#111",
    ) -> None:
        """Text with its baseline at ``y``; ``anchor`` is start, middle or end."""
        weight = ' font-weight="bold"' if bold else ""
        self._parts.append(
            f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}"'
            f' fill="{fill}"{weight}>{escape(text)}</text>'
        )
        self._grow(y + size * 0.3)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#777", dash: bool = False) -> None:
        """A straight line."""
        extra = ' stroke-dasharray="3 3"' if dash else ""
        self._parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{stroke}"{extra}/>')
        self._grow(max(y1, y2))

    def render(self, margin: float = 8) -> str:
        """The SVG document (UTF-8 text ending in a newline)."""
        h = self.height + margin
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(self.width)}" height="{_n(h)}" '
            f'viewBox="0 0 {_n(self.width)} {_n(h)}" font-family={quoteattr(FONT)} role="img">'
        )
        body = [
            head,
            f"<title>{escape(self.title)}</title>",
            f'<rect x="0" y="0" width="{_n(self.width)}" height="{_n(h)}" fill="#ffffff"/>',
            *self._parts,
            "</svg>",
        ]
        return "\n".join(body) + "\n"
