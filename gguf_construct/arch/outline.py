"""A static outline of an architecture's load program, for people: the keys it reads and the tensors it creates,
each with the conditions under which the loader reaches it.

:func:`plan_load` *runs* the program on one file; this module only *reads* it (no hyperparameter values), so a
tensor inside ``if (n_expert == 0)`` is listed with that condition instead of being decided.  Calls of the
loader's helper functions (``create_tensor_qkv``...) and of the architecture's own local functions are expanded
with their arguments substituted, so every ``create_tensor`` shows up with the names and shapes it gets.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Iterator

from .programs import Architecture, architecture, loader

__all__ = ["KeyRead", "TensorDecl", "Outline", "outline", "tensor_name_pattern", "common_key_reads"]

_KEY_READERS = {"get_key": 2, "get_key_or_arr": 3, "get_arr": 2, "get_arr_n": 2}  # reader -> index of `required`
_MAX_DEPTH = 6  # helper calls nested deeper than this are not expanded (none are in llama.cpp)


@dataclass(frozen=True)
class KeyRead:
    """One key the loader reads: its name (``{arch}`` for the architecture), how, into what C type, and when."""

    key: str
    reader: str
    target: str
    ctype: str
    required: bool
    conditions: tuple[str, ...]

    @property
    def default(self) -> str | None:
        """llama.cpp's value when the key is absent (the C initialiser of its ``hparams`` field), when known."""
        if not self.target.startswith("hparams."):
            return None
        field = (loader().get("hparams_fields") or {}).get(self.target[len("hparams.") :].split("[", 1)[0], {})
        return field.get("default")


@dataclass(frozen=True)
class TensorDecl:
    """One tensor the loader creates: name pattern (``blk.{i}.attn_q.weight``), shape expressions in ggml order,
    flags expression, per-layer or not, and the conditions on the way to it."""

    name: str
    shape: tuple[str, ...]
    flags: str
    per_layer: bool
    conditions: tuple[str, ...]

    @property
    def required(self) -> bool:
        """Whether the loader fails when the tensor is absent (no NOT_REQUIRED flag, whatever the conditions)."""
        return "TENSOR_NOT_REQUIRED" not in self.flags

    @property
    def duplicated(self) -> bool:
        """Whether the tensor is always another view of one counted elsewhere (TENSOR_DUPLICATED, unconditionally)."""
        return "TENSOR_DUPLICATED" in self.flags and " if " not in self.flags


@dataclass
class Outline:
    """Everything :func:`outline` found in one architecture's programs."""

    arch: str
    keys: list[KeyRead] = field(default_factory=list)
    tensors: list[TensorDecl] = field(default_factory=list)
    checks: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # asserts and failures, with context
    locals: list[tuple[str, str, str]] = field(default_factory=list)  # the program's own variables: name, C type,
    #                                                                    value (what its shapes are written in)


def tensor_name_pattern(base: str, suffix: str | None) -> str:
    """``blk.%d.attn_q`` + ``weight`` -> ``blk.{i}.attn_q.weight`` (the form the docs and the checker show)."""
    name = base.replace("%d", "{i}", 1).replace("%d", "{j}", 1)
    return f"{name}.{suffix}" if suffix else name


def _names() -> dict[str, str]:
    return loader().get("tensor_names") or {}


def _substitute(text: str, mapping: dict[str, str]) -> str:
    """``text`` with the names in ``mapping`` replaced by the (parenthesised) expressions they stand for."""
    if not mapping:
        return text
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in mapping:
                try:
                    return ast.parse(mapping[node.id], mode="eval").body
                except SyntaxError:
                    return node
            return node

    return ast.unparse(Sub().visit(tree))


def _constant(text: str) -> bool | int | None:
    """The value of an expression made of the loader's constants only (``0 & TENSOR_SKIP``), else None."""
    try:
        value = eval(
            compile(ast.parse(text, mode="eval"), "<constant>", "eval"),  # noqa: S307 - names only
            {"__builtins__": {}},
            _constants(),
        )
    except Exception:  # noqa: BLE001 - anything but a constant expression
        return None
    return value if isinstance(value, (bool, int)) else None


@functools.lru_cache(maxsize=None)
def _constants() -> dict[str, int]:
    return {**(loader().get("constants") or {}), **(loader().get("tensor_flags") or {})}


