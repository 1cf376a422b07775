#!/bin/sh
# The suite as one release file for readers' authors who have none of this project: the suite's files,
# manifest.json, cases.tsv and the two scoring scripts (score.mjs, score.c) in gguf-suite/, packed reproducibly
# (sorted names, no times or owners), so the same checkout gives the same bytes.  Usage, from the repository root:
#   sh readers/release.sh OUT_DIR        -> OUT_DIR/gguf-suite-<digest>.tar.gz (and its .sha256)
set -eu
OUT=${1:?usage: release.sh OUT_DIR}
GC=${GGUF_CONSTRUCT:-.venv/bin/gguf-construct}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$GC" suite write "$work/gguf-suite" > /dev/null
cp readers/examples/score.mjs readers/examples/score.c "$work/gguf-suite/"
digest=$(sed -n 's/^ "digest": "\(................\).*/\1/p' "$work/gguf-suite/manifest.json")
mkdir -p "$OUT"
name="gguf-suite-$digest.tar.gz"
tar -C "$work" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=go-w -cf - gguf-suite \
  | gzip -n -9 > "$OUT/$name"
(cd "$OUT" && sha256sum "$name" > "$name.sha256")
echo "$OUT/$name"
