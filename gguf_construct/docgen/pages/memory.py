"""The page memory.md: ``estimate`` beside llama.cpp's own figures and gguf-parser-go's published method."""

from __future__ import annotations

import functools
import json
from typing import Any

from ...format.spec import spec_dir
from ..context import Ctx, Page, Section
from ..markdown import code, esc, intro, table

RESULTS = "architectures/_memory_measured.json"
_COMPONENTS = ("model", "kv", "recurrent", "output")


@functools.lru_cache(maxsize=None)
def _results() -> dict | None:
    path = spec_dir() / RESULTS
    return json.loads(path.read_text()) if path.exists() else None


def _config(cfg: dict) -> str:
    parts = [f"ctx {cfg['ctx']}"]
    if cfg.get("seqs"):
        parts.append(f"{cfg['seqs']} sequences")
    if cfg.get("type_k"):
        parts.append(f"K/V {cfg['type_k']}/{cfg.get('type_v', 'F16')}")
    if cfg.get("flash_attn") is not None:
        parts.append("flash attention" if cfg["flash_attn"] else "no flash attention")
    if cfg.get("swa_full") is False:
        parts.append("window-sized SWA cache")
    if cfg.get("kv_unified"):
        parts.append("unified KV")
    if cfg.get("embeddings"):
        parts.append("embeddings")
    return ", ".join(parts)


def _sec_agreement(ctx: Ctx) -> str:
    r = _results()
    if not r or not r.get("agreement"):
        return "_No measured results are committed yet (tools/memory_differential.py --results)._\n"
    rows = []
    for fam, f in sorted(r["agreement"].items()):
        comp = f["compute"]
        rows.append(
            [
                esc(fam),
                str(f["archs"]),
                str(f["contexts"]),
                str(f["died"]),
                *[f"{f[c][0]}/{f[c][1]}" for c in _COMPONENTS],
                f"{f['refusals_agreed']}/{f['refusals']}",
                "-" if not comp["n"] else f"{100 * comp['median']:.1f}%",
                "-" if not comp["n"] else f"{comp['within_10']}/{comp['n']}",
            ]
        )
    return "\n".join(
        [
            f"Every architecture's minimal model, contexts created by {esc(r['llama_cpp'])} at several sizes, cache "
            "types, sequence counts, flash-attention and SWA settings; a figure agrees when it equals llama.cpp's "
            "logged MiB at the 2 decimals it prints (per buffer).  *died*: contexts whose graph reservation aborted "
            "the process after the caches were allocated (their buffers are still compared, the compute buffer is "
            "not).  *refusals*: contexts llama.cpp refused (or aborted creating a cache) and whether `estimate` "
            "refused them with the same message.  The compute buffer is estimated, not replayed: its median error "
            "and how many contexts are within 10%.\n",
            table(
                [
                    "family",
                    "archs",
                    "contexts",
                    "died",
                    "model",
                    "KV",
                    "recurrent",
                    "output",
                    "refusals",
                    "compute median err",
                    "compute within 10%",
                ],
                rows,
            ),
        ]
    )


