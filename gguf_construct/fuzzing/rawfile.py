"""Moved to :mod:`gguf_construct.breaking.rawfile`; this name stays an alias of it."""

import sys

from ..breaking import rawfile as _moved

sys.modules[__name__] = _moved
