"""Split models in the checker, as :mod:`gguf_construct.format.splitset` decides them: the first shard is judged with every
shard's tensors and carries the findings about the set; a later shard checked alone gets one finding (llama.cpp's
reason for refusing it) instead of the rules of scope model; a whole file is judged alone."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

from ..format import splitset
from ..format.reader import open_source
from ..base.remote import exists, is_url, remote_of
from ..rulebook import read_head
from ..rulebook.catalog import Hit, across_files, catalog
from ..rulebook.walk import Context, TensorInfo, type_name

__all__ = ["SplitView", "split_view", "model_scope", "shard_siblings", "check_plan"]

across_files("META-SPLIT-MISSING", "META-SPLIT-COUNT", "META-SPLIT-DUP", "META-SPLIT-AGREE", "META-SPLIT-LATER")


@functools.lru_cache(maxsize=1)
def model_scope() -> frozenset[str]:
    """The rules judged once per model (``scope: model`` in spec/rules.yaml): not on a later shard."""
    return frozenset(rid for rid, r in catalog().items() if r.raw.get("scope") == "model")


@dataclass
class SplitView:
    """How one file takes part in a split model: its role, the rules not judged on it, and the set's findings."""

    role: str
    skip: frozenset = frozenset()
    hits: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)


UNSEEN_SHARDS = (
    "first shard of a split model of {count} shards, read without a location (bytes or standard "
    "input): its other shards cannot be looked for, so the model (its tensors, the rules of scope "
    "model) was not judged; check it by path or URL to judge the set"
)


@dataclass
class SiblingTensor(TensorInfo):
    """A tensor info read from another shard: its findings name that shard and have no offset in this file."""

    shard: str = ""

    def at(self, rel: str) -> None:  # type: ignore[override]
        return None

    @property
    def path(self) -> str:
        return f"{self.shard}:tensor_infos[{self.index}]"


