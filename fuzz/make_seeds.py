"""Write the seed corpus fuzz/seeds/: small valid files of every version and byte order, and a few broken ones.

Deterministic (fixed seeds); each file is at most a few hundred bytes.  Run from the project root:
``python fuzz/make_seeds.py``.
"""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gguf_construct.breaking.mutations import MUTATIONS, RandomPick, Skip  # noqa: E402
from gguf_construct.breaking.rawfile import from_document  # noqa: E402
from gguf_construct.fuzzing.samples import carriers  # noqa: E402

MAX_BYTES = 600


def main() -> None:
    """Regenerate fuzz/seeds/."""
    out = os.path.join(HERE, "seeds")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.endswith(".gguf"):
            os.unlink(os.path.join(out, name))
    pool = [d for d in carriers(1234, 200, max_kv=3, max_tensors=2)]
    rng = random.Random(1234)
    written = 0
    for v, bo in [(v, bo) for v in (1, 2, 3) for bo in ("little", "big")]:
        docs = [d for d in pool if d.version == v and d.byte_order == bo]
        for doc in docs[:3]:
            data = from_document(doc).encode()[0]
            if len(data) <= MAX_BYTES:
                with open(os.path.join(out, f"valid-v{v}-{bo}-{written:02d}.gguf"), "wb") as fh:
                    fh.write(data)
                written += 1
    for m in MUTATIONS:
        for _ in range(20):
            raw = from_document(rng.choice(pool))
            try:
                m.apply(raw, RandomPick(rng))
            except Skip:
                continue
            data = raw.encode()[0]
            if len(data) <= MAX_BYTES:
                with open(os.path.join(out, f"broken-{m.name}.gguf"), "wb") as fh:
                    fh.write(data)
                break
    write_model_seeds(os.path.join(out, "models"))
    print(f"{len(os.listdir(out))} seeds in {out}")


MODEL_SEEDS = ("llama", "qwen2moe", "bert", "gemma3", "rwkv7")
TINY = {
    "embedding_length": 16,
    "attention.head_count": 1,
    "attention.head_count_kv": 1,
    "block_count": 1,
    "feed_forward_length": 16,
    "context_length": 16,
}


def write_model_seeds(out: str) -> None:
    """Tiny whole models (I8 tensors, 16-token vocabulary; a few KiB each) of a few architectures in ``out``, so
    that byte edits reach the model layer's replay (the llama.cpp profile)."""
    from gguf_construct.arch.loader import TensorMeta
    from gguf_construct.arch.synth import minimal_model_parts
    from gguf_construct.breaking.models import build_model_file
    from gguf_construct.format.enums import GGMLType

    os.makedirs(out, exist_ok=True)
    for name in MODEL_SEEDS:
        meta, tensors = minimal_model_parts(name, n_vocab=16, sizes=TINY)
        tensors = {n: TensorMeta(n, t.ne, int(GGMLType.I8)) for n, t in tensors.items()}
        with open(os.path.join(out, f"model-{name}.gguf"), "wb") as fh:
            fh.write(build_model_file(meta, tensors).to_bytes())


if __name__ == "__main__":
    main()
