"""Chat templates for the template rules' tests, written for these tests from the published prompt formats.

REAL: templates in the style real models ship (the prompt formats of Llama 2/3, ChatML/Qwen, Gemma, Mistral, Phi-3,
DeepSeek, Command-R, Zephyr, and tool-use templates with macros, loops, namespaces and raise_exception): the
template rules must report nothing on them.  MALICIOUS: injection payloads, plain and obfuscated: each must be a
TPL-ESCAPE.  HELD_OUT_*: a second set written separately, used only by the measurement in
benchmarks/bench_templates.py and by one test, not while writing the rules.
"""

LLAMA2 = """{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}\
{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}\
{% set system_message = false %}{% endif %}{% for message in loop_messages %}\
{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}\
{% if loop.index0 == 0 and system_message != false %}\
{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}\
{% else %}{% set content = message['content'] %}{% endif %}\
{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}\
{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"""

LLAMA3 = """{% set loop_messages = messages %}{% for message in loop_messages %}\
{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + \
'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}\
{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"""

LLAMA31_TOOLS = """{{- bos_token }}
{%- if custom_tools is defined %}{%- set tools = custom_tools %}{%- endif %}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if not date_string is defined %}{%- set date_string = "26 Jul 2024" %}{%- endif %}
{%- if not tools is defined %}{%- set tools = none %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\\n\\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}{{- ", " }}{%- endif %}
            {%- endfor %}
            {{- ")" }}
        {%- else %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}{{- "<|eom_id|>" }}{%- else %}{{- "<|eot_id|>" }}{%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"""

CHATML = """{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + \
'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"""

