"""The matrix of readers: recorded suite results (``readers/results.json``) merged per reader, and the page
``docs/readers.md`` with its heatmap ``docs/readers.svg`` rendered from them (staleness is checked against the
recorded results, never by running readers again)."""

from __future__ import annotations

import html
import json
import os
from typing import Any

from ..base.atomic import atomic_path
from .runner import RESULTS, CaseResult, summarise

__all__ = ["record", "load_results", "render_page", "render_svg", "write_matrix", "check_matrix", "COLOURS"]

COLOURS = {
    "pass": "#3c9a4a",
    "false-accept": "#e0a21b",
    "false-reject": "#d9641e",
    "wrong-values": "#8e44ad",
    "crash": "#c0282d",
    "hang": "#1f2f8f",
    "either-accept": "#9ccc9f",
    "either-reject": "#c4d8c5",
    "absent": "#e6e6e6",
}
LEGEND = (
    ("pass", "expected outcome"),
    ("either-accept", "either: accepted"),
    ("either-reject", "either: rejected"),
    ("false-reject", "valid file rejected"),
    ("false-accept", "invalid file accepted"),
    ("wrong-values", "accepted, values wrong"),
    ("crash", "crashed"),
    ("hang", "hung"),
    ("absent", "not run"),
)
GROUP_ORDER = ("values", "tensor-types", "edge", "container", "advisory", "split", "model")


def load_results(path: str) -> dict:
    """The recorded results (an empty record when the file does not exist)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {"readers": {}}


def record(
    path: str,
    name: str,
    *,
    version: str,
    adapter: str,
    profile: str,
    digest: str,
    cases: int,
    results: list[CaseResult],
    notes: str = "",
) -> dict:
    """Store one reader's run in the results file (replacing its earlier run), atomically."""
    data = load_results(path)
    data.setdefault("readers", {})[name] = {
        "version": version,
        "adapter": adapter,
        "profile": profile,
        "suite_digest": digest,
        "suite_cases": cases,
        "notes": notes,
        "summary": summarise(results),
        "results": {r.file: [r.group, r.expected, r.outcome, r.result] for r in results},
    }
    data["readers"] = dict(sorted(data["readers"].items()))
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=True) + "\n")
    return data


def _cell(entry: list | None) -> str:
    if entry is None:
        return "absent"
    _group, expected, outcome, result = entry
    if expected == "either" and result == "pass":
        return "either-accept" if outcome == "accept" else "either-reject"
    return result


def _case_order(data: dict) -> list[tuple[str, str]]:
    files: dict[str, str] = {}
    for reader in data["readers"].values():
        for f, entry in reader["results"].items():
            files.setdefault(f, entry[0])
    rank = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(files.items(), key=lambda fg: (rank.get(fg[1], len(rank)), fg[0]))


