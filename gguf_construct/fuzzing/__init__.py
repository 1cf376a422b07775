"""Fuzzing GGUF readers against the spec: ``gguf-construct fuzz --target TARGET``.

The runner (:mod:`~gguf_construct.fuzzing.runner`) generates valid and labelled-invalid files, runs the target
on each (isolated in a subprocess with a timeout and a memory limit), and compares with the oracle
(:mod:`~gguf_construct.fuzzing.oracle`: the checker's verdict under the chosen profile, and our decoded values
for files it accepts).  Disagreements are counted per class — false accepts, false rejects, crashes, hangs,
value mismatches — minimised by delta debugging and written to ``--out`` as ``.gguf`` reproducers plus
``summary.json``.

Targets (:mod:`~gguf_construct.fuzzing.targets`): ``gguf-py``, ``cmd:TEMPLATE`` (``{file}`` is the path),
``python:module:function``.

The answer shape
----------------
A target that accepts a file may print (``cmd:``) or return (``python:``) one JSON object; its values are then
compared with ours.  Every member is optional; types are names (as in spec/gguf.yaml and spec/tensor_types) or
numeric ids::

    {"metadata": [
        {"key": "general.architecture", "type": "STRING", "value": "llama"},
        {"key": "llama.context_length", "type": "UINT32", "value": 4096},
        {"key": "tokenizer.ggml.scores", "type": "ARRAY", "item_type": "FLOAT32", "value": [0.0, -1.5]}],
     "tensors": [
        {"name": "token_embd.weight", "type": "Q4_K", "shape": [4096, 32000], "offset": 0}]}

``shape`` is in ggml order (ne[0] first), ``offset`` relative to the data section.  Floats that JSON cannot
hold are the strings "nan", "inf", "-inf"; bools are true/false (or 0/1).  A key without ``value`` has only its
type compared.  This is the shape of ``gguf-construct dump --json`` (header members are ignored).
"""

from __future__ import annotations

__all__: list[str] = []
