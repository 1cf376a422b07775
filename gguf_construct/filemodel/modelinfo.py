"""What a GGUF file holds as a model: architecture, file type, parameter count, size and bits per weight per tensor
type, and -- from the replayed llama.cpp load (:mod:`gguf_construct.arch`) -- whether llama.cpp would load it and
which tensors it expects but does not find.  A shard of a split model describes the model of its whole set, as
llama.cpp loads it from the first shard (:mod:`gguf_construct.format.splitset`)."""

from __future__ import annotations

from typing import Any, Callable

import math
from operator import attrgetter

import os

from .. import arch
from ..format import splitset
from ..format.enums import GGMLType, LlamaFileType
from ..format.lazystring import LazyString
from ..base.errors import GGUFError
from .gguffile import GGUFFile, load
from ..format import keynames

__all__ = ["model_info", "render_model_lines", "render_model_markdown", "tensor_type_names", "TENSOR_FIELDS"]


def _int(gguf: GGUFFile, key: str) -> int | None:
    value = gguf.metadata.get(key) if key in gguf.metadata else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _base(path: str | None) -> str | None:
    return None if path is None else path.rsplit("/", 1)[-1] if "://" in path else os.path.basename(path)


def split_model(gguf: GGUFFile) -> tuple[GGUFFile, dict[str, Any] | None, str | None]:
    """``(model, split, refusal)``: the split model ``gguf`` is a shard of (its set loaded lazily from the shards
    next to it; ``gguf`` itself when it is a whole file, already a set, or the set cannot be loaded), the ``split``
    facts to show (None for a whole file) and, when the set cannot be loaded, why llama.cpp would refuse it."""
    no, count = _int(gguf, splitset.SPLIT_NO), _int(gguf, splitset.SPLIT_COUNT)
    role = splitset.role(no, count)
    if role == splitset.SINGLE:
        return gguf, None, None
    index, total = splitset.shard_numbers(no or 0, count)
    split: dict[str, Any] = {
        "shard": index,
        "count": total,
        "first_shard": role == splitset.FIRST,
        "files": len(gguf.shards),
        "tensors": len(gguf.tensors),
    }
    if len(gguf.shards) > 1 or gguf.path is None:
        return gguf, split, None
    try:
        whole = load(gguf.path)
    except (GGUFError, OSError) as exc:
        return gguf, split, str(exc)
    if len(whole.shards) < 2:
        return gguf, split, None
    split.update(files=len(whole.shards), tensors=len(whole.tensors), first=_base(whole.shards[0].path))
    if role == splitset.LATER:
        split["later_shard"] = splitset.later_shard_params(gguf.path, no, count)
    return whole, split, None


def model_info(gguf: GGUFFile) -> dict[str, Any]:
    """The model facts of ``gguf`` as JSON data (see the module docstring); never raises on a readable file."""
    model, split, refusal = split_model(gguf)
    try:
        out = _model_info(model)
    finally:
        if model is not gguf:
            model.close()
    if split is not None:
        out["split"] = split
    if refusal is not None:
        out["llama_cpp"] = {"loads": False, "problems": [refusal], "missing_tensors": [], "unused_tensors": []}
    return out


TENSOR_FIELDS = attrgetter("name", "shape", "ggml_type", "offset", "nbytes")  # a Tensor's facts, read in C


def tensor_type_names() -> Callable[[Any], str]:
    """A function ``ggml_type -> Tensor.type_name`` that names each type once (millions of tensors, a few types)."""
    names: dict[tuple[type, Any], str] = {}

    def type_name(ggml_type: Any) -> str:
        key = (type(ggml_type), ggml_type)
        name = names.get(key)
        if name is None:
            name = names[key] = ggml_type.name if isinstance(ggml_type, GGMLType) else f"type {ggml_type}"
        return name

    return type_name


def _text(value: Any) -> str:
    """A value as text; a long one read lazily as its first characters and length (no name is that long)."""
    return value.summary() if isinstance(value, LazyString) else str(value)


