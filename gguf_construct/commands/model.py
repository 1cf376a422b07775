"""The ``expect`` and ``estimate`` sub-commands: what a model file must contain, and the memory llama.cpp takes to
run it (:mod:`.expect`, :mod:`.memory`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..arch.expect import Expected, architecture_parts, expect, expect_architecture, parse_setting
from ..arch.loader import MetaValue, TensorMeta, plan_load
from ..arch.memory import ContextParams, Estimate, estimate, mib
from ..arch.synth import SynthesisError
from ..format import keynames

__all__ = ["add_cli"]


def _shape(dims: Any) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _file_parts(path: str, settings: list[str]) -> tuple[dict[str, MetaValue], dict[str, TensorMeta], dict, str]:
    from ..filemodel.inputs import open_input
    from ..arch import from_file

    f = open_input(path, shards=True)
    meta, tensors = from_file(f)
    arch_v = meta.get(keynames.GENERAL_ARCHITECTURE)
    arch = str(arch_v.value) if arch_v is not None else ""
    if settings:
        ctypes = plan_load(meta, tensors, vocab_only=False).keys_read
        for text in settings:
            key, v = parse_setting(arch, text, ctypes)
            meta[key] = v
    offsets = {t.name: (id(getattr(t, "file", None)), int(t.offset)) for t in f.tensors}
    return meta, tensors, offsets, arch


def _render_expect(e: Expected, out) -> None:
    print(f"architecture: {e.arch}", file=out)
    if e.quantities:
        q = ", ".join(f"{k}={v}" for k, v in e.quantities.items())
        print(f"derived: {q}", file=out)
    rows = []
    for t in e.tensors:
        kind = "duplicate" if t.duplicate else ("required" if t.required else "optional")
        if not t.certain:
            kind += "?"
        status = t.status or "-"
        if t.status == "shape":
            status = f"shape (file {_shape(t.file_shape)})"
        rows.append((t.name, _shape(t.shape) if t.status != "unused" else _shape(t.file_shape), kind, status))
    w0 = max([len(r[0]) for r in rows] + [4])
    w1 = max([len(r[1]) for r in rows] + [5])
    print(f"{'name':{w0}}  {'shape':{w1}}  {'':9}  status", file=out)
    for r in rows:
        print(f"{r[0]:{w0}}  {r[1]:{w1}}  {r[2]:9}  {r[3]}", file=out)
    if e.has_file:
        c = e.counts()
        required = sum(1 for t in e.tensors if t.status == "missing" and t.required)
        print(
            f"{len(e.tensors)} entries: {c['present']} present, {required} required missing, "
            f"{c['missing'] - required} optional absent, {c['shape']} wrong shape, {c['unused']} unused",
            file=out,
        )
    for p in e.problems[:5]:
        print(f"problem: MODEL-{p.code}: {p.message}", file=out)


def _cmd_expect(args) -> int:
    try:
        if args.file:
            meta, tensors, _, _ = _file_parts(args.file, args.set or [])
            e = expect(meta, tensors)
        else:
            if not args.arch:
                print("gguf-construct expect: give a FILE or --arch", file=sys.stderr)
                return 2
            e = expect_architecture(args.arch, args.set or [], n_vocab=args.vocab)
    except ValueError as exc:
        print(f"gguf-construct expect: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([t.to_json() for t in e.tensors], indent=1))
        for p in e.problems[:5]:  # the list is the answer; why a file would not load goes to stderr
            print(f"problem: MODEL-{p.code}: {p.message}", file=sys.stderr)
    else:
        _render_expect(e, sys.stdout)
    bad = any(t.status in ("shape", "unused") or (t.status == "missing" and t.required) for t in e.tensors)
    return 1 if (e.has_file and (bad or e.problems)) else 0


def _params(args) -> ContextParams:
    return ContextParams(
        n_batch=args.batch,
        n_ubatch=args.ubatch,
        n_seq_max=args.seqs,
        type_k=args.type_k,
        type_v=args.type_v,
        flash_attn=args.flash_attn,
        swa_full=args.swa_full,
        kv_unified=args.kv_unified,
        embeddings=args.embeddings or None,
        cpu_features=None
        if args.cpu_features is None
        else frozenset(f.strip() for f in args.cpu_features.split(",") if f.strip()),
    )


def _cmd_estimate(args) -> int:
    try:
        if args.file:
            meta, tensors, offsets, _ = _file_parts(args.file, args.set or [])
        else:
            if not args.arch:
                print("gguf-construct estimate: give a FILE or --arch", file=sys.stderr)
                return 2
            meta, tensors = architecture_parts(args.arch, args.set or [], n_vocab=args.vocab)
            offsets = None
        plan = plan_load(meta, tensors, vocab_only=False)
        results = [estimate(meta, tensors, n, _params(args), offsets=offsets, plan=plan) for n in args.ctx or [0]]
    except (ValueError, KeyError, SynthesisError) as exc:
        print(f"gguf-construct estimate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
        return 0
    _render_estimate(results, sys.stdout, args.layers)
    return 0


def _render_estimate(results: list[Estimate], out, layers: bool) -> None:
    first = results[0]
    print(
        f"memory: {first.memory}; n_seq_max {first.n_seq_max}; figures in MiB (CPU backend; compute estimated)",
        file=out,
    )
    cols = ("ctx", "n_ctx", "model", "kv", "recurrent", "output", "compute~", "total")
    print("  ".join(f"{c:>10}" for c in cols), file=out)
    for r in results:
        vals = (
            r.ctx,
            r.n_ctx,
            mib(r.model_bytes),
            mib(r.kv_bytes),
            mib(r.recurrent_bytes),
            mib(r.output_bytes),
            mib(r.compute_bytes),
            mib(r.total_bytes),
        )
        print("  ".join(f"{v:>10}" if isinstance(v, int) else f"{v:10.2f}" for v in vals), file=out)
    for note in first.notes:
        print(f"note: {note}", file=out)
    if layers:
        last = results[-1]
        print(f"per layer at n_ctx {last.n_ctx}:", file=out)
        print(f"{'layer':>5}  {'cache':9}  {'cells':>7}  {'K/R width':>9}  {'V/S width':>9}  {'bytes':>12}", file=out)
        for x in last.layers:
            print(
                f"{x.il:5d}  {x.cache:9}  {x.cells:7d}  {x.k_width:9d}  {x.v_width:9d}  {x.k_bytes + x.v_bytes:12d}",
                file=out,
            )


def _model_arguments(p) -> None:
    """The arguments that name the model: a file, or an architecture with --set values and a vocabulary size."""
    p.add_argument("file", nargs="?", help="a GGUF model file")
    p.add_argument("--arch", help="an architecture (without FILE)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a hyperparameter (KEY without the architecture prefix is the architecture's, e.g. "
        "attention.head_count=32)",
    )
    p.add_argument("--vocab", type=int, default=None, help="vocabulary size (without FILE)")


def add_cli(subparsers) -> None:
    """Register the ``expect`` and ``estimate`` sub-commands."""
    p = subparsers.add_parser(
        "expect",
        help="every tensor llama.cpp's loader asks for, with concrete shapes and the file's status",
        description="Every tensor llama.cpp's loader asks for given the file's hyperparameters (or an "
        "architecture and --set values, without a file): its shape in ggml order, required / optional "
        "/ duplicate, and with a file present / missing / shape (wrong shape) / unused.  Exit 1 when a "
        "file misses a required tensor, has a wrong shape or an unused tensor.",
    )
    _model_arguments(p)
    p.add_argument(
        "--json", action="store_true", help="a JSON list of {name, shape, required, duplicate, status, file_shape}"
    )
    p.set_defaults(func=_cmd_expect)

    q = subparsers.add_parser(
        "estimate",
        help="the memory llama.cpp takes to run a model: weights, KV cache, recurrent state, outputs",
        description="Bytes llama.cpp allocates on the CPU backend for a context: the model buffer (mapped "
        "weights), the KV cache (per layer; SWA caches), recurrent state, the output buffer (replayed "
        "from llama.cpp's sizing rules, spec/architectures/_memory.yaml) and the compute buffer "
        "(estimated).  --ctx may repeat (a sweep); 0 is the training context.",
    )
    _model_arguments(q)
    q.add_argument("--ctx", type=int, action="append", help="context size (repeat for a sweep; default: training)")
    q.add_argument("--batch", type=int, default=None, help="n_batch (default 2048)")
    q.add_argument("--ubatch", type=int, default=None, help="n_ubatch (default 512)")
    q.add_argument("--seqs", type=int, default=None, help="n_seq_max (default 1)")
    q.add_argument("--type-k", default=None, help="K cache type (default F16)")
    q.add_argument("--type-v", default=None, help="V cache type (default F16)")
    q.add_argument("--flash-attn", action="store_true", default=None, help="flash attention on (default: auto)")
    q.add_argument("--no-flash-attn", dest="flash_attn", action="store_false", help="flash attention off")
    q.add_argument("--swa-full", action="store_true", default=None, help="full-size SWA cache (llama.cpp default)")
    q.add_argument("--no-swa-full", dest="swa_full", action="store_false", help="window-sized SWA cache")
    q.add_argument("--kv-unified", action="store_true", default=None, help="one KV stream for all sequences")
    q.add_argument("--embeddings", action="store_true", help="the context also returns embeddings")
    q.add_argument(
        "--cpu-features",
        default=None,
        metavar="LIST",
        help="ggml CPU features deciding which weights go to the CPU_REPACK buffer (avx2, avx512, neon, "
        "dotprod, matmul_int8, sve; '' for none; default: this machine's)",
    )
    q.add_argument("--layers", action="store_true", help="print the per-layer cache table")
    q.add_argument("--json", action="store_true", help="one JSON object per context size")
    q.set_defaults(func=_cmd_estimate)
