"""The compiled codecs (numba, extra ``fast``) against the numpy reference, bit for bit, and against ggml.

Every type with a compiled decoder is decoded by both paths from Hypothesis-drawn blocks: random bytes with the
fp16 / float32 scale fields set to NaNs (quiet, signalling, with payloads, both signs), infinities, subnormals,
zeros and the largest finite values.  The results are compared as raw bits, so NaN payloads and signs count.
Also: ggml's own outputs (../shared/golden), any thread count, big-endian blocks, and the switch between the
paths.  Skipped as a whole when numba is not installed; the numpy path keeps its own tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("numba", reason="the compiled codecs need the [fast] extra (numba)")

from gguf_construct import GGUFFile, codecs, load
from gguf_construct.format import spec  # noqa: E402

from codec_golden import SHARED_GOLDEN  # noqa: E402

COMPILED = [t.name for t in spec.tensor_types() if t.is_current and t.codec and codecs.compiled_decoder(t.id)]
ENCODERS = [t.name for t in spec.tensor_types() if t.is_current and t.codec and codecs.compiled_encoder(t.id)]

_HALF_SPECIALS = [
    0x7E00,
    0xFE00,
    0x7C01,
    0xFC01,
    0x7D55,
    0x7FFF,
    0x7C00,
    0xFC00,
    0x0001,
    0x8001,
    0x03FF,
    0x0000,
    0x8000,
    0x7BFF,
    0xFBFF,
    0x3C00,
]
_FLOAT_SPECIALS = [
    0x7FC00000,
    0xFFC00000,
    0x7F800001,
    0x7FA5A5A5,
    0xFF800000,
    0x7F800000,
    0x00000001,
    0x807FFFFF,
    0x00000000,
    0x80000000,
    0x7F7FFFFF,
    0x3F800000,
]


def bits(a: np.ndarray) -> np.ndarray:
    """The float32 values as their bit patterns."""
    return np.ascontiguousarray(a).view(np.uint32)


def decode(name: str, raw: bytes, path: str, **kw) -> np.ndarray:
    with codecs.using(path), np.errstate(all="ignore"):
        return codecs.decode_blocks(name, raw, **kw)


@st.composite
def hostile_blocks(draw, name: str) -> bytes:
    """1-9 blocks of ``name``: random bytes, each 16/32-bit float field often set to a special value."""
    dtype = codecs.block_dtype(name)
    n = draw(st.integers(1, 9))
    raw = np.frombuffer(draw(st.binary(min_size=n * dtype.itemsize, max_size=n * dtype.itemsize)), dtype).copy()
    for field in dtype.names:
        ft = spec.tensor_type_by_id()[codecs.type_spec(name).id]
        prim = next(f.type for f in ft.fields if f.id == field)
        if prim not in ("f2", "f4") or raw[field].ndim != 1:
            continue
        specials = _HALF_SPECIALS if prim == "f2" else _FLOAT_SPECIALS
        view = raw[field].view(np.uint16 if prim == "f2" else np.uint32)
        for i in range(n):
            if draw(st.booleans()):
                view[i] = draw(st.sampled_from(specials))
    return raw.tobytes()


_HOSTILE_FLOATS = [
    np.nan,
    -np.nan,
    np.inf,
    -np.inf,
    0.0,
    -0.0,
    1e-45,
    -1e-40,
    1e-38,
    3.4e38,
    -3.4e38,
    65504.0,
    1e-30,
    1e4,
    1.0,
    -1.0,
    0.5,
]


@st.composite
def hostile_rows(draw, name: str):
    """(rows, imatrix or None): 1-3 rows of 1-2 blocks, values from normal draws mixed with NaN, infinities,
    subnormals, zeros and huge values; an importance matrix where the type takes one."""
    t = codecs.type_spec(name)
    n_rows = draw(st.integers(1, 3))
    n_per_row = t.block_size * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n_rows, n_per_row)) * draw(st.sampled_from([1e-30, 1e-3, 1.0, 1e3, 1e30]))).astype(
        np.float32
    )
    kind = draw(st.sampled_from(["plain", "specials", "zeros", "constant"]))
    if kind == "specials":
        for _ in range(draw(st.integers(1, 6))):
            x[rng.integers(n_rows), rng.integers(n_per_row)] = draw(st.sampled_from(_HOSTILE_FLOATS))
    elif kind == "zeros":
        x[draw(st.integers(0, n_rows - 1))] = 0
    elif kind == "constant":
        x[:] = np.float32(draw(st.sampled_from(_HOSTILE_FLOATS)))
    imatrix = None
    if t.imatrix == "required" or (t.imatrix == "used" and draw(st.booleans())):
        imatrix = (rng.random(n_per_row) * draw(st.sampled_from([1e-6, 1.0, 1e6]))).astype(np.float32)
        if draw(st.booleans()):
            imatrix[rng.integers(n_per_row)] = 0
    return x, imatrix


def encode(name: str, x, imatrix, path: str, **kw):
    """The bytes of ``quantize`` on ``path``, or the exception type it raised."""
    with codecs.using(path), np.errstate(all="ignore"):
        try:
            return codecs.quantize(name, x, imatrix=imatrix, **kw)
        except ValueError as exc:
            return type(exc)


def test_every_converting_type_runs_compiled_both_ways():
    """All types but F32, F64 and the integers (plain copies, numpy's best case) have compiled codecs."""
    floats = [
        t.name
        for t in spec.tensor_types()
        if t.is_current and t.codec and t.kind in ("quantized", "float") and t.name not in ("F32", "F64")
    ]
    assert sorted(COMPILED) == sorted(floats) and len(COMPILED) == 29
    assert sorted(ENCODERS) == sorted(floats)


@pytest.mark.parametrize("name", COMPILED)
@settings(max_examples=15)
@given(data=st.data())
def test_compiled_equals_numpy_bit_for_bit(name, data):
    raw = data.draw(hostile_blocks(name))
    assert np.array_equal(bits(decode(name, raw, "numba")), bits(decode(name, raw, "numpy")))


@pytest.mark.parametrize("name", ENCODERS)
@settings(max_examples=12)
@given(data=st.data())
def test_compiled_encoder_equals_numpy(name, data):
    x, imatrix = data.draw(hostile_rows(name))
    assert encode(name, x, imatrix, "numba") == encode(name, x, imatrix, "numpy")


@pytest.mark.parametrize("name", ENCODERS)
def test_encoders_any_thread_count(name):
    t = codecs.type_spec(name)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 2 * t.block_size)).astype(np.float32)
    imatrix = rng.random(2 * t.block_size).astype(np.float32) if t.imatrix != "ignored" else None
    one = encode(name, x, imatrix, "numba", threads=1)
    assert one == encode(name, x, imatrix, "numpy")
    for threads in (2, 3, 64):
        assert encode(name, x, imatrix, "numba", threads=threads) == one


