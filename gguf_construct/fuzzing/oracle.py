"""The oracle: what a correct reader says about a file, and how a target's answer is compared with it.

The verdict is the checker's (:func:`gguf_construct.check`) under the chosen profile; for files it accepts,
the expected values are our decoded metadata and tensor infos in the shape of ``gguf-construct dump --json``
(:func:`gguf_construct.filemodel.dump.file_summary`).  :func:`compare` lists the differences between that and a target's
answer in the same shape (see :mod:`gguf_construct.fuzzing` for the shape).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

from ..checker import check
from ..filemodel.dump import file_summary
from ..base.errors import GGUFError
from ..filemodel.gguffile import load
from ..format.enums import VALUE_TYPE_IDS
from ..format.structs import STRUCT_FORMATS, value_kind, value_types

__all__ = ["Expectation", "expect", "compare"]


@dataclass
class Expectation:
    """The oracle's answer for one file."""

    valid: bool
    rules: list[str] = field(default_factory=list)  # error-level rule IDs under the profile
    summary: dict | None = None  # decoded keys and tensors, for valid files
    note: str = ""  # the checker accepts but our loader refuses (an inconsistency of ours)


def expect(data: bytes, profile: str = "spec") -> Expectation:
    """The checker's verdict on ``data`` under ``profile`` and, when valid, the decoded summary."""
    report = check(data, profile=profile)
    errors = sorted({f.rule for f in report.errors()})
    if not report.valid:
        return Expectation(False, errors)
    try:
        summary = file_summary(load(data, lazy=False), full=True)
    except GGUFError as exc:
        return Expectation(True, errors, None, f"checker accepts, load refuses: {exc}")
    return Expectation(True, errors, summary)


# -- comparison ----------------------------------------------------------------------------------------------
def _norm_text(s: Any) -> Any:
    if isinstance(s, str):
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return s


def _by_name(records, field: str) -> dict:
    """A target's reported records (a list of dicts, or anything else it printed) by their normalised ``field``;
    the first of duplicates wins, records without the field are ignored."""
    out: dict = {}
    for r in records or []:
        if isinstance(r, dict) and field in r:
            out.setdefault(_norm_text(r[field]), r)
    return out


def _float_eq(a: Any, b: Any, fmt: str) -> bool:
    """Whether two reported floats are the same value once rounded to the ``struct`` format ``fmt`` a file holds."""
    fa, fb = _as_float(a), _as_float(b)
    if fa is None or fb is None:
        return False
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    if fmt != "d":
        try:
            fa, fb = (struct.unpack(fmt, struct.pack(fmt, x))[0] for x in (fa, fb))
        except (OverflowError, struct.error):
            return False
    return fa == fb


def _as_float(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v.lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity"):
        return float(v)
    return None


def _scalar_eq(vtype: str, a: Any, b: Any) -> bool:
    kind = value_kind(VALUE_TYPE_IDS[vtype])
    if kind == "float":
        return _float_eq(a, b, STRUCT_FORMATS[value_types()[VALUE_TYPE_IDS[vtype]]["encoding"]])
    if kind == "bool":
        return bool(a) == bool(b) if isinstance(b, (bool, int)) else False
    if kind == "text":
        return _norm_text(a) == _norm_text(b)
    if isinstance(b, bool) or not isinstance(b, int):
        return False
    return a == b


def _value_eq(entry: dict, got: dict) -> bool:
    if "value" not in got:
        return True  # the target does not report values of this key
    if entry["type"] != "ARRAY":
        return _scalar_eq(entry["type"], entry["value"], got["value"])
    theirs = got["value"]
    if not isinstance(theirs, list) or len(theirs) != len(entry["value"]):
        return False
    if entry["item_type"] == "ARRAY":
        return all(isinstance(t, dict) and _value_eq(o, t) for o, t in zip(entry["value"], theirs))
    return all(_scalar_eq(entry["item_type"], o, t) for o, t in zip(entry["value"], theirs))


def _type_name(v: Any, names: dict[int, str]) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return names.get(v, v)
    return v.upper() if isinstance(v, str) else v


def compare(expected: dict, got: dict) -> list[dict]:
    """Differences between our summary and a target's: ``[{"what", "where", "expected", "got"}]``.

    Keys are compared by name (type, element type, length and value); tensors by name (type, shape, offset).
    Types may be given as names or numeric ids; a missing ``value`` is not compared.
    """
    from ..format.enums import GGMLType, GGUFValueType

    vnames = {int(v): v.name for v in GGUFValueType}
    tnames = {int(t): t.name for t in GGMLType}
    out: list[dict] = []

    def diff(what, where, exp, got_):
        out.append({"what": what, "where": where, "expected": exp, "got": got_})

    theirs = _by_name(got.get("metadata"), "key")
    ours = {_norm_text(m["key"]): m for m in expected["metadata"]}
    for key, m in ours.items():
        t = theirs.get(key)
        if t is None:
            diff("key", key, "present", "missing")
            continue
        ttype = _type_name(t.get("type"), vnames)
        if ttype != m["type"]:
            diff("type", key, m["type"], ttype)
            continue
        if m["type"] == "ARRAY":
            item = _type_name(t.get("item_type", m["item_type"]), vnames)
            if item != m["item_type"]:
                diff("type", key, f"ARRAY[{m['item_type']}]", f"ARRAY[{item}]")
                continue
            if "length" in t and t["length"] != m["length"]:
                diff("value", key, f"length {m['length']}", f"length {t['length']}")
                continue
        if not _value_eq(m, t):
            diff("value", key, _short(m["value"]), _short(t.get("value")))
    for key in theirs.keys() - ours.keys():
        diff("key", key, "absent", "present")
    theirs_t = _by_name(got.get("tensors"), "name")
    ours_t = {_norm_text(t["name"]): t for t in expected["tensors"]}
    for name, t in ours_t.items():
        g = theirs_t.get(name)
        if g is None:
            diff("tensor", name, "present", "missing")
            continue
        if "type" in g and _type_name(g["type"], tnames) != t["type"]:
            diff("tensor type", name, t["type"], _type_name(g["type"], tnames))
        if "shape" in g and [int(d) for d in g["shape"]] != list(t["shape"]):
            diff("tensor shape", name, t["shape"], g["shape"])
        if "offset" in g and g["offset"] != t["offset"]:
            diff("tensor offset", name, t["offset"], g["offset"])
    for name in theirs_t.keys() - ours_t.keys():
        diff("tensor", name, "absent", "present")
    return out


def _short(v: Any, limit: int = 120) -> Any:
    text = repr(v)
    return v if len(text) <= limit else text[: limit - 3] + "..."
