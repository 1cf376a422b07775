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
from dataclasses import dataclass
from typing import Any, Iterator

from .. import spec as _spec

__all__ = ["Issue", "scan", "ESCAPE", "SUSPICIOUS", "UNPARSED", "LIMIT", "is_template"]

ESCAPE, SUSPICIOUS, UNPARSED, LIMIT = "escape", "suspicious", "unparsed", "limit"

# a dunder name (__class__) or a name-mangled private attribute (_TemplateReference__context)
_DUNDER = re.compile(r"\A(__\w+__|_[A-Za-z]\w*__\w+)\Z")
_DUNDER_IN_TEXT = re.compile(r"__(?:class|mro|base|bases|subclasses|globals|builtins|import|init|dict|getattribute"
                             r"|reduce|reduce_ex|code|func|self|module|loader|spec|call)__")
_TOKENS = re.compile(r"\{\{|\{%-?\s*(end)?(\w*)|%\}|\}\}|[()\[\]{}]")
# statements that nest (set has no end tag unless it captures a block, so it does not count)
_BLOCK_WORDS = frozenset(("if", "for", "macro", "call", "filter", "with", "block", "autoescape", "trans"))
_FORMAT_FIELD = re.compile(r"\{([^{}!:]*[.\[][^{}!:]*)[^{}]*\}")
_SAFE_FORMAT = re.compile(r"\A(?:[^{}%]|\{\d*\}|%[sdrc%])*\Z")


@dataclass(frozen=True)
class Issue:
    """One thing the analysis found: its kind, what it is, the construct (as written or folded)."""

    kind: str
    problem: str
    construct: str
    limit: int | None = None


@functools.lru_cache(maxsize=None)
def _facts() -> dict:
    return _spec.load_yaml("templates.yaml")


