"""The generated pictures of docs/ (gguf_construct.docgen.pictures): one per version and per tensor type, valid SVG,
drawn from the same widths as the structs and codecs, and the bit map measured on the decoder."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gguf_construct import codecs
from gguf_construct.format import spec, structs
from gguf_construct.docgen import blockbits, pictures

DOCS = Path(__file__).resolve().parent.parent / "docs"
SVG_NS = "{http://www.w3.org/2000/svg}"


def test_every_version_and_current_type_has_a_picture():
    names = set(pictures.pictures())
    for v in structs.versions():
        assert pictures.file_layout_picture_name(v) in names
    assert pictures.VERSIONS_PICTURE in names
    current = [t for t in spec.tensor_types() if t.is_current]
    assert len(current) == 35
    for t in current:
        assert pictures.block_picture_name(t.name) in names, t.name


def test_pictures_are_well_formed_svg_and_committed():
    for name, text in pictures.pictures().items():
        root = ET.fromstring(text)
        assert root.tag == f"{SVG_NS}svg", name
        assert float(root.get("height")) > 50, name
        assert (DOCS / "pictures" / name).read_text(encoding="utf-8") == text, f"{name}: regenerate docs/"


def test_block_picture_shows_the_spec_fields_with_their_offsets():
    for t in spec.tensor_types():
        if not t.is_current:
            continue
        text = pictures.block_picture(t.name)
        dtype = codecs.block_dtype(t.name)
        texts = [e.text for e in ET.fromstring(text).iter(f"{SVG_NS}text")]
        assert f"{t.name}: {t.block_size} weight" in texts[0]
        for f in t.fields:
            assert f.id in texts, (t.name, f.id)
            assert str(dtype.fields[f.id][1]) in texts, (t.name, f.id)  # its offset tick
        assert str(t.type_size) in texts


def test_file_layout_widths_come_from_the_family():
    v1 = ET.fromstring(pictures.file_layout_picture(1))
    v3 = ET.fromstring(pictures.file_layout_picture(3))
    t1 = [e.text for e in v1.iter(f"{SVG_NS}text")]
    t3 = [e.text for e in v3.iter(f"{SVG_NS}text")]
    assert f"{structs.family(1, 'little').layout('header').size} B" == "16 B" and "16 B" in t1
    assert "24 B" in t3
    assert "@ 16 + name.len + 8 × n_dimensions" in t3  # tensor_info.offset, as fieldlayout says
    assert "@ 12 + name.len + 4 × n_dimensions" in t1


def _run_labels(name: str) -> dict[str, list[tuple[int, int, tuple[int, ...]]]]:
    return {item.name: [(r.hi, r.lo, r.elements) for r in item.runs] for item in blockbits.block_bits(name).items}


def test_q4_0_nibbles_measured_as_ggml_packs_them():
    runs = _run_labels("Q4_0")
    assert runs["d"] == [(15, 0, tuple(range(32)))]
    for j in range(16):
        assert runs[f"qs[{j}]"] == [(7, 4, (j + 16,)), (3, 0, (j,))]


def test_q4_k_scales_measured_as_get_scale_min_k4():
    """Bytes 0-3 hold sub-blocks 0-3 in their low six bits and the top two bits of sub-blocks 4-7."""
    bits = blockbits.block_bits("Q4_K")
    runs = _run_labels("Q4_K")
    assert bits.sub_blocks == tuple((32 * s, 32 * s + 31) for s in range(8))
    for j in range(4):
        assert runs[f"scales[{j}]"] == [
            (7, 6, tuple(range(128 + 32 * j, 160 + 32 * j))),
            (5, 0, tuple(range(32 * j, 32 * j + 32))),
        ]
    for j in range(8, 12):
        assert runs[f"scales[{j}]"] == [(7, 0, tuple(range(32 * (j - 4), 32 * (j - 4) + 32)))]
    assert runs["qs[0]"] == [(7, 4, (32,)), (3, 0, (0,))]


def test_bits_no_decoder_reads_are_marked_unused():
    runs = _run_labels("Q8_K")
    assert all(r == [(15, 0, ())] for name, r in runs.items() if name.startswith("bsums"))


def test_generated_pictures_have_no_timestamps_or_random_ids():
    for name, text in pictures.pictures().items():
        assert not re.search(r"20\d\d-\d\d-\d\d", text), name
        assert ' id="' not in text, name


@pytest.mark.parametrize("name", ["Q6_K", "IQ2_XXS"])
def test_every_block_bit_is_accounted_for(name):
    bits = blockbits.block_bits(name)
    t = codecs.type_spec(name)
    assert sum(item.bits for item in bits.items) == 8 * t.type_size
    for item in bits.items:
        assert sum(r.width for r in item.runs) == item.bits


def test_layers_picture_is_drawn_from_the_layer_declaration():
    from gguf_construct import layers

    text = pictures.pictures()[pictures.LAYERS_PICTURE]
    texts = [e.text for e in ET.fromstring(text).iter(f"{SVG_NS}text")]
    for layer in layers.LAYERS:
        assert str(layer.number) in texts and layer.holds in " ".join(texts)
        for folder in layer.folders:
            assert folder + "/" in texts or folder + ".py" in texts, folder
        if layer.add_here:
            assert any(layer.add_here.split()[0] in t for t in texts if t.startswith("add here"))
    # the top floor first: the package's face above the commands, the helpers at the bottom
    numbers = [int(t) for t in texts if t.isdigit()]
    assert numbers == sorted((layer.number for layer in layers.LAYERS), reverse=True)