@pytest.mark.parametrize("name", ["Q4_1", "Q5_1", "Q2_K", "Q4_K", "IQ2_XXS", "IQ1_M", "NVFP4", "BF16"])
def test_all_nan_and_inf_scales(name):
    """Every block with the same special scale bits in every float field (both NaN operands of an addition)."""
    dtype = codecs.block_dtype(name)
    rng = np.random.default_rng(1)
    for special in _HALF_SPECIALS:
        raw = np.frombuffer(rng.integers(0, 256, 64 * dtype.itemsize, dtype=np.uint8).tobytes(), dtype).copy()
        for field in dtype.names:
            if raw[field].dtype.kind == "f" and raw[field].dtype.itemsize == 2:
                raw[field] = np.uint16(special).view(np.float16)
        raw = raw.tobytes()
        assert np.array_equal(bits(decode(name, raw, "numba")), bits(decode(name, raw, "numpy"))), hex(special)


@pytest.mark.parametrize("name", ["Q4_0", "Q5_1", "Q3_K", "Q6_K", "IQ3_S", "TQ1_0", "MXFP4", "Q1_0", "F16"])
def test_big_endian_blocks(name):
    raw = np.random.default_rng(2).integers(0, 256, 40 * codecs.type_spec(name).type_size, dtype=np.uint8).tobytes()
    big = codecs.swap_blocks(name, raw, "little", "big")
    want = bits(decode(name, raw, "numpy"))
    assert np.array_equal(bits(decode(name, big, "numba", byte_order="big")), want)
    assert np.array_equal(bits(decode(name, big, "numpy", byte_order="big")), want)


