"""gguf-construct: the GGUF model-file format as a declarative, executable specification.

Public API: :func:`load`, :class:`GGUFFile`, :class:`Tensor`, :class:`GGUFError`, the enums
:class:`GGMLType`, :class:`GGUFValueType`, :class:`LlamaFileType`, typed values :class:`GGUFValue`, and the
subpackage :mod:`gguf_construct.codecs`.  The package's folders are its layers (``gguf_construct/layers.py``);
a module imported by the name it had before they were regrouped (``gguf_construct.model``, ``.stringlist`` ...)
still loads, with a :class:`DeprecationWarning` naming where it is now.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from typing import TYPE_CHECKING, Any

from .base.errors import GGUFError
from .filemodel.gguffile import GGUFFile, Tensor, load
from .format.enums import GGMLType, GGUFValueType, LlamaFileType
from .format.values import GGUFValue, Metadata
from .layers import MOVED
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .checker.report import Report

__all__ = [
    "load",
    "GGUFFile",
    "Tensor",
    "GGUFError",
    "GGMLType",
    "GGUFValueType",
    "LlamaFileType",
    "GGUFValue",
    "Metadata",
    "check",
]


def check(source: Any, *, profile: str = "spec", data: bool = False) -> "Report":
    """Check a GGUF file against the conformance rules; see :func:`gguf_construct.checker.check`."""
    from .checker import check as _check

    return _check(source, profile=profile, data=data)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``gguf_construct.<old name>`` for a module that moved into a layer folder: the old name becomes an
    alias of the module at its new place (one module object, so pickles and patches reach the same code)."""

    def find_spec(self, fullname, path=None, target=None):
        old = fullname[len(__name__) + 1 :] if fullname.startswith(__name__ + ".") else None
        if old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        new = f"{__name__}.{MOVED[spec.name[len(__name__) + 1 :]]}"
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)
        module = importlib.import_module(new)
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())
