"""The generated reference in docs/: fresh, complete (every spec entry defined exactly once), linked, fast.

Also checks that the spec files the docs render keep their declared top-level section order.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from gguf_construct import docgen
from gguf_construct.commands import docs as docs_command
from gguf_construct.format import spec

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SPEC = ROOT / "spec"

ANCHOR_RE = re.compile(r'<a id="([^"]+)"></a>')
LINK_RE = re.compile(r"\]\(([A-Za-z0-9_./-]*\.md)?#([^)\s]+)\)")

pytestmark = pytest.mark.skipif(spec.spec_dir() != SPEC, reason="package not installed from this checkout")


def _load(relative: str):
    with open(SPEC / relative, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _pages() -> dict[str, str]:
    """Every page of docs/ by its path relative to docs/ (``architectures/llama.md``)."""
    return {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))}


def _resolve(page: str, link: str) -> str:
    """The docs-relative path a relative link on ``page`` points at."""
    parts = page.split("/")[:-1]
    for part in link.split("/"):
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def _expected_definitions() -> list[str]:
    """Anchors for every entry of the spec, enumerated straight from the YAML (not through docgen's tables)."""
    a = docgen.anchor
    g = _load("gguf.yaml")
    out = [a("prim", p["id"]) for p in g["primitives"]]
    out += [a("alias", n) for n in g["aliases"]]
    out += [a("version", v["version"]) for v in g["versions"]]
    out += [a("vt", v["name"]) for v in g["value_types"]]
    for sname, sdef in g["types"].items():
        out.append(a("struct", sname))
        out += [a("field", sname, f["id"]) for f in sdef["seq"]]
    for path in sorted((SPEC / "tensor_types").glob("*.yaml")):
        t = _load(f"tensor_types/{path.name}")
        out.append(a("tt", t["name"]))
        out += [a("ttf", t["name"], f["id"]) for f in t.get("fields") or ()]
    for path in sorted((SPEC / "tables").glob("*.yaml")):
        head = path.read_text(encoding="utf-8").split("\nvalues:")[0]
        out.append(a("table", yaml.safe_load(head)["name"]))
    keys = _load("keys.yaml")
    out += [a("keysec", s["id"]) for s in keys["sections"]]
    out += [a("key", k["key"]) for k in keys["keys"]]
    out += [a("arch", x["id"]) for x in keys["architectures"]]
    out += [a("ftype", f["name"]) for f in _load("file_types.yaml")["file_types"]]
    out += [a("naming", c["id"]) for c in _load("naming.yaml")["components"]]
    if (SPEC / "rules.yaml").is_file():
        rules = _load("rules.yaml")
        out += [a("rulegroup", grp["prefix"]) for grp in rules["groups"]]
        out += [a("rule", r["id"]) for r in rules["rules"]]
    if (SPEC / "errata.yaml").is_file():
        out += [a("erratum", e["id"]) for e in _load("errata.yaml")["errata"]]
    out += [
        a("model", _load(f"architectures/{p.name}")["id"])
        for p in sorted((SPEC / "architectures").glob("*.yaml"))
        if not p.name.startswith("_")
    ]
    names = _load("tensor_names.yaml")
    out += [a("tensorgroup", g["id"]) for g in names["groups"]]
    tensor_names = _load("architectures/_loader.yaml")["tensor_names"]
    out += sorted({a("tensor", n.replace("%d", "{i}", 1).replace("%d", "{j}", 1)) for n in tensor_names.values()})
    return out


# ----------------------------------------------------------------------------------------------------------------
# freshness
# ----------------------------------------------------------------------------------------------------------------


def test_docs_are_up_to_date():
    """docs/ is exactly what spec/ generates: after changing spec/, run `gguf-construct docs` and commit."""
    assert docgen.check_docs(DOCS) == []


def test_cli_check(capsys):
    """`gguf-construct docs --check` exits 0 on the checked-in docs (through the sub-command docgen registers)."""
    parser = argparse.ArgumentParser()
    docs_command.add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["docs", "--check", "--out", str(DOCS)])
    assert args.func(args) == 0


