"""llama.cpp's loader reads split.count (and, in a split model, split.no) as UINT16 in its constructor: a wrong type
or a missing split.no refuses the file whatever its architecture; split.tensors.count is never read there.  The
replayed load (and so ``check --profile llama.cpp``) says the same; with GGUF_CONSTRUCT_LLAMA_LIB set, libllama
is asked too."""

from __future__ import annotations

import os

import pytest

import gguf_construct
from gguf_construct.arch.synth import minimal_model
from gguf_construct.fuzzing.targets import make_target
from gguf_construct.model import load
from gguf_construct.split import split_model

LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")

# (variant, split into shards, edit of the first file, the model rule expected or None)
CASES = [
    ("whole-count-u32", False, ("set", "split.count", 1, "UINT32"), "MODEL-KEY-TYPE"),
    ("whole-count-u16-no-absent", False, ("set", "split.count", 1, "UINT16"), None),
    ("whole-tensors-count-u16", False, ("set", "split.tensors.count", 3, "UINT16"), None),
    ("split-intact", True, None, None),
    ("split-no-u32", True, ("set", "split.no", 0, "UINT32"), "MODEL-KEY-TYPE"),
    ("split-no-absent", True, ("remove", "split.no"), "MODEL-KEY-MISSING"),
    ("split-count-i32", True, ("set", "split.count", 4, "INT32"), "MODEL-KEY-TYPE"),
]


def _build(tmp_path, split: bool, edit) -> str:
    model = minimal_model("llama")
    if split:
        path = split_model(model, str(tmp_path / "m"), max_tensors=6)[0][0]
        f = load(path, shards=False)
    else:
        path, f = str(tmp_path / "m.gguf"), model
    if edit and edit[0] == "set":
        f.metadata.set(edit[1], edit[2], edit[3])
    elif edit:
        del f.metadata[edit[1]]
    f.save(path + ".new")
    os.replace(path + ".new", path)
    return path


@pytest.mark.parametrize("name,split,edit,rule", CASES, ids=[c[0] for c in CASES])
def test_split_key_reads_are_replayed(tmp_path, name, split, edit, rule):
    path = _build(tmp_path, split, edit)
    errors = {f.rule for f in gguf_construct.check(path, profile="llama.cpp").findings if f.severity == "error"}
    assert errors == ({rule} if rule else set()), errors


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
def test_split_key_reads_agree_with_libllama(tmp_path):
    target = make_target(f"llama:{LIB}", timeout=60)
    target.start()
    try:
        for i, (name, split, edit, rule) in enumerate(CASES):
            folder = tmp_path / str(i)
            folder.mkdir()
            out = target.run(_build(folder, split, edit))
            assert out.status == ("reject" if rule else "accept"), (name, out)
    finally:
        target.close()
