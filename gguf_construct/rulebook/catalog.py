"""The rule catalog (spec/rules.yaml) and the registry of rule predicates.

Severities, titles and message templates live only in ``spec/rules.yaml``; code refers to rules by ID.  A rule is
checked either by one predicate registered with :func:`rule` or, when only the structural walk can see it (a
truncated record, an unreadable string), it is declared with :func:`structural` and reported by the walk.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..format import spec as _spec
from ..format.lazystring import LazyString
from ..base.text import printable

__all__ = [
    "Rule",
    "Hit",
    "Finding",
    "catalog",
    "catalog_order",
    "get",
    "severity",
    "format_message",
    "rule",
    "structural",
    "predicates",
    "structural_rules",
    "across_files",
    "across_files_rules",
    "implemented",
    "PROFILES",
    "SEVERITY_RANK",
    "OFF",
    "PROFILE_FALLBACK",
    "PRACTICE_EXEMPT",
    "matches",
    "findings_per_rule",
    "kept_per_rule",
    "shown_hits",
    "hits_at",
    "first_of_each",
    "capped",
]

PROFILES = ("spec", "ggml", "llama.cpp")
# a profile a rule does not name takes the verdict of another: llama.cpp reads the container with ggml's reader
PROFILE_FALLBACK = {"llama.cpp": "ggml"}
OFF = "off"  # the rule is not checked under that profile
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# profiles that describe llama.cpp's own behaviour: a deviation from gguf.md that llama.cpp makes on purpose (a hit
# naming an erratum as its ``practice``) is no finding there; under spec it is reported once per file with a count
PRACTICE_EXEMPT = ("ggml", "llama.cpp")


@dataclass(frozen=True)
class Rule:
    """One catalog entry of spec/rules.yaml."""

    id: str
    title: str
    doc: str
    message: str
    source: str
    profiles: dict
    raw: dict

    def severity(self, profile: str = "spec") -> str:
        """The verdict of this rule under ``profile`` (``off``: not checked there)."""
        while profile not in self.profiles and profile in PROFILE_FALLBACK:
            profile = PROFILE_FALLBACK[profile]
        return self.profiles[profile]


@dataclass
class Hit:
    """What a predicate reports: where, and the values for the rule's message template.

    ``practice`` names the erratum (spec/errata.yaml) that records this deviation as something llama.cpp does on
    purpose; see :data:`PRACTICE_EXEMPT`.
    ``repeat`` > 1: the hit also stands for that many
    - 1 more places of the same kind, past the findings ``check`` keeps per rule (:func:`hits_at`); they are
    counted, never shown.
    """

    offset: int | None
    path: str
    params: dict
    practice: str | None = None
    repeat: int = 1

    def __init__(self, offset: int | None = None, path: str = "", /, **params: Any):
        self.offset = offset
        self.path = path
        # a long value from the file is named by its start and length: a message never holds all of it
        self.params = {k: v.summary() if isinstance(v, LazyString) else v for k, v in params.items()}
        self.practice = None
        self.repeat = 1

    def on_purpose(self, erratum: str) -> "Hit":
        """Mark this hit as a deviation llama.cpp makes on purpose, explained by ``erratum``; returns the hit."""
        self.practice = erratum
        return self


@dataclass(frozen=True)
class Finding:
    """One problem: the rule it breaks, its severity under the chosen profile, a message, where it is.

    ``count`` > 1 when the finding stands for several places of the same kind (a deviation llama.cpp makes on
    purpose is reported once per file); ``offset`` and ``path`` are then those of the first.
    """

    rule: str
    severity: str
    message: str
    offset: int | None = None
    path: str = ""
    count: int = 1

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return asdict(self)


@functools.lru_cache(maxsize=None)
def catalog() -> dict[str, Rule]:
    """All rules of spec/rules.yaml by ID, in catalog order."""
    out = {}
    for r in _spec.load_yaml("rules.yaml")["rules"]:
        out[r["id"]] = Rule(r["id"], r["title"], r["doc"], r["message"], r["source"], dict(r["profiles"]), r)
    return out


def get(rule_id: str) -> Rule:
    """The catalog entry of ``rule_id`` (KeyError for unknown IDs)."""
    return catalog()[rule_id]


def matches(rule_id: str, patterns) -> bool:
    """True when ``rule_id`` is one of ``patterns`` or starts with one of them as a prefix (``KV`` and ``KV-``
    both select KV-KEY-HYPHEN; ``KV-KEY-HYPHEN`` selects that rule only)."""
    for pat in patterns:
        pat = pat.strip().upper()
        if pat and (rule_id == pat or rule_id.startswith(pat if pat.endswith("-") else pat + "-")):
            return True
    return False


def severity(rule_id: str, profile: str = "spec") -> str:
    """Severity of ``rule_id`` under ``profile`` (one of :data:`PROFILES`; ``off`` when not checked there)."""
    return catalog()[rule_id].severity(profile)


class _Params(dict):
    def __missing__(self, key: str) -> str:  # a template field the predicate did not supply
        return f"<{key}?>"


class _Escaped(str):
    """A string from the file: ``{x}`` escapes controls with :func:`printable`; ``{x!r}`` is repr (escaped too)."""

    def __format__(self, spec: str) -> str:
        return format(printable(str(self)), spec)


def format_message(rule_id: str, params: dict) -> str:
    """The rule's message template filled with ``params``; strings from the file come out with control and bidi
    characters escaped, so a message is safe to print."""
    template = catalog()[rule_id].message
    params = {k: _Escaped(v) if isinstance(v, str) else v for k, v in params.items()}
    try:
        return template.format_map(_Params(params))
    except (ValueError, TypeError, IndexError):  # a format spec that does not fit the supplied value
        return template + " " + ", ".join(f"{k}={v!r}" for k, v in params.items())


Predicate = Callable[[Any], Iterable[Hit]]
_PREDICATES: dict[str, Predicate] = {}
_STRUCTURAL: set[str] = set()
_ACROSS: set[str] = set()


def rule(rule_id: str) -> Callable[[Predicate], Predicate]:
    """Register the predicate of ``rule_id``: a function of the check context yielding :class:`Hit` objects."""

    def deco(fn: Predicate) -> Predicate:
        if rule_id in _PREDICATES:
            raise ValueError(f"rule {rule_id} already has a predicate")
        _PREDICATES[rule_id] = fn
        fn.rule_id = rule_id  # type: ignore[attr-defined]
        predicates.cache_clear()
        return fn

    return deco


def structural(*rule_ids: str) -> None:
    """Declare rules that the structural walk reports itself (no predicate)."""
    _STRUCTURAL.update(rule_ids)


def across_files(*rule_ids: str) -> None:
    """Declare rules checked over several files at once (shard sets), not per file."""
    _ACROSS.update(rule_ids)


def across_files_rules() -> frozenset[str]:
    """Rules checked over sets of files."""
    return frozenset(_ACROSS)


def implemented() -> frozenset[str]:
    """Every rule ID that some predicate, the walk or a set check reports."""
    return frozenset(_PREDICATES) | frozenset(_STRUCTURAL) | frozenset(_ACROSS)


@functools.lru_cache(maxsize=1)
def catalog_order() -> dict[str, int]:
    """Each rule ID's position in the catalog."""
    return {rid: i for i, rid in enumerate(catalog())}


