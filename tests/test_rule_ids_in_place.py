"""Rule IDs are spelled in the rule layers only (issue #40): rulebook/, checker/, breaking/, suite/ and docgen/
register, raise and label rules; every other module asks for a rule by a name the spec declares (the ``breaks`` of
spec/gguf.yaml fields, of spec/naming.yaml shards) or the rule layer holds.  And the split rules are raised by
format/splitset.py only."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

PACKAGE = Path(__file__).resolve().parent.parent / "gguf_construct"
RULE_LAYERS = ("rulebook", "checker", "breaking", "suite", "docgen")


def _rule_ids() -> set[str]:
    rules = yaml.safe_load((PACKAGE.parent / "spec" / "rules.yaml").read_text(encoding="utf-8"))["rules"]
    return {r["id"] for r in rules}


def _spelled(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    """(line, rule ID) of every string constant of a module that is a rule ID."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids
    ]


def test_no_module_outside_the_rule_layers_spells_a_rule_id():
    ids = _rule_ids()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in RULE_LAYERS:
            continue
        found += [f"{rel}:{line}: {rule}" for line, rule in _spelled(path, ids)]
    assert not found, "rule IDs outside the rule layers:\n" + "\n".join(found)


def test_the_scan_sees_a_spelling():
    ids = _rule_ids()
    assert _spelled(PACKAGE / "rulebook" / "tensors.py", ids)  # the rule layer spells them, and the scan sees it


def test_split_rules_are_raised_by_splitset_only():
    """GGUFError(..., rule=...) naming a split rule is built in format/splitset.py and nowhere else."""
    split_rules = {r for r in _rule_ids() if r.startswith("META-SPLIT-")} | {"NAME-SHARD"}
    naming = yaml.safe_load((PACKAGE.parent / "spec" / "naming.yaml").read_text(encoding="utf-8"))
    assert set(naming["shard"]["breaks"].values()) <= split_rules
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in RULE_LAYERS or rel == Path("format/splitset.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "GGUFError":
                for kw in node.keywords:
                    if kw.arg == "rule":
                        value = kw.value
                        assert not (isinstance(value, ast.Constant) and value.value in split_rules), (rel, node.lineno)
                        assert not (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "breaks"), (
                            rel,
                            node.lineno,
                        )
