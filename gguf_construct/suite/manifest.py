"""Writing the suite: every case's files and ``manifest.json``, which says for each case what a reader should do
under each profile, why, which rules and spec text it tests and, for files a reader may accept, what it should
read (keys with types and values, tensor infos, a hash of each tensor's bytes, decoded values of tiny tensors).

The manifest's shape (``SCHEMA_VERSION``)::

    {"schema": 1, "generator": "gguf-construct 0.1.0", "profiles": {...}, "rules": {ID: {title, doc, doc_ref}},
     "not_covered": [{"rules", "why"}], "digest": sha256 over the case files,
     "cases": [{"file", "files", "group", "doc", "rules", "limit_of", "advisories",
                "expect": {"spec": "accept|reject|either", "ggml": ..., "llama.cpp": ...}, "why": {...},
                "spec_text": [{"rule", "text", "doc_ref"}], "sha256", "size",
                "metadata": [{"key", "type", "value", ("item_type", "length")}],
                "tensors": [{"name", "type", "shape", "offset", "nbytes", "sha256", ("values")}]}]}

``shape`` is in ggml order (ne[0] first), ``offset`` relative to the start of the data section; floats JSON
cannot hold are the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Iterable

from .. import spec as _spec
from .. import structs
from .._atomic import atomic_path
from .._version import __version__
from ..dump import value_to_json
from ..errors import GGUFError
from ..model import load
from ..rulebook.catalog import catalog
from . import SCHEMA_VERSION
from .cases import LIMITED_BREAKAGES, Case, all_cases
from .expect import EITHER, PROFILES, outcome

__all__ = ["PROFILE_DOCS", "case_entry", "build_manifest", "write_suite", "manifest_json", "cases_tsv"]

PROFILE_DOCS = {
    "spec": "gguf.md as the project's spec/ encodes it: what any conforming reader must accept or refuse",
    "ggml": "ggml's own reader (gguf_init_from_file in ggml/src/gguf.cpp) on a little-endian host",
    "llama.cpp": "llama.cpp's model loader (llama_model_load_from_file): the container as ggml reads it, plus the "
                 "model's keys and tensors",
}
NOT_COVERED = [
    {"rules": ["STR-MAXLEN", "ARR-MAXLEN"],
     "why": "the limits are 2^30 bytes and 2^30 elements: a file at or past them is at least 1 GiB, beyond the "
            "suite's size; the project's own tests cross them with the limits lowered (crafted breakages "
            + ", ".join(LIMITED_BREAKAGES) + ")"},
]


def _float(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _expected_values(case: Case) -> dict:
    """What a reader that accepts the case should read: keys, tensor infos, data hashes (and decoded values)."""
    f = load(case.data, lazy=False)
    metadata = [dict(key=k, **value_to_json(v, full=True)) for k, v in f.metadata.typed_items()]
    tensors = []
    for t in f.tensors:
        entry = {"name": t.name, "type": t.type_name, "shape": list(t.shape), "offset": t.offset,
                 "nbytes": t.nbytes, "sha256": hashlib.sha256(bytes(t.raw())).hexdigest()}
        if case.decoded:
            entry["values"] = [_float(v) for v in t.numpy().ravel().tolist()]
        tensors.append(entry)
    return {"metadata": metadata, "tensors": tensors}


def _spec_text(rule_ids: Iterable[str]) -> list[dict]:
    cat = catalog()
    return [{"rule": r, "text": cat[r].doc, "doc_ref": cat[r].raw.get("doc_ref", "")} for r in rule_ids]


def _valid_text(case: Case) -> list[dict]:
    """The spec text a case without rules tests: its value type, tensor type or the container layout."""
    if case.group == "values":
        vtype = case.path.rsplit("/", 1)[1][:-len(".gguf")]
        doc = next(v["doc"] for v in structs.value_types().values() if v["name"] == vtype)
        return [{"rule": None, "text": f"{vtype}: {doc}", "doc_ref": "gguf.md gguf_metadata_value_type"}]
    if case.group == "tensor-types":
        name = case.path.rsplit("/", 1)[1][:-len(".gguf")]
        st = next(t for t in _spec.tensor_types() if t.name == name)
        return [{"rule": None, "text": f"{name}: {st.doc}", "doc_ref": st.doc_ref}]
    if case.group == "model":
        arch = case.path.split("/")[1]
        return [{"rule": None, "text": f"what llama.cpp's loader reads for architecture {arch}",
                 "doc_ref": f"spec/architectures/{arch}.yaml (docs/architectures/{arch}.md)"}]
    if case.group == "split":
        entries = [k for k in _spec.load_yaml("keys.yaml")["keys"] if k["key"].startswith("split.")]
        return [{"rule": None, "text": f"{k['key']} ({k['type']}): {k['doc']}", "doc_ref": k["doc_ref"]}
                for k in entries]
    return []


def case_entry(case: Case) -> dict:
    """The manifest entry of one case."""
    expect, why = {}, {}
    for profile in PROFILES:
        verdict, reason = outcome(case.rules, profile, model=case.model)
        expect[profile] = verdict
        if reason:
            why[profile] = reason
    entry: dict[str, Any] = {"file": case.path}
    if len(case.files) > 1:
        entry["files"] = sorted(case.files)
    entry.update(group=case.group, doc=case.doc, rules=list(case.rules))
    if case.near:
        entry["limit_of"] = list(case.near)
    if case.advisories:
        entry["advisories"] = list(case.advisories)
    entry["expect"] = expect
    if why:
        entry["why"] = why
    entry["spec_text"] = _spec_text(list(case.rules) + list(case.near)) or _valid_text(case)
    entry["sha256"] = hashlib.sha256(case.data).hexdigest()
    entry["size"] = len(case.data)
    if "accept" in expect.values():
        entry.update(_expected_values(case))
    elif "either" in expect.values():
        try:  # a file left to readers that our own reader refuses (an array nested past its limit) has no values
            entry.update(_expected_values(case))
        except GGUFError as exc:
            entry["no_values"] = f"gguf-construct's reader refuses it: {exc}"
    return entry


def build_manifest(cases: list[Case] | None = None) -> tuple[dict, dict[str, bytes]]:
    """The manifest and the files (relative path -> bytes) of the suite."""
    cases = all_cases() if cases is None else cases
    files: dict[str, bytes] = {}
    for c in cases:
        files.update(c.files)
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    cat = catalog()
    used = sorted({r for c in cases for r in (*c.rules, *c.near)}, key=list(cat).index)
    manifest = {
        "schema": SCHEMA_VERSION,
        "generator": f"gguf-construct {__version__}",
        "profiles": PROFILE_DOCS,
        "outcomes": {"accept": "the reader must read the file (and read the values listed)",
                     "reject": "the reader must refuse the file, without crashing or hanging",
                     "either": "the spec leaves it to the reader (see why); crashing or hanging still fails"},
        "either_rules": [{"rule": r, "profile": p, "why": w} for (r, p), w in EITHER.items()],
        "rules": {r: {"title": cat[r].title, "severity": {p: cat[r].severity(p) for p in PROFILES},
                      "doc": cat[r].doc, "doc_ref": cat[r].raw.get("doc_ref", "")} for r in used},
        "not_covered": NOT_COVERED,
        "digest": digest.hexdigest(),
        "total_bytes": sum(len(d) for d in files.values()),
        "cases": [case_entry(c) for c in cases],
    }
    return manifest, files


def manifest_json(manifest: dict) -> str:
    """The manifest as written: ASCII JSON, one case per line block, no NaN."""
    return json.dumps(manifest, ensure_ascii=True, allow_nan=False, indent=1) + "\n"


def write_suite(directory: str | os.PathLike, cases: list[Case] | None = None) -> dict:
    """Write the suite's files and ``manifest.json`` into ``directory`` (each file atomically); returns the
    manifest.  Files of an earlier suite that the new one does not have are left alone."""
    manifest, files = build_manifest(cases)
    root = os.fspath(directory)
    for rel, data in sorted(files.items()):
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, "rb") as fh:
                if fh.read() == data:
                    continue
        except OSError:
            pass
        with atomic_path(path) as tmp, open(tmp, "wb") as out:
            out.write(data)
    with atomic_path(os.path.join(root, "manifest.json")) as tmp, open(tmp, "w", encoding="ascii") as out:
        out.write(manifest_json(manifest))
    with atomic_path(os.path.join(root, "cases.tsv")) as tmp, open(tmp, "w", encoding="ascii") as out:
        out.write(cases_tsv(manifest))
    return manifest


def cases_tsv(manifest: dict) -> str:
    """The verdicts alone, for consumers without a JSON parser: a header line, then per case its file and the
    expected outcome under each profile, tab-separated."""
    lines = ["file\t" + "\t".join(PROFILES)]
    lines += [c["file"] + "\t" + "\t".join(c["expect"][p] for p in PROFILES) for c in manifest["cases"]]
    return "\n".join(lines) + "\n"
