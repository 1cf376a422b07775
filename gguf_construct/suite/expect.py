"""What a reader should do with each case, per profile: accept, reject, or either where the spec leaves it to
the reader.

The verdict is derived from the rules a case was built to break and the catalog's severity of each rule under
the profile (spec/rules.yaml), never from running a checker: a case is rejected when one of its rules is an
error under the profile; it is ``either`` when one of its rules is an implementation choice the spec leaves
open (:data:`EITHER`, each with why); a file that is not a whole model is rejected by llama.cpp's loader.
"""

from __future__ import annotations

from ..rulebook.catalog import catalog

__all__ = ["PROFILES", "EITHER", "outcome"]

PROFILES = ("spec", "ggml", "llama.cpp")

# (rule, profile) -> why a reader may accept or reject a file that breaks only this rule
EITHER: dict[tuple[str, str], str] = {
    ("HDR-ENDIAN", "spec"): (
        "gguf.md defines big-endian files but does not oblige a reader to read both byte orders; readers on "
        "little-endian hosts (ggml's own) refuse them"),
    ("HDR-V1-UNSUPPORTED", "spec"): (
        "version 1 is part of gguf.md's history, but ggml and gguf-py no longer read it; a reader may refuse it"),
    ("TI-TYPE-NEW", "spec"): (
        "the tensor type is newer than gguf.md's ggml_type enum: a reader that knows it reads it, an older one "
        "cannot size its data and refuses the file"),
    ("TI-TYPE-NEW", "ggml"): (
        "the tensor type is newer than some ggml releases: the ggml that knows it reads it, an older one refuses"),
    ("ARR-TOO-DEEP", "spec"): (
        "gguf.md sets no limit on array nesting; every reader needs one (recursion or memory), and where it lies "
        "is the reader's choice"),
}

NOT_A_MODEL = ("not a whole model: llama.cpp's loader needs every tensor of the architecture, and this container "
               "case carries only a few")


def outcome(rules, profile: str, *, model: bool = False) -> tuple[str, str]:
    """``(accept|reject|either, why)`` for a case breaking ``rules`` under ``profile``."""
    cat = catalog()
    errors = [r for r in rules if cat[r].severity(profile) == "error"]
    if errors:
        return "reject", "breaks " + ", ".join(errors) + f" (errors under the {profile} profile)"
    if profile == "llama.cpp" and not model:
        return "reject", NOT_A_MODEL
    open_ = [EITHER[(r, profile)] for r in rules if (r, profile) in EITHER]
    if open_:
        return "either", "; ".join(open_)
    return "accept", ""
