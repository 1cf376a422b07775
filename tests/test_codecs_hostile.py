"""IQ encoders on hostile input (NaN, infinities, values whose squares overflow), against ggml itself.

``tests/golden/iq_hostile.npz`` holds, per case, an input row with one such value (at the end of a 32-value
group or in its middle), the importance matrix (empty for none), and what ggml's ``ggml_quantize_chunk`` did
with it: the bytes it wrote, or ``aborts`` when it hit a ``GGML_ASSERT`` (no grid neighbour with an error below
FLT_MAX, a NaN group scale).  Made with a ctypes wrapper around a locally built libggml-base 0.25.3 (the same
one as the other committed golden files).  Where ggml aborts, the encoder must raise ``ValueError``; elsewhere
it must write ggml's bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

from gguf_construct import codecs

from codec_golden import LOCAL_GOLDEN

_PATH = LOCAL_GOLDEN / "iq_hostile.npz"
_DATA = np.load(_PATH) if _PATH.exists() else None
_CASES = sorted({k.rsplit("_", 1)[0] for k in _DATA.files}) if _DATA is not None else []


def test_cases_present():
    assert _DATA is not None and len(_CASES) >= 50
    aborts = sum(bool(_DATA[c + "_aborts"]) for c in _CASES)
    assert 0 < aborts < len(_CASES)  # both outcomes are covered


@pytest.mark.parametrize("case", _CASES)
def test_encoder_does_what_ggml_does(case):
    name = case.split("_", 1)[1]
    x = _DATA[case + "_x"]
    imatrix = _DATA[case + "_imatrix"]
    imatrix = imatrix if imatrix.size else None
    if bool(_DATA[case + "_aborts"]):
        with pytest.raises(ValueError), np.errstate(all="ignore"):
            codecs.quantize(name, x, imatrix=imatrix)
    else:
        with np.errstate(all="ignore"):
            got = codecs.quantize(name, x, imatrix=imatrix)
        assert got == _DATA[case + "_q"].tobytes()
