"""Template scanning that computes Jinja's string and list filters and Python's str methods on constants
(gguf_construct/checker/jinja_folds.py): each fold gives what jinja2 itself evaluates, or nothing; keys hidden behind
those filters are seen; the frame attributes jinja2's sandbox refuses (``gi_frame``, ``f_globals`` ...) are escapes
without any dunder; a key made of constants that is still not folded is suspicious."""

from __future__ import annotations

import os
import types

import jinja2
import jinja2.sandbox
import markupsafe
import pytest
from hypothesis import given, settings, strategies as st

from gguf_construct.format import spec
from gguf_construct.breaking import crafting
from gguf_construct.checker import check, jinja_folds, jinja_scan

from template_corpus import PopenProbe

LIMIT = 4096

# -- every fold against jinja2's own evaluation ----------------------------------------------------------------------
# positional and keyword arguments tried for each filter and method (the value comes from Hypothesis)
FILTER_CALLS = {
    "join": [(), ("-",), ((), {"d": ", "})],
    "format": [(), ("x",), (3,), ("a", "b")],
    "reverse": [()],
    "lower": [()],
    "upper": [()],
    "title": [()],
    "capitalize": [()],
    "trim": [(), ("_ ",)],
    "replace": [("_", "-"), ("", "."), ("a", "bb", 1), ("a", "", 0)],
    "string": [()],
    "e": [()],
    "escape": [()],
    "forceescape": [()],
    "safe": [()],
    "list": [()],
    "first": [()],
    "last": [()],
    "center": [(), (11,), (3,)],
    "truncate": [(), (5,), (6, True, ""), (4, False, "..", 0), ((), {"length": 3, "end": "", "leeway": 1})],
    "indent": [(), (2,), (">", True), (1, True, True), ((), {"first": True})],
    "wordwrap": [(), (4,), (3, False)],
    "striptags": [()],
    "urlencode": [()],
    "tojson": [(), (2,)],
    "sort": [(), (True,), (False, True)],
    "unique": [(), (True,)],
    "min": [(), (True,)],
    "max": [(), (True,)],
    "batch": [(1,), (2,), (3, "z")],
    "slice": [(1,), (2,), (3, "z")],
    "random": [()],
    "pprint": [()],
    "length": [()],
    "count": [()],
    "map": [("lower",), ("upper",), ("replace", "a", "b"), ("trim",), ("center", 5)],
}
METHOD_CALLS = {
    "lower": [()],
    "upper": [()],
    "title": [()],
    "capitalize": [()],
    "casefold": [()],
    "swapcase": [()],
    "strip": [(), ("_",)],
    "lstrip": [(), ("a_",)],
    "rstrip": [(), (" a",)],
    "removeprefix": [("_",)],
    "removesuffix": [("a",)],
    "split": [(), ("_",), ("a", 1)],
    "rsplit": [(), ("_", 1)],
    "partition": [("_",)],
    "rpartition": [("a",)],
    "splitlines": [(), (True,)],
    "center": [(9,), (12, "*")],
    "ljust": [(7,)],
    "rjust": [(7, ".")],
    "zfill": [(6,)],
    "expandtabs": [(), (3,)],
    "join": [(["x", "y"],), ([],)],
    "format": [(), ("z",), (1, "two")],
    "replace": [("a", "e"), ("_", "", 1)],
}

_ALPHABET = "ab_A Z-(<&\"'\n\té%{}0"
_TEXT = st.text(_ALPHABET, max_size=14)
_VALUE = st.one_of(_TEXT, st.lists(_TEXT, max_size=5), st.integers(-99, 999))


def _split(call) -> tuple[tuple, dict]:
    if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict):
        return call
    return tuple(call), {}


def _plain(value):
    """jinja2's result as the analysis's constants: sequences and iterators as tuples, markup as str."""
    if isinstance(value, markupsafe.Markup):
        return str(value)
    if isinstance(value, (list, tuple, types.GeneratorType)) or type(value).__name__.endswith("iterator"):
        return tuple(_plain(v) for v in value)
    return value


