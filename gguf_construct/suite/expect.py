"""What a reader should do with each case, per profile: accept, reject, or either where the spec leaves it to
the reader.

The verdict is derived from the rules a case was built to break and the catalog's severity of each rule under
the profile (spec/rules.yaml), never from running a checker: a case is rejected when one of its rules is an
error under the profile and not left open; it is ``either`` when one of its rules is a choice the spec leaves to readers
(:data:`EITHER`, each with why: an erratum of spec/errata.yaml where gguf.md and the reference readers part,
or a limit every reader must pick); a file that is not a whole model is rejected by llama.cpp's loader.
"""

from __future__ import annotations

from ..rulebook.catalog import catalog

__all__ = ["PROFILES", "EITHER", "outcome"]

PROFILES = ("spec", "ggml", "llama.cpp")

# (rule, profile) -> why a reader may accept or reject a file that breaks only this rule
EITHER: dict[tuple[str, str], str] = {
    ("HDR-ENDIAN", "spec"): (
        "gguf.md defines big-endian files but does not oblige a reader to read both byte orders; readers on "
        "little-endian hosts (ggml's own) refuse them"
    ),
    ("HDR-V1-UNSUPPORTED", "spec"): (
        "version 1 is part of gguf.md's history, but ggml and gguf-py no longer read it; a reader may refuse it"
    ),
    ("TI-TYPE-NEW", "spec"): (
        "the tensor type is newer than gguf.md's ggml_type enum: a reader that knows it reads it, an older one "
        "cannot size its data and refuses the file"
    ),
    ("TI-TYPE-NEW", "ggml"): (
        "the tensor type is newer than some ggml releases: the ggml that knows it reads it, an older one refuses"
    ),
    ("ARR-TOO-DEEP", "spec"): (
        "gguf.md sets no limit on array nesting; every reader needs one (recursion or memory), and where it lies "
        "is the reader's choice"
    ),
    ("ALIGN-POW2", "spec"): (
        "gguf.md allows any multiple of 8, but ggml and gguf-py require a power of two (erratum alignment-power-of-two)"
    ),
    ("DATA-OVERLAP", "spec"): (
        "gguf.md does not say that two tensors may not share bytes; ggml refuses it because it lays the data out "
        "itself (erratum tensor-data-overlap)"
    ),
    ("TPL-ESCAPE", "spec"): (
        "the container is well-formed: the chat template is dangerous only to a program that renders it, which "
        "a GGUF reader does not; a reader may refuse the file or read it"
    ),
}

NOT_A_MODEL = (
    "not a whole model: llama.cpp's loader needs every tensor of the architecture, and this container "
    "case carries only a few"
)


def outcome(rules, profile: str, *, model: bool = False) -> tuple[str, str]:
    """``(accept|reject|either, why)`` for a case breaking ``rules`` under ``profile``."""
    cat = catalog()
    errors = [r for r in rules if cat[r].severity(profile) == "error" and (r, profile) not in EITHER]
    if errors:
        return "reject", "breaks " + ", ".join(errors) + f" (errors under the {profile} profile)"
    if profile == "llama.cpp" and not model:
        return "reject", NOT_A_MODEL
    open_ = [EITHER[(r, profile)] for r in rules if (r, profile) in EITHER]
    if open_:
        return "either", "; ".join(open_)
    return "accept", ""
