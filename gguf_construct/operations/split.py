"""Split a model into shards and merge shards back, as llama.cpp's gguf-split does (byte for byte).

Facts taken from gguf-split: the first shard carries all metadata, every shard gets ``split.no`` (0-based),
``split.tensors.count`` and ``split.count`` appended in that order (ggml's set replaces a key by appending it);
tensors keep their order, each tensor's data is padded to the alignment; shapes are written with ggml's dimension
count (trailing 1s dropped, at least one); files are GGUF v3 (the input's byte order is kept: data is copied).
``--max-size`` counts the padded tensor bytes of a shard (not its metadata); ``--max-tensors`` cuts every N
tensors.  A merged file keeps the first shard's metadata with ``split.count`` set to 0.
"""

from __future__ import annotations

import re

from ..base.atomic import atomic_paths
from ..format.enums import GGUFValueType
from ..base.errors import GGUFError
from ..filemodel.inputs import open_input
from ..format.reader import align_offset
from ..filemodel.gguffile import DEFAULT_ALIGNMENT, MAX_DIMS, GGUFFile, Tensor
from ..format.splitset import (
    LATER,
    SPLIT_COUNT,
    SPLIT_KEYS,
    SPLIT_NO,
    SPLIT_TENSORS,
    member_paths,
    not_a_first_shard,
    role,
    shard_path,
    tensor_in_two_shards,
    unbuildable_names,
)
from ..format.containerspec import current_version
from ..format.values import make_value

__all__ = ["plan_split", "split_model", "merge_shards", "parse_size"]

DEFAULT_MAX_TENSORS = 128  # gguf-split's default
_SIZE = re.compile(r"\A(\d+)([KMG]?)\Z", re.IGNORECASE)
_UNITS = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3}  # decimal, as gguf-split's M and G
WRITTEN_VERSION = current_version()  # ggml writes its own GGUF_VERSION, the spec's current one


def _key_type(key: str):
    from ..rulebook.keys import lookup  # the registry's type for the split keys (spec/keys.yaml)

    return GGUFValueType[lookup(key, None)["type"]]


def parse_size(text: str) -> int:
    """Bytes of a size such as ``2G``, ``500M``, ``64K`` or ``1000`` (decimal units, as gguf-split)."""
    m = _SIZE.match(text.strip())
    if m is None or int(m.group(1)) <= 0:
        raise ValueError(f"bad size {text!r}: a positive number with an optional unit K, M or G")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def _ggml_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape as ggml writes it: ne padded with 1s, then cut after the last dimension > 1 (at least one)."""
    ne = list(shape) + [1] * (MAX_DIMS - len(shape))
    n = 1
    for i in range(MAX_DIMS - 1, 0, -1):
        if ne[i] > 1:
            n = i + 1
            break
    return tuple(ne[:n])


def plan_split(
    tensors: list[Tensor],
    *,
    max_size: int | None = None,
    max_tensors: int | None = None,
    no_tensor_first_split: bool = False,
) -> list[list[Tensor]]:
    """The tensors of each shard, in order, cut as gguf-split cuts them.

    Unlike gguf-split (which gives up), a tensor larger than ``max_size`` gets a shard of its own.
    """
    if max_size is None and max_tensors is None:
        max_tensors = DEFAULT_MAX_TENSORS
    if max_tensors is not None and max_tensors <= 0:
        raise ValueError("max_tensors must be positive")
    shards: list[list[Tensor]] = [[]]
    if no_tensor_first_split:
        shards.append([])
    current = 0
    for i, t in enumerate(tensors):
        size = align_offset(t.nbytes, DEFAULT_ALIGNMENT)
        if max_size is not None:
            cut = current + size > max_size and bool(shards[-1])
        else:
            cut = i > 0 and i % max_tensors == 0
        if cut:
            shards.append([])
            current = size
        else:
            current += size
        shards[-1].append(t)
    return shards


def _copy_tensor(t: Tensor) -> Tensor:
    return Tensor(t.name, _ggml_shape(t.shape), t.ggml_type, 0, t.nbytes, source=t.raw(), byte_order=t.byte_order)


def _shard_file(src: GGUFFile, index: int, count: int, n_tensors: int, tensors: list[Tensor]) -> GGUFFile:
    out = GGUFFile(WRITTEN_VERSION, src.byte_order)
    if index == 0:
        for key, value in src.metadata.typed_items():
            if key not in SPLIT_KEYS:
                out.metadata[key] = value
        out.reuse_records_of(src)
    for key, value in ((SPLIT_NO, index), (SPLIT_TENSORS, n_tensors), (SPLIT_COUNT, count)):
        out.metadata[key] = make_value(_key_type(key), value)
    out.tensors = [_copy_tensor(t) for t in tensors]
    return out


def split_model(
    source: GGUFFile,
    prefix: str,
    *,
    max_size: int | None = None,
    max_tensors: int | None = None,
    no_tensor_first_split: bool = False,
    dry_run: bool = False,
) -> list[tuple[str, GGUFFile]]:
    """Write ``source`` as shards ``PREFIX-00001-of-0000N.gguf``, all of them or (on any failure or interrupt)
    none; returns (path, shard) pairs."""
    plan = plan_split(
        source.tensors, max_size=max_size, max_tensors=max_tensors, no_tensor_first_split=no_tensor_first_split
    )
    count = len(plan)
    out = [
        (shard_path(prefix, i, count), _shard_file(source, i, count, len(source.tensors), tensors))
        for i, tensors in enumerate(plan)
    ]
    if not dry_run:
        with atomic_paths([path for path, _ in out]) as tmps:  # the set appears whole or not at all
            for tmp, (_, shard) in zip(tmps, out):
                with open(tmp, "wb") as fh:
                    shard.write_to(fh, pad_head=True)
    return out


def merge_shards(first: str, output: str, *, dry_run: bool = False) -> GGUFFile:
    """Merge the split model whose first shard is ``first`` into ``output`` (written atomically)."""
    head = open_input(first)
    count_value = head.metadata.typed(SPLIT_COUNT).value if SPLIT_COUNT in head.metadata else None
    no_value = head.metadata.typed(SPLIT_NO).value if SPLIT_NO in head.metadata else None
    if (
        not isinstance(count_value, int)
        or isinstance(count_value, bool)
        or count_value < 1
        or role(no_value, count_value) == LATER
    ):
        raise not_a_first_shard(first, count_value)
    paths = member_paths(first, count_value)  # as llama.cpp builds them from the first shard's name
    if paths is None:
        raise unbuildable_names(first, count_value)
    files = [head] + [open_input(p) for p in paths[1:]]
    out = GGUFFile(WRITTEN_VERSION, head.byte_order)
    for key, value in head.metadata.typed_items():
        if key != SPLIT_COUNT:
            out.metadata[key] = value
    out.metadata[SPLIT_COUNT] = make_value(_key_type(SPLIT_COUNT), 0)  # a merged file is no longer split
    out.reuse_records_of(head)
    names = set()
    for f in files:
        if f.byte_order != out.byte_order:
            raise GGUFError(
                f"{f.path}: {f.byte_order}-endian, the first shard is {out.byte_order}-endian", path="header.version"
            )
        for t in f.tensors:
            if t.name in names:
                raise tensor_in_two_shards(t.name, f.path)
            names.add(t.name)
            out.tensors.append(_copy_tensor(t))
    if not dry_run:
        out.save(output, pad_head=True)
    return out
