"""Where the loader's derived quantities come from: the keys and defaults behind ``n_embd_head_k`` and the rest.

The tensor shapes of spec/architectures/ are written in the loader's variables (``n_embd_head_k =
hparams.n_embd_head_k()``); this module follows each one through the ``hparams`` accessors it calls to the fields
they read, and finds, in the generic ``load_hparams`` program, the key each field is read from and the value it has
when the key is absent (the assignment just before the read, else the field's initialiser).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from .programs import loader
from ..format import keynames

__all__ = ["Source", "Derived", "derived_quantities", "field_sources"]

_READERS = ("get_key", "get_key_or_arr", "get_arr", "get_arr_n")


@dataclass(frozen=True)
class Source:
    """One ``hparams`` field a quantity depends on: the key the generic loader reads it from (None when only an
    architecture's own program or a computation sets it) and its value when that key is absent."""

    field: str
    key: str | None
    default: str | None


@dataclass(frozen=True)
class Derived:
    """One derived quantity: its name, C type, defining expression and the fields, keys and defaults behind it."""

    name: str
    ctype: str
    value: str
    sources: tuple[Source, ...]


def _walk(stmts, visit) -> None:
    for s in stmts or ():
        if not isinstance(s, dict):
            continue
        visit(s)
        for key in ("then", "else", "do", "try", "catch"):
            if isinstance(s.get(key), list):
                _walk(s[key], visit)
        for c in s.get("cases") or ():
            _walk(c.get("do"), visit)


@functools.lru_cache(maxsize=None)
def field_sources() -> dict[str, tuple[str, str | None]]:
    """``hparams`` field -> (key read into it by the generic ``load_hparams``, value when the key is absent)."""
    fields = loader().get("hparams_fields") or {}
    last_set: dict[str, str] = {}
    out: dict[str, tuple[str, str | None]] = {}

    def visit(s: dict) -> None:
        target = s.get("set")
        if isinstance(target, str) and target.startswith("hparams."):
            last_set[target[len("hparams.") :]] = str(s.get("value"))
        text = s.get("do") if isinstance(s.get("do"), str) else None
        if not text:
            return
        m = re.match(r"ml\.(\w+)\('([^']+)',\s*hparams\.([\w.]+)", text)
        if not m or m.group(1) not in _READERS:
            return
        name = m.group(3)
        if name in out:
            return
        default = last_set.get(name)
        if default is None:
            default = (fields.get(name) or {}).get("default")
        out[name] = (m.group(2), default)

    _walk(loader().get("load_hparams"), visit)
    return out


def _references(text: str, owner_fields: bool) -> tuple[set[str], set[str]]:
    """(fields, accessor functions) an expression mentions: ``hparams.x`` everywhere; bare names too inside an
    accessor's body, where they are the struct's own members."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return set(), set()
    fields = loader().get("hparams_fields") or {}
    functions = loader().get("functions") or {}
    got_fields, got_fns = set(), set()
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "hparams":
            name = node.attr
        elif owner_fields and isinstance(node, ast.Name):
            name = node.id
        if name is None:
            continue
        if f"hparams.{name}" in functions:
            got_fns.add(name)
        elif name in fields or name.split("[")[0] in fields:
            got_fields.add(name)
    return got_fields, got_fns


def _expressions(stmts) -> list[str]:
    out: list[str] = []

    def visit(s: dict) -> None:
        for key in ("value", "return", "if", "do", "assert", "to", "switch"):
            v = s.get(key)
            if isinstance(v, str):
                out.append(v)

    _walk(stmts, visit)
    return out


@functools.lru_cache(maxsize=None)
def _fields_of_function(name: str) -> frozenset[str]:
    """Every field an accessor reads, through the accessors it calls."""
    seen: set[str] = set()
    fields: set[str] = set()
    todo = [name]
    functions = loader().get("functions") or {}
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for text in _expressions((functions.get(f"hparams.{fn}") or {}).get("body")):
            f, calls = _references(text, True)
            fields |= f
            todo += list(calls)
    return frozenset(fields)


def _vocab_source(value: str) -> Source:
    """The vocabulary's counts: the number of token strings, the token-type count key."""
    from .programs import model_spec

    vocab = model_spec()["vocab"]
    if "n_token_types" in value:
        return Source("vocab.n_token_types", keynames.TOKENIZER_GGML_TOKEN_TYPE_COUNT, "0")
    return Source("vocab.n_tokens", f"{vocab['tokens_key']} (its length)", None)


def derived_quantities() -> list[Derived]:
    """The loader's variables (``LLAMA_LOAD_LOCALS``) with the fields, keys and defaults each comes from."""
    sources = field_sources()
    out = []
    locals_ = {s["let"]: s for s in loader().get("locals") or () if "let" in s}
    for name, s in locals_.items():
        value = str(s.get("value", ""))
        fields, fns = _references(value, False)
        for fn in fns:
            fields |= _fields_of_function(fn)
        # a variable defined by another one (n_embd_gqa = n_embd_v_gqa) inherits its sources
        for other in re.findall(r"\b\w+\b", value):
            if other in locals_ and other != name:
                f2, fn2 = _references(str(locals_[other].get("value", "")), False)
                fields |= f2
                for fn in fn2:
                    fields |= _fields_of_function(fn)
        srcs = tuple(
            Source(f, *sources.get(f, (None, (loader()["hparams_fields"].get(f) or {}).get("default"))))
            for f in sorted(fields)
        )
        if value.startswith("vocab."):
            srcs = (_vocab_source(value),)
        out.append(Derived(name, str(s.get("type", "")), value, srcs))
    return out
