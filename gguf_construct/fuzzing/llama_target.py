"""llama.cpp's model loader as a fuzz target: ``llama_model_load_from_file`` from a libllama shared library.

``gguf-construct fuzz --target llama:/path/to/libllama.so --profile llama.cpp`` runs it in the persistent worker
(the library path travels in ``GGUF_CONSTRUCT_LLAMA_LIB``) over generated *models* (minimal models of every
architecture and labelled breakages of them, :func:`model_samples`) instead of bare containers.  The model is
loaded as llama.cpp's tools load it: CPU only (``n_gpu_layers = 0``), memory-mapped, and vocabulary-only when the
file has no tensors (as the checker's ``vocab`` file kind).  A NULL model is a rejection (its last log line is the
error); an abort (``GGML_ASSERT`` in ``load_hparams``) kills the worker and is reported as a crash.

``llama_model_params`` is passed by value, so its layout is declared here: the one of ``llama.h`` in the llama.cpp
that llama-cpp-python 0.3.36 vendors (the layout the tests were run with).  Another libllama version may lay the
structure out differently: check ``llama.h`` before trusting verdicts from it.
"""

from __future__ import annotations

import ctypes
import functools
import os

__all__ = ["LIB_ENV", "llama_reader", "model_samples"]

LIB_ENV = "GGUF_CONSTRUCT_LLAMA_LIB"

_LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class _ModelParams(ctypes.Structure):
    """``struct llama_model_params`` (llama.h, llama.cpp as vendored by llama-cpp-python 0.3.36)."""

    _fields_ = [
        ("devices", ctypes.c_void_p),
        ("tensor_buft_overrides", ctypes.c_void_p),
        ("n_gpu_layers", ctypes.c_int32),
        ("split_mode", ctypes.c_int),
        ("load_mode", ctypes.c_int),
        ("lazy_mode", ctypes.c_int),
        ("main_gpu", ctypes.c_int32),
        ("tensor_split", ctypes.c_void_p),
        ("progress_callback", ctypes.c_void_p),
        ("progress_callback_user_data", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("vocab_only", ctypes.c_bool),
        ("check_tensors", ctypes.c_bool),
        ("use_extra_bufts", ctypes.c_bool),
        ("no_host", ctypes.c_bool),
        ("no_alloc", ctypes.c_bool),
        ("load_mtp", ctypes.c_bool),
    ]


_messages: list[str] = []


@_LOG
def _log(level: int, text: bytes, user: int) -> None:
    if text:
        _messages.append(text.decode("utf-8", "replace"))
        del _messages[:-50]


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    from .ggml_target import library_from_env

    lib = library_from_env(LIB_ENV, "libllama")
    lib.llama_model_default_params.restype = _ModelParams
    lib.llama_model_default_params.argtypes = []
    lib.llama_model_load_from_file.restype = ctypes.c_void_p
    lib.llama_model_load_from_file.argtypes = [ctypes.c_char_p, _ModelParams]
    lib.llama_model_free.restype = None
    lib.llama_model_free.argtypes = [ctypes.c_void_p]
    lib.llama_log_set.restype = None
    lib.llama_log_set.argtypes = [_LOG, ctypes.c_void_p]
    lib.llama_backend_init.restype = None
    lib.llama_backend_init.argtypes = []
    lib.llama_log_set(_log, None)
    lib.llama_backend_init()
    return lib


def _has_tensors(path: str) -> bool:
    from ..filemodel.gguffile import load

    try:
        return len(load(path).tensors) > 0
    except Exception:  # noqa: BLE001 - an unreadable file is loaded as a model: llama.cpp says why it fails
        return True


def llama_reader(path: str) -> None:
    """Load ``path`` with llama.cpp's model loader; ValueError (with the loader's last error) when it refuses."""
    lib = _library()
    params = lib.llama_model_default_params()
    params.n_gpu_layers = 0
    params.vocab_only = not _has_tensors(path)
    _messages.clear()
    model = lib.llama_model_load_from_file(os.fsencode(path), params)
    if not model:
        errors = [m.strip() for m in _messages if "error" in m.lower() or "failed" in m.lower()]
        raise ValueError(errors[-1] if errors else "llama_model_load_from_file returned NULL")
    lib.llama_model_free(model)
    return None


def model_samples(seed: int):
    """An endless, reproducible stream of ``(data, how)``: minimal models of every architecture (a quarter of
    them as they are) and labelled breakages of them (:mod:`gguf_construct.breaking.model_mutations`)."""
    import random

    from ..breaking.model_mutations import MUTATIONS
    from ..arch.synth import SynthesisError, minimal_model_parts, model_architectures
    from ..breaking.models import build_model_file

    rng = random.Random(seed)
    names = model_architectures()
    cache: dict[str, tuple] = {}
    while True:
        name = rng.choice(names)
        if name not in cache:
            try:
                cache[name] = minimal_model_parts(name)
            except SynthesisError:
                continue
        meta, tensors = cache[name]
        if rng.random() < 0.25:
            yield build_model_file(meta, tensors).to_bytes(), f"{name}:valid"
            continue
        got = rng.choice(MUTATIONS).apply(meta, tensors, rng)
        if got is not None:
            yield build_model_file(got.meta, got.tensors).to_bytes(), f"{name}:{got.kind}"
