"""Coverage-guided fuzzing of our own parser and checker: ``load`` + ``check`` on arbitrary bytes.

Invariant: for any input, ``gguf_construct.load`` returns a file (whose small tensors decode) or raises ``GGUFError``
(never another exception), and ``gguf_construct.check`` returns a report without internal errors under both
profiles.  Hangs and unbounded allocations are caught by the fuzzer's -timeout and -rss_limit_mb.

With atheris (``pip install atheris``)::

    python fuzz/harness.py -runs=100000 -max_len=8192 -timeout=10 -rss_limit_mb=2048 CORPUS_DIR fuzz/seeds fuzz/seeds/models

Without atheris, ``python fuzz/harness.py --hypothesis N`` runs the same invariant over N Hypothesis-generated
inputs (byte mutations of the seeds, structural mutations, random bytes).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
SEEDS = os.path.join(HERE, "seeds")
MODEL_SEEDS = os.path.join(SEEDS, "models")  # tiny whole models, for the llama.cpp profile's replay


class InvariantBroken(AssertionError):
    """load raised something other than GGUFError, or check reported an internal error."""


def test_one_input(data: bytes) -> None:
    """Run load and check on ``data``; raise :class:`InvariantBroken` when the invariant does not hold."""
    import numpy as np

    import gguf_construct as g

    try:
        f = g.load(data, lazy=False)
        for t in f.tensors[:4]:
            if t.nbytes <= 1 << 16:
                t.raw()
                with np.errstate(all="ignore"):  # random scales overflow: values, not errors
                    t.numpy()
    except g.GGUFError:
        pass
    except Exception as exc:  # noqa: BLE001 - that is the bug we are looking for
        raise InvariantBroken(f"load raised {type(exc).__name__}: {exc}") from exc
    for profile in ("spec", "ggml", "llama.cpp"):
        try:
            report = g.check(data, profile=profile)
        except Exception as exc:  # noqa: BLE001
            raise InvariantBroken(f"check raised {type(exc).__name__}: {exc}") from exc
        if report.internal_errors:
            raise InvariantBroken(f"check ({profile}) internal error: {report.internal_errors[0]}")


def seeds() -> list[bytes]:
    """The seed corpus (fuzz/seeds/*.gguf and the tiny models of fuzz/seeds/models/)."""
    out = []
    for folder in (SEEDS, MODEL_SEEDS):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".gguf"):
                with open(os.path.join(folder, name), "rb") as fh:
                    out.append(fh.read())
    return out


def hypothesis_inputs():
    """A Hypothesis strategy of inputs: seeds with byte edits, structurally broken files, raw bytes."""
    from hypothesis import strategies as st

    from gguf_construct.strategies import invalid_gguf_files

    corpus = seeds()

    @st.composite
    def edited(draw):
        data = bytearray(draw(st.sampled_from(corpus)))
        for _ in range(draw(st.integers(1, 4))):
            if not data:
                break
            i = draw(st.integers(0, len(data) - 1))
            op = draw(st.sampled_from(["set", "cut", "dup", "flip"]))
            if op == "set":
                data[i] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
            elif op == "cut":
                del data[i : i + draw(st.integers(1, 16))]
            elif op == "dup":
                data[i:i] = data[i : i + draw(st.integers(1, 16))]
            else:
                data[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)

    return st.one_of(
        edited(),
        invalid_gguf_files(max_kv=3, max_tensors=2).map(lambda s: s[0]),
        st.binary(max_size=64).map(lambda b: b"GGUF" + b),
    )


def run_hypothesis(n: int) -> None:
    """The fallback harness: ``n`` Hypothesis inputs through :func:`test_one_input`."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(hypothesis_inputs())
    def fuzz(data):
        test_one_input(data)

    fuzz()


def main() -> None:
    """atheris when available (argv as for libFuzzer), else the Hypothesis fallback."""
    if "--hypothesis" in sys.argv:
        run_hypothesis(int(sys.argv[sys.argv.index("--hypothesis") + 1]))
        return
    import atheris

    with atheris.instrument_imports(include=["gguf_construct"]):
        import gguf_construct  # noqa: F401
        import gguf_construct.checker  # noqa: F401
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
