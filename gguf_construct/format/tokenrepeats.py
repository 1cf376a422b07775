"""The first token of a vocabulary that repeats an earlier one once every empty token is renamed, as llama.cpp's
vocabulary loader renames them (``[EMPTY_{i}]``, spec/model.yaml ``vocab.unique_tokens``) before it asserts that the
strings are unique, decided on a :class:`~gguf_construct.format.stringlist.StringList`'s bytes without a ``str`` or
a Python step per token."""

from __future__ import annotations

import numpy as np

from .stringlist import StringList

__all__ = ["first_repeated_token"]


def first_repeated_token(tokens: StringList, empty_as: str) -> int | None:
    """The least index ``i`` whose token (an empty one read as ``empty_as.format(i=i)``) equals an earlier one's,
    or None.  Two non-empty tokens meet by :meth:`StringList.first_repeat`; renamed tokens never meet each other
    (each holds its own index); a renamed token ``i`` meets a token ``j`` that spells its name, and the later of
    the two is the repeat.  ``empty_as`` must hold ``{i}`` once and no other field."""
    prefix, field, suffix = empty_as.partition("{i}")
    if not field or "{" in prefix + suffix or "}" in prefix + suffix:
        raise ValueError(f"the renaming {empty_as!r} must hold {{i}} once and no other field")
    found = []
    repeat = tokens.first_repeat(skip_empty=True)
    if repeat is not None:
        found.append(repeat)
    empties = tokens.empty_items()
    if len(empties):
        where, numbers = tokens.numbered_items(prefix.encode(), suffix.encode())
        named = np.isin(numbers, empties)
        if named.any():
            found.append(int(np.maximum(where[named], numbers[named]).min()))
    return min(found) if found else None
