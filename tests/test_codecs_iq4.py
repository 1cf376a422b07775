"""IQ4_NL and IQ4_XS codecs (module ``iq4``): bit-exactness against ggml and basic properties.

Ground truth is ggml's own C code:

* ``../shared/golden/<id>_<name>.npz``: the project-wide reference vectors (skipped when absent);
* ``tests/golden/20_iq4_nl.npz``, ``23_iq4_xs.npz``: small cases committed with the repository (6 rows x 256
  values: normal, heavy-tailed with zeros, exact grid ties, NaN/inf among tiny values, zero/tiny/huge blocks,
  signalling NaNs; an importance matrix with zeros; random raw blocks, some with NaN/inf/subnormal fp16 scales),
  made with a ctypes wrapper around libggml-base 0.25.3 (``ggml_quantize_chunk``, ``dequantize_row_*``).
"""

from __future__ import annotations


import numpy as np

from gguf_construct import codecs
from gguf_construct.format import spec
from gguf_construct.codecs import iq4


def _best_index_c(x: float, values) -> int:
    """ggml's best_index_int8, literally (float32 arithmetic)."""
    x = np.float32(x)
    v = [np.float32(a) for a in values]
    if x <= v[0]:
        return 0
    if x >= v[-1]:
        return len(v) - 1
    ml, mu = 0, len(v) - 1
    while mu - ml > 1:
        mav = (ml + mu) // 2
        if x < v[mav]:
            mu = mav
        else:
            ml = mav
    return mu - 1 if (x - v[mu - 1]) < (v[mu] - x) else mu


def test_best_index_thresholds_match_c_search():
    values = spec.table("kvalues_iq4nl")
    mids = (values[:-1].astype(np.float32) + values[1:].astype(np.float32)) / np.float32(2)
    probes = [np.float32(np.nan), np.float32(np.inf), np.float32(-np.inf), np.float32(0), np.float32(-0.0)]
    for m in list(mids) + list(values.astype(np.float32)) + list(iq4._THR):
        m = np.float32(m)
        probes += [m, np.nextafter(m, np.float32(-1e9)), np.nextafter(m, np.float32(1e9))]
    rng = np.random.default_rng(0)
    probes += list(rng.uniform(-140, 130, 2000).astype(np.float32))
    probes = np.array(probes, dtype=np.float32)
    got = iq4.best_index_iq4nl(probes)
    want = np.array([_best_index_c(p, values) for p in probes])
    assert np.array_equal(got, want)


def test_iq4_xs_scales_layout():
    """Sub-block scale ib: low 4 bits in scales_l[ib // 2] (nibble ib % 2), high 2 bits at scales_h bits 2*ib."""
    blocks = np.zeros(1, dtype=codecs.block_dtype("IQ4_XS"))
    blocks["d"] = 1.0
    ls = np.arange(8) * 9 % 64  # 0, 9, 18, ... all different
    blocks["scales_l"] = (ls[0::2] & 15) | ((ls[1::2] & 15) << 4)
    blocks["scales_h"] = sum(int(v >> 4) << (2 * i) for i, v in enumerate(ls))
    blocks["qs"] = 0x88  # code 8 (value 1) everywhere
    y = codecs.dequantize("IQ4_XS", blocks.tobytes()).reshape(8, 32)
    assert np.array_equal(y, np.repeat((ls - 32).astype(np.float32)[:, None], 32, axis=1))
