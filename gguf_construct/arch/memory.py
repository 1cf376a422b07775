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
* the **output buffer**: logits (``n_vocab`` floats) for ``n_seq_max`` outputs, plus the embeddings when asked;
* the **compute buffer**: the graph allocator's peak cannot be replayed without building the graph; it is
  *estimated* (:func:`compute_estimate` says how), and the differential tool measures the error per family.

Architectures whose memory is a special class (DSA/MSA/DSV4 caches, the hybrid indexer) are reported as not
replayed rather than guessed.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..spec import tensor_types
from .interp import UNKNOWN, Frame, Interpreter
from .loader import LoadPlan, MetaValue, TensorMeta, plan_load
from .programs import architecture, loader

__all__ = ["ContextParams", "CacheLayer", "Estimate", "estimate", "memory_spec", "mib", "compute_estimate"]

MiB = 1024 * 1024


@functools.lru_cache(maxsize=None)
def memory_spec() -> dict:
    """spec/architectures/_memory.yaml."""
    from ..spec import load_yaml
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

    def resolved(self) -> dict[str, Any]:
        """Every field with llama.cpp's default filled in."""
        d = memory_spec()["context_defaults"]
        out = {}
        for name in ("n_ctx", "n_batch", "n_ubatch", "n_seq_max", "swa_full", "kv_unified", "embeddings",
                     "n_rs_seq"):
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
        return {"ctx": self.ctx, "n_ctx": self.n_ctx, "n_ctx_seq": self.n_ctx_seq, "n_batch": self.n_batch,
                "n_ubatch": self.n_ubatch, "n_seq_max": self.n_seq_max, "memory": self.memory,
                "model_bytes": self.model_bytes, "kv_bytes": self.kv_bytes, "kv_size_bytes": self.kv_size_bytes,
                "recurrent_bytes": self.recurrent_bytes, "output_bytes": self.output_bytes,
                "compute_bytes": self.compute_bytes, "compute_estimated": True, "total_bytes": self.total_bytes,
                "replayed": self.replayed, "caches": self.caches, "buffers": self.buffers, "notes": self.notes,
                "layers": [vars(x) for x in self.layers]}


# ------------------------------------------------------------------------------------------------------------


class _Rules:
    """create_memory's default branch over one model: its flags, filters and the truth of their conditions."""

    def __init__(self, plan: LoadPlan, ctx_type: str = "LLAMA_CONTEXT_TYPE_DEFAULT"):
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
        interp.globals.update({"hparams": self.hparams, "arch": plan.arch, "params": params, "True": True,
                               "False": False, "int": int, "max": max, "min": min,
                               "llm_arch_is_recurrent": lambda a: "recurrent" in traits,
                               "llm_arch_is_hybrid": lambda a: "hybrid" in traits})
        for name, expr in (spec.get("flags") or {}).items():
            interp.globals[name] = interp.eval(expr, Frame(None))
        self.interp = interp
        self.functions: dict[str, Any] = {}
        for lam in spec.get("lambdas") or ():
            if all(self._true(w) for w in lam.get("when") or ()):
                self.functions[lam["name"]] = lam  # in source order: a later assignment replaces an earlier one

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


def _kv_cache(plan: LoadPlan, rules: _Rules, cp: dict, kv_size: int, name: str, keep, est: Estimate) -> None:
    """``llama_kv_cache``'s tensors for the layers ``keep`` accepts."""
    h = plan.hparams
    align = memory_spec()["cpu_buffer_alignment"]
    n_stream = 1 if cp["kv_unified"] else cp["n_seq_max"]
    v_trans = not cp["flash_attn"]
    is_mla = bool(h.is_mla())
    v_max = int(h.n_embd_v_gqa_max()) if v_trans else None
    for il in range(int(h.n_layer_all)):
        if not h.has_kv(il) or not keep(il):
            continue
        kw = int(h.n_embd_k_gqa(il))
        vw = 0 if is_mla else (v_max if v_trans else int(h.n_embd_v_gqa(il)))
        kb = row_size(cp["type_k"], kw) * kv_size * n_stream
        vb = row_size(cp["type_v"], vw) * kv_size * n_stream if not is_mla else 0
        est.layers.append(CacheLayer(il, name, kv_size, kw, vw, kb, vb))
        est.kv_size_bytes += kb + vb
        padded = _pad(kb, align) + (_pad(vb, align) if not is_mla else 0)
        est.kv_bytes += padded
        est.buffers[name] = est.buffers.get(name, 0) + padded
    est.caches[name] = kv_size


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


