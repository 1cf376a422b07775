"""hash against llama.cpp's gguf-hash, and the pure-Python XXH64 fallback against xxHash."""

from __future__ import annotations

import os
import random

import pytest

import gguf_construct as g
from gguf_construct.operations import hashing
from gguf_construct.commands.main import main
from gguf_construct.base.xxh64 import XXH64
from test_split import INPUT_SHA, model, sha

# What llama.cpp's gguf-hash (built from the llama-cpp-python 0.3.36 sdist against libggml-base) printed for
# `gguf-hash --all --uuid in.gguf` on test_split.model(): every tensor, then the model.
GGUF_HASH = """\
xxh64     503c4e27afcf34e8  in.gguf:blk.0.w
sha1      bc794c75f3128c41256e7de54329ee4b57c60d07  in.gguf:blk.0.w
sha256    275ca2667accd87be479cfe1215858dad4bc88ef525fdedc76226c5df8b6ba18  in.gguf:blk.0.w
xxh64     722b7f5f7317c6ae  in.gguf:blk.1.w
sha1      cd70d47a342bdf3880a7317a3b783d590646a31a  in.gguf:blk.1.w
sha256    c0e0d3bd96da61a201d85f09d10111be0921978a947ddaf29e07b9c481633517  in.gguf:blk.1.w
xxh64     ac8922f378818b52  in.gguf:blk.2.w
sha1      9eb60dccf3d070192e63b0379880fa0cc6c441c4  in.gguf:blk.2.w
sha256    cf709f135672fc20d850564c3e6fbfc80dc5e30a94878cdf262907fd7a83b760  in.gguf:blk.2.w
xxh64     f0d879b3be15e471  in.gguf:blk.3.w
sha1      cab59879c5a3527b602620925637e4c04e87e758  in.gguf:blk.3.w
sha256    c9b82d3395c1caf7d74ca5ccbdb8a5e4be0653a53c4a0678d6aec8eccbfb713d  in.gguf:blk.3.w
xxh64     d01262a9b3fda648  in.gguf:blk.4.w
sha1      8092cb6cac4b76f3f5174953a7bba2e0e3b881c3  in.gguf:blk.4.w
sha256    6c0695e554969088fd468ed667857a77d399de4ab92b55d810238e9385a229a3  in.gguf:blk.4.w
xxh64     02ecf476d5e0dc1a  in.gguf:blk.5.w
sha1      4709635981e6889ad1475b703bda4c0c879a4b9b  in.gguf:blk.5.w
sha256    6297a930e7bf5a42c707be8952dafbbe6c3980ed84d2b34980c977063fbc625a  in.gguf:blk.5.w
xxh64     abc9b06ac00bf53d  in.gguf:blk.6.w
sha1      0be4041c3c3c4b56b28b129935a011a3823ebb30  in.gguf:blk.6.w
sha256    3878ce57cd4bc8ce25a126eb8c2cd8917ef200822b77d7e16242dff1da58049b  in.gguf:blk.6.w
xxh64     7b21f1387cdc56ca  in.gguf:blk.7.w
sha1      985c280f570e4784c051ab458a423b8389d167fd  in.gguf:blk.7.w
sha256    13ab45cb87afd4a74e6b5ab6a716b75e2da07ec2fcc4611108f35963e3c03399  in.gguf:blk.7.w
xxh64     f4ae4e494128d1cd  in.gguf:blk.8.w
sha1      5f720a1e9e484e363fe0c40025fd365e8cf64c24  in.gguf:blk.8.w
sha256    9da50c3d8730498849110c50a27e936e77ed2be10bf0f3a70f8f98ca72b037b7  in.gguf:blk.8.w
xxh64     aed00b1d1645af06  in.gguf:norm
sha1      4f9470124a5784ed880ee567589a12a53f3ac18d  in.gguf:norm
sha256    b638277a8690e175a9137feff1e43c067f9faf4e2f600caf468fb05b0403b717  in.gguf:norm
xxh64     a2a2e85afa47173b  in.gguf
sha1      543daf764cf016e2115ab158944d43d8e614c34e  in.gguf
sha256    1a1862a7bf96b1c8520e4d7eda4d3bf2a4be1f90d5f882fcb0307d8cdb980aeb  in.gguf
uuid      4b499c05-71af-5f46-ad1e-3ed5aa1275f6  in.gguf
"""


@pytest.fixture()
def model_file(tmp_path, monkeypatch):
    model().save(tmp_path / "in.gguf")
    assert sha(tmp_path / "in.gguf") == INPUT_SHA
    monkeypatch.chdir(tmp_path)
    return tmp_path / "in.gguf"


def test_hash_lines_equal_gguf_hash(model_file, capsys):
    assert main(["hash", "in.gguf", "--all", "--per-tensor", "--uuid"]) == 0
    assert capsys.readouterr().out == GGUF_HASH
    assert main(["hash", "in.gguf"]) == 0  # default: the xxh64 model line only
    assert capsys.readouterr().out.splitlines() == [
        line for line in GGUF_HASH.splitlines() if line.startswith("xxh64") and ":" not in line
    ]
    assert main(["hash", "in.gguf", "--algo", "sha256", "--algo", "sha1"]) == 0  # gguf-hash's order
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["sha1", "sha256"]


def test_pure_xxh64_fallback_gives_gguf_hash_values(model_file, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "xxhash", None)  # as without the [hash] extra
    assert isinstance(hashing.new_hasher("xxh64"), XXH64)
    assert main(["hash", "in.gguf", "--per-tensor"]) == 0
    assert capsys.readouterr().out.splitlines() == [line for line in GGUF_HASH.splitlines() if line.startswith("xxh64")]


def test_model_hash_ignores_metadata(model_file, capsys):
    main(["hash", "in.gguf", "--algo", "sha256"])
    before = capsys.readouterr().out
    assert main(["set", "in.gguf", "general.name", "renamed"]) == 0
    capsys.readouterr()
    main(["hash", "in.gguf", "--algo", "sha256"])
    assert capsys.readouterr().out == before
    assert g.load(model_file).metadata["general.name"] == "renamed"


def test_xxh64_matches_known_values_and_streaming():
    assert XXH64().hexdigest() == "ef46db3751d8e999"  # xxHash's published value for empty input
    h = XXH64()
    h.update(b"abc")
    assert h.hexdigest() == "44bc2cf5ad770999"
    xxhash = pytest.importorskip("xxhash", reason="needs the [hash] extra (xxhash)")
    rng = random.Random(3)
    for n in [*range(70), 1000, 4099]:
        data = os.urandom(n)
        for seed in (0, 2**64 - 1):
            h = XXH64(seed)
            i = 0
            while i < n:  # fed in odd pieces: the 32-byte stripes straddle update() calls
                k = rng.randint(1, 45)
                h.update(data[i : i + k])
                i += k
            assert h.intdigest() == xxhash.xxh64_intdigest(data, seed), (n, seed)


def test_hash_of_a_split_set_equals_the_unsplit_model(model_file, capsys):
    assert main(["split", "in.gguf", "part", "--max-tensors", "3"]) == 0
    capsys.readouterr()
    main(["hash", "in.gguf", "--all"])
    whole = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
    main(["hash", "part-00002-of-00004.gguf", "--all", "--set"])
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] == whole
    main(["hash", "part-00002-of-00004.gguf", "--all"])  # that shard alone, as gguf-hash would
    assert [line.split()[1] for line in capsys.readouterr().out.splitlines()] != whole