def test_gguf_construct_docs_check():
    """The real command line: `gguf-construct docs --check` exits 0."""
    from gguf_construct.commands.main import main

    assert main(["docs", "--check", "--out", str(DOCS)]) == 0


def test_check_reports_stale_and_write_keeps_prose(tmp_path, capsys):
    out = tmp_path / "docs"
    shutil.copytree(DOCS, out)
    docgen.write_docs(out)  # independent of whether the checked-in docs are fresh
    page = out / "tensor-types.md"
    text = page.read_text(encoding="utf-8")
    prose = "Hand-written note that must survive regeneration.\n"
    text = text.replace(
        "<!-- BEGIN GENERATED: tensor-types-summary -->\n",
        prose + "\n<!-- BEGIN GENERATED: tensor-types-summary -->\nstale line\n",
        1,
    )
    page.write_text(text, encoding="utf-8")
    (out / "errata.md").unlink()

    problems = docgen.check_docs(out)
    assert any("tensor-types.md: stale" in p for p in problems)
    assert any("errata.md: missing" in p for p in problems)

    parser = argparse.ArgumentParser()
    docs_command.add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["docs", "--check", "--out", str(out)])
    assert args.func(args) == 1
    assert "tensor-types.md" in capsys.readouterr().err

    changed = {p.name for p in docgen.write_docs(out)}
    assert changed == {"tensor-types.md", "errata.md"}
    assert docgen.check_docs(out) == []
    regenerated = page.read_text(encoding="utf-8")
    assert prose in regenerated and "stale line" not in regenerated


def test_splice_only_replaces_inside_markers():
    page = docgen.Page("x.md", "X", "x", "# X\n", ())
    existing = (
        "# Mine\n\nintro\n\n<!-- BEGIN GENERATED: a -->\nold\n<!-- END GENERATED -->\n\nmiddle\n\n"
        "<!-- BEGIN GENERATED: gone -->\nkept\n<!-- END GENERATED -->\n"
    )
    out = docgen.splice(existing, page, {"a": "new\n", "b": "added\n"})
    assert out.startswith("# Mine\n\nintro\n\n<!-- BEGIN GENERATED: a -->\nnew\n<!-- END GENERATED -->\n\nmiddle\n")
    assert "<!-- BEGIN GENERATED: gone -->\nkept\n" in out
    assert out.rstrip().endswith("<!-- BEGIN GENERATED: b -->\nadded\n<!-- END GENERATED -->")
    assert docgen.splice(out, page, {"a": "new\n", "b": "added\n"}) == out


def test_generation_is_deterministic(tmp_path):
    for fn in (spec.load_yaml, spec.tensor_types, spec.primitives):
        fn.cache_clear()
    first = docgen.render_all(DOCS)
    second = docgen.render_all(DOCS)
    assert first == second
    text = "\n".join(first.values())
    assert not re.search(r"20\d\d-\d\d-\d\d[T ]\d\d:\d\d", text), "no timestamps in generated docs"


# ----------------------------------------------------------------------------------------------------------------
# coverage and links
# ----------------------------------------------------------------------------------------------------------------


def test_every_spec_entry_is_defined_exactly_once():
    expected = _expected_definitions()
    assert len(expected) == len(set(expected)), "anchor() maps two spec entries to one id"
    found = Counter(m.group(1) for text in _pages().values() for m in ANCHOR_RE.finditer(text))
    duplicates = sorted(k for k, n in found.items() if n > 1)
    assert not duplicates, f"defined more than once: {duplicates}"
    missing = sorted(set(expected) - set(found))
    assert not missing, f"spec entries without a definition in docs/: {missing}"
    section_ids = {s.name for p in docgen.PAGES for s in p.sections}
    stale = sorted(set(found) - set(expected) - section_ids)
    assert not stale, f"anchors that no spec entry explains: {stale}"