def _ours(value):
    return tuple(_ours(v) for v in value) if isinstance(value, (list, tuple)) else value


def _jinja(expression: str, value, args: tuple, kwargs: dict):
    """What a plain jinja2 Environment evaluates ``expression`` to, or the exception it raises."""
    env = jinja2.Environment()
    try:
        return _plain(env.compile_expression(expression, undefined_to_none=False)(v=value, a=list(args), k=kwargs))
    except Exception as exc:  # noqa: BLE001 - whatever the renderer raises, the fold must raise too
        return exc


def _agrees(ours, theirs, value) -> None:
    if ours is jinja_folds.UNKNOWN:
        return  # not modelled: the analysis takes any value
    if isinstance(theirs, jinja2.Undefined):
        raise AssertionError(f"jinja2 gives undefined where the fold gives {ours!r}")
    if isinstance(ours, jinja_folds.AnyOf):
        assert _plain(theirs) in {_ours(v) for v in ours.values}, (value, ours, theirs)
        return
    assert not isinstance(theirs, Exception), (value, ours, theirs)
    assert _ours(ours) == theirs, (value, ours, theirs)


def _fold_or_raise(fold, name, value, args, kwargs):
    try:
        return fold(name, value if not isinstance(value, list) else tuple(value), args, kwargs, LIMIT)
    except Exception as exc:  # noqa: BLE001
        return exc


def _check_calls(fold, name: str, expression: str, calls: list, value) -> None:
    """Each call of ``calls`` folds as jinja2 evaluates ``expression`` (``v``, ``a``, ``k``: value, arguments)."""
    for call in calls:
        args, kwargs = _split(call)
        ours = _fold_or_raise(fold, name, value, tuple(tuple(a) if isinstance(a, list) else a for a in args), kwargs)
        theirs = _jinja(expression, value, args, kwargs)
        if isinstance(ours, Exception):
            assert isinstance(theirs, Exception), (expression, value, call, ours, theirs)
            continue
        _agrees(ours, theirs, (expression, value, call))


@pytest.mark.parametrize("name", sorted(FILTER_CALLS))
@settings(max_examples=25, deadline=None)
@given(value=_VALUE)
def test_each_filter_folds_as_jinja2_evaluates(name, value):
    _check_calls(jinja_folds.fold_filter, name, f"v|{name}(*a, **k)", FILTER_CALLS[name], value)


@pytest.mark.parametrize("name", sorted(METHOD_CALLS))
@settings(max_examples=25, deadline=None)
@given(value=_TEXT)
def test_each_str_method_folds_as_python_evaluates(name, value):
    _check_calls(jinja_folds.fold_method, name, f"v.{name}(*a, **k)", METHOD_CALLS[name], value)


def test_the_fold_tables_are_the_spec_lists():
    values = spec.load_yaml("templates.yaml")["values"]
    assert set(values["filters"]["fold"]) == set(jinja_folds.FILTERS) == set(FILTER_CALLS)
    assert (
        {m for m, kind in values["methods"].items() if kind == "fold"} == set(jinja_folds.METHODS) == set(METHOD_CALLS)
    )


def test_folds_stay_within_the_length_budget():
    long_width = LIMIT + 1
    assert jinja_folds.fold_filter("center", "x", (long_width,), {}, LIMIT) is jinja_folds.UNKNOWN
    assert jinja_folds.fold_method("rjust", "x", (10**9,), {}, LIMIT) is jinja_folds.UNKNOWN
    assert jinja_folds.fold_filter("indent", "a\n" * 100, (100,), {}, LIMIT) is jinja_folds.UNKNOWN
    assert jinja_folds.fold_filter("replace", "a" * 1000, ("a", "bbbbb"), {}, LIMIT) is jinja_folds.UNKNOWN
    assert jinja_folds.fold_filter("batch", ("a",), (10**9,), {}, LIMIT) is jinja_folds.UNKNOWN
    assert jinja_folds.fold_filter("format", "%s" * 100, ("x" * 100,) * 100, {}, LIMIT) is jinja_folds.UNKNOWN
    # a template asking for a huge string folds nothing: a key left unknown on a string is an escape (issue #38)
    issues = jinja_scan.scan("{{ ''[('gi_' ~ 'frame')|center(10 ** 9)] }}")
    assert [i.kind for i in issues] == [jinja_scan.ESCAPE]


