"""Ask llama.cpp's own loader whether it loads GGUF files (the oracle of the model layer's differential test).

Run with a Python that has ``llama-cpp-python`` installed (its build ships libllama)::

    python tools/llama_oracle.py FILE...        # one JSON line per file: {"file", "loads", "error"}

Each file is loaded in a fresh subprocess (the loader may abort) with ``n_gpu_layers=0`` and, for files without
tensors, ``vocab_only``; the verdict is the return value of ``llama_model_load_from_file`` and the error is the
loader's last "error loading model" log line.  Set ``LLAMA_CPP_LIB_PATH`` to use another libllama build.
"""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = r"""
import ctypes, sys, json
import llama_cpp
log = []
@llama_cpp.llama_log_callback
def _cb(level, text, user):
    log.append(text.decode("utf-8", "replace"))
llama_cpp.llama_log_set(_cb, ctypes.c_void_p())
path, vocab_only = sys.argv[1], sys.argv[2] == "1"
params = llama_cpp.llama_model_default_params()
params.n_gpu_layers = 0
params.vocab_only = vocab_only
m = llama_cpp.llama_model_load_from_file(path.encode(), params)
err = [l.strip() for l in log if "error" in l.lower() or "failed" in l.lower()]
print(json.dumps({"loads": bool(m), "error": err[-3:] if not m else []}))
"""


def verdict(path: str, vocab_only: bool = False, timeout: float = 60.0, python: str | None = None) -> dict:
    """llama.cpp's verdict on one file: ``{"loads": bool, "error": [log lines], "crashed": bool}``; ``python`` is
    an interpreter with llama-cpp-python installed (default: this one)."""
    try:
        r = subprocess.run([python or sys.executable, "-c", _CHILD, path, "1" if vocab_only else "0"],
                           capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"loads": False, "error": ["timeout"], "crashed": True}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"loads": False, "error": (r.stderr.strip().splitlines() or ["crash"])[-3:], "crashed": True}
    out = json.loads(lines[-1])
    out["crashed"] = False
    return out


def main(argv: list[str]) -> int:
    """Print one JSON verdict per file named on the command line."""
    vocab_only = "--vocab-only" in argv
    for path in (a for a in argv if a != "--vocab-only"):
        print(json.dumps({"file": path, **verdict(path, vocab_only)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