def test_links_resolve():
    pages = _pages()
    anchors = {name: set(ANCHOR_RE.findall(text)) for name, text in pages.items()}
    broken = []
    for name, text in pages.items():
        for m in LINK_RE.finditer(text):
            target = _resolve(name, m.group(1)) if m.group(1) else name
            if target not in anchors or m.group(2) not in anchors[target]:
                broken.append(f"{name}: {m.group(0)}")
    assert not broken, broken


def test_definitions_are_referenced_by_link_not_redefined():
    """Rule IDs, tensor types and keys mentioned outside their definition are links to it."""
    pages = _pages()
    rules = _load("rules.yaml")["rules"] if (SPEC / "rules.yaml").is_file() else []
    defined_in = {docgen.anchor("rule", r["id"]): r["id"] for r in rules}
    for name, text in pages.items():
        for m in re.finditer(r"`([A-Z]+(?:-[A-Z0-9]+)+)`", text):
            rid = m.group(1)
            if docgen.anchor("rule", rid) not in defined_in:
                continue
            before = text[max(0, m.start() - 60) : m.start()]
            assert f'id="{docgen.anchor("rule", rid)}"' in before or before.endswith("["), (
                f"{name}: rule {rid} mentioned without a link"
            )


def test_index_links_every_page():
    """The index links every listed page; the architectures page links every architecture's page."""
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    archs = (DOCS / "architectures.md").read_text(encoding="utf-8")
    for page in docgen.PAGES:
        if page.file == "README.md":
            continue
        if page.listed:
            assert f"]({page.file})" in index
            for s in page.sections:
                assert f"]({page.file}#{s.name})" in index
        else:
            assert page.file.startswith("architectures/")
            assert f"]({page.file}#" in archs


def test_readme_links_docs():
    assert "(docs/README.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_fences_are_closed_and_layout_pages_show_pictures():
    """The layout pictures are generated SVG files (docs/pictures/, see tests/test_pictures.py), no longer Mermaid
    diagrams that a viewer has to render."""
    for name, text in _pages().items():
        if name in {"format.md", "tensor-types.md"}:
            shown = re.findall(r"!\[[^\]]*\]\((pictures/[^)]+\.svg)\)", text)
            assert shown, name
            assert all((DOCS / p).is_file() for p in shown), name
        assert text.count("```") % 2 == 0, name


# ----------------------------------------------------------------------------------------------------------------
# errata data
# ----------------------------------------------------------------------------------------------------------------


