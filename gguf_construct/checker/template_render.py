"""Render workers for the chat-template oracle: a small pool of long-lived child processes, each running
:func:`.template_sandbox.serve`, reused across templates and files so a sweep of thousands of files pays for a
process once.

Each worker starts with no environment (``python -I``, ``env={}``), loads the sandbox module by path (jinja2 and
nothing of the package), limits its own address space (RLIMIT_AS) and, per template, its CPU time (RLIMIT_CPU:
SIGXCPU ends it); the pool waits a bounded wall time and reads a bounded answer, and kills and replaces a worker
that passes either.  A render itself is bounded in output characters and in what ``*`` / ``**`` build.  Limits
are those of spec/templates.yaml ``render``.  ``GGUF_CONSTRUCT_NO_RENDER=1`` (``check --no-render``) turns
rendering off: the scan is then parse-only.
"""

from __future__ import annotations

import atexit
import contextlib
from concurrent.futures import Future, ThreadPoolExecutor
import functools
import json
import os
import queue
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from ..format import spec as _spec
from . import template_contexts as _contexts

__all__ = [
    "RenderPool",
    "RenderFailure",
    "render",
    "rendering",
    "rendering_enabled",
    "set_rendering",
    "jinja2_is_safe",
    "default_pool",
    "render_soon",
    "NO_RENDER_ENV",
]

NO_RENDER_ENV = "GGUF_CONSTRUCT_NO_RENDER"
_SANDBOX = Path(__file__).with_name("template_sandbox.py")
_BOOT = (
    "import importlib.util, sys; s = importlib.util.spec_from_file_location('template_sandbox', sys.argv[1]); "
    "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); m.serve()"
)


class RenderFailure(Exception):
    """A worker did not answer within its limits (``reason``: timeout, cpu, memory, output, died)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def set_rendering(enabled: bool) -> None:
    """Turn the render oracle on or off for this process and the processes it starts (``--no-render``)."""
    if enabled:
        os.environ.pop(NO_RENDER_ENV, None)
    else:
        os.environ[NO_RENDER_ENV] = "1"


@contextlib.contextmanager
def rendering(enabled: bool) -> Iterator[None]:
    """Rendering on or off for the duration of a block (then as it was)."""
    previous = os.environ.get(NO_RENDER_ENV)
    set_rendering(enabled)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(NO_RENDER_ENV, None)
        else:
            os.environ[NO_RENDER_ENV] = previous


def rendering_enabled() -> bool:
    """Rendering is on unless ``GGUF_CONSTRUCT_NO_RENDER`` is set, jinja2 is too old or the OS lacks rlimits."""
    return os.environ.get(NO_RENDER_ENV, "") in ("", "0") and jinja2_is_safe() and os.name == "posix"


@functools.lru_cache(maxsize=1)
def jinja2_is_safe() -> bool:
    """The installed jinja2 is at least ``min_jinja2`` (older ones have known sandbox escapes)."""
    import jinja2  # noqa: PLC0415 - only files with templates get here

    def parts(v: str) -> tuple:
        return tuple(int(p) for p in v.split(".")[:3] if p.isdigit())

    return parts(jinja2.__version__) >= parts(_contexts.settings()["min_jinja2"])


class _Worker:
    """One child process speaking JSON lines."""

    def __init__(self, config: dict) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, str(_SANDBOX)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            close_fds=True,
        )
        self.buffer = b""
        self.send(config)
        self.receive(config["wall_seconds"] + 20, 1024)  # the ready line (a cold start imports jinja2)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, wall: float, most: int) -> dict:
        """One answer line, within ``wall`` seconds and ``most`` bytes."""
        deadline = time.monotonic() + wall
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RenderFailure("timeout")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait(timeout=5)
                    raise RenderFailure({-24: "cpu", -9: "killed"}.get(code, "memory" if code == 1 else "died"))
                self.buffer += chunk
                if len(self.buffer) > most:
                    raise RenderFailure("output")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


class RenderPool:
    """``size`` render workers, started on first use and replaced when one fails; thread-safe."""

    def __init__(self, size: int | None = None, **overrides) -> None:
        cfg = _contexts.settings()
        self.size = size or cfg["workers"]
        self.config = {
            k: cfg[k]
            for k in (
                "cpu_seconds",
                "wall_seconds",
                "memory_bytes",
                "output_chars",
                "response_bytes",
                "max_refusals",
                "recursion",
                "triggers",
                "globals",
            )
        }
        facts = _spec.load_yaml("templates.yaml")
        self.config["block_tags"] = facts["dialect"]["block_tags"]
        self.config["internal"] = facts["names"]["internal_attributes"]
        self.config.update(overrides)
        self.idle: queue.Queue = queue.Queue()
        self.started = 0
        self.lock = threading.Lock()
        self.failures: dict[str, int] = {}

    def _take(self) -> _Worker | None:
        with self.lock:
            if self.idle.empty() and self.started < self.size:
                self.started += 1
                return None  # the caller starts one
        return self.idle.get()

    def render(self, text: str, contexts: list, attacks: list, trace: bool = False) -> dict:
        """The renders of ``text`` (see :func:`.template_sandbox.render_all`); :class:`RenderFailure` when the
        worker passed a limit (it is then replaced)."""
        worker = self._take()
        try:
            if worker is None:
                worker = _Worker(self.config)
            worker.send({"text": text, "contexts": contexts, "attacks": attacks, "trace": trace})
            result = worker.receive(self.config["wall_seconds"], self.config["response_bytes"])
        except (RenderFailure, OSError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, RenderFailure) else "died"
            self.failures[reason] = self.failures.get(reason, 0) + 1
            if worker is not None:
                worker.kill()
            with self.lock:
                self.started -= 1
            raise RenderFailure(reason) from None
        self.idle.put(worker)
        return result

    def close(self) -> None:
        """Stop every idle worker."""
        while not self.idle.empty():
            self.idle.get().kill()
            with self.lock:
                self.started -= 1


_POOL: RenderPool | None = None
_POOL_PID = 0


def default_pool() -> RenderPool:
    """The process's pool (a forked child gets its own)."""
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid():
        _POOL, _POOL_PID = RenderPool(), os.getpid()
        atexit.register(_POOL.close)
    return _POOL


@functools.lru_cache(maxsize=256)
def render(text: str, trace: bool = False) -> dict:
    """The renders of one template over the canonical and attack contexts of spec/templates.yaml (cached by text:
    the same template recurs across the quantisations of a model); with ``trace`` also the template lines no
    render ran; ``{"failure": reason}`` when its worker passed a limit."""
    try:
        return default_pool().render(text, _contexts.canonical_contexts(), _contexts.attack_contexts(), trace)
    except RenderFailure as exc:
        return {"failure": exc.reason, "renders": []}


_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_PID = 0


def render_soon(text: str) -> Future:
    """:func:`render` started in a thread (the worker renders while the caller runs the static scan)."""
    global _EXECUTOR, _EXECUTOR_PID
    if _EXECUTOR is None or _EXECUTOR_PID != os.getpid():
        _EXECUTOR_PID = os.getpid()
        _EXECUTOR = ThreadPoolExecutor(max_workers=default_pool().size, thread_name_prefix="template-render")
    return _EXECUTOR.submit(render, text)
