"""Coverage-guided campaigns against ggml's GGUF reader and llama.cpp's loader, three arms from the same seeds.

The targets are the libFuzzer binaries ``fuzz/build_targets.sh`` builds (ASan + UBSan, libFuzzer's edge
counters, llvm-cov's coverage mapping).  An *arm* is one way of fuzzing a target:

* ``spec`` -- the ``*_spec`` binary: libFuzzer driven by the spec-aware mutator (:mod:`.specmutator`);
* ``bytes`` -- the plain binary: libFuzzer's own byte-level mutations, every read path of the harness;
* ``ossfuzz`` -- the plain binary in OSS-Fuzz's way (``GGUF_HARNESS_MODE=ossfuzz``): one read path, the
  architecture forced to ``llama``, raw bytes.

:func:`run_arm` runs one arm for a budget of **CPU** seconds of the fuzzer process (read from ``/proc``, so the
other work on a shared machine does not change what a budget buys), restarts libFuzzer after a sanitizer crash
(the crash is recorded), and records libFuzzer's edge count over CPU time and when each corpus entry appeared.
An ``abort()`` is recorded by the harness itself (input and stack) and the campaign goes on.
:mod:`.coverage` measures lines, regions and branches per source file by replaying the corpus; :func:`judge`
replays it for the C reader's verdicts and holds every accepted input against our checker (the oracle).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

__all__ = [
    "Target",
    "TARGETS",
    "ARMS",
    "RunResult",
    "run_arm",
    "judge",
    "signature",
    "parse_report",
    "DEFAULT_BIN",
    "runtime_env",
    "screen",
]

DEFAULT_BIN = Path(os.environ.get("GGUF_COV_FUZZ_BIN", "/tmp/gguf-cov-fuzz/bin"))
ARMS = ("spec", "bytes", "ossfuzz")


@dataclass(frozen=True)
class Target:
    """A fuzz target: its binary's name, the checker profile of its oracle, the source files its figures are
    about, the longest input, the verdict of its harness that the oracle compares with, and the functions of the
    focus files its harness never runs whatever the input (``off_path``: name fragments)."""

    name: str
    binary: str
    profile: str
    focus: tuple[str, ...]
    max_len: int
    verdict: str
    doc: str
    off_path: tuple[str, ...] = ()


TARGETS = {
    "ggml": Target(
        "ggml",
        "ggml_reader",
        "ggml",
        ("ggml/src/gguf.cpp",),
        1 << 20,
        "buffer.alloc",
        "ggml's GGUF reader (gguf.cpp): from memory and from a file, no_alloc true and false",
    ),
    "llama": Target(
        "llama",
        "llama_loader",
        "llama.cpp",
        ("src/llama-model-loader.cpp", "src/llama-model.cpp", "src/llama-vocab.cpp"),
        1 << 20,
        "no_alloc",
        "llama.cpp's model loader: vocabulary only, then the whole model with no_alloc",
        # a load never builds a KV cache, reads weights (no_alloc), splits over devices, detokenises or
        # tokenises beyond the newline probe, nor validates overrides outside the OSS-Fuzz arm
        (
            "create_memory",
            "load_all_data",
            "load_data_range",
            "get_split_state",
            "make_gpu_buft_list",
            "llama_model_get_tok_embd",
            "detokenize",
            "token_to_piece",
            "_session::",
            "tokenizer_st_partition",
            "::tokenize",
            "validate_override",
            "apply_chat_template",
        ),
    ),
}

_STATS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/")


def binary(target: Target, arm: str, bin_dir: Path = DEFAULT_BIN) -> Path:
    """The binary an arm runs (the ``*_spec`` one carries the spec-aware mutator)."""
    return Path(bin_dir) / (target.binary + ("_spec" if arm == "spec" else ""))


def runtime_env(arm: str, extra: dict | None = None) -> dict:
    """The environment of a target process: sanitizer options, the harness mode of the arm, and for the
    spec-aware mutator the Python path of this checkout and of the running interpreter's packages."""
    import sysconfig

    env = dict(os.environ)
    # an allocation over 2 GiB returns NULL (what ggml then does is the finding); libFuzzer's own limits are
    # above it, so they only catch what the sanitizer lets through
    env["ASAN_OPTIONS"] = (
        "detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=2048:symbolize=1:abort_on_error=0"
    )
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env["GGML_NO_BACKTRACE"] = "1"
    env.setdefault("LLVM_PROFILE_FILE", "/dev/null")
    env.pop("GGUF_HARNESS_MODE", None)
    if arm == "ossfuzz":
        env["GGUF_HARNESS_MODE"] = "ossfuzz"
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env.update(extra or {})
    return env


