"""The model layer: llama.cpp's loader replayed from ``spec/architectures/`` and ``spec/model.yaml``.

``plan_load(meta, tensors)`` answers "will llama.cpp load this?" for a file's metadata and tensor infos;
``architectures()`` lists what llama.cpp knows.  The checker's model rules are predicates over its result.
"""

from .loader import ExpectedTensor, LoadPlan, MetaValue, Problem, TensorMeta, file_kind, plan_load
from .programs import Architecture, architecture, architectures, loader, model_spec

__all__ = [
    "plan_load",
    "from_file",
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


def from_file(f) -> tuple[dict[str, MetaValue], dict[str, TensorMeta]]:
    """The metadata and tensor infos of a loaded :class:`~gguf_construct.filemodel.gguffile.GGUFFile`, as ``plan_load`` takes
    them."""
    meta = {}
    for key, v in f.metadata.typed_items():
        item = v.item_type.name if v.item_type is not None else None
        meta[key] = MetaValue(v.type.name, v.value, item)
    tensors = {t.name: TensorMeta(t.name, tuple(t.shape), int(t.ggml_type)) for t in f.tensors}
    return meta, tensors