def _attention(plan: LoadPlan, rules: _Rules, cp: dict, est: Estimate, filter_name: str,
               default: str | None = None) -> None:
    """A KV cache, split into base and SWA caches (llama_kv_cache_iswa) when the model has SWA layers."""
    h = plan.hparams
    keep = functools.partial(rules.keep, filter_name, default=default)
    spec = memory_spec()
    none = loader()["constants"]["LLAMA_SWA_TYPE_NONE"]
    base = est.n_ctx_seq
    if h.swa_type != none:
        swa = base if cp["swa_full"] else _pad(
            min(base, int(h.n_swa) * (cp["n_seq_max"] if cp["kv_unified"] else 1) + est.n_ubatch),
            spec["swa_cache_pad"])
        _kv_cache(plan, rules, cp, base, "kv", lambda il: keep(il) and not h.is_swa(il), est)
        _kv_cache(plan, rules, cp, swa, "swa", lambda il: keep(il) and bool(h.is_swa(il)), est)
    else:
        _kv_cache(plan, rules, cp, base, "kv", keep, est)


def model_buffer(plan: LoadPlan, tensors: Mapping[str, TensorMeta], offsets: Mapping[str, tuple] | None,
                 alignment: int = 32) -> int:
    """Bytes of the CPU model buffers: with ``offsets`` (name -> (file, offset of the data)) the mapped range
    over the tensors the loader uses, one range per file of a split model; without, their sizes each padded to
    ``alignment`` (as a file lays them out)."""
    from ..model import tensor_nbytes

    used = [n for n in plan.used if n in tensors]
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


def compute_estimate(plan: LoadPlan, est: Estimate, cp: dict,
                     tensors: Mapping[str, TensorMeta] | None = None) -> int:
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
    * recurrent layers: about 17 ``n_embd`` rows for RWKV's mixing, 6.5 rows of the inner width for Mamba-style
      scans;

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
    if not cells and est.memory == "none" and n_head:
        cells = [t]  # no cache (encoders): attention over the batch itself
    n_kv = max(cells + [0])
    mask = sum(c * t * (2 if fa else 4) for c in cells)
    ffn = ffn_rows * row + 3 * n_embd * row + mask
    attn = 7 * n_embd * row + mask + (0 if fa or not n_kv else n_kv * t * n_head * 4)
    recr = 0
    if "recurrent" in est.caches:
        if int(getattr(h, "wkv_head_size", 0) or 0):  # RWKV time and channel mixing: ~17 rows of n_embd
            recr = 17 * n_embd * row
        else:  # Mamba-style: ~6.5 rows of the inner width (x and z projections, convolution, scan)
            d_inner = int(getattr(h, "ssm_d_inner", 0) or 0) or 2 * n_embd
            recr = 13 * d_inner * row // 2
    head = n_vocab * t * 4 + 2 * n_embd * row + (0 if fa else mask)
    return max(ffn, attn, recr, head)


def _check_context(plan: LoadPlan, tensors: Mapping[str, TensorMeta], cp: dict,
                   params: ContextParams | None) -> None:
    """llama.cpp's refusals to create the context (ValueError with its reason): a draft model without the
    tensors it borrows from its target's context; MLA models need equal K and V types; a quantized V cache needs
    flash attention; with flash attention a quantized type's block size must divide every layer's head size."""
    h = plan.hparams
    other = (memory_spec().get("needs_ctx_other") or {}).get(plan.arch)
    if other is not None:
        members = {"tok_embd": "token_embd.weight", "output": "output.weight"}
        present = {r.name for r in plan.requests if r.name in tensors}
        lacking = [m for m, t in members.items() if t not in present]
        if other == "always" or lacking:
            raise ValueError(f"{plan.arch} requires another context (ctx_other): a draft model "
                             + ("always" if other == "always" else f"without {', '.join(lacking)}"))
    if (h.is_mla() or plan.arch == "deepseek4") and cp["type_k"] != cp["type_v"]:
        raise ValueError(f"model does not support different K ({cp['type_k']}) and V ({cp['type_v']}) cache types")
    fa_setting = params.flash_attn if params is not None else None
    quantized = {name: _types()[cp[name]].block_size > 1 for name in ("type_k", "type_v")}
    if quantized["type_v"] and fa_setting is False:
        raise ValueError("quantized V cache requires flash_attn to be enabled")
    if fa_setting is False:
        return
    for name, head in (("type_k", h.n_embd_head_k), ("type_v", h.n_embd_head_v)):
        if not quantized[name]:
            continue
        block = _types()[cp[name]].block_size
        for il in range(int(h.n_layer())):
            if int(head(il)) % block:
                raise ValueError(f"{name[-1].upper()} cache type {cp[name]} with block size {block} does not "
                                 f"divide the head size {int(head(il))} of layer {il}")