@dataclass
class RunResult:
    """One arm's run: the edge count over CPU time, when each corpus entry appeared, crashes, aborts."""

    target: str
    arm: str
    run: int
    budget: float
    cpu: float = 0.0
    execs: int = 0
    restarts: int = 0
    series: list[tuple[float, int, int, int]] = field(default_factory=list)  # (cpu s, cov, ft, corpus)
    first_seen: dict[str, float] = field(default_factory=dict)  # corpus file -> cpu s
    crashes: list[dict] = field(default_factory=list)
    aborts: list[dict] = field(default_factory=list)
    mutator: dict = field(default_factory=dict)
    work: str = ""

    def to_json(self) -> dict:
        """The record (without the corpus timestamps, which stay in the work folder)."""
        return {
            "target": self.target,
            "arm": self.arm,
            "run": self.run,
            "budget_cpu_s": self.budget,
            "cpu_s": round(self.cpu, 1),
            "execs": self.execs,
            "restarts": self.restarts,
            "edges": self.series[-1][1] if self.series else 0,
            "features": self.series[-1][2] if self.series else 0,
            "corpus": self.series[-1][3] if self.series else 0,
            "series": [[round(c, 1), e, f, n] for c, e, f, n in _thin(self.series, 120)],
            "crashes": compact(self.crashes),
            "aborts": compact(self.aborts),
            "mutator": self.mutator,
        }


def compact(reports: list[dict]) -> list[dict]:
    """Reports deduplicated by stack signature: one entry per signature with how many times it came, the first
    one's message, frames (12) and input, and the messages' variants (the values UBSan names differ)."""
    out: dict[str, dict] = {}
    for r in reports:
        e = out.get(r["signature"])
        if e is None:
            e = out[r["signature"]] = {
                "signature": r["signature"],
                "kind": r["kind"],
                "message": r.get("message", ""),
                "frames": r.get("frames", [])[:12],
                "count": 0,
                "input": r.get("artifact") or r.get("input"),
                "cpu_s": r.get("cpu_s"),
            }
        e["count"] += r.get("count", 1)
    return sorted(out.values(), key=lambda e: -e["count"])


def _thin(series: list, n: int) -> list:
    if len(series) <= n:
        return series
    step = len(series) / n
    out = [series[int(i * step)] for i in range(n)]
    return out + [series[-1]] if out[-1] is not series[-1] else out


STALL_SECONDS = 300.0  # wall seconds without one CPU tick after which a fuzzer process is taken to be stuck
MAX_STALLS = 3  # stalls after which a run ends