def _present(path: str) -> bool:
    return exists(path) if is_url(path) else os.path.isfile(path)


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def _int(ctx: Context, key: str) -> int | None:
    value = ctx.scalar(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _facts(ctx: Context, path: str) -> splitset.ShardFacts:
    no = ctx.first(splitset.SPLIT_NO)
    return splitset.ShardFacts(
        path,
        readable=ctx.head_complete,
        split_no=_int(ctx, splitset.SPLIT_NO),
        split_no_type=type_name(no.vtype) if no is not None else None,
        split_count=_int(ctx, splitset.SPLIT_COUNT),
        split_tensors=_int(ctx, splitset.SPLIT_TENSORS),
        tensor_names=[t.name for t in ctx.tensors],
    )


def _read_sibling(path: str) -> tuple[splitset.ShardFacts, list[TensorInfo]]:
    """The facts and tensor infos of another shard (absent or unreadable ones say so in the facts); read once
    per version of a local file (and once per URL), as checking a set under several profiles asks again."""
    if is_url(path):
        return _read_sibling_once(path, None)
    try:
        st = os.stat(path)
    except OSError:
        return splitset.ShardFacts(path, present=False, readable=False), []
    return _read_sibling_once(path, (st.st_mtime_ns, st.st_size, st.st_ino))


@functools.lru_cache(maxsize=64)
def _read_sibling_once(path: str, stamp) -> tuple[splitset.ShardFacts, list[TensorInfo]]:
    if not _present(path):
        return splitset.ShardFacts(path, present=False, readable=False), []
    try:
        buf, _, keepalive = open_source(path)
    except OSError:
        return splitset.ShardFacts(path, readable=False), []
    try:
        view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        ctx = read_head(view, remote=remote_of(path, keepalive))
        facts = _facts(ctx, path)
        name = _name(path)
        tensors = [
            SiblingTensor(**{f.name: getattr(t, f.name) for f in dataclasses.fields(TensorInfo)}, shard=name)
            for t in ctx.tensors
        ]
        for t in tensors:
            t.offset = None  # type: ignore[assignment]
        ctx.buf = None
        del view
    finally:
        del buf
        if keepalive is not None:
            try:
                keepalive.close()
            except BufferError:
                pass
    return facts, tensors


def split_view(ctx: Context, location: str | None, *, as_member: bool = False) -> SplitView:
    """The split-set part of checking the file in ``ctx`` found at ``location`` (a path or URL; None for bytes,
    whose siblings cannot be found).  A first shard gets the other shards' tensors in ``ctx.shard_tensors`` and the
    set findings (when a shard is missing or unreadable, the model is unknown: the rules of scope model are not
    judged, the set findings say why); a later shard skips the rules of scope model, and -- unless checked
    ``as_member`` of a set whose first shard is checked too -- gets META-SPLIT-LATER; a later shard whose first
    shard is absent gets META-SPLIT-MISSING for it."""
    no, count = _int(ctx, splitset.SPLIT_NO), _int(ctx, splitset.SPLIT_COUNT)
    role = splitset.role(no, count)
    if role == splitset.SINGLE:
        return SplitView(role)
    if role == splitset.LATER:
        hits = []
        first = splitset.first_shard_path(location) if location else None
        if first is not None and first != location and not _present(first):
            index, total = splitset.shard_numbers(0, count)
            hits.append(
                (
                    "META-SPLIT-MISSING",
                    Hit(None, "file_name", set=splitset.set_label(location), index=index, count=total),
                )
            )
        if not as_member:
            kv = ctx.first(splitset.SPLIT_NO)
            hits.append(
                (
                    "META-SPLIT-LATER",
                    Hit(kv.value_offset, f"{kv.path}.value", **splitset.later_shard_params(location or "", no, count)),
                )
            )
        return SplitView(role, model_scope(), hits)
    if location is None:
        return SplitView(role, model_scope(), notes=[UNSEEN_SHARDS.format(count=count)])
    members = splitset.member_paths(location, count)
    siblings = [_read_sibling(p) for p in members[1:]] if members else []
    ctx.shard_tensors = [t for _, tensors in siblings for t in tensors]
    problems = splitset.set_problems(_facts(ctx, location), [facts for facts, _ in siblings])
    whole = members is not None and all(facts.readable for facts, _ in siblings)
    return SplitView(
        role,
        frozenset() if whole else model_scope(),  # without every shard the model is unknown
        [(p.rule, Hit(None, "file_name", **p.params)) for p in problems],
    )


def shard_siblings(paths: list[str]) -> list[str]:
    """``paths`` with every shard set they name made whole: the shards present on disk (same directory), or next to
    it on the server for a URL, in shard order where the first of them was named."""
    out: list[str] = []
    seen: set[str] = set()
    for p in paths:
        members = splitset.shard_set_paths(p) or [p]
        for sib in members:
            if sib not in seen and (sib == p or sib in paths or _present(sib)):
                seen.add(sib)
                out.append(sib)
    return out


def check_plan(paths: list[str], *, later_alone: bool = False) -> list[tuple[str, bool]]:
    """The files a check of ``paths`` judges, in order, each with ``as_member``: whether it is judged as a member
    of a set whose first shard is judged too (see :func:`split_view`).

    A shard names its whole set (:func:`shard_siblings`).  With ``later_alone`` -- llama.cpp's view -- a later
    shard named without its first shard is judged alone, as llama.cpp opens it: refused with META-SPLIT-LATER,
    whose message names the first shard to load instead.  A file judged without its set's first shard (or named
    as no shard at all) is never a member: its own split keys decide."""
    named = set(paths)
    files: list[str] = []
    seen: set[str] = set()
    for p in paths:
        first = splitset.first_shard_path(p)
        alone = later_alone and first is not None and first != p and first not in named
        for f in [p] if alone else shard_siblings([p]):
            if f not in seen:
                seen.add(f)
                files.append(f)
    return [(f, (first := splitset.first_shard_path(f)) is not None and first != f and first in seen) for f in files]