def _flag_names(value: int) -> str:
    """``TENSOR_NOT_REQUIRED | TENSOR_SKIP`` for 5; ``0`` for none."""
    names = [n for n, bit in (loader().get("tensor_flags") or {}).items() if bit and value & bit == bit]
    return " | ".join(names) or "0"


class _Reader:
    def __init__(self, arch: Architecture, out: Outline):
        self.arch = arch
        self.out = out
        self.functions = loader().get("functions") or {}
        self.field_types = {k: v.get("type", "") for k, v in (loader().get("hparams_fields") or {}).items()}
        self.local_defs: dict[str, dict] = {}
        self.holders: dict[str, str] = {}  # variable -> the tensor it holds, for conditions on its presence

    def condition(self, text: str, env: dict[str, str]) -> str:
        """A condition as the docs show it: arguments substituted, ``layer.wq`` -> ``has(blk.{i}.attn_q.weight)``."""
        text = _substitute(text, env)
        for var in sorted(self.holders, key=len, reverse=True):
            if var in text:
                text = re.sub(rf"(?<![\w.]){re.escape(var)}(?!\w)", f"has({self.holders[var]})", text)
        text = re.sub(r"\(?(has\([^()]*\)) == None\)?", r"not \1", text)
        return re.sub(r"\(?(has\([^()]*\)) != None\)?", r"\1", text)

    # statements -------------------------------------------------------------------------------------------
    def block(
        self,
        stmts: list | None,
        conds: tuple[str, ...],
        env: dict[str, str],
        types: dict[str, str],
        depth: int,
        per_layer: bool,
    ) -> None:
        for s in stmts or ():
            self.stmt(s, conds, env, types, depth, per_layer)

    def stmt(self, s: dict, conds, env, types, depth, per_layer) -> None:
        if "def" in s:
            self.local_defs[s["def"]] = s
        elif "let" in s:
            types[s["let"]] = s.get("type", "")  # the C type of a local fixes the GGUF type of a key read into it
            if "value" in s:
                self.expr(s["value"], conds, env, types, depth, per_layer)
                if depth and "create_tensor" not in str(s["value"]):  # a helper's local: show what it stands for
                    env[s["let"]] = _substitute(str(s["value"]), env)
                elif (
                    not depth
                    and "create_tensor" not in str(s["value"])
                    and s["let"] not in {name for name, _, _ in self.out.locals}
                ):
                    self.out.locals.append((s["let"], str(s.get("type", "")), str(s["value"])))
        elif "set" in s or "do" in s and "for" not in s:
            before = len(self.out.tensors)
            self.expr(s.get("value", s.get("do")), conds, env, types, depth, per_layer)
            if "set" in s and len(self.out.tensors) == before + 1:  # `x = create_tensor(...)`: x names that tensor
                self.holders[str(s["set"])] = self.out.tensors[-1].name
        elif "if" in s:
            cond = self.condition(str(s["if"]), env)
            value = _constant(cond)
            known = None if value is None else bool(value)
            if known is not False:
                self.block(s.get("then"), conds if known else conds + (cond,), env, types, depth, per_layer)
            if s.get("else") and known is not True:
                self.block(
                    s["else"], conds if known is False else conds + (f"not {cond}",), env, types, depth, per_layer
                )
        elif "for" in s:
            layered = per_layer or str(s.get("to", "")).strip() in ("n_layer", "n_layer_all", "hparams.n_layer()")
            inner = (
                conds
                if layered and s["for"] == "i"
                else conds + (f"for {s['for']} in [{s.get('from')}, {_substitute(str(s.get('to')), env)})",)
            )
            self.block(s.get("do"), inner, env, types, depth, layered)
        elif "switch" in s:
            on = _substitute(str(s["switch"]), env)
            for case in s.get("cases") or ():
                whens = [str(w) for w in case.get("when") or ()]
                label = "otherwise" if whens == ["default"] else f"{on} in ({', '.join(whens)})"
                self.block(case.get("do"), conds + (label,), env, types, depth, per_layer)
        elif "try" in s:
            self.block(s.get("try"), conds, env, types, depth, per_layer)
            self.block(s.get("catch"), conds + ("the statements before failed",), env, types, depth, per_layer)
        elif "assert" in s:
            self.out.checks.append((f"assert {_substitute(str(s['assert']), env)}", conds))
        elif "fail" in s:
            self.out.checks.append((f"fail: {s['fail']}", conds))

    # expressions ------------------------------------------------------------------------------------------
    def expr(self, text, conds, env, types, depth, per_layer) -> None:
        if text is None:
            return
        text = _substitute(str(text), env)
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            return
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in _KEY_READERS and isinstance(f, ast.Attribute):
                self.key_read(name, node, conds, types)
            elif name == "create_tensor":
                self.tensor(node, conds, per_layer)
            elif depth < _MAX_DEPTH and (name in self.functions or name in self.local_defs):
                body = self.functions.get(name) or self.local_defs[name]
                params = body.get("params") or []
                args = dict(body.get("defaults") or {})
                args.update({p: ast.unparse(a) for p, a in zip(params, node.args)})
                self.block(body.get("body"), conds, {**env, **args}, dict(types), depth + 1, per_layer)

    def key_read(self, reader: str, node: ast.Call, conds, types) -> None:
        if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            return
        target = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
        req_at = _KEY_READERS[reader]
        required = True
        if len(node.args) > req_at:
            flag = node.args[req_at]
            required = not (isinstance(flag, ast.Constant) and flag.value is False)
        self.out.keys.append(KeyRead(node.args[0].value, reader, target, self.ctype_of(target, types), required, conds))

    def ctype_of(self, target: str, types: dict[str, str]) -> str:
        base = target.split("[", 1)[0]
        if base.startswith("hparams."):
            return self.field_types.get(base[len("hparams.") :], "")
        return types.get(base, "")

    def tensor(self, node: ast.Call, conds, per_layer) -> None:
        if len(node.args) < 2:
            return
        tn = node.args[0]
        if not (isinstance(tn, ast.Call) and getattr(tn.func, "id", None) == "tn" and tn.args):
            return
        base = tn.args[0]
        if isinstance(base, ast.Constant) and isinstance(base.value, str):
            base_name = _names().get(base.value, base.value)
        elif isinstance(base, ast.Name) and base.id.startswith("LLM_TENSOR_"):
            base_name = _names().get(base.id, base.id)
        else:
            base_name = ast.unparse(base)
        suffix = tn.args[1].value if len(tn.args) > 1 and isinstance(tn.args[1], ast.Constant) else None
        shape_node = node.args[1]
        shape = (
            tuple(ast.unparse(e) for e in shape_node.elts)
            if isinstance(shape_node, (ast.List, ast.Tuple))
            else (ast.unparse(shape_node),)
        )
        flags = ast.unparse(node.args[2]) if len(node.args) > 2 else "0"
        value = _constant(flags)
        if value is not None:
            flags = _flag_names(int(value))
        self.out.tensors.append(
            TensorDecl(tensor_name_pattern(base_name, suffix), shape, flags, per_layer or "%d" in base_name, conds)
        )