QWEN25_TOOLS = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object within <tool_call></tool_call> tags<|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}"""

GEMMA = """{{ bos_token }}{% if messages[0]['role'] == 'system' %}\
{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}\
{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}\
{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}\
{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}\
{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"""

MISTRAL = """{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}"""

PHI3 = """{% for message in messages %}{% if message['role'] == 'system' %}\
{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}\
{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'assistant' %}\
{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}\
{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"""

DEEPSEEK_R1 = """{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}\
{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}\
{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}\
{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}\
{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}\
{{'<｜User｜>' + message['content']}}{%- endif %}\
{%- if message['role'] == 'assistant' and message['content'] is none %}{%- set ns.is_tool = false -%}\
{%- for tool in message['tool_calls']%}{%- if not ns.is_first %}\
{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + \
tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + \
'<｜tool▁call▁end｜>'}}{%- set ns.is_first = true -%}{%- else %}\
{{'\\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + \
'\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}\
{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{%- endif %}\
{%- if message['role'] == 'assistant' and message['content'] is not none %}{%- if ns.is_tool %}\
{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}\
{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}\
{% set content = content.split('</think>')[-1] %}{% endif %}\
{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}\
{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}\
{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}\
{%- set ns.is_output_first = false %}{%- else %}\
{{'\\n<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}\
{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}\
{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\\n'}}{% endif %}"""

HERMES_TOOL_MACROS = """{%- macro json_to_python_type(json_spec) %}
{%- set basic_type_map = {
    "string": "str",
    "number": "float",
    "integer": "int",
    "boolean": "bool"
} %}
{%- if basic_type_map[json_spec.type] is defined %}
    {{- basic_type_map[json_spec.type] }}
{%- elif json_spec.type == "array" %}
    {{- "list[" +  json_to_python_type(json_spec|items) + "]"}}
{%- elif json_spec.type == "object" %}
    {%- if json_spec.additionalProperties is defined %}
        {{- "dict[str, " + json_to_python_type(json_spec.additionalProperties) + ']'}}
    {%- else %}
        {{- "dict" }}
    {%- endif %}
{%- elif json_spec.type is iterable %}
    {{- "Union[" }}
    {%- for t in json_spec.type %}
      {{- json_to_python_type({"type": t}) }}
      {%- if not loop.last %}{{- "," }}{%- endif %}
    {%- endfor %}
    {{- "]" }}
{%- else %}
    {{- "Any" }}
{%- endif %}
{%- endmacro %}

{{- bos_token }}
{{- '<|im_start|>system\\nYou are a function calling AI model. <tools> ' }}
{%- for tool in tools %}
    {%- if tool.function is defined %}{%- set tool = tool.function %}{%- endif %}
    {{- '{"type": "function", "function": ' }}
    {{- '{"name": "' + tool.name + '", ' }}
    {{- '"description": "' + tool.name + '(' }}
    {%- for param_name, param_fields in tool.parameters.properties|items %}
        {{- param_name + ": " + json_to_python_type(param_fields) }}
        {%- if not loop.last %}{{- ", " }}{%- endif %}
    {%- endfor %}
    {{- ")" }}
    {%- if tool.return is defined %}{{- " -> " + json_to_python_type(tool.return) }}{%- endif %}
    {{- " - " + tool.description + "\\n\\n" }}
    {%- for param_name, param_fields in tool.parameters.properties|items %}
        {%- if loop.first %}{{- "    Args:\\n" }}{%- endif %}
        {{- "        " + param_name + "(" + json_to_python_type(param_fields) + "): " + param_fields.description|trim }}
    {%- endfor %}
    {{- '"' }}
    {{- ', "parameters": ' }}
    {%- if tool.parameters.properties | length == 0 %}{{- "{}" }}{%- else %}{{- tool.parameters|tojson }}{%- endif %}
    {{- "}" }}
    {%- if not loop.last %}{{- "\\n" }}{%- endif %}
{%- endfor %}
{{- " </tools><|im_end|>\\n" }}
{%- for message in messages %}
    {%- if message.role == "user" or message.role == "system" or (message.role == "assistant" and message.tool_calls is not defined) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- for tool_call in message.tool_calls %}
            {{- '\\n<tool_call>\\n' }}
            {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
            {{- '{' }}{{- '"name": "' }}{{- tool_call.name }}{{- '"' }}
            {{- ', '}}
            {%- if tool_call.arguments is defined %}{{- '"arguments": ' }}
                {%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments|tojson }}{%- endif %}
            {%- endif %}
            {{- '}' }}
            {{- '\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.previtem and loop.previtem.role != "tool" %}{{- '<|im_start|>tool\\n' }}{%- endif %}
        {{- '<tool_response>\\n' }}{{- message.content }}
        {%- if not loop.last %}{{- '\\n</tool_response>\\n' }}{%- else %}{{- '\\n</tool_response>' }}{%- endif %}
        {%- if not loop.last and loop.nextitem.role != "tool" %}{{- '<|im_end|>' }}
        {%- elif loop.last %}{{- '<|im_end|>' }}{%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

ZEPHYR = """{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + \
eos_token }}{% elif message['role'] == 'system' %}{{ '<|system|>\\n' + message['content'] + eos_token }}\
{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n'  + message['content'] + eos_token }}{% endif %}\
{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}{% endfor %}"""

COMMAND_R = """{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}\
{% set system_message = messages[0]['content'] %}{% elif false == true %}{% set loop_messages = messages %}\
{% set system_message = 'You are Command-R.' %}{% else %}{% set loop_messages = messages %}\
{% set system_message = false %}{% endif %}{% if system_message != false %}\
{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + system_message + '<|END_OF_TURN_TOKEN|>' }}{% endif %}\
{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}\
{% set content = message['content'] %}{% if message['role'] == 'user' %}\
{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content.strip() + '<|END_OF_TURN_TOKEN|>' }}\
{% elif message['role'] == 'assistant' %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + \
'<|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}\
{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %}"""

GRANITE_LOOP_CONTROLS = """{%- set ns = namespace(last_user=-1) %}
{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}
{%- for message in messages %}
    {%- if message.role == 'system' and not loop.first %}{%- continue %}{%- endif %}
    {{- '<|start_of_role|>' + message.role + '<|end_of_role|>' + message.content + '<|end_of_text|>\\n' }}
    {%- if loop.index0 > 100 %}{%- break %}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_of_role|>assistant<|end_of_role|>' }}{%- endif %}"""

REAL = {
    "llama2": LLAMA2,
    "llama3": LLAMA3,
    "llama3.1-tools": LLAMA31_TOOLS,
    "chatml": CHATML,
    "qwen2.5-tools": QWEN25_TOOLS,
    "gemma": GEMMA,
    "mistral": MISTRAL,
    "phi3": PHI3,
    "deepseek-r1": DEEPSEEK_R1,
    "hermes-tool-macros": HERMES_TOOL_MACROS,
    "zephyr": ZEPHYR,
    "command-r": COMMAND_R,
    "granite-loop-controls": GRANITE_LOOP_CONTROLS,
}

MALICIOUS = {
    "mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "attr-filter": "{{ ''|attr('__class__')|attr('__mro__') }}",
    "concat": "{{ ''|attr('__cla' ~ 'ss__') }}",
    "plus": "{{ lipsum|attr('__glo' + 'bals__') }}",
    "percent-format": "{{ ''|attr('%s%sclass%s%s'|format('_', '_', '_', '_')) }}",
    "char-format": "{{ ''|attr('%c%cclass%c%c'|format(95, 95, 95, 95)) }}",
    "str-format-method": "{{ ''|attr('{0}{0}class{0}{0}'.format('_')) }}",
    "join-filter": "{{ ''|attr(['__', 'class__']|join) }}",
    "join-method": "{{ ''|attr(''.join(['__', 'class', '__'])) }}",
    "reverse-slice": "{{ ''|attr('__ssalc__'[::-1]) }}",
    "reverse-filter": "{{ ''|attr('__ssalc__'|reverse) }}",
    "repeat": "{{ ''|attr('_' * 2 ~ 'class' ~ '_' * 2) }}",
    "set-variable": "{% set u = '__' %}{% set c = u ~ 'class' ~ u %}{{ ''|attr(c) }}",
    "set-chain": "{% set a = 'glo' %}{% set b = a ~ 'bals' %}{{ lipsum|attr('__' ~ b ~ '__') }}",
    "hex-escapes": "{{ ''|attr('\\x5f\\x5fclass\\x5f\\x5f') }}",
    "dict-keys": "{{ ''|attr(dict(__class__=1)|list|first) }}",
    "subscript": "{{ lipsum['__globals__']['os'].popen('id').read() }}",
    "subscript-concat": "{{ cycler['__in' ~ 'it__']['__glo' ~ 'bals__'] }}",
    "cycler-globals": "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "joiner-globals": "{{ joiner.__init__.__globals__.os.popen('id').read() }}",
    "lipsum-globals": "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "namespace-globals": "{{ namespace.__init__.__globals__.os.system('id') }}",
    "self-context": "{{ self._TemplateReference__context.cycler.__init__.__globals__.os }}",
    "request-style": "{{ request.application.__globals__.__builtins__.__import__('os').popen('id').read() }}",
    "config-style": "{{ config.__class__.__init__.__globals__['os'].popen('id').read() }}",
    "range-builtins": "{{ range.__init__.__globals__ }}",
    "map-attr": "{{ [lipsum]|map('attr', '__globals__')|list }}",
    "map-attribute": "{{ [lipsum]|map(attribute='__globals__')|list }}",
    "selectattr": "{{ messages|selectattr('__class__')|list }}",
    "computed-attr": "{% for m in messages %}{{ m|attr(m['content']) }}{% endfor %}",
    "macro-attr": "{% macro g(o, n) %}{{ o|attr(n) }}{% endmacro %}{{ g(lipsum, messages[0].content) }}",
    "loop-var-attr": "{% for n in ['__globals__'] %}{{ lipsum|attr(n) }}{% endfor %}",
    "eval-call": "{{ eval('1+1') }}",
    "open-call": "{{ open('/etc/passwd').read() }}",
    "builtins-import": "{{ x.__builtins__.__import__('subprocess').check_output('id') }}",
    "whitespace-control": "{%- for m in messages -%}{{- ''.__class__ -}}{%- endfor -%}",
    "inside-if": "{% if false %}{{ ''.__class__.__base__.__subclasses__() }}{% endif %}",
    "inside-macro": "{% macro x() %}{{ cycler.__init__ }}{% endmacro %}",
    "inside-set-block": "{% set x %}{{ lipsum.__globals__ }}{% endset %}",
    "in-filter-block": "{% filter upper %}{{ ''.__class__ }}{% endfilter %}",
    "unparsable-with-dunder": "{% reasoning %}{{ ''.__class__.__mro__ }}{% endreasoning %}",
    "str-format-field": "{{ '{0.__init__.__globals__[os]}'.format(cycler) }}",
}

# written after the rules, to measure them on templates they were not tuned on
HELD_OUT_REAL = {
    "vicuna": """{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}\
{% for message in messages %}{% if message['role'] == 'user' %}{{ 'USER: ' + message['content'] + '\\n' }}\
{% elif message['role'] == 'assistant' %}{{ 'ASSISTANT: ' + message['content'] + eos_token + '\\n' }}{% endif %}\
{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}""",
    "alpaca": """{{ (messages|selectattr('role', 'equalto', 'system')|list|last).content|trim if \
(messages|selectattr('role', 'equalto', 'system')|list) else '' }}{% for message in messages %}\
{% if message['role'] == 'user' %}### Instruction:
{{ message['content']|trim }}
{% elif message['role'] == 'assistant' %}### Response:
{{ message['content']|trim }}{{ eos_token }}
{% endif %}{% endfor %}{% if add_generation_prompt %}### Response:
{% endif %}""",
    "openchat": """{{ bos_token }}{% for message in messages %}{{ 'GPT4 Correct ' + message['role'].title() + ': ' + \
message['content'] + '<|end_of_turn|>'}}{% endfor %}{% if add_generation_prompt %}{{ 'GPT4 Correct Assistant:' }}\
{% endif %}""",
    "falcon3": """{%- if tools %}{{- '<|system|>\\n' }}{%- for tool in tools %}{{- tool | tojson(indent=2) }}\
{%- endfor %}{%- endif %}{%- for message in messages %}{%- if message['role'] == 'system' %}\
{{- '<|system|>\\n' + message['content'] + '\\n' }}{%- elif message['role'] == 'user' %}\
{{- '<|user|>\\n' + message['content'] + '\\n' }}{%- elif message['role'] == 'assistant' %}\
{%- if not loop.last %}{{- '<|assistant|>\\n' + message['content'] + eos_token + '\\n' }}{%- else %}\
{{- '<|assistant|>\\n' + message['content'] + eos_token }}{%- endif %}{%- endif %}\
{%- if loop.last and add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- endif %}{%- endfor %}""",
    "smollm-sorted": """{%- for message in messages | sort(attribute='index') %}{{- '<|im_start|>' + message.role + \
'\\n' + message.content | trim + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}\
{{- '<|im_start|>assistant\\n' }}{%- endif %}""",
    "glm-groupby": """[gMASK]<sop>{%- for role, group in messages | groupby('role') %}{%- for m in group %}\
<|{{ role }}|>\\n{{ m.content }}{%- endfor %}{%- endfor %}{%- if add_generation_prompt %}<|assistant|>{%- endif %}""",
}

HELD_OUT_MALICIOUS = {
    "attr-chain-upper": "{{ ''|attr('__CLASS__'|lower) }}",
    "replace": "{{ ''|attr('XXclassXX'|replace('X', '_')) }}",
    "cond-expr": "{{ ''|attr('__class__' if true else 'x') }}",
    "nested-join": "{{ lipsum|attr(('_' * 2, 'globals', '_' * 2)|join) }}",
    "tuple-join-sep": "{{ lipsum|attr(['', 'globals', '']|join('__')) }}",
    "os-environ": "{{ lipsum.__globals__.os.environ }}",
    "getattr-popen": "{{ x.popen('id') }}",
    "sort-attribute": "{{ messages|sort(attribute='__class__') }}",
    "mangled": "{{ self._TemplateReference__context }}",
    "subscript-reverse": "{{ lipsum['__slabolg__'[::-1]] }}",
}

# issue #25: payloads whose key reaches a subscript through a binding (two of each form), with the render context
# they need to escape.  Each ends in os.popen('id'): tests/test_template_taint.py renders them with os.popen
# replaced by a marker (never running a command) to prove they escape a plain Environment and not the sandbox.
_POPEN = "['os']['popen']('id').read()"
_MSG = {"messages": [{"role": "user", "content": "__globals__"}]}
_TWO = {"messages": [{"role": "__init__", "content": "__globals__"}, {"role": "user", "content": "__globals__"}]}
FOLLOWED = {
    "namespace-constructor": (
        "{% set ns = namespace(g='__glo'~'bals__', m='o'~'s', f='po'~'pen') %}"
        "{{ lipsum[ns.g][ns.m][ns.f]('id').read() }}",
        {},
    ),
    "namespace-constructor-two-hops": (
        "{% set ns = namespace(a='__in' ~ 'it__', b='__glo' ~ 'bals__') %}{{ cycler[ns.a][ns.b]" + _POPEN + " }}",
        {},
    ),
    "namespace-assigned": (
        "{% set ns = namespace() %}{% set ns.k = '__glo' %}{% set ns.k = ns.k ~ 'bals__' %}"
        "{{ lipsum[ns.k]" + _POPEN + " }}",
        {},
    ),
    "namespace-assigned-in-loop": (
        "{% set ns = namespace(p='__') %}{% for m in messages %}"
        "{% set ns.p = ns.p ~ m.content[2:] %}{% endfor %}"
        "{{ lipsum[ns.p]" + _POPEN + " }}",
        _MSG,
    ),
    "macro-argument": (
        "{% macro get(o, k) %}{{ o[k]" + _POPEN + " }}{% endmacro %}{{ get(lipsum, '__glo' ~ 'bals__') }}",
        {},
    ),
    "macro-keyword-and-default": (
        "{% macro get(k='__glo' ~ 'bals__', o=none) %}{{ o[k]" + _POPEN + " }}{% endmacro %}{{ get(o=lipsum) }}",
        {},
    ),
    "loop-variable": ("{% for k in ['__glo' ~ 'bals__'] %}{{ lipsum[k]" + _POPEN + " }}{% endfor %}", {}),
    "loop-unpacked": (
        "{% for a, b in [('__in' ~ 'it__', '__glo' ~ 'bals__')] %}{{ cycler[a][b]" + _POPEN + " }}{% endfor %}",
        {},
    ),
    "dict-value": ("{% set d = {'g': '__glo' ~ 'bals__'} %}{{ lipsum[d.g]" + _POPEN + " }}", {}),
    "dict-items": (
        "{% set d = dict(g='__glo' ~ 'bals__') %}{% for k, v in d|items %}{{ lipsum[v]" + _POPEN + " }}{% endfor %}",
        {},
    ),
    "with": ("{% with k = '__glo' ~ 'bals__' %}{{ lipsum[k]" + _POPEN + " }}{% endwith %}", {}),
    "with-context": ("{% with f = lipsum, k = messages[0].content %}{{ f[k]" + _POPEN + " }}{% endwith %}", _MSG),
    "caller-output": (
        "{% macro run() %}{{ lipsum[caller()]" + _POPEN + " }}{% endmacro %}"
        "{% call run() %}__glo{{ 'bals' }}__{% endcall %}",
        {},
    ),
    "caller-argument": (
        "{% macro run() %}{{ caller('__glo' ~ 'bals__') }}{% endmacro %}"
        "{% call(k) run() %}{{ lipsum[k]" + _POPEN + " }}{% endcall %}",
        {},
    ),
    "block-set": ("{% set k %}__glo{{ 'bals' }}__{% endset %}{{ lipsum[k]" + _POPEN + " }}", {}),
    "block-set-with-if": (
        "{% set a %}__in{{ 'it' }}__{% endset %}{% set b %}{% if messages %}__globals__{% endif %}"
        "{% endset %}{{ cycler[a][b]" + _POPEN + " }}",
        {},
    ),
    "macro-output": (
        "{% macro a() %}__in{{ 'it' }}__{% endmacro %}{% macro b() %}__glo{{ 'bals' }}__{% endmacro %}"
        "{{ cycler[a()][b()]" + _POPEN + " }}",
        {},
    ),
    "context-key": ("{{ lipsum[messages[0]['content']]" + _POPEN + " }}", _MSG),
    "context-keys-in-loop": (
        "{% for m in messages[:1] %}{{ cycler[m.role][m.content]" + _POPEN + " }}{% endfor %}",
        _TWO,
    ),
    "unmodelled-filter": ("{{ lipsum[messages|map(attribute='content')|first]" + _POPEN + " }}", _MSG),
    "unmodelled-filter-on-joiner": (
        "{{ joiner[messages[0].role|urlencode][messages[1].content|urlencode]" + _POPEN + " }}",
        _TWO,
    ),
    "past-the-value-budget": (
        "".join(f"{{% set v{i} = '' if messages else 'x{i}' %}}" for i in range(18))
        + "{{ lipsum['__glo' ~ "
        + " ~ ".join(f"v{i}" for i in range(18))
        + " ~ 'bals__']"
        + _POPEN
        + " }}",
        _MSG,
    ),
    "past-the-length-budget": ("{{ lipsum['__glo' ~ ('' * 1000000) ~ 'bals__']" + _POPEN + " }}", {}),
    "global-alias": ("{% set f = lipsum %}{% set k = messages[0].content %}{{ f[k]" + _POPEN + " }}", _MSG),
    "global-in-a-list": (
        "{% set r = [cycler] %}{{ (r|first)[messages[0].role][messages[0].content]" + _POPEN + " }}",
        _TWO,
    ),
}

# the same binding forms on ordinary data: dynamic keys, namespaces, macros, loops, with, call blocks (silent)
FOLLOWED_BENIGN = {
    "namespace-dict-by-role": (
        "{% set ns = namespace(roles={'user': 'U', 'assistant': 'A'}) %}"
        "{% for m in messages %}{{ ns.roles[m.role] }}{% endfor %}"
    ),
    "namespace-index": (
        "{% set ns = namespace(last=-1) %}{% for m in messages %}{% set ns.last = loop.index0 %}"
        "{% endfor %}{{ messages[ns.last].content }}"
    ),
    "macro-field": (
        "{% macro field(msg, k) %}{{ msg[k] }}{% endmacro %}{% for m in messages %}"
        "{{ field(m, 'content') }}{{ field(m, m.role) if m.role in m else '' }}{% endfor %}"
    ),
    "macro-default": (
        "{% macro show(m, key='content') %}{{ m[key]|trim }}{% endmacro %}"
        "{% for m in messages %}{{ show(m) }}{% endfor %}"
    ),
    "loop-keys": "{% for k in ['role', 'content'] %}{{ messages[0][k] }}{% endfor %}",
    "loop-items": ("{% for m in messages %}{% for k, v in m|items %}{{ k }}={{ m[k] }}{{ v }}{% endfor %}{% endfor %}"),
    "dict-lookup": (
        "{% set prefix = {'user': '<u>', 'assistant': '<a>'} %}{% for m in messages %}"
        "{{ prefix[m.role] }}{{ m.content }}{% endfor %}"
    ),
    "with-key": "{% with k = 'content' %}{{ messages[0][k] }}{% endwith %}",
    "caller-wrap": (
        "{% macro wrap() %}<b>{{ caller() }}</b>{% endmacro %}{% call wrap() %}{{ messages[0].content }}{% endcall %}"
    ),
    "caller-argument": (
        "{% macro each() %}{% for m in messages %}{{ caller(m) }}{% endfor %}{% endmacro %}"
        "{% call(m) each() %}{{ m['content'] }}{{ m[m.role] if m.role in m else '' }}{% endcall %}"
    ),
    "joiner-and-cycler": (
        "{% set sep = joiner(', ') %}{% set c = cycler('odd', 'even') %}"
        "{% for m in messages %}{{ sep() }}{{ c.next() }}{{ m.content }}{% endfor %}"
    ),
    "block-set-key": ("{% set k %}content{% endset %}{% for m in messages %}{{ m[k|trim] }}{% endfor %}"),
    "self-block": (
        "{% block preamble %}U{% endblock %}{% for m in messages %}{{ m.content }}{% endfor %}{{ self.preamble() }}"
    ),
}


class PopenProbe:
    """Stands in for os.popen in the tests that render payloads: records the call, runs nothing."""

    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        return self

    def read(self) -> str:
        return "probe-output"

    def __str__(self) -> str:
        return "probe-marker"
