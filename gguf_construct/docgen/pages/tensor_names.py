"""The page tensor-names.md: the standardized tensor names, grouped as gguf.md groups them, with the suffixes and
architectures that use each (from spec/tensor_names.yaml and the architectures' load programs)."""

from __future__ import annotations

import functools
import re

from ...format import spec as _spec
from ...arch import architectures
from ...arch.outline import outline, tensor_name_pattern
from ...arch.programs import loader
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, intro, table

__all__ = ["PAGE", "name_groups"]


@functools.lru_cache(maxsize=None)
def _names_spec() -> dict:
    return _spec.load_yaml("tensor_names.yaml")


@functools.lru_cache(maxsize=None)
def _usage() -> dict[str, tuple[set[str], set[str]]]:
    """base name -> (suffixes seen, architectures creating it)."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for name in architectures():
        o = outline(name)
        for t in o.tensors if o else ():
            base, _, suffix = t.name.rpartition(".") if t.name.endswith((".weight", ".bias")) else (t.name, "", "")
            suffixes, archs = out.setdefault(base, (set(), set()))
            if suffix:
                suffixes.add(suffix)
            archs.add(name)
    return out


@functools.lru_cache(maxsize=None)
def name_groups() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """Group id -> [(llama.cpp enum names, base name pattern)] for every LLM_TENSOR name, each base in the first
    group it matches."""
    enums: dict[str, list[str]] = {}
    for enum, raw in (loader().get("tensor_names") or {}).items():
        enums.setdefault(tensor_name_pattern(raw, None), []).append(enum)
    groups: dict[str, list] = {g["id"]: [] for g in _names_spec()["groups"]}
    matchers = [(g["id"], re.compile(g["match"])) for g in _names_spec()["groups"]]
    for base in sorted(enums):
        gid = next((gid for gid, rx in matchers if rx.search(base)), matchers[-1][0])
        groups[gid].append((tuple(sorted(enums[base])), base))
    return groups


def _sec_overview(ctx: Ctx) -> str:
    d = _names_spec()
    n = sum(len(v) for v in name_groups().values())
    return "\n".join(
        [
            ctx.prose(d["doc"]) + "\n",
            f"{n} base names, from llama.cpp's name table; the shapes each architecture expects are on "
            f"its page ([Architectures](architectures.md)).\n",
            f"Source: {esc(d['doc_ref'])}.\n",
        ]
    )


def _sec_groups(ctx: Ctx) -> str:
    d = _names_spec()
    meanings = d.get("meanings") or {}
    usage = _usage()
    out = []
    for g in d["groups"]:
        rows = []
        for enum_names, base in name_groups()[g["id"]]:
            suffixes, archs = usage.get(base, (set(), set()))
            shown = ", ".join(code(f"{base}.{s}") for s in sorted(suffixes)) or code(base)
            rows.append(
                [
                    f'<a id="{anchor("tensor", base)}"></a>{shown}',
                    esc(meanings.get(base, "")),
                    "<br>".join(code(e) for e in enum_names),
                    str(len(archs)) if archs else "none",
                ]
            )
        out.append(f'### <a id="{anchor("tensorgroup", g["id"])}"></a>{esc(g["title"])}\n')
        out.append(ctx.prose(g["doc"]) + "\n")
        out.append(table(["name", "holds", "llama.cpp", "architectures"], rows, "lllr"))
    return "\n".join(out)


def _sec_gguf_md(ctx: Ctx) -> str:
    rows = []
    for item in _names_spec().get("gguf_md_spellings") or ():
        ours = "<br>".join(ctx.ref("tensor", n) for n in item["llama_cpp"])
        errata = ctx.errata_of.get(anchor("tensor", item["llama_cpp"][0]), [])
        rows.append(
            [
                code(item["gguf_md"]),
                ours,
                ", ".join(ctx.link(anchor("erratum", e["id"]), esc(e["id"])) for e in errata) or "—",
            ]
        )
    return (
        "gguf.md spells some names differently from llama.cpp's loader; a tensor named as gguf.md says is not "
        "found by llama.cpp. The names on the right are the ones to write (`{j}` counts the experts in "
        "older files with one tensor per expert).\n\n" + table(["gguf.md", "llama.cpp", "erratum"], rows)
    )


def _defines(data: SpecData):
    for g in _names_spec()["groups"]:
        yield anchor("tensorgroup", g["id"])
    for members in name_groups().values():
        yield from (anchor("tensor", base) for _, base in members)


PAGE = Page(
    "tensor-names.md",
    "Standardized tensor names",
    "the tensor names llama.cpp's loader looks for: base layers, attention, feed-forward, MoE, SSM, RWKV",
    intro("Standardized tensor names", "The names tensors must have for llama.cpp to find them."),
    (
        Section("tensor-names-overview", "Overview", _sec_overview),
        Section("tensor-name-groups", "Names by group", _sec_groups),
        Section("tensor-names-gguf-md", "gguf.md's spellings", _sec_gguf_md),
    ),
    defines=_defines,
    count=lambda d: f"{sum(len(v) for v in name_groups().values())} names",
)
