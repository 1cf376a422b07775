"""CI smoke run of the coverage-guided harness (fuzz/harness.py): bounded, well under 60 s.

With atheris: libFuzzer runs a few hundred inputs from the seed corpus in a subprocess.  Without it: the
Hypothesis fallback runs the same invariant in process.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "fuzz" / "harness.py"
SEEDS = ROOT / "fuzz" / "seeds"

sys.path.insert(0, str(ROOT / "fuzz"))


def _has_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def test_seeds_are_small_and_present():
    files = sorted(SEEDS.glob("*.gguf"))
    assert len(files) >= 20
    assert all(f.stat().st_size <= 600 for f in files)
    models = sorted((SEEDS / "models").glob("*.gguf"))  # tiny whole models for the llama.cpp profile
    assert len(models) >= 3 and all(f.stat().st_size <= 8192 for f in models)


def test_seeds_satisfy_the_invariant():
    import harness

    for data in harness.seeds():
        harness.test_one_input(data)


@pytest.mark.skipif(not _has_atheris(), reason="atheris is not installed (the Hypothesis fallback runs instead)")
def test_atheris_smoke(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            "-runs=300",
            "-max_len=2048",
            "-timeout=10",
            "-rss_limit_mb=2048",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
            str(SEEDS),
        ],
        capture_output=True,
        text=True,
        timeout=55,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 300 runs" in proc.stderr


@pytest.mark.skipif(_has_atheris(), reason="atheris is installed (the libFuzzer smoke run covers this)")
def test_hypothesis_fallback_smoke():
    import harness

    harness.run_hypothesis(150)


def test_hypothesis_fallback_small():
    import harness

    harness.run_hypothesis(20)
