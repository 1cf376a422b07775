"""Split models as llama.cpp loads them: the one place that decides what a shard set is.

Facts from spec/naming.yaml ``shard``: shard paths are ``<prefix>-00001-of-00003.gguf`` (``split.no + 1`` of
``split.count``); a file is a shard when its ``split.count`` is at least ``split_from`` (llama.cpp's loader: only
``n_split > 1`` is split, so the ``split.count = 0`` that ``merge`` writes is a whole file).  A split model is
opened from its first shard (``split.no = 0``): its metadata is the model's, the other shards' paths are built
from its name, each of them must hold the ``split.no`` of its place, no tensor may be in two shards, and together
they hold the first shard's ``split.tensors.count`` tensors.  A later shard opened alone is refused by llama.cpp
("model must be loaded with the first split").

This module judges facts (:class:`ShardFacts`) and names; reading the files is the caller's (``load``, ``check``).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from ..base.errors import GGUFError
from . import spec as _spec
from . import keynames

__all__ = [
    "SPLIT_NO",
    "SPLIT_COUNT",
    "SPLIT_TENSORS",
    "SPLIT_KEYS",
    "split_key_type",
    "SINGLE",
    "FIRST",
    "LATER",
    "ShardFacts",
    "Problem",
    "role",
    "split_from",
    "shard_path",
    "shard_numbers",
    "parse_shard_path",
    "shard_set_paths",
    "member_paths",
    "set_label",
    "first_shard_path",
    "later_shard_params",
    "set_problems",
    "breaks",
    "missing_shards",
    "load_refusal",
    "not_a_first_shard",
    "unbuildable_names",
    "tensor_in_two_shards",
]

SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS = keynames.SPLIT_NO, keynames.SPLIT_COUNT, keynames.SPLIT_TENSORS_COUNT
SPLIT_KEYS = (SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS)
SINGLE, FIRST, LATER = "single", "first", "later"

_SUFFIX = re.compile(r"-(\d+)-of-(\d+)\.gguf\Z", re.IGNORECASE)


@functools.lru_cache(maxsize=None)
def _shard_spec() -> dict:
    return _spec.load_yaml("naming.yaml")["shard"]


@functools.lru_cache(maxsize=None)
def split_key_type(key: str) -> str:
    """The value type spec/keys.yaml declares for one of :data:`SPLIT_KEYS` (what gguf-split writes and
    llama.cpp's typed reads demand)."""
    return next(e["type"] for e in _spec.load_yaml("keys.yaml")["keys"] if e["key"] == key)


def breaks(failure: str) -> str:
    """The rule a split model failing as ``failure`` breaks (spec/naming.yaml ``shard.breaks``: ``name``,
    ``missing``, ``count``, ``duplicate``, ``agree``)."""
    return _shard_spec()["breaks"][failure]


def split_from() -> int:
    """The smallest ``split.count`` that makes a file a shard of a split model (spec/naming.yaml)."""
    return int(_shard_spec()["split_from"])


def _int(value) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def role(split_no, split_count) -> str:
    """``"single"`` (a whole file: no split.count, or one below ``split_from``), ``"first"`` (the shard a split
    model is opened from: split.no 0 or absent, as llama.cpp reads a missing split.no there as a failure of its own)
    or ``"later"`` (split.no > 0)."""
    count, no = _int(split_count), _int(split_no)
    if count is None or count < split_from():
        return SINGLE
    return LATER if no is not None and no != 0 else FIRST


# -- names -----------------------------------------------------------------------------------------------------
def shard_path(prefix: str, index: int, count: int) -> str:
    """The path of shard ``index`` (0-based, as split.no) of ``count``: ``PREFIX-00001-of-00003.gguf``."""
    number = index + _shard_spec()["first_number"]
    return f"{prefix}-{_shard_spec()['format'].format(number=number, total=count)}.gguf"


def shard_numbers(index: int, count: int) -> tuple[str, str]:
    """Shard ``index`` (0-based) of ``count`` as its file name writes them: ``("00001", "00003")``."""
    number, total = shard_path("", index, count)[1 : -len(".gguf")].split("-of-")
    return number, total


def parse_shard_path(path: str) -> tuple[str, int, int, int] | None:
    """``(prefix, index, count, digits)`` of a shard path (index 0-based), or None when the name has no
    ``-N-of-M.gguf`` suffix.  ``digits`` is the width of the number as written (5 when conforming)."""
    m = _SUFFIX.search(os.fspath(path))
    if m is None:
        return None
    index = int(m.group(1)) - _shard_spec()["first_number"]
    count = int(m.group(2))
    if index < 0 or count < 1 or index >= count:
        return None
    return os.fspath(path)[: m.start()], index, count, len(m.group(1))


def shard_set_paths(path: str) -> list[str] | None:
    """Every shard path of the set ``path`` belongs to by its name (in order, whether present or not), or None
    when ``path`` is not named as a shard.  Numbers keep the width used in ``path``."""
    found = parse_shard_path(path)
    if found is None:
        return None
    prefix, _, count, digits = found
    m = _SUFFIX.search(os.fspath(path))
    total, extension = m.group(2), os.fspath(path)[-len(".gguf") :]  # as written (width, letter case)
    first = _shard_spec()["first_number"]
    return [f"{prefix}-{n + first:0{digits}d}-of-{total}{extension}" for n in range(count)]


def first_shard_path(path: str) -> str | None:
    """The first shard of the set ``path`` is named into, or None when the name is no shard name."""
    paths = shard_set_paths(path)
    return paths[0] if paths else None


def member_paths(first: str, count: int) -> list[str] | None:
    """The paths of all ``count`` shards of the model opened from ``first``, as llama.cpp builds them (its name
    must end in the first shard's suffix, ``-00001-of-<count>.gguf``), or None when it does not (llama.cpp:
    "invalid split file name")."""
    suffix = shard_path("", 0, count)
    text = os.fspath(first)
    if len(text) <= len(suffix) or not text.endswith(suffix):
        return None
    prefix = text[: -len(suffix)]
    return [shard_path(prefix, i, count) for i in range(count)]


def set_label(path: str, count: int | None = None) -> str:
    """How findings name a shard set: the file name with the shard number replaced by ``*``."""
    base = os.path.basename(path.rstrip("/")) if "://" not in path else path.rsplit("/", 1)[-1]
    m = _SUFFIX.search(base)
    if m is not None:
        return f"{base[: m.start()]}-*-of-{m.group(2)}.gguf"
    return f"{base}-*-of-{shard_numbers(0, count)[1]}" if count else base


# -- judging a set ---------------------------------------------------------------------------------------------
@dataclass
class ShardFacts:
    """What the set rules need from one shard: its path, whether it exists and reads as GGUF, its split keys and
    its tensor names (in file order)."""

    path: str
    present: bool = True
    readable: bool = True
    split_no: int | None = None
    split_no_type: str | None = None  # the value type split.no is stored as (UINT16 as written), None when absent
    split_count: int | None = None
    split_tensors: int | None = None
    tensor_names: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Problem:
    """One set finding: the rule it breaks and its message parameters."""

    rule: str
    params: dict


def later_shard_params(path: str, split_no: int, split_count: int) -> dict:
    """The message parameters of META-SPLIT-LATER for the later shard at ``path``."""
    first = first_shard_path(path)
    name = os.path.basename(path) if "://" not in path else path.rsplit("/", 1)[-1]
    first_name = (
        (os.path.basename(first) if "://" not in first else first.rsplit("/", 1)[-1])
        if first
        else shard_path("<prefix>", 0, split_count).rsplit("/", 1)[-1]
    )
    index, total = shard_numbers(split_no, split_count)
    return {"index": index, "count": total, "first": first_name, "value": split_no, "file": name}


def set_problems(first: ShardFacts, others: list[ShardFacts]) -> list[Problem]:
    """The findings about the split model opened from ``first`` (a shard whose role is ``"first"``) with the
    other shards ``others`` (in place order, ``split.count - 1`` of them, or none when the first shard's name does
    not allow building their paths), in llama.cpp's order of checks."""
    count = first.split_count
    label = set_label(first.path, count)
    out: list[Problem] = []
    if member_paths(first.path, count) is None:
        out.append(
            Problem(
                breaks("count"),
                {
                    "set": label,
                    "problem": (
                        f"split.count = {count} but the name does not end in {shard_path('', 0, count)}; llama.cpp builds the "
                        'other shards\' names from it ("invalid split file name")'
                    ),
                },
            )
        )
        return out
    seen = dict.fromkeys(first.tensor_names, 0)  # tensor name -> place of the shard holding it
    held = len(set(first.tensor_names))
    complete = True
    for place, shard in enumerate(others, start=1):
        number, total = shard_numbers(place, count)
        if not shard.present:
            out.append(Problem(breaks("missing"), {"set": label, "index": number, "count": total}))
            complete = False
            continue
        if not shard.readable:
            out.append(
                Problem(
                    breaks("count"),
                    {
                        "set": label,
                        "problem": (f'shard {number} is not readable as GGUF (llama.cpp: "failed to load GGUF split")'),
                    },
                )
            )
            complete = False
            continue
        if shard.split_no is None:
            out.append(
                Problem(
                    breaks("count"),
                    {
                        "set": label,
                        "problem": (
                            f'shard {number} has no split.no (llama.cpp: "missing key split.no in GGUF split")'
                        ),
                    },
                )
            )
        elif shard.split_no_type not in (None, split_key_type(SPLIT_NO)):
            out.append(
                Problem(
                    breaks("count"),
                    {
                        "set": label,
                        "problem": (
                            f"shard {number} stores split.no as {shard.split_no_type}; llama.cpp reads it with "
                            f"gguf_get_val_u16, whose type assertion aborts the process"
                        ),
                    },
                )
            )
        elif shard.split_no != place:
            out.append(
                Problem(
                    breaks("count"),
                    {
                        "set": label,
                        "problem": (
                            f'shard {number} holds split.no = {shard.split_no}, expected {place} (llama.cpp: "invalid split '
                            'file idx")'
                        ),
                    },
                )
            )
        for key, mine, theirs in (
            (SPLIT_COUNT, count, shard.split_count),
            (SPLIT_TENSORS, first.split_tensors, shard.split_tensors),
        ):
            if theirs != mine:
                out.append(
                    Problem(
                        breaks("agree"),
                        {"set": label, "problem": (f"shard {number} has {key} = {theirs}, the first shard {mine}")},
                    )
                )
        for name in shard.tensor_names:
            if name in seen:
                out.append(
                    Problem(
                        breaks("duplicate"),
                        {
                            "set": label,
                            "name": name,
                            "index": number,
                            "first_index": shard_numbers(seen[name], count)[0],
                        },
                    )
                )
                complete = False  # llama.cpp stops at the duplicate, before counting
            else:
                seen[name] = place
                held += 1
    if complete and first.split_tensors is not None and held != first.split_tensors:
        out.append(
            Problem(
                breaks("count"),
                {
                    "set": label,
                    "problem": (
                        f'the shards hold {held} tensors, split.tensors.count = {first.split_tensors} (llama.cpp: "corrupted '
                        'model")'
                    ),
                },
            )
        )
    return out


# -- what load and merge refuse of a split model (the split rules are raised here only) ------------------------------
def missing_shards(missing: list[str], total: int) -> GGUFError:
    """The error of a split model some of whose ``total`` shards are ``missing``: without them it is undefined."""
    return GGUFError(
        f"split model: shard {missing[0]!r} is missing ({len(missing)} of {total} shards absent); "
        "load(path, shards=False) reads one shard alone",
        path="file_name",
        rule=breaks("missing"),
    )


def load_refusal(problems: list[Problem], paths: list[str]) -> GGUFError | None:
    """The error ``load`` raises for a set judged by :func:`set_problems` (shards at ``paths``, in order): a
    tensor in two shards (the model is undefined); None when load goes on (the other findings are check's)."""
    for problem in problems:
        if problem.rule == breaks("duplicate"):
            p = problem.params
            return GGUFError(
                f"split model: tensor {p['name']!r} is in shard {p['first_index']} and shard "
                f"{p['index']} ({paths[int(p['index']) - 1]!r})",
                path="file_name",
                rule=breaks("duplicate"),
            )
    return None


def not_a_first_shard(path: str, count_value) -> GGUFError:
    """The error of merging from ``path``, which holds no valid split.count or is a later shard."""
    return GGUFError(
        f"{path}: no valid {SPLIT_COUNT} (found {count_value!r}); not the first shard of a split model",
        path="metadata_kv",
        rule=breaks("count"),
    )


def unbuildable_names(path: str, count: int) -> GGUFError:
    """The error of a first shard whose name does not let the other shards' names be built from it."""
    return GGUFError(
        f"{path}: the name must end in {os.path.basename(shard_path('', 0, count))[1:]} ({SPLIT_COUNT} = {count})",
        path="file_name",
        rule=breaks("name"),
    )


def tensor_in_two_shards(name: str, path: str) -> GGUFError:
    """The error of a tensor met again in the shard at ``path``."""
    return GGUFError(f"tensor {name!r} is in two shards ({path})", path="file_name", rule=breaks("duplicate"))
