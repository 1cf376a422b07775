"""The one exception type for malformed GGUF input."""

from __future__ import annotations

import re

__all__ = ["GGUFError", "construct_path_to_field_path"]


class GGUFError(ValueError):
    """Malformed or unsupported GGUF input.

    ``offset`` is the byte offset (from the start of the GGUF data) of the field that could not be read, or
    ``None`` when no single offset applies; ``path`` names that field, e.g. ``metadata_kv[3].value.data[17]``;
    ``rule`` is the ID of the rule (spec/rules.yaml) the input breaks.  ``findings`` are the checker's findings
    (:class:`~gguf_construct.rulebook.catalog.Finding`) behind the error when it comes from the rules ``load``
    refuses: the first is the one the error names.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        path: str = "",
        rule: str | None = None,
        findings: list | None = None,
    ):
        self.message = message
        self.findings = list(findings or ())
        self.offset = offset
        self.path = path
        self.rule = rule
        self.file: str | None = None  # the input the error is about, where a command line knows it
        where = []
        if path:
            where.append(path)
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


_INDEX = re.compile(r"\s*->\s*\[(\d+)\]")


def construct_path_to_field_path(path: str) -> str:
    """Turn Construct's ``(parsing) -> metadata_kv -> [3] -> value`` into ``metadata_kv[3].value``."""
    path = re.sub(r"^\((?:parsing|building|sizeof)\)\s*", "", path or "").strip()
    path = _INDEX.sub(r"[\1]", path)
    parts = [p.strip() for p in path.split("->") if p.strip() and p.strip() != "(???)"]
    return ".".join(parts).replace(".[", "[")
