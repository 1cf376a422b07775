"""The Kaitai Struct round of validation: the generated ``exports/gguf.ksy``, compiled to Python by the Kaitai
Struct compiler, reads real and generated files exactly as ``load`` does (header, keys, typed values, tensor infos,
tensor data).

The committed parser (``exports/kaitai_python/gguf.py``) runs wherever the ``kaitaistruct`` runtime is installed;
compiling the .ksy again needs node and the npm package ``kaitai-struct-compiler`` (found through
``KAITAI_STRUCT_COMPILER_JS`` or node's module path) and is skipped without them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from gguf_construct import GGUFFile, codecs, export, load
from gguf_construct.format import spec, structs
from gguf_construct.export import kaitai
from gguf_construct.strategies import gguf_files

from conftest import corpus_files

pytest.importorskip("kaitaistruct")

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "exports"
PARSER = EXPORTS / export.COMPILED_DIR / export.COMPILED_PARSER
VALUE_TYPE_NAMES = {vt["id"]: vt["name"] for vt in structs.container_spec()["value_types"]}

pytestmark = pytest.mark.skipif(spec.spec_dir() != ROOT / "spec", reason="package not installed from this checkout")


@pytest.fixture(scope="module")
def kaitai_gguf():
    """The committed compiled parser's top-level class (imported under a name of its own)."""
    mod_spec = importlib.util.spec_from_file_location("gguf_kaitai_parser", PARSER)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module.Gguf


# ----------------------------------------------------------------------------------------------------------------
# the same view of a file from both readers
# ----------------------------------------------------------------------------------------------------------------


def _canon(type_name: str, value, item_type: str | None = None):
    """A value in a reader-independent form: floats as their bits, booleans as 0/1, arrays element by element."""
    if type_name == "ARRAY":
        return [item_type, [_canon(item_type, x) if item_type != "ARRAY" else x for x in value]]
    if type_name == "FLOAT32":
        return struct.pack("<f", float(value)).hex()
    if type_name == "FLOAT64":
        return struct.pack("<d", float(value)).hex()
    if type_name == "BOOL":
        return int(value)
    if type_name == "STRING":
        return value
    return int(value)


def _canon_loaded(v):
    if v.type.name == "ARRAY" and v.item_type.name == "ARRAY":
        return ["ARRAY", [_canon_loaded(x) for x in v.value]]
    return _canon(v.type.name, v.value, v.item_type.name if v.item_type is not None else None)


def _canon_kaitai(type_id: int, value):
    name = VALUE_TYPE_NAMES[int(type_id)]
    if name == "STRING":
        return value.data
    if name == "ARRAY":
        item = VALUE_TYPE_NAMES[int(value.type)]
        if item == "ARRAY":
            return ["ARRAY", [_canon_kaitai(int(value.type), x) for x in value.data]]
        if item == "STRING":
            return [item, [x.data for x in value.data]]
        return [item, [_canon(item, x) for x in value.data]]
    return _canon(name, value)


def view_loaded(path) -> dict:
    """What ``load`` reads."""
    g = load(path)
    try:
        return {
            "version": g.version,
            "byte_order": g.byte_order,
            "alignment": g.alignment,
            "keys": [(k, v.type.name, _canon_loaded(v)) for k, v in g.metadata.typed_items()],
            "tensors": [
                (t.name, tuple(t.shape), int(t.ggml_type), t.offset, t.nbytes, bytes(t.raw())) for t in g.tensors
            ],
        }
    finally:
        g.close()


def view_kaitai(cls, path) -> dict:
    """What the Kaitai parser reads."""
    k = cls.from_file(str(path))
    try:
        head = k.file_head
        assert head.header.tensor_count == len(head.tensor_infos)
        assert head.header.metadata_kv_count == len(head.metadata_kv)
        return {
            "version": head.header.version,
            "byte_order": "big" if k.big_endian else "little",
            "alignment": k.alignment,
            "keys": [
                (kv.key.data, VALUE_TYPE_NAMES[int(kv.value_type)], _canon_kaitai(kv.value_type, kv.value))
                for kv in head.metadata_kv
            ],
            "tensors": [
                (ti.name.data, tuple(ti.dimensions), int(ti.type), ti.offset, ti.n_bytes, ti.data)
                for ti in head.tensor_infos
            ],
        }
    finally:
        k.close()


