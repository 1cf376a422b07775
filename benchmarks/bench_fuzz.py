"""Generated-and-checked files per second, in process: carrier + structural mutation + encode + check.

python benchmarks/bench_fuzz.py [N]
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gguf_construct.checker import check  # noqa: E402
from gguf_construct.fuzzing.samples import carriers, generate  # noqa: E402


def main() -> None:
    """Print files/s for generation alone and for generation + check."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    pool = carriers(0)
    stream = generate(0, pool=pool)
    for _ in range(50):  # warm up (struct families, numpy)
        check(next(stream).data)
    t0 = time.perf_counter()
    samples = [next(stream) for _ in range(n)]
    t1 = time.perf_counter()
    nbytes = 0
    for s in samples:
        check(s.data)
        nbytes += len(s.data)
    t2 = time.perf_counter()
    print(f"{n} files, mean {nbytes / n:.0f} bytes")
    print(f"generate:          {n / (t1 - t0):8.0f} files/s")
    print(f"check:             {n / (t2 - t1):8.0f} files/s")
    print(f"generate + check:  {n / (t2 - t0):8.0f} files/s")


if __name__ == "__main__":
    main()