def _cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            parts = fh.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_arm(
    target: Target,
    arm: str,
    seeds: Path,
    work: Path,
    budget: float,
    *,
    run: int = 0,
    bin_dir: Path = DEFAULT_BIN,
    seed: int = 1,
    log=None,
) -> RunResult:
    """Fuzz ``target`` with ``arm`` from ``seeds`` for ``budget`` CPU seconds; corpus, artifacts and aborts go
    to ``work`` (made afresh)."""
    if work.exists():
        shutil.rmtree(work)
    corpus, artifacts, aborts = work / "corpus", work / "artifacts", work / "aborts"
    for d in (corpus, artifacts, aborts):
        d.mkdir(parents=True)
    for f in sorted(Path(seeds).iterdir()):
        if f.is_file() and f.stat().st_size <= target.max_len:
            shutil.copy(f, corpus / f.name)
    initial = {p.name for p in corpus.iterdir()}
    result = RunResult(target.name, arm, run, budget, work=str(work))
    env = runtime_env(arm, {"GGUF_HARNESS_ABORT_DIR": str(aborts), "GGUF_MUTATOR_STATS": str(work / "mutator.json")})
    exe = binary(target, arm, bin_dir)
    while result.cpu < budget:
        cmd = [
            str(exe),
            str(corpus),
            f"-max_len={target.max_len}",
            "-timeout=10",
            "-rss_limit_mb=4096",
            "-malloc_limit_mb=4096",
            f"-seed={seed * 1000 + result.restarts + 1}",
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
            "-reload=0",
            "-print_pcs=0",
        ]
        proc = subprocess.Popen(
            cmd,
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            errors="replace",
            preexec_fn=lambda: os.nice(10),
        )
        tail: list[str] = []
        base = result.cpu
        last = [0.0]

        def read() -> None:
            for line in proc.stderr:
                tail.append(line)
                del tail[:-400]
                m = _STATS.match(line)
                if m:
                    now = _cpu_seconds(proc.pid)
                    last[0] = now if now is not None else last[0]
                    result.series.append((base + last[0], int(m.group(3)), int(m.group(4)), int(m.group(5))))
                    result.execs = max(result.execs, int(m.group(1)))
                elif line.startswith("stat::number_of_executed_units:"):
                    result.execs += int(line.split(":")[-1])

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        stopped = stalled = False
        stopped_at = first_stop = 0.0
        moved_at, moved_cpu = time.monotonic(), -1.0
        while proc.poll() is None:
            time.sleep(0.5)
            now = _cpu_seconds(proc.pid)
            if now is not None:
                last[0] = now
                if now > moved_cpu:
                    moved_at, moved_cpu = time.monotonic(), now
            if time.monotonic() - moved_at > STALL_SECONDS and not stalled:
                # no CPU second in STALL_SECONDS of wall time: the fuzzer is deadlocked (seen: libFuzzer asleep
                # on a futex for an hour), and its budget, counted in CPU time, would never be reached
                stalled = True
                proc.kill()
            for p in corpus.iterdir():
                if p.name not in result.first_seen and p.name not in initial:
                    result.first_seen[p.name] = base + last[0]
            if base + last[0] >= budget:
                # libFuzzer exits on SIGINT, but the *_spec targets sometimes lose it (seen in 2 of 4 spec-arm
                # runs: the process fuzzed on for a minute): ask again after 5 s, then kill it (its corpus is on
                # disk already; the figures at the budget come from the corpus entries' CPU times)
                if not stopped or time.monotonic() - stopped_at > 5:
                    proc.send_signal(signal.SIGINT if not stopped or time.monotonic() - first_stop < 10 else 9)
                    stopped_at = time.monotonic()
                    if not stopped:
                        first_stop = stopped_at
                    stopped = True
        reader.join(timeout=10)
        result.cpu = base + last[0]
        if log:
            log(f"{target.name}/{arm} run {run}: {result.cpu:.0f}/{budget:.0f} CPU s, exit {proc.returncode}")
        if stopped or result.cpu >= budget:
            break
        if stalled:
            result.crashes.append(
                {
                    "kind": "stall",
                    "summary": f"no CPU progress for {STALL_SECONDS:.0f} s of wall time: the fuzzer was killed",
                    "artifact": None,
                    "cpu_s": round(result.cpu, 1),
                }
            )
            result.restarts += 1
            if sum(c.get("kind") == "stall" for c in result.crashes) >= MAX_STALLS:
                break  # a target that keeps deadlocking: the run ends short of its budget, and says so
            continue
        if proc.returncode not in (0, None):
            crash = parse_report("".join(tail))
            crash["artifact"] = next(
                (str(p) for p in sorted(artifacts.iterdir(), key=os.path.getmtime, reverse=True)), None
            )
            crash["cpu_s"] = round(result.cpu, 1)
            result.crashes.append(crash)
            result.restarts += 1
            if result.restarts > 50:
                break
    for p in sorted(aborts.glob("*.txt")):
        rec = parse_report(p.read_text(errors="replace"))
        rec["kind"] = "abort"
        rec["input"] = str(p.with_suffix(".gguf"))
        result.aborts.append(rec)
    if (work / "mutator.json").exists():
        import json

        result.mutator = json.loads((work / "mutator.json").read_text() or "{}")
    return result


