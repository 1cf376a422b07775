#!/usr/bin/env python3
"""The model layer against llama.cpp's own loader: minimal models of every architecture and labelled mutations of
them, each judged by ``check --profile llama.cpp`` and by ``llama_model_load_from_file``.

Usage (the oracle is a libllama shared library, e.g. the one a ``pip install llama-cpp-python`` build ships in
site-packages/llama_cpp/lib; it runs in the fuzzer's persistent worker, see gguf_construct/fuzzing/llama_target.py)::

    python tools/model_differential.py --lib /path/to/libllama.so [--out DIR] [--archs a,b]
                                       [--per-kind N] [--seed S] [--json results.jsonl] [--split N]

Prints agreement per architecture family and every disagreement (file, mutation, our rules, the loader's error).
``--split N`` also splits every file as ``gguf-construct split --max-tensors N`` does and judges each shard path
(llama.cpp loads a split model from its first shard, with its siblings, and refuses a later one): the rows of
shard paths are the family ``split:first`` or ``split:later``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from gguf_construct import arch, check
from gguf_construct.breaking.model_mutations import MUTATIONS, Mutated
from gguf_construct.arch.synth import SynthesisError, minimal_model_parts, model_architectures
from gguf_construct.breaking.models import build_model_file
from gguf_construct.fuzzing.targets import make_target
from gguf_construct.base.errors import GGUFError
from gguf_construct.filemodel.gguffile import load
from gguf_construct.operations.split import split_model


def family(name: str, meta: dict, tensors: dict) -> str:
    """A coarse architecture family for the report: recurrent, hybrid, encoder, moe or dense."""
    traits = set(getattr(arch.architecture(name), "traits", None) or ())
    if "recurrent" in traits:
        return "recurrent"
    if "hybrid" in traits:
        return "hybrid"
    if "token_types.weight" in tensors or "bert" in name or "output_norm.weight" not in tensors:
        return "encoder/other"
    if any(".ffn_gate_inp." in t or "_exps." in t for t in tensors):
        return "moe"
    return "dense"


def _sizes(rng: random.Random) -> dict[str, int]:
    """Random small hyperparameters (as strategies.model_files draws them)."""
    heads = rng.choice((1, 2, 4))
    kv = rng.choice([d for d in (1, 2, 4) if heads % d == 0])
    return {
        "embedding_length": heads * rng.choice((16, 32)),
        "attention.head_count": heads,
        "attention.head_count_kv": kv,
        "block_count": rng.randint(1, 3),
        "feed_forward_length": rng.choice((32, 64, 128)),
        "context_length": rng.choice((32, 64, 128)),
    }


def cases(names: list[str], per_kind: int, seed: int, vary: bool = False):
    """(arch, family, Mutated) for the base model and ``per_kind`` mutations of each kind per architecture; with
    ``vary``, each architecture's base model has random small hyperparameters and vocabulary size."""
    rng = random.Random(seed)
    for name in names:
        try:
            if vary:
                try:
                    meta, tensors = minimal_model_parts(name, sizes=_sizes(rng), n_vocab=rng.randint(16, 64))
                except SynthesisError:
                    meta, tensors = minimal_model_parts(name)
            else:
                meta, tensors = minimal_model_parts(name)
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            print(f"{name}: no minimal model ({exc})", file=sys.stderr)
            continue
        fam = family(name, meta, tensors)
        yield name, fam, Mutated("base", "", meta, tensors, frozenset())
        for m in MUTATIONS:
            for _ in range(per_kind):
                got = m.apply(meta, tensors, rng)
                if got is not None:
                    yield name, fam, got


def _row(path: Path, name: str, fam: str, m: Mutated, report) -> dict:
    return {
        "file": str(path),
        "arch": name,
        "family": fam,
        "kind": m.kind,
        "what": m.what,
        "labels": sorted(m.rules),
        "ours": report.valid,
        "rules": sorted({f.rule for f in report.errors()}),
        "messages": [f.message for f in report.errors()][:3],
    }


def _split_rows(path: Path, name: str, m: Mutated, every: int) -> list[dict]:
    """One row per shard path of ``path`` split every ``every`` tensors (none when it has too few to split)."""
    try:
        source = load(path)
    except GGUFError:  # a mutation load refuses: nothing to split
        return []
    if len(source.tensors) <= every:
        source.close()
        return []
    folder = path.with_suffix("")
    folder.mkdir(exist_ok=True)
    shards = [p for p, _ in split_model(source, str(folder / "s"), max_tensors=every)]
    source.close()
    return [
        _row(Path(p), name, "split:first" if i == 0 else "split:later", m, check(p, profile="llama.cpp"))
        for i, p in enumerate(shards)
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the differential; exit 1 when the agreement is below --min-agreement."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path of libllama")
    ap.add_argument("--out", default=None)
    ap.add_argument("--archs", default=None)
    ap.add_argument("--per-kind", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--min-agreement", type=float, default=0.0)
    ap.add_argument("--vary", action="store_true", help="random small hyperparameters per architecture")
    ap.add_argument(
        "--split",
        type=int,
        default=0,
        metavar="N",
        help="also split each file every N tensors and judge every shard path",
    )
    args = ap.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="model-diff-"))
    out.mkdir(parents=True, exist_ok=True)
    names = args.archs.split(",") if args.archs else model_architectures()
    rows = []
    for i, (name, fam, m) in enumerate(cases(names, args.per_kind, args.seed, args.vary)):
        path = out / f"{i:05d}-{name}-{m.kind}.gguf"
        build_model_file(m.meta, m.tensors).save(path)
        report = check(str(path), profile="llama.cpp")
        rows.append(_row(path, name, fam, m, report))
        if args.split:
            rows.extend(_split_rows(path, name, m, args.split))

    target = make_target(f"llama:{args.lib}", timeout=60)
    try:
        for row in rows:
            out = target.run(row["file"])
            row["loads"] = out.status == "accept"
            row["crashed"] = out.status in ("crash", "hang")
            row["error"] = [out.detail[:300]] if out.detail else []
    finally:
        target.close()
    by_family: dict[str, list[int]] = {}
    for r in rows:
        agree = r["ours"] == r["loads"]
        r["agree"] = agree
        by_family.setdefault(r["family"], [0, 0])
        by_family[r["family"]][0] += agree
        by_family[r["family"]][1] += 1
    total = sum(a for a, _ in by_family.values()), sum(n for _, n in by_family.values())
    print(f"{'family':16} {'agree':>7} {'files':>6}")
    for fam, (a, n) in sorted(by_family.items()):
        print(f"{fam:16} {a:7d} {n:6d}  {100 * a / n:6.2f}%")
    print(
        f"{'all':16} {total[0]:7d} {total[1]:6d}  {100 * total[0] / max(total[1], 1):6.2f}%  "
        f"({len({r['arch'] for r in rows})} architectures)"
    )
    for r in rows:
        if not r["agree"]:
            print(
                f"DISAGREE {Path(r['file']).name}: {r['what']} ours={'valid' if r['ours'] else r['rules']} "
                f"llama={'loads' if r['loads'] else r['error'][:1]}"
            )
    if args.json:
        with open(args.json, "w") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    return 0 if total[0] >= args.min_agreement * total[1] else 1


if __name__ == "__main__":
    sys.exit(main())
