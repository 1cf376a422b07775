"""`dump` of files with millions of records (issue #42): the Python-level calls each added KV pair or tensor info
costs in the summary, its text and Markdown, and the model facts (``arch.from_file`` + ``plan_load``).  Counted,
never timed: each bound is below what the per-record path cost before (in brackets)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import gguf_construct
from gguf_construct import arch
from gguf_construct.base.jsonout import write_json_stream
from gguf_construct.filemodel.dump import file_summary, render_markdown, render_text
from gguf_construct.filemodel.modelinfo import model_info
from callcount import count_calls

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_hostile  # noqa: E402 - the benchmark's writers of hostile shapes


def _calls_per_record(shape: str, tmp_path: Path) -> dict[str, float]:
    """Calls per added record of each step, between a file of 200 KB and one of 1 MB of the shape."""
    counts = {}
    for size in (200_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        n = getattr(bench_hostile, f"write_{shape}")(str(path), size)
        f = gguf_construct.load(path)
        try:
            summary = file_summary(f, layout=True)
            counts[n] = {
                "summary": count_calls(lambda: file_summary(f, layout=True)),
                "text": count_calls(lambda: render_text(summary)),
                "markdown": count_calls(lambda: render_markdown(summary)),
                "model_info": count_calls(lambda: model_info(f)),
                "plan": count_calls(lambda: arch.plan_load(*arch.from_file(f), n_tensors=len(f.tensors))),
            }
        finally:
            f.close()
    (n0, c0), (n1, c1) = counts.items()
    return {step: (c1[step] - c0[step]) / (n1 - n0) for step in c0}


def test_dump_of_many_kv_pairs_formats_scalars_without_the_general_path(tmp_path):
    """Measured 1 / 4 / 7 / 0 / 0 (before: 13 / 14 / 21 / 7 / 5): an integer key is one dict and one line."""
    per = _calls_per_record("many_kvs", tmp_path)
    assert per["summary"] <= 2, per
    assert per["text"] <= 6, per
    assert per["markdown"] <= 10, per
    assert per["model_info"] <= 1, per  # the loader's keys only: no MetaValue per key
    assert per["plan"] <= 1, per


def test_dump_of_many_tensor_infos_reads_each_tensor_once(tmp_path):
    """Measured 6 / 3 / 5 / 4 / 0 (before: 10 / 3 / 5 / 6 / 1): the type named once per type, no TensorMeta per
    tensor unless the loader asks for it."""
    per = _calls_per_record("many_tensors", tmp_path)
    assert per["summary"] <= 7, per
    assert per["model_info"] <= 5, per
    assert per["plan"] <= 0.5, per


@pytest.mark.parametrize("shape", ["many_kvs", "many_tensors"])
def test_from_file_mappings_read_as_the_dicts_did(shape, tmp_path):
    """FileMeta and FileTensors hold what the dicts of from_file held, in the same order, and take edits."""
    path = tmp_path / f"{shape}.gguf"
    getattr(bench_hostile, f"write_{shape}")(str(path), 20_000)
    with gguf_construct.load(path) as f:
        meta, tensors = arch.from_file(f)
        assert list(meta) == list(f.metadata.keys())
        for key, v in f.metadata.typed_items():
            got = meta[key]
            assert (got.type, got.value, got.item_type) == (
                v.type.name,
                v.value,
                v.item_type.name if v.item_type is not None else None,
            )
        assert list(tensors) == [t.name for t in f.tensors]
        for t in f.tensors:
            assert tensors[t.name] == arch.TensorMeta(t.name, tuple(t.shape), int(t.ggml_type))
        meta["x.new"] = arch.MetaValue("UINT32", 7)
        assert meta["x.new"].value == 7 and "x.new" in meta and len(meta) == len(f.metadata) + 1
        del meta["x.new"]
        assert "x.new" not in meta


def test_architecture_names_are_the_ids_of_the_architecture_files():
    """known_architectures() reads the file names only: each file's id is its name."""
    from gguf_construct.arch.programs import architecture_names, architectures

    assert architecture_names() == frozenset(architectures())


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(), st.floats(allow_nan=False, allow_infinity=False)
)
_JSON_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=30,
)


class _BinaryOut:
    """A stdout with a ``buffer`` (the path of a real terminal or pipe: UTF-8, non-ASCII kept)."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()

    def write(self, text: str) -> None:
        self.buffer.write(text.encode())

    def flush(self) -> None:
        pass


@given(_JSON_DATA)
def test_write_json_stream_writes_what_json_dumps_writes(data):
    """The flat dicts written in one step and the rest by json's encoder: the text of json.dumps, both modes."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        write_json_stream(data, indent=1)
    assert text.getvalue() == json.dumps(data, ensure_ascii=True, indent=1, allow_nan=False) + "\n"
    binary = _BinaryOut()
    with contextlib.redirect_stdout(binary):  # type: ignore[type-var]
        write_json_stream(data, indent=1)
    expected = json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
    assert binary.buffer.getvalue() == expected.encode("utf-8", "backslashreplace")


@pytest.mark.parametrize("shape", ["many_kvs", "many_tensors"])
def test_dump_json_of_many_records_writes_each_entry_in_one_step(shape, tmp_path):
    """json's encoder with an indent made 163 (KV pair) and 218 (tensor) calls per entry; measured 30 and 35."""
    counts = {}
    for size in (200_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        n = getattr(bench_hostile, f"write_{shape}")(str(path), size)
        with gguf_construct.load(path) as f:
            summary = file_summary(f, layout=True)

            def write(summary=summary) -> None:
                with contextlib.redirect_stdout(io.StringIO()):
                    write_json_stream(summary, indent=1)

            counts[n] = count_calls(write)
    (n0, c0), (n1, c1) = counts.items()
    assert (c1 - c0) / (n1 - n0) <= 45, counts