# ----------------------------------------------------------------------------------------------------------------
# generated files: every version x byte order, every value type, every tensor type
# ----------------------------------------------------------------------------------------------------------------


def generated_file(version: int, byte_order: str, alignment: int) -> GGUFFile:
    """A file with every value type the version has (arrays of each, nested and empty arrays, UTF-8 strings) and a
    tensor of every current tensor type (random bytes), plus a scalar and a 4-dimensional tensor."""
    g = GGUFFile.new(version=version, byte_order=byte_order, alignment=alignment)
    md = g.metadata
    samples = {
        "UINT8": 200,
        "INT8": -100,
        "UINT16": 60000,
        "INT16": -30000,
        "UINT32": 4_000_000_000,
        "INT32": -2_000_000_000,
        "FLOAT32": 1.5,
        "BOOL": True,
        "STRING": "héllo wörld ✓",
        "UINT64": 2**63 + 5,
        "INT64": -(2**62),
        "FLOAT64": -2.25,
    }
    for vt in structs.container_spec()["value_types"]:
        if vt.get("since", 1) > version or vt["name"] == "ARRAY":
            continue
        name, value = vt["name"], samples[vt["name"]]
        md.set(f"test.scalar.{name.lower()}", value, name)
        md.set(f"test.array.{name.lower()}", [value, value], "ARRAY", name)
    md.set("test.array.empty", [], "ARRAY", "INT32")
    md.set("test.array.nested", [[1, 2], [3]], "ARRAY", "ARRAY")
    rng = np.random.default_rng(version)
    for t in spec.tensor_types():
        if not t.is_current:
            continue
        shape = (2 * t.block_size, 3)
        nbytes = 2 * t.type_size * 3
        g.add_tensor(
            f"t.{t.name.lower()}", rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes(), ggml_type=t.name, shape=shape
        )
    g.add_tensor("t.scalar", struct.pack("<f" if byte_order == "little" else ">f", 3.0), ggml_type="F32", shape=())
    g.add_tensor("t.four_dims", bytes(range(2 * 3 * 4 * 5)), ggml_type="I8", shape=(2, 3, 4, 5))
    return g


@pytest.mark.parametrize("alignment", [None, 64])
@pytest.mark.parametrize("version,byte_order", structs.each_family())
def test_generated_files_read_alike(kaitai_gguf, tmp_path, version, byte_order, alignment):
    g = generated_file(version, byte_order, alignment or structs.container_spec()["layout"]["alignment"]["default"])
    path = tmp_path / "g.gguf"
    g.save(path)
    ours, theirs = view_loaded(path), view_kaitai(kaitai_gguf, path)
    assert theirs == ours
    assert len(ours["tensors"]) == sum(t.is_current for t in spec.tensor_types()) + 2
    assert ours["alignment"] == (alignment or 32)


def test_alignment_key_after_thousands_of_keys(kaitai_gguf, tmp_path):
    """ALIGNMENT is found by a loop, not a recursion: 3000 keys before general.alignment are fine."""
    g = GGUFFile.new(version=3, byte_order="big")
    for i in range(3000):
        g.metadata.set(f"test.k{i}", i, "UINT32")
    g.metadata.set(structs.container_spec()["layout"]["alignment"]["key"], 128, "UINT32")
    g.add_tensor("w", bytes(range(64)), ggml_type="I8", shape=(64,))
    path = tmp_path / "many.gguf"
    g.save(path)
    theirs = view_kaitai(kaitai_gguf, path)
    assert theirs["alignment"] == 128
    assert theirs == view_loaded(path)


@settings(max_examples=15)
@given(gguf_files(max_kv=4, max_tensors=3))
def test_hypothesis_files_read_alike(kaitai_gguf, tmp_path_factory, drawn):
    data, _doc = drawn
    path = tmp_path_factory.mktemp("h") / "h.gguf"
    path.write_bytes(data)
    assert view_kaitai(kaitai_gguf, path) == view_loaded(path)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_files_read_alike(kaitai_gguf, path):
    assert view_kaitai(kaitai_gguf, path) == view_loaded(path)


