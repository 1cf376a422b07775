"""Jinja's string and sequence filters and Python's ``str`` methods computed on constant values, for the template
analysis of :mod:`.jinja_values`: what ``'ssalc__'|reverse``, ``('__class__'|tojson)[1:-1]`` or
``'x__init__'.lstrip('x')`` give when a plain jinja2 Environment renders them, without rendering anything.

Values are the analysis's constants: ``str``, ``int``, ``bool`` and ``tuple`` (a Jinja list or tuple).  Each fold
returns the value, :data:`UNKNOWN` when it does not model the inputs (a type, a keyword, a result longer than the
budget ``limit``, a string whose HTML escaping would depend on markup), or an :class:`AnyOf` when the filter may give
any of several values (``random``).  An exception other than :class:`Unfoldable` is what the renderer would raise
too: the analysis drops that combination.  Which filters and methods fold is declared in spec/templates.yaml
(``values.filters.fold``, ``values.methods``); a test holds this table to it and to jinja2's own rendering.
"""

from __future__ import annotations

import json
import pprint
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import quote_from_bytes

__all__ = ["UNKNOWN", "AnyOf", "fold_filter", "fold_method", "FILTERS", "METHODS", "safe_format", "size", "cost"]


class _Unknown:
    """A fold that gives no constant."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class Unfoldable(Exception):
    """The inputs are not ones the fold models (it gives :data:`UNKNOWN`)."""


@dataclass(frozen=True)
class AnyOf:
    """A filter result that may be any of ``values``."""

    values: tuple


_SAFE_FORMAT = re.compile(r"\A(?:[^{}%]|\{\d*\}|%[sdrc%])*\Z")
_WORD_START = re.compile(r"([-\s({\[<]+)")  # where the title filter starts a word
_HTML_SPECIAL = frozenset("&<>\"'")


def safe_format(template: str) -> bool:
    """``template`` uses only positional ``{}``/``{0}`` fields and ``%s %d %r %c %%`` conversions."""
    return bool(_SAFE_FORMAT.match(template))


# -- coercions ---------------------------------------------------------------------------------------------------
def _text(value) -> str:
    """What Jinja's soft_str makes of a constant (a list's repr is not modelled)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):  # bool among them: str(True) is 'True', as in jinja
        return str(value)
    raise Unfoldable


def _string(value) -> str:
    if not isinstance(value, str):
        raise Unfoldable
    return value


def _count(value, limit: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) > limit:
        raise Unfoldable
    return value


def _items(value) -> tuple:
    """What iterating over a constant gives."""
    if isinstance(value, str):
        return tuple(value)
    if isinstance(value, tuple):
        return value
    raise Unfoldable


def _plain(items: tuple) -> tuple:
    if not all(isinstance(i, (str, int)) for i in items):
        raise Unfoldable
    return items


