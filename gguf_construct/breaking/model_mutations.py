"""Labelled breakages of a model: the edits a publisher's tool or a careless hand makes to a model file.

Each :class:`ModelMutation` takes a minimal model (metadata and tensor infos, see :mod:`.synth`) and returns an
edited copy plus the model rules it *intends* to break (``MODEL-KEY-MISSING`` when a required key is dropped, ...).
The intent is stated from the edit and from what the loader declares for the key or tensor (required or not, its
C type), not from a replay of the edited file, so a property test can hold the checker against it.  Some edits are
benign by design (an optional key dropped, a tensor stored in another type): their label is empty.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ..arch.loader import MetaValue, TensorMeta, named_model_missing_token, plan_load
from ..arch.programs import model_spec
from ..format import keynames

__all__ = ["ModelMutation", "MUTATIONS", "mutate", "Mutated"]

Meta = dict[str, MetaValue]
Tensors = dict[str, TensorMeta]


@dataclass(frozen=True)
class Mutated:
    """An edited model: what was done, the metadata and tensors, and the rules the edit intends to break."""

    kind: str
    what: str
    meta: Meta
    tensors: Tensors
    rules: frozenset[str]


@dataclass(frozen=True)
class ModelMutation:
    """One kind of edit: ``apply(meta, tensors, rng)`` -> :class:`Mutated` or None when it does not apply."""

    kind: str
    apply: Callable[[Meta, Tensors, random.Random], Mutated | None]


def _arch(meta: Meta) -> str:
    return str(meta[keynames.GENERAL_ARCHITECTURE].value)


def _reads(meta: Meta, tensors: Tensors) -> dict:
    """What the loader reads from this (valid) model: keys with their C types, and the expected tensors."""
    return plan_load(meta, tensors)


def _drop_key(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    plan = _reads(meta, tensors)
    arch = _arch(meta)
    keys = sorted(k for k in meta if k.startswith(f"{arch}.") and k in plan.keys_read)
    if not keys:
        return None
    key = rng.choice(keys)
    new = {k: v for k, v in meta.items() if k != key}
    required = key in _required_keys(meta, tensors)
    return Mutated("drop-key", key, new, dict(tensors), frozenset({"MODEL-KEY-MISSING"} if required else ()))


def _required_keys(meta: Meta, tensors: Tensors) -> set[str]:
    """Keys whose absence alone makes the replay report KEY-MISSING for that key (what llama.cpp reads as
    required, under these hyperparameters)."""
    out = set()
    for key in meta:
        plan = plan_load({k: v for k, v in meta.items() if k != key}, tensors)
        if any(p.code == "KEY-MISSING" and p.key == key for p in plan.problems):
            out.add(key)
    return out


_RETYPE = {
    "UINT32": ("INT32", "STRING", "UINT64"),
    "INT32": ("UINT32", "STRING"),
    "FLOAT32": ("FLOAT64", "UINT32"),
    "BOOL": ("UINT8", "INT32"),
    "UINT64": ("UINT32",),
    "STRING": ("UINT32",),
}


def _retype_key(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    plan = _reads(meta, tensors)
    scalar_types = model_spec()["key_types"]["scalar"]
    # any key the loader reads with a type check: the architecture's, general.*, the tokenizer's scalars
    keys = sorted(
        k for k, v in meta.items() if v.type in _RETYPE and scalar_types.get(plan.keys_read.get(k, "")) == v.type
    )
    if not keys:
        return None
    key = rng.choice(keys)
    v = meta[key]
    to = rng.choice(_RETYPE[v.type])
    if to == "STRING":
        value = str(v.value)
    elif v.type == "STRING":  # a name or word stored as a number
        value = len(str(v.value))
    elif to.startswith("FLOAT"):
        value = float(v.value)
    elif to == "BOOL":
        value = bool(v.value)
    else:  # an integer type: the same number where it fits (a negative float becomes its magnitude)
        value = abs(int(v.value)) if to.startswith("UINT") else int(v.value)
    new = dict(meta)
    new[key] = MetaValue(to, value)
    return Mutated("retype-key", f"{key}: {v.type} -> {to}", new, dict(tensors), frozenset({"MODEL-KEY-TYPE"}))


def _drop_tensor(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    plan = _reads(meta, tensors)
    names = sorted(tensors)
    if not names:
        return None
    name = rng.choice(names)
    new = {n: t for n, t in tensors.items() if n != name}
    e = plan.expected.get(name)
    rules = {"MODEL-TENSOR-MISSING"} if e is not None and e.required else set()
    return Mutated("drop-tensor", name, dict(meta), new, frozenset(rules))


def _reshape_tensor(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    if not tensors:
        return None
    name = rng.choice(sorted(tensors))
    t = tensors[name]
    axis = rng.randrange(len(t.ne))
    ne = list(t.ne)
    ne[axis] = ne[axis] * 2 if rng.random() < 0.5 or ne[axis] < 2 else ne[axis] // 2
    new = dict(tensors)
    new[name] = TensorMeta(name, tuple(ne), t.type)
    return Mutated(
        "reshape-tensor", f"{name}: {list(t.ne)} -> {ne}", dict(meta), new, frozenset({"MODEL-TENSOR-SHAPE"})
    )


_EXTRA_NAMES = (
    "blk.0.attn_qq.weight",
    "blk.{last}.ffn_extra.weight",
    "model.extra_head.weight",
    "blk.{next}.attn_norm.weight",
)


def _add_tensor(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    arch = _arch(meta)
    n_layer = meta.get(keynames.ARCH_BLOCK_COUNT.format(arch=arch))
    last = int(n_layer.value) - 1 if n_layer is not None and n_layer.type != "ARRAY" else 0
    name = rng.choice(_EXTRA_NAMES).format(last=last, next=last + 1)
    if name in tensors:
        return None
    new = dict(tensors)
    new[name] = TensorMeta(name, (16,), 0)
    return Mutated("add-tensor", name, dict(meta), new, frozenset({"MODEL-TENSOR-UNUSED"}))


def _retype_tensor(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    """Store one tensor in another ggml type: the loader does not check types, but ggml refuses a row length that
    is not a multiple of the type's block (TI-BLOCK)."""
    from ..format.spec import tensor_types

    if not tensors:
        return None
    name = rng.choice(sorted(tensors))
    t = tensors[name]
    spec = rng.choice([tt for tt in tensor_types() if tt.is_current and tt.id != t.type])
    fits = bool(t.ne) and t.ne[0] % spec.block_size == 0
    new = dict(tensors)
    new[name] = TensorMeta(name, t.ne, spec.id)
    return Mutated(
        "retype-tensor",
        f"{name}: type {t.type} -> {spec.name}",
        dict(meta),
        new,
        frozenset() if fits else frozenset({"TI-BLOCK"}),
    )


