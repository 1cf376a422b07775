"""Imports run downward through the layers that ``gguf_construct/layers.py`` declares (one folder a layer).

Every import of the package's modules (at module level or inside a function) is parsed with ``ast``; a module may
import modules of its own folder and of the layers below it, never of a folder beside it or above it, with no
exemption for command-line glue: every sub-command is registered from ``commands/``.  Argument parsing lives in the command layer only: no module outside ``commands/`` imports
``argparse``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gguf_construct"

from gguf_construct.layers import LAYERS, TOP_LEVEL, layer_of as _layer  # noqa: E402

COMMANDS = "commands"


def layer_of(module: str) -> int:
    """The layer number of a module name relative to the package (``checker.core``; ``__init__`` for the
    package)."""
    return _layer(module).number


def folder_of(module: str) -> str:
    return module.split(".")[0]


def may_import(here: str, target: str) -> bool:
    """A module imports its own folder, or a folder of a lower layer."""
    return folder_of(here) == folder_of(target) or layer_of(target) < layer_of(here)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    base = PACKAGE.joinpath(*dotted.split(".")) if dotted else PACKAGE
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: Path) -> list[tuple[str, int]]:
    """``(imported module relative to the package, line)`` for every package import of a file."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    package = list(rel[:-1])  # the package a relative import starts from
    out: list[tuple[str, int]] = []
    for child in ast.walk(ast.parse(path.read_text())):
        if isinstance(child, ast.ImportFrom):
            if child.level:
                base = package[: len(package) - child.level + 1]
                target = ".".join(base + ([child.module] if child.module else []))
            elif (child.module or "").startswith("gguf_construct"):
                target = child.module[len("gguf_construct.") :] if child.module != "gguf_construct" else ""
            else:
                continue
            for alias in child.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.append((sub if _is_module(sub) else target, child.lineno))
        elif isinstance(child, ast.Import):
            for alias in child.names:
                if alias.name.startswith("gguf_construct."):
                    out.append((alias.name[len("gguf_construct.") :], child.lineno))

    return out


def _target_name(target: str) -> str:
    return "__init__" if target in ("", "__init__") else target


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_downward(path):
    here = module_name(path)
    for target, line in imports(path):
        target = _target_name(target)
        assert may_import(here, target), (
            f"{here}:{line} (layer {layer_of(here)}, {_layer(here).holds}) imports {target} "
            f"(layer {layer_of(target)}): only its own folder and lower layers"
        )


def _imports_argparse(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "argparse":
            return True
    return False


def test_only_the_command_layer_imports_argparse():
    """Argument parsers and the glue of each command live in commands/; library modules take plain arguments."""
    outside = [
        str(p.relative_to(PACKAGE)) for p in SOURCES if folder_of(module_name(p)) != COMMANDS and _imports_argparse(p)
    ]
    assert outside == []
    assert _imports_argparse(PACKAGE / "commands" / "main.py")  # the probe sees an import when there is one


def test_every_registered_command_module_is_in_the_command_layer():
    from gguf_construct.commands.main import SUBCOMMAND_MODULES

    for name in SUBCOMMAND_MODULES:
        assert (PACKAGE / COMMANDS / f"{name}.py").is_file(), name


def test_top_level_holds_only_the_declared_modules():
    """At most ten modules stand at the package's top level; the rest live in the layer folders."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == sorted(TOP_LEVEL) and len(top) <= 10
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    declared = {f for layer in LAYERS for f in layer.folders}
    assert set(folders) <= declared, set(folders) - declared


def test_only_the_cli_imports_the_fuzz_runner():
    importers = []
    scripts = [p for d in ("fuzz", "benchmarks", "tools") for p in (ROOT / d).glob("*.py")]
    for path in SOURCES:
        for target, line in imports(path):
            if target == "fuzzing.runner" and folder_of(module_name(path)) != COMMANDS:
                importers.append(f"{module_name(path)}:{line}")
    for path in scripts:
        if "gguf_construct.fuzzing.runner" in path.read_text():
            importers.append(str(path.relative_to(ROOT)))
    assert importers == []


def test_layer_check_catches_an_upward_import(tmp_path):
    assert layer_of("checker.core") > layer_of("filemodel.gguffile")
    assert layer_of("commands.check") > layer_of("checker.core")
    assert not may_import("checker.core", "breaking.crafted")  # beside it
    assert not may_import("rulebook.walk", "filemodel.gguffile")  # above it
    assert may_import("rulebook.walk", "format.structs") and may_import("checker.core", "checker.report")
    probe = PACKAGE / "rulebook" / "walk.py"
    found = {t for t, _ in imports(probe)}
    assert "format.structs" in found and all(may_import("rulebook.walk", _target_name(t)) for t in found)


def import_graph(sources: list[Path] = SOURCES) -> dict[str, set[str]]:
    """Module -> the package modules it imports (at module level or inside a function)."""
    graph: dict[str, set[str]] = {}
    for path in sources:
        graph.setdefault(module_name(path), set()).update(_target_name(t) for t, _ in imports(path))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each group of modules that reach one another (Tarjan's strongly connected
    components of more than one module, or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    """Downward imports allow modules of one layer to import each other; none may close a circle (the generator,
    the field tree and the symbolic layout, the crafted files and their advisory breakages were such circles)."""
    graph = import_graph()
    assert {
        "format.structs",
        "format.fieldtree",
        "format.fieldlayout",
        "breaking.crafting",
        "breaking.crafting_security",
    } <= set(graph)
    assert circles(graph) == []


def test_circle_check_catches_a_circle():
    graph = {"structs": {"fieldtree", "spec"}, "fieldtree": {"containerspec"}, "containerspec": {"spec"}}
    assert circles(graph) == []
    graph["containerspec"].add("structs")
    assert circles(graph) == [["containerspec", "fieldtree", "structs"]]
    assert circles({"a": {"a"}}) == [["a"]]