def size(value) -> int:
    """The characters of a constant, its strings counted whole however often a sequence repeats them."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, tuple):
        return len(value) + sum(map(size, value))
    return 1


def _within(length: int, limit: int) -> None:
    if length > limit:
        raise Unfoldable


def _no_attribute(attribute) -> None:
    if attribute is not None:
        raise Unfoldable  # attribute-named filters are followed by the scanner, not folded


def _caseless(case_sensitive: bool):
    return None if case_sensitive else (lambda v: v.lower() if isinstance(v, str) else v)


# -- filters -----------------------------------------------------------------------------------------------------
def _join(limit, value, d="", attribute=None):
    _no_attribute(attribute)
    parts = [_text(p) for p in _plain(_items(value))]
    sep = _text(d)
    _within(sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0), limit)
    return sep.join(parts)


def _formatted(template: str, args: tuple, limit: int, field: str) -> str:
    """``template % args`` (``field`` ``%``) or ``template.format(*args)`` (``field`` ``{``), within ``limit``."""
    if not safe_format(template):
        raise Unfoldable
    _plain(args)
    _within(len(template) + template.count(field) * max((len(_text(a)) for a in args), default=0), limit)
    return template % args if field == "%" else template.format(*args)


def _format_filter(limit, value, *args, **kwargs):
    if kwargs:
        raise Unfoldable
    return _formatted(_text(value), args, limit, "%")


def _reverse(limit, value):
    if isinstance(value, (str, tuple)):
        return value[::-1]
    raise Unfoldable


def _title(limit, value):
    return "".join(w[0].upper() + w[1:].lower() for w in _WORD_START.split(_text(value)) if w)


def _trim(limit, value, chars=None):
    return _text(value).strip(None if chars is None else _string(chars))


def _replace(limit, value, old, new, count=None):
    s, old, new = _text(value), _text(old), _text(new)
    count = -1 if count is None else _count(count, limit)
    n = s.count(old) if old else len(s) + 1
    _within(len(s) + (n if count < 0 else min(n, count)) * len(new), limit)
    return s.replace(old, new, count)


def _escape(limit, value):
    s = _text(value)
    if _HTML_SPECIAL.intersection(s):
        raise Unfoldable  # the result is markup, which later operations treat differently
    return s


def _end(index: int):
    def fold(limit, value):
        items = _items(value)
        if not items:
            raise Unfoldable  # undefined when rendered
        return items[index]

    return fold


def _center(limit, value, width=80):
    return _text(value).center(_count(width, limit))


def _truncate(limit, value, length=255, killwords=False, end="...", leeway=None):
    s, end = _string(value), _string(end)
    length = _count(length, limit)
    leeway = 5 if leeway is None else _count(leeway, limit)  # jinja2's truncate.leeway policy
    if length < len(end) or leeway < 0:
        raise ValueError("truncate: length shorter than end, or negative leeway")
    if len(s) <= length + leeway:
        return s
    kept = s[: length - len(end)]
    return (kept if killwords else kept.rsplit(" ", 1)[0]) + end


def _indent(limit, value, width=4, first=False, blank=False):
    s = _string(value)
    pad = width if isinstance(width, str) else " " * _count(width, limit)
    lines = (s + "\n").splitlines()
    _within(len(s) + (len(lines) + 1) * len(pad) + len(lines), limit)
    if blank:
        out = ("\n" + pad).join(lines)
    else:
        out = lines[0] + "".join("\n" + (pad + line if line else line) for line in lines[1:])
    return pad + out if first else out


def _wordwrap(limit, value, width=79, break_long_words=True, wrapstring=None, break_on_hyphens=True):
    s = _string(value)
    sep = "\n" if wrapstring is None else _string(wrapstring)
    _within(len(s) * (len(sep) + 1), 4 * limit)
    return sep.join(
        sep.join(
            textwrap.wrap(
                line,
                width=_count(width, limit),
                expand_tabs=False,
                replace_whitespace=False,
                break_long_words=bool(break_long_words),
                break_on_hyphens=bool(break_on_hyphens),
            )
        )
        for line in s.splitlines()
    )


def _striptags(limit, value):
    s = _text(value)
    if "<" in s or "&" in s:
        raise Unfoldable  # tags and entities are not modelled
    return " ".join(s.split())


def _urlencode(limit, value):
    return quote_from_bytes(_text(value).encode("utf-8"), "/")


def _tojson(limit, value, indent=None):
    if indent is not None:
        _count(indent, limit)
    _within(6 * size(value) + 2, 4 * limit)  # at most 6 characters of JSON per character
    out = json.dumps(value, sort_keys=True, indent=indent)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        out = out.replace(char, code)
    return out


def _sort(limit, value, reverse=False, case_sensitive=False, attribute=None):
    _no_attribute(attribute)
    return tuple(sorted(_plain(_items(value)), key=_caseless(case_sensitive), reverse=bool(reverse)))


def _unique(limit, value, case_sensitive=False, attribute=None):
    _no_attribute(attribute)
    key = _caseless(case_sensitive) or (lambda v: v)
    seen, out = set(), []
    for item in _plain(_items(value)):
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return tuple(out)


def _extreme(pick):
    def fold(limit, value, case_sensitive=False, attribute=None):
        _no_attribute(attribute)
        items = _plain(_items(value))
        if not items:
            raise Unfoldable
        return pick(items, key=_caseless(case_sensitive))

    return fold


def _batch(limit, value, linecount, fill_with=None):
    items, size = _items(value), _count(linecount, limit)
    if size < 1:
        raise Unfoldable
    _within(len(items) + size, limit)
    rows = [items[i : i + size] for i in range(0, len(items), size)]
    if rows and fill_with is not None:
        rows[-1] = rows[-1] + (fill_with,) * (size - len(rows[-1]))
    return tuple(rows)


def _slice(limit, value, slices, fill_with=None):
    items, count = _items(value), _count(slices, limit)
    if count < 1:
        raise Unfoldable
    _within(len(items) + count, limit)
    per, extra = divmod(len(items), count)
    rows, start = [], 0
    for number in range(count):
        end = start + per + (number < extra)
        rows.append(items[start:end] + ((fill_with,) if fill_with is not None and number >= extra else ()))
        start = end
    return tuple(rows)


def _random(limit, value):
    items = _items(value)
    if not items:
        raise Unfoldable
    return AnyOf(items)


def _pprint(limit, value):
    if not isinstance(value, (str, int)):
        raise Unfoldable  # a list and a tuple print differently, and the analysis does not tell them apart
    return pprint.pformat(value)


def _length(limit, value):
    return len(_items(value))


def _map(limit, value, name=None, *args, **kwargs):
    if not isinstance(name, str) or name not in FILTERS or name == "map" or "attribute" in kwargs:
        raise Unfoldable
    out, total = [], 0
    for item in _items(value):
        folded = fold_filter(name, item, args, kwargs, limit)
        if folded is UNKNOWN or isinstance(folded, AnyOf):
            raise Unfoldable
        total += size(folded)
        _within(total, limit)
        out.append(folded)
    return tuple(out)


def _on_text(transform):
    """A filter that applies ``transform`` to what soft_str makes of the value."""

    def fold(limit, value):
        return transform(_text(value))

    return fold


def _list(limit, value):
    return _items(value)


FILTERS: dict[str, Callable[..., Any]] = {
    "join": _join,
    "format": _format_filter,
    "reverse": _reverse,
    "lower": _on_text(str.lower),
    "upper": _on_text(str.upper),
    "title": _title,
    "capitalize": _on_text(str.capitalize),
    "trim": _trim,
    "replace": _replace,
    "string": _on_text(str),
    "e": _escape,
    "escape": _escape,
    "forceescape": _escape,
    "safe": _on_text(str),
    "list": _list,
    "first": _end(0),
    "last": _end(-1),
    "center": _center,
    "truncate": _truncate,
    "indent": _indent,
    "wordwrap": _wordwrap,
    "striptags": _striptags,
    "urlencode": _urlencode,
    "tojson": _tojson,
    "sort": _sort,
    "unique": _unique,
    "min": _extreme(min),
    "max": _extreme(max),
    "batch": _batch,
    "slice": _slice,
    "random": _random,
    "pprint": _pprint,
    "length": _length,
    "count": _length,
    "map": _map,
}


# -- str methods -------------------------------------------------------------------------------------------------
def _str_method(name: str, widens: bool = False):
    """A ``str`` method called as Python does; ``widens``: its first argument is a width, bounded by ``limit``."""
    method = getattr(str, name)

    def fold(limit, value, *args, **kwargs):
        s = _string(value)
        if not all(a is None or isinstance(a, (str, int)) for a in (*args, *kwargs.values())):
            raise Unfoldable
        if widens:
            _within(_count(args[0], limit) if args else 0, limit)
        return method(s, *args, **kwargs)

    return fold


def _join_method(limit, value, iterable, /):
    for item in _items(iterable):
        _string(item)  # str.join takes strings only
    return _join(limit, iterable, _string(value))


def _format_method(limit, value, *args, **kwargs):
    if kwargs:
        raise Unfoldable
    return _formatted(_string(value), args, limit, "{")


def _replace_method(limit, value, old, new, count=-1, /):
    return _replace(limit, _string(value), _string(old), _string(new), None if count == -1 else count)


def _expandtabs(limit, value, tabsize=8):
    s = _string(value)
    _within(len(s) * max(_count(tabsize, limit), 1), 4 * limit)
    return s.expandtabs(tabsize)


METHODS: dict[str, Callable[..., Any]] = {
    **{
        name: _str_method(name)
        for name in (
            "lower",
            "upper",
            "title",
            "capitalize",
            "casefold",
            "swapcase",
            "strip",
            "lstrip",
            "rstrip",
            "removeprefix",
            "removesuffix",
            "split",
            "rsplit",
            "partition",
            "rpartition",
            "splitlines",
        )
    },
    **{name: _str_method(name, widens=True) for name in ("center", "ljust", "rjust", "zfill")},
    "join": _join_method,
    "format": _format_method,
    "replace": _replace_method,
    "expandtabs": _expandtabs,
}


# work per character of the folds that cost more than a pass over their input and output (measured: a wordwrap
# takes about as long per character as 64 replaces); the template analysis spends its fold_work budget by them
_FILTER_COST = {"wordwrap": 64, "title": 16, "map": 64}  # map: the dearest filter it may apply
_METHOD_COST = {"split": 8, "rsplit": 8, "splitlines": 8, "title": 4}


def cost(fold, name: str) -> int:
    """The work per character of the filter (``fold`` is :func:`fold_filter`) or method ``name``."""
    return (_FILTER_COST if fold is fold_filter else _METHOD_COST).get(name, 1)


def _apply(table: dict, name: str, value, args: tuple, kwargs: dict, limit: int):
    fold = table.get(name)
    if fold is None:
        return UNKNOWN
    try:
        result = fold(limit, value, *args, **kwargs)
    except Unfoldable:
        return UNKNOWN
    return tuple(result) if isinstance(result, list) else result


def fold_filter(name: str, value, args: tuple, kwargs: dict, limit: int):
    """``value|name(*args, **kwargs)`` on constants (``limit``: the longest string or sequence to build)."""
    return _apply(FILTERS, name, value, args, kwargs, limit)


def fold_method(name: str, value, args: tuple, kwargs: dict, limit: int):
    """``value.name(*args, **kwargs)`` on constants, for the ``str`` methods of :data:`METHODS`."""
    return _apply(METHODS, name, value, args, kwargs, limit)
