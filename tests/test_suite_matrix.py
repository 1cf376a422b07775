"""The matrix of readers: docs/readers.md and docs/readers.svg are what readers/results.json renders to (checked
against the recorded results, never by running readers), and the renderer draws every reader and result."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gguf_construct.suite.matrix import COLOURS, check_matrix, compare_results, load_results, render_page, render_svg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "readers" / "results.json"


@pytest.mark.skipif(not RESULTS.is_file(), reason="no recorded reader results")
def test_committed_pages_match_the_recorded_results():
    assert check_matrix(str(RESULTS), str(ROOT / "docs")) == [], "run `gguf-construct suite matrix`"


@pytest.mark.skipif(not RESULTS.is_file(), reason="no recorded reader results")
def test_the_matrix_has_six_readers_on_one_suite():
    data = load_results(str(RESULTS))
    assert len(data["readers"]) >= 6
    assert len({r["suite_digest"] for r in data["readers"].values()}) == 1
    for r in data["readers"].values():
        assert len(r["results"]) == r["suite_cases"]
        assert "/tmp/" not in r["adapter"]


def _fake() -> dict:
    results = {
        "a/x.gguf": ["values", "accept", "accept", "pass"],
        "b/y.gguf": ["container", "reject", "accept", "false-accept"],
        "c/z.gguf": ["container", "either", "reject", "pass"],
        "d/w.gguf": ["model", "reject", "crash", "crash"],
    }
    summary = {
        "cases": 4,
        "counts": {"pass": 2, "false-accept": 1, "false-reject": 0, "wrong-values": 0, "crash": 1, "hang": 0},
        "accepted_valid": [1, 1],
        "rejected_invalid": [0, 2],
        "values_correct": [1, 1],
        "crashed": 1,
        "hung": 0,
    }
    reader = {
        "version": "1.0",
        "adapter": "a reader <&>",
        "profile": "spec",
        "suite_digest": "ab" * 32,
        "suite_cases": 4,
        "notes": "",
        "summary": summary,
        "results": results,
    }
    return {"readers": {"one": reader, "two": dict(reader, results=dict(list(results.items())[:2]))}}


def test_svg_is_well_formed_and_colours_each_result():
    svg = render_svg(_fake())
    root = ET.fromstring(svg)
    fills = {el.get("fill") for el in root.iter("{http://www.w3.org/2000/svg}rect")}
    for key in ("pass", "false-accept", "either-reject", "crash", "absent"):
        assert COLOURS[key] in fills, key
    assert "a reader" not in svg and "one 1.0" in svg


def test_page_lists_every_reader_with_its_counts():
    page = render_page(_fake())
    assert "| one | 1.0 | spec | 4 | 1/1 | 0/2 | 1/1 | 1 | 0 | 0 | 1 | 0 |" in page
    assert "a reader <&>" in page and "readers.svg" in page


def test_a_rerun_is_compared_with_the_recorded_results():
    recorded = _fake()
    assert compare_results(recorded, json.loads(json.dumps(recorded))) == []
    rerun = json.loads(json.dumps(recorded))
    rerun["readers"]["one"]["results"]["b/y.gguf"] = ["container", "reject", "reject", "pass"]
    rerun["readers"]["one"]["version"] = "1.1"
    del rerun["readers"]["two"]
    rerun["readers"]["three"] = rerun["readers"]["one"]
    assert compare_results(recorded, rerun) == [
        "one: version 1.0 -> 1.1",
        "one: b/y.gguf: accept (false-accept) -> reject (pass)",
        "two: not run (is it installed?)",
        "three: not in the recorded results",
    ]
