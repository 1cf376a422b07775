"""The memory llama.cpp takes to run a model: weights, KV cache, recurrent state, output buffer, compute buffer.

:func:`estimate` replays, for the CPU backend, what ``llama_context``'s constructor allocates (the facts extracted
from llama.cpp into ``spec/architectures/_memory.yaml`` by tools/extract_llama_memory.py, the hyperparameter
accessors from ``spec/architectures/_loader.yaml`` through the replayed load):

* the **model buffer**: with mmap (llama.cpp's default) the mapped range from the first byte of the first tensor
  the loader asks for to the last byte of the last one (the alignment padding between tensors included);
* the **KV cache**: ``llama_kv_cache`` per layer that has one (``has_kv``, the layer filters of
  ``create_memory``), K rows of ``n_embd_k_gqa(il)`` and V rows of ``n_embd_v_gqa(il)`` (the widest when V is
  transposed, i.e. without flash attention; none for MLA) in the cache types, ``kv_size`` cells per stream
  (``n_seq_max`` streams unless unified); a sliding-window model gets a second cache for its SWA layers of
  ``pad(min(n_ctx_seq, n_swa * streams + n_ubatch), 256)`` cells unless ``swa_full``; each tensor padded to the
  CPU buffer alignment;
* the **recurrent state** (``llama_memory_recurrent``): per layer, ``n_embd_r()`` and ``n_embd_s()`` F32 values
  per row, ``max(1, n_seq_max) * (1 + n_rs_seq)`` rows;
* the **special caches** create_memory builds for some architectures (DSA and MSA caches with their indexer
  cache, the DSA cache beside a SWA cache, DSV4's raw, compressed and indexer caches with its compressor state,
  the hybrid memory with an indexer cache): the class create_memory constructs, its layer filters and the
  hyperparameter copies it gives its sub-caches come from the spec;
* the **CPU_REPACK buffer**: the matrix weights ggml-cpu repacks for the CPU's features leave the mapped range
  for a buffer of their own (:func:`repacked`);
* the **output buffer**: logits (``n_vocab`` floats) for ``n_seq_max`` outputs, plus the embeddings when asked;
* the **compute buffer**: the graph allocator's peak cannot be replayed without building the graph; it is
  *estimated* (:func:`compute_estimate` says how), and the differential tool measures the error per family.

``llama_init_from_model``'s checks (``context_checks`` in the spec) run first: a context llama.cpp refuses is a
ValueError with llama.cpp's message.
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Mapping

from ..format.spec import tensor_type_by_id, tensor_types
from .interp import UNKNOWN, Frame, Interpreter
from .loader import LoadPlan, MetaValue, TensorMeta, plan_load
from .programs import architecture, c_div, c_mod, loader

__all__ = [
    "ContextParams",
    "CacheLayer",
    "Estimate",
    "estimate",
    "memory_spec",
    "mib",
    "compute_estimate",
    "repacked",
    "host_cpu_features",
]

MiB = 1024 * 1024


@functools.lru_cache(maxsize=None)
def memory_spec() -> dict:
    """spec/architectures/_memory.yaml."""
    from ..format.spec import load_yaml

    return load_yaml("architectures/_memory.yaml")


def mib(n: int) -> float:
    """Bytes as MiB (llama.cpp's unit in its log lines)."""
    return n / MiB


def _pad(x: int, n: int) -> int:
    return (x + n - 1) // n * n


@functools.lru_cache(maxsize=None)
def _types() -> dict[str, Any]:
    return {t.name: t for t in tensor_types()}


def row_size(type_name: str, n: int) -> int:
    """``ggml_row_size``: bytes of ``n`` values of a tensor type."""
    t = _types()[type_name.upper()]
    return n // t.block_size * t.type_size


@dataclass
class ContextParams:
    """The ``llama_context_params`` that size memory; ``None`` takes llama.cpp's default (from the spec).
    ``flash_attn``: True, False, or None for llama.cpp's *auto* (enabled when the cache is created)."""

    n_ctx: int | None = None
    n_batch: int | None = None
    n_ubatch: int | None = None
    n_seq_max: int | None = None
    type_k: str | None = None
    type_v: str | None = None
    flash_attn: bool | None = None
    swa_full: bool | None = None
    kv_unified: bool | None = None
    embeddings: bool | None = None
    n_rs_seq: int | None = None
    cpu_features: frozenset[str] | None = None  # ggml_cpu_has_* features for CPU_REPACK; None: this machine's

    def resolved(self) -> dict[str, Any]:
        """Every field with llama.cpp's default filled in."""
        d = memory_spec()["context_defaults"]
        out = {}
        for name in ("n_ctx", "n_batch", "n_ubatch", "n_seq_max", "swa_full", "kv_unified", "embeddings", "n_rs_seq"):
            v = getattr(self, name)
            out[name] = d[name] if v is None else v
        for name in ("type_k", "type_v"):
            v = getattr(self, name)
            out[name] = (v or str(d[name]).replace("GGML_TYPE_", "")).upper()
        out["flash_attn"] = True if self.flash_attn is None else bool(self.flash_attn)
        return out


@dataclass(frozen=True)
class CacheLayer:
    """One layer of a cache: which cache (``kv``, ``swa``, ``recurrent``), cells (rows), the row widths in
    values and the bytes of its K and V (R and S for recurrent state) tensors."""

    il: int
    cache: str
    cells: int
    k_width: int
    v_width: int
    k_bytes: int
    v_bytes: int


@dataclass
class Estimate:
    """The figures for one context size (bytes).  ``kv_bytes``/``recurrent_bytes`` are the buffers as allocated
    (each tensor padded to the CPU alignment); ``kv_size_bytes`` the unpadded sum llama.cpp prints as ``size``.
    ``replayed`` is False when the memory is a class this module does not replay (``notes`` says which)."""

    ctx: int
    n_ctx: int
    n_ctx_seq: int
    n_batch: int
    n_ubatch: int
    n_seq_max: int
    memory: str
    model_bytes: int
    kv_bytes: int
    kv_size_bytes: int
    recurrent_bytes: int
    output_bytes: int
    compute_bytes: int
    repack_bytes: int = 0  # of model_bytes: the weights ggml-cpu repacks into its CPU_REPACK buffer
    layers: list[CacheLayer] = field(default_factory=list)
    caches: dict[str, int] = field(default_factory=dict)  # cache name -> cells
    buffers: dict[str, int] = field(default_factory=dict)  # cache name -> bytes of its buffer (as llama.cpp logs)
    notes: list[str] = field(default_factory=list)
    replayed: bool = True

    @property
    def total_bytes(self) -> int:
        """Everything together."""
        return self.model_bytes + self.kv_bytes + self.recurrent_bytes + self.output_bytes + self.compute_bytes

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON object (bytes), with the per-layer cache table."""
        return {
            "ctx": self.ctx,
            "n_ctx": self.n_ctx,
            "n_ctx_seq": self.n_ctx_seq,
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "n_seq_max": self.n_seq_max,
            "memory": self.memory,
            "model_bytes": self.model_bytes,
            "repack_bytes": self.repack_bytes,
            "kv_bytes": self.kv_bytes,
            "kv_size_bytes": self.kv_size_bytes,
            "recurrent_bytes": self.recurrent_bytes,
            "output_bytes": self.output_bytes,
            "compute_bytes": self.compute_bytes,
            "compute_estimated": True,
            "total_bytes": self.total_bytes,
            "replayed": self.replayed,
            "caches": self.caches,
            "buffers": self.buffers,
            "notes": self.notes,
            "layers": [vars(x) for x in self.layers],
        }


# ------------------------------------------------------------------------------------------------------------


class _Rules:
    """One branch of create_memory over one model: its flags, layer filters and the truth of their conditions
    (``lambdas``: the branch's, default: the default branch's)."""

    def __init__(self, plan: LoadPlan, lambdas: list | None = None, ctx_type: str = "LLAMA_CONTEXT_TYPE_DEFAULT"):
        spec = memory_spec()
        constants = dict(loader()["constants"])
        self.hparams = plan.hparams
        self.arch = plan.arch
        traits = set(getattr(architecture(plan.arch), "traits", None) or ())

        class _Params:
            pass

        params = _Params()
        params.ctx_type = constants[ctx_type]
        interp = Interpreter({})
        interp.globals.update(constants)
        interp.globals.update(
            {
                "hparams": self.hparams,
                "arch": plan.arch,
                "params": params,
                "True": True,
                "False": False,
                "int": int,
                "max": max,
                "min": min,
                "_div": c_div,
                "_mod": c_mod,
                "llm_arch_is_recurrent": lambda a: "recurrent" in traits,
                "llm_arch_is_hybrid": lambda a: "hybrid" in traits,
            }
        )
        for name, expr in (spec.get("flags") or {}).items():
            interp.globals[name] = interp.eval(expr, Frame(None))
        self.interp = interp
        self.functions: dict[str, Any] = {}
        for lam in (spec.get("lambdas") if lambdas is None else lambdas) or ():
            if all(self._true(w) for w in lam.get("when") or ()):
                self.functions[lam["name"]] = lam  # in source order: a later assignment replaces an earlier one

    def construct(self, constructs: list) -> str | None:
        """The memory class the branch constructs for this model (the first whose conditions hold)."""
        for c in constructs or ():
            if all(self._true(w) for w in c.get("when") or ()):
                return c["class"]
        return None

    def _true(self, expr: str) -> bool:
        v = self.interp.eval(expr, Frame(None))
        return bool(v) if v is not UNKNOWN else False

    def flag(self, name: str) -> bool:
        """A flag of the default branch (``mtp_on_hybrid_qwen``...)."""
        v = self.interp.globals.get(name, False)
        return bool(v) if v is not UNKNOWN else False

    def keep(self, name: str, il: int, default: str | None = None) -> bool:
        """The filter ``name`` for layer ``il``; when the branch sets no such filter, the expression ``default``
        (over ``il``), else True."""
        lam = self.functions.get(name)
        if lam is None:
            if default is None:
                return True
            v = self.interp.eval(default, Frame(None, None, {"il": il}))
            return bool(v) if v is not UNKNOWN else True
        v = self.interp.call(lam["body"], None, {lam.get("param", "il"): il})
        return bool(v) if v is not UNKNOWN else True


def _h(plan: LoadPlan, name: str, *args: Any) -> Any:
    value = getattr(plan.hparams, name)
    return value(*args) if callable(value) else value


def _kv_cache(h: Any, cp: dict, kv_size: int, name: str, keep, est: Estimate, *, unified: bool | None = None) -> None:
    """``llama_kv_cache``'s tensors over the hyperparameters ``h`` (the model's, or a special cache's copy) for the
    layers ``keep`` accepts; ``unified`` overrides the context's KV-unified setting (one stream)."""
    align = memory_spec()["cpu_buffer_alignment"]
    n_stream = 1 if (cp["kv_unified"] if unified is None else unified) else cp["n_seq_max"]
    v_trans = not cp["flash_attn"]
    is_mla = bool(h.is_mla())
    v_max = int(h.n_embd_v_gqa_max()) if v_trans else None
    for il in range(int(h.n_layer_all)):
        if not h.has_kv(il) or not keep(il):
            continue
        kw = int(h.n_embd_k_gqa(il))
        vw = 0 if is_mla else (v_max if v_trans else int(h.n_embd_v_gqa(il)))
        for side, type_name, width in (("K", cp["type_k"], kw), ("V", cp["type_v"], vw)):
            block = _types()[type_name].block_size
            if width % block:  # ggml_new_tensor asserts that a row is whole blocks: the process aborts
                raise ValueError(
                    f"ggml aborts creating the {name} cache: layer {il}'s {side} row of {width} values "
                    f"is not a multiple of {type_name}'s block size {block}"
                )
        kb = row_size(cp["type_k"], kw) * kv_size * n_stream
        vb = row_size(cp["type_v"], vw) * kv_size * n_stream if not is_mla else 0
        est.layers.append(CacheLayer(il, name, kv_size, kw, vw, kb, vb))
        est.kv_size_bytes += kb + vb
        padded = _pad(kb, align) + (_pad(vb, align) if not is_mla else 0)
        est.kv_bytes += padded
        est.buffers[name] = est.buffers.get(name, 0) + padded
    est.caches[name] = kv_size


def _model_eval(plan: LoadPlan, **names: Any) -> Callable[[Any], Any]:
    """An evaluator of the spec's expressions as llama.cpp's memory code sees them: ``model.hparams`` is the
    model's hyperparameters (run on the replay's interpreter), ``names`` further local variables."""
    interp = object.__getattribute__(plan.hparams, "_interp")
    frame = Frame(None, None, {"model": SimpleNamespace(hparams=plan.hparams), **names})
    return lambda expr: interp.eval(str(expr), frame)


def _hparams_copy(plan: LoadPlan, cls: str, copy_name: str) -> Any:
    """The copy of the model's hyperparameters a special cache class gives one of its sub-caches (the overrides
    extracted into the spec, applied in source order)."""
    h = copy.copy(plan.hparams)
    evaluate = _model_eval(plan, hparams=h)
    for step in memory_spec()["hparams_overrides"][cls][copy_name]:
        value = evaluate(step["value"])
        if "fill" in step:
            object.__setattr__(h, step["fill"], [value] * len(getattr(h, step["fill"])))
        else:
            object.__setattr__(h, step["set"], value)
    return h


def _recurrent(plan: LoadPlan, cp: dict, keep, est: Estimate) -> None:
    """``llama_memory_recurrent``'s tensors (F32) for the layers ``keep`` accepts."""
    h = plan.hparams
    align = memory_spec()["cpu_buffer_alignment"]
    mem_size = max(1, cp["n_seq_max"])
    rs_seq = cp["n_rs_seq"] if plan.arch in (memory_spec().get("rs_rollback") or ()) else 0
    rows = mem_size * (1 + rs_seq)
    n_r, n_s = int(h.n_embd_r()), int(h.n_embd_s())
    ple = int(h.ple_conv_state())
    for il in range(int(h.n_layer())):
        if not keep(il):
            continue
        rb, sb = 4 * n_r * rows, 4 * n_s * rows
        pb = 4 * ple * rows if ple > 0 and h.is_ple(il) else 0
        est.layers.append(CacheLayer(il, "recurrent", rows, n_r, n_s, rb, sb))
        padded = _pad(rb, align) + _pad(sb, align) + (_pad(pb, align) if pb else 0)
        est.recurrent_bytes += padded
        est.buffers["recurrent"] = est.buffers.get("recurrent", 0) + padded
    est.caches["recurrent"] = rows


def _attention(
    plan: LoadPlan,
    cp: dict,
    est: Estimate,
    keep,
    *,
    h: Any = None,
    split: bool = True,
    unified: bool | None = None,
    prefix: str = "",
) -> None:
    """A KV cache over ``h`` (default: the model's hyperparameters), split into base and SWA caches
    (llama_kv_cache_iswa) when ``split`` and the model has SWA layers."""
    h = plan.hparams if h is None else h
    none = loader()["constants"]["LLAMA_SWA_TYPE_NONE"]
    base = est.n_ctx_seq
    if split and plan.hparams.swa_type != none:
        swa = _swa_cells(plan, cp, est, cp["kv_unified"] if unified is None else unified)
        _kv_cache(h, cp, base, prefix + "kv", lambda il: keep(il) and not plan.hparams.is_swa(il), est, unified=unified)
        _kv_cache(
            h, cp, swa, prefix + "swa", lambda il: keep(il) and bool(plan.hparams.is_swa(il)), est, unified=unified
        )
    else:
        _kv_cache(h, cp, base, prefix + "kv", keep, est, unified=unified)


def _swa_cells(plan: LoadPlan, cp: dict, est: Estimate, unified: bool) -> int:
    """Cells of a SWA cache (llama_kv_cache_iswa): the context's unless ``swa_full`` is off, then the window
    times the sequences sharing a stream, plus a micro-batch, padded."""
    if cp["swa_full"]:
        return est.n_ctx_seq
    window = int(plan.hparams.n_swa) * (cp["n_seq_max"] if unified else 1) + est.n_ubatch
    return _pad(min(est.n_ctx_seq, window), memory_spec()["swa_cache_pad"])


def _dsv4_state(plan: LoadPlan, cp: dict, est: Estimate, name: str, keep) -> None:
    """``llama_dsv4_comp_state``: per layer ``keep`` accepts, two F32 tensors (state and score) of
    ``n_embd_state x state_size`` per stream and roll-back plane; one stream per sequence."""
    facts = memory_spec()["dsv4"]
    state = facts["states"][name]
    align = memory_spec()["cpu_buffer_alignment"]
    evaluate = _model_eval(plan, **{k: v for k, v in facts.items() if isinstance(v, int)})
    size = int(evaluate(state["state_size"]))
    width = int(evaluate(state["n_embd_state"]))
    rs_seq = cp["n_rs_seq"] if plan.arch in (memory_spec().get("rs_rollback") or ()) else 0
    planes = cp["n_seq_max"] * (1 + rs_seq)
    for il in range(int(plan.hparams.n_layer())):
        if not keep(il):
            continue
        b = 4 * width * size * planes
        est.layers.append(CacheLayer(il, f"dsv4_{name}", size * planes, width, width, b, b))
        est.kv_bytes += 2 * _pad(b, align)
        est.kv_size_bytes += 2 * b
        est.buffers[f"dsv4_{name}"] = est.buffers.get(f"dsv4_{name}", 0) + 2 * _pad(b, align)


def _memory(plan: LoadPlan, rules: _Rules, cls: str, cp: dict, est: Estimate) -> None:
    """The caches of the memory class ``cls`` (the constructor arguments create_memory passes: its layer filters
    by name; the sub-caches each class builds, with the hyperparameter copies of the spec)."""
    h = plan.hparams
    spec = memory_spec()
    defaults = spec.get("hybrid_default_filters") or {}

    def keep(name: str, default: str | None = None):
        return functools.partial(rules.keep, name, default=default)

    def kept(name: str):  # a filter that is nullptr when the branch sets none: every layer
        return keep(name) if name in rules.functions else (lambda il: True)

    if cls == "llama_memory_recurrent":
        _recurrent(plan, cp, lambda il: True, est)
    elif cls in ("llama_memory_hybrid", "llama_memory_hybrid_iswa", "llama_memory_hybrid_idx"):
        _attention(
            plan, cp, est, keep("filter_attn", defaults.get("filter_attn")), split=cls == "llama_memory_hybrid_iswa"
        )
        _recurrent(plan, cp, keep("filter_recr", defaults.get("filter_recr")), est)
        if cls == "llama_memory_hybrid_idx" and "filter_idx" in rules.functions:
            _kv_cache(_hparams_copy(plan, cls, "hparams_idx"), cp, est.n_ctx_seq, "idx", keep("filter_idx"), est)
    elif cls in ("llama_kv_cache", "llama_kv_cache_iswa"):
        name = next((n for n in ("filter", "filter_mtp") if n in rules.functions), "filter")
        _attention(plan, cp, est, kept(name), split=cls == "llama_kv_cache_iswa")
    elif cls == "llama_kv_cache_dsa":
        _kv_cache(h, cp, est.n_ctx_seq, "kv", kept("filter_mla"), est)
        _kv_cache(_hparams_copy(plan, cls, "hparams_lid"), cp, est.n_ctx_seq, "lid", kept("filter_lid"), est)
    elif cls == "llama_kv_cache_msa":
        _kv_cache(h, cp, est.n_ctx_seq, "kv", kept("filter"), est)
        _kv_cache(_hparams_copy(plan, cls, "hparams_idx"), cp, est.n_ctx_seq, "idx", kept("filter_idx"), est)
    elif cls == "llama_kv_cache_dsa_iswa":  # a DSA cache for the full-attention layers, a KV cache for the SWA ones
        mla = kept("filter_mla")
        _kv_cache(h, cp, est.n_ctx_seq, "kv", lambda il: mla(il) and not h.is_swa(il), est)
        _kv_cache(
            _hparams_copy(plan, "llama_kv_cache_dsa", "hparams_lid"), cp, est.n_ctx_seq, "lid", kept("filter_lid"), est
        )
        _kv_cache(
            h, cp, _swa_cells(plan, cp, est, cp["kv_unified"]), "swa", lambda il: mla(il) and bool(h.is_swa(il)), est
        )
    elif cls == "llama_kv_cache_dsv4":  # streams per sequence whatever kv_unified says
        facts = spec["dsv4"]
        _attention(plan, cp, est, lambda il: True, h=_hparams_copy(plan, cls, "hparams_raw"), unified=False)
        ratio = {"filter_csa": facts["dsv4_csa_ratio"], "filter_hca": facts["dsv4_hca_ratio"]}

        def by_ratio(f: str):
            return lambda il: int(h.dsv4_compress_ratios[il]) == ratio[f]

        for name, copy_name, f in (
            ("csa", "hparams_csa", "filter_csa"),
            ("hca", "hparams_hca", "filter_hca"),
            ("lid", "hparams_lid", "filter_csa"),
        ):
            r = ratio[f]
            cells = _pad(max(1, (est.n_ctx_seq + r - 1) // r), facts["compressed_pad"])
            _kv_cache(_hparams_copy(plan, cls, copy_name), cp, cells, name, by_ratio(f), est, unified=False)
        for name, state in facts["states"].items():
            _dsv4_state(plan, cp, est, name, by_ratio(state["filter"]))
    else:
        raise ValueError(f"{plan.arch}: create_memory builds {cls}, which estimate does not know")


# /proc/cpuinfo flags -> the ggml_cpu_has_* feature they stand for (x86 and AArch64 spellings)
_CPUINFO_FEATURES = {
    "avx2": "avx2",
    "avx512f": "avx512",
    "asimd": "neon",
    "asimddp": "dotprod",
    "i8mm": "matmul_int8",
    "sve": "sve",
}


@functools.lru_cache(maxsize=None)
def host_cpu_features() -> frozenset[str]:
    """The ``ggml_cpu_has_*`` features of this machine's CPU (from /proc/cpuinfo; empty where it is not
    readable).  A ggml built for the native CPU (llama.cpp's default) has exactly these."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return frozenset()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags.update(value.split())
    return frozenset(f for flag, f in _CPUINFO_FEATURES.items() if flag in flags)


_LAYER_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")


def _weight_pattern(name: str) -> tuple[str, str]:
    """A tensor name as its llama-arch name pattern (``blk.%d.attn_q``) and suffix (``weight``)."""
    base, _, suffix = name.rpartition(".")
    return _LAYER_NUMBER.sub("%d", base), suffix


def repacked(plan: LoadPlan, tensors: Mapping[str, TensorMeta], features: frozenset[str] | set[str]) -> list:
    """The weight requests ggml-cpu's extra buffer (CPU_REPACK) takes, as ``(name, duplicated, bytes)``: a
    weight feeding a matrix multiplication (LLM_TENSOR_INFOS: MUL_MAT with 2 dimensions, MUL_MAT_ID with 3; a
    duplicated token embedding is the output's), of a type repack.cpp repacks on a CPU with ``features`` and a
    row count that is a multiple of what it needs (``spec: cpu_repack``)."""
    from ..format.reader import tensor_nbytes

    spec = memory_spec()
    rules = spec["cpu_repack"]
    ops = {p: op for op, patterns in spec["matmul_weights"].items() for p in patterns}
    dup = loader()["tensor_flags"]["TENSOR_DUPLICATED"]
    interp = Interpreter({})
    interp.globals.update(
        {
            f"ggml_cpu_has_{f}": (lambda f=f: f in features)
            for f in ("avx2", "avx512", "neon", "dotprod", "matmul_int8", "sve", "vxe", "riscv_v")
        }
    )
    interp.globals.update({"ggml_cpu_get_sve_cnt": lambda: 0, "QK8_0": _types()["Q8_0"].block_size})
    out = []
    for r in plan.requests:
        t = tensors.get(r.name)
        if t is None or r.name not in plan.used:
            continue
        pattern, suffix = _weight_pattern(r.name)
        if suffix == "bias":
            continue
        if r.flags & dup and pattern == "token_embd":
            pattern = spec["output_pattern"]
        op = ops.get(pattern)
        ne = [int(x) for x in t.ne]
        while len(ne) > 1 and ne[-1] == 1:
            ne.pop()
        if op is None or len(ne) != rules["weight_dims"][op]:
            continue
        type_name = tensor_type_by_id()[int(t.type)].name if str(t.type).isdigit() else str(t.type).upper()
        for rule in rules["types"].get(type_name, ()):
            if interp.eval(rule["when"], Frame(None)) is True and ne[1] % rule["rows_multiple"] == 0:
                out.append((r.name, bool(r.flags & dup), tensor_nbytes(t.type, t.ne)))
                break
    return out


def model_buffer(
    plan: LoadPlan,
    tensors: Mapping[str, TensorMeta],
    offsets: Mapping[str, tuple] | None,
    alignment: int = 32,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> int:
    """Bytes of the CPU model buffers: with ``offsets`` (name -> (file, offset of the data)) the mapped range
    over the tensors the loader uses (but ``exclude``: those another buffer holds), one range per file of a split
    model; without, their sizes each padded to ``alignment`` (as a file lays them out)."""
    from ..format.reader import tensor_nbytes

    used = [n for n in plan.used if n in tensors and n not in exclude]
    if offsets:
        ranges: dict[Any, list[int]] = {}
        for n in used:
            where, start = offsets[n]
            end = start + tensor_nbytes(tensors[n].type, tensors[n].ne)
            r = ranges.setdefault(where, [start, end])
            r[0], r[1] = min(r[0], start), max(r[1], end)
        return sum(e - s for s, e in ranges.values())
    sizes = [tensor_nbytes(tensors[n].type, tensors[n].ne) for n in used]
    return sum(_pad(s, alignment) for s in sizes[:-1]) + (sizes[-1] if sizes else 0)


def _ffn_rows(plan: LoadPlan, tensors: Mapping[str, TensorMeta], n_layer: int) -> int:
    """The widest feed-forward activation of a layer, in values per token, from the tensors the layers use: the
    up projection's output (dense, shared experts, and each of the ``n_expert_used`` routed experts), three times
    for a gated unit (gate, up, their product), 1.5 times for a fused gate-up projection."""
    h = plan.hparams
    widest = 0
    for il in range(n_layer):
        total = 0
        for kind in ("", "_exps", "_shexp", "_chexps"):
            up = tensors.get(f"blk.{il}.ffn_up{kind}.weight")
            if up is None or up.name not in plan.used or len(up.ne) < 2:
                continue
            width = int(up.ne[1])
            if kind in ("_exps", "_chexps"):
                try:
                    width *= max(1, int(h.n_expert_used(il)))
                except (TypeError, ValueError):
                    pass
            gate = f"blk.{il}.ffn_gate{kind}.weight" in tensors
            fused = not gate and int(up.ne[1]) == 2 * int(h.n_ff(il) or 0)
            total = max(total, 3 * width if gate else (3 * width // 2 if fused else width))
        widest = max(widest, total)
    return widest


def _mamba2_peak(plan: LoadPlan, tensors: Mapping[str, TensorMeta], est: Estimate, cp: dict, t: int) -> int:
    """The graph allocator's peak in a Mamba-2 layer (``build_mamba2_layer``: mamba2, nemotron_h, granite-hybrid,
    falcon-h1), in bytes; 0 when no layer is one (a layer with ``ssm_in`` and ``ssm_conv1d`` but no ``ssm_x``,
    which only Mamba-1 layers have).  ValueError for a layer without ``ssm_conv1d.bias``: the graph adds the
    missing tensor and the process dies creating the context.

    What the graph keeps alive, for ``T`` tokens in ``s`` sequences (F32): the input projection ``zxBCdt``
    (``P`` = ssm_in's output width, ``2 d_inner + 2 n_group d_state + n_head``) lives until ``z`` is copied out
    near the end of the layer; the convolution's input ``conv_x`` (``C`` = ssm_conv1d's channels,
    ``d_inner + 2 n_group d_state``, over ``T + (d_conv - 1) s`` columns) until the convolution's output
    (``C x T``) is written, which holds x, B and C until the scan's output is used.  The peak is the largest of

    * at the convolution: ``P + conv_x + C`` rows, above a block of ``d_inner`` rows the previous layer's
      scan left free (too small for the projection);
    * at the copy of ``z``: ``P + C`` rows, the scan's output (``d_inner`` rows and the ``d_state x d_inner``
      state per sequence and snapshot), ``dt`` (``n_head`` rows) and the copy of ``z`` (``d_inner`` rows);
    * at the scan, when its output is larger than ``conv_x``'s freed block: ``P + conv_x + C`` and the output
      above it;

    over three ``n_embd`` rows (the embeddings, the residual, the normalised input's freed block).  Read from
    ggml-alloc's debug log (GGML_ALLOCATOR_DEBUG: the tensors alive at each new maximum) on mamba2 models of
    several widths, state sizes, group and head counts."""
    h = plan.hparams
    s = max(1, est.n_seq_max)
    rs_seq = cp["n_rs_seq"] if plan.arch in (memory_spec().get("rs_rollback") or ()) else 0
    k = rs_seq + 1 if rs_seq > 0 else 1
    d_conv = int(h.ssm_d_conv or 0)
    d_state = int(h.ssm_d_state or 0)
    n_embd = int(h.n_embd)
    peak = 0
    for il in range(int(h.n_layer())):
        ssm_in = tensors.get(f"blk.{il}.ssm_in.weight")
        conv1d = tensors.get(f"blk.{il}.ssm_conv1d.weight")
        if ssm_in is None or conv1d is None or f"blk.{il}.ssm_x.weight" in tensors or len(ssm_in.ne) < 2:
            continue
        if ssm_in.name not in plan.used:
            continue
        if f"blk.{il}.ssm_conv1d.bias" not in tensors:  # optional for nemotron_h, granite-hybrid and falcon-h1
            raise ValueError(
                f"llama.cpp crashes building the compute graph: layer {il} has no ssm_conv1d.bias, which its "
                "loader lets a Mamba-2 layer omit but build_mamba2_layer adds unconditionally"
            )
        p, c = int(ssm_in.ne[1]), int(conv1d.ne[1])
        d_inner = int(h.ssm_d_inner or 0)
        n_head = int(h.ssm_dt_rank or 0)
        conv_x = c * (t + max(0, d_conv - 1) * s)
        y_ssm = d_inner * t + d_state * d_inner * s * k
        conv = p * t + conv_x + c * t + d_inner * t
        scan = p * t + c * t + y_ssm + n_head * t + d_inner * t
        scan_above = p * t + conv_x + c * t + y_ssm if y_ssm > conv_x else 0
        peak = max(peak, 3 * n_embd * t + max(conv, scan, scan_above))
    return 4 * peak


def compute_estimate(plan: LoadPlan, est: Estimate, cp: dict, tensors: Mapping[str, TensorMeta] | None = None) -> int:
    """An estimate of the CPU compute buffer: ggml's allocator's peak over the prompt-processing graph that
    llama.cpp reserves (``T = min(n_ctx, n_ubatch)`` tokens, ``T`` outputs, a cache of ``n_kv`` cells).

    That graph is built by the architecture's C++ graph code, which is not in the spec, so the peak is modelled
    (F32 activations, ``w`` = a row width times ``T`` x 4 bytes), calibrated on llama.cpp's own figures
    (tools/memory_differential.py measures the error per family):

    * KQ mask: ``n_kv x T`` (F16 with flash attention, F32 without);
    * feed-forward peak: the widest layer's up-projection output (from its tensors: dense, shared and the used
      routed experts), three times for a gated unit, and three ``n_embd`` rows, plus the mask;
    * attention peak: seven ``n_embd`` rows plus the mask, plus, without flash attention, the scores
      ``n_kv x T x n_head``;
    * output head: ``n_vocab`` logits per output and two ``n_embd`` rows;
    * recurrent layers: about 17 ``n_embd`` rows for RWKV's mixing; a Mamba-2 layer's peak from its projection
      and convolution widths (:func:`_mamba2_peak`, plus a hybrid's mask); 6.5 rows of the inner width for a
      Mamba-1 scan;

    the estimate is the largest of these."""
    h = plan.hparams
    t = min(est.n_ctx, est.n_ubatch)
    row = t * 4
    n_embd = int(h.n_embd)
    n_vocab = int(plan.n_vocab or 0)
    n_layer = max(1, int(h.n_layer()))
    heads = [int(h.n_head(il)) for il in range(n_layer)]
    n_head = max(heads + [0])
    ffn_rows = _ffn_rows(plan, tensors or {}, n_layer)
    fa = cp["flash_attn"]
    cells = [est.caches[c] for c in ("kv", "swa") if est.buffers.get(c)]
    if (not cells and est.memory == "none" and n_head) or plan.arch in (memory_spec().get("no_cache_attention") or ()):
        cells = [t]  # no cache (encoders), or a graph that attends without it: attention over the batch itself
    n_kv = max(cells + [0])
    mask = sum(c * t * (2 if fa else 4) for c in cells)
    ffn = ffn_rows * row + 3 * n_embd * row + mask
    attn = 7 * n_embd * row + mask + (0 if fa or not n_kv else n_kv * t * n_head * 4) if cells else 0
    recr = 0
    if est.buffers.get("recurrent"):  # some layer keeps a recurrent state
        if int(getattr(h, "wkv_head_size", 0) or 0):  # RWKV time and channel mixing: ~17 rows of n_embd
            recr = 17 * n_embd * row
        else:
            recr = _mamba2_peak(plan, tensors or {}, est, cp, t)
            if recr:  # the mask of a hybrid's attention layers is an input: alive through the whole graph
                recr += mask
            else:  # Mamba-1 style: ~6.5 rows of the inner width (x and z projections, convolution, scan)
                d_inner = int(getattr(h, "ssm_d_inner", 0) or 0) or 2 * n_embd
                recr = 13 * d_inner * row // 2
    head = n_vocab * t * 4 + 2 * n_embd * row + (0 if fa else mask)
    return max(ffn, attn, recr, head)


def _check_context(
    plan: LoadPlan, tensors: Mapping[str, TensorMeta], cp: dict, params: ContextParams, n_ctx: int
) -> bool:
    """llama.cpp's refusals to create the context (ValueError with its message): a draft model without the
    tensors it borrows from its target's context, then ``llama_init_from_model``'s checks as extracted into the
    spec (``context_checks``: equal K and V types for MLA, flash attention for a quantized V cache, cache block
    sizes that divide the head sizes...), which also adjust flash attention (forced off for some architectures,
    on for a quantized V cache).  Returns whether flash attention ends up enabled (*auto* enables it on the CPU)."""
    from .interp import Fatal

    h = plan.hparams
    spec = memory_spec()
    constants = loader()["constants"]
    fa = {None: "AUTO", True: "ENABLED", False: "DISABLED"}[params.flash_attn]
    p = SimpleNamespace(
        n_ctx=n_ctx,
        n_batch=cp["n_batch"],
        n_ubatch=cp["n_ubatch"],
        type_k=cp["type_k"],
        type_v=cp["type_v"],
        flash_attn_type=constants[f"LLAMA_FLASH_ATTN_TYPE_{fa}"],
    )
    # one CPU device: any split mode but the tensor split
    model = SimpleNamespace(hparams=h, arch=plan.arch, split_mode=lambda: constants["LLAMA_SPLIT_MODE_LAYER"])
    interp = Interpreter({})
    interp.globals.update(constants)
    interp.globals.update(
        {
            "params": p,
            "model": model,
            "True": True,
            "False": False,
            "int": int,
            "_div": c_div,
            "_mod": c_mod,
            "ggml_is_quantized": lambda t: _types()[t].block_size > 1,
            "ggml_blck_size": lambda t: _types()[t].block_size,
            "ggml_type_name": lambda t: str(t).lower(),
        }
    )
    try:
        interp.run(spec["context_checks"], Frame(None))
    except Fatal as exc:
        raise ValueError(exc.message) from None
    # then the llama_context constructor: a draft model without what it borrows from its target's context
    other = (spec.get("needs_ctx_other") or {}).get(plan.arch)
    if other is not None:
        members = {"tok_embd": "token_embd.weight", "output": "output.weight"}
        present = {r.name for r in plan.requests if r.name in tensors}
        lacking = [m for m, t in members.items() if t not in present]
        if other == "always" or lacking:
            raise ValueError(spec["context_failure"] + spec["ctx_other_messages"][plan.arch])
    return p.flash_attn_type != constants["LLAMA_FLASH_ATTN_TYPE_DISABLED"]


def estimate(
    meta: Mapping[str, MetaValue],
    tensors: Mapping[str, TensorMeta],
    ctx: int,
    params: ContextParams | None = None,
    *,
    offsets: Mapping[str, tuple] | None = None,
    plan: LoadPlan | None = None,
) -> Estimate:
    """The memory of a context of ``ctx`` tokens (0: the training context) for this model on the CPU backend."""
    cp = (params or ContextParams()).resolved()
    if plan is None:
        plan = plan_load(meta, tensors, vocab_only=False)
    spec = memory_spec()
    h = plan.hparams
    if plan.kind != "model":
        what = "a vocabulary only (no tensors)" if plan.kind == "vocab" else "an " + plan.kind
        raise ValueError(f"this file is {what}: llama.cpp creates no context for it, so there is no memory to estimate")
    if plan.problems or h is None:
        raise ValueError(
            f"llama.cpp would not load this model: {plan.problems[0].message}"
            if plan.problems
            else "no hyperparameters"
        )
    params = params or ContextParams()
    cp["flash_attn"] = _check_context(plan, tensors, cp, params, int(ctx))
    n_ctx = int(ctx) if ctx else int(h.n_ctx_train)
    n_ctx = _pad(n_ctx, spec["n_ctx_pad"])
    n_seq = max(1, int(cp["n_seq_max"]))
    cp["n_seq_max"] = n_seq
    if cp["kv_unified"]:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = _pad(n_ctx // n_seq, spec["n_ctx_seq_pad"])
        n_ctx = n_ctx_seq * n_seq
    causal = bool(h.causal_attn)
    n_batch = min(n_ctx, cp["n_batch"]) if causal else cp["n_batch"]
    n_ubatch = min(n_batch, cp["n_ubatch"] or n_batch)
    features = host_cpu_features() if params.cpu_features is None else frozenset(params.cpu_features)
    repack = repacked(plan, tensors, features)
    moved = {name for name, duplicated, _ in repack if not duplicated}
    repack_bytes = sum(_pad(b, spec["cpu_buffer_alignment"]) for _, _, b in repack)
    est = Estimate(
        ctx=int(ctx),
        n_ctx=n_ctx,
        n_ctx_seq=n_ctx_seq,
        n_batch=n_batch,
        n_ubatch=n_ubatch,
        n_seq_max=n_seq,
        memory="",
        model_bytes=model_buffer(plan, tensors, offsets, exclude=moved) + repack_bytes,
        kv_bytes=0,
        kv_size_bytes=0,
        recurrent_bytes=0,
        output_bytes=0,
        compute_bytes=0,
        repack_bytes=repack_bytes,
    )
    if repack:
        est.notes.append(
            f"{len(repack)} weights ({repack_bytes / MiB:.2f} MiB) in the CPU_REPACK buffer for CPU "
            f"features {', '.join(sorted(features)) or 'none'}"
        )
    # the output buffer, reserved for n_seq_max outputs when the context is created
    n_out = n_seq
    floats = int(plan.n_vocab or 0) * n_out
    if cp["embeddings"] or plan.arch == "t5":
        floats += int(h.n_embd_out()) * n_out
    est.output_bytes = floats * 4
    arch = plan.arch
    special = (spec.get("special") or {}).get(arch)
    if special is not None and special.get("falls_through") and not _Rules(plan)._true(special.get("own_when", "True")):
        special = None  # e.g. dflash without hyper-connections: the default branch
    rules = _Rules(plan, special["lambdas"] if special is not None else None)
    cls = (
        None
        if arch in (spec.get("no_memory") or ())
        else rules.construct(special["constructs"] if special is not None else spec["default_constructs"])
    )
    if cls is None:
        est.memory = "none"
    else:
        est.memory = {
            "llama_memory_recurrent": "recurrent",
            "llama_memory_hybrid": "hybrid",
            "llama_memory_hybrid_iswa": "hybrid",
            "llama_kv_cache": "kv",
            "llama_kv_cache_iswa": "kv",
        }.get(cls, cls.replace("llama_", ""))
        _memory(plan, rules, cls, cp, est)
    if "swa" in est.caches:
        est.memory += "+swa"
    est.compute_bytes = compute_estimate(plan, est, cp, tensors)
    return est
