"""The generated files of a fuzz run: a seeded pool of valid carrier documents and a reproducible stream of
valid and broken files made from it (used by the runner, the seed maker and the benchmark)."""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass
from typing import Iterator

from ..format import structs
from ..breaking.intent import Labels, compose
from ..breaking.mutations import MUTATIONS, RandomPick, Skip
from ..breaking.rawfile import RawFile, from_document

__all__ = ["Sample", "carriers", "generate", "supported"]


@dataclass
class Sample:
    """One generated file and how it was made."""

    data: bytes
    mutation: str  # "valid" when not mutated
    raw: RawFile | None = None

    @property
    def intent(self) -> Labels:
        """What the breakages declare they break (``breaks``) and may also cause (``may``); empty when valid.
        Not the fuzzer's oracle (that is the checker): a record of what each file was made for."""
        return compose(self.raw) if self.raw is not None else Labels()


def carriers(
    seed: int,
    count: int = 120,
    *,
    max_kv: int = 4,
    max_tensors: int = 2,
    versions=None,
    byte_orders=None,
    tensor_types=None,
) -> list:
    """A reproducible pool of valid :class:`~gguf_construct.strategies.Document` objects of the given versions,
    byte orders and tensor types (None: all).  Hypothesis keeps its cache in a temporary folder, so nothing is
    left in the working directory."""
    import shutil

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import configuration as hconf
    from hypothesis import seed as hseed

    from ..strategies import documents

    pool: list = []
    kwargs = {"max_kv": max_kv, "max_tensors": max_tensors}
    if versions:
        kwargs["versions"] = tuple(versions)
    if byte_orders:
        kwargs["byte_orders"] = tuple(byte_orders)
    if tensor_types:
        kwargs["tensor_types"] = tuple(tensor_types)

    @hseed(seed)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(documents(**kwargs))
    def collect(doc):
        pool.append(doc)

    home = getattr(hconf, "__hypothesis_home_directory", None)
    scratch = tempfile.mkdtemp(prefix="gguf-fuzz-hypothesis-")
    hconf.set_hypothesis_home_dir(scratch)
    try:
        collect()
    finally:
        hconf.set_hypothesis_home_dir(home)
        shutil.rmtree(scratch, ignore_errors=True)
    return pool


def supported(data: bytes, versions=None, byte_orders=None) -> bool:
    """False for a file whose header declares a GGUF version the spec defines but ``versions`` leaves out, or a
    byte order outside ``byte_orders``: the reader under test does not claim to read it.  Files with versions the
    spec does not define (0, 4, ...) stay: every reader must reject them."""
    if len(data) < 8 or data[:4] != b"GGUF":
        return True
    version, byte_order = structs.detect(data[:8])
    if versions and version in structs.versions() and version not in versions:
        return False
    return not (byte_orders and byte_order not in byte_orders)


def generate(
    seed: int,
    *,
    valid_share: float = 0.25,
    pool: list | None = None,
    versions=None,
    byte_orders=None,
    tensor_types=None,
) -> Iterator[Sample]:
    """An endless, reproducible stream of valid and broken files, only of the versions and byte orders given
    (None: all; see :func:`supported`) and with tensors of ``tensor_types``."""
    rng = random.Random(seed)
    pool = (
        pool
        if pool is not None
        else carriers(seed, versions=versions, byte_orders=byte_orders, tensor_types=tensor_types)
    )
    pick = RandomPick(rng)
    while True:
        raw = from_document(rng.choice(pool))
        if rng.random() < valid_share:
            yield Sample(raw.encode(with_marks=False)[0], "valid", raw)
            continue
        names = []
        try:
            chosen = [rng.choice(MUTATIONS) for _ in range(1 if rng.random() < 0.85 else 2)]
            for m in sorted(chosen, key=lambda m: m.phase):
                m.apply(raw, pick)
                names.append(m.name)
        except Skip:
            continue
        data = raw.encode(with_marks=False)[0]
        if supported(data, versions, byte_orders):
            yield Sample(data, "+".join(names), raw)
