// Shared pieces of the coverage-guided harnesses: the abort wrapper, the input as a file, the verdict print and,
// in the *_spec binaries, the bridge to the spec-aware mutator (gguf_construct.fuzzing.specmutator) through
// libFuzzer's custom mutator hooks, with an embedded Python interpreter.
#include "common.h"

#include "ggml.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csetjmp>
#include <sys/mman.h>
#include <unistd.h>

#ifdef GGUF_SPEC_MUTATOR
#define PY_SSIZE_T_CLEAN  // the y# / n formats take Py_ssize_t lengths
#include <Python.h>
#endif

extern "C" size_t LLVMFuzzerMutate(uint8_t * data, size_t size, size_t max_size);

extern "C" void __sanitizer_print_stack_trace(void);

jmp_buf harness_abort_jump;
bool harness_abort_armed = false;
static const uint8_t * g_input = nullptr;
static size_t g_input_size = 0;

static char g_abort_message[2048];

void harness_begin(const uint8_t * data, size_t size) {
    g_input = data;
    g_input_size = size;
    g_abort_message[0] = 0;
}

// ggml's abort callback: keep the GGML_ASSERT / GGML_ABORT message for the abort record, print it as ggml does.
static void keep_abort_message(const char * message) {
    snprintf(g_abort_message, sizeof g_abort_message, "%s", message);
    fprintf(stderr, "%s\n", message);
}

void harness_init_abort() { ggml_set_abort_callback(keep_abort_message); }

// Every abort() (GGML_ABORT, GGML_ASSERT, std::terminate) is linked to this (-Wl,--wrap=abort).  By default it
// names itself and traps, so libFuzzer records a crash with the stack of the abort (a finding, and what the
// minimiser keeps).  With GGUF_HARNESS_ABORT_DIR set (campaigns), it writes the input and the stack of the abort
// into that folder -- the finding -- and jumps back to the harness, so the campaign goes on (OSS-Fuzz's harness
// jumps back too, but drops the abort).
extern "C" void __wrap_abort(void) {
    const char * dir = getenv("GGUF_HARNESS_ABORT_DIR");
    if (!dir || !harness_abort_armed) {
        fputs("GGUF_HARNESS: abort() called\n", stderr);
        __builtin_trap();
    }
    static unsigned long n = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/abort-%d-%lu", dir, (int) getpid(), n++);
    std::string base(path);
    FILE * f = fopen((base + ".gguf").c_str(), "wb");
    if (f) { fwrite(g_input, 1, g_input_size, f); fclose(f); }
    fflush(stderr);
    int saved = dup(2);
    FILE * t = fopen((base + ".txt").c_str(), "w");
    if (t) {
        fputs("GGUF_HARNESS: abort() called\n", t);
        if (g_abort_message[0]) fprintf(t, "%s\n", g_abort_message);
        fflush(t);
        dup2(fileno(t), 2);
        __sanitizer_print_stack_trace();
        fflush(stderr);
        dup2(saved, 2);
        fclose(t);
    }
    close(saved);
    harness_abort_armed = false;
    longjmp(harness_abort_jump, 1);
}

bool harness_ossfuzz_mode() {
    static int mode = -1;
    if (mode < 0) {
        const char * m = getenv("GGUF_HARNESS_MODE");
        mode = (m && strcmp(m, "ossfuzz") == 0) ? 1 : 0;
    }
    return mode == 1;
}

void harness_verdict(const char * what, bool accepted) {
    static int on = -1;
    if (on < 0) on = getenv("GGUF_HARNESS_VERDICT") ? 1 : 0;
    if (on) fprintf(stderr, "GGUF_VERDICT %s %s\n", what, accepted ? "accept" : "reject");
}

std::string harness_file(const uint8_t * data, size_t size) {
    static int fd = -1;
    if (fd < 0) fd = memfd_create("gguf-input", 0);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t) size) abort();
    return "/proc/self/fd/" + std::to_string(fd);
}

#ifdef GGUF_SPEC_MUTATOR
static PyObject * g_mutate = nullptr;
static PyObject * g_cross = nullptr;
static long g_errors = 0;

void harness_init_mutator(const char * target) {
    setenv("GGML_NO_BACKTRACE", "1", 0);  // ggml_abort would run gdb on itself
    Py_InitializeEx(0);
    PyObject * mod = PyImport_ImportModule("gguf_construct.fuzzing.specmutator");
    if (!mod) { PyErr_Print(); fputs("GGUF_HARNESS: cannot import the spec-aware mutator\n", stderr); exit(2); }
    PyObject * setup = PyObject_GetAttrString(mod, "setup");
    PyObject * r = setup ? PyObject_CallFunction(setup, "s", target) : nullptr;
    if (!r) { PyErr_Print(); exit(2); }
    Py_DECREF(r);
    g_mutate = PyObject_GetAttrString(mod, "libfuzzer_mutate");
    g_cross = PyObject_GetAttrString(mod, "libfuzzer_crossover");
    if (!g_mutate || !g_cross) { PyErr_Print(); exit(2); }
}

static size_t copy_result(PyObject * r, uint8_t * out, size_t max_size) {
    char * buf; Py_ssize_t n;
    if (PyBytes_AsStringAndSize(r, &buf, &n) != 0) return 0;
    size_t m = (size_t) n < max_size ? (size_t) n : max_size;
    memcpy(out, buf, m);
    return m;
}

static void note_error() {
    if (g_errors++ < 5 || getenv("GGUF_FUZZ_DEBUG")) {
        PyErr_Print();
        PyRun_SimpleString("import sys; sys.stderr.flush()");  // libFuzzer ends with _Exit: nothing is flushed
    } else {
        PyErr_Clear();
    }
}

// libFuzzer's hook: the spec-aware mutator edits one field by its meaning; None asks for a byte-level edit.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t * data, size_t size, size_t max_size, unsigned int seed) {
    PyObject * r = PyObject_CallFunction(g_mutate, "y#nI", (const char *) data, (Py_ssize_t) size,
                                         (Py_ssize_t) max_size, seed);
    size_t n = 0;
    if (!r) note_error();
    else if (r != Py_None) n = copy_result(r, data, max_size);
    Py_XDECREF(r);
    return n ? n : LLVMFuzzerMutate(data, size, max_size);
}

// libFuzzer's hook: a splice of two files' fields (records of one into the other).
extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t * d1, size_t s1, const uint8_t * d2, size_t s2,
                                            uint8_t * out, size_t max_size, unsigned int seed) {
    PyObject * r = PyObject_CallFunction(g_cross, "y#y#nI", (const char *) d1, (Py_ssize_t) s1, (const char *) d2,
                                         (Py_ssize_t) s2, (Py_ssize_t) max_size, seed);
    size_t n = 0;
    if (!r) note_error();
    else if (r != Py_None) n = copy_result(r, out, max_size);
    Py_XDECREF(r);
    if (n) return n;
    n = s1 < max_size ? s1 : max_size;  // no splice: the first input, mutated by bytes
    memcpy(out, d1, n);
    return LLVMFuzzerMutate(out, n, max_size);
}
#else
void harness_init_mutator(const char *) { setenv("GGML_NO_BACKTRACE", "1", 0); }
#endif
