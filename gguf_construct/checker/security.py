"""Security view of the checker: the advisories of spec/advisories.yaml, the rules that only they need
(SEC-*), and how a finding names the advisory it matches (message suffix, SARIF tags and helpUri)."""

from __future__ import annotations

import functools
from typing import Iterator

from .. import spec as _spec
from ..layout import align_offset
from .container import _alignment_value
from .rules import Hit, rule
from .walk import Context

__all__ = ["advisories", "limits", "matching", "rule_advisories", "annotate", "security_tags", "help_uri"]


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


@rule("SEC-DATA-SIZE-OVERFLOW")
def _data_size(ctx: Context) -> Iterator[Hit]:
    if not ctx.ti_complete or not ctx.tensors:
        return
    total = 0
    for t in ctx.tensors:
        st = t.spec
        if t.nelem is None or t.nelem >= 2**63 or st is None or not st.is_current:
            continue
        nbytes = -(-t.nelem // st.block_size) * st.type_size
        padded = align_offset(nbytes, ctx.alignment)
        if padded >= 2**64:
            continue  # TI-NBYTES-OVERFLOW
        total += padded
    overhead = (len(ctx.tensors) + 1) * limits()["tensor_overhead"]
    if total >= 2**64:
        stage, problem = "sum", f"the sizes padded to {ctx.alignment} add up to {total}"
    elif total + overhead >= 2**64:
        stage, problem = "mem_size", (f"the padded sizes add up to {total}, plus {overhead} bytes of ggml context overhead "
                   f"({limits()['tensor_overhead']} per tensor)")
        total += overhead
    else:
        return
    t = ctx.tensors[0]
    yield Hit(t.offset, f"{t.path}", count=len(ctx.tensors), value=total, problem=problem, stage=stage)


@rule("SEC-ALIGN-HUGE")
def _align_huge(ctx: Context) -> Iterator[Hit]:
    found = _alignment_value(ctx)
    if found is not None and found[1] >= limits()["alignment"]:
        kv, value = found
        yield Hit(kv.value_offset, f"{kv.path}.value", value=value, limit=limits()["alignment"])
