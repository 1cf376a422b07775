#!/bin/sh
# Score every installed reader on the suite and record the runs in readers/results.json, then render
# docs/readers.md and docs/readers.svg.  Usage (from the repository root, after readers/install.sh):
#   sh readers/run_all.sh SUITE_DIR [LIBGGML_BASE_SO LIBLLAMA_SO]
# Readers that are not installed are skipped; an earlier run of a reader is replaced.  Set
# LLAMA_CPP_PYTHON_VERSION to the release the two libraries come from, DETAILS to a folder for each run's
# per-case JSON (messages and value differences, for triage), RESULTS to record elsewhere than
# readers/results.json (then docs/readers.md is not rendered; .ci/readers does this).
set -u
RESULTS=${RESULTS:-readers/results.json}
SUITE=${1:?usage: run_all.sh SUITE_DIR [LIBGGML_BASE_SO LIBLLAMA_SO]}
GC=${GGUF_CONSTRUCT:-.venv/bin/gguf-construct}
PY=${PYTHON:-.venv/bin/python}
run() {  # name version adapter profile target
  echo "== $1 $2" >&2
  out=/dev/null
  [ -n "${DETAILS:-}" ] && out="$DETAILS/$1.json"
  "$GC" suite run "$SUITE" --quiet --json --record "$1" --results "$RESULTS" --reader-version "$2" --adapter "$3" --profile "$4" \
    --target "$5" --timeout "${TIMEOUT:-20}" > "$out"
  "$PY" -c "import json, sys; from gguf_construct.suite.matrix import counts_line; \
print(counts_line(json.load(open(sys.argv[1]))['readers'][sys.argv[2]]['summary']))" "$RESULTS" "$1" >&2
}
pyver() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null; }
npmver() { node -p "require('./readers/node_modules/$1/package.json').version" 2>/dev/null; }

v=$(pyver gguf) && run gguf-py "$v" "gguf.GGUFReader (gguf_construct.fuzzing.targets)" spec gguf-py
v=$(pyver gguf-parser) && run gguf-parser "$v" "gguf_parser.GGUFParser (readers/python/gguf_parser_reader.py)" \
  spec python:readers.python.gguf_parser_reader:read
v=$(pyver mlx) && run mlx "$v" "mlx.core.load (readers/python/mlx_reader.py)" spec \
  python:readers.python.mlx_reader:read
v=$(npmver @huggingface/gguf) && run huggingface-gguf "$v" "gguf() of @huggingface/gguf (readers/js/huggingface-gguf.mjs)" \
  spec "cmd:node readers/js/huggingface-gguf.mjs {file}"
v=$(npmver hyllama) && run hyllama "$v" "ggufMetadata() of hyllama (readers/js/hyllama.mjs)" spec \
  "cmd:node readers/js/hyllama.mjs {file}"
v=$(npmver node-llama-cpp) && run node-llama-cpp "$v" "readGgufFileInfo() of node-llama-cpp (readers/js/node-llama-cpp.mjs)" \
  spec "cmd:node readers/js/node-llama-cpp.mjs {file}"
if [ $# -ge 3 ]; then
  v=${LLAMA_CPP_PYTHON_VERSION:-unknown}  # the llama-cpp-python release the libraries were built from
  run ggml "llama-cpp-python $v" "gguf_init_from_file of libggml-base (gguf_construct.fuzzing.ggml_target)" ggml "ggml:$2"
  run llama.cpp "llama-cpp-python $v" "llama_model_load_from_file of libllama, vocab and weights (gguf_construct.fuzzing.llama_target)" \
    llama.cpp "llama:$3"
fi
[ "$RESULTS" = readers/results.json ] && "$GC" suite matrix
exit 0
