"""Shared fixtures: locations of the optional shared material (../shared beside the project root)."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "vocab"
GOLDEN = SHARED / "golden"

# "ci" (default): small and derandomized, so a run is fast and repeatable; "dev": the same sizes with fresh random
# examples each run; "long": many more (HYPOTHESIS_PROFILE=dev|long pytest)
settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def corpus_files():
    """The real GGUF files of ../shared/corpus, or [] when absent."""
    return sorted(CORPUS.glob("*.gguf")) if CORPUS.is_dir() else []


@pytest.fixture
def corpus():
    files = corpus_files()
    if not files:
        pytest.skip("../shared/corpus is not present")
    return files
