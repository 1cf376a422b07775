// llama.cpp's model loader under libFuzzer (fuzz/build_targets.sh): llama_model_load_from_file on the input as
// a file, CPU only, twice -- vocabulary only, then the whole model with no_alloc (hyperparameters, vocabulary,
// every tensor request of the architecture and the simulated allocation; no weights are read).
// GGUF_HARNESS_MODE=ossfuzz: OSS-Fuzz's fuzz_load_model way -- zeroed parameters (no mmap), general.architecture
// forced to "llama" by a key override, a full load stopped by the progress callback past half way.
#include "common.h"

#include "llama.h"

#include <cstdio>
#include <cstring>

static void quiet(enum ggml_log_level, const char *, void *) {}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    harness_init_abort();
    harness_init_mutator("llama");
    return 0;
}

static bool load(const std::string & path, llama_model_params params) {
    llama_model * model = llama_model_load_from_file(path.c_str(), params);
    if (!model) return false;
    llama_model_free(model);
    return true;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string path = harness_file(data, size);
    harness_begin(data, size);
    bool ok = false;
    if (harness_ossfuzz_mode()) {
        static llama_model_kv_override overrides[2];
        overrides[0].tag = LLAMA_KV_OVERRIDE_TYPE_STR;
        strcpy(overrides[0].key, "general.architecture");
        strcpy(overrides[0].val_str, "llama");
        overrides[1].key[0] = 0;
        llama_model_params params;
        memset(&params, 0, sizeof(params));
        params.kv_overrides = overrides;
        params.progress_callback = [](float progress, void *) { return progress > 0.50f; };
        HARNESS_GUARDED(load(path, params), ok);
        harness_verdict("ossfuzz", ok);
        return 0;
    }
    llama_model_params params = llama_model_default_params();
    params.n_gpu_layers = 0;
    params.vocab_only = true;
    HARNESS_GUARDED(load(path, params), ok);
    harness_verdict("vocab_only", ok);
    params.vocab_only = false;
    params.no_alloc = true;
    params.load_mode = LLAMA_LOAD_MODE_NONE;  // no_alloc with a memory map asserts (llama-model.cpp, load_tensors)
    HARNESS_GUARDED(load(path, params), ok);
    harness_verdict("no_alloc", ok);
    return 0;
}
