"""llama.cpp's loader reads split.count (and, in a split model, split.no and split.tensors.count) typed in its
constructor: a wrong type or a missing key refuses the file whatever its architecture; a whole file's
split.tensors.count is never read, nor a later shard's split.count (its split.no is, and a wrong type aborts).  The
replayed load (and so ``check --profile llama.cpp``) says the same; with GGUF_CONSTRUCT_LLAMA_LIB set, libllama
is asked too."""

from __future__ import annotations

import os

import pytest

import gguf_construct
from gguf_construct.breaking.models import minimal_model
from gguf_construct.fuzzing.targets import make_target
from gguf_construct.filemodel.gguffile import load
from gguf_construct.operations.split import split_model

LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")

# (variant, split into shards, the shard edited (0: the first), its edit, the error rule expected or None)
CASES = [
    ("whole-count-u32", False, 0, ("set", "split.count", 1, "UINT32"), "MODEL-KEY-TYPE"),
    ("whole-count-u16-no-absent", False, 0, ("set", "split.count", 1, "UINT16"), None),
    ("whole-tensors-count-u16", False, 0, ("set", "split.tensors.count", 3, "UINT16"), None),
    ("split-intact", True, 0, None, None),
    ("split-no-u32", True, 0, ("set", "split.no", 0, "UINT32"), "MODEL-KEY-TYPE"),
    ("split-no-absent", True, 0, ("remove", "split.no"), "MODEL-KEY-MISSING"),
    ("split-count-i32", True, 0, ("set", "split.count", 4, "INT32"), "MODEL-KEY-TYPE"),
    ("split-tensors-count-u16", True, 0, ("set", "split.tensors.count", "n", "UINT16"), "MODEL-KEY-TYPE"),
    ("split-tensors-count-absent", True, 0, ("remove", "split.tensors.count"), "MODEL-KEY-MISSING"),
    ("split-tensors-count-plus-one", True, 0, ("set", "split.tensors.count", "n+1", "INT32"), "META-SPLIT-COUNT"),
    ("later-no-u32", True, 1, ("set", "split.no", 1, "UINT32"), "META-SPLIT-COUNT"),  # llama.cpp aborts
    ("later-no-absent", True, 1, ("remove", "split.no"), "META-SPLIT-COUNT"),
    ("later-no-two", True, 1, ("set", "split.no", 2, "UINT16"), "META-SPLIT-COUNT"),
    ("later-count-u32", True, 1, ("set", "split.count", 4, "UINT32"), None),  # not read in a later shard
    ("later-tensors-count-u16", True, 1, ("set", "split.tensors.count", "n", "UINT16"), None),
]


def _build(tmp_path, split: bool, shard: int, edit) -> str:
    """The file to open (the first shard of a split model) with ``edit`` made to shard ``shard``."""
    model = minimal_model("llama")
    n = len(model.tensors)
    if split:
        paths = [p for p, _ in split_model(model, str(tmp_path / "m"), max_tensors=6)]
        first, path = paths[0], paths[shard]
        f = load(path, shards=False)
    else:
        first = path = str(tmp_path / "m.gguf")
        f = model
    if edit and edit[0] == "set":
        value = {"n": n, "n+1": n + 1}.get(edit[2], edit[2])
        f.metadata.set(edit[1], value, edit[3])
    elif edit:
        del f.metadata[edit[1]]
    f.save(path + ".new")
    os.replace(path + ".new", path)
    return first


@pytest.mark.parametrize("name,split,shard,edit,rule", CASES, ids=[c[0] for c in CASES])
def test_split_key_reads_are_replayed(tmp_path, name, split, shard, edit, rule):
    path = _build(tmp_path, split, shard, edit)
    errors = {f.rule for f in gguf_construct.check(path, profile="llama.cpp").findings if f.severity == "error"}
    assert errors == ({rule} if rule else set()), errors


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
def test_split_key_reads_agree_with_libllama(tmp_path):
    target = make_target(f"llama:{LIB}", timeout=60)
    target.start()
    try:
        for i, (name, split, shard, edit, rule) in enumerate(CASES):
            folder = tmp_path / str(i)
            folder.mkdir()
            out = target.run(_build(folder, split, shard, edit))
            assert (out.status == "accept") == (rule is None), (name, out)  # refused: rejected or aborted
    finally:
        target.close()
