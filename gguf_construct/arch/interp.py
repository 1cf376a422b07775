"""A small interpreter for the statement lists of ``spec/architectures/``.

Statements are mappings (``let``, ``set``, ``do``, ``if``, ``for``, ``switch``, ``assert``, ``fail``, ``return``,
``break``, ``continue``, ``unparsed``); expressions are Python-syntax strings compiled by
:func:`~gguf_construct.arch.programs.compile_expr`.  What cannot be evaluated (a name the extraction did not
resolve, a helper it did not translate) becomes :data:`UNKNOWN`; a branch whose condition is unknown runs in
*uncertain* mode, where nothing is required and nothing fails -- the interpreter is lenient where the spec is
approximate, and says so in :attr:`Interpreter.approximations`.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from .programs import compile_expr

__all__ = ["UNKNOWN", "Undecided", "Fatal", "Frame", "Interpreter", "Struct"]

MAX_LOOP = 1 << 20  # bounds every loop of a program; llama.cpp's own limits (512 layers, 1024 experts) are far below


class Undecided(Exception):
    """Raised when the truth of an unknown value is asked."""


class _Unknown:
    """A value the interpreter could not compute; every operation on it is unknown too."""

    _instance = None

    def __new__(cls):  # one instance
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise Undecided()

    def _same(self, *_: Any) -> "_Unknown":
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __and__ = __rand__ = __or__ = __ror__ = _same
    __xor__ = __rxor__ = __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __neg__ = __pos__ = _same
    __invert__ = __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = __call__ = __getattr__ = _same
    __abs__ = _same

    def __eq__(self, other: Any) -> Any:  # noqa: D105
        return self

    def __ne__(self, other: Any) -> Any:  # noqa: D105
        return self

    def __hash__(self) -> int:
        return 0

    def __int__(self) -> int:
        raise Undecided()

    __index__ = __float__ = __int__


UNKNOWN = _Unknown()


class Fatal(Exception):
    """A failure of the load: the loader throws or aborts here."""

    def __init__(self, code: str, message: str, **detail: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Struct:
    """A C++ struct whose members start out as null pointers (llama_layer, llama_model's tensor members)."""

    _nested: frozenset = frozenset()

    def __init__(self, nested: frozenset = frozenset()):
        object.__setattr__(self, "_nested", nested)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._nested:
            value = Struct()
            object.__setattr__(self, name, value)
            return value
        return None


class Frame:
    """One function activation: its local variables (with their C types) and the object whose members it sees."""

    def __init__(
        self, owner: Any, parent: "Frame | None" = None, values: dict | None = None, types: dict | None = None
    ):
        self.owner = owner
        self.parent = parent
        self.values: dict[str, Any] = dict(values or {})
        self.types: dict[str, str] = dict(types or {})

    def find(self, name: str) -> "Frame | None":
        """The innermost frame (of this function) that declares ``name``."""
        f: Frame | None = self
        while f is not None:
            if name in f.values:
                return f
            f = f.parent
        return None


_CXX_TYPE_SPACES = re.compile(r"\s*(::|<|>|,|&)\s*")


def normalize_ctype(text: str) -> str:
    """``'const std :: string &'`` -> ``'std::string'``."""
    t = _CXX_TYPE_SPACES.sub(r"\1", text or "").replace("&", "").strip()
    return t[len("const ") :].strip() if t.startswith("const ") else t


_UNSIGNED_BITS = {"uint8_t": 8, "uint16_t": 16, "uint32_t": 32, "uint64_t": 64, "size_t": 64}
_SIGNED_BITS = {"int8_t": 8, "int16_t": 16, "int32_t": 32, "int": 32, "int64_t": 64, "llama_token": 32}


def cast(ctype: str, value: Any) -> Any:
    """Convert ``value`` as assigning it to a variable of C type ``ctype`` would (integers wrap)."""
    if value is UNKNOWN or value is None or not isinstance(value, (int, float)):
        return value
    t = normalize_ctype(ctype)
    if t == "bool":
        return bool(value)
    bits = _UNSIGNED_BITS.get(t)
    if bits:
        return int(value) % (1 << bits) if value == value and abs(value) != float("inf") else 0
    bits = _SIGNED_BITS.get(t)
    if bits:
        if value != value or abs(value) == float("inf"):
            return 0
        v = int(value) % (1 << bits)
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    if t in ("float", "double"):
        return float(value)
    return value


class _Names(dict):
    """The mapping ``eval`` sees: locals, then the owner's members, then the globals."""

    def __init__(self, interp: "Interpreter", frame: Frame):
        super().__init__()
        self.interp = interp
        self.frame = frame

    def __missing__(self, name: str) -> Any:
        if name == "_scope":
            return self.frame
        f = self.frame.find(name)
        if f is not None:
            return f.values[name]
        owner = self.frame.owner
        if owner is not None:
            try:
                value = getattr(owner, name)
            except AttributeError:
                value = _MISSING
            if value is not _MISSING and not (value is None and name in self.interp.globals):
                return value
        if name in self.interp.globals:
            return self.interp.globals[name]
        raise NameError(name)


_MISSING = object()
_EVAL_ERRORS = (
    NameError,
    TypeError,
    AttributeError,
    ZeroDivisionError,
    IndexError,
    KeyError,
    ValueError,
    OverflowError,
    Undecided,
    RecursionError,
)


class Interpreter:
    """Runs statement lists.  ``globals`` maps names to values and callables (constants, builtins, helpers)."""

    def __init__(self, globals_: dict[str, Any]):
        self.globals = globals_
        self.uncertain = 0
        self.trying = 0  # inside a try block: what would throw raises Fatal instead of being collected
        self.approximations: list[str] = []
        self.statements_run = 0

    # expressions ------------------------------------------------------------------------------------------
    def _known(self, text: str, frame: Frame) -> Any:
        """The value of ``text`` for a message, or None when it cannot be evaluated here."""
        try:
            value = self.eval(text, frame)
        except Exception:  # noqa: BLE001 - a message argument must not change the verdict
            return None
        return None if value is UNKNOWN else value

    def eval(self, text: Any, frame: Frame) -> Any:
        """Evaluate an expression string; UNKNOWN when it cannot be evaluated."""
        if text is None:
            return None
        if not isinstance(text, str):
            return text
        try:
            return eval(compile_expr(text), {"__builtins__": {}}, _Names(self, frame))  # noqa: S307 - spec text
        except Fatal:
            raise
        except _EVAL_ERRORS as exc:
            self.note(f"cannot evaluate {text[:80]!r}: {type(exc).__name__} {exc}")
            return UNKNOWN

    def note(self, text: str) -> None:
        """Record one approximation (kept short: the first few hundred)."""
        if len(self.approximations) < 200:
            self.approximations.append(text)

    def truth(self, text: str, frame: Frame) -> bool | None:
        """The truth of a condition, or None when it is unknown."""
        value = self.eval(text, frame)
        try:
            return bool(value)
        except Undecided:
            return None

    # statements -------------------------------------------------------------------------------------------
    def call(self, body: list, owner: Any, args: dict[str, Any], parent: Frame | None = None) -> Any:
        """Run a function body with its parameters bound; its return value (None for void)."""
        frame = Frame(owner, parent, args)
        try:
            self.run(body, frame)
        except _Return as r:
            return r.value
        return None

    def run(self, stmts: list, frame: Frame) -> None:
        """Run a statement list in ``frame`` (a new block scope)."""
        block = Frame(frame.owner, frame)
        for s in stmts or ():
            self.statements_run += 1
            self.step(s, block)

    def run_uncertain(self, stmts: list, frame: Frame) -> None:
        """Run a block whose execution is not known to happen: nothing in it may fail the load."""
        self.uncertain += 1
        try:
            self.run(stmts, frame)
        except (_Break, _Continue, _Return):
            pass
        finally:
            self.uncertain -= 1

    def step(self, s: dict, frame: Frame) -> None:
        if "let" in s:
            ctype = normalize_ctype(s.get("type", ""))
            frame.values[s["let"]] = (
                cast(ctype, self.eval(s.get("value"), frame)) if "value" in s else self.default_value(ctype)
            )
            frame.types[s["let"]] = ctype
        elif "set" in s:
            self.assign(s["set"], self.eval(s.get("value"), frame), frame)
        elif "try" in s:
            self.attempt(s, frame)
        elif "def" in s:
            frame.values[s["def"]] = self.closure(s, frame)
        elif "do" in s and "for" not in s:
            self.do(s["do"], frame)
        elif "if" in s:
            cond = self.truth(s["if"], frame)
            if cond is None:
                self.run_uncertain(s.get("then"), frame)
                self.run_uncertain(s.get("else"), frame)
            elif cond:
                self.run(s.get("then"), frame)
            else:
                self.run(s.get("else"), frame)
        elif "for" in s:
            self.loop(s, frame)
        elif "switch" in s:
            self.switch(s, frame)
        elif "assert" in s:
            if self.truth(s["assert"], frame) is False and not self.uncertain:
                raise Fatal("ASSERT", f"GGML_ASSERT({s['assert']}) failed", condition=s["assert"])
        elif "fail" in s:
            if not self.uncertain:
                raise Fatal("FAIL", _printf(_fail_text(s["fail"]), [self._known(a, frame) for a in s.get("args", ())]))
        elif "return" in s:
            raise _Return(self.eval(s["return"], frame) if s["return"] is not None else None)
        elif "break" in s:
            raise _Break()
        elif "continue" in s:
            raise _Continue()
        elif "unparsed" in s:
            self.unparsed(s["unparsed"], frame)
        else:
            self.note(f"statement of unknown kind {sorted(s)}")

    def attempt(self, s: dict, frame: Frame) -> None:
        """``try { ... } catch (...) { ... }``: what the loader throws in the first block runs the second (an
        assertion aborts the process and is not caught)."""
        self.trying += 1
        try:
            self.run(s.get("try"), frame)
        except Fatal as f:
            if f.code in ("ASSERT", "LOOP"):
                raise
            self.trying -= 1
            self.run(s.get("catch"), frame)
            return
        self.trying -= 1

    def closure(self, s: dict, frame: Frame) -> Callable:
        """A local function (a C++ lambda capturing by reference): its body runs in a scope inside ``frame``."""
        params = list(s.get("params") or [])

        def call(*args: Any) -> Any:
            return self.call(s.get("body") or [], frame.owner, dict(zip(params, args)), frame)

        return call

    def do(self, text: str, frame: Frame) -> None:
        hook = self.globals.get("__statement__")
        if hook is not None and hook(text, frame):
            return
        self.eval(text, frame)

    def default_value(self, ctype: str) -> Any:
        if ctype in _UNSIGNED_BITS or ctype in _SIGNED_BITS:
            return 0
        if ctype in ("float", "double"):
            return 0.0
        if ctype == "bool":
            return False
        if ctype == "std::string":
            return ""
        if ctype.startswith("std::vector"):
            return []
        return None

    def assign(self, target: str, value: Any, frame: Frame) -> None:
        """``set``: a local, a member of the owner, ``obj.member`` or ``obj[index]``.  A std::array or std::vector
        is assigned by value (a copy), as in C++."""
        if isinstance(value, list):
            value = type(value)(value)
        m = re.fullmatch(r"[A-Za-z_]\w*", target)
        if m:
            f = frame.find(target)
            if f is not None:
                f.values[target] = cast(f.types.get(target, ""), value)
                return
            owner = frame.owner
            if owner is not None:
                _setattr(owner, target, value)
                return
            frame.values[target] = value
            return
        try:
            if target.endswith("]"):
                obj_text, _, index_text = target[:-1].partition("[")
                obj = self.eval(obj_text, frame)
                index = self.eval(index_text, frame)
                if obj is UNKNOWN or index is UNKNOWN:
                    raise TypeError("unknown container or index")
                obj[int(index)] = value
            else:
                obj_text, _, attr = target.rpartition(".")
                obj = self.eval(obj_text, frame)
                if obj is UNKNOWN or obj is None:
                    raise TypeError("unknown object")
                _setattr(obj, attr, value)
        except _EVAL_ERRORS as exc:
            self.note(f"cannot assign {target!r}: {exc}")

    def loop(self, s: dict, frame: Frame) -> None:
        lo, hi = self.eval(s.get("from", "0"), frame), self.eval(s.get("to"), frame)
        var = s["for"]
        body = s.get("do")
        if not isinstance(lo, int) or not isinstance(hi, int):
            self.note(f"loop over {var} with unknown bounds")
            scope = Frame(frame.owner, frame, {var: UNKNOWN})
            self.run_uncertain(body, scope)
            return
        if hi - lo > MAX_LOOP:
            raise Fatal("LOOP", f"loop over {var} from {lo} to {hi} exceeds {MAX_LOOP} iterations")
        scope = Frame(frame.owner, frame, {var: lo}, {var: "int"})
        for i in range(lo, hi):
            scope.values[var] = i
            try:
                self.run(body, scope)
            except _Break:
                break
            except _Continue:
                continue

    def switch(self, s: dict, frame: Frame) -> None:
        value = self.eval(s["switch"], frame)
        cases = s.get("cases") or []
        matched = False
        try:
            for case in cases:
                when = case.get("when") or ["default"]
                if not matched:
                    if value is UNKNOWN:
                        self.run_uncertain(case.get("do"), frame)
                        continue
                    for w in when:
                        if w == "default" or self.eval(w, frame) == value:
                            matched = True
                            break
                    if not matched:
                        continue
                self.run(case.get("do"), frame)
        except _Break:
            pass

    _FILL = re.compile(r"std :: fill \( (?P<obj>[\w. ]+?) \. begin \( \) , (?P=obj) \. end \( \) , (?P<value>.+) \) ;$")

    def unparsed(self, text: str, frame: Frame) -> None:
        if text.strip() == "}":  # the end of a block the extractor left over: nothing happens
            return
        m = self._FILL.match(text)
        if m:
            obj = self.eval(m.group("obj").replace(" ", ""), frame)
            value = self.eval(_c_value(m.group("value")), frame)
            if isinstance(obj, list):
                obj[:] = [value] * len(obj)
                return
        self.note(f"statement not read: {text[:80]}")


def _setattr(obj: Any, name: str, value: Any) -> None:
    setter: Callable | None = getattr(type(obj), "set_member", None)
    if setter is not None:
        setter(obj, name, value)
    else:
        object.__setattr__(obj, name, value)


def _c_value(text: str) -> str:
    """A C literal or ternary in token-spaced form -> Python syntax."""
    t = text.replace(" ", "")
    t = re.sub(r"(\d+\.\d*)f\b", r"\1", t)
    m = re.fullmatch(r"(.+)\?(.+):(.+)", t)
    if m:
        return f"({m.group(2)} if {m.group(1)} else {m.group(3)})"
    return t


_CONVERSION = re.compile(r"%([-+ 0#]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z|j|t|L)?([diouxXfFeEgGcs%])")


def _printf(fmt: str, values: list) -> str:
    """``fmt`` (C text: a trailing ``\\n`` escape is dropped) with its printf conversions replaced by ``values`` in
    order; a conversion whose value is None (not known here) stays as written."""
    it = iter(values)

    def one(m: re.Match) -> str:
        if m.group(2) == "%":
            return "%"
        value = next(it, None)
        if value is None:
            return m.group(0)
        if m.group(2) in "cs":
            return str(value)
        try:
            return f"%{m.group(1)}{m.group(2)}" % (value,)
        except (TypeError, ValueError):
            return str(value)

    text = fmt[:-2] if fmt.endswith("\\n") else fmt
    return _CONVERSION.sub(one, text)


def _fail_text(text: str) -> str:
    m = re.search(r'"([^"]*)"', text or "")
    return m.group(1) if m else (text or "failure")