@pytest.mark.parametrize("name", ["Q8_0", "Q4_K", "IQ4_XS", "IQ2_S", "TQ2_0"])
def test_any_thread_count_gives_the_same_bytes(name):
    t = codecs.type_spec(name)
    raw = np.random.default_rng(3).integers(0, 256, 1001 * t.type_size, dtype=np.uint8).tobytes()
    one = bits(decode(name, raw, "numba", threads=1))
    for threads in (2, 3, 8, 5000):
        assert np.array_equal(bits(decode(name, raw, "numba", threads=threads)), one), threads
        out = np.full((1001, t.block_size), np.float32(7.0))
        decode(name, raw, "numba", threads=threads, out=out)
        assert np.array_equal(bits(out), one), threads
    with codecs.using("numba"):
        assert np.array_equal(bits(codecs.dequantize(name, raw, threads=2)), one.reshape(-1))


STREAMING = ["Q8_0", "Q4_K", "Q5_K", "BF16", "F16"]


@pytest.mark.parametrize("name", STREAMING)
def test_streaming_stores_write_the_same_values(name, monkeypatch):
    """The decoders that write large ``out`` arrays with streaming stores (``compiled._stream``), here made to
    from the first byte on: the values of the numpy path into ``out`` arrays at every 4-byte offset from a
    cache line (32-byte stores, 16-byte ones, and normal stores where a streaming one would fault), on 1 and 3
    threads, and for F16/BF16 a count that leaves a tail after the rows of 64; ``stream=False`` and new arrays
    take normal stores."""
    from gguf_construct.codecs import compiled
    from gguf_construct.codecs.compiled import _stream

    t = codecs.type_spec(name)
    n_blocks = 1001 if t.block_size == 1 else 37
    raw = np.random.default_rng(5).integers(0, 256, n_blocks * t.type_size, dtype=np.uint8)
    if name in ("Q4_K", "Q5_K"):  # finite scales, so that the values are not all NaN
        raw.reshape(n_blocks, t.type_size)[:, 1] &= 0x3B
        raw.reshape(n_blocks, t.type_size)[:, 3] &= 0x3B
    raw = raw.tobytes()
    want = bits(decode(name, raw, "numpy"))
    flags = []
    run_blocks = compiled.run_blocks

    def recorded(kernel, x, y, tables, threads, unit=1):
        flags.append(tables[-1])
        return run_blocks(kernel, x, y, tables, threads, unit)

    monkeypatch.setattr(compiled, "run_blocks", recorded)
    monkeypatch.setattr(_stream, "STREAM_MIN_BYTES", 0)
    for threads in (1, 3):
        for skip in range(8):
            buf = codecs.empty_blocks(1, want.size + 8).reshape(-1)
            buf[:] = 0  # in memory: streamed (new memory is not, see the next test)
            out = buf[skip : skip + want.size].reshape(want.shape)
            decode(name, raw, "numba", threads=threads, out=out)
            assert np.array_equal(bits(out), want), (threads, skip)
        out[:] = 0
        decode(name, raw, "numba", threads=threads, out=out, stream=False)
        assert np.array_equal(bits(out), want), threads
        assert np.array_equal(bits(decode(name, raw, "numba", threads=threads)), want), threads
    assert compiled._streaming(t.id) and flags == ([True] * 8 + [False, False]) * 2


def test_only_outputs_in_memory_are_streamed():
    """New memory's pages are not in memory until written (each first write faults, and the kernel zeroes the
    page into the cache, where normal stores are cheaper): ``resident`` says so, and so they are not streamed."""
    import mmap

    from gguf_construct.codecs.compiled._stream import resident

    fresh = np.frombuffer(mmap.mmap(-1, 16 << 20), np.uint8)  # np.empty may reuse memory the process freed
    assert not resident(fresh.ctypes.data, fresh.nbytes)
    fresh[: 8 << 20] = 1
    assert not resident(fresh.ctypes.data, fresh.nbytes)  # the end is still untouched
    fresh[:] = 1
    assert resident(fresh.ctypes.data, fresh.nbytes)
    assert not resident(fresh.ctypes.data, 0)


