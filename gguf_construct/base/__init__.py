"""Layer 0: helpers that know nothing of GGUF -- the package's error type, atomic writes, JSON and text output,
child processes, URL sources read by ranges (and the loopback server of their tests), XXH64."""
