"""``check``: walk the file, run every rule predicate, turn hits into findings."""

from __future__ import annotations

import functools
import os
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..format.reader import open_source
from ..base.gcpause import without_gc
from ..base.remote import RemoteFile, remote_of
from . import data as _data_rules, metadata, model, naming  # noqa: F401 - importing registers the predicates
from . import security, templates  # noqa: F401 - issue #16: advisory and chat-template rules
from . import declared  # noqa: F401 - the rules spec/rules.yaml declares by a key_check alone
from .report import Finding, Report
from .shards import split_view
from ..rulebook.catalog import (
    OFF,
    PRACTICE_EXEMPT,
    PROFILES,
    Hit,
    catalog,
    findings_per_rule,
    format_message,
    kept_per_rule,
    matches,
    predicates,
    severity,
)
from ..rulebook import read_head
from ..rulebook.walk import Context, base_name, display_name
from ..format import keynames

__all__ = ["check", "check_buffer", "selected", "resolve", "Resolution", "MAX_FINDINGS_PER_RULE"]

MAX_FINDINGS_PER_RULE = findings_per_rule()  # spec/rules.yaml findings_per_rule: the most kept of one rule


def check(
    source,
    *,
    profile: str = "spec",
    data: bool = False,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    max_per_rule: int | None = MAX_FINDINGS_PER_RULE,
    progress: Callable[[int, int], None] | None = None,
    as_member: bool = False,
) -> "Report":
    """Check a GGUF file against every conformance rule and return a :class:`Report` of all findings.

    ``source`` is a path, a URL, a bytes-like object or a binary file object (as for :func:`gguf_construct.load`);
    a URL is read header-only (see :mod:`gguf_construct.base.remote`) and the report's ``transfer`` says what it cost.
    ``profile`` is "spec" (gguf.md's verdicts), "ggml" (what ggml's reader accepts) or "llama.cpp"; ``data=True``
    also looks inside the tensor data.  ``select``/``ignore`` are rule IDs or ID prefixes (``KV``, ``META-SPLIT``)
    as linters take them: only selected rules are checked, ignored ones never.  At most ``max_per_rule`` findings
    of one rule are listed (None: as many as spec/rules.yaml's ``findings_per_rule``, which is also the most
    ever kept); ``Report.counts`` always has the exact number.  ``progress(done, total)``
    is called with bytes during the ``data`` pass.  Never raises on malformed input; I/O errors (``OSError``)
    propagate.

    A split model is judged as llama.cpp loads it (:mod:`gguf_construct.format.splitset`): its first shard with every
    shard's tensors (found next to it), the findings about the set (missing, inconsistent or overlapping shards)
    in its report; a later shard on its own (container and split keys) plus META-SPLIT-LATER, llama.cpp's reason
    for refusing to open it, unless ``as_member`` says its set is being checked from the first shard too.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}")
    buf, path, keepalive = open_source(source)
    try:
        name = display_name(source, path)
        return check_buffer(
            buf,
            file=name,
            file_name=base_name(name),
            profile=profile,
            data=data,
            remote=remote_of(source, keepalive),
            select=select,
            ignore=ignore,
            max_per_rule=max_per_rule,
            progress=progress,
            location=path,
            as_member=as_member,
        )
    finally:
        del buf
        if keepalive is not None:
            try:
                keepalive.close()
            except BufferError:  # a view is still alive somewhere; the map is freed with it
                pass


def selected(
    rule_id: str, profile: str, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> bool:
    """True when ``rule_id`` is checked: known, not off under ``profile``, selected and not ignored."""
    known = catalog()
    if rule_id in known and severity(rule_id, profile) == OFF:
        return False
    if select and not matches(rule_id, select):
        return False
    return not (ignore and matches(rule_id, ignore))


@dataclass(frozen=True)
class Resolution:
    """What a rule's findings are under one profile and selection, resolved once per rule: whether it is checked,
    its severity, and whether its messages carry advisory annotations (:func:`.security.annotate`)."""

    rule_id: str
    checked: bool
    severity: str
    annotated: bool

    def finding(self, hit: Hit) -> Finding:
        """The finding of one hit: message filled (and annotated), severity, place."""
        message = format_message(self.rule_id, hit.params)
        if self.annotated:
            message = security.annotate(self.rule_id, message, hit.path, hit.params)
        return Finding(self.rule_id, self.severity, message, hit.offset, hit.path)


@functools.lru_cache(maxsize=4096)
def resolve(rule_id: str, profile: str, select: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> Resolution:
    """The :class:`Resolution` of a catalog rule under ``profile`` and a selection (one catalog question per rule
    and check, not four per finding)."""
    checked = selected(rule_id, profile, select, ignore)
    return Resolution(
        rule_id, checked, severity(rule_id, profile) if checked else OFF, bool(security.rule_advisories(rule_id))
    )


@functools.lru_cache(maxsize=64)
def _selected_predicates(profile: str, select: tuple[str, ...], ignore: tuple[str, ...], registered: tuple) -> tuple:
    return tuple((rule_id, fn) for rule_id, fn in registered if selected(rule_id, profile, select, ignore))


@without_gc  # the head's records and the findings are made in bulk (base/gcpause.py)
def check_buffer(
    buf,
    *,
    file: str | None = None,
    file_name: str | None = None,
    profile: str = "spec",
    data: bool = False,
    remote: RemoteFile | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    max_per_rule: int | None = MAX_FINDINGS_PER_RULE,
    progress: Callable[[int, int], None] | None = None,
    location: str | None = None,
    as_member: bool = False,
) -> Report:
    """Check an in-memory buffer; ``file_name`` (a bare name) enables the naming rules.  ``remote`` is the
    :class:`~gguf_construct.base.remote.RemoteFile` whose view ``buf`` is: the head is then fetched as the walk needs
    it and the data only with ``data=True``.  ``location`` (a path or URL) is where the other shards of a split
    model are looked for.  The other arguments are those of :func:`check`."""
    if max_per_rule is not None and max_per_rule < 1:
        raise ValueError("max_per_rule must be at least 1 (None: the spec's findings_per_rule)")
    select, ignore = tuple(select or ()), tuple(ignore or ())
    view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
    limit = kept_per_rule(max_per_rule)
    fields: dict[str, Any] = {
        "file": file,
        "file_name": file_name,
        "data": data,
        "cache": {"progress": progress} if progress is not None else {},
    }
    fields["cache"]["max_hits"] = limit  # predicates over many items make at most this many hits one by one
    report = Report(file=file, profile=profile)
    try:
        ctx = read_head(view, remote=remote, **fields)
    except Exception:  # noqa: BLE001 - a bug must not hide the findings so far
        report.internal_errors.append("walk: " + traceback.format_exc(limit=3))
        ctx = Context(view, remote=remote, **fields)
    report.version, report.byte_order = ctx.version, ctx.byte_order
    tally = _Tally(report, profile, select, ignore, limit)
    tally.add_all(ctx.hits)
    try:
        split = split_view(ctx, location, as_member=as_member)
    except Exception:  # noqa: BLE001
        report.internal_errors.append("split set: " + traceback.format_exc(limit=3))
        split = None
    skip = split.skip if split is not None else frozenset()
    if split is not None:
        tally.add_all(split.hits)
    for rule_id, fn in _selected_predicates(profile, select, ignore, predicates()):
        if rule_id in skip:
            continue
        try:
            for h in fn(ctx):
                tally.add(rule_id, h)
        except Exception:  # noqa: BLE001
            report.internal_errors.append(f"{rule_id}: " + traceback.format_exc(limit=3))
    tally.finish()
    report.sort()
    report.notes = notes(ctx) + (split.notes if split is not None else [])
    ctx.buf = None
    if remote is not None:
        report.transfer = remote.stats()
    return report


NO_CHAT_TEMPLATE = (
    "no chat template (tokenizer.chat_template): chat front ends will guess one; add it with "
    "`gguf-construct set FILE --chat-template-file tokenizer_config.json`"
)


def notes(ctx: Context) -> list[str]:
    """What is worth saying about a readable file without judging it: a model (tensors and a vocabulary) that has
    no chat template."""
    if (
        ctx.kv_complete
        and ctx.tensors
        and ctx.first(keynames.TOKENIZER_GGML_TOKENS) is not None
        and ctx.first(keynames.TOKENIZER_CHAT_TEMPLATE) is None
    ):
        return [NO_CHAT_TEMPLATE]
    return []


class _Tally:
    """The findings of one check as its hits arrive: every hit counted in ``report.counts``, at most ``limit``
    findings kept per rule (the others only counted), and the hits of a deviation llama.cpp makes on purpose
    reduced to their first and a count, so memory for findings is bounded however many hits a file has."""

    def __init__(self, report: Report, profile: str, select: tuple, ignore: tuple, limit: int):
        self.report, self.profile, self.select, self.ignore, self.limit = report, profile, select, ignore, limit
        self.known = catalog()
        self.on_purpose: dict[str, tuple[Hit, int]] = {}  # rule -> (first hit, how many)

    def add_all(self, hits: Iterable[tuple[str, Hit]]) -> None:
        """:meth:`add` each (rule ID, hit)."""
        for rule_id, h in hits:
            self.add(rule_id, h)

    def add(self, rule_id: str, h: Hit) -> None:
        """Count one hit of ``rule_id`` (and the ``repeat`` - 1 more it stands for); keep its finding while the
        rule has fewer than the limit."""
        if rule_id not in self.known:
            self.report.internal_errors.append(f"unknown rule {rule_id}")
            return
        resolution = resolve(rule_id, self.profile, self.select, self.ignore)
        if not resolution.checked:
            return
        if h.practice is not None:
            if self.profile not in PRACTICE_EXEMPT:
                first, n = self.on_purpose.get(rule_id, (h, 0))
                self.on_purpose[rule_id] = (first, n + h.repeat)
            return
        counts = self.report.counts
        counts[rule_id] = counts.get(rule_id, 0) + h.repeat
        if counts[rule_id] <= self.limit:
            self.report.findings.append(resolution.finding(h))

    def finish(self) -> None:
        """Add the one finding per file of each deviation llama.cpp makes on purpose."""
        for rule_id, (first, n) in self.on_purpose.items():
            self.report.counts[rule_id] = self.report.counts.get(rule_id, 0) + n
            self.report.findings.append(_once_per_file(rule_id, self.profile, first, n))


def _once_per_file(rule_id: str, profile: str, first: Hit, count: int) -> Finding:
    """One finding for every hit of a deviation llama.cpp makes on purpose: the first hit's message, a count and
    the erratum that explains it."""
    message = format_message(rule_id, first.params)
    if count > 1:
        message += f" (and {count - 1} more like it)"
    message += f"; llama.cpp does this on purpose (erratum {first.practice})"
    return Finding(rule_id, severity(rule_id, profile), message, first.offset, first.path, count)


def files_under(paths: list[str]) -> list[str]:
    """Expand directories into the ``*.gguf`` files below them (recursively, sorted)."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                out.extend(os.path.join(root, n) for n in names if n.lower().endswith(".gguf"))
        else:
            out.append(p)
    return sorted(dict.fromkeys(out)) if any(os.path.isdir(p) for p in paths) else out
