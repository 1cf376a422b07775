"""ggml's limits of 2^30 (STR-MAXLEN, ARR-MAXLEN) on both sides: the default suite's short files declaring one
past them, and the opt-in large files of ``suite write --large`` -- their manifest entries, their bytes (streamed,
equal to what the manifest says), and our reader and checker on them under every profile, with the limits lowered
(fast) and, with GGUF_CONSTRUCT_LARGE_TESTS=1, at ggml's real limits (4 GiB of files, minutes)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys

import pytest

from gguf_construct import check
from gguf_construct.fuzzing.targets import Outcome
from gguf_construct.rulebook import container
from gguf_construct.suite import reference
from gguf_construct.suite.cases import declared_past_limit_cases, edge_cases
from gguf_construct.suite.expect import PROFILES
from gguf_construct.suite.large import large_cases
from gguf_construct.suite.manifest import NOT_COVERED, write_suite
from gguf_construct.suite.runner import score_case

LOWERED = {"string_bytes": 3 << 20, "array_elements": 3 << 20}  # above reference.BIG_VALUE: values by hash
EXPECT = {
    "valid": {"spec": "accept", "ggml": "accept", "llama.cpp": "reject"},
    "past": {"spec": "accept", "ggml": "reject", "llama.cpp": "reject"},
}


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


# one file read in a child process (the real large files: each read maps 1 GiB and decodes the value once);
# reference.read accepts exactly when the checker finds no error under the profile, so its outcome is the checker's
CHILD = """
import json, sys
from gguf_construct.suite import reference
path, profile = sys.argv[1:]
try:
    out = {"status": "accept", "summary": reference.read(path, profile)}
except ValueError as exc:
    out = {"status": "reject", "detail": str(exc)}
