"""The conformance suite: plain GGUF files and one manifest that any GGUF reader can be scored against, with no
Python needed to consume it (``gguf-construct suite write DIR``; docs in README and readers/README.md).

* :mod:`.cases` builds the cases from the project's labelled files (crafted breakages, advisories' reproducers,
  minimal models and their breakages) and adds the other side of each limit, every value and tensor type in
  every version and byte order;
* :mod:`.expect` derives each case's verdict per profile from its rules and the catalog;
* :mod:`.manifest` writes the files and ``manifest.json`` (expected metadata, tensor infos, data hashes and
  decoded values);
* :mod:`.runner` scores a reader (any fuzz target) against a written suite.
"""

SCHEMA_VERSION = 1

__all__ = ["SCHEMA_VERSION"]
