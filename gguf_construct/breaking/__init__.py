"""Breaking valid GGUF files on purpose: a raw file model any value can be put into (:mod:`.rawfile`) and named
structural mutations (:mod:`.mutations`), each declaring the conformance rules it targets.

This package sits below the Hypothesis strategies, the checker's tests and the fuzzer, which all craft and mutate
files through it; it imports nothing above the generated structs.
"""