def screen(exe: Path, files: list[Path], env: dict, chunk: int = 100) -> list[Path]:
    """The files that kill ``exe`` when replayed (a sanitizer report, a signal, a timeout): each chunk is run
    once, a chunk that dies file by file.  An ``abort()`` does not count (the harness records it and goes on)."""
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"gguf-screen-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    run_env = dict(env, GGUF_HARNESS_ABORT_DIR=str(scratch))

    def dies(group: list[Path]) -> bool:
        return (
            subprocess.run(
                [str(exe), "-timeout=10", "-rss_limit_mb=4096", f"-artifact_prefix={scratch}/", *map(str, group)],
                env=run_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=lambda: os.nice(10),
            ).returncode
            != 0
        )

    bad = []
    for i in range(0, len(files), chunk):
        group = files[i : i + chunk]
        if dies(group):
            bad += [f for f in group if dies([f])]
    shutil.rmtree(scratch, ignore_errors=True)
    return bad


# -- reports and signatures ------------------------------------------------------------------------------------------
_FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.+?) (/\S+?):(\d+)(?::\d+)?\s*$")
_SKIP = (
    "__wrap_abort",
    "__sanitizer",
    "__asan",
    "__ubsan",
    "fuzzer::",
    "LLVMFuzzerTestOneInput",
    "ggml_abort",
    "ggml_print_backtrace",
    "harness_",
    "abort",
    "__cxa",
    "std::",
    "__gnu_cxx",
    "libc_start",
)


def parse_report(text: str) -> dict:
    """The kind of a sanitizer or abort report and the stack: ``{kind, message, frames, signature}``; the
    signature is the first three frames in llama.cpp or ggml (function and file:line)."""
    kind, message = "crash", ""
    ended = False  # past the crash marker: a campaign's log tail holds earlier inputs' assert lines before it
    for line in text.splitlines():
        if "ERROR: AddressSanitizer:" in line:
            kind, message = "asan", line.split("AddressSanitizer:", 1)[1].strip()
            break
        if "runtime error:" in line:
            kind, message = "ubsan", line.split("runtime error:", 1)[1].strip()
            break
        if "GGUF_HARNESS: abort()" in line:
            kind = "abort"
        elif "libFuzzer: deadly signal" in line and kind == "crash":
            kind, ended = "signal", True
        elif "ERROR: libFuzzer: timeout" in line:
            kind, message, ended = "timeout", "timeout", True
        elif "out-of-memory" in line or "malloc(" in line and "exceeds limit" in line:
            kind, message, ended = "oom", line.strip(), True
        # the last assert line before the marker is this input's (a C assert prints "Assertion ... failed")
        marks = ("GGML_ASSERT", "GGML_ABORT", "error:", "Assertion")
        if not ended and kind not in ("timeout", "oom") and any(m in line for m in marks):
            message = _short(line.strip())[:300]
    frames = []
    for line in text.splitlines():
        m = _FRAME.match(line)
        if m:
            fn, path, ln = _function(m.group(2)), m.group(3), m.group(4)
            frames.append(f"{fn} {_short(path)}:{ln}")
    return {"kind": kind, "message": message, "frames": frames[:30], "signature": signature(frames)}


def _short(path: str) -> str:
    for mark in ("/vendor/llama.cpp/", "/fuzz/harness/"):
        if mark in path:
            return path.split(mark, 1)[1]
    return path


def _function(text: str) -> str:
    """A frame's function without its parameters (``a::b<c>(int, char)`` -> ``a::b<c>``)."""
    depth, out = 0, []
    for ch in text:
        if ch == "(" and depth == 0 and out:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    return "".join(out).strip()


def signature(frames: Iterable[str]) -> str:
    """The first three frames inside llama.cpp or ggml, without the harness and sanitizer frames."""
    own = [
        f
        for f in frames
        if not any(f.startswith(s) or f" {s}" in f[: len(s) + 1] for s in _SKIP) and ("src/" in f or "include/" in f)
    ]
    return " <- ".join(f.rsplit(" ", 1)[0] + "@" + f.rsplit("/", 1)[-1] for f in own[:3]) or "(no frame)"


# -- the oracle --------------------------------------------------------------------------------------------------------
_RUNNING = re.compile(r"^Running: (.*)$")
_VERDICT = re.compile(r"^GGUF_VERDICT (\S+) (accept|reject)$")


