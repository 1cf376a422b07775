"""gguf-construct sweep: rows per file, the same from the process pool and a dask.distributed LocalCluster, from
local files and over HTTP, resumable; inputs from directories, globs and lists."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.commands.main import main
from gguf_construct.operations.sweep import COLUMNS, comparable, expand_inputs, read_rows, run_sweep, sweep_one

from conftest import corpus_files


def _comparable(rows):
    return sorted((comparable(r) for r in rows), key=lambda r: r["name"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    f = g.GGUFFile.new()
    f.metadata.set("general.architecture", "llama", "STRING")
    f.add_tensor("token_embd.weight", np.ones((8, 64), dtype=np.float32))
    f.add_tensor("output.weight", np.ones((4, 256), dtype=np.float32), ggml_type="Q8_0")
    f.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    f.save(d / "tiny-llama.gguf")
    f.convert(version=2, byte_order="big").save(d / "tiny-llama-v2-be.gguf")
    (d / "broken.gguf").write_bytes((d / "tiny-llama.gguf").read_bytes()[:90])
    return d


def test_row_of_a_file(folder):
    row = sweep_one(str(folder / "tiny-llama.gguf"), summary=True)
    assert set(row) == set(COLUMNS)
    assert (row["version"], row["byte_order"], row["architecture"]) == (3, "little", "llama")
    assert row["parameter_count"] == 8 * 64 + 4 * 256 + 64 and row["tensor_count"] == 3
    assert row["tensor_types"] == {"F32": 2, "Q8_0": 1}
    assert row["valid_spec"] is True and row["error"] is None
    assert json.loads(row["summary"])["tensors"][1]["type"] == "Q8_0"
    broken = sweep_one(str(folder / "broken.gguf"))
    assert broken["valid_spec"] is False and broken["architecture"] is None and broken["findings"]
    missing = sweep_one(str(folder / "absent.gguf"))
    assert missing["error"] and missing["valid_spec"] is None


def test_inputs(folder, tmp_path):
    names = sorted(p.name for p in folder.glob("*.gguf"))
    assert [os.path.basename(p) for p in expand_inputs([str(folder)])] == names
    assert [os.path.basename(p) for p in expand_inputs([str(folder / "tiny*.gguf")])] == names[1:]
    listing = tmp_path / "files.txt"
    listing.write_text(f"# two files\n{folder / 'broken.gguf'}\n\nhttps://host/x.gguf\n")
    assert expand_inputs([str(listing)]) == [str(folder / "broken.gguf"), "https://host/x.gguf"]


def test_jsonl_resumes(folder, tmp_path):
    out = str(tmp_path / "rows.jsonl")
    first = run_sweep([str(folder)], out, engine="local", jobs=2)
    assert (first["done"], first["skipped"]) == (3, 0)
    rows = read_rows(out)
    assert [os.path.basename(r["path"]) for r in rows] == sorted(p.name for p in folder.glob("*.gguf"))
    lines = open(out).read().splitlines()
    open(out, "w").write("\n".join(lines[:2]) + "\n" + lines[2][:20])  # an interrupted run: torn last line
    again = run_sweep([str(folder)], out, engine="local", jobs=1)
    assert (again["done"], again["skipped"]) == (1, 2)
    assert _comparable(read_rows(out)) == _comparable(rows)


def test_cli(folder, tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet output needs the [cluster] extra (pyarrow)")
    out = tmp_path / "cli.parquet"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(g.__file__)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gguf_construct",
            "sweep",
            str(folder),
            "--out",
            str(out),
            "--jobs",
            "1",
            "--profiles",
            "ggml",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 files checked" in done.stderr and "files/s" in done.stderr
    rows = read_rows(str(out))
    assert len(rows) == 3 and all(r["valid_spec"] is None for r in rows)
    assert [r["valid_ggml"] for r in rows] == [g.check(r["path"], profile="ggml").valid for r in rows]
    assert rows[0]["valid_ggml"] is False  # broken.gguf


def test_dask_cluster_over_http_matches_local_pool(folder, tmp_path):
    pytest.importorskip("dask.distributed", reason="--engine dask needs the [cluster] extra")
    pytest.importorskip("pyarrow", reason="Parquet output needs the [cluster] extra (pyarrow)")
    pytest.importorskip("fsspec", reason="URLs need the [remote] extra (fsspec)")
    from gguf_construct.base.rangeserver import RangeServer

    served = tmp_path / "served"
    served.mkdir()
    for p in folder.glob("*.gguf"):
        shutil.copy(p, served / p.name)
    for p in corpus_files():  # the real files when ../shared is there (linked, not copied)
        os.symlink(p, served / p.name)
    local_out = str(tmp_path / "local.jsonl")
    run_sweep([str(served)], local_out, engine="local", jobs=2)
    with RangeServer(str(served)) as server:
        urls = [server.url(p.name) for p in sorted(served.glob("*.gguf"))]
        http_out = str(tmp_path / "cluster.parquet")
        totals = run_sweep(urls + [server.url("absent.gguf")], http_out, engine="dask", jobs=2)
        assert totals["done"] == len(urls) + 1 and totals["errors"] == 1
        rows = read_rows(http_out)
        ok = [r for r in rows if r["error"] is None]
        assert len(ok) == len(urls) and all(r["requests"] >= 1 for r in ok)
        assert "HTTP 404" in next(r["error"] for r in rows if r["error"])
        assert _comparable(ok) == _comparable(read_rows(local_out))
        again = run_sweep(urls + [server.url("absent.gguf")], http_out, engine="dask", jobs=2)
        assert (again["done"], again["skipped"]) == (1, len(urls))  # only the failed one is tried again


def test_a_spreadsheet_output_is_refused_before_any_work(folder, tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert main(["sweep", str(folder), "--out", str(out)]) == 2
    assert "JSON Lines" in capsys.readouterr().err and not out.exists()
    with pytest.raises(ValueError, match="not TSV"):
        run_sweep([str(folder)], str(tmp_path / "rows.tsv"))
