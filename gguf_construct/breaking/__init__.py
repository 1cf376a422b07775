"""Breaking valid GGUF files on purpose: a raw file model any value can be put into (:mod:`.rawfile`) and named
structural mutations (:mod:`.mutations`), each declaring, for the concrete edit it made, the conformance rules it
breaks and may also cause (:mod:`.intent`, the labels of invalid files); and the crafted files
of the checker's tests, one named breakage per rule (:mod:`.crafting`, :mod:`.crafting_security`).

This package sits below the Hypothesis strategies, the checker's tests and the fuzzer, which all craft and mutate
files through it; it imports nothing above the generated structs.
"""
