#!/usr/bin/env python3
"""``estimate`` against llama.cpp: create contexts with libllama on minimal models of every architecture and
compare our figures with the sizes llama.cpp reports in its log.

Usage (the oracle is a libllama shared library, e.g. site-packages/llama_cpp/lib/libllama.so of a
``pip install llama-cpp-python`` build)::

    python tools/memory_differential.py --lib /path/to/libllama.so [--archs a,b] [--ctx 512,4096]
                                        [--quick] [--json rows.jsonl] [--out DIR]

For each architecture's minimal model (gguf_construct.arch.synth, optionally with larger hyperparameters:
``--sizes embedding_length=256,...``) and each configuration (context size x cache types x sequences x flash
attention x full SWA cache) a worker process loads the model (CPU, memory-mapped) and creates a context with
``llama_init_from_model``; the log lines ``model buffer size``, ``KV buffer size``, ``RS buffer size``,
``output buffer size`` and ``compute buffer size`` (MiB to 2 decimals) are compared with
:func:`gguf_construct.arch.memory.estimate` rounded the same way.  Prints agreement per family and component,
the compute buffer's error per family, and every disagreement.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

GGML_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "BF16": 30}


class ContextParams(ctypes.Structure):
    """``struct llama_context_params`` of llama.h (llama.cpp as vendored by llama-cpp-python 0.3.36)."""

    _fields_ = [
        ("n_ctx", ctypes.c_uint32),
        ("n_batch", ctypes.c_uint32),
        ("n_ubatch", ctypes.c_uint32),
        ("n_seq_max", ctypes.c_uint32),
        ("n_rs_seq", ctypes.c_uint32),
        ("n_outputs_max", ctypes.c_uint32),
        ("n_outputs_max_per_seq", ctypes.c_uint32),
        ("n_threads", ctypes.c_int32),
        ("n_threads_batch", ctypes.c_int32),
        ("ctx_type", ctypes.c_int),
        ("rope_scaling_type", ctypes.c_int),
        ("pooling_type", ctypes.c_int),
        ("attention_type", ctypes.c_int),
        ("flash_attn_type", ctypes.c_int),
        ("rope_freq_base", ctypes.c_float),
        ("rope_freq_scale", ctypes.c_float),
        ("yarn_ext_factor", ctypes.c_float),
        ("yarn_attn_factor", ctypes.c_float),
        ("yarn_beta_fast", ctypes.c_float),
        ("yarn_beta_slow", ctypes.c_float),
        ("yarn_orig_ctx", ctypes.c_uint32),
        ("defrag_thold", ctypes.c_float),
        ("cb_eval", ctypes.c_void_p),
        ("cb_eval_user_data", ctypes.c_void_p),
        ("type_k", ctypes.c_int),
        ("type_v", ctypes.c_int),
        ("abort_callback", ctypes.c_void_p),
        ("abort_callback_data", ctypes.c_void_p),
        ("embeddings", ctypes.c_bool),
        ("offload_kqv", ctypes.c_bool),
        ("no_perf", ctypes.c_bool),
        ("op_offload", ctypes.c_bool),
        ("swa_full", ctypes.c_bool),
        ("kv_unified", ctypes.c_bool),
        ("samplers", ctypes.c_void_p),
        ("n_samplers", ctypes.c_size_t),
        ("ctx_other", ctypes.c_void_p),
    ]


# ----------------------------------------------------------------------------------------------------------------
# the worker: one model, several contexts, every log line
# ----------------------------------------------------------------------------------------------------------------


def _open_llama(lib_path: str, log_t, log) -> ctypes.CDLL:
    """libllama with ``log`` (a ``log_t`` callback) receiving its log, the backend started and the model-loading
    functions typed."""
    from gguf_construct.fuzzing.llama_target import _ModelParams

    lib = ctypes.CDLL(lib_path)
    lib.llama_log_set.argtypes = [log_t, ctypes.c_void_p]
    lib.llama_log_set(log, None)
    lib.llama_backend_init()
    lib.llama_model_default_params.restype = _ModelParams
    lib.llama_model_load_from_file.restype = ctypes.c_void_p
    lib.llama_model_load_from_file.argtypes = [ctypes.c_char_p, _ModelParams]
    return lib


def loader_requests(lib_path: str, paths: list[str]) -> int:
    """Load each model and print, one JSON line per file, the tensors llama.cpp's loader asked for in order (its
    debug lines ``create_tensor: loading tensor NAME``) and whether the load succeeded."""
    log_t = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    lines: list[str] = []

    @log_t
    def log(level, text, user):
        if text:
            lines.append(text.decode("utf-8", "replace"))

    lib = _open_llama(lib_path, log_t, log)
    lib.llama_model_free.argtypes = [ctypes.c_void_p]
    for path in paths:
        del lines[:]
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = 0
        model = lib.llama_model_load_from_file(path.encode(), mp)
        asked = [m.group(1) for m in re.finditer(r"create_tensor: loading tensor (\S+)", "".join(lines))]
        print(json.dumps({"path": path, "ok": bool(model), "requests": asked}), flush=True)
        if model:
            lib.llama_model_free(model)
    return 0


def worker(lib_path: str, model_path: str, configs: list[dict]) -> int:
    """Load ``model_path`` and create one context per configuration.  Every log line is printed at once as
    ``{"index": i, "line": ...}`` (so that a context whose graph reservation aborts the process still shows the
    buffers allocated before), then ``{"index": i, "ok": ...}`` when the context is created or refused."""
    log_t = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    current = [-1]

    @log_t
    def log(level, text, user):
        if text:
            sys.stdout.write(json.dumps({"index": current[0], "line": text.decode("utf-8", "replace")}) + "\n")
            sys.stdout.flush()

    lib = _open_llama(lib_path, log_t, log)
    lib.llama_context_default_params.restype = ContextParams
    lib.llama_init_from_model.restype = ctypes.c_void_p
    lib.llama_init_from_model.argtypes = [ctypes.c_void_p, ContextParams]
    lib.llama_free.argtypes = [ctypes.c_void_p]
    mp = lib.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = lib.llama_model_load_from_file(model_path.encode(), mp)
    print(json.dumps({"index": -1, "ok": bool(model)}), flush=True)
    if not model:
        return 1
    for i, cfg in enumerate(configs):
        current[0] = i
        cp = lib.llama_context_default_params()
        cp.n_ctx = cfg["ctx"]
        cp.n_seq_max = cfg.get("seqs", 1)
        cp.n_threads = cp.n_threads_batch = 1
        cp.type_k = GGML_TYPES[cfg.get("type_k", "F16")]
        cp.type_v = GGML_TYPES[cfg.get("type_v", "F16")]
        fa = cfg.get("flash_attn")
        cp.flash_attn_type = -1 if fa is None else int(bool(fa))
        cp.swa_full = bool(cfg.get("swa_full", True))
        cp.kv_unified = bool(cfg.get("kv_unified", False))
        cp.embeddings = bool(cfg.get("embeddings", False))
        ctx = lib.llama_init_from_model(model, cp)
        print(json.dumps({"index": i, "ok": bool(ctx)}), flush=True)
        if ctx:
            lib.llama_free(ctx)
    return 0


def collect(stdout: str) -> tuple[list[str], dict[int, dict]]:
    """The worker's output as (model load lines, index -> {"ok": bool or None when it died, "lines": [...]})."""
    model_lines: list[str] = []
    out: dict[int, dict] = {}
    for raw in stdout.splitlines():
        if not raw.startswith("{"):
            continue
        rec = json.loads(raw)
        i = rec["index"]
        if i < 0:
            if "line" in rec:
                model_lines.append(rec["line"])
            continue
        entry = out.setdefault(i, {"ok": None, "lines": []})
        if "line" in rec:
            entry["lines"].append(rec["line"])
        else:
            entry["ok"] = rec["ok"]
    return model_lines, out