@functools.lru_cache(maxsize=None)
def outline(name: str) -> Outline | None:
    """The keys and tensors of architecture ``name`` (its own program, after the classes it inherits from), or
    None when llama.cpp does not know it."""
    arch = architecture(name)
    if arch is None:
        return None
    out = Outline(name)
    chain = list(_inheritance(arch))
    reader = _Reader(arch, out)
    for a in chain:
        reader.block(a.hparams, (), {}, {}, 0, False)
    for a in chain:
        reader.local_defs = {}
        reader.block(a.tensors, (), {}, {}, 0, False)
    return out


def _inheritance(arch: Architecture) -> Iterator[Architecture]:
    """The architecture's ancestors (by llama.cpp class) then itself."""
    by_class = {}
    from .programs import architectures

    for a in architectures().values():
        by_class.setdefault(a.klass, a)
    seen = []
    a: Architecture | None = arch
    while a is not None and a not in seen:
        seen.append(a)
        a = by_class.get(a.inherits) if a.inherits else None
    return reversed(seen)


@functools.lru_cache(maxsize=None)
def common_key_reads() -> tuple[KeyRead, ...]:
    """The keys the generic part of ``load_hparams`` reads for every architecture."""
    out = Outline("_common")
    reader = _Reader(architecture("llama"), out)
    reader.block(loader().get("load_hparams"), (), {}, {}, 0, False)
    return tuple(out.keys)
