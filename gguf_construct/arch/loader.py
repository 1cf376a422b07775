"""llama.cpp's model loader, replayed from the spec over a file's metadata and tensor infos.

:func:`plan_load` follows the loader's order -- architecture, hyperparameters (generic, then the architecture's),
vocabulary, tensors, tensor count -- with the semantics of ``llama_model_loader`` (exact key types, array rules,
tensor shape comparison over four dimensions, the flags of ``create_tensor``), and returns a :class:`LoadPlan`:
every problem found (the first one is where llama.cpp stops), the keys read, the tensors expected.  It reads only
the values it is given; no byte of the file is touched here.
"""

from __future__ import annotations

import functools
from itertools import repeat
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np

from ..format.keyregistry import lookup
from ..format.spec import tensor_types
from ..format.splitset import SINGLE, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS, role, split_key_type
from ..format.lazystring import LazyString
from ..format.stringlist import StringList
from ..format.tokenrepeats import first_repeated_token
from .interp import UNKNOWN, Fatal, Frame, Interpreter, Struct, normalize_ctype
from .programs import Architecture, architecture, loader, model_spec
from ..format import keynames

__all__ = ["MetaValue", "TensorMeta", "Problem", "ExpectedTensor", "LoadPlan", "plan_load", "file_kind"]


@dataclass(frozen=True)
class MetaValue:
    """One metadata value as the loader sees it: GGUF type name, element type name for arrays, the value."""

    type: str
    value: Any
    item_type: str | None = None

    def __len__(self) -> int:
        return len(self.value) if self.type == "ARRAY" else 0

    def __bool__(self) -> bool:  # a present key is true whatever its length (a scalar has length 0)
        return True


@dataclass(frozen=True)
class TensorMeta:
    """A tensor info: name, ``ne`` (ggml order, as stored) and ggml type id."""

    name: str
    ne: tuple[int, ...]
    type: int

    @property
    def ne4(self) -> tuple[int, ...]:
        return tuple(self.ne) + (1,) * (4 - len(self.ne))


@dataclass
class Problem:
    """One reason llama.cpp would refuse the file.  ``code`` names the model rule (without ``MODEL-``)."""

    code: str
    message: str
    key: str | None = None
    tensor: str | None = None
    expected: Any = None
    got: Any = None
    phase: str = ""


def missing_key(key: str, phase: str = "") -> Problem:
    """llama_model_loader's refusal of a required key that is absent."""
    return Problem("KEY-MISSING", f"key not found in model: {key}", key=key, phase=phase)


def wrong_key_type(key: str, got: str, expected: str, phase: str = "") -> Problem:
    """llama_model_loader's refusal of a key whose value type is not the one it reads."""
    return Problem(
        "KEY-TYPE",
        f"key {key} has wrong type {got} but expected type {expected}",
        key=key,
        expected=expected,
        got=got,
        phase=phase,
    )


@dataclass
class ExpectedTensor:
    """A tensor the loader asks for: its shape (ggml order; UNKNOWN entries where not computable) and flags."""

    name: str
    ne: tuple
    flags: int
    required: bool
    certain: bool