def estimate(meta: Mapping[str, MetaValue], tensors: Mapping[str, TensorMeta], ctx: int,
             params: ContextParams | None = None, *, offsets: Mapping[str, tuple] | None = None,
             plan: LoadPlan | None = None) -> Estimate:
    """The memory of a context of ``ctx`` tokens (0: the training context) for this model on the CPU backend."""
    cp = (params or ContextParams()).resolved()
    if plan is None:
        plan = plan_load(meta, tensors, vocab_only=False)
    spec = memory_spec()
    h = plan.hparams
    if plan.problems or h is None:
        raise ValueError(f"llama.cpp would not load this model: {plan.problems[0].message}" if plan.problems
                         else "no hyperparameters")
    params = params or ContextParams()
    if plan.arch in (spec.get("flash_attn_forced_off") or ()) and params.flash_attn is not False:
        params = dataclasses.replace(params, flash_attn=False)  # llama_init_from_model forces it off
        cp["flash_attn"] = False
    _check_context(plan, tensors, cp, params)
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
    est = Estimate(ctx=int(ctx), n_ctx=n_ctx, n_ctx_seq=n_ctx_seq, n_batch=n_batch, n_ubatch=n_ubatch,
                   n_seq_max=n_seq, memory="", model_bytes=model_buffer(plan, tensors, offsets), kv_bytes=0,
                   kv_size_bytes=0, recurrent_bytes=0, output_bytes=0, compute_bytes=0)
    # the output buffer, reserved for n_seq_max outputs when the context is created
    n_out = n_seq
    floats = int(plan.n_vocab or 0) * n_out
    if cp["embeddings"] or plan.arch == "t5":
        floats += int(h.n_embd_out()) * n_out
    est.output_bytes = floats * 4
    arch = plan.arch
    traits = set(getattr(architecture(arch), "traits", None) or ())
    rules = _Rules(plan)
    special = (spec.get("special") or {}).get(arch)
    if special is not None and special.get("falls_through") and not rules._true(special.get("own_when", "True")):
        special = None  # e.g. dflash without hyper-connections: the default branch
    if arch in (spec.get("no_memory") or ()):
        est.memory = "none"
    elif special is not None:
        est.memory = "+".join(special["classes"])
        est.replayed = False
        est.notes.append(f"{arch}: create_memory builds {', '.join(special['classes'])}; its size is not replayed")
    elif "recurrent" in traits:
        est.memory = "recurrent"
        _recurrent(plan, cp, lambda il: True, est)
    elif "hybrid" in traits and not rules.flag("mtp_on_hybrid_qwen") and not rules.flag("mtp_on_hybrid_nemotron"):
        est.memory = "hybrid"
        if rules.flag("needs_mem_idx"):
            est.replayed = False
            est.notes.append(f"{arch}: the hybrid memory with an indexer cache is not replayed (indexer omitted)")
        defaults = spec.get("hybrid_default_filters") or {}
        _attention(plan, rules, cp, est, "filter_attn", defaults.get("filter_attn"))
        _recurrent(plan, cp, lambda il: rules.keep("filter_recr", il, defaults.get("filter_recr")), est)
    else:
        est.memory = "kv"
        _attention(plan, rules, cp, est, "filter")
    if "swa" in est.caches:
        est.memory += "+swa"
    est.compute_bytes = compute_estimate(plan, est, cp, tensors)
    return est
