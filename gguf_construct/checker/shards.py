"""Split models: files named ``<prefix>-NNNNN-of-MMMMM.gguf`` are checked together as one set (every shard present,
split counts in agreement, no tensor in two shards)."""

from __future__ import annotations

import os
from collections import defaultdict

from ..remote import exists, is_url
from ..shardnames import shard_set_paths
from .naming import shard_of
from .report import Finding, Report
from ..rulebook.catalog import across_files, format_message, severity

__all__ = ["check_sets", "shard_siblings", "set_facts"]

across_files("META-SPLIT-MISSING", "META-SPLIT-COUNT", "META-SPLIT-DUP")


def set_facts(ctx) -> dict:
    """What the set checks need from one shard's check context."""
    def scalar(key):
        v = ctx.scalar(key)
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else None

    return {"split.no": scalar("split.no"), "split.count": scalar("split.count"),
            "split.tensors.count": scalar("split.tensors.count"), "tensor_count": ctx.tensor_count,
            "tensor_names": [t.name for t in ctx.tensors]}


def _group_key(path: str):
    found = shard_of(os.path.basename(path))
    if found is None:
        return None
    prefix, number, total = found
    folder = path.rsplit("/", 1)[0] if is_url(path) else os.path.dirname(path)
    return (f"{folder}/{prefix}" if is_url(path) else os.path.join(folder, prefix)), total, number


def shard_siblings(paths: list[str]) -> list[str]:
    """``paths`` plus the other shards of every shard set they name that exist on disk (same directory), or next to
    it on the server for a URL."""
    out = list(paths)
    seen = set(paths)
    for p in paths:
        present = exists if is_url(p) else os.path.isfile
        for sib in shard_set_paths(p) or ():
            if sib not in seen and present(sib):
                seen.add(sib)
                out.append(sib)
    return out


def _finding(rule_id: str, profile: str, **params) -> Finding:
    return Finding(rule_id, severity(rule_id, profile), format_message(rule_id, params), None, "file_name")


def check_sets(reports: list[Report], profile: str = "spec") -> list[Report]:
    """One extra report per shard set among ``reports`` (findings about the set as a whole)."""
    groups: dict[tuple[str, str], dict[int, Report]] = defaultdict(dict)
    for r in reports:
        key = _group_key(r.file) if r.file else None
        if key is not None:
            groups[(key[0], key[1])][int(key[2])] = r
    out = []
    for (prefix, total), shards in sorted(groups.items()):
        name = f"{prefix}-*-of-{total}.gguf"
        set_report = Report(file=name, profile=profile)
        f = set_report.findings
        for n in range(1, int(total) + 1):
            if n not in shards:
                f.append(_finding("META-SPLIT-MISSING", profile, set=os.path.basename(name),
                                  index=f"{n:05d}", count=total))
        facts = {n: r.facts for n, r in sorted(shards.items()) if r.facts}
        base = os.path.basename(name)
        for key in ("split.count", "split.tensors.count"):
            values = sorted({x[key] for x in facts.values() if x.get(key) is not None})
            if len(values) > 1:
                f.append(_finding("META-SPLIT-COUNT", profile, set=base,
                                  problem=f"shards disagree on {key}: {', '.join(map(str, values))}"))
        nos = [x["split.no"] for x in facts.values() if x.get("split.no") is not None]
        for no in sorted({n for n in nos if nos.count(n) > 1}):
            f.append(_finding("META-SPLIT-COUNT", profile, set=base, problem=f"split.no = {no} in several shards"))
        expected = {x["split.tensors.count"] for x in facts.values() if x.get("split.tensors.count") is not None}
        if len(expected) == 1 and len(shards) == int(total) and all(
                x.get("tensor_count") is not None for x in facts.values()) and len(facts) == len(shards):
            held = sum(x["tensor_count"] for x in facts.values())
            want = expected.pop()
            if held != want:
                f.append(_finding("META-SPLIT-COUNT", profile, set=base,
                                  problem=f"the shards hold {held} tensors, split.tensors.count = {want}"))
        first: dict[str, int] = {}
        for n, x in facts.items():
            for tname in x.get("tensor_names", ()):
                if tname in first and first[tname] != n:
                    f.append(_finding("META-SPLIT-DUP", profile, set=base, name=tname, index=f"{n:05d}",
                                      first_index=f"{first[tname]:05d}"))
                else:
                    first.setdefault(tname, n)
        if f or len(shards) > 1:
            out.append(set_report)
    return out
