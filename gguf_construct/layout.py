"""Renamed :mod:`gguf_construct.reader`; this name stays an alias of it for existing imports."""

import sys

from . import reader as _reader

sys.modules[__name__] = _reader
