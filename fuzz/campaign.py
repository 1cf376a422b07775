"""Run comparable coverage-guided campaigns against ggml's GGUF reader and llama.cpp's loader (issue #39).

    sh fuzz/build_targets.sh                                   # once: clang, libFuzzer, the instrumented targets
    python fuzz/campaign.py seeds                              # the shared seeds (suite, models, corpus)
    python fuzz/campaign.py run --target ggml --runs 3 --budget 1200 --out fuzz/campaigns/ggml.json
    python fuzz/campaign.py run --target llama --runs 3 --budget 1200 --out fuzz/campaigns/llama.json
    gguf-construct docs                                        # docs/fuzzing.md from fuzz/campaigns/*.json

``run`` fuzzes each arm (spec, bytes, ossfuzz; see gguf_construct.fuzzing.campaign) for ``--budget`` CPU seconds
per run, the arms interleaved run by run, then replays each final corpus for lines/regions/branches per source
file (llvm-cov) and, on the first run, judges the corpus with our checker (the oracle).  The record is rewritten
after every arm, so an interrupted campaign keeps what it measured.  Everything large (corpora, profiles,
artifacts) stays under --work; the record holds numbers, stacks and the paths of the inputs to triage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gguf_construct.base.atomic import atomic_path  # noqa: E402
from gguf_construct.fuzzing import campaign as cp  # noqa: E402
from gguf_construct.fuzzing import coverage  # noqa: E402

WORK = Path(os.environ.get("GGUF_COV_FUZZ_WORK", "/tmp/gguf-cov-fuzz"))


def _save(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


# -- seeds (here, not in the package: the suite is a layer above the fuzzer) ---------------------------------------------------------------------------------------------------------------
def write_seeds(
    out: Path,
    *,
    corpus: Path | None = HERE.parent.parent / "shared" / "corpus",
    max_bytes: int = 1 << 20,
    repo: Path | None = None,
) -> dict[str, int]:
    """The shared seeds of every arm: ``fuzz/seeds`` (files of every version and byte order and one per
    breakage, tiny models), the conformance suite's cases, a minimal model of every architecture, and the real
    corpus's files up to ``max_bytes``.  Returns how many of each."""
    import hashlib
    import re

    from gguf_construct.fuzzing.seedmodels import small_models, vocab_models
    from gguf_construct.suite.cases import all_cases

    out.mkdir(parents=True, exist_ok=True)
    repo = repo or HERE.parent
    counts = {"fuzz/seeds": 0, "suite": 0, "architectures": 0, "vocabularies": 0, "corpus": 0}
    seen: set[bytes] = set()

    def put(data: bytes, name: str, group: str) -> None:
        digest = hashlib.sha1(data).digest()
        if digest in seen or len(data) > max_bytes:
            return
        seen.add(digest)
        (out / f"{group.replace('/', '_')}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:80]}").write_bytes(data)
        counts[group] += 1

    for p in sorted((repo / "fuzz" / "seeds").rglob("*.gguf")):
        put(p.read_bytes(), p.stem, "fuzz/seeds")
    for case in all_cases():
        for name, data in case.files.items():
            put(data, f"{case.path}-{name}", "suite")
    for arch, data in small_models():
        put(data, arch, "architectures")
    for label, data in vocab_models():
        put(data, label, "vocabularies")
    if corpus is not None and corpus.is_dir():
        for p in sorted(corpus.rglob("*.gguf")):
            if p.stat().st_size <= max_bytes:
                put(p.read_bytes(), p.stem, "corpus")
    return counts


def cmd_seeds(args) -> int:
    """Write the shared seeds."""
    out = Path(args.out)
    counts = write_seeds(out, max_bytes=args.max_bytes)
    # a seed that kills a target (a sanitizer report) would end every campaign at its start: each is moved
    # aside to <out>-crashes and listed (each is a finding to triage)
    crashed: dict[str, list[str]] = {}
    for name, target in cp.TARGETS.items():
        exe = cp.binary(target, "bytes", Path(args.bin))
        if exe.exists():
            bad = cp.screen(exe, sorted(out.iterdir()), cp.runtime_env("bytes"))
            aside = out.parent / (out.name + "-crashes")
            aside.mkdir(exist_ok=True)
            for p in bad:
                p.rename(aside / p.name)
            crashed[name] = [p.name for p in bad]
    print(json.dumps({"written": counts, "moved_aside": crashed}))
    return 0


