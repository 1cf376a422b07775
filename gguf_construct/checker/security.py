"""Security view of the checker: the advisories of spec/advisories.yaml, the rules that only they need
(SEC-*), and how a finding names the advisory it matches (message suffix, SARIF tags and helpUri)."""

from __future__ import annotations

import functools
from typing import Iterator

import numpy as np

from ..format import spec as _spec
from ..format.reader import align_offset
from ..rulebook.container import _alignment_value
from ..rulebook.catalog import Hit, rule
from ..rulebook.walk import Context

__all__ = [
    "advisories",
    "limits",
    "matching",
    "rule_advisories",
    "annotate",
    "security_tags",
    "help_uri",
    "data_size_overflow",
    "alignment_too_large",
]


@functools.lru_cache(maxsize=None)
def _data() -> dict:
    return _spec.load_yaml("advisories.yaml")


def advisories() -> list[dict]:
    """Every advisory of spec/advisories.yaml, in file order."""
    return list(_data()["advisories"])


def limits() -> dict:
    """The numeric limits of spec/advisories.yaml (alignment, tensor_overhead)."""
    return dict(_data()["limits"])


def _entries(adv: dict) -> Iterator[dict]:
    for r in adv["rules"]:
        yield {"rule": r} if isinstance(r, str) else r


@functools.lru_cache(maxsize=None)
def _by_rule() -> dict[str, tuple[tuple[dict, dict], ...]]:
    out: dict[str, list] = {}
    for adv in advisories():
        for entry in _entries(adv):
            out.setdefault(entry["rule"], []).append((adv, entry))
    return {k: tuple(v) for k, v in out.items()}


def _matches(entry: dict, path: str, params: dict) -> bool:
    if "path" in entry and entry["path"] not in path:
        return False
    if "param" in entry:
        value = params.get(entry["param"])
        if "equals" in entry and value != entry["equals"]:
            return False
        if "min" in entry and not (isinstance(value, int) and value >= entry["min"]):
            return False
    return True


def matching(rule_id: str, path: str = "", params: dict | None = None) -> list[dict]:
    """The advisories a finding of ``rule_id`` at ``path`` with message ``params`` matches."""
    return [adv for adv, entry in _by_rule().get(rule_id, ()) if _matches(entry, path, params or {})]


def rule_advisories(rule_id: str) -> list[dict]:
    """Every advisory that names ``rule_id``."""
    return [adv for adv, _ in _by_rule().get(rule_id, ())]


def annotate(rule_id: str, message: str, path: str = "", params: dict | None = None) -> str:
    """``message`` with the advisories it matches appended, e.g. ``... [CVE-2024-21836]``."""
    found = matching(rule_id, path, params)
    return f"{message} [{', '.join(a['id'] for a in found)}]" if found else message


def security_tags(rule_id: str) -> dict:
    """SARIF ``properties`` entries for a rule: ``tags`` = security plus the IDs and aliases of the advisories
    that name it (empty for rules outside the security view)."""
    advs = rule_advisories(rule_id)
    if not advs and not rule_id.startswith(("SEC-", "TPL-")):
        return {}
    tags = ["security"] + [i for a in advs for i in [a["id"], *a.get("aliases", [])]]
    return {"tags": list(dict.fromkeys(tags))}


def help_uri(rule_id: str) -> dict:
    """SARIF ``helpUri`` of a rule: the source of the first advisory naming it (empty when none does)."""
    advs = rule_advisories(rule_id)
    return {"helpUri": advs[0]["source"]} if advs else {}


def data_size_overflow(sizes: list[int | None], alignment: int) -> tuple[str, int] | None:
    """("sum" or "mem_size", the total) when the tensor byte sizes ``sizes`` (None: undefined, skipped) padded
    to ``alignment`` add up to 2^64 or more, or do with ggml's context overhead for that many tensors plus one;
    None when they fit."""
    known = [n for n in sizes if n is not None]
    if known and max(known) < 2**62 and alignment < 2**32:  # each padded size fits an int64; the sum is Python's
        small = np.array(known, dtype=np.int64)
        total = sum((-(-small // alignment) * alignment).tolist())
    else:
        total = sum(align_offset(n, alignment) for n in sizes if n is not None)
    if total >= 2**64:
        return "sum", total
    total += (len(sizes) + 1) * limits()["tensor_overhead"]
    return ("mem_size", total) if total >= 2**64 else None


def alignment_too_large(value: int) -> bool:
    """True when a UINT32 ``general.alignment`` is at or above the SEC-ALIGN-HUGE limit."""
    return value >= limits()["alignment"]


@rule("SEC-DATA-SIZE-OVERFLOW")
def _data_size(ctx: Context) -> Iterator[Hit]:
    if not ctx.ti_complete or not ctx.tensors:
        return
    found = data_size_overflow([t.nbytes for t in ctx.tensors], ctx.alignment)
    if found is None:
        return
    stage, total = found
    if stage == "sum":
        problem = f"the sizes padded to {ctx.alignment} add up to more than 2^64"
    else:
        problem = (
            f"the padded sizes plus ggml's context overhead of {limits()['tensor_overhead']} bytes per "
            f"tensor add up to more than 2^64"
        )
    t = ctx.tensors[0]
    yield Hit(t.offset, t.path, count=len(ctx.tensors), value=total, problem=problem, stage=stage)


@rule("SEC-ALIGN-HUGE")
def _align_huge(ctx: Context) -> Iterator[Hit]:
    found = _alignment_value(ctx)
    if found is not None and alignment_too_large(found[1]):
        kv, value = found
        yield Hit(kv.value_offset, f"{kv.path}.value", value=value, limit=limits()["alignment"])
