"""gguf-construct: the GGUF model-file format as a declarative, executable specification.

Public API: :func:`load`, :class:`GGUFFile`, :class:`Tensor`, :class:`GGUFError`, the enums
:class:`GGMLType`, :class:`GGUFValueType`, :class:`LlamaFileType`, typed values :class:`GGUFValue`, and the
subpackage :mod:`gguf_construct.codecs`.
"""

from .enums import GGMLType, GGUFValueType, LlamaFileType
from .errors import GGUFError
from .model import GGUFFile, Tensor, load
from .values import GGUFValue, Metadata

from ._version import __version__

__all__ = ["load", "GGUFFile", "Tensor", "GGUFError", "GGMLType", "GGUFValueType", "LlamaFileType", "GGUFValue",
           "Metadata", "check"]


def check(source, *, profile: str = "spec", data: bool = False):
    """Check a GGUF file against the conformance rules; see :func:`gguf_construct.checker.check`."""
    from .checker import check as _check

    return _check(source, profile=profile, data=data)
