"""gguf-construct: the GGUF model-file format as a declarative, executable specification."""

__version__ = "0.1.0"