def _key_to_array(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    """A scalar hyperparameter the loader reads with get_key_or_arr stored as a per-layer array: one value per
    block is the same model; any other length fails ("wrong array length")."""
    from ..arch.outline import common_key_reads, outline

    arch = _arch(meta)
    o = outline(arch)
    per_layer = {
        k.key.replace("{arch}", arch)
        for k in (*common_key_reads(), *(o.keys if o else ()))
        if k.reader == "get_key_or_arr"
    }
    n_layer = meta.get(keynames.ARCH_BLOCK_COUNT.format(arch=arch))
    keys = sorted(k for k in per_layer if k in meta and meta[k].type in ("UINT32", "INT32", "FLOAT32"))
    if not keys or n_layer is None or n_layer.type == "ARRAY":
        return None
    key = rng.choice(keys)
    v = meta[key]
    n = int(n_layer.value)
    length = n if rng.random() < 0.5 else rng.choice((n + 1, max(n - 1, 0) or n + 2))
    new = dict(meta)
    new[key] = MetaValue("ARRAY", [v.value] * length, v.type)
    return Mutated(
        "key-to-array",
        f"{key}: {v.type} -> ARRAY[{v.type}] x {length}",
        new,
        dict(tensors),
        frozenset() if length == n else frozenset({"MODEL-KEY-TYPE"}),
    )


def _duplicate_token(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    """One token of the vocabulary given the string of another (a converter's slip llama.cpp aborts on)."""
    tokens = meta.get(keynames.TOKENIZER_GGML_TOKENS)
    if tokens is None or tokens.type != "ARRAY" or len(tokens) < 2:
        return None
    values = list(tokens.value)
    i, j = sorted(rng.sample(range(len(values)), 2))
    values[j] = values[i]
    new = dict(meta)
    new[keynames.TOKENIZER_GGML_TOKENS] = MetaValue("ARRAY", values, tokens.item_type)
    return Mutated(
        "duplicate-token", f"token {j} = token {i} ({values[i]!r})", new, dict(tensors), frozenset({"MODEL-VOCAB"})
    )


_MODEL_NAMES = ("Phi-3-mini-4k-instruct", "phi3 tiny", "Llama-3.2-1B", "Qwen2.5-0.5B", "Mistral-7B")


def _rename_model(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    """general.name set to a published model's name: llama.cpp gives some names' tokens special attributes, and
    looks those tokens up by text (spec/model.yaml vocab.named_model_tokens); the label comes from the loader's
    own rule."""
    name = rng.choice(_MODEL_NAMES)
    new = dict(meta)
    new[keynames.GENERAL_NAME] = MetaValue("STRING", name)
    tokens = meta.get(keynames.TOKENIZER_GGML_TOKENS)
    missing = tokens is not None and named_model_missing_token(new, tokens.value) is not None
    return Mutated(
        "rename-model",
        f"general.name = {name!r}",
        new,
        dict(tensors),
        frozenset({"MODEL-VOCAB"}) if missing else frozenset(),
    )


def _block_count(meta: Meta, tensors: Tensors, rng: random.Random) -> Mutated | None:
    key = f"{_arch(meta)}.block_count"
    v = meta.get(key)
    if v is None or v.type == "ARRAY":
        return None
    n = int(v.value)
    if not any(name.startswith(f"blk.{n - 1}.") for name in tensors):
        return None  # no tensors per layer (an assistant or MTP head): the layer count decides no tensor
    delta = rng.choice((1, -1)) if n > 1 else 1
    new = dict(meta)
    new[key] = MetaValue(v.type, n + delta)
    return Mutated(
        "block-count",
        f"{key}: {n} -> {n + delta}",
        new,
        dict(tensors),
        frozenset({"MODEL-TENSOR-MISSING"} if delta > 0 else {"MODEL-TENSOR-UNUSED"}),
    )


MUTATIONS: tuple[ModelMutation, ...] = (
    ModelMutation("drop-key", _drop_key),
    ModelMutation("retype-key", _retype_key),
    ModelMutation("drop-tensor", _drop_tensor),
    ModelMutation("reshape-tensor", _reshape_tensor),
    ModelMutation("add-tensor", _add_tensor),
    ModelMutation("retype-tensor", _retype_tensor),
    ModelMutation("block-count", _block_count),
    ModelMutation("key-to-array", _key_to_array),
    ModelMutation("duplicate-token", _duplicate_token),
    ModelMutation("rename-model", _rename_model),
)


def mutate(meta: Meta, tensors: Tensors, kind: str, rng: random.Random) -> Mutated | None:
    """Apply the mutation named ``kind`` (one of :data:`MUTATIONS`) to a model."""
    m = next(m for m in MUTATIONS if m.kind == kind)
    return m.apply(meta, tensors, rng)
