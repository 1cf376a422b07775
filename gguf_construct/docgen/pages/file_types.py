"""The page file-types.md: the values of general.file_type."""

from __future__ import annotations


from ..context import Ctx, Page, Section
from ..markdown import anchor, code, esc, intro, table


def _sec_file_types(ctx: Ctx) -> str:
    meta = ctx.data.file_types["meta"]
    st = table(["status", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("statuses", {}).items()])
    rows = []
    for ft in ctx.data.file_types["file_types"]:
        tt = ctx.ref("tt", ft["tensor_type"]) if ft.get("tensor_type") else "—"
        rows.append(
            [
                str(ft["value"]),
                f'<a id="{anchor("ftype", ft["name"])}"></a>{code(ft["name"])}',
                code(ft["c_name"]),
                ft["status"],
                tt,
                ctx.prose(ft.get("doc", "")),
            ]
        )
    return "\n".join(
        [
            ctx.prose(meta["doc"]) + f" Key: {ctx.ref('key', meta['key'])}.\n",
            f"Source: {esc(meta['doc_ref'])}.\n",
            st,
            table(["value", "name", "C name", "status", "main tensor type", "meaning"], rows, "rlllll"),
        ]
    )


PAGE = Page(
    "file-types.md",
    "File types",
    "values of general.file_type (llama_ftype)",
    intro("File types", "The values of the optional `general.file_type` key."),
    (Section("file-types", "Values", _sec_file_types),),
    defines=lambda d: (anchor("ftype", ft["name"]) for ft in d.file_types["file_types"]),
    count=lambda d: f"{len(d.file_types['file_types'])} values",
)