def verdicts(target: Target, arm: str, files: list[Path], bin_dir: Path = DEFAULT_BIN) -> dict[str, dict[str, bool]]:
    """The harness's verdict on each file, per read path: ``{path: {read path: accepted}}``."""
    out: dict[str, dict[str, bool]] = {}
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"gguf-verdict-aborts-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    env = runtime_env(arm, {"GGUF_HARNESS_VERDICT": "1", "GGUF_HARNESS_ABORT_DIR": str(scratch)})
    for i in range(0, len(files), 200):
        chunk = files[i : i + 200]
        proc = subprocess.run(
            [
                str(binary(target, "bytes", bin_dir)),
                "-timeout=10",
                "-rss_limit_mb=4096",
                f"-artifact_prefix={scratch}/",
                *map(str, chunk),
            ],
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            preexec_fn=lambda: os.nice(10),
        )
        current = None
        for line in proc.stderr.splitlines():
            m = _RUNNING.match(line)
            if m:
                current = m.group(1)
                out[current] = {}
                continue
            m = _VERDICT.match(line)
            if m and current:
                out[current][m.group(1)] = m.group(2) == "accept"
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def judge(target: Target, arm: str, files: list[Path], bin_dir: Path = DEFAULT_BIN) -> dict:
    """The oracle over ``files``: every file the C reader accepts is checked by our checker under the target's
    profile; a file it rejects while the checker finds no error is recorded too, and read paths of one harness
    that disagree with each other.  Disagreements are grouped by class and the checker's error rules."""
    from ..checker import check_buffer

    groups: dict[tuple, dict] = {}
    counts = {"files": 0, "accepted": 0, "rejected": 0}
    for path, seen in verdicts(target, arm, files, bin_dir).items():
        if not seen:
            continue
        counts["files"] += 1
        name = target.verdict if target.verdict in seen else next(iter(seen))
        if target.name == "llama" and arm != "ossfuzz" and not _has_tensors(path):
            name = "vocab_only"
        accepted = seen.get(name, False)
        counts["accepted" if accepted else "rejected"] += 1
        data = Path(path).read_bytes()
        report = check_buffer(data, profile=target.profile)
        rules = tuple(sorted({f.rule for f in report.errors()}))
        klass = None
        if accepted and not report.valid:
            klass = "false_accept"
        elif not accepted and report.valid and arm != "ossfuzz":
            klass = "false_reject"
        for klass_, first, second in _path_pairs(seen):
            g = groups.setdefault(
                (klass_, (first, second), rules),
                {
                    "class": klass_,
                    "rules": list(rules),
                    "paths": f"{first} accepts, {second} rejects",
                    "count": 0,
                    "example": path,
                },
            )
            g["count"] += 1
        if klass:
            g = groups.setdefault(
                (klass, rules), {"class": klass, "rules": list(rules), "count": 0, "example": path, "size": len(data)}
            )
            g["count"] += 1
            if len(data) < g["size"]:
                g["example"], g["size"] = path, len(data)
    return {"counts": counts, "disagreements": sorted(groups.values(), key=lambda g: (g["class"], -g["count"]))}


def _path_pairs(seen: dict[str, bool]):
    """Read paths of one harness that disagree: ``read_paths_disagree`` for the same input read from memory and
    from a file (the same no_alloc), ``no_alloc_accepts_more`` for no_alloc true against false (expected where
    the data section is not read)."""
    for mode in ("no_alloc", "alloc"):
        a, b = seen.get(f"buffer.{mode}"), seen.get(f"file.{mode}")
        if a is not None and b is not None and a != b:
            yield ("read_paths_disagree",) + (
                (f"buffer.{mode}", f"file.{mode}") if a else (f"file.{mode}", f"buffer.{mode}")
            )
    for where in ("buffer", "file"):
        a, b = seen.get(f"{where}.no_alloc"), seen.get(f"{where}.alloc")
        if a is not None and b is not None and a != b:
            yield (
                ("no_alloc_accepts_more", f"{where}.no_alloc", f"{where}.alloc")
                if a
                else ("read_paths_disagree", f"{where}.alloc", f"{where}.no_alloc")
            )
    a, b = seen.get("vocab_only"), seen.get("no_alloc")
    if a is not None and b is not None and b and not a:
        yield ("read_paths_disagree", "no_alloc", "vocab_only")


def _has_tensors(path: str) -> bool:
    from ..rulebook import read_head

    try:
        return bool(read_head(Path(path).read_bytes()).tensors)
    except Exception:  # noqa: BLE001
        return True


def log_stderr(text: str) -> None:
    """Progress on stderr."""
    print(text, file=sys.stderr, flush=True)
