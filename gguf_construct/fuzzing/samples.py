"""The generated files of a fuzz run: a seeded pool of valid carrier documents and a reproducible stream of
valid and broken files made from it (used by the runner, the seed maker and the benchmark)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterator

from ..breaking.mutations import MUTATIONS, RandomPick, Skip
from ..breaking.rawfile import RawFile, from_document

__all__ = ["Sample", "carriers", "generate"]


@dataclass
class Sample:
    """One generated file and how it was made."""

    data: bytes
    mutation: str  # "valid" when not mutated
    raw: RawFile | None = None


def carriers(seed: int, count: int = 120, *, max_kv: int = 4, max_tensors: int = 2) -> list:
    """A reproducible pool of valid :class:`~gguf_construct.strategies.Document` objects."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from ..strategies import documents

    pool: list = []

    @hseed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(documents(max_kv=max_kv, max_tensors=max_tensors))
    def collect(doc):
        pool.append(doc)

    collect()
    return pool


def generate(seed: int, *, valid_share: float = 0.25, pool: list | None = None) -> Iterator[Sample]:
    """An endless, reproducible stream of valid and broken files."""
    rng = random.Random(seed)
    pool = pool if pool is not None else carriers(seed)
    pick = RandomPick(rng)
    while True:
        raw = from_document(rng.choice(pool))
        if rng.random() < valid_share:
            yield Sample(raw.encode(with_marks=False)[0], "valid", raw)
            continue
        names = []
        try:
            chosen = [rng.choice(MUTATIONS) for _ in range(1 if rng.random() < 0.85 else 2)]
            for m in sorted(chosen, key=lambda m: m.late):
                m.apply(raw, pick)
                names.append(m.name)
        except Skip:
            continue
        yield Sample(raw.encode(with_marks=False)[0], "+".join(names), raw)