def render_svg(data: dict) -> str:
    """A heatmap: one row per reader, one column per case (grouped), coloured by result."""
    cases = _case_order(data)
    readers = list(data["readers"])
    cw, ch, left, top = 3, 18, 190, 40
    width = left + cw * len(cases) + 20
    height = top + ch * len(readers) + 30 + 18 * ((len(LEGEND) + 2) // 3)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    x = left
    group_start: dict[str, int] = {}
    for i, (_f, group) in enumerate(cases):
        group_start.setdefault(group, i)
    for group, start in group_start.items():
        gx = left + cw * start
        out.append(f'<line x1="{gx}" y1="{top - 14}" x2="{gx}" y2="{top + ch * len(readers)}" stroke="#444"/>')
        out.append(f'<text x="{gx + 2}" y="{top - 4}">{html.escape(group)}</text>')
    for row, name in enumerate(readers):
        y = top + row * ch
        reader = data["readers"][name]
        label = f"{name} {reader['version']}"
        out.append(f'<text x="4" y="{y + ch - 5}">{html.escape(label)}</text>')
        runs: list[tuple[str, int, int]] = []
        for i, (f, _g) in enumerate(cases):
            colour = COLOURS[_cell(reader["results"].get(f))]
            if runs and runs[-1][0] == colour and runs[-1][2] == i:
                runs[-1] = (colour, runs[-1][1], i + 1)
            else:
                runs.append((colour, i, i + 1))
        for colour, a, b in runs:
            out.append(f'<rect x="{x + cw * a}" y="{y + 1}" width="{cw * (b - a)}" height="{ch - 2}" fill="{colour}"/>')
    ly = top + ch * len(readers) + 20
    for i, (key, text) in enumerate(LEGEND):
        lx = left + (i % 3) * 200
        yy = ly + (i // 3) * 18
        out.append(f'<rect x="{lx}" y="{yy - 10}" width="12" height="12" fill="{COLOURS[key]}"/>')
        out.append(f'<text x="{lx + 16}" y="{yy}">{html.escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _frac(pair: list[int]) -> str:
    done, total = pair
    return f"{done}/{total}" if total else "-"


def _group_counts(reader: dict) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for group, expected, outcome, result in reader["results"].values():
        g = out.setdefault(group, {"cases": 0, "pass": 0})
        g["cases"] += 1
        g["pass"] += result == "pass"
    return out


def render_page(data: dict) -> str:
    """docs/readers.md: the matrix per reader and case group, each reader's version and adapter."""
    lines = [
        "# GGUF readers on the conformance suite",
        "",
        "<!-- generated by `gguf-construct suite matrix` from readers/results.json; do not edit -->",
        "",
        "Every reader below was run on every case of the suite (`gguf-construct suite write`), under the "
        "profile that describes it (`spec` for general readers: what gguf.md says; `ggml` and `llama.cpp` "
        "for ggml's reader and llama.cpp's loader).  A case is *valid* when the manifest expects `accept` "
        "under that profile, *invalid* when it expects `reject`; `either` cases (left to the reader by the "
        "spec) count in neither column but still fail on a crash or hang.  *Values correct* counts the "
        "accepted files whose keys, tensor infos, data hashes and decoded values equal the manifest's, "
        "among those the reader reported values for.  How to run and add a reader: "
        "[readers/README.md](../readers/README.md); the triage of every disagreement: "
        "[fuzz/FINDINGS.md](../fuzz/FINDINGS.md).",
        "",
        "![matrix](readers.svg)",
        "",
        "| reader | version | profile | cases | valid accepted | invalid rejected | values correct | "
        "false accepts | false rejects | wrong values | crashed | hung |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in data["readers"].items():
        s = r["summary"]
        c = s["counts"]
        lines.append(
            f"| {name} | {r['version']} | {r['profile']} | {s['cases']} | {_frac(s['accepted_valid'])} | "
            f"{_frac(s['rejected_invalid'])} | {_frac(s['values_correct'])} | {c['false-accept']} | "
            f"{c['false-reject']} | {c['wrong-values']} | {c['crash']} | {c['hang']} |"
        )
    groups = [g for g in GROUP_ORDER if any(g in _group_counts(r) for r in data["readers"].values())]
    lines += [
        "",
        "## Cases passed per group",
        "",
        "| reader | " + " | ".join(groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for name, r in data["readers"].items():
        gc = _group_counts(r)
        cells = [f"{gc[g]['pass']}/{gc[g]['cases']}" if g in gc else "-" for g in groups]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Adapters", ""]
    for name, r in data["readers"].items():
        note = f" {r['notes']}" if r.get("notes") else ""
        lines.append(f"- **{name}** {r['version']}: {r['adapter']}.{note}")
    digests = sorted({r["suite_digest"] for r in data["readers"].values()})
    lines += ["", f"Suite digest{'s' if len(digests) > 1 else ''}: " + ", ".join(f"`{d[:16]}`" for d in digests), ""]
    return "\n".join(lines)


def _outputs(data: dict, out_dir: str) -> dict[str, str]:
    return {
        os.path.join(out_dir, "readers.md"): render_page(data),
        os.path.join(out_dir, "readers.svg"): render_svg(data),
    }


def write_matrix(results_path: str, out_dir: str) -> list[str]:
    """Write docs/readers.md and docs/readers.svg from the recorded results; returns the paths."""
    data = load_results(results_path)
    written = []
    for path, text in _outputs(data, out_dir).items():
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
        written.append(path)
    return written


def check_matrix(results_path: str, out_dir: str) -> list[str]:
    """The pages that differ from what the recorded results render to (empty: up to date)."""
    data = load_results(results_path)
    stale = []
    for path, text in _outputs(data, out_dir).items():
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except OSError:
            pass
        stale.append(path)
    return stale


def compare_results(recorded: dict, rerun: dict) -> list[str]:
    """What differs between two recordings of the matrix, reader by reader (a reader missing from ``rerun``, its
    version, the suite it ran, each case's outcome and result), one line each; empty when they agree."""
    out = []
    for name, old in recorded["readers"].items():
        new = rerun["readers"].get(name)
        if new is None:
            out.append(f"{name}: not run (is it installed?)")
            continue
        for field_ in ("version", "profile", "suite_digest"):
            if old[field_] != new[field_]:
                out.append(f"{name}: {field_} {old[field_]} -> {new[field_]}")
        if old["suite_digest"] != new["suite_digest"]:
            out.append(f"{name}: the suite changed; record the readers again (readers/run_all.sh)")
        for f in sorted(old["results"].keys() | new["results"].keys()):
            a, b = old["results"].get(f), new["results"].get(f)
            if a is None or b is None or a[2:] != b[2:]:
                was = f"{a[2]} ({a[3]})" if a else "absent"
                now = f"{b[2]} ({b[3]})" if b else "absent"
                out.append(f"{name}: {f}: {was} -> {now}")
    for name in rerun["readers"].keys() - recorded["readers"].keys():
        out.append(f"{name}: not in the recorded results")
    return out


def counts_line(summary: dict[str, Any]) -> str:
    """One line of counts for the console."""
    c = summary["counts"]
    return (
        f"{summary['cases']} cases: {c['pass']} pass, {c['false-accept']} false accepts, {c['false-reject']} "
        f"false rejects, {c['wrong-values']} wrong values, {c['crash']} crashes, {c['hang']} hangs; valid "
        f"accepted {_frac(summary['accepted_valid'])}, invalid rejected {_frac(summary['rejected_invalid'])}, "
        f"values correct {_frac(summary['values_correct'])}"
    )


__all__ += ["counts_line", "compare_results", "RESULTS"]
