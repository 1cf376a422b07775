"""The package version (a leaf module, so that any layer may import it)."""

__version__ = "0.1.0"
