"""Reading GGUF files over HTTP (gguf_construct.base.remote) against a loopback server with Range support:
the same results as local files, header-only transfers, and clear errors for failing servers."""

import json
import os
import struct
import subprocess
import time
import sys

import numpy as np
import pytest

pytest.importorskip("fsspec", reason="URLs need the [remote] extra (fsspec)")
pytest.importorskip("aiohttp", reason="http(s) URLs need the [remote] extra (aiohttp)")

import gguf_construct as g  # noqa: E402
from gguf_construct.checker.shards import shard_siblings  # noqa: E402
from gguf_construct.format.enums import GGUFValueType  # noqa: E402
from gguf_construct.base.rangeserver import RangeServer  # noqa: E402
from gguf_construct.base.remote import FIRST_READ, MARGIN, RemoteError, is_url, open_remote  # noqa: E402

from conftest import CORPUS, corpus_files  # noqa: E402

BIG_ROWS = 3072  # an F32 tensor of 12 MiB: the data section dwarfs the head


def _small(version: int, byte_order: str) -> g.GGUFFile:
    f = g.GGUFFile.new(version=version, byte_order=byte_order)
    f.metadata.set("general.architecture", "llama", "STRING")
    f.metadata.set("general.name", "tiny", "STRING")
    f.metadata.set("tokenizer.ggml.tokens", [f"t{i}" for i in range(300)], "ARRAY", GGUFValueType.STRING)
    f.add_tensor("token_embd.weight", np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(32, 64))
    f.add_tensor("blk.0.ffn_up.weight", np.linspace(-2, 2, 256 * 4, dtype=np.float32).reshape(4, 256), ggml_type="Q4_K")
    return f


def _hostile_string(path) -> None:
    """A v3 file whose one key's string claims 2**40 bytes, padded to 4 MiB so the claim is the only problem."""
    key = b"general.name"
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<I", 8)
    head += struct.pack("<Q", 1 << 40)
    path.write_bytes(head + b"a" * (4 << 20))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("served")
    for v in (1, 2, 3):
        for bo in ("little", "big"):
            _small(v, bo).save(d / f"small-v{v}-{bo}.gguf")
    big = g.GGUFFile.new()
    big.metadata.set("general.architecture", "llama", "STRING")
    big.add_tensor("blk.0.attn_q.weight", np.ones((BIG_ROWS, 1024), dtype=np.float32))
    nan = np.zeros((4, 32), dtype=np.float32)
    nan[2, 5] = np.nan
    big.add_tensor("blk.0.attn_k.weight", nan)
    big.save(d / "big.gguf")
    for n in (1, 2):
        shard = g.GGUFFile.new()
        shard.metadata.set("split.no", n - 1, "UINT16")
        shard.metadata.set("split.count", 2, "UINT16")
        shard.metadata.set("split.tensors.count", 2, "INT32")
        shard.add_tensor(f"t{n}", np.ones((2, 32), dtype=np.float32))
        shard.save(d / f"model-0000{n}-of-00002.gguf")
    (d / "truncated.gguf").write_bytes((d / "small-v3-little.gguf").read_bytes()[:700])
    _hostile_string(d / "hostile.gguf")
    return d


@pytest.fixture(scope="module")
def server(files):
    with RangeServer(str(files), slow_seconds=2.0) as srv:
        yield srv


@pytest.fixture(scope="module")
def corpus_server():
    if not corpus_files():
        pytest.skip("../shared/corpus is not present")
    with RangeServer(str(CORPUS)) as srv:
        yield srv


def _same_file(local: g.GGUFFile, remote: g.GGUFFile) -> None:
    assert (local.version, local.byte_order, local.alignment) == (remote.version, remote.byte_order, remote.alignment)
    assert list(local.metadata.typed_items()) == list(remote.metadata.typed_items())
    assert [(t.name, t.shape, t.ggml_type, t.offset, t.nbytes) for t in local.tensors] == [
        (t.name, t.shape, t.ggml_type, t.offset, t.nbytes) for t in remote.tensors
    ]


def _generated(files):
    return sorted(p.name for p in files.glob("*.gguf") if p.name not in ("truncated.gguf", "hostile.gguf"))


def test_is_url():
    assert is_url("https://host/x.gguf") and is_url("hf://org/repo/x.gguf") and is_url("s3://b/k.gguf")
    assert not is_url("model.gguf") and not is_url("C:\\models\\x.gguf") and not is_url(b"GGUF")


def test_load_same_as_local(files, server):
    for name in _generated(files):
        remote = g.load(server.url(name))
        local = g.load(files / name)
        _same_file(local, remote)
        for lt, rt in zip(local.tensors, remote.tensors):
            np.testing.assert_array_equal(lt.numpy(), rt.numpy())
        assert remote.transfer["size"] == sum(os.path.getsize(f.path) for f in local.shards)
        assert len(remote.shards) == len(local.shards)  # a shard URL loads its whole set, as a path does


