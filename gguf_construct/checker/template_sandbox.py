"""The render oracle of the chat-template scan: jinja2's sandbox, instrumented to *record* every access it refuses
(a private or internal attribute, by attribute, subscript, the attr filter, an attribute path of map/sort/...,
or a ``str.format`` field; an unsafe callable) with the template line it came from, and to go on rendering with a
harmless undefined in its place, so one render reveals every route a context reaches.

Nothing the sandbox refuses is ever executed: the refused value is replaced before it is returned.  Renders are
bounded (output characters, size of ``*`` and ``**`` results, jinja2's range limit); the process limits (CPU,
memory, no environment) are set by :func:`serve`, the loop of a render worker of :mod:`.template_render`.

This module imports nothing from the package: a worker loads it by path, so it starts with jinja2 alone.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jinja2
from jinja2 import ext, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment, modifies_known_mutable

__all__ = ["RecordingSandbox", "render_all", "serve", "trigger_contexts"]

TEMPLATE_FILE = "<template>"


class _Hole(jinja2.ChainableUndefined):
    """What a refused access gives: an undefined that every further attribute, item, call and iteration accepts
    (so the render goes on and reveals more) and that writes nothing.  A private or internal name looked up on it
    is the next hop of a chain and is recorded as refused on ``_Hole``."""

    def __call__(self, *args: Any, **kwargs: Any) -> "_Hole":
        return self

    def __getitem__(self, key: Any) -> "_Hole":
        if _ACTIVE is not None and isinstance(key, str) and (key.startswith("_") or key in _ACTIVE.internal):
            _ACTIVE._record("attribute", self, key)
        return self

    def __getattr__(self, name: str) -> Any:
        if (
            _ACTIVE is not None
            and (name.startswith("_") or name in _ACTIVE.internal)
            and not name.startswith("_undefined")
            and name not in _PROBED
        ):
            _ACTIVE._record("attribute", self, name)
        return super().__getattr__(name)

    def __iter__(self):
        return iter(())


# names Python and markupsafe look up on any value they are given (not a hop the template makes)
_PROBED = frozenset(("__html__", "__html_format__", "__aiter__", "__await__", "__iter__", "__len__", "__index__"))
_ACTIVE = None  # the RecordingSandbox rendering now (a worker renders one template at a time)


class _Lenient(jinja2.ChainableUndefined):
    """A name the context does not define: empty, chainable, callable (a template that tests ``is defined`` still
    sees it undefined), so branches behind optional variables render too."""

    def __call__(self, *args: Any, **kwargs: Any) -> "_Lenient":
        return self


def _block_tags(tags: list) -> type:
    class BlockTags(ext.Extension):
        """The runtimes' own block tags (transformers' generation): a tag and its end tag around a body."""

        def parse(self, parser):
            tag = next(parser.stream)
            body = parser.parse_statements((f"name:end{tag.value}",), drop_needle=True)
            return nodes.Scope(body, lineno=tag.lineno)

    BlockTags.tags = set(tags)
    return BlockTags


class OutputLimit(Exception):
    """A render wrote more than its output limit, or an operator would build more."""


class RecordingSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox that records refused accesses instead of raising, and bounds what a render may
    build.  ``refused`` holds (what, owner type, name, template line) per refusal, in order, at most
    ``max_refusals``; ``mutations`` counts the list/dict/set mutations the immutable sandbox refused (no route:
    not recorded as one)."""

    intercepted_binops = frozenset(("*", "**"))

    def __init__(self, block_tags: list, max_chars: int, max_refusals: int = 64) -> None:
        # optimized=False: no constant folding at compile time (half the code generation, and nothing of the
        # template is evaluated before the render's own limits apply)
        super().__init__(
            extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do", _block_tags(block_tags)],
            undefined=_Lenient,
            optimized=False,
        )
        self.max_chars = max_chars
        self.max_refusals = max_refusals
        self.refused: list = []
        self.mutations = 0
        self.template = None
        self.internal: frozenset = frozenset()

    # -- recording -----------------------------------------------------------------------------------------------
    def _line(self) -> int:
        """The template line being rendered (from the innermost frame of the compiled template)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == TEMPLATE_FILE and self.template is not None:
                return self.template.get_corresponding_lineno(frame.f_lineno)
            frame = frame.f_back
        return 0

    def _record(self, what: str, obj: Any, name: str) -> None:
        if len(self.refused) < self.max_refusals:
            self.refused.append((what, type(obj).__name__, str(name)[:80], self._line()))

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """Refused as by jinja2's sandbox; a refused route is recorded (a refused mutation is only counted)."""
        if not SandboxedEnvironment.is_safe_attribute(self, obj, attr, value):
            self._record("attribute", obj, attr)
            return False
        if modifies_known_mutable(obj, attr):
            self.mutations += 1
            return False
        return True

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        """A harmless hole where the refused value would be."""
        return _Hole(name=attribute)

    def call(__self, __context, __obj, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja2's signature
        """Call ``__obj`` unless the sandbox deems it unsafe (recorded; a hole instead)."""
        if isinstance(__obj, jinja2.Undefined):
            return _Hole()
        if not __self.is_safe_callable(__obj):
            __self._record("callable", __obj, getattr(__obj, "__name__", "?"))
            return _Hole()
        return __context.call(__obj, *args, **kwargs)

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        """``*`` and ``**`` that would build past the output limit stop the render."""
        if operator == "*":
            for seq, k in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(k, int) and len(seq) * k > self.max_chars:
                    raise OutputLimit(f"repetition of {len(seq) * k} items")
        if (
            operator == "**"
            and isinstance(left, int)
            and isinstance(right, int)
            and abs(left) > 1
            and right * abs(left).bit_length() > 4 * self.max_chars
        ):
            raise OutputLimit("power too large")
        return super().call_binop(context, operator, left, right)


def _raise_exception(message: Any = "") -> None:
    raise jinja2.TemplateError(str(message))


def _strftime_now(fmt: Any = "%Y-%m-%d") -> str:
    import datetime  # noqa: PLC0415 - only templates that ask for the date need it

    return datetime.datetime(2026, 1, 2, 3, 4, 5).strftime(str(fmt)[:64])


def trigger_contexts(tree, budget: int, covered: frozenset = frozenset()) -> list:
    """Conversations built from what the template compares its input with: each string constant it compares
    (``m.content == '<phrase>'``, ``role == 'ipython'``, ``'x' in m.content``) as a role and as content, and each
    integer it compares a length or count with as a number of messages and tools (``messages|length > 6``).
    Strings in ``covered`` (the roles the canonical conversations have) and counts below 2 are left out: the
    canonical conversations reach those branches."""
    strings, counts = [], []
    for cmp in tree.find_all(nodes.Compare):
        for node in [cmp.expr, *(op.expr for op in cmp.ops)]:
            for const in [node] if isinstance(node, nodes.Const) else node.find_all(nodes.Const):
                value = const.value
                if isinstance(value, str) and 0 < len(value) <= 256 and value not in strings and value not in covered:
                    strings.append(value)
                elif type(value) is int and 2 <= value <= 64 and value not in counts:
                    counts.append(value)
    out = []
    for s in strings[:budget]:
        out.append(
            {
                "messages": [
                    {"role": "system", "content": s},
                    {"role": s, "content": s},
                    {"role": "user", "content": s},
                    {"role": "assistant", "content": s},
                ],
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": s, "description": s, "parameters": {"type": "object", "properties": {}}},
                    }
                ],
                "add_generation_prompt": True,
                "trigger": s,
            }
        )
    for k in counts[:budget]:
        for n in sorted({k, k + 1}):
            msgs = [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(n)]
            tools = [
                {"type": "function", "function": {"name": f"t{i}", "parameters": {"type": "object", "properties": {}}}}
                for i in range(n)
            ]
            out.append({"messages": msgs, "tools": tools, "add_generation_prompt": True, "trigger": f"count {n}"})
    return out[: 2 * budget]