def test_last_level_cache_size_from_sysfs(tmp_path):
    from gguf_construct.codecs.compiled._stream import STREAM_MIN_BYTES, last_level_cache_bytes

    for index, size in (("index0", "32K"), ("index2", "512K"), ("index3", "32768K"), ("index4", "junk")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert last_level_cache_bytes(str(tmp_path)) == 32 << 20
    assert last_level_cache_bytes(str(tmp_path / "none")) == 32 << 20
    assert STREAM_MIN_BYTES >= 4 << 20


def test_empty_blocks_start_on_a_cache_line():
    for n_blocks, size, dtype in (
        (4096, 1, np.float32),
        (5, 256, np.float32),
        (300, 32, np.float64),
        (0, 32, np.float32),
    ):
        a = codecs.empty_blocks(n_blocks, size, dtype)
        assert a.shape == (n_blocks, size) and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
        assert a.ctypes.data % 64 == 0 or a.size == 0  # an empty slice may point anywhere


def test_threads_must_be_positive():
    with codecs.using("numba"), pytest.raises(ValueError):
        codecs.dequantize("Q8_0", bytes(34), threads=0)


def test_out_is_checked_on_the_compiled_path():
    with codecs.using("numba"):
        with pytest.raises(ValueError):
            codecs.decode_blocks("Q4_0", bytes(36), out=np.empty((2, 32), np.float64))
        with pytest.raises(ValueError):
            codecs.decode_blocks("Q4_0", bytes(36), out=np.empty((2, 16), np.float32))
        assert codecs.decode_blocks("Q4_0", b"").shape == (0, 32)


def test_tensor_numpy_threads(tmp_path):
    rows = np.random.default_rng(4).standard_normal((64, 512)).astype(np.float32)
    f = GGUFFile.new(version=3, byte_order="little")
    f.add_tensor("w", rows, ggml_type="Q4_K")
    path = tmp_path / "t.gguf"
    f.save(str(path))
    t = load(str(path)).tensors[0]
    with codecs.using("numpy"):
        want = t.numpy()
    with codecs.using("numba"):
        for threads in (None, 1, 2, 3):
            got = t.numpy(threads=threads)
            assert got.shape == want.shape and np.array_equal(bits(got), bits(want))


def test_backend_switch(monkeypatch):
    with codecs.using("numpy"):
        assert codecs.backend() == "numpy"
    with codecs.using("numba"):
        assert codecs.backend() == "numba"
    monkeypatch.setenv(codecs.BACKEND_ENV, "numpy")
    assert codecs.backend() == "numpy"
    with codecs.using("numba"):  # an explicit choice wins over the environment
        assert codecs.backend() == "numba"
    monkeypatch.setenv(codecs.BACKEND_ENV, "auto")
    assert codecs.backend() == "numba"
    with pytest.raises(ValueError):
        codecs.use("fortran")


def test_import_compiles_nothing_and_numpy_path_needs_no_numba():
    code = (
        "import sys, gguf_construct as g\n"
        "assert 'numba' not in sys.modules\n"
        "from gguf_construct import codecs\n"
        "codecs.dequantize('Q4_K', bytes(144))\n"
        "print(codecs.backend(), 'numba' in sys.modules)\n"
    )
    env = dict(os.environ, GGUF_CONSTRUCT_CODECS="numpy")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numpy", "False"]


_GOLDEN = sorted(SHARED_GOLDEN.glob("*.npz")) if SHARED_GOLDEN.is_dir() else []


@pytest.mark.skipif(not _GOLDEN, reason="../shared/golden is not present")
@pytest.mark.parametrize("codec_path", ["numba", "numpy"])
@pytest.mark.parametrize("path", _GOLDEN, ids=lambda p: p.stem)
def test_both_paths_equal_golden(path, codec_path):
    """ggml's own quantizations and dequantizations, on the compiled path and on the numpy reference."""
    name = path.stem.split("_", 1)[1].upper()
    g = np.load(path)
    checked = 0
    for key in ("q", "q_imat", "raw"):
        if key in g.files and "deq_" + key in g.files:
            got = decode(name, g[key].tobytes(), codec_path).reshape(g[key].shape[0], -1)
            want = g["deq_" + key]
            same = (bits(got) == bits(want)) | (np.isnan(got) & np.isnan(want))
            assert same.all(), f"{path.name} deq_{key}"
            checked += 1
    # encoders without a compiled kernel run the numpy path either way (tests/test_codecs_golden.py)
    for key, imatrix in (("q", None), ("q_imat", g["imatrix"])):
        if key in g.files and codecs.compiled_encoder(name):
            assert encode(name, g["x"], imatrix, codec_path) == g[key].tobytes(), f"{path.name} {key}"
            checked += 1
    assert checked


_CACHE_PROBE = (
    "import gguf_construct, numpy as np\n"
    "from gguf_construct import codecs\n"
    "from gguf_construct.codecs import compiled\n"
    "from gguf_construct.codecs.compiled._jit import cache_folder\n"
    "assert gguf_construct.__file__.startswith({root!r}), gguf_construct.__file__\n"
    "assert codecs.dequantize('F16', np.float16([1.5, -2]).tobytes()).tolist() == [1.5, -2.0]\n"
    "print(cache_folder()); print(sorted(compiled.compiled_kernels()))\n"
)


def test_read_only_install_caches_kernels_in_the_user_folder():
    """A package folder nobody may write into (a system-wide install): the kernels cache in
    $XDG_CACHE_HOME/gguf-construct, so the second process loads what the first compiled."""
    root = tempfile.mkdtemp(prefix="gguf-construct-ro-")  # not under pytest's private tmp: another user reads it
    site = os.path.join(root, "site")
    cache_home = os.path.join(root, "cache")
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gguf_construct")
    shutil.copytree(package, os.path.join(site, "gguf_construct"), ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(os.path.dirname(package), "spec"), os.path.join(site, "spec"))
    os.makedirs(cache_home)
    command = [sys.executable, "-c", _CACHE_PROBE.format(root=site)]
    try:
        for folder, dirs, files in os.walk(site):
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
            os.chmod(folder, 0o555)
        os.chmod(root, 0o755)
        if os.geteuid() == 0:  # root writes anywhere: run the probe as an unprivileged user
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot make the package folder unwritable")
            os.chown(cache_home, 65534, 65534)
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + command
            reach = subprocess.run(
                command[:4] + [sys.executable, "-c", "import numpy, numba"],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=root,
                env={"PATH": os.environ.get("PATH", "")},
            )
            if reach.returncode != 0:  # e.g. a venv in a 0700 home or a mktemp -d folder
                pytest.skip(
                    "an unprivileged user cannot import this interpreter's numpy and numba (the venv is "
                    f"under a folder other users cannot enter): {reach.stderr.strip().splitlines()[-1:]}"
                )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": site,
            "HOME": cache_home,
            "XDG_CACHE_HOME": cache_home,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        runs = [
            subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=root) for _ in range(2)
        ]
        for run in runs:
            assert run.returncode == 0, run.stderr
        want = os.path.join(cache_home, "gguf-construct", "numba")
        assert [r.stdout.splitlines() for r in runs] == [[want, "['F16 decoder']"], [want, "[]"]]
        assert any(name.endswith(".nbi") for _, _, files in os.walk(want) for name in files)
    finally:
        for folder, dirs, files in os.walk(root):
            os.chmod(folder, 0o755)
        shutil.rmtree(root, ignore_errors=True)


