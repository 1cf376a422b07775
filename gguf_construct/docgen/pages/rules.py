"""The page rules.md: the conformance rule catalog."""

from __future__ import annotations

import re

from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, heading, intro, join_nonempty, table


_NO_RULES = "_spec/rules.yaml is not present yet; the rule catalog will appear here when it is._\n"


def _sec_rules_overview(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    meta = r["meta"]
    counts: dict[tuple[str, str], int] = {}
    for rule in r["rules"]:
        grp = rule["id"].split("-")[0]
        counts[(grp, rule["severity"])] = counts.get((grp, rule["severity"]), 0) + 1
    sevs = list(meta.get("severities", {}))
    summary = table(
        ["group", *sevs, "total"],
        [
            [ctx.link(anchor("rulegroup", g["prefix"]), f"{g['prefix']}: {esc(g['title'])}")]
            + [str(counts.get((g["prefix"], s), 0)) for s in sevs]
            + [str(sum(counts.get((g["prefix"], s), 0) for s in sevs))]
            for g in r["groups"]
        ],
        "l" + "r" * (len(sevs) + 1),
    )
    intro_text, fields = _doc_by_field(meta["doc"], r["rules"])
    field_rows = [[", ".join(code(part) for part in f.split(" and ")), ctx.prose(t)] for f, t in fields]
    field_table = table(["field of a rule", "meaning"], field_rows) if field_rows else ""
    return "\n".join(
        [
            ctx.prose(intro_text) + "\n",
            field_table,
            f"Source: {esc(meta['doc_ref'])}.\n",
            table(["severity", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("severities", {}).items()]),
            table(
                ["reader verdict", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("verdicts", {}).items()]
            ),
            f"Findings kept per rule and file: {meta['findings_per_rule']}. "
            + ctx.prose(meta["findings_per_rule_doc"])
            + "\n",
            f"{len(r['rules'])} rules (severity under the spec profile):\n",
            summary,
        ]
    )


_FIELD_LEAD_RE = re.compile(r"^('?[\w.]+'?(?::\s*\w+)?(?:\s+and\s+[\w.]+)?)\s+(.*)$", re.S)


def _field_of(lead: str) -> str:
    """The rule field a sentence's lead names: ``profiles.ggml`` of itself, ``load`` of ``load: refuse``."""
    return lead.split(":")[0].split(" and ")[0].strip("'")


def _doc_by_field(doc: str, rules: list[dict]) -> tuple[str, list[tuple[str, str]]]:
    """The catalog's description as its first sentence and a (field, meaning) row per rule field it explains:
    a sentence that starts with a field of the rules (``severity``, ``profiles.ggml``, ``load: refuse`` ...) opens
    a row, and the sentences after it, or about the same field, join that row.  The text is the spec's, laid out."""
    known = {key for rule in rules for key in rule}
    sentences = re.split(r"(?<=\.) (?=\S)", doc.strip())
    intro_text, rows = sentences[0], []
    for sentence in sentences[1:]:
        lead = _FIELD_LEAD_RE.match(sentence)
        field = _field_of(lead.group(1)) if lead else ""
        if field.split(".")[0] in known and not (rows and _field_of(rows[-1][0]) == field):
            rows.append((lead.group(1), lead.group(2)))
        elif rows:
            rows[-1] = (rows[-1][0], rows[-1][1] + " " + sentence)
        else:
            intro_text += " " + sentence
    return intro_text, rows


def _sec_rule_groups(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    out = [
        "Columns: severity under the **spec** and **ggml** profiles; whether ggml's gguf.cpp (**C**) and "
        "gguf-py 0.19.0 (**py**) reject a file that breaks the rule.\n"
    ]
    for g in r["groups"]:
        out.append(heading(3, anchor("rulegroup", g["prefix"]), f"{g['prefix']}: {esc(g['title'])}"))
        out.append(ctx.prose(g["doc"]) + "\n")
        rows = []
        for rule in r["rules"]:
            if rule["id"].split("-")[0] != g["prefix"]:
                continue
            prof = rule.get("profiles", {})
            desc = [f"**{esc(rule['title'])}.** {ctx.prose(rule['doc'])}"]
            if rule.get("notes"):
                desc.append(ctx.prose(rule["notes"]))
            desc.append(f"Message: {code(rule['message'])}")
            if rule.get("load") == "refuse":
                desc.append(f"{code('load')} refuses a file breaking it (raises {code('GGUFError')}).")
            if rule.get("dormant"):
                desc.append("Dormant: " + ctx.prose(rule["dormant"]))
            if rule.get("applies_to"):
                desc.append("Applies to: " + ", ".join(code(a) for a in rule["applies_to"]) + ".")
            if rule.get("key_check"):  # declared in spec/rules.yaml alone
                from ...checker.declared import describe

                desc.append("Checks that " + esc(describe(rule["key_check"])) + ".")
            if rule.get("see_also"):
                desc.append("See also " + ", ".join(ctx.ref("rule", s, s) for s in rule["see_also"]) + ".")
            desc.append(ctx.errata_note("rule", rule["id"]))
            desc = [d for d in desc if d]
            rows.append(
                [
                    f'<a id="{anchor("rule", rule["id"])}"></a>{code(rule["id"])}',
                    _sev(prof.get("spec", rule["severity"])),
                    _sev(prof.get("ggml", rule["severity"])),
                    esc(rule.get("c_reader", "")),
                    esc(rule.get("gguf_py", "")),
                    "<br>".join(desc),
                    join_nonempty(
                        [esc(rule.get("source", "")), f"({esc(rule['doc_ref'])})" if rule.get("doc_ref") else ""]
                    ),
                ]
            )
        out.append(
            table(["ID", "spec", "ggml", "C", "py", "description", "source"], rows)
            if rows
            else "_No rules in this group._\n"
        )
    known = {g["prefix"] for g in r["groups"]}
    orphans = [rule["id"] for rule in r["rules"] if rule["id"].split("-")[0] not in known]
    if orphans:
        out.append("**Rules without a group:** " + ", ".join(code(o) for o in orphans) + "\n")
    return "\n".join(out)


def _sev(s: str) -> str:
    return f"**{s}**" if s == "error" else s


def _sec_rule_placeholders(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    return "Placeholders of the message templates (Python str.format fields):\n\n" + table(
        ["placeholder", "meaning"], [[code("{" + k + "}"), ctx.prose(v)] for k, v in r.get("placeholders", {}).items()]
    )


def _defines(data: SpecData):
    if data.rules:
        yield from (anchor("rulegroup", grp["prefix"]) for grp in data.rules["groups"])
        yield from (anchor("rule", r["id"]) for r in data.rules["rules"])


PAGE = Page(
    "rules.md",
    "Conformance rules",
    "every check of the conformance checker, with its verdicts",
    intro("Conformance rules", "The conformance rule catalog: what makes a GGUF file invalid or suspicious."),
    (
        Section("rules-overview", "Overview", _sec_rules_overview),
        Section("rule-groups", "Rules", _sec_rule_groups),
        Section("rule-placeholders", "Message placeholders", _sec_rule_placeholders),
    ),
    defines=_defines,
    count=lambda d: f"{len(d.rules['rules'])} rules" if d.rules else "not yet in the spec",
)
