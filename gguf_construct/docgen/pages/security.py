"""The page security.md: published advisories against GGUF parsers -> trigger -> rule -> profiles, and the
chat-template rules (spec/advisories.yaml, spec/templates.yaml, spec/rules.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

from ...format import spec as _spec
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
            narrow.append(
                f"{code(entry['param'])} = {code(entry['equals'])}"
                if "equals" in entry
                else f"{code(entry['param'])} ≥ {entry['min']}"
            )
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
    return "\n".join(
        [
            ctx.prose(a["meta"]["doc"]) + "\n",
            ctx.prose(t["meta"]["doc"]) + "\n",
            "Scan files or folders; every finding that matches an advisory ends with its ID, and the SARIF output "
            "carries the IDs in each rule's `properties.tags` (with `security`) and the advisory's page as `helpUri`:\n",
            "```sh\ngguf-construct check --format sarif models/ > scan.sarif\n"
            "gguf-construct check --profile ggml model.gguf\n```\n",
            f"Sources: {esc(a['meta']['doc_ref'])}; {esc(t['meta']['doc_ref'])}.\n",
        ]
    )


def _sec_advisories(ctx: Ctx) -> str:
    rows = []
    for adv in _advisories()["advisories"]:
        ids = " / ".join([f"[{esc(adv['id'])}]({adv['source']})", *map(esc, adv.get("aliases", []))])
        rows.append(
            [
                ids,
                esc(adv["parser"]),
                f"**{esc(adv['title'])}.** {ctx.prose(adv['trigger'])}",
                "<br>".join(_rule_cell(ctx, e) for e in adv["rules"]),
                _profiles_cell(ctx, adv["rules"]),
                code(adv["reproducer"]),
            ]
        )
    limits = _advisories()["limits"]
    return "\n".join(
        [
            f"{len(rows)} advisories. **profiles**: the severity of the catching rules under each profile of "
            "`gguf-construct check --profile` (every advisory is reported under all three). **reproducer**: the "
            "breakage of `gguf_construct.breaking.crafting` that builds a file carrying the trigger "
            "(`crafting.craft(name)`); tests/test_advisories.py checks each one.\n",
            table(["advisory", "parser", "trigger", "rules", "profiles", "reproducer"], rows),
            f"Limits: alignment at or above {limits['alignment']} is reported by "
            f"{ctx.ref('rule', 'SEC-ALIGN-HUGE')}; ggml's context overhead per tensor is taken as "
            f"{limits['tensor_overhead']} bytes by {ctx.ref('rule', 'SEC-DATA-SIZE-OVERFLOW')}.\n",
        ]
    )


def _sec_templates(ctx: Ctx) -> str:
    t = _templates()
    rules = [r for r in (ctx.data.rules or {}).get("rules", []) if r["id"].startswith("TPL-")]
    rows = [
        [
            ctx.ref("rule", r["id"]),
            "<br>".join(f"{p}: {_verdict(r, p)}" for p in PROFILES),
            f"**{esc(r['title'])}.** {ctx.prose(r['doc'])}",
        ]
        for r in rules
    ]
    keys, limits, names = t["keys"], t["limits"], t["names"]
    scanned = table(
        ["what", "value"],
        [
            [
                "template keys",
                ", ".join(code(k) for k in keys["exact"]) + f", {code(keys['prefix'] + '<name>')}; "
                "STRING, or ARRAY of STRING (the pieces joined, and each piece on its own)",
            ],
            [
                "other keys",
                f"any STRING value containing {code(keys['statement_marker'])} that jinja2 parses "
                f"(past {limits['file_bytes']} characters of such values per file, any)",
            ],
            [
                "limits",
                f"{limits['bytes']} bytes, nesting depth {limits['depth']}, {limits['nodes']} syntax-tree "
                f"nodes, syntax-tree depth {limits['tree_depth']}; folding keeps at most "
                f"{limits['fold_values']} values of at most {limits['fold_length']} characters, "
                f"{limits['members']} members per namespace or dict, and does at most {limits['fold_work']} "
                f"characters of work; {limits['passes']} passes, widening from pass {limits['widen_after'] + 1}; "
                f"{limits['file_bytes']} characters of template text analysed per file",
            ],
            [
                "render cost",
                f"a range or nested loops of more than {limits['render_items']} items, a repetition of "
                f"more than {limits['render_chars']} characters",
            ],
            ["internal attributes", ", ".join(code(n) for n in names["internal_attributes"])],
            [
                "dunder stems (key stems)",
                ", ".join(code(n) for n in names["dunder_stems"])
                + " ("
                + ", ".join(code(n) for n in names["key_stems"])
                + ")",
            ],
            [
                "escape globals (what a call gives)",
                ", ".join(f"{code(n)} ({g})" for n, g in names["escape_globals"].items()),
            ],
            ["modules", ", ".join(code(n) for n in names["modules"])],
            ["calls", ", ".join(code(n) for n in names["calls"])],
            ["attribute-name filters", ", ".join(code(k) for k in names["attribute_filters"])],
            [
                "filters followed",
                "; ".join(
                    f"{kind}: " + ", ".join(code(f) for f in filters)
                    for kind, filters in t["values"]["filters"].items()
                ),
            ],
            ["methods followed", ", ".join(f"{code(m)} ({kind})" for m, kind in t["values"]["methods"].items())],
            [
                "runtime block tags",
                ", ".join(code(tag) for tag in t["dialect"]["block_tags"]) + " (parsed as a block of their body)",
            ],
        ],
    )
    return "\n".join([table(["rule", "profiles", "what it reports"], rows), scanned])


def _sec_template_values(ctx: Ctx) -> str:
    lim = _templates()["limits"]
    escape, limit = ctx.ref("rule", "TPL-ESCAPE"), ctx.ref("rule", "TPL-LIMIT")
    return "\n".join(
        [
            "The scan never renders a template. It computes, for every expression of the syntax tree, the set of "
            "things the expression may evaluate to, and judges each subscript, `attr` filter and attribute-name "
            "argument by the key it may really get, however the key was spelled or carried there.\n",
            "**What a value may be.** A constant string, integer or tuple; an *escape route* (one of the escape "
            "globals in the table above, or anything reached from one, or from any private attribute); a namespace or dict whose "
            "members are followed key by key; a sequence known only by its elements; a macro or `call` block; "
            "*plain data* (what the runtime passes, such as `messages[0]['content']`, and what constant keys and "
            "iteration reach in it); a *number* known only as one (`loop.index0`, a length, `range` items); or "
            "*unknown* (the result of a filter or method the table below does not list, a member picked by a key "
            "computed at render time, anything past a budget).\n",
            "**What it follows.** Constant strings through `~`, `+`, `*`, `%`, indexing and slicing, and the folding "
            "filters and methods; every binding of a name: `{% set %}` (also as a block, whose value is the text "
            "the block writes), `{% set ns.attr %}`, `namespace(...)` and `dict(...)` arguments, dict literals, "
            "`{% for %}` targets (unpacked when they are tuples), `{% with %}`, macro parameters bound at each call "
            "site (positional, keyword, defaults, extra ones in `varargs`), what a macro or `caller()` writes, and "
            "`{% call(args) %}` parameters bound by each `caller(...)`. Names are followed regardless of scope "
            "and order (every binding of a name adds to one value), which can only add values.\n",
            "**Judgement.** A subscript, `attr` filter, segment of an attribute path (`map(attribute='a.b.c')`) or "
            "`str.format` field (parsed by `string.Formatter`, nested specs included) whose name may be a private "
            "name (`__globals__`, `_TemplateReference__context`) or an internal attribute (`gi_frame`, `f_globals`: "
            "`(()|select)` is a generator, whose frame leads to the globals of jinja2's own modules) is "
            + escape
            + ". The policy for names that are not proven constants is sound: such a name reaches whatever the "
            "render-time value names, so it is " + escape + " unless it is a subscript on *plain data*: the values "
            "the runtime passes as JSON (`messages`, `tools`, `bos_token` and every other context variable that is "
            "not a global or an object jinja2 binds, such as `loop`), what constant keys and iteration reach in "
            "them, and the dict and list literals the template built. There it reaches at most the container's type "
            "(one inert hop: `prefix[m.role ~ '_start']` is silent), and what it gives is not plain data any more, "
            "so a second such key on it is an escape. A number (`loop.index0`, a length, arithmetic that cannot "
            "give a string) is a safe key on anything: jinja2 looks a key up as an attribute only when it is a "
            "string. Strings, numbers, `loop`, namespaces, globals, filter results, an attribute path or a format "
            "string that is not a proven constant, and a call of a member picked by such a key "
            "(`content[k](...)` is `str.format` when `k` is `'format'`) are all escape routes. A dunder name in "
            "text the template only writes out is silent.\n",
            f"**Where it gives up, and what it then assumes.** A value keeps at most {lim['fold_values']} constants "
            f"of at most {lim['fold_length']} characters; past that it becomes unknown for good (it absorbs further "
            f"constants). At most {lim['members']} members of one namespace or dict are followed one by one; the "
            "rest share one unknown member. Passes over the tree repeat while any value changes; from pass "
            f"{lim['widen_after'] + 1} on, a value that still changes keeps only its objects and becomes unknown "
            f"otherwise, and after {lim['passes']} passes one last pass takes whatever was not reached yet as "
            f"unknown ({limit} is reported, and an escape route indexed with it is still {escape}). A template "
            f"over {lim['bytes']} bytes, nested deeper than {lim['depth']}, with more than {lim['nodes']} syntax-tree "
            f"nodes or a tree deeper than {lim['tree_depth']} is not analysed ({limit}) and only scanned lexically "
            "for dunder names and internal attributes. Every pass walks the tree without recursion, so the work is "
            "at most the number of "
            f"passes times the nodes. Each fold is computed once per template, and folding does at most "
            f"{lim['fold_work']} characters of work (read and built, weighted by each filter's cost); past it, what "
            f"is left is unknown ({limit}), and a key made only of constants that is left unfolded is {escape}, so "
            f"spending the budget hides nothing. A file's templates are analysed in file order up to "
            f"{lim['file_bytes']} characters in all (one too large to analyse spends none of them); the rest are "
            f"scanned lexically ({limit}).\n",
        ]
    )


def _sec_template_render(ctx: Ctx) -> str:
    r = _templates()["render"]
    escape, gadget = ctx.ref("rule", "TPL-ESCAPE"), ctx.ref("rule", "TPL-GADGET")
    rows = [
        [
            "canonical conversations",
            ", ".join(code(c["name"]) for c in r["contexts"]) + " (system, "
            "multi-turn, tools, tool calls with dict and string arguments, tool results, `ipython`, reasoning, "
            "documents; `add_generation_prompt` both ways), with "
            + ", ".join(f"{code(k)} = {code(v)}" for k, v in r["globals"].items())
            + ", and `raise_exception` and `strftime_now` as Python functions",
        ],
        [
            "attack strings",
            ", ".join(code(a) for a in r["attack_strings"]) + ": each fills every field a "
            "chat user or tool writes (contents, a role, names, tool name and description, tool-call name, "
            "argument name and value, a document) of one conversation",
        ],
        [
            "trigger conversations",
            f"up to {r['triggers']} strings the template compares its input with, as "
            "roles, contents and tool names, and up to as many counts as numbers of messages and tools",
        ],
        [
            "where",
            f"{r['workers']} long-lived worker process(es), `python -I` with an empty environment, "
            "reused across templates and files, started while the static scan runs; jinja2 "
            f"{r['min_jinja2']} or later (older ones have known sandbox escapes: no rendering)",
        ],
        [
            "limits",
            f"{r['cpu_seconds']} CPU seconds (RLIMIT_CPU) and {r['wall_seconds']} wall seconds per "
            f"template, {r['memory_bytes'] >> 20} MiB address space (RLIMIT_AS), {r['output_chars']} characters "
            f"written per render (and per `*` or `**` result), {r['response_bytes']} bytes of answer, "
            f"{r['max_refusals']} refusals recorded per render, Python stack depth {r['recursion']}, templates "
            f"up to {r['max_chars']} characters; a worker past a limit is killed and replaced",
        ],
        [
            "inert",
            "one refused access on "
            + ", ".join(code(o) for o in r["inert_owners"])
            + " (a render-time key on plain data); the next hop on what it gave is reported",
        ],
    ]
    return "\n".join(
        [
            "Each template is also rendered, never unsandboxed: in a subclass of jinja2's "
            "`ImmutableSandboxedEnvironment` that records every access the sandbox refuses (a private or internal "
            "attribute by attribute, subscript, `attr`, an attribute path or a `str.format` field; an unsafe "
            "callable) with the template line, and returns a harmless undefined in its place so the render goes on "
            "and reveals more. A refused access is never performed. What a canonical or trigger conversation "
            "reaches is "
            + escape
            + " with its route; what only an attack conversation reaches is "
            + gadget
            + ", quoting the content: such a template is harmless with ordinary messages and runs code for whoever "
            "writes that message to an unsandboxed renderer. A render past a limit is "
            + ctx.ref("rule", "TPL-RESOURCE")
            + ". When the static scan reports an escape, a traced render tells "
            "whether any context ran its line. `gguf-construct check --no-render` keeps the scan parse-only.\n",
            table(["what", "value"], rows),
        ]
    )


_PEERS = Path(__file__).resolve().parents[3] / "benchmarks" / "template_peers.json"


def _sec_template_peers(ctx: Ctx) -> str:
    if not _PEERS.is_file():
        return "benchmarks/template_peers.json is not present in this installation.\n"
    rec = json.loads(_PEERS.read_text(encoding="utf-8"))
    families = sorted(set(rec["families"].values()))
    rows = []
    for name, s in rec["scanners"].items():
        if not s.get("version"):
            rows.append([esc(name), "does not install", *[""] * (len(families) + 3)])
            continue
        caught = set(s["caught"])
        per = [
            f"{sum(1 for p, f in rec['families'].items() if f == fam and p in caught)}/"
            f"{sum(1 for f in rec['families'].values() if f == fam)}"
            for fam in families
        ]
        rows.append(
            [
                esc(name),
                esc(s["version"]),
                f"**{len(caught)}/{rec['payloads']}**",
                *per,
                f"{len(s['benign_alarms'])}/{rec['benign']}",
                f"{s['real_alarms']}/{rec['real']}",
            ]
        )
    return "\n".join(
        [
            f"The adversarial set of tests/template_adversarial.py: {rec['payloads']} payloads, each proven to call "
            "`os.popen` (replaced by a probe) under a plain jinja2 Environment, written as an attacker who has read "
            f"the scanner; {rec['benign']} benign look-alikes and {rec['real']} real templates (llama.cpp's "
            "`models/templates` and llama-cpp-python's chat formats). **caught**: the scanner's highest verdict "
            "(c4nary FAIL on a TPL rule, glyphhound a gating finding, hayward critical/high, aisbom-cli HIGH or "
            "CRITICAL risk, modelvet REJECT, gguf-construct an error under `--profile spec`); **false alarms**: any "
            "template finding of warning level or worse. glyphhound's `--confirm` mode, which renders the template, "
            "was not run. Recorded by `python benchmarks/bench_template_peers.py --templates <llama-cpp-python "
            "sdist> --baseline <checkout>` into benchmarks/template_peers.json.\n",
            table(["scanner", "version", "caught", *families, "false alarms: benign", "real"], rows),
        ]
    )


def _count(data: SpecData) -> str:
    return f"{len(_advisories()['advisories'])} advisories"


PAGE = Page(
    "security.md",
    "Security",
    "published advisories against GGUF parsers, the rules that catch them, and the chat-template rules",
    intro(
        "Security",
        "What a hostile GGUF file can do to the parsers that open it, and which checks "
        "of `gguf-construct check` report it.",
    ),
    (
        Section("security-overview", "Overview", _sec_overview),
        Section("security-advisories", "Advisories", _sec_advisories),
        Section("security-templates", "Chat templates", _sec_templates),
        Section("security-template-values", "How template scanning follows values", _sec_template_values),
        Section("security-template-render", "Rendering templates in the sandbox", _sec_template_render),
        Section("security-template-peers", "Other template scanners on the adversarial set", _sec_template_peers),
    ),
    count=_count,
)
