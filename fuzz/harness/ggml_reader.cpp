// ggml's GGUF reader under libFuzzer (fuzz/build_targets.sh): every read path of the vendored gguf.cpp --
// from memory (gguf_init_from_buffer) and from a file (gguf_init_from_file), each with no_alloc true and false
// (false: the tensor data is loaded into a ggml context) -- and, on success, every getter over the result
// (keys, values, arrays, strings, tensor infos, the serialised meta data).
// GGUF_HARNESS_MODE=ossfuzz: the file path with no_alloc=false only, as a program loads a file.
#include "common.h"

#include "ggml.h"
#include "gguf.h"
#include "ggml-impl.h"  // gguf_type_size

#include <cstring>
#include <vector>

static size_t g_sink = 0;  // keeps the getters' results alive against the optimiser

static void walk(const gguf_context * ctx) {
    g_sink += gguf_get_version(ctx) + gguf_get_alignment(ctx) + gguf_get_data_offset(ctx);
    const int64_t n_kv = gguf_get_n_kv(ctx);
    for (int64_t i = 0; i < n_kv; ++i) {
        const char * key = gguf_get_key(ctx, i);
        g_sink += strlen(key) + (size_t) gguf_find_key(ctx, key);
        const enum gguf_type t = gguf_get_kv_type(ctx, i);
        if (t == GGUF_TYPE_STRING) {
            g_sink += strlen(gguf_get_val_str(ctx, i));
        } else if (t == GGUF_TYPE_ARRAY) {
            const enum gguf_type at = gguf_get_arr_type(ctx, i);
            const size_t n = gguf_get_arr_n(ctx, i);
            if (at == GGUF_TYPE_STRING) {
                for (size_t j = 0; j < n; ++j) g_sink += strlen(gguf_get_arr_str(ctx, i, j));
            } else if (at != GGUF_TYPE_ARRAY) {
                const uint8_t * p = (const uint8_t *) gguf_get_arr_data(ctx, i);
                if (n) g_sink += p[0] + p[n * gguf_type_size(at) - 1];
            }
        } else {
            g_sink += *(const uint8_t *) gguf_get_val_data(ctx, i);
        }
    }
    const int64_t n_t = gguf_get_n_tensors(ctx);
    for (int64_t i = 0; i < n_t; ++i) {
        const char * name = gguf_get_tensor_name(ctx, i);
        g_sink += strlen(name) + (size_t) gguf_find_tensor(ctx, name) + gguf_get_tensor_offset(ctx, i)
                + gguf_get_tensor_type(ctx, i) + gguf_get_tensor_size(ctx, i);
    }
    // Writing the meta data pads the tensor infos to the file's alignment one byte at a time: an accepted
    // alignment of 2^31 costs minutes and 2 GiB (fuzz/FINDINGS.md), so the write-back is left to sane alignments.
    if (gguf_get_alignment(ctx) > (1u << 16)) return;
    std::vector<uint8_t> meta(gguf_get_meta_size(ctx));
    gguf_get_meta_data(ctx, meta.data());
    g_sink += meta.size();
}

static bool read_once(const uint8_t * data, size_t size, bool from_file, bool no_alloc) {
    ggml_context * tensors = nullptr;
    gguf_init_params params = {no_alloc, &tensors};
    gguf_context * ctx = from_file ? gguf_init_from_file(harness_file(data, size).c_str(), params)
                                   : gguf_init_from_buffer(data, size, params);
    if (!ctx) return false;
    walk(ctx);
    gguf_free(ctx);
    if (tensors) ggml_free(tensors);
    return true;
}

static void quiet(enum ggml_log_level, const char *, void *) {}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    ggml_log_set(quiet, nullptr);  // every refusal is logged: thousands of lines a second
    harness_init_abort();
    harness_init_mutator("ggml");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    harness_begin(data, size);
    bool ok = false;
    if (harness_ossfuzz_mode()) {
        HARNESS_GUARDED(read_once(data, size, true, false), ok);
        harness_verdict("file", ok);
        return 0;
    }
    HARNESS_GUARDED(read_once(data, size, false, true), ok);
    harness_verdict("buffer.no_alloc", ok);
    HARNESS_GUARDED(read_once(data, size, false, false), ok);
    harness_verdict("buffer.alloc", ok);
    HARNESS_GUARDED(read_once(data, size, true, true), ok);
    harness_verdict("file.no_alloc", ok);
    HARNESS_GUARDED(read_once(data, size, true, false), ok);
    harness_verdict("file.alloc", ok);
    return 0;
}
