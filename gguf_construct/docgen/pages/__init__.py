"""The pages of docs/, in the order of the index; each module defines one :class:`~..context.Page` as ``PAGE``
(or several as ``PAGES``).

A new page is a new module here plus its name in :data:`PAGE_MODULES`.
"""

from __future__ import annotations

import importlib

from ..context import Page

__all__ = ["PAGE_MODULES", "pages"]

PAGE_MODULES = (
    "index",
    "format",
    "values",
    "tensor_types",
    "tables",
    "keys",
    "file_types",
    "naming",
    "rules",
    "errata",
    "tensor_names",
    "architectures",
    "memory",
    "security",
    "exports",
    "fuzzing",
)


def pages() -> tuple[Page, ...]:
    """Every page, in index order."""
    out: list[Page] = []
    for name in PAGE_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        out.extend(getattr(module, "PAGES", None) or (module.PAGE,))
    return tuple(out)
