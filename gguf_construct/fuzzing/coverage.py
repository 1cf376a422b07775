"""Lines, regions and branches covered per source file, measured by llvm-cov from a corpus replay.

The fuzz targets carry llvm-cov's coverage mapping (``-fprofile-instr-generate -fcoverage-mapping``, see
``fuzz/build_targets.sh``).  :func:`measure` replays a set of inputs once through a target (libFuzzer's
``-runs=0`` over a folder), merges the raw profile with ``llvm-profdata`` and summarises it per file with
``llvm-cov export``; :func:`unreached` lists the functions of the focus files no replay reached.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable

__all__ = ["tool", "measure", "measure_over_time", "summarise", "unreached", "profile", "reach"]

_METRICS = ("lines", "regions", "branches", "functions")


def tool(name: str) -> str | None:
    """``llvm-profdata`` / ``llvm-cov`` (the versioned one of the build's LLVM first), or None."""
    version = os.environ.get("LLVM_VERSION", "14")
    for cand in (f"/usr/lib/llvm-{version}/bin/{name}", f"{name}-{version}", name):
        found = shutil.which(cand) or (cand if os.path.exists(cand) else None)
        if found:
            return found
    return None


def profile(exe: Path, inputs: Iterable[Path], env: dict, out: Path) -> Path | None:
    """Replay ``inputs`` once through ``exe`` and write the merged profile to ``out`` (None when nothing ran)."""
    with tempfile.TemporaryDirectory(prefix="gguf-cov-") as tmp:
        folder = Path(tmp) / "inputs"
        folder.mkdir()
        for i, p in enumerate(inputs):
            try:
                os.link(p, folder / f"{i:06d}")
            except OSError:
                shutil.copy(p, folder / f"{i:06d}")
        run_env = dict(env, LLVM_PROFILE_FILE=str(Path(tmp) / "replay-%p.profraw"))
        files = sorted(folder.iterdir())
        for i in range(0, len(files), 100):
            _replay(exe, files[i : i + 100], run_env)
        raws = sorted(Path(tmp).glob("replay-*.profraw"))
        if not raws:
            return None
        subprocess.run([tool("llvm-profdata"), "merge", "-sparse", *map(str, raws), "-o", str(out)], check=True)
    return out


def _replay(exe: Path, files: list[Path], env: dict) -> None:
    """Run ``files`` once each; a process that dies (a crash or a timeout writes no profile) is replayed one
    file at a time, so only the input that kills it is lost."""

    def run(chunk: list[Path]) -> int:
        return subprocess.run(
            [
                str(exe),
                "-timeout=10",
                "-rss_limit_mb=4096",
                f"-artifact_prefix={tempfile.gettempdir()}/gguf-replay-",
                *map(str, chunk),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: os.nice(10),
        ).returncode

    if run(files) != 0 and len(files) > 1:
        for f in files:
            run([f])


def summarise(exe: Path, profdata: Path, focus: Iterable[str]) -> dict:
    """``{file: {lines|regions|branches|functions: [covered, count]}}`` for the focus files, plus ``total``
    (all files of llama.cpp/ggml in the binary)."""
    proc = subprocess.run(
        [tool("llvm-cov"), "export", "-summary-only", f"-instr-profile={profdata}", str(exe)],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(proc.stdout)["data"][0]
    out: dict[str, dict] = {}
    total = {m: [0, 0] for m in _METRICS}
    for f in data["files"]:
        name = f["filename"].split("/vendor/llama.cpp/", 1)[-1]
        if "/fuzz/harness/" in f["filename"]:
            continue
        s = {m: [f["summary"][m]["covered"], f["summary"][m]["count"]] for m in _METRICS}
        for m in _METRICS:
            total[m][0] += s[m][0]
            total[m][1] += s[m][1]
        if name in focus:
            out[name] = s
    out["total"] = total
    return out


def measure(exe: Path, inputs: Iterable[Path], env: dict, focus: Iterable[str], keep: Path | None = None) -> dict:
    """Replay ``inputs`` and summarise the coverage of the focus files (see :func:`summarise`); ``keep`` keeps
    the merged profile there (for the union over arms)."""
    with tempfile.TemporaryDirectory(prefix="gguf-prof-") as tmp:
        out = keep or Path(tmp) / "merged.profdata"
        got = profile(exe, inputs, env, out)
        return summarise(exe, got, tuple(focus)) if got else {}


def measure_over_time(
    exe: Path,
    seeds: Iterable[Path],
    found: Iterable[tuple[float, Path]],
    env: dict,
    focus: Iterable[str],
    points: Iterable[float],
) -> list[dict]:
    """Coverage per source file over a campaign's CPU time: at each of ``points`` (CPU seconds), the seeds and
    every corpus entry ``found`` (``(cpu s when it appeared, path)``) by then.  Each step replays only the
    entries new since the last one and merges its profile into the running one.  Returns
    ``[{"cpu_s": t, "files": {file: {regions|lines|branches|functions: [covered, count]}}}]``."""
    focus = tuple(focus)
    found = sorted(found, key=lambda x: x[0])
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gguf-cov-time-") as tmp:
        merged: Path | None = None
        batch = list(seeds)
        i = 0
        for n, t in enumerate(sorted(points)):
            while i < len(found) and found[i][0] <= t:
                batch.append(found[i][1])
                i += 1
            if batch:
                step = profile(exe, batch, env, Path(tmp) / f"step-{n}.profdata")
                if step is not None:
                    if merged is None:
                        merged = step
                    else:
                        union = Path(tmp) / f"merged-{n}.profdata"
                        subprocess.run(
                            [tool("llvm-profdata"), "merge", "-sparse", str(merged), str(step), "-o", str(union)],
                            check=True,
                        )
                        merged = union
            batch = []
            files = summarise(exe, merged, focus) if merged is not None else {}
            out.append({"cpu_s": round(t, 1), "files": files})
    return out


def _export_union(exe: Path, profiles: Iterable[Path]) -> dict:
    """llvm-cov's export (JSON) of ``exe`` over the union of the raw ``profiles``."""
    with tempfile.TemporaryDirectory(prefix="gguf-union-") as tmp:
        union = Path(tmp) / "union.profdata"
        subprocess.run([tool("llvm-profdata"), "merge", "-sparse", *map(str, profiles), "-o", str(union)], check=True)
        proc = subprocess.run(
            [tool("llvm-cov"), "export", f"-instr-profile={union}", str(exe)],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(proc.stdout)


def unreached(exe: Path, profiles: Iterable[Path], focus: Iterable[str]) -> dict[str, list[str]]:
    """The functions of each focus file that no profile reached (the union of ``profiles``)."""
    exported = _export_union(exe, profiles)
    focus = tuple(focus)
    out: dict[str, list[str]] = {f: [] for f in focus}
    for fn in exported["data"][0]["functions"]:
        files = [p.split("/vendor/llama.cpp/", 1)[-1] for p in fn["filenames"]]
        if fn["count"] == 0 and files and files[0] in focus:
            out[files[0]].append(fn["name"])
    return {f: sorted(set(v)) for f, v in out.items()}


def _demangled(names: list[str]) -> list[str]:
    """C++ names demangled by llvm-cxxfilt (unchanged where it is missing)."""
    filt = tool("llvm-cxxfilt")
    if not filt or not names:
        return names
    got = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return got if len(got) == len(names) else names


def reach(exe: Path, profiles: Iterable[Path], focus: Iterable[str], off_path: Iterable[str]) -> dict:
    """Where the regions of the focus files stand in the union of ``profiles``, each region counted once (over
    template instantiations): ``covered``; ``not taken`` (in a function that ran); ``off the load path`` (in a
    function never called whose name contains one of ``off_path``: code a load does not run, such as weight
    loading or detokenising); ``uncalled`` (any other function never called).  Per file and in all, with the
    functions holding most uncovered regions."""
    focus = tuple(focus)
    off = tuple(off_path)
    exported = _export_union(exe, profiles)
    functions = exported["data"][0]["functions"]
    names = _demangled([fn["name"].split(":")[-1] for fn in functions])
    regions: dict[tuple, list] = {}
    for fn, name in zip(functions, names):
        files = [p.split("/vendor/llama.cpp/", 1)[-1] for p in fn["filenames"]]
        for r in fn["regions"]:
            if r[7] != 0 or files[r[5]] not in focus:  # code regions of the focus files only
                continue
            e = regions.setdefault((files[r[5]], r[0], r[1], r[2], r[3]), [0, False, name.split("(")[0]])
            e[0] = max(e[0], r[4])
            e[1] = e[1] or fn["count"] > 0
    cats = ("covered", "not taken", "off the load path", "uncalled")
    per: dict[str, dict[str, int]] = {f: dict.fromkeys(cats, 0) for f in focus + ("all",)}
    by_function: dict[tuple[str, str, str], int] = {}
    for (f, *_), (count, called, name) in regions.items():
        if count:
            cat = "covered"
        elif called:
            cat = "not taken"
        else:
            cat = "off the load path" if any(o in name for o in off) else "uncalled"
        per[f][cat] += 1
        per["all"][cat] += 1
        if not count:
            k = (cat, f, name)
            by_function[k] = by_function.get(k, 0) + 1
    top = sorted(by_function.items(), key=lambda kv: -kv[1])[:25]
    return {
        "files": per,
        "top": [{"kind": k[0], "file": k[1], "function": k[2], "regions": n} for k, n in top],
        "off_path": list(off),
    }
