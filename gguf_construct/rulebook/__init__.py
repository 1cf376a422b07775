"""The rulebook: the one read of a file's head and the one set of rule predicates, below the file model.

``load`` and ``check`` read a file the same way (:func:`read_head`: the walk of :mod:`.walk` over the generated
structs) and judge it with the same predicates, one per rule of ``spec/rules.yaml``, registered by ID
(:mod:`.catalog`).  ``load`` runs the rules the catalog marks ``load: refuse`` (:func:`refusals`); ``check`` runs
all of them: the container rules registered here (:mod:`.container`, :mod:`.tensors`) and the metadata-schema,
model, naming, data and security rules the checker registers on top.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

from ..base.gcpause import without_gc
from ..base.remote import RemoteFile, header_only
from . import container, tensors  # noqa: F401 - importing registers the container predicates
from .catalog import Finding, Hit, catalog, catalog_order, format_message, kept_per_rule, predicates, severity
from .walk import Context, derive_layout, walk

__all__ = ["read_head", "load_rules", "refusals", "Context", "Finding"]


@without_gc  # a head of millions of records is millions of objects (base/gcpause.py)
def read_head(buf, *, remote: RemoteFile | None = None, **fields: Any) -> Context:
    """Read the header, metadata and tensor infos of ``buf`` into a :class:`Context` and derive the data layout;
    never raises on bad input (what cannot be read is recorded as structural findings).  ``remote``: the
    :class:`~gguf_construct.base.remote.RemoteFile` whose view ``buf`` is (the head is fetched as the read needs it).
    ``fields`` are further :class:`Context` fields (``file``, ``file_name``, ``data``, ``cache``)."""

    def once() -> Context:
        ctx = Context(buf, remote=remote, **fields)
        walk(ctx)
        return ctx

    ctx = header_only(remote, once, Context.read_to) if remote is not None else once()
    derive_layout(ctx)
    return ctx


@functools.lru_cache(maxsize=1)
def load_rules() -> frozenset[str]:
    """The rules ``load`` refuses a file for (``load: refuse`` in spec/rules.yaml)."""
    return frozenset(r.id for r in catalog().values() if r.raw.get("load") == "refuse")


def refusals(ctx: Context) -> list[Finding]:
    """The findings of :func:`load_rules` in a read file, in file order (findings without an offset last; at one
    offset, in catalog order): empty when ``load`` accepts it.  At most :func:`~.catalog.findings_per_rule` of
    one rule are made (the first each predicate finds), so refusing a file where every record breaks a rule costs
    a bounded number of findings."""
    refused = load_rules()
    limit = kept_per_rule(ctx.cache.get("max_hits"))
    ctx.cache.setdefault("max_hits", limit)
    kept: list[tuple[str, Hit]] = []
    counts: dict[str, int] = {}

    def keep(rule_id: str, hits: Iterable[Hit]) -> None:
        for h in hits:
            counts[rule_id] = counts.get(rule_id, 0) + h.repeat
            if counts[rule_id] <= limit:
                kept.append((rule_id, h))

    for rule_id, h in ctx.hits:
        if rule_id in refused:
            keep(rule_id, (h,))
    for rule_id, predicate in predicates():
        if rule_id in refused:
            keep(rule_id, predicate(ctx))
    order = catalog_order()
    kept.sort(key=lambda rh: (rh[1].offset is None, rh[1].offset or 0, order[rh[0]]))
    return [
        Finding(rule_id, severity(rule_id, "spec"), format_message(rule_id, h.params), h.offset, h.path)
        for rule_id, h in kept
    ]