def test_cache_folder_from_the_environment(monkeypatch, tmp_path):
    from gguf_construct.codecs.compiled import _jit

    monkeypatch.setenv(_jit.CACHE_ENV, str(tmp_path / "kernels"))
    _jit.cache_folder.cache_clear()
    try:
        assert _jit.cache_folder() == str(tmp_path / "kernels") and (tmp_path / "kernels").is_dir()
        monkeypatch.delenv(_jit.CACHE_ENV)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert _jit.user_cache_folder() == str(tmp_path / "xdg" / "gguf-construct" / "numba")
    finally:
        _jit.cache_folder.cache_clear()


def test_warm_up_reports_every_kernel(capsys):
    done = codecs.warm_up(["Q8_0", "bf16"])
    assert [(k.type, k.direction) for k in done] == [
        ("Q8_0", "decode"),
        ("Q8_0", "encode"),
        ("BF16", "decode"),
        ("BF16", "encode"),
    ]
    assert all(k.seconds >= 0 and isinstance(k.compiled, bool) for k in done)
    assert [k.direction for k in codecs.warm_up(["Q4_K"], encode=False)] == ["decode"]
    with pytest.raises(ValueError):
        codecs.warm_up(["Q9_K"])
    from gguf_construct.commands.main import main

    assert main(["warm-up", "Q8_0", "--decode-only"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["Q8_0", "decode"] and out[-1].startswith("1 kernels ready")
    assert main(["warm-up", "Q9_K"]) == 2


def test_compile_notice_names_the_kernel(caplog):
    """The one line said when a kernel compiles (here: a listener fed numba's compile event by hand)."""
    from numba.core import event

    from gguf_construct.codecs import compiled

    kernel, _ = compiled.decoder(codecs.type_spec("Q5_K").id)
    compiled._notice.compiled.discard("Q5_K decoder")
    with caplog.at_level("INFO", logger="gguf_construct.codecs"):
        for _ in range(2):
            compiled._notice.notify(event.Event("numba:compile", event.EventStatus.START, {"dispatcher": kernel}))
    assert [r.getMessage().split(",")[0] for r in caplog.records] == ["compiling Q5_K decoder"]
    assert "Q5_K decoder" in compiled.compiled_kernels()


def test_default_threads_follow_idle_cores(monkeypatch):
    from gguf_construct.codecs.compiled import _run

    monkeypatch.setattr(_run, "cpu_count", lambda: 4)
    big = _run.PARALLEL_MIN_VALUES
    for idle, want in ((3, 4), (1, 2), (0, 1)):
        monkeypatch.setattr(_run, "idle_cores", lambda cores, idle=idle: min(cores, idle))
        assert _run.resolve_threads(None, big) == want
        assert _run.resolve_threads(None, big - 1) == 1  # small inputs: one thread whatever the load
        assert _run.resolve_threads(3, 1) == 3  # an explicit count is kept
    assert 0 <= _run.idle_cores(2) <= 2


def test_chunked_run_covers_every_block_once_and_passes_statuses_and_errors():
    from gguf_construct.codecs.compiled import _run

    calls = []

    def kernel(x, y, k):
        calls.append((x[0, 0], x.shape[0]))
        y[:] = x * k
        if x[0, 0] <= 24 < x[0, 0] + x.shape[0]:
            return 3
        return 1

    x = np.arange(1000, dtype=np.float32).reshape(-1, 1)
    y = np.zeros_like(x)
    assert _run.run_blocks(kernel, x, y, (np.float32(2),), threads=3, unit=5) == 3
    assert np.array_equal(y, x * 2) and sum(n for _, n in calls) == 1000 and len(calls) > 3
    assert all(start % 5 == 0 and n % 5 == 0 for start, n in calls)

    def failing(x, y):
        if x[0, 0] >= 500:
            raise ZeroDivisionError("chunk")

    with pytest.raises(ZeroDivisionError):
        _run.run_blocks(failing, x, y, (), threads=2)


def _clamp_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = min(max(np.int64(x[i] * np.float32(3.7)), -4), 3)


def _compile_as(module_name: str) -> None:
    """A fresh compile of :func:`_clamp_loop` as if defined in ``module_name`` (min and max compile nested)."""
    import numba

    fn = type(_clamp_loop)(_clamp_loop.__code__, dict(_clamp_loop.__globals__), "_clamp_loop")
    fn.__module__ = module_name
    numba.njit(fn)(np.linspace(-2, 2, 8, dtype=np.float32), np.zeros(8, np.int64))


_X86 = __import__("platform").machine().lower() in ("x86_64", "amd64", "i386", "i686")


@pytest.mark.skipif(not _X86, reason="an option of LLVM's x86 back end, set on x86 hosts only")
def test_kernels_compile_keeping_conditional_moves_and_other_code_as_before(monkeypatch):
    """A real compile of a function of the compiled codecs switches the option off at its start and back on at
    its end, once (min and max are compiled inside it); other code compiles without touching it."""
    from gguf_construct.codecs.compiled import _jit

    calls = []
    real = _jit._llvm.set_option
    monkeypatch.setattr(_jit._llvm, "set_option", lambda name, option: (calls.append(option), real(name, option)))
    _compile_as("someone_else")
    assert calls == []
    _compile_as("gguf_construct.codecs.compiled._probe")
    assert calls == ["-x86-cmov-converter=false", "-x86-cmov-converter=true"]


def test_the_codegen_option_is_set_once_around_nested_compiles(monkeypatch):
    from types import SimpleNamespace

    from gguf_construct.codecs.compiled import _jit, kquants

    calls = []
    monkeypatch.setattr(_jit._llvm, "set_option", lambda name, option: calls.append(option))
    listener = _jit._KernelCodegen()
    ours = SimpleNamespace(data={"dispatcher": kquants.encode_q3_k})
    other = SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=np.add)})
    listener.on_start(other)
    listener.on_end(other)
    assert calls == []
    listener.on_start(ours)
    listener.on_start(ours)  # a helper compiled for the kernel
    listener.on_end(ours)
    assert calls == ["-x86-cmov-converter=false"]
    listener.on_end(ours)
    assert calls == ["-x86-cmov-converter=false", "-x86-cmov-converter=true"]


