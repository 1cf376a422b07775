"""Model rules (MODEL-*): will llama.cpp's model loader accept the file?

The load is replayed once per file by :func:`gguf_construct.arch.plan_load` over the walk's metadata and tensor
infos; each rule below is the predicate that turns one kind of problem of that replay into findings.  The replay
runs only when a profile checks these rules (``llama.cpp``), so ``spec`` and ``ggml`` cost nothing extra.
"""

from __future__ import annotations

import functools
import re
from typing import Iterator

from .. import arch
from ..rulebook.catalog import Hit, rule
from ..rulebook.tensors import _dims_hit
from ..rulebook.walk import ARRAY, STRING, Context, type_name
from ..format import keynames

__all__ = ["plan_of"]


def plan_of(ctx: Context) -> arch.LoadPlan | None:
    """The replayed load of the file in ``ctx`` (computed once), or None when its metadata or tensor infos could
    not be read completely (the container rules report that)."""
    cached = ctx.__dict__.get("_model_plan", False)
    if cached is not False:
        return cached
    plan = None
    if ctx.kv_complete and ctx.ti_complete:
        meta = {}
        for kv in ctx.kvs:
            if kv.key in meta:
                continue
            if kv.vtype == ARRAY:
                meta[kv.key] = arch.MetaValue("ARRAY", kv.value.data, type_name(kv.value.type))
            else:
                meta[kv.key] = arch.MetaValue(type_name(kv.vtype), kv.value)
        model_tensors = ctx.model_tensors
        tensors = {t.name: arch.TensorMeta(t.name, tuple(t.dims), t.type) for t in model_tensors}
        plan = arch.plan_load(meta, tensors, n_tensors=len(model_tensors))
    ctx.__dict__["_model_plan"] = plan
    return plan


def _kv(ctx: Context, key: str | None):
    return next((kv for kv in ctx.kvs if kv.key == key), None) if key else None


def _tensor(ctx: Context, name: str | None):
    return next((t for t in ctx.model_tensors if t.name == name), None) if name else None


def _metadata_start(ctx: Context) -> int:
    return ctx.header_size


def _tensor_infos_start(ctx: Context) -> int:
    return ctx.kvs[-1].end if ctx.kvs else ctx.header_size


def _problems(ctx: Context, *codes: str) -> Iterator[arch.Problem]:
    plan = plan_of(ctx)
    if plan is not None:
        yield from (p for p in plan.problems if p.code in codes)


def _key_hit(ctx: Context, p: arch.Problem, value_field: str = "value", **params) -> Hit:
    kv = _kv(ctx, p.key)
    if kv is None:
        return Hit(_metadata_start(ctx), "metadata_kv", key=p.key, detail=p.message, **params)
    if value_field == "value_type":
        return Hit(kv.at("value_type"), f"{kv.path}.value_type", key=p.key, detail=p.message, **params)
    return Hit(kv.value_offset, f"{kv.path}.value", key=p.key, detail=p.message, **params)


@rule("MODEL-ARCH-UNKNOWN")
def _arch_unknown(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "ARCH-UNKNOWN"):
        yield _key_hit(ctx, p, value=p.got)


@rule("MODEL-KEY-MISSING")
def _key_missing(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "KEY-MISSING"):
        yield _key_hit(ctx, p)


@rule("MODEL-KEY-TYPE")
def _key_type(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "KEY-TYPE"):
        yield _key_hit(ctx, p, "value_type")


@rule("MODEL-HPARAM-RANGE")
def _hparam_range(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "HPARAM-RANGE"):
        yield _key_hit(ctx, p)


@rule("MODEL-VOCAB")
def _vocab(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "VOCAB"):
        yield _key_hit(ctx, p)


@rule("MODEL-ADAPTER")
def _adapter(ctx: Context) -> Iterator[Hit]:
    yield from _file_kind_hits(ctx, "ADAPTER")


@rule("MODEL-IMATRIX")
def _imatrix(ctx: Context) -> Iterator[Hit]:
    yield from _file_kind_hits(ctx, "IMATRIX")