# ----------------------------------------------------------------------------------------------------------------
# parsing and comparing
# ----------------------------------------------------------------------------------------------------------------

_PATTERNS = {
    "model": re.compile(r"model buffer size\s*=\s*([\d.]+) MiB"),
    "kv": re.compile(r"(?:KV|DSV4 \w+ state) buffer size\s*=\s*([\d.]+) MiB"),
    "recurrent": re.compile(r"RS buffer size\s*=\s*([\d.]+) MiB"),
    "output": re.compile(r"output buffer size\s*=\s*([\d.]+) MiB"),
    "compute": re.compile(r"compute buffer size\s*=\s*([\d.]+) MiB"),
}


def reported(lines: list[str]) -> dict[str, float | None]:
    """The sizes llama.cpp logged (MiB, summed over buffers of one kind; None when none was logged)."""
    out: dict[str, float | None] = {}
    text = "".join(lines)
    for name, pat in _PATTERNS.items():
        vals = [float(v) for v in pat.findall(text)]
        out[name] = round(sum(vals), 2) if vals else None
    return out


def ours(est) -> dict[str, float]:
    """Our figures in MiB at llama.cpp's precision (2 decimals per buffer)."""

    def r(n: int) -> float:
        return round(n / (1024 * 1024), 2)

    kv = round(sum(r(b) for name, b in est.buffers.items() if name != "recurrent"), 2)
    model = round(r(est.model_bytes - est.repack_bytes) + r(est.repack_bytes), 2)  # logged per buffer
    return {
        "model": model,
        "kv": kv,
        "recurrent": r(est.buffers.get("recurrent", 0)),
        "output": r(est.output_bytes),
        "compute": est.compute_bytes / 2**20,
    }


