"""File-type signatures generated from ``spec/``: libmagic ``magic`` lines and a freedesktop shared-mime-info
entry.

The magic lines match the magic, then every declared version in each byte order (the version word compared in
little- and in big-endian, which is the spec's byte-order detection for the versions that exist), and print the
version, the byte order and the two header counts, read at their offsets with their widths in that version, as
the generated family of that version and byte order has them (:func:`~gguf_construct.format.fieldlayout.field_at`).
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from ..format import structs
from ..format.fieldlayout import field_at

__all__ = ["MIME_TYPE", "render_magic", "render_mime", "bof_sequences"]

# Not a registered media type (GGUF has none); the x- form freedesktop uses for unregistered formats.
MIME_TYPE = "application/x-gguf"

# libmagic's unsigned integers: "u", the byte order ("le"/"be", none for a byte), the name of the width
_MAGIC_INTEGER = {1: "byte", 2: "short", 4: "long", 8: "quad"}
_MAGIC_ORDER = {"little": "le", "big": "be"}
_COUNT_LABEL = {"tensor_count": "tensors", "metadata_kv_count": "key/value pairs"}


def _magic_type(width: int, order: str) -> str:
    """libmagic's type of an unsigned integer of ``width`` bytes in byte order ``order`` (``ulelong`` ...)."""
    return "u" + ("" if width == 1 else _MAGIC_ORDER[order]) + _MAGIC_INTEGER[width]


def _header_field(fam: structs.StructFamily, field_id: str) -> tuple[int, int]:
    """``(offset in the file, width)`` of a header field in ``fam``."""
    place = field_at(fam, "file_head", f"header.{field_id}")
    return place.offset.fixed, place.size.fixed


def bof_sequences() -> list[tuple[int, str, bytes]]:
    """``(version, byte order, bytes)``: the fixed bytes every file of that version and byte order starts with
    (magic and version word), e.g. for a PRONOM/DROID internal signature: what the family's builder writes for an
    empty file up to the end of the version word."""
    out = []
    for version, order in structs.each_family():
        raw, tree = structs.family(version, order).build(
            "file_head", {"header": {"version": version}, "metadata_kv": [], "tensor_infos": []}
        )
        out.append((version, order, raw[: tree.find("header.version").end]))
    return out


def render_magic() -> str:
    """libmagic source lines (``file -m gguf.magic FILE``)."""
    meta = structs.container_spec()["meta"]
    lines = [
        f"# {meta['title']}: magic(5) lines generated from spec/ by `gguf-construct export magic`; do not edit.",
        f"# Version and byte order: the version word, read in each byte order (versions {list(structs.versions())}).",
        f"0\tstring\t{meta['magic']}",
    ]
    for version, order in structs.each_family():
        fam = structs.family(version, order)
        voff, vwidth = _header_field(fam, "version")
        lines.append(
            f">{voff}\t{_magic_type(vwidth, order)}\t{version}\t{meta['title']}, version {version}, {order}-endian"
        )
        for fid, label in _COUNT_LABEL.items():
            off, width = _header_field(fam, fid)
            fmt = "%llu" if width == 8 else "%u"
            lines.append(f">>{off}\t{_magic_type(width, order)}\tx\t\\b, {fmt} {label}")
        lines.append(f"!:mime\t{MIME_TYPE}")
        lines.append(f"!:ext\t{meta['id']}")
    return "\n".join(lines) + "\n"


def render_mime() -> str:
    """A freedesktop shared-mime-info package (``gguf-mime.xml``, for ``/usr/share/mime/packages``)."""
    meta = structs.container_spec()["meta"]
    magic = escape(meta["magic"])
    return (
        "\n".join(
            [
                '<?xml version="1.0" encoding="UTF-8"?>',
                "<!-- Generated from spec/ by `gguf-construct export mime`; do not edit. -->",
                '<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">',
                f'  <mime-type type="{MIME_TYPE}">',
                f"    <comment>{escape(meta['title'])}</comment>",
                f"    <acronym>{escape(meta['id'].upper())}</acronym>",
                f"    <expanded-acronym>{escape(meta['title'].split('(')[-1].rstrip(')'))}</expanded-acronym>",
                '    <sub-class-of type="application/octet-stream"/>',
                '    <magic priority="50">',
                f'      <match type="string" offset="0" value="{magic}"/>',
                "    </magic>",
                f'    <glob pattern="*.{meta["id"]}"/>',
                "  </mime-type>",
                "</mime-info>",
            ]
        )
        + "\n"
    )