def test_check_same_as_local_every_profile(files, server):
    for name in _generated(files) + ["truncated.gguf", "hostile.gguf"]:
        for profile in ("spec", "ggml", "llama.cpp"):
            local = g.check(files / name, profile=profile)
            remote = g.check(server.url(name), profile=profile)
            assert remote.findings == local.findings, (name, profile)
            assert (remote.version, remote.byte_order) == (local.version, local.byte_order)
            assert remote.transfer["bytes_fetched"] > 0


def test_corpus_same_as_local(corpus_server):
    for path in corpus_files():
        remote = g.check(corpus_server.url(path.name), profile="llama.cpp")
        local = g.check(path, profile="llama.cpp")
        assert remote.findings == local.findings, path.name
        _same_file(g.load(path), g.load(corpus_server.url(path.name)))


def test_header_only_transfer_is_bounded(files, server):
    size = os.path.getsize(files / "big.gguf")
    head_end = g.load(files / "big.gguf")._orig["data_start"]
    for run in (lambda u: g.check(u, profile="llama.cpp"), lambda u: g.load(u)):
        server.reset()
        result = run(server.url("big.gguf"))
        sent = server.bytes_sent
        assert sent <= head_end + FIRST_READ < size // 4
        assert result.transfer["bytes_fetched"] == sent
        assert result.transfer["requests"] == 2  # the size lookup and one ranged read


def test_tensor_fetches_exactly_its_range(files, server):
    f = g.load(open_remote(server.url("big.gguf"), first_read=4096))
    before = dict(f.transfer)
    t = f.tensor("blk.0.attn_q.weight")
    assert t.numpy().shape == (BIG_ROWS, 1024) and float(t.numpy()[7, 9]) == 1.0
    after = f.transfer
    start = f._orig["data_start"] + t.offset
    already = max(0, before["bytes_fetched"] - start)  # the head's reads may have reached into the tensor
    assert after["bytes_fetched"] - before["bytes_fetched"] == t.nbytes - already
    assert already < MARGIN + 4096
    assert after["requests"] - before["requests"] == 1  # a second numpy() fetches nothing again


def test_small_first_read_grows_to_the_same_result(files, server):
    for name in ("small-v3-big.gguf", "small-v1-little.gguf"):
        rf = open_remote(server.url(name), first_read=64)
        remote = g.load(rf)
        _same_file(g.load(files / name), remote)
        assert remote.transfer["requests"] >= 2
        rf2 = open_remote(server.url(name), first_read=64)
        assert g.check(rf2).findings == g.check(files / name).findings


def test_hostile_length_is_refused_without_downloading(files, server):
    with pytest.raises(g.GGUFError) as local:
        g.load(files / "hostile.gguf")
    with pytest.raises(g.GGUFError) as remote:
        g.load(server.url("hostile.gguf"))
    assert (remote.value.offset, remote.value.rule) == (local.value.offset, local.value.rule)
    report = g.check(server.url("hostile.gguf"))
    assert "STR-EOF" in report.rules()
    assert report.transfer["bytes_fetched"] <= FIRST_READ + MARGIN


def test_truncated_file_same_error(files, server):
    with pytest.raises(g.GGUFError) as local:
        g.load(files / "truncated.gguf")
    with pytest.raises(g.GGUFError) as remote:
        g.load(server.url("truncated.gguf"))
    assert str(remote.value) == str(local.value)


def test_check_data_streams_and_finds_the_same(files, server):
    local = g.check(files / "big.gguf", data=True)
    remote = g.check(server.url("big.gguf"), data=True)
    assert "DATA-FLOAT-FINITE" in local.rules()
    assert remote.findings == local.findings
    assert remote.transfer["bytes_fetched"] >= os.path.getsize(files / "big.gguf") - 64


def test_http_errors_are_clear(files, server):
    with pytest.raises(RemoteError, match="HTTP 404"):
        g.load(server.url("absent.gguf"))
    with pytest.raises(RemoteError, match=r"HTTP 500.*|.*HTTP 500"):
        g.load(open_remote(server.url("big.gguf", "error"), retries=1))
    with pytest.raises(RemoteError, match="timed out"):
        g.load(open_remote(server.url("big.gguf", "slow"), timeout=0.3, retries=0))


def test_retries_ride_out_a_flaky_server(files, server):
    f = g.load(open_remote(server.url("small-v2-little.gguf", "flaky"), retries=3))
    _same_file(g.load(files / "small-v2-little.gguf"), f)
    with pytest.raises(RemoteError, match="HTTP 503"):
        g.load(open_remote(server.url("small-v2-little.gguf", "flaky"), retries=0))


def test_server_without_ranges_falls_back_to_streaming(files, server):
    rf = open_remote(server.url("small-v3-little.gguf", "norange"), first_read=256)
    f = g.load(rf)
    _same_file(g.load(files / "small-v3-little.gguf"), f)
    assert "range requests" in f.transfer["note"]
    server.reset()
    g.check(server.url("big.gguf", "norange"))  # the head fits the first read: the rest is never taken
    f = g.load(server.url("big.gguf", "norange"))
    assert f.transfer["bytes_fetched"] <= FIRST_READ


