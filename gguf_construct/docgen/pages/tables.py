"""The page tables.md: the lookup tables of the quantization codecs."""

from __future__ import annotations

import re

from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, intro, table


def table_users(data: SpecData) -> dict[str, list[str]]:
    """Tensor types per lookup table: named in the table's doc, or naming the table in their decode formula."""
    users: dict[str, list[str]] = {}
    for t in data.tensor_types:
        if not t.is_current:
            continue
        text = str(t.extra.get("decode", "")) + " " + t.doc
        for tab in data.tables:
            if re.search(rf"\b{re.escape(tab['name'])}\b", text) or re.search(
                rf"\b{re.escape(t.name)}\b", str(tab.get("doc", ""))
            ):
                users.setdefault(tab["name"], []).append(t.name)
    return users


def _sec_tables(ctx: Ctx) -> str:
    users = table_users(ctx.data)
    rows = []
    for tab in ctx.data.tables:
        shape = " × ".join(str(s) for s in tab.get("shape", []))
        used = ", ".join(ctx.ref("tt", n) for n in users.get(tab["name"], [])) or "—"
        rows.append(
            [
                f'<a id="{anchor("table", tab["name"])}"></a>{code(tab["name"])}',
                code(tab["c_name"]),
                ctx.ref("prim", tab["dtype"]),
                shape,
                used,
                ctx.prose(tab["doc"]) + f" Source: {esc(tab.get('doc_ref', ''))}.",
            ]
        )
    return (
        "Constant lookup tables of the quantization codecs. The values themselves are in "
        f"{code('spec/tables/<name>.yaml')}; entries wider than a byte are little-endian integers whose bytes "
        "hold the packed values.\n\n" + table(["table", "C name", "element", "shape", "used by", "meaning"], rows)
    )


PAGE = Page(
    "tables.md",
    "Lookup tables",
    "constant tables used by the quantization codecs",
    intro("Lookup tables", "Tables of constants that some tensor types decode through."),
    (Section("lookup-tables", "Tables", _sec_tables),),
    defines=lambda d: (anchor("table", t["name"]) for t in d.tables),
    count=lambda d: f"{len(d.tables)} tables",
)