def _names(field: str) -> frozenset:
    return frozenset(_facts()["names"][field])


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2  # noqa: PLC0415 - imported lazily: only files with templates need it

    # loop controls ({% break %}) and {% do %} are used by real templates and by llama.cpp's dialect
    return jinja2.Environment(extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do"])


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


def _inside_tags(text: str) -> str:
    """The text inside {{ }} and {% %} tags (an unclosed tag runs to the end), found in one linear pass."""
    parts, start = [], None
    for m in re.finditer(r"\{\{|\{%|\}\}|%\}", text):
        if m.group() in ("{{", "{%"):
            if start is None:
                start = m.end()
        elif start is not None:
            parts.append(text[start:m.start()])
            start = None
    if start is not None:
        parts.append(text[start:])
    return "\n".join(parts)


def _lexical(text: str) -> list[Issue]:
    """Dunder names inside the tags of the raw text: what is left to check when the template cannot be parsed
    (plain text and comments are not rendered as code, so they do not count)."""
    code = _inside_tags(text)
    seen = sorted(set(_DUNDER_IN_TEXT.findall(code)) | set(re.findall(r"_TemplateReference__\w+", code)))
    return [Issue(ESCAPE, "dunder name in a template that was not parsed", name) for name in seen[:10]]


@functools.lru_cache(maxsize=256)
def scan(text: str) -> tuple[Issue, ...]:
    """Every issue of the template ``text`` (cached by text)."""
    limits = _facts()["limits"]
    if len(text) > limits["bytes"] or (4 * len(text) > limits["bytes"]
                                       and len(text.encode("utf-8", "surrogatepass")) > limits["bytes"]):
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
    return tuple(dict.fromkeys(walker.issues))


class _Unknown:
    """Marks a value folding could not determine."""


UNKNOWN = _Unknown()


class _Walker:
    """Walks one syntax tree: folds constant strings, records issues."""

    def __init__(self, limits: dict) -> None:
        from jinja2 import nodes  # noqa: PLC0415

        self.n = nodes
        self.limits = limits
        self.issues: list[Issue] = []
        self.assigned: dict[str, set] = {}
        self.budget = limits["nodes"]

    # -- traversal -----------------------------------------------------------------------------------------------
    def _iter(self, tree) -> Iterator[Any]:
        """Every node, iteratively (no recursion on deep trees), within the node budget."""
        stack = [tree]
        while stack:
            node = stack.pop()
            self.budget -= 1
            if self.budget < 0:
                self.issues.append(Issue(LIMIT, "too many syntax-tree nodes", "", self.limits["nodes"]))
                return
            yield node
            stack.extend(reversed(list(node.iter_child_nodes())))

    def run(self, tree) -> None:
        """Analyse the template ``tree``."""
        n = self.n
        nodes = list(self._iter(tree))
        # names the template binds itself (set, for, macro parameters, macro names): they shadow the globals
        self.bound = {node.name for node in nodes if isinstance(node, n.Name) and node.ctx in ("store", "param")}
        self.bound |= {node.name for node in nodes if isinstance(node, n.Macro)}
        for node in nodes:  # first the constant string variables ({% set x = '__cla' ~ 'ss__' %})
            if isinstance(node, n.Assign) and isinstance(node.target, n.Name):
                self.assigned.setdefault(node.target.name, set())
        for _ in range(2):  # twice, so a variable built from another folds regardless of order
            for node in nodes:
                if isinstance(node, n.Assign) and isinstance(node.target, n.Name):
                    vals = self.fold(node.node)
                    if vals is not UNKNOWN:
                        self.assigned[node.target.name] |= vals
        for node in nodes:
            self.visit(node)

    # -- folding -------------------------------------------------------------------------------------------------
    def _cap(self, values) -> Any:
        out = set()
        for v in values:
            if isinstance(v, str) and len(v) > self.limits["fold_length"]:
                return UNKNOWN
            out.add(v)
            if len(out) > self.limits["fold_values"]:
                return UNKNOWN
        return out

    def fold(self, node) -> Any:
        """The set of values a constant expression can have (str, int, or tuples of them), or UNKNOWN."""
        n = self.n
        if isinstance(node, n.Const):
            return {node.value} if isinstance(node.value, (str, int)) and not isinstance(node.value, bool) \
                else UNKNOWN
        if isinstance(node, n.TemplateData):
            return {node.data}
        if isinstance(node, n.Name):
            vals = self.assigned.get(node.name)
            return set(vals) if vals else UNKNOWN
        if isinstance(node, (n.List, n.Tuple)):
            return self._product([self.fold(i) for i in node.items], tuple)
        if isinstance(node, n.Concat):
            return self._product([self.fold(i) for i in node.nodes], lambda parts: "".join(map(str, parts)))
        if isinstance(node, n.CondExpr):
            a, b = self.fold(node.expr1), self.fold(node.expr2) if node.expr2 is not None else {""}
            return UNKNOWN if UNKNOWN in (a, b) else self._cap(a | b)
        if isinstance(node, n.Neg):
            return self._product([self.fold(node.node)], lambda p: -p[0] if isinstance(p[0], int) else UNKNOWN)
        if isinstance(node, (n.Add, n.Mul, n.Mod)):
            return self._product([self.fold(node.left), self.fold(node.right)],
                                 lambda lr: self._binary(type(node).__name__, *lr))
        if isinstance(node, n.Getitem):
            return self._product([self.fold(node.node), self._fold_index(node.arg)], lambda p: _index(*p))
        if isinstance(node, n.Filter):
            return self._fold_call(node.name, node.node, node.args, node.kwargs)
        if isinstance(node, n.Call):
            if isinstance(node.node, n.Getattr):  # 'x'.join(...), '{}'.format(...)
                return self._fold_call(node.node.attr, node.node.node, node.args, node.kwargs, method=True)
            if isinstance(node.node, n.Name) and node.node.name == "dict" and not node.args:
                return {tuple(k.key for k in node.kwargs)}  # dict(__class__=1)|list
        return UNKNOWN

    def _fold_index(self, node) -> Any:
        n = self.n
        if isinstance(node, n.Slice):
            parts = [self.fold(x) if x is not None else {None} for x in (node.start, node.stop, node.step)]
            return self._product(parts, lambda p: _Slice(*p) if all(v is None or isinstance(v, int) for v in p)
                                 else UNKNOWN)
        return self.fold(node)

    def _product(self, parts: list, combine) -> Any:
        if len(parts) > self.limits["fold_values"] ** 2 or any(p is UNKNOWN for p in parts):
            return UNKNOWN
        combos: list[tuple] = [()]
        for p in parts:
            combos = [c + (v,) for c in combos for v in p]
            if len(combos) > self.limits["fold_values"]:
                return UNKNOWN
        out = []
        for c in combos:
            try:
                v = combine(c)
            except Exception:  # noqa: BLE001 - a combination that would fail at render time folds to nothing
                continue
            if v is UNKNOWN:
                return UNKNOWN
            out.append(v)
        return self._cap(out) if out else UNKNOWN

    def _binary(self, op: str, left, right):
        if op == "Add":
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, int) and isinstance(right, int):
                return left + right
        if op == "Mul":
            s, k = (left, right) if isinstance(left, (str, tuple)) else (right, left)
            if isinstance(s, (str, tuple)) and isinstance(k, int) and 0 <= k * max(len(s), 1) <= \
                    self.limits["fold_length"]:
                return s * k
        if op == "Mod" and isinstance(left, str) and _SAFE_FORMAT.match(left):
            return left % (right if isinstance(right, tuple) else (right,))
        return UNKNOWN

    def _fold_call(self, name: str, target, args, kwargs, method: bool = False) -> Any:
        parts = [self.fold(target)] + [self.fold(a) for a in args]
        if any(k.key for k in kwargs) and name != "format":
            return UNKNOWN
        return self._product(parts, lambda p: _apply(name, p[0], p[1:], method))

    # -- checks --------------------------------------------------------------------------------------------------
    def _strings(self, node) -> set | None:
        vals = self.fold(node)
        if vals is UNKNOWN:
            return None
        return {v for v in vals if isinstance(v, str)}

    def _is_string_building(self, node) -> bool:
        n = self.n
        if isinstance(node, (n.Add, n.Mod, n.Mul)):  # arithmetic unless a string literal takes part
            return any(isinstance(c.value, str) for c in node.find_all(n.Const))
        return isinstance(node, n.Concat) or (
            isinstance(node, n.Filter) and node.name in ("join", "format", "reverse", "replace", "string")) or (
            isinstance(node, n.Call) and isinstance(node.node, n.Getattr)
            and node.node.attr in ("join", "format", "replace"))

    def _attribute(self, name: str, how: str, construct: str, subscript: bool = False) -> None:
        """An attribute (or subscript key) ``name`` reached from the template."""
        if _DUNDER.match(name) or (name.startswith("_") and not subscript):
            self.issues.append(Issue(ESCAPE, f"private attribute {name} reached by {how}", construct))
        elif name in _names("modules"):
            kind = SUSPICIOUS if subscript else ESCAPE
            self.issues.append(Issue(kind, f"module {name} reached by {how}", construct))

    def _attribute_node(self, node, how: str, construct: str) -> None:
        vals = self._strings(node)
        if vals is None:
            if how == "the attr filter" or self._is_string_building(node):
                kind = ESCAPE if how == "the attr filter" else SUSPICIOUS
                self.issues.append(Issue(kind, f"attribute name computed at render time, by {how}", construct))
            return
        for v in sorted(vals):
            self._attribute(v, how, _show(construct, v), subscript=how == "subscript")

    def visit(self, node) -> None:
        """Check one node."""
        n = self.n
        if isinstance(node, n.Getattr):
            self._attribute(node.attr, "attribute access", f".{node.attr}")
            if isinstance(node.node, n.Name) and node.node.name in _names("escape_globals") \
                    and node.node.name not in self.bound \
                    and node.attr not in _names("benign_attributes") and not node.attr.startswith("_"):
                self.issues.append(Issue(SUSPICIOUS, f"attribute of the global {node.node.name}",
                                         f"{node.node.name}.{node.attr}"))
        elif isinstance(node, n.Getitem) and not isinstance(node.arg, n.Slice):
            self._attribute_node(node.arg, "subscript", "[...]")
        elif isinstance(node, n.Filter):
            self._filter(node)
        elif isinstance(node, n.Call):
            callee = node.node
            name = callee.attr if isinstance(callee, n.Getattr) else callee.name if isinstance(callee, n.Name) \
                else None
            if name in _names("calls") and not (isinstance(callee, n.Name) and name in self.bound):
                self.issues.append(Issue(ESCAPE, f"call of {name}", f"{name}(...)"))
            if isinstance(callee, n.Getattr) and name in ("format", "format_map"):
                self._format_fields(callee.node)
            for kw in node.kwargs:
                if _DUNDER.match(kw.key):
                    self.issues.append(Issue(SUSPICIOUS, "dunder keyword argument", f"{kw.key}="))
        elif isinstance(node, n.Name) and node.ctx == "load" and node.name not in self.bound:
            if node.name in ("self", "request", "config", "session", "g"):
                self.issues.append(Issue(SUSPICIOUS, "reference to the escape global", node.name))
            elif node.name in _names("modules"):
                self.issues.append(Issue(SUSPICIOUS, "reference to an undefined module", node.name))
        elif isinstance(node, n.Const) and isinstance(node.value, str):
            if _DUNDER.match(node.value) or _DUNDER_IN_TEXT.search(node.value):
                self.issues.append(Issue(SUSPICIOUS, "dunder name in a string", repr(node.value)[:80]))
        elif type(node).__name__ in _names("loading_statements"):
            self.issues.append(Issue(SUSPICIOUS, "statement that loads another template", type(node).__name__))

    def _format_fields(self, target) -> None:
        """str.format walks attributes and items named in its fields ('{0.__class__}'): the same routes."""
        for text in self._strings(target) or ():
            for path in _FORMAT_FIELD.findall(text):
                for name in re.findall(r"[.\[]([^.\[\]]+)", path):
                    self._attribute(name, "a str.format field", f"{{{path}}}")

    def _filter(self, node) -> None:
        spec = _facts()["names"]["attribute_filters"].get(node.name)
        if node.name == "map" and node.args:  # map('attr', '__class__') applies the attr filter
            first = self._strings(node.args[0])
            if first and "attr" in first and len(node.args) > 1:
                self._attribute_node(node.args[1], "the attr filter", "|map('attr', ...)")
        if spec is None:
            return
        if isinstance(spec, int):
            if len(node.args) > spec:
                how = "the attr filter" if node.name == "attr" else f"the {node.name} filter"
                self._attribute_node(node.args[spec], how, f"|{node.name}(...)")
        for kw in node.kwargs:
            if kw.key == "attribute" or kw.key == spec:
                self._attribute_node(kw.value, f"the {node.name} filter", f"|{node.name}(attribute=...)")


