"""A file read by ``check`` or ``load`` is unmapped when the reader is done with it, without waiting for the
garbage collector: nothing the read leaves behind sits in a reference cycle holding a view of the map."""

import gc
import os
import sys

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.checker import check

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def _mapped(path) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        return any(line.rstrip("\n").endswith(real) for line in maps)


@pytest.fixture
def model_file(tmp_path):
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["tokenizer.ggml.tokens"] = [f"t{i}" for i in range(300)]
    f.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    path = tmp_path / "m.gguf"
    f.save(path)
    return path


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_check_unmaps_the_file(model_file, no_gc):
    report = check(model_file, profile="llama.cpp")
    assert report.version == 3
    assert not _mapped(model_file)


def test_load_then_close_unmaps_the_file(model_file, no_gc):
    f = g.load(model_file)
    assert _mapped(model_file)
    assert list(f.metadata["tokenizer.ggml.tokens"])[:2] == ["t0", "t1"]
    f.close()
    del f
    assert not _mapped(model_file)
