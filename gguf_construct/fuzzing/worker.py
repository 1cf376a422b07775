"""The persistent worker that runs a ``python:module:function`` target, one file per request.

Started by :class:`gguf_construct.fuzzing.targets.PythonTarget` as
``python -m gguf_construct.fuzzing.worker MODULE:FUNCTION MEMORY_BYTES``.  Reads one path per line on stdin and
answers each with one JSON line (after one ``{"status": "ready"}`` line once the target is imported) on its
original stdout: ``{"status": "accept", "summary": {...}}``, ``{"status": "reject", "error": "..."}`` (the
function raised ValueError or a subclass) or ``{"status": "crash", "error": "..."}`` (any other exception).
The target's own prints go to stderr.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import traceback
from typing import Any

from ..format.stringlist import StringList

__all__ = ["load_callable", "jsonable", "main", "TARGET_PATH_ENV"]

TARGET_PATH_ENV = "GGUF_FUZZ_TARGET_PATH"


def load_callable(spec: str):
    """``module:function`` (dots allowed in both) to the callable.  A module found nowhere on the path is looked
    for in the folder ``$GGUF_FUZZ_TARGET_PATH`` names (the folder the fuzzer was started in)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"python target must be module:function, got {spec!r}")
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        folder = os.environ.get(TARGET_PATH_ENV)
        if not folder or exc.name != module.split(".")[0] or folder in sys.path:
            raise
        sys.path.append(folder)
        obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def jsonable(v: Any) -> Any:
    """Plain JSON data from what a target returned (numpy values, bytes, NaN and infinities included)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, StringList)):
        return [jsonable(x) for x in v]
    if hasattr(v, "tolist"):
        return jsonable(v.tolist())
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if hasattr(v, "name") and hasattr(v, "value") and isinstance(getattr(v, "value"), int):  # enums
        return v.name
    return v


def _limit_memory(nbytes: int) -> None:
    if nbytes > 0:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def main(argv: list[str] | None = None) -> int:
    """Serve requests until stdin closes."""
    argv = sys.argv[1:] if argv is None else argv
    spec, memory = argv[0], int(argv[1]) if len(argv) > 1 else 0
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the target's prints must not corrupt the protocol
    sys.stdout = sys.stderr
    try:
        fn = load_callable(spec)
    except Exception as exc:  # noqa: BLE001 - said to the parent in one line, which reports it as a usage error
        proto.write(json.dumps({"status": "unusable", "error": f"{type(exc).__name__}: {exc}"[:500]}) + "\n")
        return 2
    _limit_memory(memory)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    proto.write(json.dumps({"status": "ready"}) + "\n")  # imports done: timeouts count from here
    for line in sys.stdin:
        path = line.rstrip("\n")
        try:
            result = fn(path)
            answer = {"status": "accept", "summary": jsonable(result) if result is not None else None}
        except ValueError as exc:
            answer = {"status": "reject", "error": f"{type(exc).__name__}: {exc}"[:2000]}
        except BaseException as exc:  # noqa: BLE001 - everything else is a crash of the target
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            tb = traceback.format_exc(limit=-4)
            answer = {"status": "crash", "error": f"{type(exc).__name__}: {exc}"[:500], "traceback": tb[-3000:]}
        try:
            text = json.dumps(answer, allow_nan=False)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"status": "crash", "error": f"unserializable result: {exc}"})
        proto.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
