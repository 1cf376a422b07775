"""The page naming.md: the file naming convention."""

from __future__ import annotations


from ..context import Ctx, Page, Section
from ..markdown import anchor, code, esc, fence, intro, join_nonempty, table


def _sec_naming_overview(ctx: Ctx) -> str:
    meta = ctx.data.naming["meta"]
    order = " ".join(
        ("[" if c["optional"] else "") + f"{c['id']}" + ("]" if c["optional"] else "")
        for c in ctx.data.naming["components"]
    )
    return "\n".join(
        [
            ctx.prose(meta["doc"]) + "\n",
            f"Source: {esc(meta['doc_ref'])}.\n",
            "Components in order (optional ones in brackets):\n",
            fence(order),
        ]
    )


def _sec_naming_components(ctx: Ctx) -> str:
    rows = []
    for c in ctx.data.naming["components"]:
        doc = ctx.prose(c["doc"])
        if c.get("values"):
            doc += " Values: " + "; ".join(f"{code(v)}: {ctx.prose(d)}" for v, d in c["values"].items()) + "."
        key = ctx.ref("key", c["metadata_key"]) if c.get("metadata_key") else "—"
        rows.append(
            [
                f'<a id="{anchor("naming", c["id"])}"></a>{code(c["id"])}',
                "yes" if c["optional"] else "no",
                code(c["pattern"]),
                key,
                doc,
            ]
        )
    return table(["component", "optional", "pattern", "metadata key", "meaning"], rows)


def _sec_naming_regex(ctx: Ctx) -> str:
    rx = ctx.data.naming["regex"]
    out = [
        ctx.prose(rx["doc"]) + "\n",
        f"Python ({', '.join('re.' + f for f in rx.get('flags', []))}):\n",
        fence(rx["python"], "regex"),
        "JavaScript, as published:\n",
        fence(rx["javascript"], "regex"),
    ]
    if rx.get("errata"):
        out.append("Errata of the published convention:\n")
        out.append("\n".join(f"- {ctx.prose(e)}" for e in rx["errata"]) + "\n")
    out.append(f"Source: {esc(rx['doc_ref'])}.\n")
    return "\n".join(out)


def _sec_naming_shard(ctx: Ctx) -> str:
    sh = ctx.data.naming["shard"]
    return "\n".join(
        [
            ctx.prose(sh["doc"]) + "\n",
            table(
                ["property", "value"],
                [
                    ["format", code(sh["format"])],
                    ["regex", code(sh["regex"])],
                    ["first number", str(sh["first_number"])],
                    ["number from", code(sh["number_from"])],
                    ["total from", code(sh["total_from"])],
                ],
            ),
            f"Source: {esc(sh['doc_ref'])}.\n",
        ]
    )


def _sec_naming_examples(ctx: Ctx) -> str:
    rows = []
    for ex in ctx.data.naming["examples"]:
        parse = ex.get("parse") or {}
        parts = "<br>".join(f"{ctx.ref('naming', k, k)} = {code(v)}" for k, v in parse.items() if v is not None)
        rules = ", ".join(ctx.ref("rule", r, r) for r in ex.get("rules", []))
        note = join_nonempty([ctx.prose(ex.get("note", "")), f"Rules: {rules}." if rules else ""])
        rows.append([code(ex["name"]), "yes" if ex["valid"] else "**no**", parts or "—", note, esc(ex["source"])])
    return (
        'Worked examples; "matches" is the result of the regex, parsed components leave out the empty '
        "ones.\n\n" + table(["file name", "matches", "components", "note", "source"], rows)
    )


PAGE = Page(
    "naming.md",
    "Naming convention",
    "the file naming convention, its regex and worked examples",
    intro("Naming convention", "How GGUF files are recommended to be named."),
    (
        Section("naming-overview", "Overview", _sec_naming_overview),
        Section("naming-components", "Components", _sec_naming_components),
        Section("naming-regex", "Regex", _sec_naming_regex),
        Section("naming-shards", "Shards", _sec_naming_shard),
        Section("naming-examples", "Examples", _sec_naming_examples),
    ),
    defines=lambda d: (anchor("naming", c["id"]) for c in d.naming["components"]),
    count=lambda d: f"{len(d.naming['examples'])} examples",
)