def configurations(ctxs: list[int], quick: bool) -> list[dict]:
    """Context size x cache types x sequences x flash attention x SWA cache size; the last three are there for
    llama.cpp's refusals (a quantized V cache without flash attention, different K and V types for MLA)."""
    out = []
    for ctx in ctxs:
        out.append({"ctx": ctx})
        if quick:
            continue
        out += [
            {"ctx": ctx, "type_k": "Q8_0", "type_v": "Q8_0", "flash_attn": True},
            {"ctx": ctx, "type_k": "F32", "type_v": "F32", "flash_attn": False},
            {"ctx": ctx, "seqs": 3},
            {"ctx": ctx, "seqs": 2, "kv_unified": True},
            {"ctx": ctx, "swa_full": False, "seqs": 2},
            {"ctx": ctx, "embeddings": True},
            {"ctx": ctx, "type_k": "Q4_0", "type_v": "F16", "flash_attn": False},
            {"ctx": ctx, "type_k": "F16", "type_v": "Q4_0", "flash_attn": False},
            {"ctx": ctx, "type_k": "F32", "type_v": "F16"},
            {"ctx": ctx, "flash_attn": False},
        ]
    return out


# variants of a minimal model that reach layers it has none of (``--set`` values, by variant name)
VARIANTS = {
    "deepseek4": {"compressed": ["attention.compress_ratios=[4,128]"]},
    # the minimal nemotron_h has feed-forward layers only: Mamba-2, attention and feed-forward layers, and the
    # proportions of Nemotron-H (8 groups, a state of 128)
    "granitehybrid": {
        "hybrid": [
            "block_count=4",
            "attention.head_count_kv=[0,4,0,0]",
            "embedding_length=256",
            "ssm.inner_size=512",
            "ssm.state_size=128",
            "ssm.group_count=8",
            "ssm.time_step_rank=8",
        ]
    },
    "nemotron_h": {
        "hybrid": [
            "block_count=6",
            "attention.head_count=8",
            "attention.head_count_kv=[0,0,2,0,0,0]",
            "feed_forward_length=[0,0,0,672,0,0]",
            "embedding_length=256",
            "ssm.inner_size=512",
            "ssm.state_size=128",
            "ssm.group_count=8",
            "ssm.time_step_rank=8",
        ]
    },
}