def cmd_run(args) -> int:
    """Run the campaign and write its record."""
    target = cp.TARGETS[args.target]
    arms = args.arms.split(",")
    for arm in arms:
        exe = cp.binary(target, arm, Path(args.bin))
        if not exe.exists():
            print(f"missing {exe}: run sh fuzz/build_targets.sh first", file=sys.stderr)
            return 2
    seeds = Path(args.seeds)
    if not seeds.is_dir():
        print(f"missing seeds {seeds}: run python fuzz/campaign.py seeds", file=sys.stderr)
        return 2
    if args.max_seed_bytes:
        small = WORK / f"seeds-{args.target}-{args.max_seed_bytes}"
        small.mkdir(parents=True, exist_ok=True)
        for p in seeds.iterdir():
            if p.stat().st_size <= args.max_seed_bytes and not (small / p.name).exists():
                os.link(p, small / p.name)
        seeds = small
    out = Path(args.out)
    record = {
        "target": target.name,
        "doc": target.doc,
        "focus": list(target.focus),
        "arms": arms,
        "budget_cpu_s": args.budget,
        "runs_planned": args.runs,
        "seeds": len(list(seeds.iterdir())),
        "max_seed_bytes": args.max_seed_bytes,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "note": args.note,
        "runs": [],
        "oracle": {},
        "unreached": {},
    }
    profiles: list[Path] = []
    first = 0
    if args.append and out.exists():  # more runs of a recorded campaign (same target, arms and budget)
        old = json.loads(out.read_text())
        if (old["target"], old["arms"], old["budget_cpu_s"]) != (target.name, arms, args.budget):
            print("--append needs the recorded campaign's target, arms and budget", file=sys.stderr)
            return 2
        record.update(runs=old["runs"], oracle=old["oracle"], started=old["started"], note=args.note or old["note"])
        first = 1 + max((r["run"] for r in old["runs"]), default=-1)
        record["runs_planned"] = first + args.runs
        profiles = [p for p in (WORK / "campaigns" / target.name).glob("*/final.profdata")]
    for run in range(first, first + args.runs):
        for arm in arms:
            work = WORK / "campaigns" / target.name / f"{arm}-{run}"
            res = cp.run_arm(
                target, arm, seeds, work, args.budget, run=run, bin_dir=Path(args.bin), seed=run + 1, log=cp.log_stderr
            )
            entry = res.to_json()
            corpus = sorted((work / "corpus").iterdir())
            keep = work / "final.profdata"
            replay = cp.binary(target, "bytes", Path(args.bin))
            env = cp.runtime_env(arm, {"GGUF_HARNESS_ABORT_DIR": str(work / "replay-aborts")})
            (work / "replay-aborts").mkdir(exist_ok=True)
            entry["coverage"] = coverage.measure(replay, corpus, env, target.focus, keep=keep)
            if args.time_points:
                seen = res.first_seen
                found = [(seen[p.name], p) for p in corpus if p.name in seen]
                points = [args.budget * (k / args.time_points) for k in range(args.time_points + 1)]
                try:
                    entry["coverage_over_time"] = coverage.measure_over_time(
                        replay, [p for p in corpus if p.name not in seen], found, env, target.focus, points
                    )
                except Exception as exc:  # noqa: BLE001 - the run's figures stand without the curve
                    cp.log_stderr(f"  coverage over time not measured: {exc}")
            if keep.exists():
                profiles.append(keep)
            if run == 0 and not args.no_oracle:
                sample = corpus[:: max(1, len(corpus) // args.oracle_files)][: args.oracle_files]
                record["oracle"][arm] = cp.judge(target, arm, sample, Path(args.bin))
            record["runs"].append(entry)
            cov = entry["coverage"]
            focus = sum(cov.get(f, {}).get("regions", [0, 0])[0] for f in target.focus)
            cp.log_stderr(
                f"  {arm} run {run}: edges {entry['edges']}, focus regions {focus}, "
                f"crashes {len(entry['crashes'])}, aborts {len(entry['aborts'])}"
            )
            _save(out, record)
    if profiles:
        try:
            record["unreached"] = coverage.unreached(cp.binary(target, "bytes", Path(args.bin)), profiles, target.focus)
        except Exception as exc:  # noqa: BLE001 - the figures stand without the list
            record["unreached"] = {"error": str(exc)}
    record["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    _save(out, record)
    return 0


def cmd_oracle(args) -> int:
    """Judge the first run's corpora of a recorded campaign again (the work folders must still exist)."""
    out = Path(args.record)
    record = json.loads(out.read_text())
    target = cp.TARGETS[record["target"]]
    for arm in record["arms"]:
        corpus = WORK / "campaigns" / target.name / f"{arm}-0" / "corpus"
        if not corpus.is_dir():
            print(f"missing {corpus}", file=sys.stderr)
            continue
        files = sorted(corpus.iterdir())
        sample = files[:: max(1, len(files) // args.oracle_files)][: args.oracle_files]
        record["oracle"][arm] = cp.judge(target, arm, sample, Path(args.bin))
        cp.log_stderr(f"{target.name}/{arm}: {record['oracle'][arm]['counts']}")
        _save(out, record)
    return 0


def cmd_reach(args) -> int:
    """Classify the focus files' regions over the union of a recorded campaign's final profiles (the work
    folders must still exist): covered, not taken, off the load path, uncalled."""
    out = Path(args.record)
    record = json.loads(out.read_text())
    target = cp.TARGETS[record["target"]]
    profiles = sorted((WORK / "campaigns" / target.name).glob("*/final.profdata"))
    seeds = WORK / "campaigns" / target.name / "seeds.profdata"
    (WORK / "reach-aborts").mkdir(parents=True, exist_ok=True)
    if args.seeds:
        coverage.profile(
            cp.binary(target, "bytes", Path(args.bin)),
            sorted(Path(args.seeds).iterdir()),
            cp.runtime_env("bytes", {"GGUF_HARNESS_ABORT_DIR": str(WORK / "reach-aborts")}),
            seeds,
        )
    exe = cp.binary(target, "bytes", Path(args.bin))
    record["reach"] = {"union": coverage.reach(exe, profiles, target.focus, target.off_path)}
    if seeds.exists():
        record["reach"]["seeds"] = coverage.reach(exe, [seeds], target.focus, target.off_path)
    _save(out, record)
    print(json.dumps(record["reach"]["union"]["files"]["all"]))
    return 0


def main(argv=None) -> int:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seeds", help="write the shared seeds")
    s.add_argument("--out", default=str(WORK / "seeds"))
    s.add_argument("--max-bytes", type=int, default=1 << 20)
    s.add_argument("--bin", default=str(cp.DEFAULT_BIN), help="targets that screen the seeds (when built)")
    s.set_defaults(func=cmd_seeds)
    r = sub.add_parser("run", help="run a campaign")
    r.add_argument("--target", choices=sorted(cp.TARGETS), required=True)
    r.add_argument("--arms", default=",".join(cp.ARMS))
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--budget", type=float, default=1200.0, help="CPU seconds per arm and run (default 1200)")
    r.add_argument("--bin", default=str(cp.DEFAULT_BIN))
    r.add_argument("--seeds", default=str(WORK / "seeds"))
    r.add_argument("--max-seed-bytes", type=int, default=0, help="leave out seeds larger than this")
    r.add_argument("--oracle-files", type=int, default=300)
    r.add_argument("--no-oracle", action="store_true")
    r.add_argument(
        "--time-points",
        type=int,
        default=4,
        help="coverage per file measured at this many points of the budget (0: off)",
    )
    r.add_argument("--note", default="")
    r.add_argument("--append", action="store_true", help="add runs to the record --out already holds")
    r.add_argument("--out", required=True)
    r.set_defaults(func=cmd_run)
    o = sub.add_parser("oracle", help="judge the first run's corpora of a recorded campaign again")
    o.add_argument("--record", required=True)
    o.add_argument("--bin", default=str(cp.DEFAULT_BIN))
    o.add_argument("--oracle-files", type=int, default=300)
    o.set_defaults(func=cmd_oracle)
    c = sub.add_parser("reach", help="classify the focus files' regions over a recorded campaign's profiles")
    c.add_argument("--record", required=True)
    c.add_argument("--bin", default=str(cp.DEFAULT_BIN))
    c.add_argument("--seeds", default="", help="also classify what these seeds alone cover")
    c.set_defaults(func=cmd_reach)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