def _mib(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def _why(row: dict) -> str:
    """The figures where gguf-parser-go's method and llama.cpp differ, with the difference in MiB (the method
    table below says why)."""
    llama, pg = row["llama"], row["gguf_parser"]
    if not isinstance(llama, dict):
        return ""
    names = {"model": "weights", "kv": "KV", "recurrent": "recurrent", "output": "output"}
    return ", ".join(f"{names[c]} {pg[c] - llama[c]:+.2f}" for c in _COMPONENTS if abs(pg[c] - llama[c]) >= 0.005)


def _sec_side_by_side(ctx: Ctx) -> str:
    r = _results()
    if not r or not r.get("side_by_side"):
        return "_No measured results are committed yet._\n"
    rows = []
    for x in r["side_by_side"]:
        llama, ours, pg = x["llama"], x["ours"], x["gguf_parser"]
        if not isinstance(llama, dict):
            rows.append(
                [
                    code(x["arch"]),
                    esc(_config(x["config"])),
                    "",
                    esc(str(llama)),
                    esc(str(ours)[:60] if isinstance(ours, str) else ""),
                    "",
                    "",
                ]
            )
            continue
        if isinstance(ours, str):
            ours = {c: None for c in _COMPONENTS}
        cells = [" / ".join(_mib(d[c]) for c in _COMPONENTS) for d in (ours, llama, pg)]
        died = " (died reserving the graph)" if llama.get("died") else ""
        rows.append(
            [
                code(x["arch"]),
                esc(_config(x["config"])),
                cells[0],
                cells[1] + died,
                cells[2],
                "yes" if all(ours[c] is not None and abs(ours[c] - llama[c]) < 0.005 for c in _COMPONENTS) else "no",
                esc(_why(x)),
            ]
        )
    return "\n".join(
        [
            "The same models (minimal models of the architecture, 256-wide where it allows, 1000-token vocabulary) "
            "and configurations through the three: MiB as *weights / KV cache / recurrent state / output buffer*.  "
            "gguf-parser-go's column is its method computed here by `tools/gguf_parser_method.py` from its source "
            f"({code(r['side_by_side'][0]['source'])}); it is a CPU-only total (its device split does not change these sums).  "
            "The minimal models carry only the keys llama.cpp's loader needs: gguf-parser-go decides whether a model "
            "is causal from `attention.causal` and `pooling_type`, which the minimal `bert` lacks, so it gives it a "
            "KV cache; llama.cpp gives BERT none whatever the keys say (a converted BERT file also sets them).\n",
            table(
                [
                    "arch",
                    "configuration",
                    "estimate",
                    "llama.cpp (logged)",
                    "gguf-parser-go's method",
                    "estimate = llama.cpp",
                    "gguf-parser-go - llama.cpp (MiB)",
                ],
                rows,
            ),
        ]
    )


def _sec_method(ctx: Ctx) -> str:
    src = "https://github.com/gpustack/gguf-parser-go/blob/c3936a04351b9e8c8b91d50b0be37216806b8d9e/"
    est = f"[file_estimate__llamacpp.go]({src}file_estimate__llamacpp.go)"
    arch = f"[file_architecture.go]({src}file_architecture.go)"
    rows = [
        [
            "context size",
            f"padded to 256 with flash attention, else 32 ({est})",
            "padded to 256, then to 256 per sequence (`n_ctx_pad`, `n_ctx_seq_pad`)",
        ],
        [
            "weights",
            f"the bytes of every tensor; when `output.weight` is absent the input tensors again ({est})",
            "with mmap, the mapped range from the first to the last tensor the loader asks for (alignment padding "
            "included, unused tensors excluded)",
        ],
        [
            "KV cache",
            f"one width for all layers: key/value length (or the MLA lengths) x the first head_count_kv, "
            f"for `n_ctx` cells, on every block ({est}, {arch})",
            "per layer `n_embd_k_gqa(il)` / `n_embd_v_gqa(il)` from the replayed hyperparameters, only layers with a "
            "cache (`has_kv`, the create_memory filters, reuse), V as wide as the widest layer without flash "
            "attention, no V for MLA, the special caches (indexer, DSA/MSA, DSV4 compressed caches)",
        ],
        [
            "SWA",
            f"window-sized unless asked for full size: `min(n_ctx, pad(n_swa x n_seq + 2048))` cells on the "
            f"layers a per-architecture pattern marks (llama4 4, gemma2 2, gemma3 6, cohere2 4) ({est}, {arch})",
            "full size by default (llama.cpp's `swa_full` default); else `pad(min(n_ctx_seq, n_swa x (unified ? "
            "n_seq : 1) + n_ubatch), 256)` on the layers `is_swa` marks",
        ],
        [
            "recurrent state",
            f"`r` and `s` per layer from the RWKV/SSM keys x n_seq, on every block, for a fixed "
            f"list of recurrent and hybrid architectures ({est}, {arch})",
            "`n_embd_r()` / `n_embd_s()` (and the PLE state) x `max(1, n_seq) x (1 + n_rs_seq)` rows on the "
            "recurrent layers only",
        ],
        [
            "output buffer",
            f"`(n_embd + n_vocab) x min(n_ctx, 512)` floats (no logits without causal attention) ({est})",
            "`n_vocab x n_seq_max` floats, plus `n_embd_out` per output with embeddings",
        ],
        [
            "refusals",
            f"a quantized V type silently becomes F16 without flash attention ({est})",
            "llama.cpp refuses the context; `estimate` runs `llama_init_from_model`'s checks from the spec and "
            "says why",
        ],
        [
            "compute buffer",
            f"a model of the graph's inputs and the largest layer's tensors ({est})",
            "a model calibrated on llama.cpp's figures; its error is measured above",
        ],
    ]
    return "\n".join(
        [
            "How each figure is obtained (gguf-parser-go's from its source at the commit cited, not from its prose; "
            "none of its code is used here):\n",
            table(["figure", "gguf-parser-go", "estimate (llama.cpp's rule, replayed)"], rows),
        ]
    )


PAGE = Page(
    "memory.md",
    "Memory",
    "estimate beside llama.cpp's figures and gguf-parser-go's method",
    intro(
        "Memory",
        "What `gguf-construct estimate` says a context will take, what llama.cpp itself "
        "allocates, and what gguf-parser-go's published method gives, on the same files.",
    ),
    (
        Section("memory-agreement", "Agreement with llama.cpp per family", _sec_agreement),
        Section("memory-side-by-side", "Side by side", _sec_side_by_side),
        Section("memory-method", "The methods compared", _sec_method),
    ),
    count=lambda d: "measured" if _results() else "not measured yet",
)
