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

from .layers import LAYERS, MOVED
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .base.errors import GGUFError
    from .checker.report import Report
    from .filemodel.gguffile import GGUFFile, Tensor, load
    from .format.enums import GGMLType, GGUFValueType, LlamaFileType
    from .format.values import GGUFValue, Metadata

# the public names, imported on first use (PEP 562): `import gguf_construct` and the command line start without
# the file model, so a Ctrl-C while a command starts up lands in its handler instead of in an import
_PUBLIC = {
    "GGUFError": ".base.errors",
    "GGUFFile": ".filemodel.gguffile",
    "Tensor": ".filemodel.gguffile",
    "load": ".filemodel.gguffile",
    "GGMLType": ".format.enums",
    "GGUFValueType": ".format.enums",
    "LlamaFileType": ".format.enums",
    "GGUFValue": ".format.values",
    "Metadata": ".format.values",
}

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


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    where = _PUBLIC.get(name)
    if where is None:
        if any(name in layer.folders for layer in LAYERS) or name == "strategies":  # a folder, as before
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


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
