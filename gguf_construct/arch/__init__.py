"""The model layer: llama.cpp's loader replayed from ``spec/architectures/`` and ``spec/model.yaml``.

``plan_load(meta, tensors)`` answers "will llama.cpp load this?" for a file's metadata and tensor infos;
``architectures()`` lists what llama.cpp knows.  The checker's model rules are predicates over its result.
"""

from .loader import ExpectedTensor, LoadPlan, MetaValue, Problem, TensorMeta, file_kind, plan_load
from .filemeta import FileMeta, FileTensors
from .programs import Architecture, architecture, architectures, loader, model_spec

__all__ = [
    "plan_load",
    "from_file",
    "FileMeta",
    "FileTensors",
    "LoadPlan",
    "Problem",
    "ExpectedTensor",
    "MetaValue",
    "TensorMeta",
    "file_kind",
    "Architecture",
    "architecture",
    "architectures",
    "loader",
    "model_spec",
]


def from_file(f) -> tuple[FileMeta, FileTensors]:
    """The metadata and tensor infos of a loaded :class:`~gguf_construct.filemodel.gguffile.GGUFFile`, as ``plan_load`` takes
    them: the metadata a :class:`FileMeta` (a mutable mapping key -> :class:`MetaValue`), whose values are made
    when read, and the tensor infos a :class:`FileTensors` (name -> :class:`TensorMeta`, made when read)."""
    meta = FileMeta(f.metadata.typed_items())
    tensors = FileTensors(f.tensors)
    return meta, tensors
