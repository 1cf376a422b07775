"""The page fuzzing.md: coverage-guided campaigns against ggml's GGUF reader and llama.cpp's loader, rendered
from the recorded campaigns ``fuzz/campaigns/*.json`` (written by ``fuzz/campaign.py run``), and its plots
(``pictures/fuzzing-<target>.svg``: libFuzzer's edge count over CPU time, every run of every arm;
``pictures/fuzzing-<target>-files.svg``: regions covered per focus file over CPU time, medians per arm, where
the record holds llvm-cov measurements over time)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from ...format import spec as _spec
from ..context import Ctx, Page, Section
from ..markdown import code, esc, intro, table

__all__ = ["PAGE", "records", "build_record", "plots", "plot_name", "files_plot_name", "over_time"]

ARM_TEXT = {
    "spec": "spec-aware mutator",
    "bytes": "libFuzzer's byte mutations",
    "ossfuzz": "OSS-Fuzz's way (raw bytes, one read path, architecture forced to llama)",
}
COLOURS = {"spec": "#1b7837", "bytes": "#2166ac", "ossfuzz": "#b2182b"}
_WRITER = (
    "gguf_set_",
    "gguf_write",
    "gguf_add_",
    "gguf_remove",
    "gguf_init_empty",
    "gguf_get_buf",
    "gguf_writer",
    "gguf_set",
    "gguf_buf",
    "gguf_type_name",
    "gguf_get_meta_data",
)


def _folder() -> Path | None:
    folder = _spec.spec_dir().parent / "fuzz" / "campaigns"
    return folder if folder.is_dir() else None


def records() -> list[dict]:
    """The recorded campaigns, in target order (ggml first)."""
    folder = _folder()
    if folder is None:
        return []
    out = []
    for p in sorted(folder.glob("*.json")):
        data = json.loads(p.read_text())
        if "runs" in data:
            out.append(data)
    return sorted(out, key=lambda d: (d["target"] != "ggml", d["target"]))


def build_record() -> dict | None:
    """fuzz/campaigns/build.json: how long the build of the targets took here."""
    folder = _folder()
    if folder is None or not (folder / "build.json").is_file():
        return None
    return json.loads((folder / "build.json").read_text())


def plot_name(target: str) -> str:
    """The file name of a target's plot in the pictures folder."""
    return f"fuzzing-{target}.svg"


def files_plot_name(target: str) -> str:
    """The file name of a target's per-file coverage-over-time plot in the pictures folder."""
    return f"fuzzing-{target}-files.svg"


def over_time(rec: dict) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """``{arm: {file: [(cpu s, median regions covered)]}}`` from the runs' ``coverage_over_time`` (llvm-cov on
    the seeds plus the corpus entries found by each point); the key ``focus`` sums the focus files."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for arm, rs in _arms(rec).items():
        rs = [r for r in rs if r.get("coverage_over_time")]
        if not rs:
            continue
        n = min(len(r["coverage_over_time"]) for r in rs)
        per: dict[str, list[tuple[float, float]]] = {}
        for f in list(rec["focus"]) + ["focus"]:
            pts = []
            for i in range(n):
                vals = []
                for r in rs:
                    files = r["coverage_over_time"][i]["files"]
                    if f == "focus":
                        vals.append(sum(files.get(g, {}).get("regions", [0, 0])[0] for g in rec["focus"]))
                    else:
                        vals.append(files.get(f, {}).get("regions", [0, 0])[0])
                pts.append((rs[0]["coverage_over_time"][i]["cpu_s"], _median(vals)))
            per[f] = pts
        out[arm] = per
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0


def _coverage(run: dict) -> dict:
    """The run's coverage per file at its budget: the last point of ``coverage_over_time`` (the corpus entries
    found within the budget's CPU seconds) when recorded, else the final corpus's (a fuzzer that overran its
    budget before it stopped counts a little more)."""
    over = run.get("coverage_over_time")
    return over[-1]["files"] if over else run.get("coverage", {})


def _edges(run: dict, budget: float) -> int:
    """libFuzzer's edge count at the budget (the last sample within it)."""
    within = [p[1] for p in run.get("series", []) if p[0] <= budget]
    return within[-1] if within else run["edges"]


def _focus(run: dict, focus: list[str], metric: str) -> int:
    return sum(_coverage(run).get(f, {}).get(metric, [0, 0])[0] for f in focus)