def _model_info(gguf: GGUFFile) -> dict[str, Any]:
    meta, tensors = arch.from_file(gguf)
    name = meta.get(keynames.GENERAL_ARCHITECTURE)
    ftype = meta.get(keynames.GENERAL_FILE_TYPE)
    by_type: dict[str, dict[str, int]] = {}
    n_params = 0
    type_name = tensor_type_names()
    for _, shape, ggml_type, _, nbytes in map(TENSOR_FIELDS, gguf.tensors):
        n = math.prod(map(int, shape))
        n_params += n
        row = by_type.get(type_name(ggml_type))
        if row is None:
            row = by_type[type_name(ggml_type)] = {"tensors": 0, "elements": 0, "bytes": 0}
        row["tensors"] += 1
        row["elements"] += n
        row["bytes"] += int(nbytes)
    for row in by_type.values():
        row["bits_per_weight"] = round(8 * row["bytes"] / row["elements"], 4) if row["elements"] else None
    total_bytes = sum(r["bytes"] for r in by_type.values())
    out: dict[str, Any] = {
        "architecture": _text(name.value) if name is not None and name.type == "STRING" else None,
        "known_to_llama_cpp": bool(name is not None and arch.architecture(_text(name.value))),
        "kind": arch.file_kind(meta, len(tensors)),
        "file_type": _file_type_name(ftype.value) if ftype is not None and ftype.type != "ARRAY" else None,
        "parameters": n_params,
        "tensor_bytes": total_bytes,
        "bits_per_weight": round(8 * total_bytes / n_params, 4) if n_params else None,
        "by_type": dict(sorted(by_type.items(), key=lambda kv: -kv[1]["bytes"])),
        "vocabulary": keynames.TOKENIZER_GGML_TOKENS in meta,
        "chat_template": keynames.TOKENIZER_CHAT_TEMPLATE in meta,
    }
    try:
        plan = arch.plan_load(meta, tensors, n_tensors=len(gguf.tensors))
    except Exception as exc:  # noqa: BLE001 - the summary must not fail where the checker reports
        out["llama_cpp"] = {"loads": None, "note": f"replay failed: {exc}"}
        return out
    out["llama_cpp"] = {
        "loads": not plan.problems,
        "problems": [p.message for p in plan.problems][:20],
        "missing_tensors": [p.tensor for p in plan.problems if p.code == "TENSOR-MISSING" and p.tensor],
        "unused_tensors": [p.tensor for p in plan.problems if p.code == "TENSOR-UNUSED" and p.tensor],
    }
    return out


def _file_type_name(value: Any) -> str:
    try:
        return LlamaFileType(int(value)).name
    except (ValueError, TypeError):
        return f"unknown ({value})"


def _count(n: int) -> str:
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def render_model_lines(info: dict[str, Any]) -> list[str]:
    """The model facts as lines of the text dump."""
    from ..base.text import printable

    arch_name = printable(info["architecture"]) if info["architecture"] else "(none)"
    lines = [
        f"model:      {arch_name}"
        + ("" if info["known_to_llama_cpp"] else " (unknown to llama.cpp)")
        + f", {info['kind']}"
        + (f", {info['file_type']}" if info["file_type"] else "")
    ]
    if info["parameters"]:
        lines.append(
            f"parameters: {_count(info['parameters'])} ({info['parameters']}), "
            f"{info['bits_per_weight']} bits per weight"
        )
        for tname, row in info["by_type"].items():
            bpw = row["bits_per_weight"]
            lines.append(
                f"  {tname:<8} {row['tensors']:>6} tensors {_count(row['elements']):>9} weights "
                f"{row['bytes']:>14} bytes" + (f"  {bpw:g} bpw" if bpw is not None else "")
            )
    if info.get("vocabulary") and info["parameters"] and not info.get("chat_template"):
        lines.append("chat:       no chat template (tokenizer.chat_template); front ends will guess one")
    split = info.get("split")
    if split is not None:
        if split.get("first"):
            lines.append(
                f"split:      shard {split['shard']} of {split['count']}; the model: {split['tensors']} "
                f"tensors in {split['files']} files, opened from {printable(split['first'])}"
            )
        else:
            lines.append(f"split:      shard {split['shard']} of {split['count']} (its set could not be read)")
    llama = info.get("llama_cpp") or {}
    later = (split or {}).get("later_shard")
    if later:
        lines.append(
            f'llama.cpp:  refuses this shard ("illegal split file idx: {later["value"]} ..., model must be '
            f'loaded with the first split"); from {printable(later["first"])}:'
        )
    if llama.get("loads") is True:
        lines.append(
            ("  " if later else "llama.cpp:  ") + "loads" + (" (vocabulary only)" if info["kind"] == "vocab" else "")
        )
    elif llama.get("loads") is False:
        lead = "  " if later else "llama.cpp:  "
        lines.append(f"{lead}refuses: {printable(llama['problems'][0])}" if llama["problems"] else f"{lead}refuses")
        if llama["missing_tensors"]:
            shown = ", ".join(printable(n) for n in llama["missing_tensors"][:8])
            more = len(llama["missing_tensors"]) - 8
            lines.append(f"  missing tensors: {shown}" + (f" and {more} more" if more > 0 else ""))
    return lines


def render_model_markdown(info: dict[str, Any]) -> list[str]:
    """The model facts as a Markdown list (the lines of the text dump, one item each)."""
    out = []
    for line in render_model_lines(info):
        indent = "  " if line.startswith("  ") else ""
        head, sep, rest = line.strip().partition(":")
        text = f"{head}: {' '.join(rest.split())}" if sep and not indent else " ".join(line.split())
        out.append(f"{indent}- {text.replace('|', chr(92) + '|')}")
    return out