def test_errata_match_schema_and_spec():
    jsonschema = pytest.importorskip("jsonschema")
    errata = _load("errata.yaml")
    schema = json.loads((SPEC / "schema" / "errata.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(errata, schema)
    ids = [e["id"] for e in errata["errata"]]
    assert len(ids) == len(set(ids))
    sources = {s["id"] for s in errata["sources"]}
    types = {t.name for t in spec.tensor_types()}
    keys = {k["key"] for k in _load("keys.yaml")["keys"]}
    rules = {r["id"] for r in _load("rules.yaml")["rules"]} if (SPEC / "rules.yaml").is_file() else None
    for e in errata["errata"]:
        assert set(e["sources"]) <= sources, e["id"]
        rel = e["related"]
        assert set(rel.get("tensor_types", [])) <= types, e["id"]
        assert set(rel.get("keys", [])) <= keys, e["id"]
        if rules is not None:
            assert set(rel.get("rules", [])) <= rules, e["id"]


# ----------------------------------------------------------------------------------------------------------------
# spec section order
# ----------------------------------------------------------------------------------------------------------------

ORDERED_FILES = ["gguf.yaml", "keys.yaml", "naming.yaml", "file_types.yaml", "rules.yaml", "errata.yaml"]


@pytest.mark.parametrize("relative", ORDERED_FILES)
def test_spec_file_section_order(relative):
    """Each rendered spec file declares its top-level order in its header comment (meta first) and keeps it."""
    path = SPEC / relative
    if not path.is_file():
        pytest.skip(f"{relative} not present")
    text = path.read_text(encoding="utf-8")
    head = " ".join(line.lstrip("# ").strip() for line in text.splitlines()[:4] if line.startswith("#"))
    m = re.search(r"Sections in fixed order: ([a-z_, ]+)\.", head)
    assert m, f"{relative}: header comment does not declare 'Sections in fixed order: ...'"
    declared = [s.strip() for s in m.group(1).split(",")]
    actual = re.findall(r"^([a-z_]+):", text, re.M)
    assert declared[0] == "meta"
    assert actual == declared, f"{relative}: top-level sections {actual}, declared {declared}"


TENSOR_TYPE_ORDER = [
    "id",
    "name",
    "c_name",
    "status",
    "kind",
    "in_gguf_md",
    "block_size",
    "type_size",
    "codec",
    "imatrix",
    "c_struct",
    "doc",
    "doc_ref",
    "fields",
]
FIELD_ORDER = ["id", "type", "count", "doc", "c_decl", "nan_codes"]
TABLE_ORDER = ["name", "c_name", "dtype", "shape", "doc", "doc_ref", "values"]


def _in_order(keys: list[str], canonical: list[str]) -> bool:
    positions = [canonical.index(k) for k in keys if k in canonical]
    return positions == sorted(positions) and all(k in canonical for k in keys)


def test_tensor_type_key_order():
    """Tensor type files share one key order; `decode` (added by codec authors) sits between doc and fields."""
    bad = []
    for path in sorted((SPEC / "tensor_types").glob("*.yaml")):
        raw = _load(f"tensor_types/{path.name}")
        keys = list(raw)
        if "decode" in keys:
            i = keys.index("decode")
            if not keys.index("doc") < i < keys.index("fields"):
                bad.append(f"{path.name}: decode outside doc..fields")
            keys.remove("decode")
        if not _in_order(keys, TENSOR_TYPE_ORDER):
            bad.append(f"{path.name}: {keys}")
        for f in raw.get("fields") or ():
            if not _in_order(list(f), FIELD_ORDER):
                bad.append(f"{path.name} field {f.get('id')}: {list(f)}")
    assert not bad, bad


def test_table_key_order():
    bad = []
    for path in sorted((SPEC / "tables").glob("*.yaml")):
        keys = re.findall(r"^([a-z_]+):", path.read_text(encoding="utf-8"), re.M)
        if not _in_order(keys, TABLE_ORDER):
            bad.append(f"{path.name}: {keys}")
    assert not bad, bad


def test_docs_out_into_a_fresh_folder_keeps_the_hand_written_prose_and_the_spec_link(tmp_path):
    """`docs --out NEW` seeds each page from the checked-in one (prose outside the markers kept) and points the
    links to spec/ at the real spec folder from there (they were ../spec, broken anywhere but docs/)."""
    out = tmp_path / "a" / "b"
    docgen.write_docs(out)
    readme = (out / "README.md").read_text(encoding="utf-8")
    checked_in = (DOCS / "README.md").read_text(encoding="utf-8")
    assert checked_in.split("<!--")[0].strip().splitlines()[0] in readme
    assert "](../spec)" not in readme
    link = readme.split("[`spec/`](", 1)[1].split(")", 1)[0]
    assert (out / link / "gguf.yaml").is_file()
    assert docgen.check_docs(out) == []
    for page in docgen.PAGES:  # every hand-written paragraph of the checked-in pages survives
        ours = (out / page.file).read_text(encoding="utf-8")
        mine = (DOCS / page.file).read_text(encoding="utf-8")
        outside = [p for p in mine.split("<!-- END GENERATED -->")[-1].split("\n\n") if p.strip()]
        assert all(p in ours for p in outside), page.file
