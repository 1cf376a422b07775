"""What each expression of a Jinja template can evaluate to, found without rendering it: an abstract interpretation
over jinja2's syntax tree, used by :mod:`.jinja_scan` to see the key a subscript or ``|attr`` really gets.

A value is a frozenset of *atoms*, the things it may be: constant strings, integers (booleans among them) and
tuples (folded through concatenation, ``+``, ``*``, ``%``, indexing and slicing, and the filters and ``str``
methods spec/templates.yaml declares foldable, computed by :mod:`.jinja_folds`); :class:`Route`, an object that
leads to Python internals (an escape global such as ``lipsum``, or anything reached through a private or
internal attribute); :class:`Slots`, a namespace or dict whose members
are tracked; :class:`Seq`, a sequence known only by its elements; :class:`Callable`, a macro or a ``caller``; and
``TOP``, anything else (the render context, a filter not modelled, a value past a budget).

Names are followed flow-insensitively: every binding of a name (``set``, ``set ns.attr``, block ``set``, ``for``
targets, ``with``, macro and ``call`` parameters bound at each call site, macro defaults) adds to one value per
name, and passes over the tree repeat until nothing changes.  A value with more constants than ``fold_values``
keeps ``TOP`` and ``MANY`` instead, and absorbs further constants.  After ``widen_after`` passes a value that still
changes keeps only its non-constant atoms (finitely many), so the passes end; after ``passes`` they stop anyway,
and one last pass takes every name not reached yet as ``TOP``.  Each pass walks the tree without recursion,
children before parents, in document order; limits are those of spec/templates.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from . import jinja_folds as _folds

__all__ = ["TOP", "DATA", "Route", "Slots", "Seq", "Callable", "Evaluator", "is_constant", "is_plain_data"]

_PRIVATE = re.compile(r"\A(__\w+__|_[A-Za-z]\w*__\w+)\Z")


class _Top:
    """Any value the analysis cannot tell."""

    def __repr__(self) -> str:
        return "TOP"


class _Many:
    """Marks a value that had more constants than the budget: it absorbs further constants."""

    def __repr__(self) -> str:
        return "MANY"


TOP, MANY = _Top(), _Many()
EMPTY: frozenset = frozenset()
ANY = frozenset((TOP,))
SATURATED = frozenset((TOP, MANY))


@dataclass(frozen=True)
class Route:
    """An object that leads to Python internals, by the global it comes from (or ``private``)."""

    origin: str


class _Data:
    """A value the runtime passes as JSON (``messages``, ``tools``, ``bos_token`` ...: every context variable but
    the globals and spec/templates.yaml ``object_names``) or reached from one by constant keys and iteration:
    dicts, lists, strings and numbers of plain data."""

    def __repr__(self) -> str:
        return "DATA"


DATA = _Data()


class _Number:
    """A number known only as one (loop.index0, a length, arithmetic that cannot give a string): as a key it
    reaches no attribute (jinja2 looks a key up as an attribute only when it is a string)."""

    def __repr__(self) -> str:
        return "NUM"


class _Range:
    """What range(...) gives: a sequence of numbers (not a container of plain data: range(1)[k] reaches its
    type)."""

    def __repr__(self) -> str:
        return "RANGE"


NUM, RANGE = _Number(), _Range()
LOOP_NUMBERS = frozenset(("index", "index0", "revindex", "revindex0", "length", "depth", "depth0"))
NUMBER_FILTERS = frozenset(("length", "count", "int", "float", "round", "abs", "wordcount"))


@dataclass(frozen=True)
class Slots:
    """A namespace or a dict made by the node ``node`` (its id); its members are tracked per key."""

    node: int
    kind: str


@dataclass(frozen=True)
class Seq:
    """A sequence known by the values its elements may have."""

    elements: frozenset


@dataclass(frozen=True)
class Callable:
    """A macro (by name) or a ``call`` block (by node id) the template defines."""

    key: Any


@dataclass(frozen=True)
class _Slice:
    """A constant slice (hashable, unlike ``slice`` before Python 3.12)."""

    start: int | None
    stop: int | None
    step: int | None


UNKNOWN = _folds.UNKNOWN
_NOT_YET, _FAILS = object(), object()  # a combination not computed yet / one that fails at render time


class _NoneBound:
    """An omitted bound of a slice, as a constant atom."""


_NONE = _NoneBound()


def is_plain_data(atom) -> bool:
    """An atom that is a container of plain data: the conversation (DATA), a dict or list literal the template
    built, or a constant list.  A render-time key on one reaches at most one inert attribute (its type)."""
    return atom is DATA or isinstance(atom, (Seq, tuple)) or (isinstance(atom, Slots) and atom.kind == "dict")


def is_safe_key(atom) -> bool:
    """A key that reaches no attribute it does not name: a constant (checked by name) or a number."""
    return is_constant(atom) or atom is NUM


def is_constant(atom) -> bool:
    """True for the atoms folding computes with: str, int (bool among them), tuple (and constant slices)."""
    return isinstance(atom, (str, int, tuple, _Slice)) or atom is _NONE


def is_private(name, internal: frozenset = frozenset()) -> bool:
    """A dunder name (``__class__``), a name-mangled private attribute (``_TemplateReference__context``), or one of
    the ``internal`` attributes (spec/templates.yaml ``internal_attributes``: ``gi_frame``, ``f_globals`` ...)."""
    return isinstance(name, str) and (bool(_PRIVATE.match(name)) or name in internal)


def _index(target, index):
    if isinstance(target, (str, tuple)) and isinstance(index, (_Slice, int)) and not isinstance(index, bool):
        return target[slice(index.start, index.stop, index.step) if isinstance(index, _Slice) else index]
    return UNKNOWN


def _plain(values: tuple) -> bool:
    return all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values)


INT_CAP = 1 << 64  # integer folds saturate here: what a template does with a larger number is not modelled


def _int_op(op: str, left: int, right: int):
    if op == "Pow":
        if right < 0:
            return UNKNOWN
        if abs(left) > 1 and right * (abs(left).bit_length() - 1) > 64:
            return -INT_CAP if left < 0 and right % 2 else INT_CAP
        result = left**right
    elif op in ("FloorDiv", "Mod"):
        result = left // right if op == "FloorDiv" else left % right
    else:
        result = {"Add": left + right, "Sub": left - right, "Mul": left * right}[op]
    return max(-INT_CAP, min(INT_CAP, result))


def binary(op: str, left, right, fold_length: int):
    """``left op right`` on constants (UNKNOWN when it is not a fold the analysis makes)."""
    if type(left) is int and type(right) is int:
        return _int_op(op, left, right)
    if op == "Add":
        if type(left) is type(right) and isinstance(left, (str, tuple)):
            return left + right
    if op == "Mul":
        s, k = (left, right) if isinstance(left, (str, tuple)) else (right, left)
        if isinstance(s, (str, tuple)) and isinstance(k, int) and 0 <= k * max(_folds.size(s), 1) <= fold_length:
            return s * k
    if op == "Mod" and isinstance(left, str):
        return _folds.fold_filter("format", left, right if isinstance(right, tuple) else (right,), {}, fold_length)
    return UNKNOWN


class Evaluator:
    """Values of every node of one template (``self.val``, by node id), refined over passes; subclasses check
    each node in :meth:`check` after its value is known (on every pass)."""

    def __init__(self, limits: dict, facts: dict) -> None:
        from jinja2 import nodes  # noqa: PLC0415 - jinja2 loads only for files with templates

        self.n = nodes
        self.limits = limits
        self.routes: dict = facts["names"]["escape_globals"]
        self.object_names = frozenset(facts["names"]["object_names"])
        self.assigned: set = set()  # names a set statement binds (the context may hold them before)
        self.loop_calls: dict[int, Any] = {}  # id of a loop(...) call -> the recursive for loop it re-enters
        self.internal = frozenset(facts["names"]["internal_attributes"])
        filters = facts["values"]["filters"]
        self.filter_kinds: dict[str, set] = {}
        for kind, names in filters.items():
            for name in names:
                self.filter_kinds.setdefault(name, set()).add(kind)
        self.methods = facts["values"]["methods"]
        self.env: dict[str, frozenset] = {}
        self.slots: dict[tuple, frozenset] = {}
        self.members: dict[Slots, dict] = {}
        self.union: dict[Slots, frozenset] = {}
        self.kids: dict[int, list] = {}
        self.children: dict[int, list] = {}  # each node's children, when the caller has listed them already
        self.outputs: dict[Any, frozenset] = {}
        self.callables: dict[Any, Any] = {}
        self.bound: set = set()
        self.val: dict[int, frozenset] = {}
        self.changed = False
        self.widening = False
        self.work = 0  # characters folding read and built (fold_work)
        self.work_exhausted = False
        self.memo: dict = {}  # (operation, ids of the constants) -> (the constants, result), across passes
        self.unsettled = EMPTY  # what a name or macro output not reached yet stands for (ANY once passes run out)

    # -- the passes ----------------------------------------------------------------------------------------------
    def evaluate(self, tree, nodes: list) -> bool:
        """Run passes over ``tree`` (whose nodes are ``nodes``) until values settle; False if they never did."""
        n = self.n
        self.bound = {node.name for node in nodes if isinstance(node, n.Name) and node.ctx in ("store", "param")}
        called = {id(node.node) for node in nodes if isinstance(node, n.Call)}
        # names a set statement binds that the context may hold too: tested with `is defined`, or read before
        # their first set in document order (``nodes`` is in document order)
        first_set: dict = {}
        for i, node in enumerate(nodes):
            if isinstance(node, (n.Assign, n.AssignBlock)):
                targets = [node.target] if isinstance(node.target, n.Name) else list(node.target.find_all(n.Name))
                for name in targets:
                    first_set.setdefault(name.name, i)
        self.assigned = {
            node.name
            for i, node in enumerate(nodes)
            if isinstance(node, n.Name) and node.ctx == "load" and node.name in first_set and i < first_set[node.name]
        }
        self.assigned |= {
            node.node.name
            for node in nodes
            if isinstance(node, n.Test)
            and node.name == "defined"
            and isinstance(node.node, n.Name)
            and node.node.name in first_set
        }
        for node in nodes:
            if isinstance(node, n.Macro):
                self.bound |= {node.name, "varargs", "kwargs"}  # extra positional and keyword arguments
                self.callables[node.name] = node
            elif isinstance(node, n.CallBlock):
                self.bound |= {"caller", "varargs", "kwargs"}
            elif isinstance(node, n.For) and node.recursive:
                for call in node.find_all(n.Call):
                    if isinstance(call.node, n.Name) and call.node.name == "loop":
                        self.loop_calls[id(call)] = node
        for node in nodes:
            # a macro reached other than by a call of its name (namespace(f=m).f(...), a list of macros) can get
            # any arguments: its parameters may be anything
            if (
                isinstance(node, n.Name)
                and node.ctx == "load"
                and node.name in self.callables
                and id(node) not in called
            ):
                for p in self.callables[node.name].args:
                    self.bind(p, ANY)
        self._update(self.env, "kwargs", ANY)
        self._update(self.env, "varargs", ANY)
        for node in nodes:
            if isinstance(node, n.For):
                kids = [node.iter, (2, node), node.target, *([node.test] if node.test else []), *node.body, *node.else_]
            elif isinstance(node, n.With):
                kids = [*node.values, (2, node), *node.targets, *node.body]
            else:
                kids = self.children[id(node)] if id(node) in self.children else list(node.iter_child_nodes())
            self.kids[id(node)] = [k if isinstance(k, tuple) else (0, k) for k in reversed(kids)]
        for number in range(self.limits["passes"]):
            self.changed = False
            self.widening = number >= self.limits["widen_after"]
            self._pass(tree)
            if not self.changed:
                return True
        self.unsettled = ANY  # one more pass in which whatever was not reached yet may be anything
        self._pass(tree)
        return False

    def _pass(self, tree) -> None:
        self.val = {}
        kids = self.kids
        stack: list = [(0, tree)]
        while stack:
            step, node = stack.pop()
            if step == 1:
                self.val[id(node)] = self._value(node)
                self.check(node)
                continue
            if step == 2:  # the loop target or the with-targets, once their values are known
                self._bind_block(node)
                continue
            stack.append((1, node))
            stack.extend(kids[id(node)])

    def check(self, node) -> None:
        """Look at ``node`` once its value is known (overridden by the scanner)."""

    # -- binding -------------------------------------------------------------------------------------------------
    def _update(self, table: dict, key, value: frozenset) -> None:
        old = table.get(key, EMPTY)
        new = self.cap(old | value)
        if new != old and self.widening:
            ints = all(type(a) is int for a in new if is_constant(a) or isinstance(a, Seq)) and MANY not in new
            new = frozenset(a for a in new if not is_constant(a) and not isinstance(a, Seq)) | (
                frozenset((NUM,)) if ints else SATURATED
            )
        if new != old:
            table[key] = new
            self.changed = True

    def bind(self, target, value: frozenset) -> None:
        """Bind the target node of a set, for, with (a name, a tuple of names, or ``ns.attr``) to ``value``."""
        n = self.n
        if isinstance(target, n.Name):
            self._update(self.env, target.name, value)
        elif isinstance(target, n.NSRef):
            for atom in self.env.get(target.name, EMPTY):
                if isinstance(atom, Slots):
                    self.set_slot(atom, target.attr, value)
        elif isinstance(target, (n.Tuple, n.List)):
            for i, item in enumerate(target.items):
                parts = set()
                for atom in value:
                    if isinstance(atom, tuple) and len(atom) == len(target.items):
                        parts.add(atom[i])
                    elif isinstance(atom, Seq):
                        parts |= self.elements(frozenset(atom.elements))
                    elif atom is DATA:
                        parts.add(DATA)
                    else:
                        parts.add(TOP)
                self.bind(item, frozenset(parts))

    def set_slot(self, slots: Slots, key, value: frozenset) -> None:
        """Add ``value`` to member ``key`` (a constant or TOP) of a namespace or dict (past ``members`` keys, the
        rest share the unknown key)."""
        members = self.members.setdefault(slots, {})
        if key not in members and len(members) >= self.limits["members"]:
            key = TOP
        members[key] = None
        self._update(self.slots, (slots, key), value)
        self._update(self.union, slots, value)

    def _bind_block(self, node) -> None:
        n = self.n
        if isinstance(node, n.For):
            self.bind(node.target, self.elements(self.v(node.iter)))
        else:
            for target, value in zip(node.targets, node.values):
                self.bind(target, self.v(value))

    def _bind_call(self, callable_node, node) -> None:
        """A call site of a macro or call block: its arguments bind the parameters."""
        params = [a for a in callable_node.args]
        if node.dyn_args is not None or node.dyn_kwargs is not None:
            for p in params:
                self.bind(p, ANY)
        for p, a in zip(params, node.args):
            self.bind(p, self.v(a))
        extra = [self.v(a) for a in node.args[len(params) :]]
        if extra:
            self._update(self.env, "varargs", frozenset((Seq(frozenset().union(*extra)),)))
        names = {p.name: p for p in params}
        for kw in node.kwargs:
            if kw.key in names:
                self.bind(names[kw.key], self.v(kw.value))

    # -- values --------------------------------------------------------------------------------------------------
    def v(self, node) -> frozenset:
        """The value of an evaluated node (TOP for one not evaluated, such as an absent operand)."""
        return self.val.get(id(node), ANY) if node is not None else ANY

    def cap(self, values: Iterable) -> frozenset:
        """Values within the budgets: long strings and too many constants become TOP."""
        out, consts = set(), 0
        for a in values:
            if isinstance(a, (str, tuple)) and _folds.size(a) > self.limits["fold_length"]:
                out.add(TOP)
                continue
            if is_constant(a) or isinstance(a, Seq):
                consts += 1
            out.add(a)
        if consts > self.limits["fold_values"] or (consts and MANY in out):
            ints = all(type(a) is int for a in out if is_constant(a) or isinstance(a, Seq))
            out = {a for a in out if not is_constant(a) and not isinstance(a, Seq)} | (
                {NUM} if ints and MANY not in out else SATURATED
            )
        return frozenset(out)

    def product(self, parts: list, combine, tag, cost: int = 1) -> frozenset:
        """Every combination of the constant values of ``parts`` combined; TOP stands for the rest.  A combination
        is computed once per template (``tag`` names the operation) and spends its characters (read and built,
        times ``cost``) from the ``fold_work`` budget; once that is spent, a new combination gives TOP and
        ``work_exhausted`` is set."""
        if any(not p for p in parts):
            return EMPTY
        if len(parts) > self.limits["fold_values"] ** 2:
            return ANY
        top = any(not is_constant(a) for p in parts for a in p)
        consts = [[a for a in p if is_constant(a)] for p in parts]
        out: set = {TOP} if top else set()
        combos: list[tuple] = [()]
        for c in consts:
            combos = [x + (y,) for x in combos for y in c]
            if len(combos) > self.limits["fold_values"]:
                return frozenset(out | {TOP})
        for c in combos:
            key = (tag, tuple(map(id, c)))  # the same objects on every pass (kept alive by the memo)
            _, r = self.memo.get(key, (None, _NOT_YET))
            if r is _NOT_YET:
                r = self._combine(combine, c, cost)
                self.memo[key] = (c, r)
            if r is _FAILS:  # a combination that fails at render time gives nothing
                continue
            if isinstance(r, _folds.AnyOf):
                out |= set(r.values)
            else:
                out.add(TOP if r is UNKNOWN else r)
        return self.cap(out)

    def _combine(self, combine, c: tuple, cost: int):
        read = sum(map(_folds.size, c))
        # a fold builds at most its inputs again (a sort, a batch) or four times fold_length (a wordwrap)
        if self.work + cost * (2 * read + 4 * self.limits["fold_length"]) > self.limits["fold_work"]:
            self.work_exhausted = True
            return UNKNOWN
        spent = cost * read
        try:
            r = combine(c)
        except Exception:  # noqa: BLE001 - whatever the renderer would raise
            return _FAILS
        self.work += spent + cost * _folds.size(r)
        return r

    def elements(self, value: frozenset) -> frozenset:
        """What iterating over ``value`` gives."""
        out: set = set()
        for a in value:
            if isinstance(a, tuple):
                out |= set(a) if a else set()
            elif isinstance(a, Seq):
                out |= a.elements
            elif isinstance(a, Route) or a is DATA:
                out.add(a)
            elif a is RANGE:
                out.add(NUM)
            elif isinstance(a, Slots) and a.kind == "dict":
                out |= {k for k in self.members.get(a, ())}
            else:
                out.add(TOP)
        return self.cap(out)

    def member(self, obj: frozenset, keys: frozenset) -> frozenset:
        """``obj[key]`` / ``obj.key`` for every pair of atoms (a private key always gives a route)."""
        out: set = set()
        if any(is_private(k, self.internal) for k in keys):
            out.add(Route("private"))
        for a in obj:
            if isinstance(a, Route):
                out.add(a)
            elif a is DATA:
                out.add(DATA if all(is_safe_key(k) for k in keys) else TOP)
            elif a is RANGE and all(k is NUM or type(k) is int for k in keys):
                out.add(NUM)
            elif isinstance(a, Slots):
                known = self.members.get(a, {})
                for k in keys:
                    if is_constant(k):
                        out |= self.slots.get((a, k), ANY if TOP not in known else EMPTY)
                        out |= self.slots.get((a, TOP), EMPTY)
                    else:
                        out |= self.union.get(a, EMPTY) | ANY
            elif isinstance(a, Seq):
                out |= a.elements
            elif isinstance(a, (str, tuple)):
                for k in keys:
                    r = UNKNOWN
                    try:
                        r = _index(a, k)
                    except (IndexError, ValueError):
                        continue
                    out.add(TOP if r is UNKNOWN else r)
            else:
                out.add(TOP)
        return self.cap(out)

    def as_constant(self, atom):
        """A dict whose keys are all constant, as the tuple of its keys (what ``|list`` makes of it)."""
        if isinstance(atom, Slots) and atom.kind == "dict":
            keys = tuple(self.members.get(atom, ()))
            return keys if _plain(keys) else TOP
        return atom

    def output(self, body: list) -> frozenset:
        """What a list of statements writes out."""
        return self.concat([self.v(node) for node in body])

    def concat(self, parts: list) -> frozenset:
        """Every string the values of ``parts`` written one after another may make (linear in their number)."""
        acc, top, limit = {""}, False, self.limits["fold_length"]
        for p in parts:
            if not p:
                return EMPTY
            pieces = [str(a) for a in p if isinstance(a, (str, int)) and not isinstance(a, bool)]
            top = top or len(pieces) < len(p)
            acc = {a + b for a in acc for b in pieces if len(a) + len(b) <= limit}
            if not acc or len(acc) > self.limits["fold_values"]:
                return ANY
        return self.cap(acc | ({TOP} if top else set()))

    def _value(self, node) -> frozenset:  # noqa: C901, PLR0911, PLR0912 - one case per node type
        n = self.n
        if isinstance(node, n.Const):
            return frozenset((node.value,)) if is_constant(node.value) else ANY
        if isinstance(node, n.TemplateData):
            return frozenset((node.data,))
        if isinstance(node, n.Name):
            if node.ctx != "load":
                return ANY
            if node.name in self.bound:
                value = self.env.get(node.name) or self.unsettled
                if node.name in self.assigned:  # before (or without) its set, the context's value
                    value = value | self._free(node.name)
                return value | {Callable(node.name)} if node.name in self.callables else value
            return self._free(node.name)
        if isinstance(node, (n.List, n.Tuple)):
            items = [self.v(i) for i in node.items]
            value = self.product(items, tuple, "tuple")
            if TOP in value:  # too many combinations, or non-constant items: keep what the elements may be
                value = (value - {TOP}) | {Seq(self.cap(frozenset().union(*items)))}
            return value
        if isinstance(node, n.Dict):
            slots = Slots(id(node), "dict")
            for pair in node.items:
                for k in self.v(pair.key):
                    self.set_slot(slots, k if is_constant(k) else TOP, self.v(pair.value))
            return frozenset((slots,))
        if isinstance(node, n.Concat):
            return self.concat([self.v(i) for i in node.nodes])
        if isinstance(node, (n.CondExpr, n.Or, n.And)):
            a, b = (node.expr1, node.expr2) if isinstance(node, n.CondExpr) else (node.left, node.right)
            return self.cap(self.v(a) | (self.v(b) if b is not None else frozenset(("",))))
        if isinstance(node, (n.Neg, n.Pos)):
            value = self.product([self.v(node.node)], lambda p: -p[0] if isinstance(p[0], int) else UNKNOWN, "neg")
            return self._numbers(value, True) if isinstance(node, n.Neg) else self.v(node.node)
        if isinstance(node, n.Div):
            return frozenset((NUM,))
        if isinstance(node, (n.Add, n.Sub, n.Mul, n.Mod, n.Pow, n.FloorDiv)):
            op, length = type(node).__name__, self.limits["fold_length"]
            left, right = self.v(node.left), self.v(node.right)
            value = self.product([left, right], lambda lr: binary(op, *lr, length), op)
            # - // ** give numbers or fail; + * % give numbers when both operands are numbers
            return self._numbers(
                value, op in ("Sub", "FloorDiv", "Pow") or (self._numeric(left) and self._numeric(right))
            )
        if isinstance(node, n.Slice):
            parts = [self.v(x) if x is not None else frozenset((_NONE,)) for x in (node.start, node.stop, node.step)]
            return self.product(parts, lambda p: _slice(*p), "slice")
        if isinstance(node, n.Getitem):
            return self.member(self.v(node.node), self.v(node.arg))
        if isinstance(node, n.Getattr):
            if (
                isinstance(node.node, n.Name)
                and node.node.name == "loop"
                and node.attr in LOOP_NUMBERS
                and "loop" not in self.bound
            ):
                return frozenset((NUM,))
            return self.member(self.v(node.node), frozenset((node.attr,)))
        if isinstance(node, n.Filter):
            if node.name in NUMBER_FILTERS:
                return self._numbers(self._filter_value(node), True)
            return self._filter_value(node)
        if isinstance(node, n.Call):
            return self._call_value(node)
        if isinstance(node, n.Output):
            return self.output(node.nodes)
        if isinstance(node, n.If):
            branches = [node.body, *(e.body for e in node.elif_), node.else_]
            return self.cap(frozenset().union(*(self.output(b) for b in branches)))
        if isinstance(node, (n.Assign, n.AssignBlock, n.Macro, n.CallBlock)):
            self._bind_statement(node)
            return self.v(node.call) if isinstance(node, n.CallBlock) else frozenset(("",))
        if isinstance(node, n.Scope):
            return self.output(node.body)
        return ANY

    def _free(self, name: str) -> frozenset:
        """What a name the template does not bind holds: a global, an object jinja2 binds, or the runtime's data."""
        if name in self.routes:
            return frozenset((Route(name),))
        return ANY if name in self.object_names else frozenset((DATA,))

    @staticmethod
    def _numeric(value: frozenset) -> bool:
        return bool(value) and all(a is NUM or type(a) is int for a in value)

    def _numbers(self, value: frozenset, numeric: bool) -> frozenset:
        """``value`` with its unknown part known to be a number when ``numeric``."""
        if numeric and TOP in value:
            return self.cap((value - SATURATED) | {NUM})
        return value

    def _bind_statement(self, node) -> None:
        n = self.n
        if isinstance(node, n.Assign):
            self.bind(node.target, self.v(node.node))
        elif isinstance(node, n.AssignBlock):
            self.bind(node.target, self.output(node.body) if node.filter is None else ANY)
        else:  # a macro or a call block: its defaults, its output, and (call block) what ``caller`` is
            key = node.name if isinstance(node, n.Macro) else id(node)
            self.callables[key] = node
            for p, d in zip(node.args[len(node.args) - len(node.defaults) :], node.defaults):
                self.bind(p, self.v(d))
            self._update(self.outputs, key, self.output(node.body))
            if isinstance(node, n.CallBlock):
                self._update(self.env, "caller", frozenset((Callable(key),)))

    def _filter_value(self, node) -> frozenset:
        target = self.v(node.node)
        kinds = self.filter_kinds.get(node.name, set())
        args = [self.v(a) for a in node.args]
        out: set = set()
        if "route" in kinds:
            out |= {a for a in target if isinstance(a, Route) or a is DATA}
        elif DATA in target:
            out.add(TOP)
        target = frozenset(a for a in target if a is not DATA) if "route" in kinds else target
        if "element" in kinds:
            out |= {e for a in target if isinstance(a, Seq) for e in a.elements}
        if "attr" in kinds:
            return self.cap(out | self.member(target, args[0] if args else ANY))
        if "default" in kinds:
            return self.cap(out | target | (args[0] if args else EMPTY))
        if "items" in kinds:
            pairs = {
                (k, v)
                for a in target
                if isinstance(a, Slots)
                for k in self.members.get(a, ())
                for v in self.slots.get((a, k), EMPTY)
            }
            other = any(not isinstance(a, Slots) for a in target)  # DATA left the target above: it gives DATA
            return self.cap(out | ({Seq(self.cap(pairs))} if pairs else set()) | (ANY if other or not out else EMPTY))
        if "fold" in kinds and node.dyn_args is None and node.dyn_kwargs is None:
            folded = frozenset(self.as_constant(a) for a in target if not (isinstance(a, Seq) and "element" in kinds))
            if not folded:
                return self.cap(out)
            return self.cap(out | self._fold(_folds.fold_filter, node.name, folded, args, node.kwargs))
        return self.cap(out | ANY)

    def _fold(self, fold, name: str, target: frozenset, args: list, kwargs: list) -> frozenset:
        """Every value ``fold(name, ...)`` gives for the combinations of the constant values of the target, the
        positional arguments and the keyword arguments (``kwargs``: their nodes)."""
        keys = [kw.key for kw in kwargs]
        n, limit = len(args), self.limits["fold_length"]
        return self.product(
            [target, *args, *(self.v(kw.value) for kw in kwargs)],
            lambda p: fold(name, p[0], p[1 : 1 + n], dict(zip(keys, p[1 + n :])), limit),
            (fold.__name__, name, n, tuple(keys)),
            _folds.cost(fold, name),
        )

    def _call_value(self, node) -> frozenset:
        n = self.n
        callee = node.node
        if isinstance(callee, n.Name) and callee.name not in self.bound and callee.name in self.routes:
            return self._global_call(callee.name, node)
        out: set = set()
        if id(node) in self.loop_calls and node.args:  # loop(items) of a recursive loop: its target again
            self.bind(self.loop_calls[id(node)].target, self.elements(self.v(node.args[0])))
        if isinstance(callee, n.Getattr):  # a method: 'x'.join(...), '{}'.format(...), d.items(), ...
            target = self.v(callee.node)
            for atom in (
                self.member(target, frozenset((callee.attr,))) if any(isinstance(a, Slots) for a in target) else ()
            ):
                if isinstance(atom, Callable) and atom.key in self.callables:  # namespace(f=m).f(...)
                    self._bind_call(self.callables[atom.key], node)
            out |= {a for a in target if isinstance(a, Route)}
            kind = self.methods.get(callee.attr)
            args = [self.v(a) for a in node.args]
            if kind == "fold" and node.dyn_args is None and node.dyn_kwargs is None:
                out |= self._fold(_folds.fold_method, callee.attr, target, args, node.kwargs)
            elif kind in ("items", "values", "keys", "get"):
                out |= self._mapping_method(kind, target, args)
            else:
                out.add(TOP)
            return self.cap(out)
        for atom in self.v(callee):
            if isinstance(atom, Route):
                out.add(atom)
            elif isinstance(atom, Callable) and atom.key in self.callables:
                self._bind_call(self.callables[atom.key], node)
                out |= self.outputs.get(atom.key) or self.unsettled
            else:
                out.add(TOP)
        return self.cap(out)

    def _mapping_method(self, kind: str, target: frozenset, args: list) -> frozenset:
        out: set = set()
        for a in target:
            if a is DATA:
                out.add(DATA)
                continue
            if not isinstance(a, Slots):
                out.add(TOP)
                continue
            keys = list(self.members.get(a, ()))
            values = [self.slots.get((a, k), EMPTY) for k in keys]
            if kind == "keys":
                out.add(Seq(frozenset(keys)))
            elif kind == "values":
                out.add(Seq(self.cap(frozenset().union(*values))))
            elif kind == "items":
                out.add(Seq(self.cap({(k, v) for k, vs in zip(keys, values) for v in vs})))
            else:
                out |= self.member(frozenset((a,)), args[0] if args else ANY)
                if len(args) > 1:
                    out |= args[1]
        return self.cap(out)

    def _global_call(self, name: str, node) -> frozenset:
        gives = self.routes[name]
        if gives in ("namespace", "dict"):
            slots = Slots(id(node), gives)
            for a in node.args:
                for atom in self.v(a):
                    if isinstance(atom, Slots):
                        for k in list(self.members.get(atom, ())):
                            self.set_slot(slots, k, self.slots.get((atom, k), EMPTY))
            for kw in node.kwargs:
                self.set_slot(slots, kw.key, self.v(kw.value))
            return frozenset((slots,))
        if name == "range":
            return frozenset((RANGE,))
        return frozenset((Route(name),)) if gives == "route" else ANY


def _slice(*parts):
    if not all(p is _NONE or (isinstance(p, int) and not isinstance(p, bool)) for p in parts):
        return UNKNOWN
    return _Slice(*(None if p is _NONE else p for p in parts))
