"""Helpers shared by the compiled IQ kernels."""

from __future__ import annotations

from ._jit import helper


@helper
def signed(v, negative):
    """ggml's ``v * (negative ? -1.f : 1.f)``.  The multiplication leaves a NaN as it is (x86 returns the NaN
    operand), so a NaN is not negated; written out because LLVM turns a multiplication by -1 into a negation."""
    return -v if (negative and v == v) else v
