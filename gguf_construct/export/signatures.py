"""File-type signatures generated from ``spec/``: libmagic ``magic`` lines and a freedesktop shared-mime-info
entry.

The magic lines match the magic, then every declared version in each byte order (the version word compared in
little- and in big-endian, which is the spec's byte-order detection for the versions that exist), and print the
version, the byte order and the two header counts, read at their offsets with their widths in that version.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from .. import spec as _spec
from .. import structs

__all__ = ["MIME_TYPE", "render_magic", "render_mime", "bof_sequences"]

# Not a registered media type (GGUF has none); the x- form freedesktop uses for unregistered formats.
MIME_TYPE = "application/x-gguf"

_MAGIC_TYPE = {(4, "little"): "ulelong", (4, "big"): "ubelong", (8, "little"): "ulequad", (8, "big"): "ubequad"}
_MAGIC_FORMAT = {4: "%u", 8: "%llu"}
_COUNT_LABEL = {"tensor_count": "tensors", "metadata_kv_count": "key/value pairs"}


def _header_fields(version: int) -> list[tuple[str, int, int]]:
    """``(field id, offset, width)`` of every header field in ``version``."""
    out, pos = [], 0
    for field in structs.container_spec()["types"]["header"]["seq"]:
        if "contents" in field:
            width = len(field["contents"])
        else:
            prim = field["type"]
            if prim in structs.container_spec()["aliases"]:
                prim = structs.resolve_alias(prim, version)
            width = _spec.primitives()[prim].size
        out.append((field["id"], pos, width))
        pos += width
    return out


def bof_sequences() -> list[tuple[int, str, bytes]]:
    """``(version, byte order, bytes)``: the fixed bytes every file of that version and byte order starts with
    (magic and version word), e.g. for a PRONOM/DROID internal signature."""
    meta = structs.container_spec()["meta"]
    out = []
    for version in meta["versions"]:
        fields = {fid: (off, width) for fid, off, width in _header_fields(version)}
        voff, vwidth = fields["version"]
        for order in structs.BYTE_ORDERS:
            head = meta["magic"].encode("ascii").ljust(voff, b"\0")
            out.append((version, order, head + version.to_bytes(vwidth, order)))
    return out


def render_magic() -> str:
    """libmagic source lines (``file -m gguf.magic FILE``)."""
    meta = structs.container_spec()["meta"]
    lines = [f"# {meta['title']}: magic(5) lines generated from spec/ by `gguf-construct export magic`; do not edit.",
             f"# Version and byte order: the version word, read in each byte order (versions {meta['versions']}).",
             f"0\tstring\t{meta['magic']}"]
    for version in meta["versions"]:
        fields = {fid: (off, width) for fid, off, width in _header_fields(version)}
        voff, vwidth = fields["version"]
        for order in structs.BYTE_ORDERS:
            lines.append(f">{voff}\t{_MAGIC_TYPE[vwidth, order]}\t{version}\t"
                         f"{meta['title']}, version {version}, {order}-endian")
            for fid, label in _COUNT_LABEL.items():
                off, width = fields[fid]
                lines.append(f">>{off}\t{_MAGIC_TYPE[width, order]}\tx\t\\b, {_MAGIC_FORMAT[width]} {label}")
            lines.append(f"!:mime\t{MIME_TYPE}")
            lines.append(f"!:ext\t{meta['id']}")
    return "\n".join(lines) + "\n"


def render_mime() -> str:
    """A freedesktop shared-mime-info package (``gguf-mime.xml``, for ``/usr/share/mime/packages``)."""
    meta = structs.container_spec()["meta"]
    magic = escape(meta["magic"])
    return "\n".join([
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
    ]) + "\n"