def with_conv_bias(tensors: dict) -> dict:
    """The model with a ``ssm_conv1d.bias`` beside each Mamba-2 layer's ``ssm_conv1d.weight`` that has none (the
    layers with ``ssm_in`` and no ``ssm_x``; a gated delta net's convolution has no bias): the minimal model
    leaves the optional tensor out, and llama.cpp's Mamba-2 graph adds it unconditionally (it crashes on the null
    tensor, where every published model has one)."""
    from gguf_construct.arch.loader import TensorMeta

    out = dict(tensors)
    for name, meta in tensors.items():
        bias = name[: -len("weight")] + "bias"
        layer = name[: -len("ssm_conv1d.weight")]
        mamba2 = layer + "ssm_in.weight" in tensors and layer + "ssm_x.weight" not in tensors  # not gated delta
        if name.endswith(".ssm_conv1d.weight") and mamba2 and bias not in out:
            out[bias] = TensorMeta(bias, (int(meta.ne[1]),), 0)
    return out


def quantized(tensors: dict, type_name: str) -> dict:
    """The model with every 2-D or larger ``.weight`` but the norms in ``type_name`` where its rows are whole
    blocks (zero bytes decode to zero in every type)."""
    import dataclasses

    from gguf_construct.format.spec import tensor_types

    t = {x.name: x for x in tensor_types()}[type_name]
    out = {}
    for name, meta in tensors.items():
        if (
            len(meta.ne) >= 2
            and int(meta.ne[0]) % t.block_size == 0
            and name.endswith(".weight")
            and "norm" not in name
        ):
            meta = dataclasses.replace(meta, type=t.id)
        out[name] = meta
    return out


def run_configs(
    lib: str, path: Path, configs: list[dict], timeout: float, max_deaths: int | None = None
) -> tuple[list[str], dict[int, dict]]:
    """Every configuration through workers: after a context whose creation killed the process (the buffers it
    logged before dying are still compared), a new worker takes the remaining ones (up to ``max_deaths`` deaths
    per model, default one per configuration; the rest are then not reached)."""
    max_deaths = len(configs) if max_deaths is None else max_deaths
    pending = list(range(len(configs)))
    model_lines: list[str] = []
    results: dict[int, dict] = {}
    deaths = 0
    while pending and deaths < max_deaths:
        try:
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--lib",
                    lib,
                    "--worker",
                    str(path),
                    json.dumps([configs[i] for i in pending]),
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            stdout = proc.stdout
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        lines, got = collect(stdout)
        model_lines = model_lines or lines
        if not got:
            break
        for j, r in got.items():
            results[pending[j]] = r
            deaths += r["ok"] is None
        pending = [i for k, i in enumerate(pending) if k not in got]
    return model_lines, results


