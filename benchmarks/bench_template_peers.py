"""Other template scanners on the adversarial set of issue #38, recorded in benchmarks/template_peers.json.

Usage: python benchmarks/bench_template_peers.py [--bin DIR] [--templates SDIST] [--out PATH]

Writes one small GGUF file per payload of tests/template_adversarial.py, per benign look-alike and per package
template (``--templates``: a llama-cpp-python sdist, as in tests/test_template_taint.py) into a temporary
folder, runs each peer found in ``--bin`` (a venv's bin folder, e.g. one made with ``pip install c4nary
aisbom-cli glyphhound hayward modelvet``) on each file, and records per scanner: payloads caught (its
highest severity: c4nary FAIL on a TPL rule, glyphhound a gating critical/high finding, hayward a critical/high
finding, aisbom HIGH/CRITICAL risk, modelvet REJECT), per family, and false alarms (any template finding of a
warning level or worse) on the benign and package templates.  gguf-construct is recorded beside them (an error
under --profile spec, with rendering and with --no-render).  The payloads only call os.popen('probe') and
glyphhound's rendering --confirm mode is not used, so nothing a peer does can run a command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gguf_construct.base.atomic import atomic_path  # noqa: E402
from gguf_construct.breaking import crafting  # noqa: E402


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


ENV = dict(os.environ, NO_COLOR="1", AISBOM_NO_TELEMETRY="1", AISBOM_OFFLINE="1", AISBOM_NO_OSV="1")


def _run(cmd: list, timeout: int = 120) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV).stdout
    except (subprocess.TimeoutExpired, OSError):
        return ""


def _json(text: str):
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else {}
    except ValueError:
        return {}


def c4nary(binary: Path, path: str) -> tuple[bool, bool]:
    """(caught, any warning) from ``c4nary scan --json``: TPL* findings at FAIL / at WARN or FAIL."""
    found = [
        f
        for f in _json(_run([str(binary), "scan", "--json", "--fail-on", "none", path])).get("findings", [])
        if str(f.get("rule_id", "")).startswith("TPL")
    ]
    return any(f["severity"] == "FAIL" for f in found), any(f["severity"] in ("FAIL", "WARN") for f in found)


def glyphhound(binary: Path, path: str) -> tuple[bool, bool]:
    """From ``glyphhound scan --format json``: a gating (reachable critical/high) finding / any finding."""
    report = _json(_run([str(binary), "scan", "--format", "json", path]))
    summary = report.get("summary", {})
    return summary.get("gating", 0) > 0, bool(report.get("findings"))


def hayward(binary: Path, path: str) -> tuple[bool, bool]:
    """From ``hayward scan -f json``: a critical/high finding / a medium or worse one."""
    found = _json(_run([str(binary), "scan", "-f", "json", "--fail-on", "never", path])).get("findings", [])
    return (
        any(f.get("severity") in ("critical", "high") for f in found),
        any(f.get("severity") in ("critical", "high", "medium") for f in found),
    )


def aisbom(binary: Path, folder: str) -> dict[str, tuple[bool, bool]]:
    """Per file of ``folder`` from one ``aisbom scan --format json``: HIGH/CRITICAL risk / a template threat or
    MEDIUM risk or worse."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sbom.json")
        _run([str(binary), "scan", folder, "--format", "json", "--output", out, "--no-fail-on-risk"], timeout=900)
        try:
            sbom = json.loads(Path(out).read_text())
        except (OSError, ValueError):
            return {}
    verdicts = {}
    for c in sbom.get("components", []):
        props = {p["name"]: p["value"] for p in c.get("properties", [])}
        risk = props.get("aisbom:risk", "")
        threats = int(props.get("aisbom:gguf:chat_template_threat_count", "0") or 0)
        verdicts[c.get("name", "")] = (
            risk in ("HIGH", "CRITICAL"),
            threats > 0 or risk in ("MEDIUM", "HIGH", "CRITICAL"),
        )
    return verdicts


def modelvet(python: Path, paths: list[str]) -> dict[str, tuple[bool, bool]]:
    """modelvet.verify_path per file (a structural validator: REJECT / REJECT)."""
    code = (
        "import json, sys, modelvet\nprint(json.dumps({p: modelvet.verify_path(p).verdict.name for p in sys.argv[1:]}))"
    )
    verdicts = _json(_run([str(python), "-c", code, *paths], timeout=600))
    return {os.path.basename(p): (v == "REJECT", v == "REJECT") for p, v in verdicts.items()}


def _git_describe(checkout: str) -> str:
    out = _run(["git", "-C", checkout, "log", "-1", "--format=%h %cs"]).strip()
    return f"{os.path.basename(os.path.abspath(checkout))} {out}".strip()


def _version(python: Path, dist: str) -> str | None:
    code = f"import importlib.metadata as m\ntry: print(m.version({dist!r}))\nexcept Exception: print('')"
    return _run([str(python), "-c", code]).strip() or None


