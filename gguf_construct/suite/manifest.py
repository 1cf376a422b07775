"""Writing the suite: every case's files and ``manifest.json``, which says for each case what a reader should do
under each profile, why, which rules and spec text it tests and, for files a reader may accept, what it should
read (keys with types and values, tensor infos, a hash of each tensor's bytes, decoded values of tiny tensors).

The manifest's shape (``SCHEMA_VERSION``)::

    {"schema": 1, "generator": "gguf-construct 0.1.0", "profiles": {...}, "rules": {ID: {title, doc, doc_ref}},
     "not_covered": [{"rules", "why"}], "digest": sha256 over the case files,
     "cases": [{"file", "files", "group", ("large": true), "doc", "rules", "limit_of", "advisories",
                "expect": {"spec": "accept|reject|either", "ggml": ..., "llama.cpp": ...}, "why": {...},
                "spec_text": [{"rule", "text", "doc_ref"}], "sha256", "size",
                "metadata": [{"key", "type", "value", ("item_type", "length")}],
                "tensors": [{"name", "type", "shape", "offset", "nbytes", "sha256", ("values")}]}]}

``shape`` is in ggml order (ne[0] first), ``offset`` relative to the start of the data section; floats JSON
cannot hold are the strings ``"nan"``, ``"inf"``, ``"-inf"``.  A large case (``suite write --large``: the files
at and one past ggml's limits of 2^30, see :mod:`.large`) gives its big key as ``{"key", "type", ("item_type"),
"length", "sha256"}`` (the SHA-256 of the value's bytes) with no ``value``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Iterable

from ..format import spec as _spec
from ..format import structs
from ..base.atomic import atomic_path
from .._version import __version__
from ..filemodel.dump import value_to_json
from ..base.errors import GGUFError
from ..filemodel.gguffile import load
from ..rulebook.catalog import catalog
from . import SCHEMA_VERSION
from .cases import BIG_KEY, Case, all_cases
from .expect import EITHER, PROFILES, outcome
from .large import LargeCase, large_cases

__all__ = ["PROFILE_DOCS", "case_entry", "large_entry", "build_manifest", "write_suite", "manifest_json", "cases_tsv"]

PROFILE_DOCS = {
    "spec": "gguf.md as the project's spec/ encodes it: what any conforming reader must accept or refuse",
    "ggml": "ggml's own reader (gguf_init_from_file in ggml/src/gguf.cpp) on a little-endian host",
    "llama.cpp": "llama.cpp's model loader (llama_model_load_from_file): the container as ggml reads it, plus the "
    "model's keys and tensors",
}
# what the default suite leaves out; `suite write --large` adds it (then nothing is left out)
NOT_COVERED = [
    {
        "rules": ["STR-MAXLEN", "ARR-MAXLEN"],
        "why": "ggml's limits are 2^30 bytes and 2^30 elements: a complete file at or one past them is at least 1 GiB, "
        "beyond the default suite's size.  The default suite has a string and an array declared one past the "
        "limit in a short file (edge/STR-MAXLEN, edge/ARR-MAXLEN: refused by every reader for running past the "
        "end of the file, without allocating what the count asks for); `gguf-construct suite write DIR "
        "--large` adds the four boundary files (strings of 2^30 and 2^30 + 1 bytes, UINT8 arrays of 2^30 and "
        '2^30 + 1 elements; 4 GiB, the arrays\' zeros written sparse), marked "large": true',
    },
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
        entry = {
            "name": t.name,
            "type": t.type_name,
            "shape": list(t.shape),
            "offset": t.offset,
            "nbytes": t.nbytes,
            "sha256": hashlib.sha256(bytes(t.raw())).hexdigest(),
        }
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
        vtype = case.path.rsplit("/", 1)[1][: -len(".gguf")]
        doc = next(v["doc"] for v in structs.value_types().values() if v["name"] == vtype)
        return [{"rule": None, "text": f"{vtype}: {doc}", "doc_ref": "gguf.md gguf_metadata_value_type"}]
    if case.group == "tensor-types":
        name = case.path.rsplit("/", 1)[1][: -len(".gguf")]
        st = next(t for t in _spec.tensor_types() if t.name == name)
        return [{"rule": None, "text": f"{name}: {st.doc}", "doc_ref": st.doc_ref}]
    if case.group == "model":
        arch = case.path.split("/")[1]
        return [
            {
                "rule": None,
                "text": f"what llama.cpp's loader reads for architecture {arch}",
                "doc_ref": f"spec/architectures/{arch}.yaml (docs/architectures/{arch}.md)",
            }
        ]
    if case.group == "split":
        entries = [k for k in _spec.load_yaml("keys.yaml")["keys"] if k["key"].startswith("split.")]
        return [
            {"rule": None, "text": f"{k['key']} ({k['type']}): {k['doc']}", "doc_ref": k["doc_ref"]} for k in entries
        ]
    return []


def case_entry(case: Case) -> dict:
    """The manifest entry of one case."""
    expect, why = _verdicts(case)
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


def _verdicts(case: Case | LargeCase) -> tuple[dict, dict]:
    expect, why = {}, {}
    for profile in PROFILES:
        verdict, reason = outcome(case.rules, profile, model=case.model)
        expect[profile] = verdict
        if reason:
            why[profile] = reason
    return expect, why


def large_entry(case: LargeCase) -> dict:
    """The manifest entry of a large case: its size and SHA-256 streamed, the values of its small twin with the
    big key given by its ``length`` and the ``sha256`` of its bytes instead of a ``value``."""
    expect, why = _verdicts(case)
    entry: dict[str, Any] = {
        "file": case.path,
        "group": case.group,
        "large": True,
        "doc": case.doc,
        "rules": list(case.rules),
    }
    if case.near:
        entry["limit_of"] = list(case.near)
    file_sha256, value_sha256 = case.sha256s()
    entry.update(
        expect=expect,
        why=why,
        spec_text=_spec_text(list(case.rules) + list(case.near)),
        sha256=file_sha256,
        size=case.size,
    )
    twin = Case(case.path, case.group, case.rules, case.doc, {case.path: case.small_twin()})
    values = _expected_values(twin)
    key = BIG_KEY[case.vtype]
    big = {"key": key, "type": case.vtype, "length": case.length, "sha256": value_sha256}
    if case.vtype == "ARRAY":
        big["item_type"] = "UINT8"
    values["metadata"] = [big if m["key"] == key else m for m in values["metadata"]]
    entry.update(values)
    return entry


def build_manifest(cases: list[Case] | None = None, large: list[LargeCase] = ()) -> tuple[dict, dict[str, bytes]]:
    """The manifest and the files (relative path -> bytes) of the suite; ``large`` cases are in the manifest
    but not among the files (:meth:`LargeCase.write` streams them)."""
    cases = all_cases() if cases is None else cases
    files: dict[str, bytes] = {}
    for c in cases:
        files.update(c.files)
    entries = [case_entry(c) for c in cases] + [large_entry(c) for c in large]
    hashes = {path: hashlib.sha256(data).digest() for path, data in files.items()}
    hashes.update({e["file"]: bytes.fromhex(e["sha256"]) for e in entries if e.get("large")})
    digest = hashlib.sha256()
    for path in sorted(hashes):
        digest.update(path.encode() + b"\0" + hashes[path])
    cat = catalog()
    used = sorted({r for c in [*cases, *large] for r in (*c.rules, *c.near)}, key=list(cat).index)
    manifest = {
        "schema": SCHEMA_VERSION,
        "generator": f"gguf-construct {__version__}",
        "profiles": PROFILE_DOCS,
        "outcomes": {
            "accept": "the reader must read the file (and read the values listed)",
            "reject": "the reader must refuse the file, without crashing or hanging",
            "either": "the spec leaves it to the reader (see why); crashing or hanging still fails",
        },
        "either_rules": [{"rule": r, "profile": p, "why": w} for (r, p), w in EITHER.items()],
        "rules": {
            r: {
                "title": cat[r].title,
                "severity": {p: cat[r].severity(p) for p in PROFILES},
                "doc": cat[r].doc,
                "doc_ref": cat[r].raw.get("doc_ref", ""),
            }
            for r in used
        },
        "not_covered": [] if large else NOT_COVERED,
        "digest": digest.hexdigest(),
        "total_bytes": sum(len(d) for d in files.values()) + sum(e["size"] for e in entries if e.get("large")),
        "cases": entries,
    }
    return manifest, files


def manifest_json(manifest: dict) -> str:
    """The manifest as written: ASCII JSON, one case per line block, no NaN."""
    return json.dumps(manifest, ensure_ascii=True, allow_nan=False, indent=1) + "\n"


def write_suite(
    directory: str | os.PathLike, cases: list[Case] | None = None, *, large: bool | list[LargeCase] = False
) -> dict:
    """Write the suite's files and ``manifest.json`` into ``directory`` (each file atomically); returns the
    manifest.  ``large`` adds the boundary files of ggml's 2^30 limits (True: :func:`.large.large_cases`), each
    streamed to disk.  Files of an earlier suite that the new one does not have are left alone."""
    big = (large_cases() if large is True else list(large)) if large else []
    manifest, files = build_manifest(cases, big)
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
    for case in big:
        path = os.path.join(root, *case.path.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_path(path) as tmp:
            case.write(tmp)
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