# -- keys hidden behind filters and methods, on a plain object (no escape global) ------------------------------------
# Each payload reaches os.popen through a generator's frame: (()|select) is a generator, its gi_frame's f_globals
# are jinja2.filters' module globals, whose `random` module holds `_os`.  Neither key is written out: each is
# computed by one filter or method, which only folding can see through.
_TAIL = "['random']['_os']['popen']('id').read()"
FOLDED_KEYS = {
    "center": ("'gi_frame'|center(8)", "'f_globals'|center(9)"),
    "tojson": ("('gi_frame'|tojson)[1:-1]", "('f_globals'|tojson)[1:-1]"),
    "split": ("'x gi_frame'.split()[1]", "('f_globals y'.split())|first"),
    "lstrip-rstrip": ("'xxgi_frame'.lstrip('x')", "'f_globals..'.rstrip('.')"),
    "truncate": (
        "'gi_framezzz'|truncate(8, true, '', 0)",
        "'f_globalsQQ'|truncate(9, killwords=true, end='', leeway=0)",
    ),
    "sort-max": ("['zz', 'gi_frame']|sort|first", "['f_globals', 'a']|max"),
    "random-unique": ("['gi_frame']|random", "['f_globals', 'F_GLOBALS']|unique|first"),
    "batch-slice": ("['gi_frame']|batch(1)|first|first", "['f_globals', 'x']|slice(2)|first|first"),
    "indent-wordwrap": ("'gi_frame'|indent", "'f_globals'|wordwrap"),
    "striptags-urlencode": ("'  gi_frame '|striptags", "'f_globals'|urlencode"),
    "forceescape-pprint": ("'gi_frame'|forceescape|string", "('f_globals'|pprint)[1:-1]"),
    "map-title": ("['GI_FRAME']|map('lower')|first", "('F_Globals'|title)[0]|lower ~ '_globals'"),
    "rjust-zfill": ("'gi_frame'.rjust(8)", "'f_globals'.zfill(9)"),
    "removeprefix-partition": ("'..gi_frame'.removeprefix('..')", "'f_globals|x'.partition('|')[0]"),
    "swapcase-casefold": ("'GI_FRAME'.swapcase()", "'F_GLOBALS'.casefold()"),
    "splitlines-rsplit": ("'gi_frame\\nx'.splitlines()[0]", "'x y f_globals'.rsplit(' ', 1)[1]"),
    "replace-count": ("'gi_frXme'|replace('X', 'a', 1)", "'f_glob.ls'.replace('.', 'a', 1)"),
}


def _frame_payload(first: str, second: str) -> str:
    return "{{ (()|select)[" + first + "][" + second + "]" + _TAIL + " }}"


def _renders_popen(env, text: str, monkeypatch) -> bool:
    probe = PopenProbe()
    monkeypatch.setattr(os, "popen", probe)
    try:
        env.from_string(text).render(messages=[{"role": "user", "content": "hi"}])
    except jinja2.TemplateError:
        pass
    return probe.calls == [("id",)]


@pytest.mark.parametrize("name", sorted(FOLDED_KEYS))
def test_a_key_behind_a_filter_is_folded_and_escapes(name, monkeypatch):
    first, second = FOLDED_KEYS[name]
    payload = _frame_payload(first, second)
    assert _renders_popen(jinja2.Environment(), payload, monkeypatch), payload  # the payload is real
    assert not _renders_popen(jinja2.sandbox.SandboxedEnvironment(), payload, monkeypatch)
    issues = jinja_scan.scan(payload)
    folded = {i.construct for i in issues if i.kind == jinja_scan.ESCAPE}
    assert "[...] = 'gi_frame'" in folded and "[...] = 'f_globals'" in folded, issues
    raw = crafting.carrier()
    raw.set("tokenizer.chat_template", "STRING", payload)
    report = check(raw.to_bytes())
    assert not report.valid and any(f.rule == "TPL-ESCAPE" for f in report.errors())


