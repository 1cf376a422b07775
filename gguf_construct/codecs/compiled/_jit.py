"""The one numba entry point of the compiled codecs: the decorators every kernel uses, and where they cache.

Kernels compile on first call (nothing is compiled at import) and are cached on disk (``cache=True``), so a
type costs its compile time once per machine.  The cache goes next to these modules (``__pycache__``) when that
folder is writable; otherwise (a system-wide install) into a user cache folder, :func:`cache_folder`, unless
``NUMBA_CACHE_DIR`` names one already.  That choice applies to these kernels only: numba's setting for other
code in the process is left as it was.

``nogil`` lets the thread pool of :mod:`._run` run chunks of one call side by side.  No ``fastmath``: every
float32 operation rounds as IEEE and as ggml's C does.

While one of these kernels compiles, LLVM's x86 pass that turns conditional moves back into branches is off
(:class:`_KernelCodegen`): the clamps of the quantization searches depend on the data, so those branches
mispredict.  With it on, Q3_K's encoder ran at 0.94x the speed of ggml's C (built by gcc, which keeps the
conditional moves), with it off at 1.55x; the other kernels are unchanged.  The option is process-wide in
LLVM, so it is set for the compile of these kernels only and set back to LLVM's default after; other hosts
than x86 have no such pass and are left alone.

numba checks a cached kernel against its own source file only: after editing a helper module (``_scalar``,
``_search``, ``legacy``'s word readers) delete ``__pycache__/*.nbi`` / ``*.nbc`` here (an installed release
replaces every file, so users are not affected).
"""

from __future__ import annotations

import functools
import os

import llvmlite.binding as _llvm
import numba
from numba.core import config as _numba_config
from numba.core import event as _event

_HERE = os.path.dirname(os.path.abspath(__file__))
CACHE_ENV = "GGUF_CONSTRUCT_CACHE_DIR"


def user_cache_folder() -> str:
    """The per-user folder for compiled kernels: ``$GGUF_CONSTRUCT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/gguf-construct/numba``, else ``~/.cache/gguf-construct/numba``."""
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "gguf-construct", "numba")


def _writable(folder: str) -> bool:
    """``folder`` is (or can be made as) a directory this process may write into."""
    probe = folder
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
    return os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK)


@functools.lru_cache(maxsize=None)
def cache_folder() -> str | None:
    """Where the kernels cache, or None when it is numba's own choice: ``NUMBA_CACHE_DIR`` set by the user, or
    this package's ``__pycache__`` writable.  Otherwise :func:`user_cache_folder` (created, private to the
    user); None too when that cannot be written either (numba then tries its own user-wide folder)."""
    if os.environ.get(CACHE_ENV):
        folder = user_cache_folder()
    elif _numba_config.CACHE_DIR or _writable(os.path.join(_HERE, "__pycache__")):
        return None
    else:
        folder = user_cache_folder()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return folder if _writable(folder) else None


def _numba_decorator(**options):
    """``numba.njit(cache=True, nogil=True, error_model="numpy", **options)`` that caches in
    :func:`cache_folder` (numba picks a function's cache place when it is decorated)."""
    jit = numba.njit(cache=True, nogil=True, error_model="numpy", **options)

    def decorate(fn):
        folder = cache_folder()
        if folder is None:
            return jit(fn)
        saved = _numba_config.CACHE_DIR
        _numba_config.CACHE_DIR = folder
        try:
            return jit(fn)
        finally:
            _numba_config.CACHE_DIR = saved

    return decorate


class _KernelCodegen(_event.Listener):
    """Keeps conditional moves (``-x86-cmov-converter=false``) from the start of the compile of a function of
    this package to its end; compiles of other code, before and after, get LLVM's default.  numba compiles under
    one lock, so the only nesting is a kernel compiling the helpers it calls."""

    _OPTION = "-x86-cmov-converter"

    def __init__(self):
        self.depth = 0

    @staticmethod
    def _ours(event) -> bool:
        fn = getattr(event.data.get("dispatcher"), "py_func", None)
        return getattr(fn, "__module__", "").startswith(__package__ + ".")

    def on_start(self, event):
        if self._ours(event):
            if self.depth == 0:
                _llvm.set_option("", f"{self._OPTION}=false")
            self.depth += 1

    def on_end(self, event):
        if self._ours(event) and self.depth:
            self.depth -= 1
            if self.depth == 0:
                _llvm.set_option("", f"{self._OPTION}=true")


# Only on x86 hosts, where LLVM has the option: an option LLVM does not know ends the process (exit(1)).
if _llvm.get_process_triple().startswith(("x86_64", "i386", "i586", "i686")):
    _event.register("numba:compile", _KernelCodegen())

kernel = _numba_decorator()
#: small helpers (word reads, conversions, a value's code): inlined into the kernel at numba's level
helper = _numba_decorator(inline="always")
#: whole searches called once per group of weights: compiled once as functions of their own (inlining them
#: everywhere made the encoders compile 5-10x slower, for no speed)
routine = _numba_decorator()
