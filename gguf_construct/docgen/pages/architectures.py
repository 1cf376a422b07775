"""The pages architectures.md (every architecture llama.cpp knows, the keys all of them read, the derived
quantities) and architectures/<name>.md (one per architecture: its keys and its tensors with shapes and
conditions), from spec/architectures/ and spec/model.yaml through :mod:`gguf_construct.arch.outline`."""

from __future__ import annotations

from ...arch import architectures, model_spec
from ...arch.derived import derived_quantities
from ...arch.outline import KeyRead, TensorDecl, common_key_reads, outline
from ...arch.programs import loader
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, intro, table

__all__ = ["PAGES"]

_INDEX = "architectures.md"


_COMMON_LOCALS = frozenset(s["let"] for s in loader().get("locals") or () if "let" in s) | {"layer"}


def _page_file(name: str) -> str:
    return f"architectures/{name}.md"


def _gguf_type(k: KeyRead) -> str:
    """The GGUF value type llama.cpp accepts for a key, from the C type it reads the key into."""
    types = model_spec()["key_types"]
    scalar = types["scalar"].get(k.ctype.replace("const ", "").strip())
    if k.reader == "get_key":
        return scalar or (f"as C {k.ctype}" if k.ctype else "?")
    element = scalar or "?"
    if k.reader == "get_key_or_arr":
        return f"{element}, or ARRAY of it (one per layer)"
    if k.reader == "get_arr_n":
        return "ARRAY (its length is read)"
    return f"ARRAY of {element}" if scalar else "ARRAY"


def _default(k: KeyRead) -> str:
    if k.required:
        return ""
    return code(k.default) if k.default is not None else ""


def _when(conds: tuple[str, ...]) -> str:
    return "<br>".join(code(c) for c in conds) if conds else "always"


def _key_rows(ctx: Ctx, keys, arch: str | None) -> list[list[str]]:
    rows, seen = [], set()
    for k in keys:
        name = k.key.replace("{arch}", arch) if arch else k.key
        sig = (name, k.reader, k.conditions)
        if sig in seen:
            continue
        seen.add(sig)
        rows.append(
            [code(name), esc(_gguf_type(k)), "required" if k.required else "optional", _default(k), _when(k.conditions)]
        )
    return rows


def _tensor_kind(t: TensorDecl) -> str:
    if t.duplicated:
        return "duplicate (not counted)"
    return "required" if t.required else "optional"


def _tensor_rows(ctx: Ctx, tensors: list[TensorDecl]) -> list[list[str]]:
    rows, seen = [], set()
    for t in tensors:
        sig = (t.name, t.shape, t.flags, t.conditions)
        if sig in seen:
            continue
        seen.add(sig)
        base = t.name.rsplit(".", 1)[0] if t.name.endswith((".weight", ".bias")) else t.name
        name = ctx.link(anchor("tensor", base), code(t.name))
        rows.append([name, code("[" + ", ".join(t.shape) + "]"), _tensor_kind(t), _when(t.conditions)])
    return rows


# --- architectures.md ----------------------------------------------------------------------------------------------


def _sec_index(ctx: Ctx) -> str:
    rows = []
    for name, a in architectures().items():
        o = outline(name)
        traits = ", ".join(a.traits) if a.traits else ""
        rows.append(
            [
                ctx.link(anchor("model", name), code(name)),
                code(a.enum),
                "yes" if a.loadable else "no",
                esc(traits),
                str(len({k.key for k in o.keys})),
                str(len({t.name for t in o.tensors})),
            ]
        )
    doc = model_spec()["doc"]
    return "\n".join(
        [
            ctx.prose(doc) + "\n",
            f"{len(rows)} architectures (`general.architecture` values).  Each page lists the keys the "
            "architecture's `load_hparams` reads on top of the common ones below and the tensors its "
            "`load_tensors` creates, with their shapes in ggml order (`ne[0]` first) as expressions over "
            "the loader's variables and the conditions under which each is expected.  The checker "
            "replays these programs on a file (`check --profile llama.cpp`).\n",
            table(["architecture", "llama.cpp", "loadable", "traits", "keys", "tensor names"], rows, "lllllr"),
        ]
    )


def _sec_common(ctx: Ctx) -> str:
    rows = _key_rows(ctx, common_key_reads(), None)
    return (
        "Read for every architecture (`{arch}` is the value of `general.architecture`) before its own keys; "
        "a key of the wrong type fails the load even when it is optional.\n\n"
        + table(["key", "GGUF type", "need", "default", "when"], rows)
    )


def _source_text(src) -> str:
    field = code(src.field if src.field.startswith("vocab.") else f"hparams.{src.field}")
    if src.key is not None:
        absent = f"; absent: {code(src.default)}" if src.default is not None else ""
        return f"{field} ← {code(src.key)}{absent}"
    initial = f" (initially {code(src.default)})" if src.default is not None else ""
    return f"{field}{initial}"


