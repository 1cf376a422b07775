"""The file naming convention (spec/naming.yaml): parse a file name and the NAME-* predicates."""

from __future__ import annotations

import functools
import re
from typing import Iterator

from ..format import spec as _spec
from ..rulebook.catalog import Hit, rule
from ..rulebook.walk import STRING, Context
from ..format import keynames

__all__ = ["parse_name", "naming_spec", "shard_of"]

_GENERIC_SHARD = re.compile(r"-(\d+)-of-(\d+)\.gguf\Z", re.IGNORECASE)


@functools.lru_cache(maxsize=None)
def naming_spec() -> dict:
    """The parsed spec/naming.yaml."""
    return _spec.load_yaml("naming.yaml")


@functools.lru_cache(maxsize=None)
def _regex() -> re.Pattern:
    spec = naming_spec()["regex"]
    flags = 0
    for name in spec.get("flags", []):
        flags |= getattr(re, name)
    return re.compile(spec["python"], flags)


def parse_name(file_name: str) -> dict[str, str | None] | None:
    """The components (BaseName, SizeLabel, FineTune, Version, Encoding, Type, Shard, Sidecar) of a conforming
    file name, or None when the name does not follow the convention."""
    m = _regex().match(file_name)
    if m is None:
        return None
    return {c["id"]: m.group(c["id"]) for c in naming_spec()["components"]}


def shard_of(file_name: str) -> tuple[str, str, str] | None:
    """``(prefix, number, total)`` digit strings of a ``-N-of-M.gguf`` suffix, whether conforming or not."""
    m = _GENERIC_SHARD.search(file_name)
    if m is None:
        return None
    return file_name[: m.start()], m.group(1), m.group(2)


@rule("NAME-REGEX")
def _regex_rule(ctx: Context) -> Iterator[Hit]:
    if ctx.file_name and parse_name(ctx.file_name) is None:
        yield Hit(None, "file_name", value=ctx.file_name)


def _shard_problems(ctx: Context, number: str, total: str) -> Iterator[str]:
    spec = naming_spec()["shard"]
    if not re.match(spec["regex"], f"{number}-of-{total}"):
        yield "number and total must have five digits each"
    n, m = int(number), int(total)
    if n < spec["first_number"]:
        yield f"shard numbers start at {spec['first_number']:05d}"
    if n > m:
        yield "shard number is larger than the shard total"
    no, count = ctx.scalar(keynames.SPLIT_NO), ctx.scalar(keynames.SPLIT_COUNT)
    if ctx.kv_complete and no is None and count is None:
        yield "the file has no split.no / split.count keys"
    if isinstance(no, int) and not isinstance(no, bool) and no + 1 != n:
        yield f"split.no = {no} means shard {no + 1:05d}"
    if isinstance(count, int) and not isinstance(count, bool) and count != m:
        yield f"split.count = {count}"


@rule("NAME-SHARD")
def _shard(ctx: Context) -> Iterator[Hit]:
    if not ctx.file_name:
        return
    found = shard_of(ctx.file_name)
    if found is None:
        return
    _, number, total = found
    for problem in _shard_problems(ctx, number, total):
        yield Hit(None, "file_name", value=f"{number}-of-{total}", problem=problem)


def _norm(text: str, component: str) -> str:
    text = text.strip().replace(" ", "-")
    if component == "Version":
        text = text.lstrip("vV")
    return text.lower()


@rule("NAME-META")
def _meta(ctx: Context) -> Iterator[Hit]:
    if not ctx.file_name:
        return
    parts = parse_name(ctx.file_name)
    if parts is None:
        return
    for comp in naming_spec()["components"]:
        key = comp.get("metadata_key")
        part = parts.get(comp["id"])
        if not key or part is None or key.startswith("split."):
            continue
        value = ctx.scalar(key, STRING)
        if isinstance(value, str) and value and _norm(value, comp["id"]) != _norm(part, comp["id"]):
            yield Hit(None, "file_name", component=comp["id"], value=part, key=key, expected=value)
