"""Driving the Kaitai Struct compiler (the JavaScript build from npm, run by node) to turn ``gguf.ksy`` into a
Python parser.

The compiler is found through the environment variable ``KAITAI_STRUCT_COMPILER_JS`` (the path of
``kaitai-struct-compiler.js`` or of the npm package folder holding it), else through node's own module resolution
(``NODE_PATH`` or a ``node_modules`` folder above the current directory).  ``tools/ksc_compile.js`` is the small
driver: the compiler is a library, not a command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml

__all__ = [
    "ENV_VAR",
    "NOT_TARGETS",
    "TARGETS",
    "KaitaiCompilerError",
    "compile_ksy",
    "compile_ksy_many",
    "find_compiler",
    "ksy_digest",
]

ENV_VAR = "KAITAI_STRUCT_COMPILER_JS"
# target languages gguf.ksy compiles for (checked by tests/test_exports_kaitai.py when the compiler is present);
# not C++/STL: a metadata value switches between numbers, strings and arrays, a type (AnyType) C++ cannot hold
TARGETS = ("python", "javascript", "java", "csharp", "go", "ruby", "php", "perl", "lua", "nim", "rust")
NOT_TARGETS = {
    "cpp_stl": "a metadata value switches between numbers, strings and arrays (Kaitai's AnyType), which "
    "the C++ target cannot hold"
}
_DRIVER = Path(__file__).resolve().parents[2] / "tools" / "ksc_compile.js"
_PACKAGE = "kaitai-struct-compiler"


class KaitaiCompilerError(RuntimeError):
    """The compiler is missing or rejected the description."""


def _node() -> str | None:
    return shutil.which("node")


def find_compiler() -> tuple[str, str] | None:
    """``(node, compiler_js)`` when node and the compiler are available, else None."""
    node = _node()
    if node is None or not _DRIVER.is_file():
        return None
    given = os.environ.get(ENV_VAR)
    if given:
        path = Path(given)
        if path.is_dir():
            path = path / f"{_PACKAGE}.js"
        return (node, str(path)) if path.is_file() else None
    try:
        found = subprocess.run(
            [node, "-e", f"process.stdout.write(require.resolve('{_PACKAGE}'))"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (node, found.stdout) if found.returncode == 0 and found.stdout else None


def compile_ksy_many(ksy_text: str, languages: list[str]) -> tuple[str, dict[str, dict[str, str] | str]]:
    """Compile a .ksy text for several target languages in one run of the compiler; returns
    ``(compiler_version, {language: {file name: source} or the error message})``."""
    compiler = find_compiler()
    if compiler is None:
        raise KaitaiCompilerError(f"kaitai-struct-compiler not found (install it with npm and set {ENV_VAR})")
    node, js = compiler
    spec = json.dumps(yaml.safe_load(ksy_text))
    proc = subprocess.run(
        [node, str(_DRIVER), js, ",".join(languages)],
        input=spec,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise KaitaiCompilerError(proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "compiler failed")
    out = json.loads(proc.stdout)
    return out["version"], {lang: r.get("files", r.get("error")) for lang, r in out["results"].items()}


def compile_ksy(ksy_text: str, language: str = "python") -> tuple[str, dict[str, str]]:
    """Compile a .ksy text for one target language; returns ``(compiler_version, {file name: source})``."""
    version, results = compile_ksy_many(ksy_text, [language])
    if isinstance(results[language], str):
        raise KaitaiCompilerError(results[language])
    return version, results[language]


def ksy_digest(ksy_text: str) -> str:
    """SHA-256 of a .ksy text (recorded beside the compiled parser to tell when it is stale)."""
    return hashlib.sha256(ksy_text.encode("utf-8")).hexdigest()