@functools.lru_cache(maxsize=1)
def predicates() -> tuple[tuple[str, Predicate], ...]:
    """Registered predicates in catalog order (unknown IDs last, so a typo still shows up in tests)."""
    order = catalog_order()
    return tuple((rid, _PREDICATES[rid]) for rid in sorted(_PREDICATES, key=lambda r: order.get(r, len(order))))


def structural_rules() -> frozenset[str]:
    """Rules reported by the structural walk."""
    return frozenset(_STRUCTURAL)


@functools.lru_cache(maxsize=1)
def findings_per_rule() -> int:
    """The most findings of one rule kept per file (``findings_per_rule`` in spec/rules.yaml): past it, hits are
    counted, never kept, so memory for findings is bounded whatever the file."""
    return int(_spec.load_yaml("rules.yaml")["meta"]["findings_per_rule"])


def kept_per_rule(asked: int | None = None) -> int:
    """How many findings of one rule are kept when ``asked`` (a ``--max-per-rule``; None or 0: as many as may be)
    are: never more than :func:`findings_per_rule`."""
    ceiling = findings_per_rule()
    return min(asked, ceiling) if asked else ceiling


def shown_hits(cache: dict, emitted: int, found: int) -> int:
    """How many of ``found`` more hits a predicate should make one by one when it has made ``emitted`` already:
    at most ``cache["max_hits"]`` (what ``check`` keeps per rule; never more than :func:`findings_per_rule`) in
    all; the rest go into one :class:`Hit` with ``repeat`` (counted, never shown), so a rule over millions of
    items makes a bounded number of hits."""
    return min(found, max(0, kept_per_rule(cache.get("max_hits")) - emitted))


def hits_at(
    cache: dict, where: Sequence[int] | np.ndarray, make: Callable[[int], Hit], emitted: int = 0
) -> Iterator[Hit]:
    """The hits of a rule that found something at each item of ``where`` (indices, in the order to report them):
    ``make(i)`` for the first :func:`shown_hits` of them, then one more standing for the rest (its ``repeat``), so
    that the Python work per rule is bounded however many items break it.  ``emitted``: hits of the rule made
    before (the limit is per rule)."""
    found = len(where)
    shown = shown_hits(cache, emitted, found)
    picked = where[: shown + 1]
    for k, i in enumerate(picked.tolist() if isinstance(picked, np.ndarray) else picked):
        hit = make(int(i))
        if k == shown:
            hit.repeat = found - shown
        yield hit


def capped(cache: dict, hits: Iterator[Hit], total: int) -> Iterator[Hit]:
    """The first :func:`shown_hits` of ``total`` hits a rule finds, taken from ``hits`` (made lazily, in the order
    to report them), then one more standing for the rest (its ``repeat``): the rest are never made."""
    shown = shown_hits(cache, 0, total)
    for k, hit in enumerate(hits):
        if k == shown:
            hit.repeat = total - shown
            yield hit
            return
        yield hit


def first_of_each(items: list) -> np.ndarray:
    """For each item of ``items`` (hashable), the index of its first occurrence (int64), found in C loops: a dict
    from each item to its first index, built from the back."""
    n = len(items)
    first = dict(zip(reversed(items), range(n - 1, -1, -1)))
    if len(first) == n:
        return np.arange(n, dtype=np.int64)
    return np.fromiter(map(first.__getitem__, items), dtype=np.int64, count=n)