def _file_kind_hits(ctx: Context, code: str) -> Iterator[Hit]:
    """Problems of an adapter or importance matrix, at their tensor or key."""
    for p in _problems(ctx, code):
        t = _tensor(ctx, p.tensor)
        if t is not None:
            yield Hit(t.offset, t.path, detail=p.message)
        else:
            yield _key_hit(ctx, p)


@rule("MODEL-TENSOR-MISSING")
def _tensor_missing(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "TENSOR-MISSING"):
        yield Hit(_tensor_infos_start(ctx), "tensor_infos", name=p.tensor, expected=p.expected)


@rule("MODEL-TENSOR-SHAPE")
def _tensor_shape(ctx: Context) -> Iterator[Hit]:
    for p in _problems(ctx, "TENSOR-SHAPE"):
        t = _tensor(ctx, p.tensor)
        if t is not None:
            yield _dims_hit(ctx, t, expected=p.expected, got=p.got)


@rule("MODEL-TENSOR-UNUSED")
def _tensor_unused(ctx: Context) -> Iterator[Hit]:
    plan = plan_of(ctx)
    for p in _problems(ctx, "TENSOR-UNUSED"):
        t = _tensor(ctx, p.tensor)
        if t is not None:
            yield Hit(t.offset, t.path, name=p.tensor, arch=plan.arch, expected=p.expected, got=p.got)


_BLOCK = re.compile(r"^(?:blk|enc\.blk|dec\.blk)\.(\d+)\.")


@rule("MODEL-BLOCK-COUNT")
def _block_count(ctx: Context) -> Iterator[Hit]:
    arch_kv = _kv(ctx, keynames.GENERAL_ARCHITECTURE)
    if arch_kv is None or arch_kv.vtype != STRING or not ctx.model_tensors:
        return
    key = f"{arch_kv.value}.block_count"
    kv = _kv(ctx, key)
    if kv is None or kv.vtype == ARRAY or isinstance(kv.value, (str, bytes, float)):
        return
    blocks = [int(m.group(1)) for t in ctx.model_tensors if (m := _BLOCK.match(t.name))]
    if not blocks:
        return
    last = max(blocks)
    n = int(kv.value)
    nextn = _kv(ctx, f"{arch_kv.value}.nextn_predict_layers")
    if last + 1 != n and not (nextn is not None and isinstance(nextn.value, int) and last + 1 == n + nextn.value):
        yield Hit(kv.value_offset, f"{kv.path}.value", key=key, value=n, index=last)


@functools.lru_cache(maxsize=None)
def _standard_names() -> re.Pattern:
    """One pattern for every standardized name (``%d`` is a layer number) plus an optional ``.suffix``, written
    as a trie so that matching costs one pass over the name, not one try per name."""
    trie: dict = {}
    for name in set(arch.loader()["tensor_names"].values()):
        node = trie
        for token in re.split(r"(%d)", name):
            for piece in [token] if token == "%d" else token:
                node = node.setdefault(piece, {})
        node[""] = {}
    return re.compile(rf"(?:{_trie_pattern(trie)})(?:\.[a-z_0-9]+)?\Z")


def _trie_pattern(node: dict) -> str:
    alts = [
        (r"\d+" if piece == "%d" else re.escape(piece)) + _trie_pattern(child)
        for piece, child in sorted(node.items())
        if piece
    ]
    if not alts:
        return ""
    body = alts[0] if len(alts) == 1 else f"(?:{'|'.join(alts)})"
    return f"(?:{body})?" if "" in node else body


@rule("MODEL-TENSOR-NAME")
def _tensor_name(ctx: Context) -> Iterator[Hit]:
    arch_kv = _kv(ctx, keynames.GENERAL_ARCHITECTURE)
    if arch_kv is None or arch_kv.vtype != STRING or arch.architecture(str(arch_kv.value)) is None:
        return
    pattern = _standard_names()
    odd = [t for t in ctx.model_tensors if not pattern.match(t.name)]
    if odd:
        yield Hit(odd[0].offset, f"{odd[0].path}.name", name=odd[0].name, count=len(odd))