def _sec_derived(ctx: Ctx) -> str:
    rows = [
        [code(d.name), code(d.ctype), code(d.value), "<br>".join(_source_text(s) for s in d.sources)]
        for d in derived_quantities()
    ]
    fns = loader().get("functions") or {}
    acc = []
    for name in (
        "hparams.n_embd_head_k",
        "hparams.n_embd_head_v",
        "hparams.n_embd_k_gqa",
        "hparams.n_embd_v_gqa",
        "hparams.n_rot",
        "hparams.n_gqa",
    ):
        body = fns.get(name, {}).get("body") or []
        ret = [s["return"] for s in body if "return" in s]
        if ret:
            acc.append([code(name + "(il)"), "", code(" / ".join(map(str, ret))), ""])
    return (
        "The variables the tensor shapes are written in, defined once by the loader.  `hparams` fields are "
        "filled from the keys: the last column names, for each field a variable depends on (through the "
        "accessors it calls), the key the common `load_hparams` reads into it and the value the field keeps "
        "when the key is absent; a field without a key is set by the architecture's own program (its page "
        "lists the keys) or computed.  `gguf-construct expect FILE` prints the values for a file.\n\n"
        + table(["variable", "C type", "value", "from (key; value when absent)"], rows + acc)
    )


# --- architectures/<name>.md ---------------------------------------------------------------------------------------


def _arch_sections(name: str) -> tuple[Section, ...]:
    def facts(ctx: Ctx) -> str:
        a = architectures()[name]
        rows = [
            ["`general.architecture`", code(name)],
            ["llama.cpp enum", code(a.enum)],
            ["llama.cpp class", code(a.klass)],
            ["source", code(a.source)],
        ]
        if a.inherits:
            rows.append(["inherits", code(a.inherits)])
        if a.traits:
            rows.append(["traits", esc(", ".join(a.traits))])
        if not a.loadable:
            rows.append(["loadable", "no: llama.cpp's model loader refuses this architecture"])
        # the anchor on a line of its own: a table must start its line to be a table
        return (
            f'<a id="{anchor("model", name)}"></a>\n\n'
            + table(["fact", "value"], rows)
            + f"\nBack to [all architectures]({ctx.page_link(_INDEX)}).\n"
        )

    def keys(ctx: Ctx) -> str:
        rows = _key_rows(ctx, outline(name).keys, name)
        head = f"Besides the [keys every architecture reads]({ctx.page_link(_INDEX)}#architectures-common):\n\n"
        return head + (
            table(["key", "GGUF type", "need", "default", "when"], rows) if rows else "No keys of its own.\n"
        )

    def tensors(ctx: Ctx) -> str:
        o = outline(name)
        rows = _tensor_rows(ctx, o.tensors)
        text = (
            "Shapes in ggml order; `{i}` runs over the blocks (0 to `block_count` - 1) where the loader loops "
            "over layers.  `has(t)` means tensor t is in the file.\n\n"
        )
        text += table(["name", "shape", "need", "when"], rows) if rows else "No tensors.\n"
        own = [[code(n), code(c), code(v)] for n, c, v in o.locals if n not in _COMMON_LOCALS]
        if own:
            text += (
                "\nThe architecture's own variables (besides the [derived quantities]"
                f"({ctx.page_link(_INDEX)}#architectures-derived)):\n\n" + table(["variable", "C type", "value"], own)
            )
        if o.checks:
            text += (
                "\nThe loader also checks (a failed assert aborts the process):\n\n"
                + "\n".join(
                    f"- {code(c)}" + (f" when {', '.join(code(x) for x in conds)}" if conds else "")
                    for c, conds in o.checks
                )
                + "\n"
            )
        return text

    return (
        Section(f"{name}-facts", "Facts", facts),
        Section(f"{name}-keys", "Keys", keys),
        Section(f"{name}-tensors", "Tensors", tensors),
    )


def _arch_page(name: str) -> Page:
    return Page(
        _page_file(name),
        name,
        f"the {name} architecture",
        intro(f"Architecture `{name}`", f"What llama.cpp's loader reads and creates for `{name}` models."),
        _arch_sections(name),
        defines=lambda d: (anchor("model", name),),
        listed=False,
    )


def _index_defines(data: SpecData):
    return ()


PAGES: tuple[Page, ...] = (
    Page(
        _INDEX,
        "Architectures",
        "every architecture llama.cpp knows: the keys it reads, the tensors it creates, with shapes and conditions",
        intro("Architectures", "The model layer: what llama.cpp's loader demands of each architecture."),
        (
            Section("architectures-index", "All architectures", _sec_index),
            Section("architectures-common", "Keys every architecture reads", _sec_common),
            Section("architectures-derived", "Derived quantities", _sec_derived),
        ),
        defines=_index_defines,
        count=lambda d: f"{len(architectures())} architectures",
    ),
) + tuple(_arch_page(name) for name in architectures())
