"""Minimal models of any architecture as files: :func:`~gguf_construct.arch.synth.minimal_model_parts` (the
metadata and tensor infos llama.cpp's replayed loader accepts) written into a :class:`GGUFFile` of zeros."""

from __future__ import annotations

from ..arch.loader import MetaValue, TensorMeta
from ..arch.synth import minimal_model_parts
from ..filemodel.gguffile import GGUFFile
from ..format.reader import tensor_nbytes

__all__ = ["minimal_model", "build_model_file"]


def minimal_model(
    name: str, *, version: int = 3, byte_order: str = "little", n_vocab: int = 32, overrides: dict | None = None
):
    """A :class:`~gguf_construct.filemodel.gguffile.GGUFFile` holding the smallest model of architecture ``name`` (F32 zeros
    for every tensor) that the replayed loader accepts."""
    meta, tensors = minimal_model_parts(name, n_vocab=n_vocab, overrides=overrides)
    return build_model_file(meta, tensors, version=version, byte_order=byte_order)


def build_model_file(
    meta: dict[str, MetaValue], tensors: dict[str, TensorMeta], *, version: int = 3, byte_order: str = "little"
):
    """A :class:`~gguf_construct.filemodel.gguffile.GGUFFile` with these metadata values and tensor infos; each tensor holds
    zeros of its type (F32 when the type id is 0)."""
    f = GGUFFile.new(version=version, byte_order=byte_order)
    for key, v in meta.items():
        if v.type == "ARRAY":
            f.metadata.set(key, v.value, "ARRAY", v.item_type)
        else:
            f.metadata.set(key, v.value, v.type)
    for t in tensors.values():
        f.add_tensor(t.name, bytes(tensor_nbytes(t.type, t.ne)), t.type, shape=t.ne)
    return f