def test_corpus_file_in_every_version_and_byte_order(kaitai_gguf, tmp_path):
    files = corpus_files()
    if not files:
        pytest.skip("../shared/corpus is not present")
    smallest = min(files, key=lambda p: p.stat().st_size)
    for version, byte_order in structs.each_family():
        g = load(smallest)
        if version == 1 and any(v.type.name in ("UINT64", "INT64", "FLOAT64") for _, v in g.metadata.typed_items()):
            continue
        out = tmp_path / f"v{version}-{byte_order}.gguf"
        g.convert(version=version, byte_order=byte_order)
        g.save(out)
        g.close()
        assert view_kaitai(kaitai_gguf, out) == view_loaded(out)


def _field_values(block, field) -> list:
    """One block field as a flat list of integers (byte strings and arrays element by element; 16-bit floats and
    floats as their bits)."""
    value = getattr(block, field.id)
    items = list(value) if isinstance(value, (bytes, list)) else [value]
    if field.type in ("f4", "f8"):
        return [struct.pack("<f" if field.type == "f4" else "<d", x).hex() for x in items]
    return [int(x) for x in items]


@pytest.mark.parametrize("byte_order", structs.BYTE_ORDERS)
def test_tensor_blocks_match_the_spec_block_layout(kaitai_gguf, tmp_path, byte_order):
    """tensor_info.blocks reads every block field as numpy does with the spec's block dtype."""
    g = generated_file(3, byte_order, 32)
    path = tmp_path / "g.gguf"
    g.save(path)
    k = kaitai_gguf.from_file(str(path))
    loaded = load(path)
    checked = 0
    for ti, t in zip(k.file_head.tensor_infos, loaded.tensors):
        tt = codecs.type_spec(int(t.ggml_type))
        dtype = codecs.block_dtype(tt.name, byte_order)
        blocks = np.frombuffer(bytes(t.raw()), dtype)
        assert len(ti.blocks) == len(blocks) > 0
        for f in tt.fields:
            ours = blocks[f.id]
            if f.type in ("f2", "bf2"):
                ours = ours.view(ours.dtype.str.replace("f", "u"))  # the 16 bits, as Kaitai holds them
            for b_k, b_n in zip(ti.blocks, ours):
                arr = np.atleast_1d(b_n)
                expected = (
                    [struct.pack("<f" if f.type == "f4" else "<d", float(x)).hex() for x in arr]
                    if f.type in ("f4", "f8")
                    else [int(x) for x in arr]
                )
                assert _field_values(b_k, f) == expected, (tt.name, f.id)
        checked += 1
    assert checked == sum(t.is_current for t in spec.tensor_types()) + 2
    loaded.close()
    k.close()


def test_kaitai_rejects_a_wrong_magic_and_an_unknown_version(kaitai_gguf, tmp_path):
    """The spec's `contents` (magic) and `valid` (versions) constraints are carried into the .ksy."""
    from kaitaistruct import KaitaiStream, ValidationFailedError

    good = generated_file(3, "little", 32).to_bytes()
    for bad in (b"GGUG" + good[4:], good[:4] + (4).to_bytes(4, "little") + good[8:]):
        with pytest.raises(ValidationFailedError):
            kaitai_gguf(KaitaiStream(io.BytesIO(bad)))
    kaitai_gguf(KaitaiStream(io.BytesIO(good)))


def test_generator_view_catches_a_difference(kaitai_gguf, tmp_path):
    """The comparison can fail: a flipped byte in a value shows up."""
    g = generated_file(3, "little", 32)
    path = tmp_path / "g.gguf"
    g.save(path)
    data = bytearray(path.read_bytes())
    ours = view_loaded(path)
    i = data.index("héllo".encode())
    data[i] = ord("H")
    path.write_bytes(bytes(data))
    assert view_kaitai(kaitai_gguf, path) != ours


# ----------------------------------------------------------------------------------------------------------------
# the compiler itself (needs node and kaitai-struct-compiler)
# ----------------------------------------------------------------------------------------------------------------


def test_ksy_compiles_to_the_committed_parser():
    if kaitai.find_compiler() is None:
        pytest.skip(f"kaitai-struct-compiler not found (npm install kaitai-struct-compiler; set {kaitai.ENV_VAR})")
    version, files = kaitai.compile_ksy((EXPORTS / "gguf.ksy").read_text(encoding="utf-8"))
    assert files[export.COMPILED_PARSER] == PARSER.read_text(encoding="utf-8")
    assert version in (EXPORTS / export.COMPILED_DIR / export.COMPILED_FROM).read_text(encoding="utf-8")


