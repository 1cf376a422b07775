"""The one numba entry point of the compiled codecs: the decorator every kernel uses.

Kernels compile on first call (nothing is compiled at import) and are cached on disk (``cache=True``), so a
type costs its compile time once per machine.  ``nogil`` lets the thread pool of :mod:`._run` run chunks of
one call side by side.  No ``fastmath``: every float32 operation rounds as IEEE and as ggml's C does.

numba checks a cached kernel against its own source file only: after editing a helper module (``_scalar``,
``_search``, ``legacy``'s word readers) delete ``__pycache__/*.nbi`` / ``*.nbc`` here (an installed release
replaces every file, so users are not affected).
"""

from __future__ import annotations

import numba

kernel = numba.njit(cache=True, nogil=True, error_model="numpy")
#: small helpers (word reads, conversions, a value's code): inlined into the kernel at numba's level
helper = numba.njit(cache=True, nogil=True, inline="always", error_model="numpy")
#: whole searches called once per group of weights: compiled once as functions of their own (inlining them
#: everywhere made the encoders compile 5-10x slower, for no speed)
routine = numba.njit(cache=True, nogil=True, error_model="numpy")