def ours(paths: list[str], render: bool) -> dict[str, tuple[bool, bool]]:
    """gguf-construct check --profile spec: an error / any TPL warning or error."""
    from gguf_construct.checker import check, template_render

    template_render.set_rendering(render)
    out = {}
    for p in paths:
        findings = [f for f in check(p).findings if f.rule.startswith("TPL-")]
        out[os.path.basename(p)] = (
            any(f.severity == "error" for f in findings),
            any(f.severity in ("error", "warning") for f in findings),
        )
    template_render.set_rendering(True)
    return out


def baseline(checkout: str, groups: dict) -> dict:
    """``ours`` for another checkout of gguf-construct (a subprocess with it first on the path)."""
    code = (
        "import json, os, sys\nsys.path.insert(0, sys.argv[1])\nfrom gguf_construct.checker import check\n"
        "out = {}\nfor p in sys.argv[2:]:\n    f = [x for x in check(p).findings if x.rule.startswith('TPL-')]\n"
        "    out[p] = (any(x.severity == 'error' for x in f), any(x.severity in ('error', 'warning') for x in f))\n"
        "print(json.dumps(out))"
    )
    paths = [p for files in groups.values() for p in files.values()]
    verdicts = _json(_run([sys.executable, "-c", code, os.path.abspath(checkout), *paths], timeout=900))
    return {g: {f: tuple(verdicts.get(p, (False, False))) for f, p in files.items()} for g, files in groups.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="/tmp/peers/bin", help="bin folder of a venv with the peers installed")
    ap.add_argument("--templates", nargs="*", default=[], help="llama-cpp-python sdist(s) for real templates")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="also record another checkout (main before #38)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "template_peers.json"))
    args = ap.parse_args()
    from template_adversarial import BENIGN, PAYLOADS

    os.environ["GGUF_CONSTRUCT_REAL_TEMPLATES"] = os.pathsep.join(args.templates)
    from test_template_taint import _package_templates

    real = _package_templates()
    binary = Path(args.bin)
    with tempfile.TemporaryDirectory() as tmp:
        groups: dict[str, dict[str, str]] = {"payload": {}, "benign": {}, "real": {}}
        texts = {
            "payload": {n: t for n, (_, t, _) in PAYLOADS.items()},
            "benign": BENIGN,
            "real": {re.sub(r"[^A-Za-z0-9.-]+", "_", n)[-80:]: t for n, t in real.items()},
        }
        for group, items in texts.items():
            os.makedirs(os.path.join(tmp, group))
            for name, text in items.items():
                raw = crafting.carrier()
                raw.set("tokenizer.chat_template", "STRING", text)
                path = os.path.join(tmp, group, f"{name}.gguf")
                atomic_write_bytes(path, raw.to_bytes())
                groups[group][f"{name}.gguf"] = path
        scanners: dict[str, dict] = {}
        for name, dist, run in (
            ("c4nary", "c4nary", c4nary),
            ("glyphhound", "glyphhound", glyphhound),
            ("hayward", "hayward", hayward),
        ):
            version = _version(binary / "python", dist)
            if not version or not (binary / name).exists():
                scanners[name] = {"installed": False}
                continue
            scanners[name] = {
                "version": version,
                **{g: {f: run(binary / name, p) for f, p in files.items()} for g, files in groups.items()},
            }
        version = _version(binary / "python", "aisbom-cli")
        scanners["aisbom-cli"] = (
            {"version": version, **{g: aisbom(binary / "aisbom", os.path.join(tmp, g)) for g in groups}}
            if version
            else {"installed": False}
        )
        version = _version(binary / "python", "modelvet")
        scanners["modelvet"] = (
            {
                "version": version,
                **{g: modelvet(binary / "python", list(files.values())) for g, files in groups.items()},
            }
            if version
            else {"installed": False}
        )
        if args.baseline:
            scanners["gguf-construct baseline"] = {
                "version": _git_describe(args.baseline),
                **baseline(args.baseline, groups),
            }
        for render in (True, False):
            scanners["gguf-construct" + ("" if render else " --no-render")] = {
                "version": "this checkout",
                **{g: ours(list(files.values()), render) for g, files in groups.items()},
            }
    record = {
        "payloads": len(PAYLOADS),
        "benign": len(BENIGN),
        "real": len(real),
        "families": {n: fam for n, (fam, _, _) in PAYLOADS.items()},
        "scanners": {},
    }
    for name, result in scanners.items():
        if not result.get("version"):
            record["scanners"][name] = {"installed": False}
            continue
        payload = result["payload"]
        record["scanners"][name] = {
            "version": result["version"],
            "caught": sorted(f[:-5] for f, (hit, _) in payload.items() if hit),
            "benign_alarms": sorted(f[:-5] for f, (_, warn) in result["benign"].items() if warn),
            "real_alarms": sum(warn for _, warn in result["real"].values()),
        }
        print(
            f"{name:28s} {len(record['scanners'][name]['caught']):3d}/{len(PAYLOADS)} caught, "
            f"{len(record['scanners'][name]['benign_alarms'])}/{len(BENIGN)} benign and "
            f"{record['scanners'][name]['real_alarms']}/{len(real)} real templates with a finding"
        )
    atomic_write_bytes(args.out, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