def test_ksy_compiles_for_every_target_language():
    """gguf.ksy is not tied to Python: it compiles for every language of kaitai.TARGETS (C++ is excluded, see
    kaitai.NOT_TARGETS)."""
    if kaitai.find_compiler() is None:
        pytest.skip("kaitai-struct-compiler not found")
    _version, results = kaitai.compile_ksy_many(
        (EXPORTS / "gguf.ksy").read_text(encoding="utf-8"), list(kaitai.TARGETS)
    )
    failed = {lang: r for lang, r in results.items() if isinstance(r, str)}
    assert not failed
    assert all(any(text.strip() for text in files.values()) for files in results.values())


def _js_value(type_name: str, value, item_type: str | None = None):
    """A loaded value as the JavaScript parser shows it: numbers as doubles, 64-bit integers left out (the
    JavaScript runtime reads them as doubles, and misreads some negative ones), booleans as 0/1."""
    if type_name == "ARRAY":
        ids = {v: k for k, v in VALUE_TYPE_NAMES.items()}
        if item_type == "ARRAY":
            return [ids["ARRAY"], [_js_value("ARRAY", x.value, x.item_type.name) for x in value]]
        return [ids[item_type], [_js_value(item_type, x) for x in value]]
    if type_name in ("UINT64", "INT64"):
        return None
    if type_name == "STRING":
        return value
    return float(value)


def test_javascript_parser_reads_generated_files_alike(tmp_path):
    """The .ksy compiled to JavaScript and run by node (runtime: the npm package kaitai-struct next to the
    compiler) sees what load sees in every version x byte order: the description is not Python-specific."""
    compiler = kaitai.find_compiler()
    if compiler is None:
        pytest.skip("kaitai-struct-compiler not found")
    node, compiler_js = compiler
    modules = Path(compiler_js).resolve().parents[1]
    if not (modules / "kaitai-struct" / "KaitaiStream.js").is_file():
        pytest.skip("the JavaScript runtime (npm package kaitai-struct) is not next to the compiler")
    _version, files = kaitai.compile_ksy((EXPORTS / "gguf.ksy").read_text(encoding="utf-8"), "javascript")
    parser = tmp_path / "Gguf.js"
    parser.write_text(files["Gguf.js"], encoding="utf-8")
    paths = []
    for version, byte_order in structs.each_family():
        paths.append(tmp_path / f"v{version}-{byte_order}.gguf")
        generated_file(version, byte_order, 64).save(paths[-1])
    proc = subprocess.run(
        [node, str(ROOT / "tools" / "kaitai_js_dump.js"), str(parser), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env={**os.environ, "NODE_PATH": str(modules)},
    )
    seen = json.loads(proc.stdout)
    for path, js in zip(paths, seen):
        g = load(path)
        for key, vtype, value in js["keys"]:
            typed = g.metadata.typed(key)
            assert VALUE_TYPE_NAMES[vtype] == typed.type.name
            expected = _js_value(
                typed.type.name, typed.value, typed.item_type.name if typed.item_type is not None else None
            )
            if expected is not None:
                assert _without_none(value, expected) == expected, key
        assert [k for k, _, _ in js["keys"]] == list(g.metadata)
        assert (js["version"], js["byte_order"], js["alignment"]) == (g.version, g.byte_order, g.alignment)
        assert js["tensors"] == [
            [t.name, list(t.shape), int(t.ggml_type), t.offset, t.nbytes, hashlib.sha256(bytes(t.raw())).hexdigest()]
            for t in g.tensors
        ]
        g.close()


def _without_none(got, expected):
    """``got`` with the parts ``expected`` leaves out (None) left out too."""
    if expected is None:
        return None
    if isinstance(expected, list):
        return [_without_none(a, b) for a, b in zip(got, expected)]
    return got


def test_compiler_rejects_a_broken_ksy():
    if kaitai.find_compiler() is None:
        pytest.skip("kaitai-struct-compiler not found")
    broken = (EXPORTS / "gguf.ksy").read_text(encoding="utf-8").replace("type: gguf_string", "type: no_such_type")
    with pytest.raises(kaitai.KaitaiCompilerError):
        kaitai.compile_ksy(broken)
