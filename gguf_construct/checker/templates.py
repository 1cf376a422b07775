"""The chat-template rules (TPL-*): every template of the file, whatever its value type, through the static scan
(:mod:`.jinja_scan`) and the render oracle (:mod:`.template_render`, :mod:`.template_oracle`).

Templates are the values of ``tokenizer.chat_template`` and ``tokenizer.chat_template.<name>`` (a STRING, or an
ARRAY of STRING: its pieces joined, and each piece on its own) and any other STRING value that is a Jinja template
with statements (TPL-STRAY).  Nothing here runs, and jinja2 is not imported, unless such a value exists.  Each
whole template is rendered in a sandboxed worker process while the static scan runs (not with ``--no-render``).
"""

from __future__ import annotations

from typing import Iterator

from ..format import spec as _spec
from ..format.lazystring import LazyString, text_nbytes
from . import jinja_scan, template_oracle, template_render
from .template_contexts import settings as _render_settings
from ..rulebook.catalog import Hit, rule
from ..rulebook.walk import ARRAY, KV, STRING, Context

__all__ = ["template_values", "MAX_PIECES"]

# an ARRAY template's pieces are also scanned one by one when there are at most this many
MAX_PIECES = 64


def _is_template_key(key: str, keys: dict) -> bool:
    """``key`` names a chat template (``keys``: templates.yaml's ``keys`` section)."""
    return key in keys["exact"] or key.startswith(keys["prefix"])


def template_values(ctx: Context) -> list[tuple[KV, list[str], bool]]:
    """(KV pair, texts to scan, is a chat-template key) for every template of the file (once per file).  Another
    STRING value with statements is a template when jinja2 parses it; past ``file_bytes`` of such values the
    rest are taken as templates unparsed (and scanned lexically), so their number does not make a file slow."""
    return ctx.derived("templates", _find_templates)


def _find_templates(ctx: Context) -> list[tuple[KV, list[str], bool]]:
    out = []
    keys = _spec.load_yaml("templates.yaml")["keys"]
    marker = keys["statement_marker"]
    parse_budget = jinja_scan.limit("file_bytes")  # characters of other values jinja2 parses to tell templates
    exact, prefix = keys["exact"], keys["prefix"]
    for kv in ctx.kvs:
        if kv.key in exact or kv.key.startswith(prefix):  # _is_template_key, inline: it runs once per key
            if kv.vtype == STRING:
                out.append((kv, [kv.value], True))
            elif kv.vtype == ARRAY and kv.value.type == STRING and kv.value.data:
                pieces = [str(p) for p in kv.value.data]
                texts = ["".join(pieces)]
                if 1 < len(pieces) <= MAX_PIECES:
                    texts += pieces
                out.append((kv, texts, True))
        elif kv.vtype == STRING and marker[0] in kv.value and marker in kv.value:  # memchr first: fast on long values
            # past the budget, a value with statements counts as a template without being parsed
            if len(kv.value) > parse_budget or jinja_scan.is_template(kv.value):
                out.append((kv, [kv.value], False))
            parse_budget -= min(len(kv.value), parse_budget)
    return out


def _scan_view(text: LazyString) -> tuple:
    """The issues of a template too long to hold (a value read lazily stays a view: it is far past the size
    analysed or rendered): TPL-LIMIT and the lexical scan over its chunks."""
    return (
        jinja_scan.Issue(jinja_scan.LIMIT, f"{text.nbytes} bytes", "", jinja_scan.limit("bytes")),
        *jinja_scan.lexical_chunks(text.iter_chunks()),
    )


def _scans(ctx: Context) -> dict[str, tuple]:
    """The issues of every template text of the file, each text scanned once.  Texts are analysed in full in file
    order while their total stays within ``file_bytes`` (spec/templates.yaml); past it a text gets the lexical scan
    only, so a file of many large templates costs no more than a few."""
    budget = jinja_scan.limit("file_bytes")
    out: dict[str, tuple] = {}
    renders = _start_renders(ctx)
    for _, texts, _ in template_values(ctx):
        for text in texts:
            if text in out:
                continue
            if isinstance(text, LazyString):
                out[text] = _scan_view(text)
                continue
            analysed = len(text) <= jinja_scan.limit("bytes")  # scan() looks at a larger one lexically: no cost
            if not analysed or len(text) <= budget:
                out[text] = jinja_scan.scan(text)
                budget -= len(text) if analysed else 0
            else:
                out[text] = jinja_scan.scan_lexically(
                    text,
                    "the file's templates are past the characters analysed per file",
                    jinja_scan.limit("file_bytes"),
                )
    for text, pending in renders.items():
        out[text] = _with_renders(text, out.get(text, ()), pending.result())
    return out


def _start_renders(ctx: Context) -> dict:
    """Renders of each whole template (within ``max_chars`` and the per-file budget), started in the render
    workers before the static scan so both run at once; none when rendering is off (``--no-render``)."""
    if not template_values(ctx) or not template_render.rendering_enabled():
        return {}
    budget, most = jinja_scan.limit("file_bytes"), _render_settings()["max_chars"]
    pending: dict = {}
    for _, texts, _ in template_values(ctx):
        text = texts[0]
        if isinstance(text, LazyString) or text in pending or len(text) > most or len(text) > budget:
            continue
        budget -= len(text)
        pending[text] = template_render.render_soon(text)
    return pending


def _with_renders(text: str, static: tuple, result: dict) -> tuple:
    """The static issues of ``text`` (their lines said to be unrendered when no context ran them) and what its
    renders prove."""
    found = template_oracle.render_issues(result)
    if any(i.kind in (jinja_scan.ESCAPE, jinja_scan.SUSPICIOUS) and i.line for i in static):
        traced = template_render.render(text, True)
        if "unrendered" in traced:
            static = tuple(template_oracle.annotate_lines(list(static), set(traced["unrendered"])))
    return tuple(dict.fromkeys((*static, *found)))


def _issues(ctx: Context, kind: str) -> Iterator[Hit]:
    scans = ctx.derived("template_scans", _scans)
    for kv, texts, _ in template_values(ctx):
        seen = set()
        for i, text in enumerate(texts):
            if i and kind in (jinja_scan.UNPARSED, jinja_scan.LIMIT):
                break  # the pieces of an ARRAY template need not parse on their own
            for issue in scans[text]:
                if issue.kind == kind and (issue.problem, issue.construct) not in seen:
                    seen.add((issue.problem, issue.construct))
                    yield Hit(
                        kv.value_offset,
                        f"{kv.path}.value",
                        key=kv.key,
                        problem=issue.problem,
                        construct=issue.construct,
                        limit=issue.limit,
                    )


@rule("TPL-ESCAPE")
def _escape(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.ESCAPE)


@rule("TPL-GADGET")
def _gadget(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.GADGET)


@rule("TPL-SUSPICIOUS")
def _suspicious(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.SUSPICIOUS)


@rule("TPL-UNPARSED")
def _unparsed(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.UNPARSED)


@rule("TPL-LIMIT")
def _limit(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.LIMIT)


@rule("TPL-RESOURCE")
def _resource(ctx: Context) -> Iterator[Hit]:
    return _issues(ctx, jinja_scan.RESOURCE)


@rule("TPL-STRAY")
def _stray(ctx: Context) -> Iterator[Hit]:
    for kv, texts, is_chat_key in template_values(ctx):
        if not is_chat_key:
            yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, count=text_nbytes(texts[0]))
