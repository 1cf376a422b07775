"""Targets: the GGUF readers under test, each run isolated in a subprocess with a timeout and a memory limit.

* ``gguf-py`` — the official ``gguf`` package's ``GGUFReader`` (:func:`gguf_py_reader`), in a persistent worker;
* ``cmd:TEMPLATE`` — any program; ``{file}`` is replaced by the path (appended when absent).  Exit status 0
  accepts, 1–127 rejects, a signal (or 128+N from a shell) is a crash; JSON on stdout in the documented shape
  is compared with our values;
* ``python:module:function`` — a callable taking a path and returning the shape (accept) or raising ValueError
  (reject; any other exception is a crash), in a persistent worker restarted after a crash or a hang.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .worker import TARGET_PATH_ENV

__all__ = ["Outcome", "Target", "TargetError", "CmdTarget", "PythonTarget", "make_target", "gguf_py_reader"]

DEFAULT_MEMORY = 2 << 30
STARTUP_TIMEOUT = 120.0  # importing a target (numpy, ...) on a loaded machine


@dataclass
class Outcome:
    """What a target did with one file."""

    status: str  # accept | reject | crash | hang
    summary: dict | None = None
    detail: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


class TargetError(OSError):
    """The reader under test cannot be run at all (it does not import or start)."""


class Target:
    """A reader under test."""

    name = "target"

    def start(self) -> None:
        """Get ready to run (a target with a worker starts it here); raises :class:`TargetError`."""

    def run(self, path: str) -> Outcome:  # pragma: no cover - interface
        """Run the reader on ``path``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the worker process, if any."""


def _limits(memory: int):
    def apply():  # runs in the child between fork and exec
        os.setsid()
        if memory > 0:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


class CmdTarget(Target):
    """Any program: ``{file}`` in the template is replaced by the path of the file to read."""

    def __init__(self, template: str, timeout: float = 10.0, memory: int = DEFAULT_MEMORY):
        self.name = f"cmd:{template}"
        self.template = template
        self.timeout = timeout
        self.memory = memory

    def argv(self, path: str) -> list[str]:
        """The command line for ``path``."""
        parts = shlex.split(self.template)
        if not any("{file}" in p for p in parts):
            parts.append("{file}")
        return [p.replace("{file}", path) for p in parts]

    def run(self, path: str) -> Outcome:
        """Run the program on ``path``; classify by exit status, parse JSON from stdout when present."""
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            self.argv(path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_limits(self.memory),
        )
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return Outcome("hang", detail=f"no answer after {self.timeout:g} s", seconds=self.timeout)
        dt = time.perf_counter() - t0
        rc = proc.returncode
        tail = err.decode("utf-8", "replace").strip()[-1500:]
        if rc < 0 or rc >= 128:
            sig = -rc if rc < 0 else rc - 128
            try:
                signame = signal.Signals(sig).name
            except ValueError:
                signame = f"signal {sig}"
            return Outcome("crash", detail=f"{signame} (exit {rc}) {tail}".strip(), seconds=dt)
        if rc != 0:
            return Outcome("reject", detail=tail, seconds=dt)
        summary = None
        text = out.decode("utf-8", "surrogateescape").strip()
        if text.startswith("{"):
            try:
                summary = json.loads(text)
            except ValueError:
                summary = None
        return Outcome("accept", summary=summary if isinstance(summary, dict) else None, seconds=dt)


class PythonTarget(Target):
    """A ``module:function`` run in a persistent worker subprocess (restarted after a crash or a hang)."""

    def __init__(
        self,
        spec: str,
        timeout: float = 10.0,
        memory: int = DEFAULT_MEMORY,
        name: str | None = None,
        env: dict[str, str] | None = None,
    ):
        self.name = name or f"python:{spec}"
        self.spec = spec
        self.extra_env = dict(env or {})
        self.timeout = timeout
        self.memory = memory
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def _start(self) -> None:
        env = dict(os.environ, **self.extra_env)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        # the current folder is looked in for the target's module only, when it is not found elsewhere: first on
        # the path (as ``python -m`` puts it; PYTHONSAFEPATH, Python 3.11+, stops that), a stray file there named
        # like a module the interpreter imports later (nt.py, ...) would break every import after it
        env["PYTHONSAFEPATH"] = "1"
        env[TARGET_PATH_ENV] = os.getcwd()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gguf_construct.fuzzing.worker", self.spec, str(self.memory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("GGUF_FUZZ_DEBUG") else subprocess.DEVNULL,
            env=env,
            preexec_fn=_limits(0),
            bufsize=0,
        )
        self.restarts += 1
        line = self._readline(time.monotonic() + STARTUP_TIMEOUT)
        try:
            hello = json.loads(line) if line else {}
        except ValueError:
            hello = {}
        if hello.get("status") != "ready":
            self.close()
            why = hello.get("error") or ("it did not answer (its error output is shown with GGUF_FUZZ_DEBUG=1)")
            raise TargetError(f"python target {self.spec} cannot be used: {why}")

    def start(self) -> None:
        """Start the worker now (it imports the target), so that a target that cannot run is a usage error."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()

    def close(self) -> None:
        """Stop the worker."""
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None

    def _readline(self, deadline: float) -> bytes | None:
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            buf += chunk
            if buf.endswith(b"\n"):
                return buf

    def run(self, path: str) -> Outcome:
        """Send ``path`` to the worker and wait for its answer (at most the timeout)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write((path + "\n").encode())
        except BrokenPipeError:
            self.close()
            self._start()
            self.proc.stdin.write((path + "\n").encode())
        line = self._readline(time.monotonic() + self.timeout)
        dt = time.perf_counter() - t0
        if line is None:
            self.close()
            return Outcome("hang", detail=f"no answer after {self.timeout:g} s", seconds=self.timeout)
        if line == b"":
            rc = self.proc.wait()
            self.proc = None
            what = signal.Signals(-rc).name if rc < 0 and -rc in signal.Signals._value2member_map_ else f"exit {rc}"
            return Outcome("crash", detail=f"worker died: {what}", seconds=dt)
        answer = json.loads(line)
        status = answer.get("status")
        if status == "accept":
            return Outcome("accept", summary=answer.get("summary"), seconds=dt)
        return Outcome(
            status, detail=answer.get("error", ""), seconds=dt, extra={"traceback": answer.get("traceback", "")}
        )


def make_target(spec: str, *, timeout: float = 10.0, memory: int = DEFAULT_MEMORY) -> Target:
    """A target from its command-line form: ``gguf-py``, ``ggml:LIBRARY``, ``llama:LIBRARY``, ``cmd:TEMPLATE`` or
    ``python:module:function``."""
    if spec == "gguf-py":
        try:
            import gguf  # noqa: F401
        except ImportError as exc:
            raise ValueError("target gguf-py needs the official gguf package (pip install gguf)") from exc
        return PythonTarget("gguf_construct.fuzzing.targets:gguf_py_reader", timeout, memory, name="gguf-py")
    if spec.startswith("ggml:"):
        from .ggml_target import LIB_ENV

        lib = os.path.abspath(spec[5:])
        if not os.path.isfile(lib):
            raise ValueError(f"target ggml: no library at {lib} (give the path of libggml-base)")
        return PythonTarget(
            "gguf_construct.fuzzing.ggml_target:ggml_reader", timeout, memory, name="ggml", env={LIB_ENV: lib}
        )
    if spec.startswith("llama:"):
        from .llama_target import LIB_ENV as LLAMA_ENV

        lib = os.path.abspath(spec[6:])
        if not os.path.isfile(lib):
            raise ValueError(f"target llama: no library at {lib} (give the path of libllama)")
        target = PythonTarget(
            "gguf_construct.fuzzing.llama_target:llama_reader", timeout, memory, name="llama", env={LLAMA_ENV: lib}
        )
        target.models = True  # fed whole models (valid and broken) rather than bare containers
        return target
    if spec.startswith("cmd:"):
        return CmdTarget(spec[4:], timeout, memory)
    if spec.startswith("python:"):
        return PythonTarget(spec[7:], timeout, memory)
    raise ValueError(
        f"unknown target {spec!r}: use gguf-py, ggml:LIBRARY, llama:LIBRARY, cmd:TEMPLATE or python:module:function"
    )


# -- the gguf-py adapter ---------------------------------------------------------------------------------------
def _gguf_py_value(field, parts_index: int = 0) -> dict:
    from gguf import GGUFValueType

    types = field.types
    main = types[0]
    if main == GGUFValueType.ARRAY:
        sub = types[-1] if len(types) > 1 else None
        entry: dict[str, Any] = {"type": "ARRAY"}
        if sub is None:  # gguf-py keeps no element type for an empty array
            entry["value"] = []
            return entry
        entry["item_type"] = sub.name
        if len(types) > 2 or sub == GGUFValueType.ARRAY:
            entry["item_type"] = "ARRAY"  # gguf-py flattens nested arrays; their values are not comparable
            return entry
        if sub == GGUFValueType.STRING:
            entry["value"] = [bytes(field.parts[i]).decode("utf-8", "surrogateescape") for i in field.data]
        else:
            entry["value"] = [v for i in field.data for v in field.parts[i].tolist()]
        entry["length"] = len(entry["value"])
        return entry
    if main == GGUFValueType.STRING:
        return {"type": "STRING", "value": bytes(field.parts[-1]).decode("utf-8", "surrogateescape")}
    return {"type": main.name, "value": field.parts[-1].tolist()[0]}


def gguf_py_reader(path: str) -> dict:
    """Read ``path`` with gguf-py's ``GGUFReader`` and return its keys and tensors in the documented shape."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(path, "r")
    except KeyError as exc:  # gguf-py reports duplicate keys and tensor names with KeyError: a rejection
        if "Duplicate" in str(exc) or "duplicate" in str(exc):
            raise ValueError(str(exc)) from exc
        raise
    metadata = []
    for name, f in reader.fields.items():
        if name.startswith("GGUF.") and f.offset < 24:
            continue  # gguf-py's pseudo-fields for the header
        metadata.append({"key": name, **_gguf_py_value(f)})
    tensors = []
    for t in reader.tensors:
        tensors.append(
            {
                "name": t.name,
                "type": t.tensor_type.name,
                "shape": [int(d) for d in t.shape],
                "offset": int(t.field.parts[-1][0]),
                "nbytes": int(t.n_bytes),
            }
        )
    return {"metadata": metadata, "tensors": tensors}
