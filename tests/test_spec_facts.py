"""Facts live once in spec/ and every consumer reads them from there (issue #12)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gguf_construct as g
from gguf_construct.format import reader as layout
from gguf_construct.format import spec, structs
import random

from gguf_construct.breaking.mutations import MUTATIONS, RandomPick
from gguf_construct.breaking.rawfile import RawFile
from gguf_construct.checker import check_buffer
from gguf_construct.codecs._common import QK_K

PACKAGE = Path(g.__file__).resolve().parent


def test_valid_of_the_version_field_is_what_the_reader_accepts():
    valid = structs.field_spec("header", "version")["valid"]
    assert structs.versions() == tuple(valid)
    assert [v["version"] for v in structs.container_spec()["versions"]] == list(valid)  # one doc entry each
    assert all(structs.is_valid("header", "version", v) for v in valid)
    assert not structs.is_valid("header", "version", max(valid) + 1)
    assert not structs.is_valid("header", "version", 0)


def test_max_dims_is_a_field_limit():
    assert layout.MAX_DIMS == structs.field_limit("tensor_info", "n_dimensions")
    assert structs.is_valid("tensor_info", "n_dimensions", layout.MAX_DIMS)
    assert not structs.is_valid("tensor_info", "n_dimensions", layout.MAX_DIMS + 1)


def test_string_limits_are_field_limits():
    assert layout.MAX_KEY_BYTES == structs.field_limit("metadata_kv", "key", "max_size")
    assert layout.MAX_NAME_BYTES == structs.field_limit("tensor_info", "name", "max_size")
    assert structs.is_valid("tensor_info", "name", "x" * layout.MAX_NAME_BYTES)
    assert not structs.is_valid("tensor_info", "name", "\u00e9" * (layout.MAX_NAME_BYTES // 2 + 1))  # bytes count


def test_qk_k_is_the_k_quant_block_size():
    k_quants = [t for t in spec.tensor_types() if t.name.endswith("_K") and t.is_current]
    assert k_quants and {t.block_size for t in k_quants} == {QK_K}


def test_default_alignment_and_key_are_those_of_the_layout_section():
    alignment = structs.container_spec()["layout"]["alignment"]
    assert (layout.DEFAULT_ALIGNMENT, layout.ALIGNMENT_KEY) == (alignment["default"], alignment["key"])
    assert g.GGUFFile.new().alignment == alignment["default"]


@pytest.mark.parametrize("magic", sorted(structs.container_spec()["meta"]["legacy_magics"]))
def test_every_legacy_magic_is_known_to_reader_checker_and_mutations(magic):
    magic_mutation = next(m for m in MUTATIONS if m.name == "magic")
    for seed in range(200):  # the magic mutation offers every legacy magic, and declares what it breaks
        raw = RawFile(3, "little")
        intent = magic_mutation.apply(raw, RandomPick(random.Random(seed)))
        if raw.magic == magic.encode("ascii"):
            break
    else:
        pytest.fail(f"the magic mutation never writes {magic!r}")
    data = raw.encode()[0]
    found = {f.rule for f in check_buffer(data).findings}
    assert intent.breaks == found == {"HDR-MAGIC", "HDR-MAGIC-LEGACY"}
    with pytest.raises(g.GGUFError, match="legacy"):
        g.load(data)


# a fact stated as a literal in code, and the one module allowed to hold it
RESTATED = [
    (r"^\s*MAX_DIMS\s*(:\s*int)?\s*=\s*\d", None),
    (r"^\s*MAX_(KEY|NAME)\w*\s*(:\s*int)?\s*=\s*\d", None),
    (r"^\s*QK_K\s*(:\s*int)?\s*=\s*\d", None),
    (r"^\s*LEGACY_MAGICS\b.*=\s*\{\s*b\"", None),
    (r"^\s*DEFAULT_ALIGNMENT\b.*=", "format/reader.py"),
]


@pytest.mark.parametrize("pattern,home", RESTATED)
def test_no_fact_is_restated_in_code(pattern, home):
    hits = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line) and rel != home:
                hits.append(f"{rel}:{i}: {line.strip()}")
    assert hits == []
