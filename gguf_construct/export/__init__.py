"""The spec beyond Python: descriptions of GGUF for other tools, generated from ``spec/``.

``gguf-construct export ksy|hexpat|magic|mime [--out FILE]`` prints (or writes) one of them;
``gguf-construct export all [--out DIR] [--check]`` writes (or verifies) the committed set in ``exports/``:

* ``gguf.ksy``: Kaitai Struct (:mod:`.ksy`), and ``kaitai_python/gguf.py``, the Python parser the Kaitai Struct
  compiler makes of it (:mod:`.kaitai`; refreshed only where the compiler is installed, its freshness told by the
  SHA-256 of the .ksy it was compiled from, recorded in ``kaitai_python/COMPILED_FROM``);
* ``gguf.hexpat``: an ImHex pattern (:mod:`.hexpat`);
* ``gguf.magic`` and ``gguf-mime.xml``: libmagic lines and a freedesktop shared-mime-info entry
  (:mod:`.signatures`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..base.atomic import atomic_path
from ..format import spec as _spec
from . import kaitai
from .hexpat import render_hexpat
from .ksy import render_ksy
from .signatures import render_magic, render_mime

__all__ = [
    "EXPORTS",
    "COMPILED_DIR",
    "COMPILED_PARSER",
    "COMPILED_FROM",
    "default_exports_dir",
    "render",
    "write_exports",
    "check_exports",
]

# export name -> (file name in exports/, generator)
EXPORTS: dict[str, tuple[str, Callable[[], str]]] = {
    "ksy": ("gguf.ksy", render_ksy),
    "hexpat": ("gguf.hexpat", render_hexpat),
    "magic": ("gguf.magic", render_magic),
    "mime": ("gguf-mime.xml", render_mime),
}
COMPILED_DIR = "kaitai_python"
COMPILED_PARSER = "gguf.py"
COMPILED_FROM = "COMPILED_FROM"


def default_exports_dir() -> Path:
    """exports/ next to the spec/ directory of a source checkout, else ./exports."""
    spec_dir = _spec.spec_dir()
    return spec_dir.parent / "exports" if spec_dir.name == "spec" else Path("exports")


def render(name: str) -> str:
    """The text of one export (``ksy``, ``hexpat``, ``magic`` or ``mime``)."""
    return EXPORTS[name][1]()


def _compiled_from(ksy_text: str, compiler_version: str) -> str:
    return (
        f"gguf.ksy sha256 {kaitai.ksy_digest(ksy_text)}\n"
        f"kaitai-struct-compiler {compiler_version} (npm, JavaScript build), target python\n"
    )


def _recorded_digest(out_dir: Path) -> str | None:
    path = out_dir / COMPILED_DIR / COMPILED_FROM
    if not path.is_file():
        return None
    first = path.read_text(encoding="utf-8").split("\n", 1)[0].split()
    return first[-1] if first else None


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8", newline="\n")


def _expected(out_dir: Path, compile_parser: bool) -> tuple[dict[Path, str], list[str]]:
    """What every export file should hold, and notes about what could not be produced."""
    texts = {out_dir / fname: gen() for fname, gen in EXPORTS.values()}
    notes = []
    if compile_parser:
        ksy = texts[out_dir / EXPORTS["ksy"][0]]
        if kaitai.find_compiler() is None:
            if not (out_dir / COMPILED_DIR / COMPILED_PARSER).is_file():  # a new folder has nothing to be stale
                notes.append(
                    f"{out_dir / COMPILED_DIR}: not written: the Python parser needs kaitai-struct-compiler"
                    f" (not found; set {kaitai.ENV_VAR})"
                )
            elif _recorded_digest(out_dir) != kaitai.ksy_digest(ksy):
                notes.append(
                    f"{out_dir / COMPILED_DIR}: stale, not recompiled (kaitai-struct-compiler not found; "
                    f"set {kaitai.ENV_VAR})"
                )
        else:
            version, files = kaitai.compile_ksy(ksy)
            texts[out_dir / COMPILED_DIR / COMPILED_PARSER] = files[COMPILED_PARSER]
            texts[out_dir / COMPILED_DIR / COMPILED_FROM] = _compiled_from(ksy, version)
    return texts, notes


def write_exports(out_dir: Path | str | None = None, compile_parser: bool = True) -> tuple[list[Path], list[str]]:
    """Regenerate the exports in ``out_dir``; returns the files that changed and notes (e.g. compiler missing)."""
    out_dir = Path(out_dir) if out_dir is not None else default_exports_dir()
    texts, notes = _expected(out_dir, compile_parser)
    changed = []
    for path, text in texts.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            _write_atomic(path, text)
            changed.append(path)
    return changed, notes


def check_exports(out_dir: Path | str | None = None, compile_parser: bool = True) -> list[str]:
    """Problems that make the committed exports differ from what the spec generates ([] when up to date).

    The SHA-256 recorded beside the compiled parser must be that of the current .ksy; with ``compile_parser`` and
    the compiler installed, the parser is also compared with a fresh compilation.
    """
    out_dir = Path(out_dir) if out_dir is not None else default_exports_dir()
    texts, _notes = _expected(out_dir, compile_parser)
    problems = []
    for path, text in texts.items():
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: stale")
    parser = out_dir / COMPILED_DIR / COMPILED_PARSER
    ksy = texts[out_dir / EXPORTS["ksy"][0]]
    if not parser.is_file():
        problems.append(f"{parser}: missing")
    elif _recorded_digest(out_dir) != kaitai.ksy_digest(ksy):
        problems.append(f"{parser}: compiled from another gguf.ksy (recompile with the Kaitai Struct compiler)")
    return sorted(set(problems))
