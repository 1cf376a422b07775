"""The model-layer programs of ``spec/architectures/``, loaded and compiled once.

Each architecture file holds two statement lists (``hparams``: what ``load_arch_hparams`` reads, ``tensors``: what
``load_arch_tensors`` creates) written as mappings whose expressions are Python-syntax strings; ``_loader.yaml``
holds the common steps, helper functions, hyperparameter fields and name tables.  Expressions are compiled here
with three rewrites that give them C++ meaning: ``/`` and ``%`` become C's truncating integer operations when
both sides are integers, and the variable a ``ml.get_key``-style call reads into is passed by reference.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from typing import Any

from ..format.spec import load_yaml, spec_dir

__all__ = [
    "Architecture",
    "architectures",
    "architecture_names",
    "architecture",
    "loader",
    "model_spec",
    "compile_expr",
    "READERS",
]

READERS = ("get_key", "get_key_or_arr", "get_arr", "get_arr_n")


@dataclass(frozen=True)
class Architecture:
    """One architecture as llama.cpp's loader knows it (``spec/architectures/<id>.yaml``)."""

    id: str
    enum: str
    klass: str
    source: str
    inherits: str | None
    loadable: bool
    hparams: list
    tensors: list
    traits: tuple = ()


@functools.lru_cache(maxsize=None)
def architectures() -> dict[str, Architecture]:
    """Every architecture by name (``general.architecture`` value), in file-name order."""
    out = {}
    for path in sorted((spec_dir() / "architectures").glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        a = _architecture_file(path.name)
        out[a.id] = a
    return out


@functools.lru_cache(maxsize=None)
def _architecture_file(file_name: str) -> Architecture:
    """The :class:`Architecture` of one file of ``spec/architectures/`` (read once, whichever caller asks)."""
    d = load_yaml(f"architectures/{file_name}")
    return Architecture(
        d["id"],
        d["enum"],
        d.get("class", ""),
        d.get("source", ""),
        d.get("inherits"),
        d.get("loadable", True),
        d.get("hparams") or [],
        d.get("tensors") or [],
        tuple(d.get("traits") or ()),
    )


@functools.lru_cache(maxsize=None)
def architecture_names() -> frozenset[str]:
    """The names of :func:`architectures` without reading their files: each file is named after its ``id``
    (``spec/architectures/<id>.yaml``; tests/test_dump_many.py holds them equal)."""
    folder = spec_dir() / "architectures"
    return frozenset(path.stem for path in folder.glob("*.yaml") if not path.name.startswith("_"))


def architecture(name: str) -> Architecture | None:
    """The architecture called ``name``, or None when llama.cpp does not know it (only its own file is read)."""
    if not isinstance(name, str) or name not in architecture_names():  # a file's value never names a path here
        return None
    return _architecture_file(f"{name}.yaml")


@functools.lru_cache(maxsize=None)
def loader() -> dict:
    """``spec/architectures/_loader.yaml``: common steps, helper functions, fields, name tables."""
    return load_yaml("architectures/_loader.yaml")


@functools.lru_cache(maxsize=None)
def model_spec() -> dict:
    """``spec/model.yaml``: key types, file kinds and vocabulary requirements."""
    return load_yaml("model.yaml")


class _CxxSemantics(ast.NodeTransformer):
    """Rewrite a parsed expression so that evaluating it behaves like the C++ it came from."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = {ast.Div: "_div", ast.Mod: "_mod"}.get(type(node.op))
        if helper is None:
            return node
        return ast.copy_location(ast.Call(ast.Name(helper, ast.Load()), [node.left, node.right], []), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in READERS and len(node.args) >= 2:
            node.args[1] = _reference(node.args[1])
        return node


def _reference(target: ast.expr) -> ast.expr:
    """``x`` -> ``_ref(_scope, 'x')``; ``a.b`` -> ``_ref(a, 'b')``; ``a[i]`` -> ``_ref(a, i, True)``."""
    if isinstance(target, ast.Name):
        args = [ast.Name("_scope", ast.Load()), ast.Constant(target.id)]
    elif isinstance(target, ast.Attribute):
        args = [target.value, ast.Constant(target.attr)]
    elif isinstance(target, ast.Subscript):
        args = [target.value, target.slice, ast.Constant(True)]
    else:
        return target
    return ast.copy_location(ast.Call(ast.Name("_ref", ast.Load()), args, []), target)


@functools.lru_cache(maxsize=None)
def compile_expr(text: str) -> Any:
    """Compile one expression string of the spec with C++ semantics (cached per text)."""
    tree = ast.parse(text, mode="eval")
    tree = ast.fix_missing_locations(_CxxSemantics().visit(tree))
    return compile(tree, f"<spec expression {text[:60]}>", "eval")


def c_div(a: Any, b: Any) -> Any:
    """C division: truncation toward zero for two integers, IEEE for floats."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("integer division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) if a else math.nan


def c_mod(a: Any, b: Any) -> Any:
    """C remainder: the sign follows the dividend."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("integer modulo by zero")
        return a - c_div(a, b) * b
    return math.fmod(a, b)
