"""The reference conformance checker: every finding of a GGUF file, with rule ID, severity, offset and path.

Rules, severities and messages come from ``spec/rules.yaml``; each rule is one predicate registered by ID
(:func:`~gguf_construct.rulebook.catalog.rule`) or is reported by the structural walk.  Use :func:`check` from
Python or ``gguf-construct check`` from the command line.
"""

from .core import check, check_buffer
from .report import Finding, Report

__all__ = ["check", "check_buffer", "Report", "Finding"]