# -- internal attributes: a route out without a single underscore pair -----------------------------------------------
FRAME_ESCAPES = {
    "attribute": "{{ (()|select).gi_frame.f_globals" + _TAIL + " }}",
    "subscript": "{{ (()|map('string'))['gi_frame']['f_globals']" + _TAIL + " }}",
    "attr-filter": "{{ ((messages|selectattr('role'))|attr('gi_frame')|attr('f_globals'))" + _TAIL + " }}",
    "builtins": "{{ (()|reject).gi_frame.f_builtins['eval'](\"0\") ~ (()|select).gi_frame.f_globals" + _TAIL + " }}",
}


@pytest.mark.parametrize("name", sorted(FRAME_ESCAPES))
def test_frame_attributes_are_escapes(name, monkeypatch):
    payload = FRAME_ESCAPES[name]
    assert _renders_popen(jinja2.Environment(), payload, monkeypatch), payload
    assert not _renders_popen(jinja2.sandbox.SandboxedEnvironment(), payload, monkeypatch)
    problems = [i.problem for i in jinja_scan.scan(payload) if i.kind == jinja_scan.ESCAPE]
    assert any(p.startswith("internal attribute gi_frame") for p in problems), problems


def test_a_call_of_eval_by_subscript_is_an_escape():
    problems = [i.problem for i in jinja_scan.scan("{{ x['ev' ~ 'al']('1') }}") if i.kind == jinja_scan.ESCAPE]
    assert problems == ["call of eval"]


def test_a_constant_key_that_does_not_fold_is_an_escape_on_a_string():
    # bytes are not modelled: the key is made of constants only, yet unknown; on a string it is an escape route
    issues = jinja_scan.scan("{{ ''[('gi_' ~ 'frame').encode().decode()] }}")
    assert [i.kind for i in issues] == [jinja_scan.ESCAPE]
    # a key that comes from the render context is ordinary
    assert jinja_scan.scan("{% for m in messages %}{{ m[m.role|trim] }}{% endfor %}") == ()