def _arms(rec: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {a: [] for a in rec["arms"]}
    for r in rec["runs"]:
        out.setdefault(r["arm"], []).append(r)
    return out


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _sec_summary(rec: dict) -> str:
    arms = _arms(rec)
    focus = rec["focus"]
    runs = min((len(v) for v in arms.values() if v), default=0)
    out = [
        f"Target: {esc(rec['doc'])}. {runs} run(s) per arm of {rec['budget_cpu_s']:.0f} CPU seconds each "
        f"(CPU time of the fuzzer process), {rec['seeds']} shared seeds"
        + (f" (files up to {rec['max_seed_bytes']} bytes)" if rec.get("max_seed_bytes") else "")
        + f", run on {esc(rec['started'][:10])}."
        + (f" {esc(rec['note'])}." if rec.get("note") else "")
        + "\n"
    ]
    rows = []
    med: dict[str, dict[str, float]] = {}
    for arm, rs in arms.items():
        if not rs:
            continue
        m = {
            "edges": _median([_edges(r, rec["budget_cpu_s"]) for r in rs]),
            "regions": _median([_focus(r, focus, "regions") for r in rs]),
            "lines": _median([_focus(r, focus, "lines") for r in rs]),
            "branches": _median([_focus(r, focus, "branches") for r in rs]),
            "execs": _median([r["execs"] for r in rs]),
        }
        med[arm] = m
        crashes = {c["signature"] for r in rs for c in r["crashes"]}
        aborts = {c["signature"] for r in rs for c in r["aborts"]}
        rows.append(
            [
                esc(ARM_TEXT.get(arm, arm)),
                str(len(rs)),
                f"{m['edges']:.0f}",
                f"{m['regions']:.0f}",
                f"{m['lines']:.0f}",
                f"{m['branches']:.0f}",
                f"{m['execs']:.0f}",
                f"{len(crashes)} / {len(aborts)}",
            ]
        )
    out.append(
        table(
            [
                "arm",
                "runs",
                "edges (libFuzzer, median)",
                "regions in focus files",
                "lines in focus files",
                "branches in focus files",
                "executions",
                "distinct crashes / aborts",
            ],
            rows,
        )
    )
    if "spec" in med:
        parts = []
        for other in ("bytes", "ossfuzz"):
            if other in med:
                parts.append(
                    f"against {esc(ARM_TEXT[other])}: edges {_ratio(med['spec']['edges'], med[other]['edges'])}"
                    f", focus regions {_ratio(med['spec']['regions'], med[other]['regions'])}"
                    f", focus branches {_ratio(med['spec']['branches'], med[other]['branches'])}"
                )
        out.append("\nThe spec-aware arm, medians: " + "; ".join(parts) + ".\n")
    out.append(
        f"\nFocus files: {', '.join(code(f) for f in focus)}. Per file (medians, covered / total; coverage and "
        "edges are taken at the budget: a fuzzer that overran it before it stopped is not counted past it):\n"
    )
    rows = []
    for f in focus:
        row = [code(f)]
        for arm, rs in arms.items():
            if rs:
                cov = [_coverage(r).get(f, {}) for r in rs]
                tot = next((c["regions"][1] for c in cov if c), 0)
                row.append(
                    f"{_median([c.get('regions', [0])[0] for c in cov]):.0f} / {tot} regions, "
                    f"{_median([c.get('lines', [0])[0] for c in cov]):.0f} lines"
                )
        rows.append(row)
    out.append(table(["file"] + [esc(a) for a, rs in arms.items() if rs], rows))
    out.append(f"\n![edges over CPU time]({ctx_pictures()}/{plot_name(rec['target'])})\n")
    got = over_time(rec)
    if got:
        out.append(
            "\nRegions covered in the focus files over CPU time (llvm-cov on the seeds plus the corpus entries "
            "each run had found by then; medians over the runs; the first column is the seeds alone):\n"
        )
        rows = []
        for arm, per in got.items():
            for f in ["focus"] + list(rec["focus"]):
                label = "all focus files" if f == "focus" else f.rsplit("/", 1)[-1]
                rows.append([esc(arm), esc(label)] + [f"{v:.0f}" for _, v in per[f]])
        first = next(iter(got.values()))["focus"]
        out.append(table(["arm", "file"] + [f"{t:.0f} CPU s" for t, _ in first], rows))
        gains = {arm: per["focus"][-1][1] - per["focus"][0][1] for arm, per in got.items()}
        if "spec" in gains:
            parts = [
                f"{esc(arm)} {v:.0f}" + (f" (spec-aware {_ratio(gains['spec'], v)})" if arm != "spec" else "")
                for arm, v in gains.items()
            ]
            out.append(
                "\nRegions found beyond the seeds (focus files, last point less the seeds alone, medians): "
                + ", ".join(parts)
                + ".\n"
            )
        out.append(f"\n![regions per file over CPU time]({ctx_pictures()}/{files_plot_name(rec['target'])})\n")
    return "\n".join(out)


def ctx_pictures() -> str:
    """The pictures folder relative to docs/."""
    return "pictures"


def clean_signature(sig: str) -> str:
    """A recorded stack signature with each function's parameters dropped (``f(int@x.cpp:1`` -> ``f@x.cpp:1``)."""
    parts = []
    for part in sig.split(" <- "):
        name, _, where = part.rpartition("@")
        parts.append(f"{name.split('(')[0]}@{where}" if name else part)
    return " <- ".join(parts)


def _sec_findings(rec: dict) -> str:
    seen: dict[str, dict] = {}
    for r in rec["runs"]:
        for c in r["crashes"] + r["aborts"]:
            s = seen.setdefault(
                clean_signature(c["signature"]),
                {"kind": c["kind"], "message": c.get("message", ""), "arms": set(), "count": 0},
            )
            s["arms"].add(r["arm"])
            s["count"] += c.get("count", 1)
            s["message"] = s["message"] or c.get("message", "")
    if not seen:
        return "No crash, sanitizer report or abort.\n"
    rows = [
        [esc(v["kind"]), code(sig), esc(v["message"][:160]), ", ".join(sorted(v["arms"])), str(v["count"])]
        for sig, v in sorted(seen.items(), key=lambda kv: (-len(kv[1]["arms"]), -kv[1]["count"]))
    ]
    return (
        "Deduplicated by the first three frames inside llama.cpp/ggml; triaged in "
        "[fuzz/FINDINGS.md](../fuzz/FINDINGS.md).\n\n" + table(["kind", "stack", "message", "arms", "times"], rows)
    )


def _sec_oracle(rec: dict) -> str:
    oracle = rec.get("oracle") or {}
    if not oracle:
        return "Not run.\n"
    rows = []
    for arm, got in oracle.items():
        c = got["counts"]
        dis = got["disagreements"]
        text = "; ".join(
            f"{d['class']}{' (' + d['paths'] + ')' if d.get('paths') else ''} "
            f"{', '.join(d['rules']) or '(no error rule)'} x{d['count']}"
            for d in dis[:8]
        )
        rows.append([esc(arm), str(c["files"]), str(c["accepted"]), esc(text) or "none"])
    return (
        f"Each arm's final corpus of its first run (all of it, or a sample spread over it: the files column) "
        f"replayed for the harness's verdict and judged by our checker under the profile "
        f"{code(_profile(rec['target']))}: a file the C reader accepts and the checker rejects is a false "
        f"accept, the converse a false reject.\n\n" + table(["arm", "files", "C accepts", "disagreements"], rows)
    )


def _profile(target: str) -> str:
    return "ggml" if target == "ggml" else "llama.cpp"


def _sec_reach(rec: dict) -> str:
    """The regions of the focus files (each counted once over template instantiations) by where they stand, for
    the seeds alone and for the union of every run of every arm (``fuzz/campaign.py reach``)."""
    reach = rec["reach"]
    kinds = ("covered", "not taken", "off the load path", "uncalled")
    rows = []
    for label, key in (("seeds alone", "seeds"), ("all arms, all runs", "union")):
        if key not in reach:
            continue
        for f, counts in reach[key]["files"].items():
            total = sum(counts.values())
            rows.append([esc(label), code(f) if f != "all" else "all focus files"] + [str(counts[k]) for k in kinds])
            rows[-1].append(str(total))
    union = reach.get("union", {})
    top = union.get("top", [])[:12]
    text = (
        "Each code region of the focus files counted once (llvm-cov's regions, template instantiations merged): "
        "*covered*; *not taken* -- in a function that ran, a branch no input took; *off the load path* -- in a "
        "function the harness never runs whatever the file (name fragments: "
        + ", ".join(code(o) for o in union.get("off_path", []))
        + "); *uncalled* -- any other function no input reached.  The ratio a spec-aware arm can reach over an "
        "arm started from the same seeds is bounded by (covered + not taken + uncalled) / covered by the seeds.\n\n"
    )
    text += table(["corpus", "file", *kinds, "regions"], rows)
    if top:
        text += "\n\nThe functions with most uncovered regions (all arms, all runs):\n\n" + table(
            ["where", "file", "function", "regions"],
            [[esc(t["kind"]), code(t["file"].rsplit("/", 1)[-1]), code(t["function"]), str(t["regions"])] for t in top],
        )
    return text + "\n"


def _sec_unreached(rec: dict) -> str:
    got = rec.get("unreached") or {}
    if not got or "error" in got:
        return "Not measured.\n"
    out = []
    for f, names in got.items():
        names = [_demangle(n) for n in names]
        writer = [n for n in names if any(w in n for w in _WRITER)]
        other = [n for n in names if n not in writer]
        out.append(f"- {code(f)}: {len(names)} functions no arm reached.")
        if writer:
            out.append(
                f"  - {len(writer)} belong to writing a file or building a context in memory (no reader "
                f"calls them): {', '.join(code(n) for n in writer[:12])}{' ...' if len(writer) > 12 else ''}"
            )
        if other:
            out.append(
                f"  - {len(other)} others: {', '.join(code(n) for n in other[:20])}{' ...' if len(other) > 20 else ''}"
            )
    return "\n".join(out) + "\n"


def _demangle(name: str) -> str:
    import shutil
    import subprocess

    tool = shutil.which("llvm-cxxfilt") or shutil.which("c++filt")
    if not tool or not name.startswith("_Z"):
        return name.split(":")[-1]
    try:
        text = subprocess.run([tool, name], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return name
    return text.split("(")[0]


def _sec_campaigns(ctx: Ctx) -> str:
    recs = records()
    if not recs:
        return "_No campaign is recorded in fuzz/campaigns/._\n"
    out = []
    build = build_record()
    if build:
        out.append(
            f"Build of the targets here (`{esc(build['command'])}`, {esc(build['compiler'])}, "
            f"{build['jobs']} jobs): {build['libraries_seconds']} s for ggml + llama, "
            f"{build['harnesses_seconds']} s for the harnesses, {build['total_seconds']} s in all "
            f"({esc(build['machine'])}).\n"
        )
    for rec in recs:
        out.append(f"### {esc(rec['target'])}\n")
        out.append(_sec_summary(rec))
        out.append("\n#### Crashes, sanitizer reports and aborts\n")
        out.append(_sec_findings(rec))
        out.append("\n#### The oracle\n")
        out.append(_sec_oracle(rec))
        if rec.get("reach"):
            out.append("\n#### Where the focus files' regions stand\n")
            out.append(_sec_reach(rec))
        out.append("\n#### Functions of the focus files no arm reached\n")
        out.append(_sec_unreached(rec))
    return "\n".join(out)


# -- the plots ----------------------------------------------------------------------------------------------------------
def plots() -> dict[str, str]:
    """``{file name: SVG}``: for each recorded target, libFuzzer's edge count over CPU seconds, one line per run,
    coloured by arm."""
    out = {plot_name(rec["target"]): _plot(rec) for rec in records()}
    for rec in records():
        got = over_time(rec)
        if got:
            out[files_plot_name(rec["target"])] = _files_plot(rec, got)
    return out


def _files_plot(rec: dict, got: dict[str, dict[str, list[tuple[float, float]]]]) -> str:
    """Small multiples: one panel per focus file (and their sum), regions covered over CPU seconds, one line
    per arm (medians over the runs)."""
    names = ["focus"] + list(rec["focus"])
    pw, ph, gap, top, left = 230, 150, 50, 40, 56
    w = left + len(names) * (pw + gap)
    h = top + ph + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="sans-serif" font-size="11">',
        f"<title>regions covered per file over CPU time: {rec['target']}</title>",
        f'<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="16" font-weight="bold">{rec["target"]}: regions covered per file over CPU seconds '
        f"(medians per arm)</text>",
    ]
    for k, name in enumerate(names):
        x0 = left + k * (pw + gap)
        pts_all = [p for per in got.values() for p in per[name]]
        xmax = max([p[0] for p in pts_all] + [1])
        ys = [p[1] for p in pts_all] or [0, 1]
        ymin, ymax = int(min(ys) * 0.97), max(ys)
        ymax = ymax if ymax > ymin else ymin + 1

        def x(v: float, x0: float = x0, xmax: float = xmax) -> float:
            return x0 + pw * v / xmax

        def y(v: float, ymin: float = ymin, ymax: float = ymax) -> float:
            return top + ph * (1 - (v - ymin) / (ymax - ymin))

        label = "all focus files" if name == "focus" else name.rsplit("/", 1)[-1]
        out.append(f'<text x="{x0 + pw / 2}" y="{top - 6}" text-anchor="middle">{label}</text>')
        out.append(f'<line x1="{x0}" y1="{top + ph}" x2="{x0 + pw}" y2="{top + ph}" stroke="#333"/>')
        out.append(f'<line x1="{x0}" y1="{top}" x2="{x0}" y2="{top + ph}" stroke="#333"/>')
        for i in range(3):
            vy = ymin + (ymax - ymin) * i / 2
            vx = xmax * i / 2
            out.append(f'<text x="{x0 - 4}" y="{y(vy) + 4:.1f}" text-anchor="end">{vy:.0f}</text>')
            out.append(f'<text x="{x(vx):.1f}" y="{top + ph + 14}" text-anchor="middle">{vx:.0f}</text>')
        for arm, per in got.items():
            pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in per[name])
            out.append(f'<polyline points="{pts}" fill="none" stroke="{COLOURS.get(arm, "#555")}" stroke-width="2"/>')
    for i, arm in enumerate(got):
        lx = left + i * 120
        out.append(
            f'<line x1="{lx}" y1="{h - 14}" x2="{lx + 24}" y2="{h - 14}" stroke="{COLOURS.get(arm, "#555")}" '
            f'stroke-width="3"/>'
        )
        out.append(f'<text x="{lx + 30}" y="{h - 10}">{arm}</text>')
    out.append(f'<text x="{w / 2}" y="{top + ph + 32}" text-anchor="middle">CPU seconds of the fuzzer</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _plot(rec: dict) -> str:
    w, h, left, top, bottom, right = 720, 340, 64, 30, 44, 170
    series = [(r["arm"], r["series"]) for r in rec["runs"] if r["series"]]
    xmax = max([rec["budget_cpu_s"]] + [s[-1][0] for _, s in series]) or 1
    ys = [p[1] for _, s in series for p in s]
    ymin, ymax = (min(ys), max(ys)) if ys else (0, 1)
    ymin = int(ymin * 0.97)
    ymax = ymax if ymax > ymin else ymin + 1
    pw, ph = w - left - right, h - top - bottom

    def x(v: float) -> float:
        return left + pw * v / xmax

    def y(v: float) -> float:
        return top + ph * (1 - (v - ymin) / (ymax - ymin))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="sans-serif" font-size="12">',
        f"<title>libFuzzer edges over CPU time: {rec['target']}</title>",
        f'<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="18" font-weight="bold">{rec["target"]}: edges covered over CPU seconds '
        f"({len(series)} runs)</text>",
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
    ]
    for i in range(5):
        vx = xmax * i / 4
        vy = ymin + (ymax - ymin) * i / 4
        out.append(f'<text x="{x(vx):.1f}" y="{top + ph + 16}" text-anchor="middle">{vx:.0f}</text>')
        out.append(f'<text x="{left - 6}" y="{y(vy) + 4:.1f}" text-anchor="end">{vy:.0f}</text>')
        out.append(f'<line x1="{left}" y1="{y(vy):.1f}" x2="{left + pw}" y2="{y(vy):.1f}" stroke="#ddd"/>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle">CPU seconds of the fuzzer</text>')
    for arm, s in series:
        pts = " ".join(f"{x(p[0]):.1f},{y(p[1]):.1f}" for p in s)
        out.append(
            f'<polyline points="{pts}" fill="none" stroke="{COLOURS.get(arm, "#555")}" stroke-width="1.5" '
            f'opacity="0.85"/>'
        )
    for i, arm in enumerate(rec["arms"]):
        ly = top + 14 + 20 * i
        out.append(
            f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 36}" y2="{ly - 4}" '
            f'stroke="{COLOURS.get(arm, "#555")}" stroke-width="3"/>'
        )
        out.append(f'<text x="{left + pw + 42}" y="{ly}">{arm}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


PAGE = Page(
    "fuzzing.md",
    "Coverage-guided fuzzing of ggml and llama.cpp",
    "campaigns against ggml's GGUF reader and llama.cpp's loader: spec-aware mutator vs byte-level arms",
    intro(
        "Coverage-guided fuzzing of ggml and llama.cpp",
        "Campaigns of libFuzzer against ggml's GGUF reader and llama.cpp's model loader, built with "
        "AddressSanitizer, UndefinedBehaviorSanitizer and llvm-cov from the sources the llama-cpp-python "
        "sdist vendors (`sh fuzz/build_targets.sh`), run by `python fuzz/campaign.py run` in three arms "
        "from the same seeds: the spec-aware mutator "
        "(`gguf_construct.fuzzing.specmutator`), libFuzzer's own byte mutations, and OSS-Fuzz's way.",
    ),
    (Section("fuzzing-campaigns", "Recorded campaigns", _sec_campaigns),),
    count=lambda d: f"{len(records())} recorded campaigns",
)
