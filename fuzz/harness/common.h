// Shared pieces of the coverage-guided harnesses (fuzz/build_targets.sh links them into every target).
#pragma once
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <string>

// Set by the harness around a read (see __wrap_abort in common.cpp): where an abort jumps back to in campaigns.
extern jmp_buf harness_abort_jump;
extern bool harness_abort_armed;
// The input being read (what __wrap_abort writes out).
void harness_begin(const uint8_t * data, size_t size);
// Run one read; an abort inside it (campaign mode) is recorded and counts as a rejection.
#define HARNESS_GUARDED(expr, result) \
    do { if (setjmp(harness_abort_jump) == 0) { harness_abort_armed = true; result = (expr); } \
         else { result = false; } harness_abort_armed = false; } while (0)

// The harness's mode, from GGUF_HARNESS_MODE: "ossfuzz" reads the input the way OSS-Fuzz's llamacpp harnesses do
// (one read path, forced architecture), anything else every read path this harness knows.
bool harness_ossfuzz_mode();
// Print "GGUF_VERDICT <what> accept|reject" on stderr when GGUF_HARNESS_VERDICT is set (the campaign's oracle
// replays the corpus this way and compares with our checker).
void harness_verdict(const char * what, bool accepted);
// The input as a file: an anonymous memory file, returned as its /proc/self/fd path (rewritten per input).
std::string harness_file(const uint8_t * data, size_t size);
// Keep ggml's abort message (GGML_ASSERT text) for the abort record; called from LLVMFuzzerInitialize.
void harness_init_abort();
// Load the spec-aware mutator (Python) when this binary was built with it; called from LLVMFuzzerInitialize.
void harness_init_mutator(const char * target);