@pytest.mark.parametrize(
    "text",
    [
        "{{ messages[0]['content']|center(20) }}{{ 'x'|truncate(10) }}{{ tools|tojson(indent=2) }}",
        "{% for m in messages %}{{ m.content.split('\\n')|first }}{{ m['role'].rjust(10) }}{% endfor %}",
        "{{ (messages|map(attribute='content')|list|sort|first)|wordwrap(20) }}{{ 'a,b'.split(',')|join('-') }}",
    ],
)
def test_ordinary_uses_of_the_folded_filters_are_silent(text):
    assert jinja_scan.scan(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "{{ ''[('a' * 4096)|list|map('center', 4096)|join] }}",
        "{{ ''[((('x' * 4096),) * 4096)|tojson] }}",
        "{{ ''[((('x' * 4096),) * 4096)|map('upper')|first] }}",
        "{{ ''[('a' * 4096)|list|batch(4096)|map('join')|first] }}",
    ],
)
def test_folding_builds_nothing_past_the_budget(text):
    """Each of these would build megabytes of strings; they fold to unknown keys instead (on a string: an
    escape), within the budget of spec/templates.yaml."""
    import tracemalloc

    tracemalloc.start()
    try:
        issues = jinja_scan.scan(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [i.kind for i in issues] == [jinja_scan.ESCAPE]
    assert peak < 4 << 20, peak


def test_folding_work_is_bounded_and_cannot_hide_a_key():
    """Folds are computed once per template, within the fold_work budget of spec/templates.yaml; a template
    that spends the budget first gets TPL-LIMIT, and a key made of constants that is left unfolded past it is an
    escape (no real template comes near the budget)."""
    burn = "{{ ('a b' * 1365)|wordwrap(1) }}" * 40
    walker = jinja_scan._Walker(jinja_scan._facts()["limits"])
    walker.run(jinja_scan._environment().parse(burn))
    assert walker.work_exhausted and walker.work <= jinja_scan._facts()["limits"]["fold_work"]
    issues = jinja_scan.scan(burn)
    assert [(i.kind, i.problem) for i in issues] == [(jinja_scan.LIMIT, "folding work past its budget")]
    hidden = burn + _frame_payload("'gi_frame'|center(8)", "'f_globals'|center(9)")
    kinds = {i.kind for i in jinja_scan.scan(hidden)}
    assert kinds == {jinja_scan.LIMIT, jinja_scan.ESCAPE}
    # each fold is computed once, whatever the number of passes: a template within the budget folds every key
    settled = (
        "{% set k = 'x' %}" * 3
        + ("{{ ('a b' * 1365)|wordwrap(1) }}" * 4)
        + _frame_payload("'gi_frame'|center(8)", "'f_globals'|center(9)")
    )
    constructs = {i.construct for i in jinja_scan.scan(settled)}
    assert "[...] = 'gi_frame'" in constructs


def test_a_key_built_around_a_dunder_stem_is_an_escape():
    """The underscore comes from the text of an object (a generator's repr), the rest is written out: the key is
    unknown to the analysis, but a piece that is a dunder stem says what it is for."""
    payload = "{% set u = (()|select|string)[24] %}{{ ()[u*2 ~ 'class' ~ u*2] }}"
    assert jinja2.Environment().from_string(payload).render() == "<class 'tuple'>"
    assert [i.kind for i in jinja_scan.scan(payload)] == [jinja_scan.ESCAPE]
    # ordinary keys built at render time on the context's data are silent, and so are keys from the context
    assert jinja_scan.scan("{{ m['tool_' ~ x] }}") == ()
    assert jinja_scan.scan("{% for m in messages %}{{ m[m.role] }}{% endfor %}") == ()


# -- property: any chain of value-preserving folds around a split name still shows the name ---------------------------
_WRAPS = [
    "(@)|center(3)",
    "(@)|trim",
    "(@).strip()",
    "(@)|string",
    "(@)|list|join",
    "(@)|reverse|reverse",
    "((@)|tojson)[1:-1]",
    "(@).split()|first",
    "[@]|first",
    "[@]|random",
    "[@, @]|unique|first",
    "['a', @]|sort|last",
    "[@]|max",
    "(@)|lower",
    "(@)|truncate(300, true, '', 0)",
    "(@)|indent",
    "(@)|wordwrap(300)",
    "(@)|urlencode",
    "(@).rjust(2)",
    "(@)|replace('Q', 'q')",
    "[@]|batch(1)|first|first",
    "'%s'|format(@)",
    "'{}'.format(@)",
    "(@)|map('string')|join",
    "(@).partition('|')[0]",
    "[@]|slice(1)|first|first",
    "(@).removesuffix('Q')",
    "(@).ljust(4)",
]


@st.composite
def _folded_name(draw, name: str):
    cuts = sorted(draw(st.sets(st.integers(1, len(name) - 1), max_size=3)))
    pieces = [name[a:b] for a, b in zip([0, *cuts], [*cuts, len(name)])]
    expr = " ~ ".join(repr(p) for p in pieces)
    for wrap in draw(st.lists(st.sampled_from(_WRAPS), max_size=4)):
        expr = wrap.replace("@", expr)
    return expr


@settings(max_examples=60, deadline=None)
@given(first=_folded_name("gi_frame"), second=_folded_name("f_globals"))
def test_any_chain_of_folds_keeps_the_key(first, second):
    env = jinja2.Environment()
    assert env.compile_expression(first)() == "gi_frame" and env.compile_expression(second)() == "f_globals"
    issues = jinja_scan.scan(_frame_payload(first, second))
    constructs = {i.construct for i in issues if i.kind == jinja_scan.ESCAPE}
    assert {"[...] = 'gi_frame'", "[...] = 'f_globals'"} <= constructs, (first, second, issues)