def _show(construct: str, value: str) -> str:
    return f"{construct} = {value!r}" if construct.endswith("...)") or construct == "[...]" else construct


@dataclass(frozen=True)
class _Slice:
    """A constant slice (hashable, unlike ``slice`` before Python 3.12)."""

    start: int | None
    stop: int | None
    step: int | None


def _index(target, index):
    if isinstance(target, (str, tuple)) and isinstance(index, (_Slice, int)) and not isinstance(index, bool):
        return target[slice(index.start, index.stop, index.step) if isinstance(index, _Slice) else index]
    return UNKNOWN


def _apply(name: str, target, args: tuple, method: bool):
    """A string filter or method applied to constant values (UNKNOWN for anything else)."""
    if name == "join":
        if method and isinstance(target, str) and len(args) == 1 and isinstance(args[0], tuple):
            return target.join(map(str, args[0]))
        if not method and isinstance(target, tuple):
            sep = args[0] if args and isinstance(args[0], str) else ""
            return sep.join(map(str, target))
    if name == "format" and isinstance(target, str) and _SAFE_FORMAT.match(target):
        return target.format(*args) if method else target % args
    if name in ("reverse",) and isinstance(target, (str, tuple)):
        return target[::-1]
    if name in ("lower", "upper", "title", "capitalize", "strip", "trim") and isinstance(target, str) \
            and not args:
        return getattr(target, "strip" if name == "trim" else name)()
    if name == "replace" and isinstance(target, str) and len(args) == 2 and all(isinstance(a, str) for a in args):
        return target.replace(*args)
    if name in ("string", "e", "safe") and isinstance(target, str):
        return target
    if name in ("list",) and isinstance(target, (str, tuple)):
        return tuple(target)
    if name in ("first", "last") and isinstance(target, (str, tuple)) and target:
        return target[0 if name == "first" else -1]
    return UNKNOWN
