"""What a breakage declares about the edit it made, and how the declarations of several breakages of one file
combine into the file's labels.

Every mutation (:mod:`.mutations`) returns an :class:`Intent` for the concrete edit it made: the rules the edit is
made to break (``breaks``: a conformance checker must report each), the rules it may also cause as a known side
effect (``may``), where in the file the edit is (``at``), whether reading ends there (``stops``), which other
breakages' rules it interferes with (``masks``) and which records it wrote (``touches``).

:func:`compose` combines the intents of the breakages applied to one file.  It knows nothing of what any rule
means; it only orders the declarations as a reader meets them, front to back: a rule declared for a part of the
file after the point where reading stops is no longer sure (it moves to ``may``), nor is one of a record a later
breakage rewrote, nor one another breakage declares it interferes with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .rawfile import Layout, RawFile

__all__ = ["Intent", "Labels", "Bytes", "DATA", "TENSOR_INFOS", "DATA_LAYOUT", "compose"]

# anchors: where an edit is, resolved to a byte range of the encoded file when the intents are combined
DATA = "data"  # the data section: its rules are checked once the whole head is read
TENSOR_INFOS = "tensor_infos"  # the start of the tensor infos


@dataclass(frozen=True)
class Bytes:
    """A fixed byte range [start, end) of the file (header fields, a cut, padding, trailing bytes)."""

    start: int
    end: int


# the rules of the data section's layout: an edit that moves or resizes tensor data can hide any of them
DATA_LAYOUT = frozenset(
    {
        "DATA-START",
        "DATA-BOUNDS",
        "DATA-OVERLAP",
        "DATA-ORDER",
        "DATA-PAD-ZERO",
        "DATA-TRAILING-PAD",
        "DATA-TRAILING-BYTES",
        "SEC-DATA-SIZE-OVERFLOW",
    }
)


@dataclass(frozen=True)
class Intent:
    """The declared intent of one concrete edit.

    ``at``: a record (:class:`~.rawfile.RawKV` / :class:`~.rawfile.RawTI`), a tuple of records, a :class:`Bytes`
    range, :data:`DATA` or :data:`TENSOR_INFOS`; the edit's ``breaks`` are reported when reading gets past it.
    ``stops``: an anchor where reading of the file ends because of the edit (None: reading goes on).
    ``masks``: rules of *other* breakages of the same file this edit interferes with: when another breakage
    declares one of them, it may be hidden or turn into any other of them.
    ``touches``: the records (or header field names) the edit wrote.
    """

    breaks: frozenset = frozenset()
    may: frozenset = frozenset()
    at: Any = DATA
    stops: Any = None
    masks: frozenset = frozenset()
    touches: tuple = ()
    by: str = ""  # the mutation's name, filled in by Mutation.apply

    def __post_init__(self):
        object.__setattr__(self, "breaks", frozenset(self.breaks))
        object.__setattr__(self, "may", frozenset(self.may) - self.breaks)
        object.__setattr__(self, "masks", frozenset(self.masks))


@dataclass(frozen=True)
class Labels:
    """The combined intent of the breakages of one file: rules it must break, rules it may also break."""

    breaks: frozenset = frozenset()
    may: frozenset = frozenset()
    intents: tuple = field(default=(), repr=False)


def _key(obj: Any) -> Any:
    return obj if isinstance(obj, str) else id(obj)


def _span(anchor: Any, layout: Layout) -> tuple[int, int]:
    """The byte range [start, end) of an anchor in the encoded file (a cut is the one byte after it)."""
    if isinstance(anchor, Bytes):
        return anchor.start, anchor.end
    if anchor == DATA:
        return layout.head_end, max(layout.size, layout.head_end + 1)
    if anchor == TENSOR_INFOS:
        return layout.tensor_infos, layout.tensor_infos + 1
    records = anchor if isinstance(anchor, tuple) else (anchor,)
    spans = [layout.records.get(id(r), (0, layout.size + 1)) for r in records]
    return min(s for s, _ in spans), max(e for _, e in spans)


def compose(raw: RawFile, intents: Iterable[Intent] | None = None) -> Labels:
    """The labels of ``raw`` from the intents of the breakages applied to it, in the order they were applied
    (default: ``raw.intents``)."""
    intents = list(raw.intents if intents is None else intents)
    if not intents:
        return Labels()
    layout = raw.layout()
    unsure: list[set] = [set() for _ in intents]
    # a later edit rewrote a record an earlier one wrote: neither's declaration holds for sure
    for i, a in enumerate(intents):
        for j in range(i + 1, len(intents)):
            if {_key(o) for o in a.touches} & {_key(o) for o in intents[j].touches}:
                unsure[i] |= a.breaks
                unsure[j] |= intents[j].breaks
    # another edit declares it interferes with these rules: they may be hidden, or turn into any other of them
    for i, a in enumerate(intents):
        for j, b in enumerate(intents):
            if i != j and b.masks & (a.breaks | a.may):
                unsure[i] |= (a.breaks & b.masks) | b.masks
    # reading order: nothing after the first stop is read; stops in the same place compete
    stops = sorted((_span(b.stops, layout), i) for i, b in enumerate(intents) if b.stops is not None)
    if stops:
        (first_start, first_end), _ = stops[0]
        tied = {i for (start, _), i in stops if start < first_end}
        for i, a in enumerate(intents):
            if i in tied:
                if len(tied) > 1:
                    unsure[i] |= a.breaks
            elif _span(a.at, layout)[1] > first_start:
                unsure[i] |= a.breaks
    breaks = frozenset().union(*(a.breaks - u for a, u in zip(intents, unsure)))
    may = frozenset().union(*(a.may | u for a, u in zip(intents, unsure)))
    return Labels(breaks, may - breaks, tuple(intents))
