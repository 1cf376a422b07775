"""``gguf-construct rule ID``: one conformance rule explained where the terminal is, as ``ruff rule`` does.

Prints the rule's title and text, its severity under every profile, whether ``load`` refuses it, what it
applies to, how ggml's reader and gguf-py treat it, its spec references and its page in the reference, and an
example: the crafted file of :mod:`gguf_construct.breaking.crafting` that breaks it, checked, with the
findings the checker gives (so the example is run, not written).  ``gguf-construct rule --all`` lists every rule.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from ..rulebook.catalog import PROFILES, Rule, catalog

__all__ = ["explain", "example", "render_text", "add_cli"]

DOCS_RULES_PAGE = "docs/rules.md"


def rules_page() -> str:
    """Where the rules page is: docs/rules.md in a source checkout, else the copy the installed package ships."""
    from ..docgen import pages_dir

    where = pages_dir()
    if where is None or _spec_in_checkout():
        return DOCS_RULES_PAGE
    return str(where / "rules.md")


def _spec_in_checkout() -> bool:
    from ..format.spec import in_checkout

    return in_checkout()


@contextlib.contextmanager
def _limits(values: dict) -> Iterator[None]:
    """The implementation limits lowered for one crafted case (restored afterwards)."""
    from ..rulebook import container

    saved = dict(container.LIMITS)
    container.LIMITS.update(values)
    try:
        yield
    finally:
        container.LIMITS.clear()
        container.LIMITS.update(saved)


def example(rule_id: str) -> dict | None:
    """The first crafted file that breaks ``rule_id``, checked: its breakage, the profile and the rule's findings."""
    from ..breaking import crafting
    from ..checker import check

    breakages = crafting.breakages_for(rule_id)
    if not breakages:
        return None
    crafted = crafting.craft(breakages[0].name)
    files = crafted.files or {crafted.file_name: crafted.data}
    with tempfile.TemporaryDirectory(prefix="gguf-rule-") as tmp, _limits(crafted.limits):
        paths = []
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
            paths.append(str(Path(tmp) / name))
        reports = [check(p, profile=crafted.profile, data=crafted.check_data) for p in paths]  # a first shard
        # reads its siblings itself and carries the set's findings
    findings = [f.to_dict() for r in reports for f in r.findings if f.rule == rule_id]
    command = (
        "gguf-construct check"
        + (f" --profile {crafted.profile}" if crafted.profile != "spec" else "")
        + (" --data" if crafted.check_data else "")
        + " "
        + " ".join(files)
    )
    return {
        "breakage": crafted.name,
        "doc": crafted.doc,
        "files": list(files),
        "profile": crafted.profile,
        "command": command,
        "limits": dict(crafted.limits),
        "findings": findings,
    }


def explain(rule: Rule, with_example: bool = True) -> dict[str, Any]:
    """Everything ``rule`` prints, as plain data."""
    from ..docgen.markdown import anchor  # here: importing docgen builds its pages, which no other command needs

    raw = rule.raw
    out: dict[str, Any] = {
        "id": rule.id,
        "title": rule.title,
        "doc": " ".join(rule.doc.split()),
        "severity": {p: rule.severity(p) for p in PROFILES},
        "load_refuses": raw.get("load") == "refuse",
        "applies_to": list(raw.get("applies_to") or ()),
        "readers": {"ggml gguf.cpp rejects": raw.get("c_reader"), "gguf-py 0.19.0 rejects": raw.get("gguf_py")},
        "message": rule.message,
        "source": " ".join(str(rule.source).split()),
        "spec_ref": " ".join(str(raw.get("doc_ref", "")).split()),
        "docs": f"{rules_page()}#{anchor('rule', rule.id)}",
        "see_also": list(raw.get("see_also") or ()),
    }
    if raw.get("key_check"):  # a rule declared in spec/rules.yaml alone (checker/declared.py)
        from ..checker.declared import describe

        out["checks"] = describe(raw["key_check"])
    if with_example:
        out["example"] = example(rule.id)
    return out


def _wrap(text: str, width: int = 100, indent: str = "") -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)