def main(argv: list[str] | None = None) -> int:
    """Run the differential; print agreement per family."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--archs", default=None)
    ap.add_argument("--ctx", default="512,4096,32768")
    ap.add_argument("--quick", action="store_true", help="only the default configuration per context size")
    ap.add_argument(
        "--configs",
        default=None,
        metavar="N,M,...",
        help="only these of the configurations per context size (indexes into the list)",
    )
    ap.add_argument("--sizes", default="", help="hyperparameters of the minimal models, e.g. embedding_length=256")
    ap.add_argument("--vocab", type=int, default=32)
    ap.add_argument(
        "--quant",
        default=None,
        metavar="TYPES",
        help="also each model with its matrix weights in these types (e.g. Q4_0,Q4_K,IQ4_NL,Q8_0): the "
        "CPU_REPACK buffer ggml-cpu repacks some of them into (family 'weights TYPE')",
    )
    ap.add_argument("--json", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--worker", nargs=2, metavar=("MODEL", "CONFIGS"), help=argparse.SUPPRESS)
    ap.add_argument("--requests", nargs="+", metavar="MODEL", help="print the tensors the loader asks for")
    ap.add_argument(
        "--results",
        default=None,
        metavar="FILE",
        help="write the note's results (per-family agreement of --summarize's rows and the side by "
        "side with gguf-parser-go's method) to FILE (JSON)",
    )
    ap.add_argument(
        "--summarize",
        default=None,
        metavar="ROWS",
        help="with --results: the rows (--json output) of runs to summarise (comma-separated files)",
    )
    args = ap.parse_args(argv)
    if args.results:
        out = Path(args.out or tempfile.mkdtemp(prefix="mem-note-"))
        out.mkdir(parents=True, exist_ok=True)
        rows = [json.loads(x) for path in (args.summarize or "").split(",") if path for x in open(path)]
        rows = list({(r["arch"], json.dumps(r["config"], sort_keys=True)): r for r in rows}.values())
        result = {
            "generated_by": "tools/memory_differential.py --results",
            "llama_cpp": "llama-cpp-python 0.3.36 (vendored llama.cpp), CPU backend",
            "agreement": summary(rows),
            "side_by_side": side_by_side(args.lib, out, args.timeout),
        }
        from gguf_construct.base.atomic import atomic_path

        with atomic_path(args.results) as tmp:
            Path(tmp).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        return 0
    if args.requests:
        return loader_requests(args.lib, args.requests)
    if args.worker:
        return worker(args.lib, args.worker[0], json.loads(args.worker[1]))

    from gguf_construct.arch.memory import ContextParams as Params
    from gguf_construct.arch.memory import estimate
    from gguf_construct.arch.synth import minimal_model_parts, model_architectures
    from gguf_construct.breaking.models import build_model_file
    from gguf_construct.filemodel.gguffile import load
    from model_differential import family

    out = Path(args.out or tempfile.mkdtemp(prefix="mem-diff-"))
    out.mkdir(parents=True, exist_ok=True)
    names = args.archs.split(",") if args.archs else model_architectures()
    sizes = {k: int(v) for k, v in (x.split("=") for x in args.sizes.split(",") if x)}
    configs = configurations([int(x) for x in args.ctx.split(",")], args.quick)
    if args.configs:
        per = len(configurations([0], args.quick))
        keep = {int(x) for x in args.configs.split(",")}
        configs = [c for i, c in enumerate(configs) if i % per in keep]
    rows = []
    sink = open(args.json, "w") if args.json else None  # noqa: SIM115 - rows as they come (a long run)
    quant = [q for q in (args.quant or "").split(",") if q]
    todo = (
        [(n, None) for n in names]
        + [(n, q) for n in names for q in quant]
        + [(n, v) for n in names for v in VARIANTS.get(n, ())]
    )
    for name, qt in todo:
        try:
            if qt in VARIANTS.get(name, ()):
                from gguf_construct.arch.expect import architecture_parts

                meta, tensors = architecture_parts(name, VARIANTS[name][qt], n_vocab=args.vocab)
            else:
                try:
                    meta, tensors = minimal_model_parts(name, sizes=sizes or None, n_vocab=args.vocab)
                except ValueError:  # the architecture's asserts want other sizes: its smallest model
                    meta, tensors = minimal_model_parts(name, n_vocab=args.vocab)
        except Exception as exc:  # noqa: BLE001 - reported
            print(f"{name}: no minimal model ({exc})", file=sys.stderr)
            continue
        tensors = with_conv_bias(tensors)
        fam = family(name, meta, tensors)
        if qt and qt not in VARIANTS.get(name, ()):
            tensors, fam = quantized(tensors, qt), f"weights {qt}"
        path = out / f"{name}{'@' + qt if qt else ''}.gguf"
        build_model_file(meta, tensors).save(path)
        f = load(str(path))
        offsets = {t.name: (0, int(t.offset)) for t in f.tensors}
        model_lines, results = run_configs(args.lib, path, configs, args.timeout)
        model_mib = reported(model_lines)["model"]
        for i, cfg in enumerate(configs):
            r = results.get(i)
            row = {"arch": name + (f"@{qt}" if qt else ""), "family": fam, "config": cfg}
            if r is None:
                row["llama"] = "not reached"
            elif r["ok"] is False:
                row["llama"] = "refused"
                row["error"] = [x.strip() for x in r["lines"] if x.startswith("llama_init_from_model:")][-1:]
            else:
                got = reported(r["lines"])
                got["model"] = model_mib
                got["crashed"] = r["ok"] is None  # died creating the context: the buffers before are compared
                if got["crashed"]:
                    got["compute"] = None
                row["llama"] = got
            try:
                p = Params(
                    n_seq_max=cfg.get("seqs"),
                    type_k=cfg.get("type_k"),
                    type_v=cfg.get("type_v"),
                    flash_attn=cfg.get("flash_attn"),
                    swa_full=cfg.get("swa_full"),
                    kv_unified=cfg.get("kv_unified"),
                    embeddings=cfg.get("embeddings"),
                )
                est = estimate(meta, tensors, cfg["ctx"], p, offsets=offsets)
                row["ours"] = ours(est)
                row["replayed"] = est.replayed
                row["memory"] = est.memory
            except Exception as exc:  # noqa: BLE001 - reported
                row["ours"] = None
                row["our_error"] = f"{type(exc).__name__}: {exc}"
                row["our_refusal"] = str(exc) if isinstance(exc, ValueError) else None
            rows.append(row)
            if sink:
                sink.write(json.dumps(row) + "\n")
                sink.flush()
    report(rows)
    return 0


COMPONENTS = ("model", "kv", "recurrent", "output")

# how estimate's refusals begin when llama.cpp does not refuse the context but dies creating it
CRASHES = ("ggml aborts", "llama.cpp crashes")

# the side-by-side note (docs/memory.md): models large enough that 2 decimals of MiB discriminate
NOTE_ARCHS = ("llama", "qwen2", "gemma2", "cohere2", "deepseek2", "mamba", "rwkv7", "jamba", "bert")
NOTE_CONFIGS = (
    {"ctx": 4096},
    {"ctx": 32768},
    {"ctx": 4096, "seqs": 4},
    {"ctx": 4096, "swa_full": False},
    {"ctx": 4096, "type_k": "Q8_0", "type_v": "Q8_0", "flash_attn": True},
)


def _plain(meta) -> dict:
    return {k: (list(v.value) if isinstance(v.value, (list, tuple)) else v.value) for k, v in meta.items()}


def wide_model(name: str, path: Path) -> tuple[dict, dict, dict]:
    """Save at ``path`` the minimal model of ``name`` made 256 wide (1024 feed-forward, 1000 tokens) where the
    architecture allows, so that llama.cpp's 2 decimals of MiB discriminate; returns its metadata, its tensor
    infos and their data offsets (as the estimate takes them)."""
    from gguf_construct.arch.synth import minimal_model_parts
    from gguf_construct.breaking.models import build_model_file
    from gguf_construct.filemodel.gguffile import load

    try:
        meta, tensors = minimal_model_parts(
            name,
            sizes=None if name.startswith("rwkv") else {"embedding_length": 256, "feed_forward_length": 1024},
            n_vocab=1000,
        )
    except ValueError:
        meta, tensors = minimal_model_parts(name, n_vocab=1000)
    build_model_file(meta, tensors).save(path)
    return meta, tensors, {t.name: (0, int(t.offset)) for t in load(str(path)).tensors}


def side_by_side(lib: str, out: Path, timeout: float) -> list[dict]:
    """Our figures, llama.cpp's logged ones and gguf-parser-go's method on the note's models and configurations."""
    from gguf_parser_method import SOURCE, method

    from gguf_construct.arch.memory import ContextParams as Params
    from gguf_construct.arch.memory import estimate, row_size
    from gguf_construct.filemodel.gguffile import tensor_nbytes

    rows = []
    for name in NOTE_ARCHS:
        path = out / f"note-{name}.gguf"
        meta, tensors, offsets = wide_model(name, path)
        model_lines, results = run_configs(lib, path, list(NOTE_CONFIGS), timeout)
        for i, cfg in enumerate(NOTE_CONFIGS):
            r = results.get(i) or {"ok": None, "lines": []}
            row = {"arch": name, "config": cfg, "source": SOURCE}
            if r["ok"] is False:
                row["llama"] = "refused"
            elif r["lines"]:  # created, or died reserving the graph after allocating its buffers
                got = reported(r["lines"])
                got["model"] = reported(model_lines)["model"]
                row["llama"] = {c: got.get(c) or 0.0 for c in COMPONENTS + ("compute",)}
                row["llama"]["died"] = r["ok"] is None
            else:
                row["llama"] = "not reached"
            p = Params(
                n_seq_max=cfg.get("seqs"),
                type_k=cfg.get("type_k"),
                type_v=cfg.get("type_v"),
                flash_attn=cfg.get("flash_attn"),
                swa_full=cfg.get("swa_full"),
            )
            try:
                row["ours"] = ours(estimate(meta, tensors, cfg["ctx"], p, offsets=offsets))
            except ValueError as exc:
                row["ours"] = f"refused: {exc}"
            pg = method(
                _plain(meta),
                tensors,
                cfg["ctx"],
                seqs=cfg.get("seqs", 1),
                type_k=cfg.get("type_k", "F16"),
                type_v=cfg.get("type_v", "F16"),
                flash_attn=cfg.get("flash_attn", True) is not False,
                swa_full=cfg.get("swa_full", True),
                row_size=row_size,
                tensor_bytes=lambda t: tensor_nbytes(t.type, t.ne),
            )
            row["gguf_parser"] = {c: round(v / 2**20, 2) for c, v in pg.items()}
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """Per family: contexts compared, agreement per component, refusals agreed, compute error."""
    fams: dict[str, dict] = {}
    for r in rows:
        f = fams.setdefault(
            r["family"],
            {
                "archs": set(),
                "contexts": 0,
                "died": 0,
                "refusals": 0,
                "refusals_agreed": 0,
                **{c: [0, 0] for c in COMPONENTS},
                "compute_errors": [],
            },
        )
        f["archs"].add(r["arch"])
        if r.get("llama") == "not reached":
            continue
        llama_refused = r.get("llama") == "refused" or (
            (r.get("our_refusal") or "").startswith(CRASHES)
            and isinstance(r.get("llama"), dict)
            and r["llama"].get("crashed")
        )
        if llama_refused or r.get("our_refusal"):
            f["refusals"] += 1
            f["refusals_agreed"] += bool(
                llama_refused
                and r.get("our_refusal")
                and (r["our_refusal"].startswith(CRASHES) or any(r["our_refusal"] in x for x in r.get("error") or []))
            )
            continue
        if not isinstance(r.get("llama"), dict) or not r.get("ours"):
            continue
        f["contexts"] += 1
        f["died"] += bool(r["llama"].get("crashed"))
        for c in COMPONENTS:
            f[c][1] += 1
            f[c][0] += abs((r["llama"].get(c) or 0.0) - r["ours"][c]) < 0.005
        if r["llama"].get("compute"):
            f["compute_errors"].append(abs(r["ours"]["compute"] - r["llama"]["compute"]) / r["llama"]["compute"])
    out = {}
    for name, f in sorted(fams.items()):
        errs = sorted(f.pop("compute_errors"))
        f["archs"] = len(f["archs"])
        f["compute"] = {
            "n": len(errs),
            "median": round(errs[len(errs) // 2], 4) if errs else None,
            "within_10": sum(e <= 0.10 for e in errs),
        }
        out[name] = f
    return out


def report(rows: list[dict]) -> None:
    """Agreement per family and component (exact at 2 decimals), compute error per family, disagreements."""
    fams: dict[str, dict] = {}
    disagreements = []
    for r in rows:
        f = fams.setdefault(
            r["family"],
            {
                "contexts": 0,
                "refused": 0,
                "agreed_refusals": 0,
                "crashed": 0,
                "not_replayed": 0,
                **{c: [0, 0] for c in COMPONENTS},
                "compute": [],
            },
        )
        llama_refused = r.get("llama") == "refused"
        if (
            (r.get("our_refusal") or "").startswith(CRASHES)
            and isinstance(r.get("llama"), dict)
            and r["llama"].get("crashed")
        ):
            llama_refused = True  # both abort creating the cache
            r["error"] = [r["our_refusal"]]
        if llama_refused or r.get("our_refusal"):  # refusals compared both ways, with llama.cpp's message
            if r.get("llama") == "not reached":
                continue
            f["refused"] += 1
            same = (
                llama_refused
                and bool(r.get("our_refusal"))
                and any(r["our_refusal"] in line for line in r.get("error") or [])
            )
            f["agreed_refusals"] += same
            if not same:
                disagreements.append(
                    (
                        r["arch"],
                        r["config"],
                        "refusal",
                        r.get("our_refusal") or "created",
                        (r.get("error") or ["created"])[0] if llama_refused else "created",
                    )
                )
            continue
        if not isinstance(r.get("llama"), dict):
            continue
        f["contexts"] += 1
        f["crashed"] += bool(r["llama"].get("crashed"))
        if not r.get("ours") or not r.get("replayed", True):
            f["not_replayed"] += 1
            continue
        llama, mine = r["llama"], r["ours"]
        for c in COMPONENTS:
            want = llama.get(c)
            got = mine.get(c)
            if want is None:
                want = 0.0  # llama.cpp logs no buffer it did not create
            ok = abs(want - got) < 0.005
            f[c][0] += ok
            f[c][1] += 1
            if not ok:
                disagreements.append((r["arch"], r["config"], c, got, want))
        if llama.get("compute"):
            f["compute"].append((mine["compute"] - llama["compute"]) / llama["compute"])
    print(
        f"{'family':14} {'contexts':>8} {'died':>5} {'refused':>7} {'n/r':>4} "
        + " ".join(f"{c:>10}" for c in COMPONENTS)
        + "  compute err (median |%|, max |%|)"
    )
    for name, f in sorted(fams.items()):
        cells = [f"{f[c][0]}/{f[c][1]}" for c in COMPONENTS]
        errs = sorted(abs(e) * 100 for e in f["compute"])
        comp = f"{errs[len(errs) // 2]:.1f}%, {errs[-1]:.1f}%" if errs else "-"
        print(
            f"{name:14} {f['contexts']:8d} {f['crashed']:5d} {f['agreed_refusals']:3d}/{f['refused']:<3d} "
            f"{f['not_replayed']:4d} " + " ".join(f"{x:>10}" for x in cells) + f"  {comp}"
        )
    for arch, cfg, c, got, want in disagreements[:60]:
        if c == "refusal":
            print(f"DISAGREE {arch} {json.dumps(cfg)} refusal: ours {got!r}, llama.cpp {want!r}")
        else:
            print(f"DISAGREE {arch} {json.dumps(cfg)} {c}: ours {got:.2f} MiB, llama.cpp {want:.2f} MiB")
    if len(disagreements) > 60:
        print(f"... {len(disagreements) - 60} more")


if __name__ == "__main__":
    sys.exit(main())
