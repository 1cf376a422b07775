"""Moved to :mod:`gguf_construct.breaking.mutations`; this name stays an alias of it."""

import sys

from ..breaking import mutations as _moved

sys.modules[__name__] = _moved
