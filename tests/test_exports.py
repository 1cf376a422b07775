"""The exports in exports/ (Kaitai Struct, ImHex, libmagic, shared-mime-info): fresh, complete, and the magic
lines recognised by ``file`` for every version x byte order.  The Kaitai parser round is in test_exports_kaitai.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from gguf_construct import GGUFFile, export
from gguf_construct.format import spec, structs
from gguf_construct.commands.main import main

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ROOT / "exports"
GGUF = structs.container_spec()

pytestmark = pytest.mark.skipif(spec.spec_dir() != ROOT / "spec", reason="package not installed from this checkout")


# ----------------------------------------------------------------------------------------------------------------
# freshness
# ----------------------------------------------------------------------------------------------------------------


def test_exports_are_up_to_date():
    """exports/ is what spec/ generates: after changing spec/, run `gguf-construct export all` and commit."""
    assert export.check_exports(EXPORTS) == []


def test_cli_check_and_stale_detection(tmp_path, capsys):
    out = tmp_path / "exports"
    shutil.copytree(EXPORTS, out)
    assert main(["export", "all", "--check", "--out", str(out)]) == 0
    (out / "gguf.magic").write_text("stale\n", encoding="utf-8")
    (out / "gguf.hexpat").unlink()
    recorded = out / export.COMPILED_DIR / export.COMPILED_FROM
    recorded.write_text(recorded.read_text(encoding="utf-8").replace("sha256 ", "sha256 0"), encoding="utf-8")
    problems = export.check_exports(out, compile_parser=False)
    assert any("gguf.magic: stale" in p for p in problems)
    assert any("gguf.hexpat: missing" in p for p in problems)
    assert any("compiled from another gguf.ksy" in p for p in problems)
    assert main(["export", "all", "--check", "--out", str(out)]) == 1
    assert "gguf.magic" in capsys.readouterr().err
    changed, _notes = export.write_exports(out, compile_parser=False)
    assert {p.name for p in changed} == {"gguf.magic", "gguf.hexpat"}
    recorded.write_text(
        (EXPORTS / export.COMPILED_DIR / export.COMPILED_FROM).read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert export.check_exports(out, compile_parser=False) == []


def test_docs_check_covers_the_exports(tmp_path, monkeypatch, capsys):
    """`gguf-construct docs --check` on the source tree's docs/ also compares exports/ (here a stale copy)."""
    out = tmp_path / "exports"
    shutil.copytree(EXPORTS, out)
    (out / "gguf.ksy").write_text("stale\n", encoding="utf-8")
    monkeypatch.setattr(export, "default_exports_dir", lambda: out)
    assert main(["docs", "--check"]) == 1
    assert "gguf.ksy: stale" in capsys.readouterr().err
    assert main(["docs", "--check", "--out", str(tmp_path / "elsewhere")]) == 1  # other folders: docs only
    assert "gguf.ksy" not in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(export.EXPORTS))