def render_text(info: dict[str, Any]) -> str:
    """The terminal form of :func:`explain`'s data."""
    lines = [f"{info['id']}: {info['title']}", "", _wrap(info["doc"]), ""]
    lines.append("severity    " + " · ".join(f"{p}: {s}" for p, s in info["severity"].items()))
    lines.append(
        "load        "
        + (
            "refuses the file (gguf_construct.load raises GGUFError)"
            if info["load_refuses"]
            else "reads the file (check reports it)"
        )
    )
    if info["applies_to"]:
        lines.append("applies to  " + ", ".join(info["applies_to"]))
    if info.get("checks"):
        lines.append("checks      " + info["checks"])
    lines.append("readers     " + "; ".join(f"{k}: {v}" for k, v in info["readers"].items() if v))
    lines.append("message     " + info["message"])
    lines.append(_wrap("source      " + info["source"]).replace("\n", "\n            "))
    if info["spec_ref"]:
        lines.append(_wrap("spec        " + info["spec_ref"]).replace("\n", "\n            "))
    lines.append("docs        " + info["docs"])
    if info["see_also"]:
        lines.append("see also    " + ", ".join(info["see_also"]))
    ex = info.get("example")
    if ex:
        lines += [
            "",
            f"Example: breakage {ex['breakage']!r} of gguf_construct.breaking.crafting"
            + (f" ({ex['doc'].rstrip('.')})" if ex["doc"] else ""),
        ]
        if ex["limits"]:
            lines.append("  with lowered limits " + ", ".join(f"{k}={v}" for k, v in ex["limits"].items()))
        lines.append(f"  $ {ex['command']}")
        for f in ex["findings"][:5]:
            where = f" at byte {f['offset']}" if f["offset"] is not None else ""
            path = f" ({f['path']})" if f["path"] else ""
            lines.append(f"  {f['severity']} {f['rule']}{where}{path}: {f['message']}")
        if not ex["findings"]:
            lines.append("  (no finding of this rule under that profile)")
    return "\n".join(lines) + "\n"


def _cmd_rule(args: argparse.Namespace) -> int:
    rules = catalog()
    if args.all or not args.id:
        if args.format == "json":
            json.dump([explain(r, with_example=False) for r in rules.values()], sys.stdout, indent=1)
            print()
            return 0
        width = max(len(r) for r in rules)
        for r in rules.values():
            sev = "/".join(r.severity(p) for p in PROFILES)
            print(f"{r.id:<{width}}  {sev:<19}  {r.title}")
        print(f"\n{len(rules)} rules; severities as {'/'.join(PROFILES)}; `gguf-construct rule ID` explains one")
        return 0
    rule_id = args.id.upper()
    if rule_id not in rules:
        close = difflib.get_close_matches(rule_id, list(rules), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `gguf-construct rule --all` lists them"
        print(f"gguf-construct: no rule {args.id!r}{hint}", file=sys.stderr)
        return 2
    info = explain(rules[rule_id], with_example=not args.no_example)
    if args.format == "json":
        json.dump(info, sys.stdout, indent=1, ensure_ascii=False)
        print()
    else:
        sys.stdout.write(render_text(info))
    return 0


def _rule_ids() -> list[str]:
    return list(catalog())


def add_cli(subparsers: Any) -> None:
    """Register the ``rule`` sub-command on the CLI's subparsers."""
    p = subparsers.add_parser(
        "rule",
        help="explain a conformance rule: text, severity per profile, references, an example",
        description="Explain the conformance rule ID (as `check` reports it): its text, its "
        "severity under every profile, whether load refuses it, how ggml and "
        "gguf-py treat it, its spec references and an example file that breaks "
        "it, checked. Without ID (or with --all): every rule, one per line.",
    )
    p.add_argument(
        "id", nargs="?", metavar="ID", help="a rule ID, e.g. HDR-MAGIC (case-insensitive)"
    ).candidates = _rule_ids  # offered by shell completion (read only when it is generated)
    p.add_argument("--all", action="store_true", help="list every rule with its severities")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--no-example", action="store_true", help="leave out the example (no file is crafted)")
    p.set_defaults(func=_cmd_rule)
