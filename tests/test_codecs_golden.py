"""Every codec against ggml's own output, for every tensor type that has golden vectors.

The committed cases in tests/golden/ run everywhere; the larger set in ../shared/golden runs when present.
"""

import pytest

from gguf_construct.format import spec

from codec_golden import LOCAL_GOLDEN, SHARED_GOLDEN, check_golden

CURRENT = [t for t in spec.tensor_types() if t.is_current]
GGML_CODECS = [t for t in CURRENT if t.kind != "integer" and t.name != "F64"]  # ggml has no codec for these


def golden_file(folder, t):
    return folder / f"{t.id:02d}_{t.name.lower().replace('_k', '_K')}.npz"


@pytest.mark.parametrize("t", GGML_CODECS, ids=lambda t: t.name)
def test_committed_golden_vectors(t):
    path = golden_file(LOCAL_GOLDEN, t)
    if not path.is_file():
        path = LOCAL_GOLDEN / f"{t.id:02d}_{t.name.lower()}.npz"
    assert path.is_file(), f"no committed golden case for {t.name}"
    assert check_golden(path, t.name)


@pytest.mark.parametrize("t", GGML_CODECS, ids=lambda t: t.name)
def test_shared_golden_vectors(t):
    path = golden_file(SHARED_GOLDEN, t)
    if not path.is_file():
        pytest.skip("../shared/golden is not present")
    checked = check_golden(path, t.name)
    assert checked