print(json.dumps(out))
"""


def _read(path, profile, isolate: bool) -> tuple[bool, Outcome]:
    """The checker's verdict and our reader's outcome on one file, here or in a child process."""
    if isolate:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), profile], capture_output=True, text=True, check=True
        )
        out = json.loads(proc.stdout)
        return out["status"] == "accept", Outcome(
            out["status"], summary=out.get("summary"), detail=out.get("detail", "")
        )
    valid = check(str(path), profile=profile, data=True).valid
    try:
        return valid, Outcome("accept", summary=reference.read(str(path), profile))
    except ValueError as exc:
        return valid, Outcome("reject", detail=str(exc))


def _check_large_suite(root, manifest, limits, isolate: bool = False) -> None:
    """The large entries say what the files hold, and our reader and checker pass them under every profile."""
    large = [c for c in manifest["cases"] if c.get("large")]
    assert len(large) == 4 and manifest["not_covered"] == []
    tsv = (root / "cases.tsv").read_text()
    lengths = {"string_bytes": [], "array_elements": []}
    for case in large:
        path = root / case["file"]
        assert path.stat().st_size == case["size"] > min(limits.values())
        assert _sha256(path) == case["sha256"]
        assert case["file"] + "\t" in tsv
        big = [m for m in case["metadata"] if "value" not in m]
        assert len(big) == 1 and set(big[0]) >= {"key", "type", "length", "sha256"}
        kind = "string_bytes" if big[0]["type"] == "STRING" else "array_elements"
        lengths[kind].append(big[0]["length"])
        past = big[0]["length"] == limits[kind] + 1
        assert case["rules"] == (["STR-MAXLEN" if kind == "string_bytes" else "ARR-MAXLEN"] if past else [])
        assert case["expect"] == EXPECT["past" if past else "valid"], case["file"]
        for profile in PROFILES:
            valid, got = _read(path, profile, isolate)
            assert valid == (case["expect"][profile] == "accept"), (case["file"], profile)
            result = score_case(case, got, profile)
            assert result.result == "pass", (case["file"], profile, result.differences)
            if got.status == "accept":
                ours = next(m for m in got.summary["metadata"] if m["key"] == big[0]["key"])
                assert "value" not in ours and ours["sha256"] == big[0]["sha256"]
    for kind, limit in limits.items():
        assert sorted(lengths[kind]) == [limit, limit + 1]


def test_large_cases_with_the_limits_lowered(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "LIMITS", dict(LOWERED))
    picked = [c for c in edge_cases() if c.path == "edge/valid/four-dimensions.gguf"]
    manifest = write_suite(tmp_path, picked, large=large_cases(LOWERED))
    assert json.loads((tmp_path / "manifest.json").read_text()) == json.loads(json.dumps(manifest))
    _check_large_suite(tmp_path, manifest, LOWERED)


def test_the_real_large_cases_sit_on_ggmls_limits():
    """Without writing them: the four files are ggml's limits and one past, each a small head and tail around
    the value, and the default suite says what it leaves to --large."""
    cases = large_cases()
    assert sorted(c.length for c in cases) == [2**30, 2**30, 2**30 + 1, 2**30 + 1]
    for c in cases:
        head, n, tail = c.parts()
        assert len(head) + len(tail) < 4096 and n >= 2**30 - 32
        assert c.size == len(head) + n + len(tail)
    assert {r for n in NOT_COVERED for r in n["rules"]} == {"STR-MAXLEN", "ARR-MAXLEN"}
    assert "--large" in NOT_COVERED[0]["why"]


def test_a_count_one_past_the_limit_in_a_short_file_is_refused_everywhere():
    cases = list(declared_past_limit_cases())
    assert {c.path for c in cases} == {
        "edge/STR-MAXLEN/string-declared-past-limit.gguf",
        "edge/ARR-MAXLEN/array-declared-past-limit.gguf",
    }
    for c in cases:
        assert len(c.data) < 4096
        for profile in PROFILES:
            report = check(c.data, profile=profile)
            assert not report.valid
            assert {f.rule for f in report.errors()} & {"STR-EOF", "ARR-EOF"}


def test_big_values_are_compared_by_length_and_hash(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "LIMITS", {"string_bytes": 100, "array_elements": 100})
    small = large_cases({"string_bytes": 100, "array_elements": 100})
    manifest = write_suite(tmp_path, [], large=small)
    case = next(c for c in manifest["cases"] if c["file"].endswith("string-100-bytes.gguf"))
    answer = {"metadata": case["metadata"], "tensors": case["tensors"]}
    assert score_case(case, Outcome("accept", summary=answer), "spec").result == "pass"

    def printed(text):  # the big key printed in full, as a reader that knows no better does
        return [{"key": m["key"], "type": "STRING", "value": text} if "sha256" in m else m for m in case["metadata"]]

    assert (
        score_case(case, Outcome("accept", summary=dict(answer, metadata=printed("x" * 100))), "spec").result == "pass"
    )
    for bad in ("x" * 99, "x" * 99 + "y"):
        assert (
            score_case(case, Outcome("accept", summary=dict(answer, metadata=printed(bad))), "spec").result
            == "wrong-values"
        )
    wrong = [dict(m, sha256="0" * 64) if "sha256" in m else m for m in case["metadata"]]
    assert score_case(case, Outcome("accept", summary=dict(answer, metadata=wrong)), "spec").result == "wrong-values"


@pytest.mark.skipif(
    os.environ.get("GGUF_CONSTRUCT_LARGE_TESTS") != "1",
    reason="writes 4 GiB and reads it twelve times (minutes): set GGUF_CONSTRUCT_LARGE_TESTS=1",
)
def test_the_large_suite_at_ggmls_limits(tmp_path):
    manifest = write_suite(tmp_path, [], large=True)
    arrays = [c for c in manifest["cases"] if "array" in c["file"]]
    for c in arrays:  # the zeros are a hole where the file system has them
        st = (tmp_path / c["file"]).stat()
        assert st.st_blocks * 512 < st.st_size or os.environ.get("GGUF_CONSTRUCT_NO_SPARSE") == "1"
    _check_large_suite(tmp_path, manifest, dict(container.LIMITS), isolate=True)
    # every read of a 1 GiB value stayed within a few times its size (measured: 3.2 GiB for a string, 2.2 GiB for
    # an array, the mapped file included): nothing is sized by a count before it is checked against the file
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10 < 4 * 2**30
