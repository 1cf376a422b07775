"""The page errata.md: where published write-ups and ggml's C code disagree."""

from __future__ import annotations


from ..context import Ctx, Page, Section
from ..markdown import anchor, esc, heading, intro, table


def _sec_errata(ctx: Ctx) -> str:
    e = ctx.data.errata
    if not e:
        return "_spec/errata.yaml is not present yet._\n"
    sources = {s["id"]: s for s in e.get("sources", [])}
    out = [
        ctx.prose(e["meta"]["doc"]) + "\n",
        table(["source", "what it is"], [[esc(s["title"]), ctx.prose(s["doc"])] for s in sources.values()]),
    ]
    kinds = {"tensor_types": "tt", "keys": "key", "rules": "rule", "tensor_names": "tensor"}
    for item in e["errata"]:
        out.append(heading(3, anchor("erratum", item["id"]), esc(item["title"])))
        rel = []
        for field, kind in kinds.items():
            for name in (item.get("related") or {}).get(field, []):
                rel.append(ctx.ref(kind, name, name if kind == "rule" else None))
        rel = list(dict.fromkeys(rel))
        rows = [
            ["claimed by", ", ".join(esc(sources[s]["title"]) if s in sources else esc(s) for s in item["sources"])],
            ["claim", ctx.prose(item["claim"])],
            ["actual", ctx.prose(item["actual"])],
        ]
        if rel:
            rows.append(["in the spec", ", ".join(rel)])
        rows.append(["source", esc(item["doc_ref"])])
        out.append(table(["part", "text"], rows))
    return "\n".join(out)


def _sec_errata_elsewhere(ctx: Ctx) -> str:
    keys = [k for k in ctx.data.keys["keys"] if k.get("errata")]
    out = ["Errata attached to single entries of the spec:\n"]
    out.append("\n".join(f"- {ctx.ref('key', k['key'])}: {ctx.prose(k['errata'])}" for k in keys) + "\n")
    n = len(ctx.data.naming["regex"].get("errata", []))
    if n:
        out.append(
            f"- The naming convention: {n} errata of the published regex, see "
            f"[Naming: regex](naming.md#naming-regex).\n"
        )
    return "\n".join(out)


PAGE = Page(
    "errata.md",
    "Errata",
    "where published write-ups and ggml's C code disagree",
    intro("Errata", "Mistakes in commonly used descriptions of GGUF, and what is actually true."),
    (
        Section("errata", "Errata", _sec_errata),
        Section("errata-elsewhere", "Errata of single keys", _sec_errata_elsewhere),
    ),
    defines=lambda d: (anchor("erratum", e["id"]) for e in (d.errata or {}).get("errata", [])),
    count=lambda d: f"{len(d.errata['errata'])} errata" if d.errata else "not yet in the spec",
)