def _code_lines(template) -> set:
    return {t for t, _ in template.debug_info}


def render_all(text: str, contexts: list, attacks: list, config: dict, trace: bool = False) -> dict:
    """Render ``text`` over each context (canonical, then one per attack string, then the trigger contexts made
    from its own constants); per render the refused accesses, the error that ended it (if any), the characters
    written and whether the output limit stopped it; with ``trace``, the template lines that ran in no render
    (tracing costs about half again as much, so it is asked for only when the static scan needs it)."""
    global _ACTIVE
    env = RecordingSandbox(config["block_tags"], config["output_chars"], config["max_refusals"])
    env.internal = frozenset(config.get("internal", ()))
    _ACTIVE = env
    try:
        tree = env.parse(text)
        template = env.from_string(tree)
    except Exception as exc:  # noqa: BLE001 - a template jinja2 cannot compile is the static scan's business
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "renders": []}
    env.template = template
    code_lines = _code_lines(template)
    jobs = [("canonical", c.get("name", ""), c) for c in contexts]
    jobs += [("attack", a["string"], a["context"]) for a in attacks]
    roles = frozenset(m.get("role") for c in contexts for m in c.get("messages", ()) if isinstance(m, dict))
    jobs += [("trigger", c.pop("trigger"), c) for c in trigger_contexts(tree, config["triggers"], roles)]
    covered: set = set()
    tracer = _LineTracer(covered)
    renders = []
    for kind, label, ctx in jobs:
        env.refused = []
        variables = {**config["globals"], **ctx, "raise_exception": _raise_exception, "strftime_now": _strftime_now}
        error, chars, stopped = None, 0, False
        if trace:
            sys.settrace(tracer)
        try:
            for chunk in template.generate(**variables):
                chars += len(chunk)
                if chars > config["output_chars"]:
                    stopped = True
                    break
        except OutputLimit as exc:
            stopped, error = True, str(exc)
        except RecursionError:
            error = "RecursionError"
        except MemoryError:
            error = "MemoryError"
        except Exception as exc:  # noqa: BLE001 - raise_exception, type errors ...: the render just ends
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        finally:
            sys.settrace(None)
        renders.append(
            {
                "kind": kind,
                "label": label[:200],
                "refused": env.refused,
                "error": error,
                "chars": chars,
                "stopped": stopped,
            }
        )
    if not trace:
        return {"renders": renders}
    lines = {template.get_corresponding_lineno(n) for n in covered}
    return {"renders": renders, "unrendered": sorted(code_lines - lines)}


