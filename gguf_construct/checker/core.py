"""``check``: walk the file, run every rule predicate, turn hits into findings."""

from __future__ import annotations

import os
import traceback

from ..layout import open_source
from ..remote import RemoteFile, header_only, remote_of
from . import container, data, metadata, model, naming, tensors  # noqa: F401 - importing registers the predicates
from . import security, templates  # noqa: F401 - issue #16: advisory and chat-template rules
from .report import Finding, Report
from .shards import set_facts
from .rules import OFF, PROFILES, catalog, format_message, predicates, severity
from .walk import Context, base_name, derive_layout, display_name, walk

__all__ = ["check", "check_buffer"]

MAX_FINDINGS_PER_RULE = 1000


def check(source, *, profile: str = "spec", data: bool = False) -> "Report":
    """Check a GGUF file against every conformance rule and return a :class:`Report` of all findings.

    ``source`` is a path, a URL, a bytes-like object or a binary file object (as for :func:`gguf_construct.load`);
    a URL is read header-only (see :mod:`gguf_construct.remote`) and the report's ``transfer`` says what it cost.
    ``profile`` is "spec" (gguf.md's verdicts) or "ggml" (what ggml's reader accepts); ``data=True`` also looks
    inside the tensor data.  Never raises on malformed input; I/O errors (``OSError``) propagate.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}")
    buf, path, keepalive = open_source(source)
    try:
        name = display_name(source, path)
        return check_buffer(buf, file=name, file_name=base_name(name), profile=profile, data=data,
                            remote=remote_of(source, keepalive))
    finally:
        del buf
        if keepalive is not None:
            try:
                keepalive.close()
            except BufferError:  # a view is still alive somewhere; the map is freed with it
                pass


def check_buffer(buf, *, file: str | None = None, file_name: str | None = None, profile: str = "spec",
                 data: bool = False, remote: RemoteFile | None = None) -> Report:
    """Check an in-memory buffer; ``file_name`` (a bare name) enables the naming rules.  ``remote`` is the
    :class:`~gguf_construct.remote.RemoteFile` whose view ``buf`` is: the head is then fetched as the walk needs
    it and the data only with ``data=True``."""
    view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf

    def walked() -> Context:
        ctx = Context(view, file=file, file_name=file_name, profile=profile, data=data, remote=remote)
        walk(ctx)
        return ctx

    ctx = Context(view, file=file, file_name=file_name, profile=profile, data=data, remote=remote)
    report = Report(file=file, profile=profile)
    try:
        ctx = header_only(remote, walked, Context.read_to) if remote is not None else walked()
        derive_layout(ctx)
    except Exception:  # noqa: BLE001 - a bug must not hide the findings so far
        report.internal_errors.append("walk: " + traceback.format_exc(limit=3))
    report.version, report.byte_order = ctx.version, ctx.byte_order
    hits = list(ctx.hits)
    known_rules = catalog()
    for rule_id, fn in predicates():
        if rule_id in known_rules and severity(rule_id, profile) == OFF:
            continue
        try:
            hits.extend((rule_id, h) for h in fn(ctx))
        except Exception:  # noqa: BLE001
            report.internal_errors.append(f"{rule_id}: " + traceback.format_exc(limit=3))
    per_rule: dict[str, int] = {}
    known = catalog()
    for rule_id, h in hits:
        if rule_id not in known:
            report.internal_errors.append(f"unknown rule {rule_id}")
            continue
        if severity(rule_id, profile) == OFF:
            continue
        per_rule[rule_id] = per_rule.get(rule_id, 0) + 1
        if per_rule[rule_id] > MAX_FINDINGS_PER_RULE:
            continue
        message = security.annotate(rule_id, format_message(rule_id, h.params), h.path, h.params)
        report.findings.append(Finding(rule_id, severity(rule_id, profile), message, h.offset, h.path))
    report.sort()
    try:
        report.facts = set_facts(ctx)
    except Exception:  # noqa: BLE001
        report.internal_errors.append("facts: " + traceback.format_exc(limit=3))
    ctx.buf = None
    if remote is not None:
        report.transfer = remote.stats()
    return report


def files_under(paths: list[str]) -> list[str]:
    """Expand directories into the ``*.gguf`` files below them (recursively, sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                out.extend(os.path.join(root, n) for n in names if n.lower().endswith(".gguf"))
        else:
            out.append(p)
    return sorted(dict.fromkeys(out)) if any(os.path.isdir(p) for p in paths) else out
