"""The constants module of metadata key names (``gguf_construct/format/keynames.py``), generated from
spec/keys.yaml: one constant per registered key, named after it (``general.architecture`` is
``GENERAL_ARCHITECTURE``; a key with a placeholder is a template, ``{arch}.context_length`` is
``ARCH_CONTEXT_LENGTH``, filled with ``str.format``).

The module is committed (code that names a key imports its constant, which a reader and a linter can see), written
by ``gguf-construct docs`` in a source checkout and compared by ``docs --check`` like the pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..format import keyregistry

__all__ = ["KEYNAMES_MODULE", "constant_name", "keynames_source", "write_keynames", "check_keynames"]

KEYNAMES_MODULE = Path(__file__).resolve().parent.parent / "format" / "keynames.py"

_HEAD = '''"""Metadata key names used by code: one constant per key of spec/keys.yaml (a key with a placeholder such as
``{arch}`` is a template for ``str.format``).

Generated from spec/keys.yaml by ``gguf-construct docs`` (``docs --check`` fails when it is stale): do not edit.
"""

# fmt: off
'''


def constant_name(key: str) -> str:
    """The constant of a key: its segments upper-cased and joined by ``_``, a placeholder by its name."""
    return re.sub(r"[^A-Z0-9]+", "_", key.replace("{", "").replace("}", "").upper()).strip("_")


def keynames_source() -> str:
    """The text of ``format/keynames.py`` for the spec in use."""
    entries = {}
    for entry in keyregistry.keys_spec()["keys"]:
        name = constant_name(entry["key"])
        if name in entries and entries[name] != entry["key"]:
            raise ValueError(f"keys {entries[name]!r} and {entry['key']!r} both make the constant {name}")
        entries[name] = entry["key"]
    names = list(entries)
    lines = [_HEAD, "__all__ = ["]
    line = "   "
    for name in names:
        item = f' "{name}",'
        if len(line) + len(item) > 118:
            lines.append(line)
            line = "   "
        line += item
    lines += [line, "]", ""]
    lines += [f'{name} = "{key}"' for name, key in entries.items()]
    return "\n".join(lines) + "\n"


def write_keynames(path: Path = KEYNAMES_MODULE) -> list[Path]:
    """Write the module when it differs from the spec's; the paths written."""
    text = keynames_source()
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return []
    path.write_text(text, encoding="utf-8")
    return [path]


def check_keynames(path: Path = KEYNAMES_MODULE) -> list[str]:
    """Why the committed module differs from the spec's ([] when up to date)."""
    if not path.is_file() or path.read_text(encoding="utf-8") != keynames_source():
        return [f"{path}: stale (generated from spec/keys.yaml)"]
    return []
