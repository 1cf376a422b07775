"""split / merge against llama.cpp's gguf-split, and loading a split model as one.

The SHA-256 digests below are of the files llama.cpp's own gguf-split (built from the llama.cpp sources in the
llama-cpp-python 0.3.36 sdist against libggml-base) wrote from the same inputs with the same options; our shards
and merged files must be byte-identical to them.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.commands.main import main
from gguf_construct.operations.split import parse_size, plan_split

INPUT_SHA = "e2f0365e162f4cf103c38f7b2b1cd1deee2b0fbbde811c05bc9f50e7094b85fa"
BIG_SHA = "9e9f55cb406bbe949044ab631a4e6d1def6ba61a0103d297904bbc1e41155fcb"
GGUF_SPLIT = {  # gguf-split arguments -> digest of each file it wrote
    "--split-max-tensors 4": {
        "m-00001-of-00003.gguf": "f124bd75d42bd10b8a0a0e8b13a025ec693dcff66d2caf4d398b05f601ced79c",
        "m-00002-of-00003.gguf": "2aa56f47857628f2d8dcf4ae10d1d2b43bed8b84781a218af69658875c6d2f60",
        "m-00003-of-00003.gguf": "e05132c408ac342f8d793ad3cdcd90519250f1e5e267f809d0bd1459ed2f5c0c",
    },
    "--split-max-size 1M --no-tensor-first-split": {
        "m-00001-of-00002.gguf": "6811fec9f28082787a2c4bdeb354f3859aa09a04de0d5ae2992327cfa47570f3",
        "m-00002-of-00002.gguf": "81eb060c7ee87c1e51838ab357cc18533ef4b2229248a4dce60623d714aca887",
    },
    "big: --split-max-size 1M": {
        "m-00001-of-00002.gguf": "2a23516fb4d9efb175f2b095f55324485603fd320b16d2e88dda84d989b072a2",
        "m-00002-of-00002.gguf": "0d3acb0ebab70e39ea5cf8d1ded53b3a27e14cab7c7686422219e2881f40c569",
    },
}
MERGED_SHA = "9907396e70530c22b246853ace66d80dfd8c5a9d86e50139025a6c88ceca5c6b"  # --merge of the 3 shards above
RESPLIT = {  # --split-max-tensors 5 of the merged file (it carries split.* keys already)
    "re-00001-of-00002.gguf": "873dfea9b85d8f5ac3de9906272eab2aade66795b3d386b5084a4145a53e248d",
    "re-00002-of-00002.gguf": "1839494c989ca4a96d13069d4662a6610c551549a9ca051175e60a1b0b222efd",
}


def model() -> g.GGUFFile:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["general.name"] = "split test"
    f.metadata.set("llama.block_count", 2, "UINT32")
    f.metadata["tokenizer.ggml.tokens"] = ["a", "b", "c"]
    rng = np.random.default_rng(7)
    for i in range(9):
        f.add_tensor(
            f"blk.{i}.w", rng.standard_normal((2 + i, 64)).astype(np.float32), ggml_type=["F32", "Q8_0", "F16"][i % 3]
        )
    f.add_tensor("norm", np.ones((1, 1, 32), np.float32))  # trailing 1s: ggml writes 1 dimension
    return f


def big() -> g.GGUFFile:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    for i in range(5):
        f.add_tensor(f"t{i}", np.full((300, 250 + i), i, np.float32))
    return f


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture()
def inputs(tmp_path):
    model().save(tmp_path / "in.gguf")
    big().save(tmp_path / "big.gguf")
    assert sha(tmp_path / "in.gguf") == INPUT_SHA and sha(tmp_path / "big.gguf") == BIG_SHA
    return tmp_path


def test_split_and_merge_are_byte_identical_to_gguf_split(inputs, capsys):
    d = inputs
    runs = {
        "--split-max-tensors 4": ("in.gguf", "a", ["--max-tensors", "4"]),
        "--split-max-size 1M --no-tensor-first-split": (
            "in.gguf",
            "c",
            ["--max-size", "1M", "--no-tensor-first-split"],
        ),
        "big: --split-max-size 1M": ("big.gguf", "b", ["--max-size", "1M"]),
    }
    for label, (src, sub, opts) in runs.items():
        os.mkdir(d / sub)
        assert main(["split", str(d / src), str(d / sub / "m"), *opts]) == 0
        assert {n: sha(d / sub / n) for n in sorted(os.listdir(d / sub))} == GGUF_SPLIT[label], label
    assert main(["merge", str(d / "a" / "m-00001-of-00003.gguf"), str(d / "merged.gguf")]) == 0
    assert sha(d / "merged.gguf") == MERGED_SHA
    os.mkdir(d / "re")
    assert main(["split", str(d / "merged.gguf"), str(d / "re" / "re"), "--max-tensors", "5"]) == 0
    assert {n: sha(d / "re" / n) for n in sorted(os.listdir(d / "re"))} == RESPLIT
    # merge refuses to overwrite, like gguf-split
    assert main(["merge", str(d / "a" / "m-00001-of-00003.gguf"), str(d / "merged.gguf")]) == 2
    assert "exists" in capsys.readouterr().err


def test_load_of_any_shard_offers_the_whole_model(inputs):
    d = inputs
    assert main(["split", str(d / "in.gguf"), str(d / "m"), "--max-tensors", "4"]) == 0
    whole = g.load(d / "in.gguf")
    for n in (1, 2, 3):
        f = g.load(d / f"m-0000{n}-of-00003.gguf")
        assert [t.name for t in f.tensors] == [t.name for t in whole.tensors]
        assert f.metadata["general.name"] == "split test" and f.metadata["split.no"] == 0
        assert len(f.shards) == 3 and f.tensors[-1].file == str(d / "m-00003-of-00003.gguf")
        for a, b in zip(f.tensors, whole.tensors):
            assert bytes(a.raw()) == bytes(b.raw())
        np.testing.assert_array_equal(f.tensor("blk.5.w").numpy(), whole.tensor("blk.5.w").numpy())
        with pytest.raises(ValueError, match="split model"):
            f.save(d / "x.gguf")
        f.close()
    one = g.load(d / "m-00002-of-00003.gguf", shards=False)
    assert [t.name for t in one.tensors] == ["blk.4.w", "blk.5.w", "blk.6.w", "blk.7.w"] and one.shards == [one]
    os.remove(d / "m-00003-of-00003.gguf")
    with pytest.raises(g.GGUFError) as info:
        g.load(d / "m-00001-of-00003.gguf")
    assert info.value.rule == "META-SPLIT-MISSING" and "m-00003-of-00003.gguf" in str(info.value)


def test_plan_split_never_leaves_a_shard_empty_and_sizes_parse():
    f = big()
    plan = plan_split(f.tensors, max_size=1000)  # every tensor is larger: each gets its own shard
    assert [len(s) for s in plan] == [1] * 5
    assert [len(s) for s in plan_split(f.tensors)] == [5]  # default: 128 tensors per shard
    assert parse_size("2G") == 2 * 10**9 and parse_size("500M") == 5 * 10**8 and parse_size("64k") == 64000
    for bad in ("0M", "-1G", "2T", "G"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_split_carries_opaque_tensors_and_merge_refuses_non_first_shards(tmp_path, capsys):
    f = model()
    f.tensors[3].ggml_type = 151  # a fork's type: its bytes travel as they are
    f.save(tmp_path / "fork.gguf")
    src = g.load(tmp_path / "fork.gguf")
    assert main(["split", str(tmp_path / "fork.gguf"), str(tmp_path / "s"), "--max-tensors", "3"]) == 0
    both = g.load(tmp_path / "s-00002-of-00004.gguf")
    assert both.tensor("blk.3.w").opaque
    assert [bytes(t.raw()) for t in both.tensors] == [bytes(t.raw()) for t in src.tensors]
    assert main(["merge", str(tmp_path / "s-00001-of-00004.gguf"), str(tmp_path / "back.gguf")]) == 0
    back = g.load(tmp_path / "back.gguf")
    assert [bytes(t.raw()) for t in back.tensors] == [bytes(t.raw()) for t in src.tensors]
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s-00002-of-00004.gguf"), str(tmp_path / "x.gguf")]) == 2
    assert main(["merge", str(tmp_path / "fork.gguf"), str(tmp_path / "x.gguf")]) == 2
    assert "split.count" in capsys.readouterr().err
    assert (
        main(["split", str(tmp_path / "fork.gguf"), str(tmp_path / "y"), "--max-size", "1M", "--max-tensors", "2"]) == 2
    )