@dataclass
class LoadPlan:
    """What the replayed load found."""

    arch: str | None
    kind: str
    problems: list[Problem] = field(default_factory=list)
    keys_read: dict[str, str] = field(default_factory=dict)
    expected: dict[str, ExpectedTensor] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    possible: set[str] = field(default_factory=set)
    n_vocab: int | None = None
    approximations: list[str] = field(default_factory=list)
    hparams: Any = None
    requests: list[ExpectedTensor] = field(default_factory=list)  # every create_tensor call, in order
    quantities: dict[str, Any] = field(default_factory=dict)  # the loader's derived variables (n_embd_head_k...)

    @property
    def loads(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def file_kind(meta: Mapping[str, MetaValue], n_tensors: int) -> str:
    """What the file is (``model``, ``vocab``, ``adapter``, ``imatrix``): ``general.type``, else ``vocab`` for a
    file without tensors, else ``model``.  A "model" without tensors is a vocabulary: llama.cpp's converter writes
    ``general.type = model`` into its --vocab-only files too."""
    kinds = model_spec()["file_kinds"]
    v = meta.get(keynames.GENERAL_TYPE)
    if (
        v is not None
        and v.type == "STRING"
        and v.value in kinds["kinds"]
        and not (v.value == kinds["default"] and n_tensors == 0)
    ):
        return str(v.value)
    if any(map(str.startswith, meta, repeat("imatrix."))):  # a loop in C over millions of keys
        return "imatrix"
    return "vocab" if n_tensors == 0 else kinds["default"]


# ------------------------------------------------------------------------------------------------------------
# hyperparameters
# ------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _fields() -> dict[str, dict]:
    return loader()["hparams_fields"]


def _literal(text: Any, constants: Mapping[str, int]) -> Any:
    if text is None:
        return 0
    if isinstance(text, (int, float, bool)):
        return text
    t = str(text).strip()
    if t in ("true", "false"):
        return t == "true"
    if t in constants:
        return constants[t]
    if t in ("INFINITY", "-INFINITY"):
        return -math.inf if t.startswith("-") else math.inf
    m = re.fullmatch(r"(-?\d+\.\d*(?:e-?\d+)?)f?", t)
    if m:
        return float(m.group(1))
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    return 0


class Hparams:
    """``llama_hparams``: every field value-initialised or set to its declared default; methods from the spec."""

    def __init__(self, interp: Interpreter, constants: Mapping[str, int]):
        object.__setattr__(self, "_interp", interp)
        subs: dict[str, Struct] = {}
        for name, f in _fields().items():
            if "." in name:
                sub, member = name.split(".", 1)
                obj = subs.setdefault(sub, Struct())
                object.__setattr__(obj, member, _literal(f.get("default"), constants))
                continue
            if "array" in f:
                n = _literal(f["array"], constants)
                value = [_literal(f.get("default"), constants)] * int(n)
            else:
                value = _literal(f.get("default"), constants)
            object.__setattr__(self, name, value)
        for sub, obj in subs.items():
            object.__setattr__(self, sub, obj)

    def __getattr__(self, name: str) -> Any:
        fn = loader()["functions"].get(f"hparams.{name}")
        if fn is None:
            raise AttributeError(name)
        interp = self._interp

        def method(*args: Any) -> Any:
            return interp.call(fn["body"], self, _bind(fn, args, interp, self))

        return method


def _bind(fn: dict, args: tuple, interp: Interpreter, owner: Any) -> dict[str, Any]:
    params = fn.get("params") or []
    bound = dict(zip(params, args))
    for p in params[len(args) :]:
        bound[p] = interp.eval(str(fn.get("defaults", {}).get(p, "0")), Frame(owner))
    return bound


def field_ctype(name: str) -> tuple[str, str | None]:
    """C type of an hparams field and the container (``std::array``) when it is an array."""
    f = _fields().get(name)
    if f is None:
        return "", None
    return normalize_ctype(f.get("type", "")), ("std::array" if "array" in f else None)


# ------------------------------------------------------------------------------------------------------------
# the loader's metadata accessors
# ------------------------------------------------------------------------------------------------------------


class Ref:
    """A variable passed by reference to ``get_key``: where to store, and its C type."""

    def __init__(self, obj: Any, name: Any, subscript: bool = False):
        self.obj, self.name, self.subscript = obj, name, subscript
        self.ctype, self.container, self.n_max = "", None, None
        if subscript:
            return
        if isinstance(obj, Frame):
            f = obj.find(name)
            if f is not None:
                self.ctype = f.types.get(name, "")
            elif isinstance(obj.owner, Hparams):
                self.ctype, self.container = field_ctype(name)
            elif isinstance(obj.owner, Model):
                self.ctype = (model_spec().get("model_members") or {}).get(name, "")
        elif isinstance(obj, Hparams):
            self.ctype, self.container = field_ctype(name)
        m = re.fullmatch(r"std::(array|vector)<([^,>]+)(?:,([^>]+))?>", self.ctype)
        if m:
            self.container, self.ctype = f"std::{m.group(1)}", m.group(2)
        if self.container == "std::array":
            current = self.get()
            self.n_max = len(current) if isinstance(current, list) else None

    def get(self) -> Any:
        if self.subscript:
            return self.obj[self.name]
        if isinstance(self.obj, Frame):
            f = self.obj.find(self.name)
            return f.values[self.name] if f is not None else getattr(self.obj.owner, self.name, None)
        return getattr(self.obj, self.name, None)

    def set(self, value: Any) -> None:
        if self.subscript:
            self.obj[self.name] = value
        elif isinstance(self.obj, Frame):
            f = self.obj.find(self.name)
            if f is not None:
                f.values[self.name] = value
            else:
                object.__setattr__(self.obj.owner, self.name, value)
        else:
            object.__setattr__(self.obj, self.name, value)


def _convert(item_type: str, value: Any) -> Any:
    if item_type == "BOOL":
        return bool(value)
    if item_type in ("FLOAT32", "FLOAT64"):
        return float(value)
    if item_type == "STRING":
        if isinstance(value, LazyString):  # a long value: what a message or lookup of it needs
            return value.summary()
        return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")
    return int(value)


class MetaReader:
    """``ml``: the accessors of ``llama_model_loader`` over the file's metadata and tensor infos."""

    def __init__(
        self,
        arch: str,
        meta: Mapping[str, MetaValue],
        tensors: Mapping[str, TensorMeta],
        plan: LoadPlan,
        interp: Interpreter,
    ):
        self.arch, self.meta, self.tensors, self.plan, self.interp = arch, meta, tensors, plan, interp
        self.types = model_spec()["key_types"]
        for name, value in (model_spec().get("load_params") or {}).items():  # ml.load_mtp, ...
            setattr(self, name, value)

    def _key(self, key: str) -> str:
        return key.replace("{arch}", self.arch)

    def _fail(self, code: str, message: str, key: str, **detail: Any) -> bool:
        if self.interp.uncertain:
            return False
        raise Fatal(code, message, key=key, **detail)

    def _refuse(self, problem: Problem) -> bool:
        """:meth:`_fail` with one of the problems built by :func:`missing_key` / :func:`wrong_key_type`."""
        detail = {k: v for k, v in (("expected", problem.expected), ("got", problem.got)) if v is not None}
        return self._fail(problem.code, problem.message, problem.key, **detail)

    def _read(self, key: str, ref: Any, required: bool) -> MetaValue | None:
        self.plan.keys_read.setdefault(key, getattr(ref, "ctype", "") or "")
        v = self.meta.get(key)
        if v is None and required:
            self._refuse(missing_key(key))
        return v

    def get_arch(self) -> str:
        return self.arch

    def get_key(self, key: str, ref: Any, required: bool = True) -> bool:
        key = self._key(key)
        v = self._read(key, ref, required)
        if v is None:
            return False
        if not isinstance(ref, Ref):
            return True
        if isinstance(ref.get(), Struct):  # an enum read through a struct-less path: accept as the spec says
            return True
        want = self.types["scalar"].get(ref.ctype)
        if want is not None and v.type != want:
            return self._refuse(wrong_key_type(key, v.type, want))
        if v.type == "ARRAY":
            ref.set(list(v.value))
        else:
            ref.set(_convert(v.type, v.value) if v.type != "STRING" else v.value)
        return True

    def get_key_or_arr(self, key: str, ref: Any, n: Any = None, required: bool = True) -> bool:
        key = self._key(key)
        if isinstance(n, bool):  # the three-argument overload get_key_or_arr(kid, uint32_t &, required)
            n, required = None, n
        v = self._read(key, ref, required)
        if v is None:
            return False
        if n is None or not isinstance(ref, Ref) or ref.container is None:
            if v.type == "ARRAY":
                return (
                    self._fail(
                        "KEY-TYPE", f"expected scalar, found array for key: {key}", key, expected="scalar", got="ARRAY"
                    )
                    if required
                    else False
                )
            return self.get_key(key, ref, required)
        if n is UNKNOWN:
            return True
        if ref.n_max is not None and n > ref.n_max:
            return self._fail("HPARAM-RANGE", f"n > N_MAX: {n} > {ref.n_max} for key {key}", key)
        if v.type == "ARRAY":
            if len(v) != n:
                return self._fail(
                    "KEY-TYPE",
                    f"key {key} has wrong array length; expected {n}, got {len(v)}",
                    key,
                    expected=n,
                    got=len(v),
                )
            return self.get_arr(key, ref, required)
        want = self.types["scalar"].get(ref.ctype)
        if want is not None and v.type != want:
            return self._refuse(wrong_key_type(key, v.type, want))
        target = ref.get()
        if isinstance(target, list):
            for i in range(min(int(n), len(target))):
                target[i] = _convert(v.type, v.value)
        return True

    def get_arr(self, key: str, ref: Any, required: bool = True) -> bool:
        key = self._key(key)
        v = self._read(key, ref, False)
        if v is None or v.type != "ARRAY":
            if required:
                self._fail("KEY-MISSING", f"array key not found in model: {key}", key)
            return False
        if v.item_type not in self.types["array_any"]:
            return self._fail(
                "KEY-TYPE",
                f"{key} is not a string/float32/uint32/int32/uint64 array",
                key,
                expected="array",
                got=v.item_type,
            )
        if (
            isinstance(ref, Ref)
            and not ref.container
            and (isinstance(ref.get(), list) or (not ref.ctype and ref.get() is None))
        ):
            # a vector, or a member of the model class the extractor has no declaration of (also a vector)
            ref.set(CxxVector(_convert(v.item_type, x) for x in v.value))
        elif isinstance(ref, Ref) and ref.container:
            accepted = self.types["array_elements"].get(ref.container, {}).get(ref.ctype)
            if accepted is not None and v.item_type not in accepted:
                return self._fail(
                    "KEY-TYPE",
                    f"{key} has wrong array element type {v.item_type}",
                    key,
                    expected=accepted,
                    got=v.item_type,
                )
            if ref.container == "std::array" and ref.n_max is not None and len(v) > ref.n_max:
                return self._fail("HPARAM-RANGE", f"array length {len(v)} for key {key} exceeds max {ref.n_max}", key)
            target = ref.get()
            values = [_convert(v.item_type, x) for x in v.value]
            if isinstance(target, list) and ref.container == "std::array":
                target[: len(values)] = values
            else:
                ref.set(CxxVector(values))
        return True

    def get_arr_n(self, key: str, ref: Any, required: bool = True) -> bool:
        key = self._key(key)
        v = self._read(key, ref, required)
        if v is None:
            return False
        if v.type != "ARRAY":
            return self._refuse(wrong_key_type(key, v.type, "ARRAY"))
        if isinstance(ref, Ref):
            ref.set(len(v))
        return True

    def get_tensor_meta(self, name: Any) -> TensorMeta | None:
        return self.tensors.get(str(name))

    get_weight = get_tensor_meta


class TensorName(str):
    """``tn(...)``: a tensor name with the ``str()``/``c_str()`` of LLM_TN_IMPL."""

    def str(self) -> "TensorName":  # noqa: A003 - the C++ name
        return self

    c_str = str


def _tn(pattern: str, suffix: Any = None, bid: Any = None, xid: Any = None) -> Any:
    if isinstance(suffix, int) and not isinstance(suffix, bool):  # tn(NAME, bid) without suffix
        suffix, bid, xid = None, suffix, bid
    if any(a is UNKNOWN for a in (bid, xid, suffix)):
        return UNKNOWN
    args = tuple(a for a in (bid, xid) if a is not None)
    try:
        name = pattern % args if args else pattern
    except TypeError:
        name = pattern
    return TensorName(f"{name}.{suffix}" if suffix else name)


class Model(Struct):
    """``llama_model``: tensor members start null; ``layers`` sized by the block count."""


class CxxVector(list):
    """A ``std::vector`` with the members the spec's expressions call."""

    def empty(self) -> bool:
        return not self

    def size(self) -> int:
        return len(self)

    def clear(self) -> None:  # noqa: D102
        del self[:]


# ------------------------------------------------------------------------------------------------------------
# the whole load
# ------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _nested_members() -> frozenset:
    text = repr(loader()) + "".join(repr(a.tensors) for a in _all_architectures())
    return frozenset(re.findall(r"layer\.(\w+)\.\w+", text))


def _all_architectures() -> Iterable[Architecture]:
    from .programs import architectures

    return architectures().values()


@functools.lru_cache(maxsize=None)
def _ggml_type_ids() -> dict[str, int]:
    return {f"GGML_TYPE_{t.name}": t.id for t in tensor_types()}


def _split_keys_refused(meta: Mapping[str, MetaValue], plan: LoadPlan) -> bool:
    """llama_model_loader's constructor reads ``split.count`` (optional) and, when it says the model is split,
    ``split.no`` and (after the other shards) ``split.tensors.count`` (both required), each typed as spec/keys.yaml
    declares it; a wrong type or a missing key ends the load there.  Adds that problem to ``plan`` and
    says whether there was one (the values are the split set's rules: :mod:`gguf_construct.format.splitset`)."""
    count = meta.get(SPLIT_COUNT)
    reads = [(SPLIT_COUNT, False)]
    if count is not None and count.type == split_key_type(SPLIT_COUNT) and role(0, count.value) != SINGLE:
        reads += [(SPLIT_NO, True), (SPLIT_TENSORS, True)]
    for key, required in reads:
        value, expected = meta.get(key), split_key_type(key)
        if value is None:
            if required:
                plan.problems.append(missing_key(key, "split"))
                return True
        elif value.type != expected:
            plan.problems.append(wrong_key_type(key, value.type, expected, "split"))
            return True
    return False


def plan_load(
    meta: Mapping[str, MetaValue],
    tensors: Mapping[str, TensorMeta],
    *,
    vocab_only: bool | None = None,
    n_tensors: int | None = None,
) -> LoadPlan:
    """Replay llama.cpp's model load over ``meta`` (key -> :class:`MetaValue`) and ``tensors`` (name ->
    :class:`TensorMeta`).  ``vocab_only`` defaults to what the file is (:func:`file_kind`)."""
    n_file_tensors = len(tensors) if n_tensors is None else n_tensors
    kind = file_kind(meta, n_file_tensors)
    if vocab_only is None:
        vocab_only = kind == "vocab"
    arch_key = model_spec()["architecture_key"]
    arch_value = meta.get(arch_key)
    plan = LoadPlan(arch=None, kind=kind)
    if kind == "adapter":
        _plan_adapter(meta, tensors, plan)
        return plan
    if kind == "imatrix":
        _plan_imatrix(meta, tensors, plan)
        return plan
    if _split_keys_refused(meta, plan):
        return plan
    if arch_value is None:
        plan.problems.append(missing_key(arch_key, "arch"))
        return plan
    if arch_value.type != "STRING":
        plan.problems.append(wrong_key_type(arch_key, arch_value.type, "STRING", "arch"))
        return plan
    value = arch_value.value
    name = value.summary() if isinstance(value, LazyString) else str(value)  # no architecture is that long
    plan.arch = name
    arch = architecture(name)
    if arch is None or not arch.loadable:
        plan.problems.append(
            Problem("ARCH-UNKNOWN", f"unknown model architecture: '{name}'", key=arch_key, got=name, phase="arch")
        )
        return plan

    constants = dict(loader()["constants"])
    constants.update(loader()["tensor_flags"])
    interp = Interpreter({})
    hparams = Hparams(interp, constants)
    object.__setattr__(hparams, "vocab_only", bool(vocab_only))
    plan.hparams = hparams
    ml = MetaReader(name, meta, tensors, plan, interp)
    model = Model(_nested_members())
    vocab = Struct()
    model.hparams, model.vocab, model.arch, model.layers = hparams, vocab, name, []
    model.classifier_labels = CxxVector()
    state = _TensorState(plan, tensors, interp, constants)
    g = interp.globals
    g.update(constants)
    g.update(_ggml_type_ids())
    g.update(
        {
            "True": True,
            "False": False,
            "None": None,
            "true": True,
            "false": False,
            "hparams": hparams,
            "ml": ml,
            "arch": name,
            "vocab": vocab,
            "tn": _tn,
            "create_tensor": state.create_tensor,
            "int": _c_int,
            "float": float,
            "str": str,
            "max": _c_max,
            "min": _c_min,
            "abs": abs,
            "powf": math.pow,
            "sqrtf": math.sqrt,
            "std": _Std,
            "LLAMA_TOKEN_NULL": -1,
            "INT32_MAX": 2**31 - 1,
            "_div": _div,
            "_mod": _mod,
            "_ref": Ref,
            "llama_rope_scaling_type_from_string": _rope_scaling_type(constants),
            "llm_arch_is_recurrent": lambda a: "recurrent" in (_arch_traits(a)),
            "llm_arch_is_hybrid": lambda a: "hybrid" in (_arch_traits(a)),
            "load_arch_hparams": lambda _ml: interp.call(arch.hparams, model, {}),
            "load_arch_tensors": lambda _ml: interp.call(arch.tensors, model, {}),
        }
    )
    for fname, fn in loader()["functions"].items():
        if not fname.startswith("hparams."):
            g[fname] = _function(fn, interp, model)
    g["__statement__"] = lambda text, frame: _statement(text, frame, interp)

    phase = "hparams"
    try:
        interp.call(loader()["load_hparams"], model, {})
        phase = "vocab"
        plan.n_vocab = _load_vocab(meta, ml, name, vocab, plan, interp)
        if not vocab_only:
            phase = "tensors"
            n_layer_all = hparams.n_layer_all
            if not isinstance(n_layer_all, int):
                raise Fatal("HPARAM-RANGE", "block count unknown")
            model.layers = [Struct(_nested_members()) for _ in range(n_layer_all)]
            frame = Frame(model)
            _statement("LLAMA_LOAD_LOCALS", frame, interp)
            plan.quantities = dict(frame.values)
            interp.call(loader()["load_tensors"], model, {}, frame)
            state.done(n_file_tensors)
    except Fatal as f:
        detail = dict(f.detail)
        plan.problems.append(
            Problem(
                _code(f),
                f.message,
                key=detail.get("key"),
                tensor=detail.get("tensor"),
                expected=detail.get("expected"),
                got=detail.get("got"),
                phase=phase,
            )
        )
    plan.approximations = interp.approximations
    # the interpreter stays reachable from the plan (its hparams methods run on it) and its globals form cycles
    # with it: keep no array of the file there, which would hold the file's memory map until a collection
    without_arrays = getattr(meta, "without_arrays", None)  # a FileMeta: its values are not converted here
    if without_arrays is not None:
        ml.meta = without_arrays()
    else:
        ml.meta = {key: value for key, value in meta.items() if value.type != "ARRAY"}
    return plan


def _plan_adapter(meta: Mapping[str, MetaValue], tensors: Mapping[str, TensorMeta], plan: LoadPlan) -> None:
    """llama_adapter_lora_init's checks of the adapter file alone (spec/model.yaml, adapter), as ADAPTER problems."""
    spec = model_spec()["adapter"]

    def problem(message: str, key: str | None = None, tensor: str | None = None) -> None:
        plan.problems.append(Problem("ADAPTER", message, key=key, tensor=tensor, phase="adapter"))

    arch_key = model_spec()["architecture_key"]
    arch_value = meta.get(arch_key)
    name = str(arch_value.value) if arch_value is not None and arch_value.type == "STRING" else ""
    plan.arch = name or None
    a = architecture(name)
    if a is None or not a.loadable:
        problem(
            f"LoRA architecture {name!r} is not one llama.cpp knows (model arch and LoRA arch mismatch)",
            key=model_spec()["architecture_key"],
        )
    for entry in ("type_key", "alpha_key", "invocation_tokens_key"):
        want = spec[entry]
        v = meta.get(want["key"])
        if v is None:
            if entry == "type_key":
                problem(f"expect {want['key']} to be {want['value']!r}, but got: ''", key=want["key"])
            continue
        if v.type != want["type"] or ("item_type" in want and v.item_type != want["item_type"]):
            problem(f"{want['key']} has type {v.type} but llama.cpp reads it as {want['type']}", key=want["key"])
        elif "value" in want and v.value != want["value"]:
            problem(f"expect {want['key']} to be {want['value']!r}, but got: {v.value!r}", key=want["key"])
    suffix_a, suffix_b = spec["pair_suffixes"]["a"], spec["pair_suffixes"]["b"]
    pairs: dict[str, dict[str, TensorMeta]] = {}
    for t in tensors.values():
        if t.name.endswith(suffix_a):
            pairs.setdefault(t.name[: -len(suffix_a)], {})["a"] = t
        elif t.name.endswith(suffix_b):
            pairs.setdefault(t.name[: -len(suffix_b)], {})["b"] = t
        elif not t.name.endswith(spec["skipped_suffix"]):
            problem(f"LoRA tensor '{t.name}' has unexpected suffix", tensor=t.name)
    for base, pair in pairs.items():
        if len(pair) < 2:
            problem(f"LoRA tensor pair for '{base}' is missing one component", tensor=next(iter(pair.values())).name)
        elif not base.endswith(spec["flipped_pair"]) and pair["a"].ne4[1] != pair["b"].ne4[0]:
            problem(
                f"lora_a tensor is not transposed: '{pair['a'].name}' rank {pair['a'].ne4[1]} but "
                f"'{pair['b'].name}' {pair['b'].ne4[0]}",
                tensor=pair["a"].name,
            )


def _plan_imatrix(meta: Mapping[str, MetaValue], tensors: Mapping[str, TensorMeta], plan: LoadPlan) -> None:
    """common_imatrix_load's and llama-quantize's checks of an importance matrix, as IMATRIX problems."""
    spec = model_spec()["imatrix"]

    def problem(message: str, key: str | None = None, tensor: str | None = None) -> None:
        plan.problems.append(Problem("IMATRIX", message, key=key, tensor=tensor, phase="imatrix"))

    if not tensors:
        problem("no data in the importance matrix (no tensors)")
    for want in spec["keys"]:
        v = meta.get(want["key"])
        if v is None:
            problem(f"missing imatrix metadata: {want['key']}", key=want["key"])
        elif v.type != want["type"] or ("item_type" in want and v.item_type != want["item_type"]):
            problem(f"{want['key']} has type {v.type} but is read as {want['type']}", key=want["key"])
    sums, counts = spec["pair_suffixes"]["sums"], spec["pair_suffixes"]["counts"]
    pairs: dict[str, dict[str, TensorMeta]] = {}
    for t in tensors.values():
        for part, suffix in (("sums", sums), ("counts", counts)):
            if t.name.endswith(suffix):
                pairs.setdefault(t.name[: -len(suffix)], {})[part] = t
    for base, pair in pairs.items():
        first = next(iter(pair.values()))
        if len(pair) < 2:
            problem(f"mismatched sums and counts for {base}", tensor=first.name)
        elif any(t.type != spec["pair_type"] for t in pair.values()):
            problem(f"sums and counts for {base} must be F32", tensor=first.name)


def _unique_tokens(tokens: Any, empty_as: str) -> None:
    """Fatal when two token strings are equal (an empty one named ``empty_as``): llama.cpp aborts on them."""
    if isinstance(tokens, StringList):
        try:
            i = first_repeated_token(tokens, empty_as)  # on the file's bytes, without a str per token
        except ValueError:  # a renaming it cannot judge on bytes: item by item below
            pass
        else:
            if i is not None:
                _repeated_token(i, tokens[i] or empty_as.format(i=i))
            return
    else:
        distinct = set(tokens)
        if len(distinct) == len(tokens) and "" not in distinct:
            return  # the common case, decided in one C-level pass
    seen: set = set()
    for i, word in enumerate(tokens):
        word = word or empty_as.format(i=i)
        if word in seen:
            _repeated_token(i, word)
        seen.add(word)


def _repeated_token(i: int, word: str) -> None:
    raise Fatal(
        "VOCAB",
        f"token {i} repeats the string {word!r} of an earlier token: llama.cpp aborts "
        "(GGML_ASSERT(id_to_token.size() == token_to_id.size()))",
        key=keynames.TOKENIZER_GGML_TOKENS,
    )


def named_model_missing_token(meta: Mapping[str, MetaValue], tokens: Any) -> str | None:
    """The token llama.cpp looks up by text because of general.name and the vocabulary lacks (spec/model.yaml
    vocab.named_model_tokens), or None."""
    name = meta.get(keynames.GENERAL_NAME)
    if name is None or name.type != "STRING":
        return None
    lowered = str(name.value).lower()
    pre, arch = meta.get(keynames.TOKENIZER_GGML_PRE), meta.get(keynames.GENERAL_ARCHITECTURE)
    pre = str(pre.value) if pre is not None and pre.type == "STRING" else ""
    arch = str(arch.value) if arch is not None and arch.type == "STRING" else ""
    for req in model_spec()["vocab"].get("named_model_tokens") or ():
        unless = req.get("unless") or {}
        if any(p in pre for p in unless.get("pre_contains", ())) or any(
            a in arch for a in unless.get("arch_contains", ())
        ):
            continue
        if any(part in lowered for part in req["name_contains"]):
            have = tokens if isinstance(tokens, StringList) else set(tokens)  # a StringList looks up bytes
            return next((token for token in req["tokens"] if token not in have), None)
    return None


def _code(f: Fatal) -> str:
    return {"ASSERT": "HPARAM-RANGE", "FAIL": "HPARAM-RANGE", "LOOP": "HPARAM-RANGE"}.get(f.code, f.code)


def _arch_traits(name: Any) -> list:
    from .programs import architectures

    a = architectures().get(str(name))
    return list(getattr(a, "traits", []) or []) if a else []


def _statement(text: str, frame: Frame, interp: Interpreter) -> bool:
    if text == "LLAMA_LOAD_LOCALS":
        for s in loader()["locals"]:
            interp.step(s, frame)
        return True
    return False


def _function(fn: dict, interp: Interpreter, model: Model):
    def call(*args: Any) -> Any:
        return interp.call(fn["body"], model, _bind(fn, args, interp, model))

    return call


def _div(a: Any, b: Any) -> Any:
    from .programs import c_div

    return c_div(a, b)


def _mod(a: Any, b: Any) -> Any:
    from .programs import c_mod

    return c_mod(a, b)


def _c_int(x: Any) -> Any:
    return x if x is UNKNOWN else int(x)


def _c_max(*xs: Any) -> Any:
    return UNKNOWN if any(x is UNKNOWN for x in xs) else max(xs)


def _c_min(*xs: Any) -> Any:
    return UNKNOWN if any(x is UNKNOWN for x in xs) else min(xs)


class _Std:
    sqrt = staticmethod(math.sqrt)
    max = staticmethod(_c_max)
    min = staticmethod(_c_min)


def _rope_scaling_type(constants: Mapping[str, int]):
    names = {"none": "NONE", "linear": "LINEAR", "yarn": "YARN", "longrope": "LONGROPE"}

    def parse(text: Any) -> int:
        key = names.get(str(text))
        return constants[f"LLAMA_ROPE_SCALING_TYPE_{key}"] if key else constants["LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED"]

    return parse


class _TensorState:
    """``create_tensor`` and ``done_getting_tensors``: what is asked for, what was found, what was counted."""

    def __init__(
        self, plan: LoadPlan, tensors: Mapping[str, TensorMeta], interp: Interpreter, constants: Mapping[str, int]
    ):
        self.plan, self.tensors, self.interp = plan, tensors, interp
        self.NOT_REQUIRED = constants["TENSOR_NOT_REQUIRED"]
        self.DUPLICATED = constants["TENSOR_DUPLICATED"]
        self.SKIP = constants["TENSOR_SKIP"]
        self.ALLOW_RESHAPE = constants["TENSOR_ALLOW_RESHAPE"]
        self.n_created = 0

    def create_tensor(self, name: Any, ne: Any, flags: Any = 0) -> Any:
        if name is UNKNOWN:
            self.interp.note("tensor with an unknown name")
            return UNKNOWN
        name = str(name)
        certain = not self.interp.uncertain and flags is not UNKNOWN
        flags = 0 if flags is UNKNOWN else int(flags)
        ne = tuple(ne) if isinstance(ne, (list, tuple)) else (UNKNOWN,)
        required = certain and not flags & self.NOT_REQUIRED
        meta = self.tensors.get(name)
        prev = self.plan.expected.get(name)
        # a request inside try/catch is not required: its absence runs the fallback
        self.plan.requests.append(ExpectedTensor(name, ne, flags, required and not self.interp.trying, certain))
        if prev is None or (certain and not prev.certain):
            self.plan.expected[name] = ExpectedTensor(name, ne, flags, required, certain)
        if meta is None:
            if required and self.interp.trying:
                raise Fatal("TENSOR-MISSING", f"tensor '{name}' not found", tensor=name)
            if required:
                self.plan.problems.append(
                    Problem(
                        "TENSOR-MISSING",
                        f"tensor '{name}' not found",
                        tensor=name,
                        expected=", ".join(map(str, ne)),
                        phase="tensors",
                    )
                )
            return None
        if not certain:
            self.plan.possible.add(name)
            return meta
        if all(isinstance(d, int) for d in ne):
            if flags & self.ALLOW_RESHAPE:
                ok = math.prod(ne) == math.prod(meta.ne4)
            else:
                ok = len(ne) <= 4 and tuple(ne) + (1,) * (4 - len(ne)) == meta.ne4
            if not ok and self.interp.trying:
                raise Fatal("TENSOR-SHAPE", f"tensor '{name}' has wrong shape", tensor=name)
            if not ok and not any(p.tensor == name for p in self.plan.problems):
                self.plan.problems.append(
                    Problem(
                        "TENSOR-SHAPE",
                        f"tensor '{name}' has wrong shape; expected {_shape_text(ne)}, got {_shape_text(meta.ne4)}",
                        tensor=name,
                        expected=_shape_text(ne),
                        got=_shape_text(meta.ne4),
                        phase="tensors",
                    )
                )
        else:
            self.interp.note(f"shape of {name} not computable")
            self.plan.possible.add(name)
        if not flags & self.DUPLICATED:
            self.plan.used[name] = self.plan.used.get(name, 0) + 1
            self.n_created += 1
        if flags & self.SKIP:
            return None
        return meta

    def done(self, n_tensors: int) -> None:
        if self.plan.problems:
            return
        if self.n_created > n_tensors:
            raise Fatal(
                "TENSOR-UNUSED",
                f"too many tensors created; expected {n_tensors}, got {self.n_created}",
                expected=n_tensors,
                got=self.n_created,
            )
        unused = [n for n in self.tensors if n not in self.plan.used and n not in self.plan.possible]
        if self.n_created < n_tensors and unused:
            for n in unused:
                self.plan.problems.append(
                    Problem(
                        "TENSOR-UNUSED",
                        f"tensor '{n}' is not used by the {self.plan.arch} loader (llama.cpp: wrong "
                        f"number of tensors; expected {n_tensors}, got {self.n_created})",
                        tensor=n,
                        expected=n_tensors,
                        got=self.n_created,
                        phase="tensors",
                    )
                )


def _shape_text(ne: Iterable) -> str:
    """llama.cpp's llama_format_tensor_shape: ``5, 4096`` padded to width 5 per dimension."""
    return ", ".join(f"{d:5d}" if isinstance(d, int) else "?" for d in ne)


def _load_vocab(
    meta: Mapping[str, MetaValue], ml: MetaReader, arch: str, vocab: Struct, plan: LoadPlan, interp: Interpreter
) -> int:
    """llama_vocab::impl::load: the checks that make it throw; returns the number of tokens."""
    spec = model_spec()["vocab"]
    typed = spec["typed_keys"]
    for key in (spec["model_key"], spec["pre_key"], keynames.TOKENIZER_GGML_TOKEN_TYPE_COUNT):
        _typed_key(ml, key, typed[key], required=key == spec["model_key"])
    model_name = meta[spec["model_key"]].value
    pre = meta.get(spec["pre_key"])
    pre_name = pre.value if pre is not None else ""
    n_token_types = meta.get(keynames.TOKENIZER_GGML_TOKEN_TYPE_COUNT)
    object.__setattr__(vocab, "n_token_types", lambda: int(n_token_types.value) if n_token_types is not None else 0)
    model = spec["models"].get(model_name)
    if model is None:
        raise Fatal("VOCAB", f"unknown tokenizer: '{model_name}'", key=spec["model_key"], got=model_name)
    if model["type"] == "NONE":
        n = 0
        size = meta.get(f"{arch}.vocab_size")
        if size is not None:
            ref = _Slot("uint32_t")
            ml.get_key(keynames.ARCH_VOCAB_SIZE, ref, False)
            n = int(ref.value)
        object.__setattr__(vocab, "n_tokens", lambda: n)
        return n
    if model.get("merges") == "required":
        merges = meta.get(spec["merges_key"])
        if merges is None and pre_name not in spec["merges_optional_for_pre"]:
            raise Fatal("VOCAB", "cannot find tokenizer merges in model file", key=spec["merges_key"])
        if merges is not None and (merges.type != "ARRAY" or merges.item_type != "STRING"):
            raise Fatal("VOCAB", f"invalid gguf type for {spec['merges_key']}", key=spec["merges_key"])
    if model["type"] == "BPE" and pre_name and pre_name not in spec["bpe_pre"]:
        raise Fatal("VOCAB", f"unknown pre-tokenizer type: '{pre_name}'", key=spec["pre_key"], got=pre_name)
    for key in (keynames.TOKENIZER_GGML_ADD_SPACE_PREFIX, keynames.TOKENIZER_GGML_REMOVE_EXTRA_WHITESPACES):
        _typed_key(ml, key, typed[key])
    tokens = meta.get(spec["tokens_key"])
    if tokens is None:
        raise Fatal("VOCAB", "cannot find tokenizer vocab in model file", key=spec["tokens_key"])
    if tokens.type != "ARRAY" or tokens.item_type != "STRING":
        raise Fatal("VOCAB", f"invalid gguf type for {spec['tokens_key']}", key=spec["tokens_key"])
    n = len(tokens)
    _unique_tokens(tokens.value, spec["unique_tokens"]["empty_as"])
    missing = named_model_missing_token(meta, tokens.value)
    if missing is not None:
        raise Fatal(
            "VOCAB",
            f"general.name {meta[keynames.GENERAL_NAME].value!r} makes llama.cpp look up token "
            f"{missing!r}, which the vocabulary lacks (unordered_map::at)",
            key=keynames.GENERAL_NAME,
        )
    for part in ("scores", "token_types"):
        key, types = spec[part]["key"], spec[part]["element_types"]
        v = meta.get(key)
        if v is None:
            continue
        if v.type != "ARRAY" or v.item_type not in types:
            raise Fatal("VOCAB", f"invalid gguf type for {key}", key=key)
        if len(v) < n:
            raise Fatal(
                "VOCAB",
                f"Index out of array bounds for {part.replace('_', '')} ({len(v)} < {n})",
                key=key,
                expected=n,
                got=len(v),
            )
    for key, ctype in typed.items():
        if key.endswith(("_id", "_token")):
            _typed_key(ml, key, ctype)
    if model.get("byte_tokens") == "required":
        unset = _unset_byte(tokens.value, meta.get(spec["token_types"]["key"]), spec)
        if unset is not None:
            raise Fatal("VOCAB", f"Byte token for <0x{unset}> is not set", key=spec["tokens_key"])
    object.__setattr__(vocab, "n_tokens", lambda: n)
    return n


_BYTE_TOKEN_BYTES = 64  # no token longer than this spells a byte (the pattern is a few characters)


def _unset_byte(tokens, token_types: MetaValue | None, vocab_spec: dict) -> int | None:
    """The first byte value no token of type "byte" (the token types of spec/keys.yaml) spells as the vocabulary
    spec's ``byte_token_pattern``, or None; token id 0 spells none (the tokenizer's table starts as zeros)."""
    types_key = vocab_spec["token_types"]["key"]
    byte_type = next(k for k, v in lookup(types_key, None)["values"].items() if v == "byte")
    spelled = set()
    if token_types is not None:
        rx = re.compile(vocab_spec["byte_token_pattern"] + r"\Z")
        typed = np.flatnonzero(np.asarray(token_types.value)[: len(tokens)] == int(byte_type))
        if isinstance(tokens, StringList) and len(typed):  # a byte token is short: longer ones are not decoded
            typed = typed[tokens.lengths_at(typed) <= _BYTE_TOKEN_BYTES]
        for i in typed.tolist():
            m = rx.match(tokens[i]) if i else None
            if m:
                spelled.add(int(m.group(1), 16))
    return next((b for b in range(256) if b not in spelled), None)


class _Slot(Ref):
    """A typed variable for a key the vocabulary reads."""

    def __init__(self, ctype: str):  # noqa: D107 - no object to write into
        self.obj, self.name, self.subscript = None, None, False
        self.ctype, self.container, self.n_max, self.value = normalize_ctype(ctype), None, None, None

    def get(self) -> Any:
        return self.value

    def set(self, value: Any) -> None:
        self.value = value


def _typed_key(ml: MetaReader, key: str, ctype: str, required: bool = False) -> None:
    ml.get_key(key, _Slot(ctype), required)
