"""Static analysis of one Jinja template: parse it with jinja2 (never render), walk the syntax tree, report the
routes out of an unsandboxed renderer.

:func:`scan` returns :class:`Issue` objects (``escape``, ``suspicious``, ``unparsed``, ``limit``); the checker turns
them into TPL-* findings.  The names it looks for and its limits are in ``spec/templates.yaml``.  jinja2 is imported
on the first call only, so files without templates never pay for it.  Work per template is bounded: size, nesting
depth and node count are capped, folded strings are capped in number and length, and results are cached by
template text (the same template recurs across the quantisations of a model).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

from ..format import spec as _spec
from . import jinja_folds as _folds
from . import jinja_values as _values

__all__ = [
    "Issue",
    "scan",
    "scan_lexically",
    "limit",
    "ESCAPE",
    "SUSPICIOUS",
    "UNPARSED",
    "LIMIT",
    "RESOURCE",
    "GADGET",
    "is_template",
]

ESCAPE, SUSPICIOUS, UNPARSED, LIMIT, RESOURCE = "escape", "suspicious", "unparsed", "limit", "resource"
GADGET = "gadget"  # found by the render oracle only (template_oracle.py)

# a dunder name (__class__) or a name-mangled private attribute (_TemplateReference__context)
_DUNDER = re.compile(r"\A(__\w+__|_[A-Za-z]\w*__\w+)\Z")
_TOKENS = re.compile(r"\{\{|\{%-?\s*(end)?(\w*)|%\}|\}\}|[()\[\]{}]")
# statements that nest (set has no end tag unless it captures a block, so it does not count)
_BLOCK_WORDS = frozenset(("if", "for", "macro", "call", "filter", "with", "block", "autoescape", "trans"))
_FORMAT_FIELD = re.compile(r"\{([^{}!:]*[.\[][^{}!:]*)[^{}]*\}")


@dataclass(frozen=True)
class Issue:
    """One thing the analysis found: its kind, what it is, the construct (as written or folded), the limit it
    passed, and the template line it is on (when known)."""

    kind: str
    problem: str
    construct: str
    limit: int | None = None
    line: int | None = None


@functools.lru_cache(maxsize=None)
def _facts() -> dict:
    return _spec.load_yaml("templates.yaml")


@functools.lru_cache(maxsize=None)
def _names(field: str) -> frozenset:
    return frozenset(_facts()["names"][field])


@functools.lru_cache(maxsize=1)
def _dunder_in_text() -> re.Pattern:
    """A dunder name of ``dunder_stems`` anywhere in a text."""
    return re.compile(r"__(?:%s)__" % "|".join(sorted(_names("dunder_stems"), key=len, reverse=True)))


@functools.lru_cache(maxsize=1)
def _key_stem() -> re.Pattern:
    """A string piece that is one of ``key_stems``, with or without underscores around it."""
    return re.compile(r"\A_*(?:%s)_*\Z" % "|".join(_names("key_stems")))


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2  # noqa: PLC0415 - imported lazily: only files with templates need it
    from jinja2 import ext, nodes  # noqa: PLC0415

    class _BlockTags(ext.Extension):
        """The runtimes' own block tags (spec/templates.yaml dialect): a tag and its end tag around a body."""

        tags = set(_facts()["dialect"]["block_tags"])

        def parse(self, parser):
            tag = next(parser.stream)
            body = parser.parse_statements((f"name:end{tag.value}",), drop_needle=True)
            return nodes.Scope(body, lineno=tag.lineno)

    # loop controls ({% break %}) and {% do %} are used by real templates and by llama.cpp's dialect
    return jinja2.Environment(extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do", _BlockTags])


@functools.lru_cache(maxsize=256)
def is_template(text: str) -> bool:
    """True when ``text`` holds Jinja statements and jinja2 parses it (for strings outside the template keys)."""
    if _facts()["keys"]["statement_marker"] not in text or len(text) > _facts()["limits"]["bytes"]:
        return False
    if _nesting_depth(text) > _facts()["limits"]["depth"]:
        return True
    try:
        _environment().parse(text)
    except Exception:  # noqa: BLE001 - anything jinja2 refuses is not a template
        return False
    return True


def _nesting_depth(text: str) -> int:
    """Deepest nesting of block statements plus brackets inside one tag, counted lexically in one linear pass
    (brackets in the text between tags do not count)."""
    deepest = depth = blocks = 0
    in_tag = False
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in ("{{", "}}", "%}") or tok.startswith("{%"):
            in_tag = tok == "{{" or tok.startswith("{%")
            depth = 0
            if m.group(2) in _BLOCK_WORDS:
                blocks = max(0, blocks - 1) if m.group(1) else blocks + 1
                deepest = max(deepest, blocks)
        elif in_tag:
            if tok in "([{":
                depth += 1
                deepest = max(deepest, blocks + depth)
            elif depth:
                depth -= 1
    return deepest


def _lexical(text: str) -> list[Issue]:
    """Dunder names and internal attributes inside the tags of the raw text: what is left to check when the
    template is not analysed (plain text and comments are not rendered as code, so they do not count)."""
    return lexical_chunks([text])


_DELIMITERS = re.compile(r"\{\{|\{%|\}\}|%\}")
_OVERLAP = 256  # characters of code carried across a chunk edge: longer than any name looked for
_LEADING_WORD = re.compile(r"\A\w+")


def _code_pieces(chunks: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """The text inside {{ }} and {% %} tags of a text given in pieces (an unclosed tag runs to the end), as
    (code, cut): a piece ``cut`` by a chunk edge is carried on into the next one by its last ``_OVERLAP``
    characters (from a word's start), so a name cut by the edge is whole there.  Held: one chunk plus that
    overlap, however long a tag is."""
    in_tag, carry, overlap = False, "", ""
    chunks = iter(chunks)
    chunk = next(chunks, None)
    while chunk is not None:
        following = next(chunks, None)
        buf = carry + chunk
        cut = len(buf) if following is None else max(0, len(buf) - 2)  # a delimiter cut in two waits
        pos = code_from = 0
        for m in _DELIMITERS.finditer(buf):
            if m.start() >= cut:
                break
            if m.group() in ("{{", "{%"):
                if not in_tag:
                    in_tag, code_from, overlap = True, m.end(), ""
            elif in_tag:
                yield overlap + buf[code_from : m.start()], False
                in_tag, overlap = False, ""
            pos = m.end()
        start = max(cut, pos)
        if in_tag and start > code_from:
            piece = overlap + buf[code_from:start]
            yield piece, following is not None
            tail = piece[-_OVERLAP:]
            mid_word = len(piece) > _OVERLAP and (piece[-_OVERLAP - 1].isalnum() or piece[-_OVERLAP - 1] == "_")
            overlap = _LEADING_WORD.sub("", tail) if mid_word else tail
        carry, chunk = buf[start:], following


def lexical_chunks(chunks: Iterable[str]) -> list[Issue]:
    """:func:`_lexical` of a text given in pieces (a long value read a chunk at a time: memory is one chunk)."""
    dunder, reference = _dunder_in_text(), re.compile(r"_TemplateReference__\w+")
    names, word = _names("internal_attributes"), re.compile(r"\b[a-z]\w*\b")
    seen: set[str] = set()
    internal: set[str] = set()
    for code, cut in _code_pieces(chunks):
        end = len(code) if cut else len(code) + 1  # a match running into a cut edge is whole in the next piece
        seen.update(m.group() for m in dunder.finditer(code) if m.end() < end)
        seen.update(m.group() for m in reference.finditer(code) if m.end() < end)
        internal.update(names.intersection(m.group() for m in word.finditer(code) if m.end() < end))
    return [Issue(ESCAPE, "dunder name in a template that was not parsed", name) for name in sorted(seen)[:10]] + [
        Issue(ESCAPE, "internal attribute in a template that was not parsed", name) for name in sorted(internal)[:10]
    ]


def limit(name: str) -> int:
    """A limit of spec/templates.yaml."""
    return _facts()["limits"][name]


def scan_lexically(text: str, problem: str, bound: int) -> tuple[Issue, ...]:
    """The issues of a template that is not analysed (``problem`` says why, ``bound`` is the limit it passed):
    TPL-LIMIT and what :func:`_lexical` finds inside its tags."""
    return (Issue(LIMIT, problem, "", bound), *_lexical(text))


@functools.lru_cache(maxsize=256)
def scan(text: str) -> tuple[Issue, ...]:
    """Every issue of the template ``text`` (cached by text)."""
    limits = _facts()["limits"]
    if len(text) > limits["bytes"] or (
        4 * len(text) > limits["bytes"] and len(text.encode("utf-8", "surrogatepass")) > limits["bytes"]
    ):
        return (Issue(LIMIT, f"{len(text)} characters", "", limits["bytes"]), *_lexical(text))
    depth = _nesting_depth(text)
    if depth > limits["depth"]:
        return (Issue(LIMIT, f"nesting depth {depth}", "", limits["depth"]), *_lexical(text))
    try:
        tree = _environment().parse(text)
    except RecursionError:
        return (Issue(LIMIT, "nesting too deep for the parser", "", limits["depth"]), *_lexical(text))
    except Exception as exc:  # noqa: BLE001 - jinja2's TemplateSyntaxError and anything else it raises
        line = getattr(exc, "lineno", None)
        msg = str(getattr(exc, "message", None) or exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        return (Issue(UNPARSED, f"line {line}: {msg}" if line else msg, ""), *_lexical(text))
    walker = _Walker(limits)
    try:
        walker.run(tree)
    except RecursionError:
        walker.issues.append(Issue(LIMIT, "expression too deep to fold", "", limits["depth"]))
        walker.exhausted = True
    if walker.work_exhausted:
        walker.issues.append(Issue(LIMIT, "folding work past its budget", "", limits["fold_work"]))
    if walker.exhausted:
        walker.issues += _lexical(text)
    return tuple(dict.fromkeys(walker.issues))


class _Walker(_values.Evaluator):
    """Walks one syntax tree: follows values (:class:`.jinja_values.Evaluator`), records issues."""

    def __init__(self, limits: dict) -> None:
        super().__init__(limits, _facts())
        self.issues: list[Issue] = []
        self.budget = limits["nodes"]
        self.exhausted = False
        self.public_bases: set = set()

    # -- traversal -----------------------------------------------------------------------------------------------
    def _iter(self, tree) -> Iterator[Any]:
        """Every node, iteratively (no recursion on deep trees), within the node and depth budgets."""
        stack = [(tree, 0)]
        while stack:
            node, depth = stack.pop()
            self.budget -= 1
            if self.budget < 0:
                self.issues.append(Issue(LIMIT, "too many syntax-tree nodes", "", self.limits["nodes"]))
                self.exhausted = True
                return
            if depth > self.limits["tree_depth"]:
                self.issues.append(
                    Issue(LIMIT, f"syntax tree deeper than {self.limits['tree_depth']}", "", self.limits["tree_depth"])
                )
                self.exhausted = True
                return
            yield node
            kids = self.children[id(node)] = list(node.iter_child_nodes())
            stack.extend((c, depth + 1) for c in reversed(kids))

    def run(self, tree) -> None:
        """Analyse the template ``tree``."""
        nodes = list(self._iter(tree))
        if self.exhausted:
            return
        n = self.n
        # names of the public-attribute globals used only as `self.name`: not a reference worth reporting
        self.public_bases = {
            id(node.node)
            for node in nodes
            if isinstance(node, n.Getattr)
            and isinstance(node.node, n.Name)
            and not node.attr.startswith("_")
            and node.node.name in _names("public_attribute_globals")
        }
        if not self.evaluate(tree, nodes):
            self.issues.append(
                Issue(LIMIT, f"values still changing after {self.limits['passes']} passes", "", self.limits["passes"])
            )
        self._nested_loops(tree)

    # -- render cost -------------------------------------------------------------------------------------------
    def _range_length(self, call) -> int | None:
        """The most items a call of the global range can give (None: not a range call, or its bounds unknown)."""
        n = self.n
        if not (
            isinstance(call, n.Call)
            and isinstance(call.node, n.Name)
            and call.node.name == "range"
            and call.node.name not in self.bound
            and not call.kwargs
            and 1 <= len(call.args) <= 3
        ):
            return None
        lengths = self.product([self.v(a) for a in call.args], _range_items, "range")
        counts = [c for c in lengths if type(c) is int]
        return max(counts) if counts and len(counts) == len(lengths) else None

    def _loop_length(self, loop) -> int | None:
        """The most times a for loop runs its body (None: unknown, as over the messages)."""
        count = self._range_length(loop.iter)
        if count is not None:
            return count
        values = self.v(loop.iter)
        if values and all(isinstance(a, (str, tuple)) for a in values):
            return max(len(a) for a in values)
        return None

    def _nested_loops(self, tree) -> None:
        """Loops inside loops whose known lengths multiply past ``render_items`` (TPL-RESOURCE)."""
        n, most = self.n, self.limits["render_items"]
        stack = [(tree, 1)]
        while stack:
            node, times = stack.pop()
            if isinstance(node, n.For):
                count = self._loop_length(node)
                inner = times * (count or 1)
                if count is not None and times > 1 and inner > most >= times:
                    self.issues.append(Issue(RESOURCE, f"nested loops run their body {inner} times", "{% for %}", most))
                repeated = {id(c) for c in node.body} | {id(node.test)}
                stack.extend((c, inner if id(c) in repeated else times) for c in node.iter_child_nodes())
            else:
                stack.extend((c, times) for c in node.iter_child_nodes())

    def _render_cost(self, node) -> None:
        """A range or a repetition too large for a renderer to finish (TPL-RESOURCE)."""
        n = self.n
        if isinstance(node, n.Call):
            count = self._range_length(node)
            if count is not None and count > self.limits["render_items"]:
                self.issues.append(
                    Issue(RESOURCE, f"range of {count} items", "range(...)", self.limits["render_items"])
                )
        elif isinstance(node, n.Mul):
            operands = self.v(node.left) | self.v(node.right)
            sizes = [
                _folds.size(s) * k for s in operands if isinstance(s, (str, tuple)) for k in operands if type(k) is int
            ]
            if sizes and max(sizes) > self.limits["render_chars"]:
                self.issues.append(
                    Issue(
                        RESOURCE, f"repetition builds {max(sizes)} characters", "... * ...", self.limits["render_chars"]
                    )
                )

    # -- checks --------------------------------------------------------------------------------------------------
    def _strings(self, node) -> set:
        return {v for v in self.v(node) if isinstance(v, str)}

    def _is_string_building(self, node) -> bool:
        n = self.n
        if isinstance(node, (n.Add, n.Mod, n.Mul)):  # arithmetic unless a string literal takes part
            return any(isinstance(c.value, str) for c in node.find_all(n.Const))
        return (
            isinstance(node, n.Concat)
            or (isinstance(node, n.Filter) and node.name in ("join", "format", "reverse", "replace", "string"))
            or (
                isinstance(node, n.Call)
                and isinstance(node.node, n.Getattr)
                and node.node.attr in ("join", "format", "replace")
            )
            or self._of_constants(node)
        )

    def _of_constants(self, node) -> bool:
        """``node`` is computed from string constants alone (no name of the render context or the template)."""
        n = self.n
        return next(node.find_all(n.Name), None) is None and any(
            isinstance(c.value, str) for c in node.find_all(n.Const)
        )

    def _attribute(self, name: str, how: str, construct: str, subscript: bool = False) -> None:
        """An attribute (or subscript key) ``name`` reached from the template."""
        if _DUNDER.match(name) or (name.startswith("_") and not subscript):
            self.issues.append(Issue(ESCAPE, f"private attribute {name} reached by {how}", construct))
        elif name in _names("internal_attributes"):
            self.issues.append(Issue(ESCAPE, f"internal attribute {name} reached by {how}", construct))
        elif name in _names("modules"):
            kind = SUSPICIOUS if subscript else ESCAPE
            self.issues.append(Issue(kind, f"module {name} reached by {how}", construct))

    def _key(self, obj: frozenset, node, how: str, construct: str, path: bool = False) -> None:
        """A member of ``obj`` named by the expression ``node`` (a subscript key or an attribute-name argument;
        ``path``: a dotted attribute path, as map/groupby/sort/... take it, checked segment by segment).

        The policy: a name that is not a proven constant reaches whatever the render-time value names, so it is
        an escape route unless it is a subscript on a container of plain data (the conversation, a dict or list
        the template built: :func:`.jinja_values.is_plain_data`), where it reaches at most the container's type,
        and what that gives is not plain data any more (a second such key on it is an escape)."""
        keys = self.v(node)
        for v in sorted(k for k in keys if isinstance(k, str)):
            for segment in v.split(".") if path else (v,):
                self._attribute(segment, how, _show(construct, v), subscript=how == "subscript")
        if all(_values.is_safe_key(k) for k in keys):
            return
        stems = sorted(
            {c.value for c in node.find_all(self.n.Const) if isinstance(c.value, str) and _key_stem().match(c.value)}
        )
        if how == "subscript" and obj and all(_values.is_plain_data(a) for a in obj) and not stems:
            return
        routes = sorted({a.origin for a in obj if isinstance(a, _values.Route)})
        if routes:
            origin = "a private attribute" if routes[0] == "private" else f"the global {routes[0]}"
            what = f"an object derived from {origin}"
        elif self.work_exhausted and self._of_constants(node):  # a template that spent the budget to hide a key
            what = "a name made of constants and not folded (folding work past its budget)"
        else:
            what = "an object that is not plain data" if how == "subscript" else "any object"
        around = f" (built around {stems[0]!r})" if stems else ""
        self.issues.append(Issue(ESCAPE, f"key computed at render time on {what}{around}, by {how}", construct))

    def check(self, node) -> None:
        """Check one node (its value and its children's are known); its issues carry its template line."""
        start = len(self.issues)
        self._check_node(node)
        line = getattr(node, "lineno", None)
        if line is not None:
            for i in range(start, len(self.issues)):
                if self.issues[i].line is None:
                    self.issues[i] = replace(self.issues[i], line=line)

    def _check_node(self, node) -> None:
        n = self.n
        if isinstance(node, (n.Call, n.Mul)):
            self._render_cost(node)
        if isinstance(node, n.Getattr):
            self._attribute(node.attr, "attribute access", f".{node.attr}")
            if (
                isinstance(node.node, n.Name)
                and node.node.name in _names("escape_globals")
                and node.node.name not in self.bound
                and node.attr not in _names("benign_attributes")
                and not node.attr.startswith("_")
                and node.node.name not in _names("public_attribute_globals")
            ):
                self.issues.append(
                    Issue(SUSPICIOUS, f"attribute of the global {node.node.name}", f"{node.node.name}.{node.attr}")
                )
        elif isinstance(node, n.Getitem) and not isinstance(node.arg, n.Slice):
            self._key(self.v(node.node), node.arg, "subscript", "[...]")
        elif isinstance(node, n.Filter):
            self._filter(node)
        elif isinstance(node, n.Call):
            callee = node.node
            name = callee.attr if isinstance(callee, n.Getattr) else callee.name if isinstance(callee, n.Name) else None
            if name in _names("calls") and not (isinstance(callee, n.Name) and name in self.bound):
                self.issues.append(Issue(ESCAPE, f"call of {name}", f"{name}(...)"))
            if isinstance(callee, n.Getitem):  # f_builtins['eval'](...)
                for key in sorted(self._strings(callee.arg) & _names("calls")):
                    self.issues.append(Issue(ESCAPE, f"call of {key}", f"[{key!r}](...)"))
            if isinstance(callee, n.Getattr) and name in ("format", "format_map"):
                self._format_fields(callee.node)
            picked = (
                callee.arg
                if isinstance(callee, n.Getitem) and not isinstance(callee.arg, n.Slice)
                else callee.args[0]
                if isinstance(callee, n.Filter) and callee.name == "attr" and callee.args
                else None
            )
            if (
                picked is not None
                and not all(_values.is_constant(k) for k in self.v(picked))
                and not all(isinstance(a, _values.Slots) and a.kind == "dict" for a in self.v(callee.node))
            ):
                self.issues.append(
                    Issue(
                        ESCAPE,
                        "call of a member picked by a key computed at render time (a "
                        "method such as str.format of a string)",
                        "[...](...)",
                    )
                )
            for kw in node.kwargs:
                if _DUNDER.match(kw.key):
                    self.issues.append(Issue(SUSPICIOUS, "dunder keyword argument", f"{kw.key}="))
        elif isinstance(node, n.Name) and node.ctx == "load" and node.name not in self.bound:
            if node.name in ("self", "request", "config", "session", "g") and id(node) not in self.public_bases:
                self.issues.append(Issue(SUSPICIOUS, "reference to the escape global", node.name))
            elif node.name in _names("modules"):
                self.issues.append(Issue(SUSPICIOUS, "reference to an undefined module", node.name))
        elif type(node).__name__ in _names("loading_statements"):
            self.issues.append(Issue(SUSPICIOUS, "statement that loads another template", type(node).__name__))

    def _format_fields(self, target) -> None:
        """str.format walks the attributes named in its fields ('{0.__class__}', also inside a nested format
        spec: '{0:{1.__init__}}'): the same routes.  A format string that is not a proven constant can name any
        attribute of the arguments: an escape."""
        values = self.v(target)
        for text in sorted(v for v in values if isinstance(v, str)):
            for field, attrs in _format_paths(text):
                for name in attrs:
                    self._attribute(name, "a str.format field", f"{{{field}}}")
        if not all(_values.is_constant(v) for v in values):
            self.issues.append(
                Issue(
                    ESCAPE,
                    "format string computed at render time (its fields can name any attribute of the arguments)",
                    ".format(...)",
                )
            )

    def _filter(self, node) -> None:
        spec = _facts()["names"]["attribute_filters"].get(node.name)
        target = self.v(node.node)
        if node.name == "map" and node.args:  # map('attr', '__class__') applies the attr filter
            first = self._strings(node.args[0])
            if first and "attr" in first and len(node.args) > 1:
                self._key(self.elements(target), node.args[1], "the attr filter", "|map('attr', ...)")
        if spec is None:
            return
        if isinstance(spec, int):
            if len(node.args) > spec:
                attr = node.name == "attr"
                self._key(
                    target if attr else self.elements(target),
                    node.args[spec],
                    "the attr filter" if attr else f"the {node.name} filter",
                    f"|{node.name}(...)",
                    path=not attr,
                )
        for kw in node.kwargs:
            if kw.key == "attribute" or kw.key == spec:
                self._key(
                    self.elements(target),
                    kw.value,
                    f"the {node.name} filter",
                    f"|{node.name}(attribute=...)",
                    path=True,
                )


def _format_paths(text: str, depth: int = 0) -> list[tuple[str, list[str]]]:
    """The fields of a format string as ``str.format`` parses them (nested specs included) with the attribute
    names each walks; a string ``str.format`` refuses has none."""
    import _string  # noqa: PLC0415 - CPython's own format-field parser, as str.format uses it
    import string  # noqa: PLC0415

    out: list = []
    try:
        for _, field, spec, _ in string.Formatter().parse(text):
            if field is None:
                continue
            _, rest = _string.formatter_field_name_split(field)
            out.append((field, [str(key) for is_attr, key in rest if is_attr]))
            if spec and "{" in spec and depth < 2:
                out += _format_paths(spec, depth + 1)
    except (ValueError, TypeError):
        pass
    return out


def _range_items(bounds: tuple):
    """How many items ``range(*bounds)`` gives (bounds past 64 bits included, which ``len`` refuses)."""
    if not all(type(b) is int for b in bounds):
        return _values.UNKNOWN
    r = range(*bounds)  # ValueError for a step of 0, as when rendered
    return max(0, -(-(r.stop - r.start) // r.step))


def _show(construct: str, value: str) -> str:
    return f"{construct} = {value!r}" if construct.endswith("...)") or construct == "[...]" else construct