# every code of 8 levels 0..2 (2 bits each): what the IQ1 and IQ2 encoders can look up
_LEVEL_CODES = ((np.arange(3**8)[:, None] // 3 ** np.arange(8)) % 3 << (2 * np.arange(8))).sum(axis=1)


def _numpy_lattice(name: str):
    """(grid index of every code, the neighbour list of an off-grid code, the codes the encoder can make) of the
    numpy codec's lattice for ``name``."""
    if name == "IQ1_S":
        from gguf_construct.codecs.iq1 import _grid

        g = _grid()
        return g.kmap, lambda c: g.nb_flat[g.nb_start[c] : g.nb_start[c] + g.nb_count[c]], _LEVEL_CODES
    if name.startswith("IQ3"):
        from gguf_construct.codecs.iq3 import _grid

        g = _grid("iq3xxs_grid" if name == "IQ3_XXS" else "iq3s_grid")
        return g.kmap, lambda c: g.nb_flat[g.nb_start[c] : g.nb_start[c] + g.nb_count[c]], np.arange(4096)
    from gguf_construct.codecs.compiled import iq2
    from gguf_construct.codecs.iq2 import _lattice

    g = _lattice(iq2._GRIDS[name])
    return g.map, lambda c: g.flat[g.starts[g.row[c]] : g.starts[g.row[c]] + g.counts[g.row[c]]], _LEVEL_CODES


@pytest.mark.parametrize("name", ["IQ1_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"])
def test_packed_neighbour_lists_hold_the_numpy_codecs_lists(name):
    """Every code the encoders can make finds through ``slot`` / ``lists`` the grid index or the neighbour list
    (same entries, same order) of the numpy codec's lattice."""
    from gguf_construct.codecs import compiled

    t = next(t for t in spec.tensor_types() if t.name == name)
    slot, lists = compiled.encoder(t.id)[1][2:4]
    grid_of, listed, codes = _numpy_lattice(name)
    assert codes.max() < len(slot)
    on = grid_of[codes] >= 0
    assert np.array_equal(slot[codes[on]], grid_of[codes[on]])
    assert (slot[codes[~on]] < 0).all()
    for c in codes[~on]:
        o = -1 - slot[c]
        assert lists[o] > 0
        assert np.array_equal(lists[o + 1 : o + 1 + lists[o]], listed(c))