def test_cli_prints_and_writes_each_export(name, tmp_path, capsys):
    assert main(["export", name]) == 0
    text = capsys.readouterr().out
    fname = export.EXPORTS[name][0]
    assert text == (EXPORTS / fname).read_text(encoding="utf-8")
    target = tmp_path / fname
    assert main(["export", name, "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == text


def test_generation_is_deterministic():
    assert [export.render(n) for n in export.EXPORTS] == [export.render(n) for n in export.EXPORTS]


# ----------------------------------------------------------------------------------------------------------------
# Kaitai Struct: coverage of the spec
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ksy() -> dict:
    return yaml.safe_load((EXPORTS / "gguf.ksy").read_text(encoding="utf-8"))


def test_ksy_covers_value_types_versions_and_byte_orders(ksy):
    assert ksy["meta"]["id"] == GGUF["meta"]["id"]
    head = ksy["types"]["file_head"]
    assert head["meta"]["endian"]["switch-on"] == "_root.big_endian"
    nested = head["types"]
    assert {n for n in nested if not n.startswith("block_")} == set(GGUF["types"]) - {"file_head"}
    assert {n for n in nested if n.startswith("block_")} == {
        f"block_{t.name.lower()}" for t in spec.tensor_types() if t.is_current
    }
    value = next(f for f in nested["metadata_kv"]["seq"] if f["id"] == "value")
    assert len(value["type"]["cases"]) == len(GGUF["value_types"])
    assert value["type"]["cases"]["value_types::array"] == "gguf_array"
    array_data = next(f for f in nested["gguf_array"]["seq"] if f["id"] == "data")
    assert array_data["type"]["cases"]["value_types::array"] == "gguf_array"  # nested arrays
    assert array_data["type"]["cases"]["value_types::int64"] == "s8"
    strlen = nested["gguf_string"]["seq"][0]["type"]
    assert strlen == {"switch-on": "_root.version", "cases": {1: "u4", "_": "u8"}}
    assert nested["gguf_string"]["seq"][1]["encoding"] == "UTF-8"
    assert {v["id"] for v in ksy["enums"]["value_types"].values()} == {vt["name"].lower() for vt in GGUF["value_types"]}


def test_ksy_has_every_tensor_type_with_its_sizes(ksy):
    enum = ksy["enums"]["ggml_types"]
    types = spec.tensor_types()
    assert sorted(enum) == [t.id for t in types]
    instances = ksy["types"]["file_head"]["types"]["tensor_info"]["instances"]
    for attr in ("block_size", "type_size"):
        values = [int(v) for v in re.search(r"\[([0-9, ]+)\]", instances[attr]["value"]).group(1).split(",")]
        for t in types:
            assert values[t.id] == getattr(t, attr), (attr, t.name)
    for t in types:
        assert enum[t.id]["id"] == t.name.lower() and enum[t.id]["-orig-id"] == t.c_name
        if t.block_size:
            assert f"{t.block_size} elements in {t.type_size} bytes" in enum[t.id]["doc"]
    assert instances["data"]["pos"] == "_root.data.start + offset"


def test_ksy_alignment_and_padding_follow_the_spec(ksy):
    start = ksy["types"]["data_section"]["instances"]["start"]["value"]
    assert start == "head_end + (_root.alignment - (head_end % _root.alignment)) % _root.alignment"
    kv = ksy["types"]["file_head"]["types"]["metadata_kv"]["instances"]
    assert GGUF["layout"]["alignment"]["key"] in kv["is_alignment"]["value"]
    assert str(GGUF["layout"]["alignment"]["default"]) in ksy["instances"]["alignment"]["value"]


# ----------------------------------------------------------------------------------------------------------------
# ImHex pattern: structure (no ImHex here to run it)
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hexpat() -> str:
    return (EXPORTS / "gguf.hexpat").read_text(encoding="utf-8")


def test_hexpat_is_balanced(hexpat):
    code = re.sub(r'//[^\n]*|"[^"\n]*"', "", hexpat)
    for a, b in ("{}", "()", "[]"):
        assert code.count(a) == code.count(b), a + b
    depth = 0
    for ch in code:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0


def test_hexpat_covers_value_and_tensor_types(hexpat):
    for vt in GGUF["value_types"]:
        assert re.search(rf"^    {vt['name']} = {vt['id']},", hexpat, re.M)
        assert hexpat.count(f"(gguf_value_type::{vt['name']}):") == 2  # metadata values and array elements
    assert "(gguf_value_type::ARRAY): gguf_array data[len];" in hexpat
    assert "(gguf_value_type::INT64): s64 value;" in hexpat
    for t in spec.tensor_types():
        assert re.search(rf"^    {t.name} = {t.id},", hexpat, re.M)
        assert f"(ggml_type::{t.name}): return {t.block_size};" in hexpat
        assert f"(ggml_type::{t.name}): return {t.type_size};" in hexpat
    for name in GGUF["types"]:
        assert re.search(rf"^struct {name if name.startswith('gguf_') else 'gguf_' + name} {{", hexpat, re.M)
    assert "if (gguf_version == 1) u32 len;\n    else u64 len;" in hexpat
    assert "std::core::set_endian(std::mem::Endian::Big);" in hexpat
    assert f'key.data == "{GGUF["layout"]["alignment"]["key"]}"' in hexpat


# ----------------------------------------------------------------------------------------------------------------
# signatures
# ----------------------------------------------------------------------------------------------------------------


def _sample(tmp_path: Path, version: int, byte_order: str) -> Path:
    g = GGUFFile.new(version=version, byte_order=byte_order)
    g.metadata.set("general.architecture", "llama", "STRING")
    g.metadata.set("general.name", "x", "STRING")
    g.add_tensor("w", bytes(4 * 32), ggml_type="F32", shape=(32,))
    path = tmp_path / f"v{version}-{byte_order}.gguf"
    g.save(path)
    return path


@pytest.mark.parametrize("version,byte_order", structs.each_family())
def test_file_recognises_every_version_and_byte_order(tmp_path, version, byte_order):
    if shutil.which("file") is None:
        pytest.skip("file (libmagic) is not installed")
    path = _sample(tmp_path, version, byte_order)
    magic = str(EXPORTS / "gguf.magic")
    out = subprocess.run(["file", "-b", "-m", magic, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == (
        f"{GGUF['meta']['title']}, version {version}, {byte_order}-endian, 1 tensors, 2 key/value pairs"
    )
    mime = subprocess.run(
        ["file", "-b", "--mime-type", "-m", magic, str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert mime.strip() == export.signatures.MIME_TYPE


def test_file_rejects_what_is_not_gguf(tmp_path):
    if shutil.which("file") is None:
        pytest.skip("file (libmagic) is not installed")
    magic = str(EXPORTS / "gguf.magic")
    bad = {"version4": b"GGUF" + (4).to_bytes(4, "little") + bytes(16), "other": b"GGML" + bytes(20)}
    for name, data in bad.items():
        path = tmp_path / name
        path.write_bytes(data)
        out = subprocess.run(["file", "-b", "-m", magic, str(path)], capture_output=True, text=True, check=True).stdout
        assert "GGUF" not in out, name


def test_bof_sequences_start_every_file(tmp_path):
    seqs = export.signatures.bof_sequences()
    assert len(seqs) == len(structs.each_family())
    for version, byte_order, head in seqs:
        assert _sample(tmp_path, version, byte_order).read_bytes().startswith(head)
        others = [h for v, o, h in seqs if (v, o) != (version, byte_order)]
        assert not any(h == head for h in others)


@pytest.fixture
def moved_header(tmp_path, monkeypatch):
    """A copy of spec/ whose header has a 2-byte field before the version word and 2-byte counts in v1; in effect
    for one test."""
    copy = tmp_path / "spec"
    shutil.copytree(spec.spec_dir(), copy)
    gguf = yaml.safe_load((copy / "gguf.yaml").read_text(encoding="utf-8"))
    gguf["types"]["header"]["seq"].insert(1, {"id": "flags", "type": "u2", "doc": "Hypothetical."})
    gguf["aliases"]["count_t"]["cases"][1] = "u2"
    (copy / "gguf.yaml").write_text(yaml.safe_dump(gguf, sort_keys=False), encoding="utf-8")
    caches = (
        spec.load_yaml,
        spec.primitives,
        spec.tensor_types,
        spec.tensor_type_by_id,
        structs.family,
        structs.field_spec,
        structs.value_types,
    )
    monkeypatch.setattr(spec, "spec_dir", lambda: copy)
    for cached in caches:
        cached.cache_clear()
    yield
    monkeypatch.undo()
    for cached in caches:
        cached.cache_clear()


def test_exports_follow_the_generated_layout(moved_header):
    """Offsets and widths in every export are the generated families': with the header changed in the spec, the
    version word is read 2 bytes later and the v1 counts are 2-byte integers everywhere."""
    ksy = yaml.safe_load(export.render("ksy"))
    assert {k: ksy["instances"][k]["pos"] for k in ("version_word_le", "version_word_be")} == {
        "version_word_le": 6,
        "version_word_be": 6,
    }
    header = {f["id"]: f for f in ksy["types"]["file_head"]["types"]["header"]["seq"]}
    assert header["tensor_count"]["type"] == {"switch-on": "_root.version", "cases": {1: "u2", "_": "u8"}}
    hexpat = export.render("hexpat")
    assert "std::mem::read_unsigned(6, 4, std::mem::Endian::Little)" in hexpat
    assert "if (gguf_version == 1) u16 tensor_count;\n    else u64 tensor_count;" in hexpat
    magic = export.render("magic")
    assert ">6\tubelong\t1\t" in magic and ">6\tulelong\t3\t" in magic
    assert structs.version_word() == (6, 4)  # the reader's byte-order detection reads the same word
    assert structs.detect(b"GGUF\0\0" + (3).to_bytes(4, "big")) == (3, "big")
    assert ">>10\tubeshort\tx\t\\b, %u tensors" in magic and ">>12\tuleshort\tx\t" in magic
    assert ">>18\tulequad\tx\t\\b, %llu key/value pairs" in magic


def test_mime_entry():
    root = ET.parse(EXPORTS / "gguf-mime.xml").getroot()
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    mt = root.find("m:mime-type", ns)
    assert mt.get("type") == export.signatures.MIME_TYPE
    assert mt.find("m:magic/m:match", ns).get("value") == GGUF["meta"]["magic"]
    assert mt.find("m:glob", ns).get("pattern") == "*.gguf"