class _LineTracer:
    """Records the lines of the compiled template that run (a local tracer on its frames only)."""

    def __init__(self, covered: set) -> None:
        self.covered = covered

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename != TEMPLATE_FILE:
            return None
        self.covered.add(frame.f_lineno)
        return self._local

    def _local(self, frame, event, arg):
        if event == "line":
            self.covered.add(frame.f_lineno)
        return self._local


def _limit(memory: int) -> None:
    import resource  # noqa: PLC0415 - POSIX only; the pool runs no worker elsewhere

    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _cpu_budget(seconds: float) -> None:
    """Let this job use ``seconds`` more CPU time (SIGXCPU ends the worker past it)."""
    import resource  # noqa: PLC0415
    import time  # noqa: PLC0415

    used = time.process_time()
    soft = int(used + seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def serve() -> None:
    """The worker loop: a first line of configuration (limits, globals, block tags), then one JSON request per
    line (``text``, ``contexts``, ``attacks``) answered by one JSON line of :func:`render_all`'s result."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    config = json.loads(stdin.readline())
    _limit(config["memory_bytes"])
    sys.setrecursionlimit(config.get("recursion", 400))
    stdout.write(b'{"ready": true}\n')
    stdout.flush()
    for line in stdin:
        request = json.loads(line)
        _cpu_budget(config["cpu_seconds"])
        try:
            result = render_all(
                request["text"], request["contexts"], request["attacks"], config, request.get("trace", False)
            )
        except MemoryError:
            result = {"error": "MemoryError", "renders": []}
        except Exception as exc:  # noqa: BLE001 - the worker answers every request
            result = {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "renders": []}
        stdout.write(json.dumps(result, default=str).encode() + b"\n")
        stdout.flush()
