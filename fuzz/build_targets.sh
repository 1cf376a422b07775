#!/bin/sh
# Build the coverage-guided fuzz targets of ggml's GGUF reader and llama.cpp's model loader (issue #39).
#
#   sh fuzz/build_targets.sh [WORKDIR]        (default WORKDIR: /tmp/gguf-cov-fuzz)
#
# 1. installs clang, libFuzzer and llvm (Debian packages; skipped when already there),
# 2. fetches the llama-cpp-python sdist with pip (vendor/llama.cpp holds ggml) and unpacks it under WORKDIR,
# 3. builds ggml + llama as static libraries with clang: libFuzzer's edge instrumentation, AddressSanitizer,
#    the UndefinedBehaviorSanitizer checks OSS-Fuzz uses (fatal), and llvm-cov's coverage mapping,
# 4. links the harnesses of fuzz/harness/ (ours) into WORKDIR/bin: ggml_reader, ggml_reader_spec, llama_loader,
#    llama_loader_spec (the *_spec ones carry the spec-aware custom mutator, embedding Python).
#
# Nothing is written into the repository.  The sources and binaries stay under WORKDIR (never commit them).
# Set GGUF_FUZZ_SKIP_LIBS=1 to relink the harnesses only (GGUF_FUZZ_TARGETS="llama_loader": one of them).  Runs under nice; uses one core (JOBS=1) by default.
set -eu
# (the libraries are configured with one core by default; JOBS=2 took 1403 s of wall time here under load)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${1:-/tmp/gguf-cov-fuzz}
JOBS=${JOBS:-1}
LLVM=${LLVM_VERSION:-14}
PY=${PYTHON:-$(command -v python3)}
SDIST_VERSION=${SDIST_VERSION:-0.3.36}
mkdir -p "$WORK/bin"
START=$(date +%s)

if ! command -v clang-$LLVM >/dev/null || [ ! -e /usr/lib/llvm-$LLVM/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  echo "== installing clang-$LLVM libfuzzer-$LLVM-dev llvm-$LLVM"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "clang-$LLVM" "libfuzzer-$LLVM-dev" "llvm-$LLVM" >/dev/null
fi
CC=clang-$LLVM
CXX=clang++-$LLVM

SRC=$WORK/llama_cpp_python-$SDIST_VERSION/vendor/llama.cpp
if [ ! -d "$SRC/ggml" ]; then
  echo "== fetching llama-cpp-python $SDIST_VERSION (sdist)"
  mkdir -p "$WORK/sdist"
  TARBALL=$WORK/sdist/llama_cpp_python-$SDIST_VERSION.tar.gz
  if [ ! -f "$TARBALL" ]; then
    # pip prepares the sdist's metadata, which fetches its build backend into an isolated env (a few minutes)
    "$PY" -m pip download --no-deps --no-binary :all: "llama-cpp-python==$SDIST_VERSION" -d "$WORK/sdist" -q
  fi
  tar xzf "$TARBALL" -C "$WORK"
fi

# OSS-Fuzz's UBSan checks less float-divide-by-zero: IEEE 754 defines it (clang leaves it out of
# -fsanitize=undefined too), and print_info's bits-per-weight of a vocabulary-only file divides 0.0 by 0 on every
# vocab load (fuzz/FINDINGS.md), which would end each campaign at its first seed.
UBSAN=array-bounds,bool,builtin,enum,integer-divide-by-zero,null,object-size,return,returns-nonnull-attribute,shift,signed-integer-overflow,unreachable,vla-bound,vptr
SAN="-fsanitize=address,$UBSAN -fno-sanitize-recover=$UBSAN"
COV="-fprofile-instr-generate -fcoverage-mapping"
FLAGS="-O1 -g -gline-tables-only -fno-omit-frame-pointer $SAN $COV"
BUILD=$WORK/build

if [ "${GGUF_FUZZ_SKIP_LIBS:-0}" != 1 ]; then
  echo "== building ggml + llama (static, instrumented) in $BUILD"
  nice -n 10 cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=$CC -DCMAKE_CXX_COMPILER=$CXX \
    -DCMAKE_C_FLAGS="$FLAGS -fsanitize=fuzzer-no-link" -DCMAKE_CXX_FLAGS="$FLAGS -fsanitize=fuzzer-no-link" \
    -DCMAKE_C_FLAGS_RELEASE="" -DCMAKE_CXX_FLAGS_RELEASE="" \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF -DGGML_BACKEND_DL=OFF \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$WORK/cmake.log" 2>&1
  nice -n 10 cmake --build "$BUILD" --target llama -j "$JOBS" >"$WORK/build.log" 2>&1 || {
    tail -30 "$WORK/build.log"; exit 1; }
fi
# gguf.cpp reads every value type and tensor type id into its enum variable before it checks the range: UBSan's
# enum check fires on the first unknown type id of any campaign (fuzz/FINDINGS.md), so that one object is rebuilt
# without it; the loader keeps every check.
if [ "${GGUF_FUZZ_SKIP_LIBS:-0}" != 1 ]; then
  OBJ=ggml/src/CMakeFiles/ggml-base.dir/gguf.cpp.o
  (cd "$BUILD" && nice -n 10 sh -c "$(ninja -t commands $OBJ | tail -1) -fno-sanitize=enum" &&
   ar rcs "$(find . -name libggml-base.a | head -1)" $OBJ)
fi
LIBS_DONE=$(date +%s)

INC="-I$SRC/include -I$SRC/ggml/include -I$SRC/ggml/src -I$SRC/src"
LIBDIR=$(find "$BUILD" -name 'libllama.a' -printf '%h\n' | head -1)
GLIBS=$(find "$BUILD/ggml" -name 'libggml*.a' | sort -r | tr '\n' ' ')
PYINC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
PYLIB=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
PYVER=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LDVERSION"))')
LINK="-fsanitize=fuzzer $SAN $COV -Wl,--wrap=abort -lpthread -ldl -lm"
EMBED="-DGGUF_SPEC_MUTATOR -I$PYINC -L$PYLIB -lpython$PYVER -Wl,-rpath,$PYLIB"

echo "== linking harnesses into $WORK/bin"
for target in ${GGUF_FUZZ_TARGETS:-ggml_reader llama_loader}; do
  for arm in "" _spec; do
    EXTRA=""
    [ "$arm" = _spec ] && EXTRA="$EMBED"
    if [ "$target" = ggml_reader ]; then OBJS="$GLIBS"; else OBJS="$LIBDIR/libllama.a $GLIBS"; fi
    nice -n 10 $CXX -std=c++17 $FLAGS $INC "$HERE/harness/$target.cpp" "$HERE/harness/common.cpp" \
      -o "$WORK/bin/$target$arm" $OBJS $LINK $EXTRA
  done
done
END=$(date +%s)
cat >"$WORK/bin/build.json" <<EOF
{"sdist": "llama-cpp-python $SDIST_VERSION", "compiler": "$($CXX --version | head -1)", "jobs": $JOBS,
 "libraries_seconds": $((LIBS_DONE - START)), "harnesses_seconds": $((END - LIBS_DONE)), "total_seconds": $((END - START)),
 "skipped_libraries": "${GGUF_FUZZ_SKIP_LIBS:-0}", "source": "$SRC"}
EOF
echo "== built in $((END - START)) s: $(ls "$WORK/bin" | tr '\n' ' ')"
