"""The package's layers, declared once: each folder of ``gguf_construct`` is one layer, and a module imports only
modules of its own folder or of a layer below it.

``tests/test_import_layers.py`` holds every import of the package to this table, and the docs picture of the
layers (``docs/pictures/layers.svg``, in the README's "How it is built") is drawn from it.  Folders that share a
layer stand side by side: neither imports the other.  Command-line code (argparse, each command's glue) lives in
``commands`` only.

``MOVED`` lists the modules that stood at the package's top level before the regrouping: importing an old name
still works (``gguf_construct.model`` is ``gguf_construct.filemodel.gguffile``) and warns that it moved.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layer", "LAYERS", "MOVED", "TOP_LEVEL", "layer_of"]


@dataclass(frozen=True)
class Layer:
    """One floor of the package: its folders (or top-level modules) and what it holds."""

    number: int
    folders: tuple[str, ...]
    holds: str
    add_here: str = ""  # what a contributor adds on this floor


LAYERS: tuple[Layer, ...] = (
    Layer(
        0,
        ("base", "_version", "layers"),
        "errors, atomic writes, JSON and text output, child processes, URL sources, XXH64",
        "helpers that know nothing of GGUF",
    ),
    Layer(
        1,
        ("format",),
        "spec/ as data, the struct generator, field rules and layout, string lists, values, the reader",
        "a new version or value type: spec/gguf.yaml only",
    ),
    Layer(
        2,
        ("codecs",),
        "tensor codecs, bit-exact with ggml (numpy; numba when installed)",
        "a new tensor type: spec/tensor_types/ plus one codec function",
    ),
    Layer(
        3,
        ("arch",),
        "llama.cpp's model layer replayed: loader programs, expect, memory",
        "a new architecture: spec/architectures/ (extracted)",
    ),
    Layer(
        4,
        ("rulebook",),
        "the one read of a file's head and the rule catalog with its predicates",
        "a new container rule: spec/rules.yaml plus one predicate",
    ),
    Layer(5, ("filemodel",), "load, GGUFFile, Tensor, atomic save; opening any input; summaries", ""),
    Layer(
        6,
        ("checker", "breaking", "export"),
        "the checker and its profiles; raw files and labelled breakages; exports for other tools",
        "a new metadata, model or security rule: spec/rules.yaml plus one predicate in checker/",
    ),
    Layer(7, ("operations", "strategies"), "edit, diff, split/merge, hash, sweep, demo; Hypothesis strategies", ""),
    Layer(8, ("fuzzing",), "the differential fuzzer for other readers", "a new fuzz target: fuzzing/targets.py"),
    Layer(9, ("suite",), "the conformance suite and the matrix of readers", ""),
    Layer(10, ("docgen",), "docs, pictures and the site, generated from spec/", "a new docs page: docgen/pages/"),
    Layer(
        11,
        ("commands",),
        "the command line: every argument parser and the glue of each command",
        "a new command: one module in commands/, registered in commands/main.py",
    ),
    Layer(
        12,
        ("__init__", "__main__"),
        "the package's public face: gguf_construct.load, check, GGUFFile ...; python -m gguf_construct",
        "",
    ),
)

# modules allowed at the package's top level (folders aside)
TOP_LEVEL = ("__init__", "__main__", "_version", "layers", "strategies")

MOVED: dict[str, str] = {
    "_atomic": "base.atomic",
    "_extras": "base.extras",
    "_json": "base.jsonout",
    "_text": "base.text",
    "_processes": "base.processes",
    "_stringscan": "base.stringscan",
    "errors": "base.errors",
    "xxh64": "base.xxh64",
    "remote": "base.remote",
    "rangeserver": "base.rangeserver",
    "spec": "format.spec",
    "containerspec": "format.containerspec",
    "fieldrules": "format.fieldrules",
    "fieldlayout": "format.fieldlayout",
    "stringlist": "format.stringlist",
    "constructs": "format.constructs",
    "fieldtree": "format.fieldtree",
    "structs": "format.structs",
    "enums": "format.enums",
    "keyregistry": "format.keyregistry",
    "values": "format.values",
    "reader": "format.reader",
    "splitset": "format.splitset",
    "model": "filemodel.gguffile",
    "inputs": "filemodel.inputs",
    "modelinfo": "filemodel.modelinfo",
    "dump": "filemodel.dump",
    "diff": "operations.diff",
    "edit": "operations.edit",
    "split": "operations.split",
    "hashing": "operations.hashing",
    "sweep": "operations.sweep",
    "demo": "operations.demo",
    "cli": "commands.main",
    "checker.cli": "commands.check",
    "suite.cli": "commands.suite",
    "arch.cli": "commands.model",
    "docgen.rulecmd": "commands.rule",
    "docgen.shellhelp": "commands.completion",
    "arch.mutate": "breaking.model_mutations",
}


def layer_of(module: str) -> Layer:
    """The layer of a module name relative to the package (``checker.core``, ``strategies``, ``__init__``)."""
    head = module.split(".")[0]
    for layer in LAYERS:
        if head in layer.folders:
            return layer
    raise KeyError(f"module {module} stands in no layer: add its folder to gguf_construct/layers.py")
