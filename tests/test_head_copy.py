"""A loaded file written again keeps the bytes of every record it still holds (filemodel/headcopy.py): whatever
is edited, the bytes are those of building every record anew (the reference: the same edits on a load whose record
positions are forgotten), and writing a head of many records back after one edit does a few calls a record."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import gguf_construct as g
from gguf_construct.strategies import gguf_files
from callcount import count_calls

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_hostile  # noqa: E402 - the benchmark's writers of hostile shapes


def _edit(f: g.GGUFFile, edits: list[tuple[str, int]]) -> None:
    keys = list(f.metadata)
    for what, n in edits:
        if not keys and what != "add":
            continue
        key = keys[n % len(keys)] if keys else ""
        if what == "add":
            f.metadata[f"test.added.{n}"] = n
        elif what == "delete" and key in f.metadata:
            del f.metadata[key]
        elif what == "replace" and key in f.metadata:
            f.metadata.set(
                key, f.metadata.typed(key).value, f.metadata.typed(key).type, f.metadata.typed(key).item_type
            )
        elif what == "move" and key in f.metadata:  # the same value object under a new key, the old one gone
            value = f.metadata.typed(key)
            del f.metadata[key]
            f.metadata[key + ".moved"] = value
        elif what == "readd" and key in f.metadata:  # the same object deleted and put back (now last)
            value = f.metadata.typed(key)
            del f.metadata[key]
            f.metadata[key] = value
        elif what == "rename" and f.tensors:
            t = f.tensors[n % len(f.tensors)]
            if not any(o.name == t.name + "x" for o in f.tensors):
                f.rename_tensor(t.name, t.name + "x")
        elif what == "drop" and f.tensors:
            f.remove_tensor(f.tensors[n % len(f.tensors)].name)


EDITS = st.lists(
    st.tuples(st.sampled_from(["add", "delete", "replace", "move", "readd", "rename", "drop"]), st.integers(0, 50)),
    max_size=6,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)
@given(gguf_files(), EDITS)
def test_kept_records_give_the_bytes_of_a_whole_build(drawn, edits):
    data = drawn[0]
    kept, built = g.load(data), g.load(data)
    built._kv_source = None  # the reference: every record built anew
    for f in (kept, built):
        _edit(f, edits)
    try:
        want = built.to_bytes()
    except ValueError:
        return  # an edit the format cannot hold (the build says so either way)
    assert kept.to_bytes() == want
    if not edits:
        assert want == data


def test_a_file_converted_is_built_not_copied():
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["x.value"] = 7
    f.add_tensor("a", np.arange(32, dtype=np.float32))
    data = f.to_bytes()
    big = g.load(data).convert(byte_order="big").to_bytes()
    assert big != data and g.load(big).convert(byte_order="little").to_bytes() == data


def test_writing_many_records_back_after_one_edit_is_a_few_calls_a_record(tmp_path):
    counts = []
    for n in (4000, 16000):
        path = tmp_path / f"kv{n}.gguf"
        bench_hostile.write_many_kvs(str(path), 26 * n)
        f = g.load(path)
        f.metadata["general.name"] = "edited"
        counts.append(count_calls(lambda: f.to_bytes()) / n)
        assert g.load(f.to_bytes()).metadata["general.name"] == "edited"
    assert counts[1] < 8 and counts[1] < counts[0] * 1.2, counts


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)
@given(gguf_files())
def test_split_and_merge_reuse_the_records_they_copy(tmp_path_factory, drawn):
    from gguf_construct.operations.split import merge_shards, split_model

    folder = tmp_path_factory.mktemp("split")
    outputs = []
    for reuse in (True, False):
        f = g.load(drawn[0])
        if not reuse:
            f._kv_source = None
        try:
            shards = split_model(f, str(folder / f"m{reuse}"), max_tensors=2)
        except (ValueError, g.GGUFError):
            return  # a file the split cannot write (the same either way)
        first = shards[0][0]
        merged = merge_shards(first, str(folder / f"merged{reuse}.gguf"))
        if not reuse:
            merged._kv_source = None
        outputs.append(([open(p, "rb").read() for p, _ in shards], merged.to_bytes()))
    assert outputs[0] == outputs[1]


def test_an_array_edited_in_place_is_written_as_edited():
    """Arrays are read as writable copies: one edited in place since load is built again, not copied as read."""
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata.set("x.scores", np.arange(5, dtype=np.float32), "ARRAY", "FLOAT32")
    f.metadata.set("x.ids", np.arange(3, dtype=np.int32), "ARRAY", "INT32")
    f.metadata["x.after"] = 7
    loaded = g.load(f.to_bytes())
    loaded.metadata["x.scores"][0] = 42.0
    back = g.load(loaded.to_bytes())
    assert back.metadata["x.scores"][0] == 42.0 and back.metadata["x.ids"].tolist() == [0, 1, 2]
    assert back.metadata["x.after"] == 7
    untouched = g.load(f.to_bytes())
    assert untouched.to_bytes() == f.to_bytes()


def test_close_releases_the_map_the_kept_records_view(tmp_path):
    """The kept records hold a view of the map: close() lets it go, so the map really closes."""
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.add_tensor("a", np.zeros(32, dtype=np.float32))
    f.save(tmp_path / "m.gguf")
    loaded = g.load(tmp_path / "m.gguf")
    mapping = loaded._keepalive
    loaded.close()
    assert mapping.closed
