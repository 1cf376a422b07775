"""The page security.md: published advisories against GGUF parsers -> trigger -> rule -> profiles, and the
chat-template rules (spec/advisories.yaml, spec/templates.yaml, spec/rules.yaml)."""

from __future__ import annotations

from ... import spec as _spec
from ...rulebook.catalog import PROFILE_FALLBACK, PROFILES
from ..context import Ctx, Page, Section, SpecData
from ..markdown import code, esc, intro, table


def _advisories() -> dict:
    return _spec.load_yaml("advisories.yaml")


def _templates() -> dict:
    return _spec.load_yaml("templates.yaml")


def _verdict(rule: dict, profile: str) -> str:
    prof = rule["profiles"]
    while profile not in prof and profile in PROFILE_FALLBACK:
        profile = PROFILE_FALLBACK[profile]
    return prof[profile]


def _rules(ctx: Ctx) -> dict:
    return {r["id"]: r for r in ctx.data.rules["rules"]} if ctx.data.rules else {}


def _rule_cell(ctx: Ctx, entry) -> str:
    rid = entry if isinstance(entry, str) else entry["rule"]
    out = ctx.ref("rule", rid)
    if isinstance(entry, dict):
        narrow = [f"path contains {code(entry['path'])}"] if "path" in entry else []
        if "param" in entry:
            narrow.append(f"{code(entry['param'])} = {code(entry['equals'])}" if "equals" in entry
                          else f"{code(entry['param'])} ≥ {entry['min']}")
        out += " (" + ", ".join(narrow) + ")"
    return out


def _profiles_cell(ctx: Ctx, entries) -> str:
    rules = _rules(ctx)
    ids = [e if isinstance(e, str) else e["rule"] for e in entries]
    cells = []
    for p in PROFILES:
        sevs = sorted({_verdict(rules[r], p) for r in ids if r in rules})
        shown = "/".join(f"**{s}**" if s == "error" else s for s in sevs)
        cells.append(f"{p}: {shown}")
    return "<br>".join(cells)


def _sec_overview(ctx: Ctx) -> str:
    a, t = _advisories(), _templates()
    return "\n".join([
        ctx.prose(a["meta"]["doc"]) + "\n",
        ctx.prose(t["meta"]["doc"]) + "\n",
        "Scan files or folders; every finding that matches an advisory ends with its ID, and the SARIF output "
        "carries the IDs in each rule's `properties.tags` (with `security`) and the advisory's page as `helpUri`:\n",
        "```sh\ngguf-construct check --format sarif models/ > scan.sarif\n"
        "gguf-construct check --profile ggml model.gguf\n```\n",
        f"Sources: {esc(a['meta']['doc_ref'])}; {esc(t['meta']['doc_ref'])}.\n"])


def _sec_advisories(ctx: Ctx) -> str:
    rows = []
    for adv in _advisories()["advisories"]:
        ids = " / ".join([f"[{esc(adv['id'])}]({adv['source']})", *map(esc, adv.get("aliases", []))])
        rows.append([ids, esc(adv["parser"]), f"**{esc(adv['title'])}.** {ctx.prose(adv['trigger'])}",
                     "<br>".join(_rule_cell(ctx, e) for e in adv["rules"]), _profiles_cell(ctx, adv["rules"]),
                     code(adv["reproducer"])])
    limits = _advisories()["limits"]
    return "\n".join([
        f"{len(rows)} advisories. **profiles**: the severity of the catching rules under each profile of "
        "`gguf-construct check --profile` (every advisory is reported under all three). **reproducer**: the "
        "breakage of `gguf_construct.breaking.crafting` that builds a file carrying the trigger "
        "(`crafting.craft(name)`); tests/test_advisories.py checks each one.\n",
        table(["advisory", "parser", "trigger", "rules", "profiles", "reproducer"], rows),
        f"Limits: alignment at or above {limits['alignment']} is reported by "
        f"{ctx.ref('rule', 'SEC-ALIGN-HUGE')}; ggml's context overhead per tensor is taken as "
        f"{limits['tensor_overhead']} bytes by {ctx.ref('rule', 'SEC-DATA-SIZE-OVERFLOW')}.\n"])


def _sec_templates(ctx: Ctx) -> str:
    t = _templates()
    rules = [r for r in (ctx.data.rules or {}).get("rules", []) if r["id"].startswith("TPL-")]
    rows = [[ctx.ref("rule", r["id"]), "<br>".join(f"{p}: {_verdict(r, p)}" for p in PROFILES),
             f"**{esc(r['title'])}.** {ctx.prose(r['doc'])}"] for r in rules]
    keys, limits, names = t["keys"], t["limits"], t["names"]
    scanned = table(["what", "value"], [
        ["template keys", ", ".join(code(k) for k in keys["exact"]) + f", {code(keys['prefix'] + '<name>')}; "
         "STRING, or ARRAY of STRING (the pieces joined, and each piece on its own)"],
        ["other keys", f"any STRING value containing {code(keys['statement_marker'])} that jinja2 parses"],
        ["limits", f"{limits['bytes']} bytes, nesting depth {limits['depth']}, {limits['nodes']} syntax-tree "
                   f"nodes; folding keeps at most {limits['fold_values']} values of at most "
                   f"{limits['fold_length']} characters"],
        ["escape globals", ", ".join(code(n) for n in names["escape_globals"])],
        ["modules", ", ".join(code(n) for n in names["modules"])],
        ["calls", ", ".join(code(n) for n in names["calls"])],
        ["attribute-name filters", ", ".join(code(k) for k in names["attribute_filters"])],
    ])
    return "\n".join([table(["rule", "profiles", "what it reports"], rows), scanned])


def _count(data: SpecData) -> str:
    return f"{len(_advisories()['advisories'])} advisories"


PAGE = Page("security.md", "Security", "published advisories against GGUF parsers, the rules that catch them, and "
            "the chat-template rules",
            intro("Security", "What a hostile GGUF file can do to the parsers that open it, and which checks "
                  "of `gguf-construct check` report it."),
            (Section("security-overview", "Overview", _sec_overview),
             Section("security-advisories", "Advisories", _sec_advisories),
             Section("security-templates", "Chat templates", _sec_templates)),
            count=_count)
