"""A reader for the small subset of C++ that llama.cpp's model loader is written in.

Used only by ``tools/extract_llama_arch.py`` (never by the package): it turns function bodies such as
``load_arch_hparams`` and ``load_arch_tensors`` into plain data (statements as dicts, expressions as Python-syntax
strings) that ``spec/architectures/`` stores and ``gguf_construct.arch`` interprets.  What it cannot read is kept
verbatim as ``{unparsed: ...}`` so that nothing is silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<chr>'(?:[^'\\]|\\.)')
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)[uUlLfF]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>::|->|<<=|>>=|\+\+|--|&&|\|\||==|!=|<=|>=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<|>>|[-+*/%<>=!&|^~?:;,.(){}\[\]#])
""",
    re.VERBOSE,
)


@dataclass
class Tok:
    kind: str
    text: str


def strip_comments(src: str) -> str:
    """Remove // and /* */ comments (string literals are kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(src[i : j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def tokenize(src: str) -> list[Tok]:
    """Tokens of ``src`` (comments must be stripped first; preprocessor lines are dropped)."""
    src = "\n".join(line for line in src.split("\n") if not line.lstrip().startswith("#"))
    toks, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m:
            raise SyntaxError(f"cannot tokenize at {src[pos : pos + 40]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append(Tok(m.lastgroup, m.group()))
    return toks


def find_function(src: str, qualified: str) -> str | None:
    """The body (between the outer braces) of the function definition ``qualified(...) {``, or None."""
    m = re.search(re.escape(qualified) + r"\s*\([^)]*\)\s*(?:const\s*)?(?:override\s*)?\{", src)
    if not m:
        return None
    depth, j = 1, m.end()
    while depth:
        if src[j] == "{":
            depth += 1
        elif src[j] == "}":
            depth -= 1
        j += 1
    return src[m.end() : j - 1]


# ---------------------------------------------------------------------------------------------------------------
# expressions: a Pratt parser producing Python-syntax strings
# ---------------------------------------------------------------------------------------------------------------

_BINARY = {
    "||": (1, "or"),
    "&&": (2, "and"),
    "|": (3, "|"),
    "^": (4, "^"),
    "&": (5, "&"),
    "==": (6, "=="),
    "!=": (6, "!="),
    "<": (7, "<"),
    ">": (7, ">"),
    "<=": (7, "<="),
    ">=": (7, ">="),
    "<<": (8, "<<"),
    ">>": (8, ">>"),
    "+": (9, "+"),
    "-": (9, "-"),
    "*": (10, "*"),
    "/": (10, "/"),
    "%": (10, "%"),
}
_TYPE_WORDS = {
    "int",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "size_t",
    "float",
    "double",
    "bool",
    "unsigned",
    "long",
    "char",
    "auto",
    "const",
    "ggml_type",
    "llama_pos",
}
_INT_TYPES = _TYPE_WORDS - {"float", "double", "bool", "auto", "const", "char"}


class Unreadable(Exception):
    """The construct is outside the subset."""


class _Cursor:
    """A position in a token list."""

    t: list[Tok]
    i: int

    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self, text: str | None = None) -> Tok:
        tok = self.peek()
        if tok is None or (text is not None and tok.text != text):
            raise Unreadable(f"expected {text!r}, got {tok.text if tok else 'end'!r}")
        self.i += 1
        return tok


class ExprParser(_Cursor):
    """Parse one C++ expression from a token list, starting at ``pos``; ``names`` maps identifiers (enum constants,
    LLM_KV_*, LLM_TENSOR_*) to replacement Python text."""

    def __init__(self, toks: list[Tok], pos: int, rename):
        self.t, self.i, self.rename = toks, pos, rename

    def expr(self, min_prec: int = 0) -> str:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok is None:
                return left
            if tok.text == "?" and min_prec <= 0:
                self.take("?")
                a = self.expr(0)
                self.take(":")
                b = self.expr(0)
                left = f"({a} if {left} else {b})"
                continue
            op = _BINARY.get(tok.text)
            if op is None or op[0] < min_prec or tok.kind != "op":
                return left
            self.take()
            right = self.expr(op[0] + 1)
            left = f"({left} {op[1]} {right})"

    def unary(self) -> str:
        tok = self.peek()
        if tok is None:
            raise Unreadable("unexpected end")
        if tok.text == "!":
            self.take()
            return f"(not {self.unary()})"
        if tok.text == "-":
            self.take()
            return f"(-{self.unary()})"
        if tok.text == "+":
            self.take()
            return self.unary()
        if tok.text == "~":
            self.take()
            return f"(~{self.unary()})"
        if tok.text in ("&", "*"):
            raise Unreadable("pointer arithmetic")
        if tok.text == "(" and self._is_cast():
            self.take("(")
            words = []
            while self.peek().text != ")":
                words.append(self.take().text)
            self.take(")")
            inner = self.unary()
            return self._cast(words, inner)
        return self.postfix(self.primary())

    def _is_cast(self) -> bool:
        j = self.i + 1
        words = []
        while j < len(self.t) and self.t[j].text != ")":
            if self.t[j].kind != "id" and self.t[j].text != "::":
                return False
            words.append(self.t[j].text)
            j += 1
        return (
            bool(words)
            and all(
                w in _TYPE_WORDS or w in ("std", "::", "enum") or w.startswith("llama_") or w.startswith("llm_")
                for w in words
            )
            and words[-1] not in ("std",)
        )

    @staticmethod
    def _cast(words: list[str], inner: str) -> str:
        if any(w in ("float", "double") for w in words):
            return f"float({inner})"
        if any(w in _INT_TYPES for w in words):
            return f"int({inner})"
        if "bool" in words:
            return f"bool({inner})"
        return inner

    def primary(self) -> str:
        tok = self.take()
        if tok.kind == "num":
            text = tok.text.rstrip("uUlLfF") if not tok.text.lower().startswith("0x") else tok.text.rstrip("uUlL")
            if text.endswith("."):
                text += "0"
            return text
        if tok.kind == "str":
            parts = [tok.text]
            while self.peek() is not None and self.peek().kind == "str":
                parts.append(self.take().text)
            return repr("".join(bytes(p[1:-1], "utf-8").decode("unicode_escape") for p in parts))
        if tok.kind == "chr":
            return repr(tok.text[1:-1])
        if tok.text == "(":
            inner = self.expr(0)
            self.take(")")
            return f"({inner})"
        if tok.text == "{":
            items = self.args("}")
            return "[" + ", ".join(items) + "]"
        if tok.kind != "id":
            raise Unreadable(f"unexpected {tok.text!r}")
        name = tok.text
        if name in ("static_cast", "reinterpret_cast"):
            self.take("<")
            words = []
            while self.peek().text != ">":
                words.append(self.take().text)
            self.take(">")
            self.take("(")
            inner = self.expr(0)
            self.take(")")
            return self._cast(words, inner)
        if name in ("nullptr", "NULL"):
            return "None"
        if name == "true":
            return "True"
        if name == "false":
            return "False"
        if name == "this":
            self.take("->")
            name = self.take().text
        while self.peek() is not None and self.peek().text == "::":
            self.take("::")
            name = name + "::" + self.take().text
        if name.startswith("std::"):
            name = {
                "std::max": "max",
                "std::min": "min",
                "std::to_string": "str",
                "std::string": "str",
                "std::abs": "abs",
            }.get(name, name.replace("::", "."))
        elif "::" in name:
            name = name.split("::")[-1]
        if name in _TYPE_WORDS and self.peek() is not None and self.peek().text == "(":
            self.take("(")
            inner = self.expr(0)
            self.take(")")
            return self._cast([name], inner)
        return self.rename(name)

    def postfix(self, base: str) -> str:
        while True:
            tok = self.peek()
            if tok is None:
                return base
            if tok.text in (".", "->"):
                self.take()
                base = f"{base}.{self.take().text}"
            elif tok.text == "[":
                self.take("[")
                idx = self.expr(0)
                self.take("]")
                base = f"{base}[{idx}]"
            elif tok.text == "(":
                self.take("(")
                base = f"{base}({', '.join(self.args(')'))})"
            else:
                return base

    def args(self, close: str) -> list[str]:
        out = []
        if self.peek().text == close:
            self.take(close)
            return out
        while True:
            out.append(self.expr(0))
            tok = self.take()
            if tok.text == close:
                return out
            if tok.text != ",":
                raise Unreadable(f"expected , or {close}")


# ---------------------------------------------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------------------------------------------

_DECL_START = _TYPE_WORDS | {"std", "static", "constexpr", "struct", "enum"}
_SKIP_CALLS = ("LLAMA_LOG_", "GGML_UNUSED", "GGML_LOG_")


class StmtParser(_Cursor):
    """Parse a function body into statement dicts."""

    def __init__(self, toks: list[Tok], rename):
        self.t, self.i, self.rename = toks, 0, rename

    def expr(self) -> str:
        p = ExprParser(self.t, self.i, self.rename)
        out = p.expr(0)
        self.i = p.i
        return out

    def body(self) -> list:
        out = []
        while self.peek() is not None:
            out.extend(self.statement())
        return out

    def block_or_stmt(self) -> list:
        if self.peek().text == "{":
            self.take("{")
            out = []
            while self.peek().text != "}":
                out.extend(self.statement())
            self.take("}")
            return out
        return self.statement()

    def _skip_statement(self) -> str:
        """Skip to the end of the current statement; return its text."""
        start, depth = self.i, 0
        while True:
            tok = self.take()
            if tok.text in "({[":
                depth += 1
            elif tok.text in ")}]":
                depth -= 1
                if depth < 0:
                    self.i -= 1
                    break
                if depth == 0 and tok.text == "}" and (self.peek() is None or self.peek().text != ";"):
                    break
            elif tok.text == ";" and depth == 0:
                break
        if self.i == start:  # a stray closing brace: consume it so that the parse always advances
            self.i += 1
        return " ".join(t.text for t in self.t[start : self.i])

    def statement(self) -> list:
        start = self.i
        try:
            return self._statement()
        except (Unreadable, IndexError, AttributeError):
            self.i = start
            return [{"unparsed": self._skip_statement()}]

    def _statement(self) -> list:
        tok = self.peek()
        text = tok.text
        if text == ";":
            self.take()
            return []
        if text == "{":
            return self.block_or_stmt()
        if text == "if":
            self.take()
            if self.peek().text == "constexpr":
                self.take()
            self.take("(")
            cond = self.expr()
            self.take(")")
            then = self.block_or_stmt()
            node = {"if": cond, "then": then}
            if self.peek() is not None and self.peek().text == "else":
                self.take()
                node["else"] = self.block_or_stmt()
            return [node]
        if text == "for":
            return [self._for()]
        if text == "try":
            self.take()
            body = self.block_or_stmt()
            self.take("catch")
            self.take("(")
            depth = 1
            while depth:
                depth += {"(": 1, ")": -1}.get(self.take().text, 0)
            return [{"try": body, "catch": self.block_or_stmt()}]
        if text == "switch":
            return [self._switch()]
        if text == "return":
            self.take()
            if self.peek().text == ";":
                self.take()
                return [{"return": None}]
            value = self.expr()
            self.take(";")
            return [{"return": value}]
        if text in ("break", "continue"):
            self.take()
            self.take(";")
            return [{text: True}]
        if text == "throw":
            self.take()
            start = self.i
            msg = self._message()
            return [self._fail(msg, start)]
        if text in ("GGML_ASSERT", "assert"):
            self.take()
            self.take("(")
            cond = self.expr()
            self.take(")")
            self.take(";")
            return [{"assert": cond}]
        if text == "GGML_ABORT":
            start = self.i
            return [self._fail("GGML_ABORT " + self._skip_statement(), start)]
        if tok.kind == "id" and any(text.startswith(p) for p in _SKIP_CALLS):
            self._skip_statement()
            return []
        if text == "auto" and self.peek(1).kind == "id" and self.peek(2).text == "=" and self.peek(3).text == "[":
            return [self._lambda()]
        if self._is_declaration():
            return self._declaration()
        return [self._expression_statement()]

    def _lambda(self) -> dict:
        """``auto name = [captures](params) { body };`` -> a local function (captures see the enclosing scope)."""
        self.take("auto")
        name = self.take().text
        self.take("=")
        self.take("[")
        while self.take().text != "]":
            pass
        self.take("(")
        params: list[str] = []
        words: list[str] = []
        while True:
            tok = self.take()
            if tok.text in (",", ")"):
                if words:
                    params.append(words[-1])
                words = []
                if tok.text == ")":
                    break
            elif tok.kind == "id":
                words.append(tok.text)
        if self.peek().text != "{":
            raise Unreadable("lambda without a body")
        body = self.block_or_stmt()
        self.take(";")
        return {"def": name, "params": params, "body": body}

    def _fail(self, message: str, start: int) -> dict:
        """A ``fail`` statement; with ``args`` (expressions) when the statement from token ``start`` passes its
        first string literal to printf-style formatting (``format("... %u", a)``, ``GGML_ABORT("%s", b)``)."""
        node = {"fail": message}
        lit = next((k for k in range(start, self.i) if self.t[k].kind == "str"), None)
        if lit is None or lit + 1 >= self.i or self.t[lit + 1].text != ",":
            return node
        args, pos = [], lit + 1
        try:
            while pos < self.i and self.t[pos].text == ",":
                p = ExprParser(self.t, pos + 1, self.rename)
                args.append(p.expr(0))
                pos = p.i
        except (Unreadable, IndexError, AttributeError):
            return node
        if args:
            node["args"] = args
        return node

    def _message(self) -> str:
        raw = self._skip_statement()
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', raw)
        return " ".join(strings) if strings else raw

    def _for(self) -> dict:
        self.take("for")
        self.take("(")
        words = []
        while self.peek().kind == "id" and self.peek(1).kind == "id":
            words.append(self.take().text)
        var = self.take().text
        self.take("=")
        lo = self.expr()
        self.take(";")
        if self.take().text != var:
            raise Unreadable("for condition")
        cmp = self.take().text
        hi = self.expr()
        if cmp == "<=":
            hi = f"({hi} + 1)"
        elif cmp != "<":
            raise Unreadable("for comparison")
        self.take(";")
        step = [self.take().text, self.take().text]
        if sorted(step) != sorted(["++", var]):
            raise Unreadable("for step")
        self.take(")")
        return {"for": var, "from": lo, "to": hi, "do": self.block_or_stmt()}

    def _switch(self) -> dict:
        self.take("switch")
        self.take("(")
        subject = self.expr()
        self.take(")")
        self.take("{")
        cases: list[dict] = []
        current = None
        while self.peek().text != "}":
            if self.peek().text in ("case", "default"):
                labels = []
                while self.peek().text in ("case", "default"):
                    if self.take().text == "default":
                        labels.append("default")
                    else:
                        labels.append(self.expr())
                    self.take(":")
                current = {"when": labels, "do": []}
                cases.append(current)
                continue
            if current is None:
                raise Unreadable("statement before case")
            current["do"].extend(self.statement())
        self.take("}")
        return {"switch": subject, "cases": cases}

    def _is_declaration(self) -> bool:
        j, words = self.i, []
        while j < len(self.t) and (self.t[j].kind == "id" or self.t[j].text in ("::", "<", ">", ",", "&", "*")):
            if self.t[j].text == "<":  # template arguments
                depth = 0
                while True:
                    if self.t[j].text == "<":
                        depth += 1
                    elif self.t[j].text == ">":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                words.append("<>")
                j += 1
                continue
            if self.t[j].text == ",":
                break
            words.append(self.t[j].text)
            j += 1
        ids = [w for w in words if w not in ("::", "&", "*", "<>")]
        if len(ids) < 2:
            return False
        return (
            ids[0] in _DECL_START
            or ids[0].startswith("llama_")
            or ids[0].startswith("llm_")
            or ids[0] in ("ggml_tensor", "LLM_TN")
            or "<>" in words
        )

    def _declaration(self) -> list:
        type_words = []
        while True:
            tok = self.take()
            if tok.text == "<":
                depth, inner = 1, []
                while depth:
                    t = self.take()
                    depth += {"<": 1, ">": -1}.get(t.text, 0)
                    inner.append(t.text)
                type_words.append("<" + " ".join(inner))
                if self.peek().kind == "id" and self.peek(1).text in ("=", ";", "(", "{", ",", "["):
                    break
                continue
            type_words.append(tok.text)
            nxt = self.peek()
            if nxt.kind == "id" and self.peek(1).text in ("=", ";", "(", "{", ",", "["):
                break
            if nxt.text in ("&", "*") and self.peek(1).kind == "id" and self.peek(2).text in ("=", ";"):
                type_words.append(self.take().text)
                break
        out = []
        ctype = " ".join(w for w in type_words if w not in ("const", "static", "constexpr"))
        while True:
            name = self.take().text
            nxt = self.take()
            if nxt.text == "=":
                value = self.expr()
            elif nxt.text == "{":
                value = "None" if self.peek().text == "}" else self.expr()
                self.take("}")
            elif nxt.text == "(":
                value = self.expr()
                self.take(")")
            elif nxt.text == "[":
                raise Unreadable("C array")
            else:
                value = None
                self.i -= 1
            stmt = {"let": name, "type": ctype}
            if value is not None:
                stmt["value"] = value
            out.append(stmt)
            sep = self.take()
            if sep.text == ";":
                return out
            if sep.text != ",":
                raise Unreadable("declaration")

    def _expression_statement(self) -> dict:
        if self.peek().text in ("++", "--"):
            op = self.take().text
            target = self.expr()
            self.take(";")
            return {"set": target, "value": f"({target} {'+' if op == '++' else '-'} 1)"}
        target = self.expr()
        tok = self.take()
        if tok.text == ";":
            return {"do": target}
        if tok.text in ("++", "--"):
            self.take(";")
            return {"set": target, "value": f"({target} {'+' if tok.text == '++' else '-'} 1)"}
        if tok.text == "=":
            value = self.expr()
            self.take(";")
            return {"set": target, "value": value}
        if tok.text in ("+=", "-=", "*=", "/=", "|=", "&=", "%="):
            value = self.expr()
            self.take(";")
            return {"set": target, "value": f"({target} {tok.text[0]} {value})"}
        raise Unreadable(f"statement with {tok.text!r}")


def parse_body(src: str, rename) -> list:
    """Statements of a C++ function body (comments already stripped)."""
    return StmtParser(tokenize(src), rename).body()