def test_file_shorter_than_claimed(files, server):
    f = g.load(server.url("big.gguf", "short"))  # the head is there: header-only reading cannot tell
    with pytest.raises(RemoteError, match="shorter than it claims"):
        g.load(server.url("big.gguf", "short"), lazy=False)
    assert f.tensor("blk.0.attn_k.weight").numpy().shape == (4, 32)


def test_cli_check_and_dump(files, server):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(os.path.dirname(os.path.dirname(g.__file__)))]))

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "gguf_construct", *a], capture_output=True, text=True, env=env, timeout=120
        )

    out = run("check", "--format", "json", "--stats", server.url("model-00001-of-00002.gguf"))
    reports = json.loads(out.stdout)
    assert [r["file"] for r in reports[:2]] == [
        server.url("model-00001-of-00002.gguf"),
        server.url("model-00002-of-00002.gguf"),
    ]
    assert all(r["transfer"]["bytes_fetched"] > 0 for r in reports[:2])
    assert "fetched" in out.stderr and "2 URL(s)" in out.stderr
    out = run("dump", "--json", "--stats", server.url("big.gguf"))
    assert json.loads(out.stdout)["transfer"]["requests"] == 2 and "fetched" in out.stderr
    out = run("check", server.url("absent.gguf"))
    assert out.returncode == 2 and "HTTP 404" in out.stderr and "Traceback" not in out.stderr
    out = run("dump", server.url("big.gguf", "error"))
    assert out.returncode == 2 and "HTTP 500" in out.stderr and "Traceback" not in out.stderr


def test_shard_siblings_of_a_url(server):
    first = server.url("model-00001-of-00002.gguf")
    assert shard_siblings([first]) == [first, server.url("model-00002-of-00002.gguf")]


def test_hf_urls_use_huggingface_hub_file_system(monkeypatch):
    pytest.importorskip("huggingface_hub", reason="hf:// needs the [remote] extra (huggingface_hub)")
    import fsspec

    fs, path = fsspec.core.url_to_fs("hf://org/repo/model-00001-of-00003.gguf")
    assert type(fs).__name__ == "HfFileSystem" and path == "org/repo/model-00001-of-00003.gguf"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RemoteError, match="hf://org/repo/x.gguf"):
        open_remote("hf://org/repo/x.gguf", retries=0)


def test_hash_and_diff_take_urls(files, server):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(g.__file__)))

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "gguf_construct", *a], capture_output=True, text=True, env=env, timeout=120
        )

    local = run("hash", "--per-tensor", str(files / "big.gguf"))
    remote = run("hash", "--per-tensor", server.url("big.gguf"))
    assert local.returncode == remote.returncode == 0
    assert remote.stdout.replace(server.url("big.gguf"), "F") == local.stdout.replace(str(files / "big.gguf"), "F")
    assert len(remote.stdout.splitlines()) == 3
    same = run("diff", str(files / "small-v3-little.gguf"), server.url("small-v3-little.gguf"))
    other = run("diff", str(files / "small-v3-little.gguf"), server.url("small-v2-little.gguf"))
    assert same.returncode == 0 and other.returncode == 1 and "version" in other.stdout


def test_any_fsspec_url(files):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/gguf-remote-test/small-v3-big.gguf", (files / "small-v3-big.gguf").read_bytes())
    try:
        remote = g.load("memory://gguf-remote-test/small-v3-big.gguf")
        _same_file(g.load(files / "small-v3-big.gguf"), remote)
        assert remote.transfer["bytes_fetched"] == os.path.getsize(files / "small-v3-big.gguf")
        assert (
            g.check("memory://gguf-remote-test/small-v3-big.gguf").findings
            == g.check(files / "small-v3-big.gguf").findings
        )
    finally:
        fs.rm("/gguf-remote-test", recursive=True)


def test_buffer_of_a_huge_file_costs_only_what_is_written():
    from gguf_construct.base.remote import _lazy_map

    size = 64 << 30  # a 64 GiB model: the buffer is virtual (or a sparse temporary file)
    buf, spill = _lazy_map(size)
    try:
        assert len(buf) == size
        buf[size - 4 :] = b"tail"
        assert buf[size - 4 :] == b"tail" and buf[1 << 30 : (1 << 30) + 4] == bytes(4)
    finally:
        buf.close()
        if spill is not None:
            spill.close()


def test_a_server_that_sends_more_than_asked_costs_one_byte_more(files, server):
    """A server that answers a range with 206, no Content-Length and the rest of the file: the client reads at most
    one byte more than it asked for and says the server does not honour ranges (memory stays bounded)."""
    size = os.path.getsize(files / "big.gguf")
    rf = open_remote(server.url("big.gguf", "oversend"), first_read=4096)
    server.reset()
    with pytest.raises(RemoteError, match="sent more than"):
        rf.ensure(0, 4096)
    rf.close()
    assert rf.bytes_fetched <= 4096 + 1
    time.sleep(0.5)  # the server notices the closed connection
    # the server stops when the pipe fills (loopback buffers hold a few MiB); the old client took all of it
    assert server.bytes_sent < size * 3 // 4, (server.bytes_sent, size)
