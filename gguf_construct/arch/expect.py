"""What a file must contain: every tensor llama.cpp's loader asks for, with its concrete shape.

:func:`expect` replays the load (:func:`~gguf_construct.arch.loader.plan_load`) over a file's metadata and
tensor infos and lists every ``create_tensor`` request in the loader's order -- name, shape in ggml order, whether
the load fails without it (required), whether it is a second view of a tensor counted elsewhere (duplicate) --
and, with a file, each request's status: ``present``, ``missing`` or ``shape`` (present with another shape); the
file's tensors nobody asks for follow as ``unused``.  :func:`expect_architecture` answers the same question
without a file, for an architecture and some hyperparameters (the rest as :mod:`.synth` picks them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .interp import UNKNOWN
from .loader import LoadPlan, MetaValue, Problem, TensorMeta, plan_load
from .programs import architecture, loader, model_spec
from ..format import keynames

__all__ = [
    "Expectation",
    "Expected",
    "expect",
    "expect_architecture",
    "architecture_parts",
    "parse_setting",
    "STATUSES",
]

STATUSES = ("present", "missing", "shape", "unused")
_NAMESPACES = ("general", "tokenizer", "split", "adapter", "imatrix")


@dataclass(frozen=True)
class Expectation:
    """One tensor request (or one unused tensor of the file).

    ``shape`` is in ggml order (``ne[0]`` first), ``None`` for a dimension the replay could not compute;
    ``status`` is one of :data:`STATUSES`, or ``None`` when there is no file to compare with; ``certain`` is False
    for a request made on a branch whose condition the replay could not decide."""

    name: str
    shape: tuple[int | None, ...]
    required: bool
    duplicate: bool
    status: str | None
    file_shape: tuple[int, ...] | None = None
    certain: bool = True

    def to_json(self) -> dict[str, Any]:
        """``{name, shape, required, duplicate, status, file_shape}``."""
        return {
            "name": self.name,
            "shape": list(self.shape),
            "required": self.required,
            "duplicate": self.duplicate,
            "status": self.status,
            "file_shape": list(self.file_shape) if self.file_shape is not None else None,
        }


@dataclass
class Expected:
    """The answer: the architecture, every request and unused tensor, the load's problems, the derived quantities
    the shapes are computed from (``n_embd_head_k`` ...) and the keys they were read from."""

    arch: str | None
    tensors: list[Expectation] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    quantities: dict[str, int | float] = field(default_factory=dict)
    has_file: bool = True
    plan: LoadPlan | None = None

    @property
    def loads(self) -> bool:
        """True when the replayed load finds no problem."""
        return not self.problems

    def counts(self) -> dict[str, int]:
        """How many entries have each status."""
        out = {s: 0 for s in STATUSES}
        for t in self.tensors:
            if t.status:
                out[t.status] += 1
        return out


def _dims(ne: Any) -> tuple[int | None, ...]:
    return tuple(int(d) if isinstance(d, int) and d is not UNKNOWN else None for d in ne)


def _matches(want: tuple[int | None, ...], got: tuple[int, ...], reshape: bool) -> bool | None:
    if any(d is None for d in want):
        return None
    if reshape:
        return math.prod(want) == math.prod(got)
    return len(want) <= 4 and want + (1,) * (4 - len(want)) == tuple(got) + (1,) * (4 - len(got))


def expect(meta: Mapping[str, MetaValue], tensors: Mapping[str, TensorMeta], *, has_file: bool = True) -> Expected:
    """Every tensor the loader asks for given ``meta``, compared with ``tensors`` (when ``has_file``)."""
    plan = plan_load(meta, tensors, vocab_only=False)
    flags = loader()["tensor_flags"]
    dup, reshape = flags["TENSOR_DUPLICATED"], flags["TENSOR_ALLOW_RESHAPE"]
    out = Expected(plan.arch, problems=list(plan.problems), has_file=has_file, plan=plan)
    out.quantities = {
        k: v
        for k, v in plan.quantities.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not UNKNOWN
    }
    seen: set[tuple] = set()
    # a name asked for in more than one shape (try { [.., 6] } catch { [.., 5] }): the shape the file has is the
    # one the loader took, so the alternatives it tried first are no mismatch
    fitting = {
        r.name
        for r in plan.requests
        if has_file
        and r.name in tensors
        and _matches(_dims(r.ne), tuple(int(d) for d in tensors[r.name].ne), bool(r.flags & reshape))
    }
    for r in plan.requests:
        shape = _dims(r.ne)
        duplicate = bool(r.flags & dup)
        sig = (r.name, shape, r.flags, r.required, r.certain)
        if sig in seen:
            continue
        seen.add(sig)
        t = tensors.get(r.name) if has_file else None
        if not r.required and t is None and 0 in shape:
            continue  # asked with a size of 0 (its hyperparameter absent): a part this model does not have
        status, file_shape = None, None
        if has_file:
            if t is None:
                status = "missing"
            else:
                file_shape = tuple(int(d) for d in t.ne)
                ok = _matches(shape, file_shape, bool(r.flags & reshape))
                if ok is False and not r.required and r.name in fitting:
                    continue  # an alternative the loader tried before the shape the file has
                status = "shape" if ok is False else "present"
        out.tensors.append(Expectation(r.name, shape, r.required, duplicate, status, file_shape, r.certain))
    if has_file:
        asked = {r.name for r in plan.requests}
        for name, t in tensors.items():
            if name not in asked:
                out.tensors.append(Expectation(name, (), False, False, "unused", tuple(int(d) for d in t.ne)))
    return out


def parse_setting(arch: str, text: str, ctypes: Mapping[str, str] | None = None) -> tuple[str, MetaValue]:
    """``key=value`` from the command line as a metadata value: a key outside ``general.``, ``tokenizer.`` and
    ``split.`` is the architecture's (``attention.head_count`` -> ``<arch>.attention.head_count``); the GGUF type is the one llama.cpp reads the key as
    (from ``ctypes``, key -> C type, when the loader reads it), else inferred (integer UINT32, real FLOAT32,
    true/false BOOL, a JSON list an ARRAY, anything else STRING)."""
    if "=" not in text:
        raise ValueError(f"--set wants KEY=VALUE, got {text!r}")
    key, raw = (s.strip() for s in text.split("=", 1))
    if not key.startswith(f"{arch}.") and key.split(".", 1)[0] not in _NAMESPACES:
        key = f"{arch}.{key}"
    scalar = model_spec()["key_types"]["scalar"]
    gtype = scalar.get((ctypes or {}).get(key, ""))
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, list):
        item = _infer(value[0])[1] if value else "INT32"
        if gtype in ("UINT32", "INT32", "FLOAT32", "BOOL") and value:
            item = gtype
        return key, MetaValue("ARRAY", [_cast(x, item) for x in value], item)
    if gtype is None:
        value, gtype = _infer(value)
    return key, MetaValue(gtype, _cast(value, gtype))


def _infer(value: Any) -> tuple[Any, str]:
    if isinstance(value, bool):
        return value, "BOOL"
    if isinstance(value, int):
        return value, "UINT32" if value >= 0 else "INT32"
    if isinstance(value, float):
        return value, "FLOAT32"
    return str(value), "STRING"


def _cast(value: Any, gtype: str) -> Any:
    if gtype == "BOOL":
        return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
    if gtype in ("FLOAT32", "FLOAT64"):
        return float(value)
    if gtype == "STRING":
        return str(value)
    return int(value)


def architecture_parts(
    arch: str, settings: list[str] | tuple[str, ...] = (), *, n_vocab: int | None = None
) -> tuple[dict[str, MetaValue], dict[str, TensorMeta]]:
    """Metadata and tensor infos of a model of architecture ``arch`` with the hyperparameters ``settings``
    (``key=value``; the others as :func:`~gguf_construct.arch.synth.minimal_model_parts` picks them)."""
    from .synth import minimal_model_parts

    a = architecture(arch)
    if a is None or not a.loadable:
        raise ValueError(f"llama.cpp does not load architecture {arch!r}")
    meta, tensors = minimal_model_parts(arch)
    ctypes = plan_load(meta, tensors, vocab_only=False).keys_read
    overrides: dict[str, tuple] = {}
    for text in settings:
        key, v = parse_setting(arch, text, ctypes)
        overrides[key] = (v.value, v.type) + ((v.item_type,) if v.item_type else ())
    if n_vocab is None:
        n_vocab = len(meta[keynames.TOKENIZER_GGML_TOKENS].value)
    return minimal_model_parts(arch, overrides=overrides, n_vocab=n_vocab)


def expect_architecture(
    arch: str, settings: list[str] | tuple[str, ...] = (), *, n_vocab: int | None = None
) -> Expected:
    """The tensors of a model of architecture ``arch`` with the hyperparameters ``settings``, without a file."""
    meta, tensors = architecture_parts(arch, settings, n_vocab=n_vocab)
    return expect(meta, tensors, has_file=False)
