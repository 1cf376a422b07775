"""Split models judged as llama.cpp judges them (gguf_construct.format.splitset): a model split with ``split`` gets the
unsplit file's verdict under every profile from any shard path; the first shard is judged with every shard's
tensors; a later shard checked alone says so once, with llama.cpp's reason; missing or inconsistent shards are
findings of their own; merge output is clean; dump, sweep and hash --set follow the same model."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.format import splitset
from gguf_construct.breaking.models import minimal_model
from gguf_construct.checker import check
from gguf_construct.commands.main import main
from gguf_construct.rulebook.catalog import PROFILES

ARCHS = ("llama", "gemma3", "qwen2")
NOT_MODEL = ("NAME-", "META-SPLIT-")  # file names and split keys differ between a split and the unsplit file


def quantized_model(arch: str) -> g.GGUFFile:
    """The minimal model of ``arch`` with its matrices in Q8_0 (so that shards hold quantized tensors)."""
    src = minimal_model(arch)
    f = g.GGUFFile.new()
    for key, value in src.metadata.typed_items():
        f.metadata[key] = value
    f.metadata.set("general.quantization_version", 2, "UINT32")
    f.metadata.set("general.file_type", 7, "UINT32")  # MOSTLY_Q8_0
    for t in src.tensors:
        values = t.numpy()
        quantize = len(t.shape) == 2 and t.shape[0] % 32 == 0 and t.shape[1] > 1
        f.add_tensor(t.name, values, ggml_type="Q8_0" if quantize else "F32")
    return f


@pytest.fixture(scope="module", params=ARCHS)
def split_model(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"split-{request.param}")
    whole = d / f"{request.param}.gguf"
    quantized_model(request.param).save(whole)
    os.mkdir(d / "split")
    assert main(["split", str(whole), str(d / "split" / request.param), "--max-tensors", "5"]) == 0
    shards = sorted(str(p) for p in (d / "split").iterdir())
    assert len(shards) >= 3
    return str(whole), shards


def _model_rules(reports) -> set[str]:
    return {f.rule for r in reports for f in r.findings if not f.rule.startswith(NOT_MODEL)}


def _cli_json(capsys, *args) -> tuple[int, list]:
    capsys.readouterr()
    rc = main(["check", "--no-config", "--format", "json", *args])
    return rc, json.loads(capsys.readouterr().out)


def test_every_shard_path_gets_the_unsplit_verdict_under_every_profile(split_model, capsys):
    """Any shard names its set -- except under llama.cpp, which refuses a later shard named alone (issue #41)."""
    whole, shards = split_model
    for profile in PROFILES:
        rc_whole, (doc_whole,) = _cli_json(capsys, "--profile", profile, whole)
        want = {f["rule"] for f in doc_whole["findings"] if not f["rule"].startswith(NOT_MODEL)}
        for path in shards:
            rc, doc = _cli_json(capsys, "--profile", profile, path)
            if profile == "llama.cpp" and path != shards[0]:
                assert rc == 1 and [e["file"] for e in doc] == [path] and not doc[0]["valid"]
                assert "META-SPLIT-LATER" in {f["rule"] for f in doc[0]["findings"]}
                continue
            assert rc == rc_whole, (profile, path)
            assert [e["file"] for e in doc] == shards  # the set, in shard order, and nothing else
            assert all(e["valid"] == doc_whole["valid"] for e in doc), (profile, path)
            got = {f["rule"] for f in doc[0]["findings"] if not f["rule"].startswith(NOT_MODEL)}
            assert got == want, (profile, path)
            for later in doc[1:]:  # members of the set: their own container only, no model rules, no set findings
                assert not [
                    f
                    for f in later["findings"]
                    if f["rule"].startswith(("META-SPLIT", "MODEL-", "META-ARCH", "META-QV"))
                ]


def test_first_shard_is_judged_with_every_shards_tensors(split_model):
    whole, shards = split_model
    for profile in PROFILES:
        first = check(shards[0], profile=profile)
        unsplit = check(whole, profile=profile)
        assert first.valid == unsplit.valid
        assert _model_rules([first]) == _model_rules([unsplit])
        assert "MODEL-TENSOR-MISSING" not in first.rules()
        assert not [f for f in first.findings if f.rule.startswith("META-SPLIT")]


def test_a_later_shard_checked_alone_says_so_once_with_llama_cpps_reason(split_model):
    _, shards = split_model
    for path in shards[1:]:
        for profile in PROFILES:
            report = check(path, profile=profile)
            model = [f for f in report.findings if f.rule.startswith(("MODEL-", "META-ARCH", "META-QV", "META-SPLIT"))]
            assert [f.rule for f in model] == ["META-SPLIT-LATER"], (path, profile, model)
            later = model[0]
            assert "model must be loaded with the first split" in later.message
            assert os.path.basename(shards[0]) in later.message
            assert later.severity == ("error" if profile == "llama.cpp" else "info")
            assert report.valid == (profile != "llama.cpp")


def test_merge_output_is_clean_and_judged_as_the_unsplit_file(split_model, tmp_path):
    whole, shards = split_model
    out = tmp_path / "merged.gguf"
    assert main(["merge", shards[0], str(out)]) == 0
    merged = g.load(out)
    assert merged.metadata["split.count"] == 0 and merged.metadata["split.no"] == 0  # as gguf-split writes them
    for profile in PROFILES:
        report = check(out, profile=profile)
        assert not [f for f in report.findings if f.rule.startswith("META-SPLIT")], profile
        assert _model_rules([report]) == _model_rules([check(whole, profile=profile)])


def test_no_glob_pseudo_file_in_text_json_or_sarif(split_model, capsys):
    _, shards = split_model
    capsys.readouterr()
    main(["check", "--no-config", shards[1]])
    text = capsys.readouterr().out
    assert "*" not in text and f"{len(shards)} files checked" in text
    main(["check", "--no-config", "--format", "sarif", shards[1]])
    sarif = json.loads(capsys.readouterr().out)
    uris = [a["location"]["uri"] for a in sarif["runs"][0]["artifacts"]]
    assert len(uris) == len(shards) and not any("*" in u for u in uris)


def test_dump_of_any_shard_describes_the_model(split_model, capsys):
    whole, shards = split_model
    capsys.readouterr()
    assert main(["dump", "--json", whole]) == 0
    want = json.loads(capsys.readouterr().out)["model"]
    for n, path in enumerate(shards):
        assert main(["dump", "--json", path]) == 0
        model = json.loads(capsys.readouterr().out)["model"]
        assert model["parameters"] == want["parameters"] and model["llama_cpp"] == want["llama_cpp"]
        assert model["split"]["files"] == len(shards) and model["split"]["first_shard"] == (n == 0)
        assert main(["dump", "--no-tensors", path]) == 0
        text = capsys.readouterr().out
        assert ("refuses this shard" in text) == (n > 0) and "parameters: " in text
        assert ("loads" in text) == want["llama_cpp"]["loads"]


def test_sweep_rows_of_a_split_model(split_model, tmp_path):
    from gguf_construct.operations.sweep import sweep_one

    whole, shards = split_model
    base = sweep_one(whole)
    rows = [sweep_one(p) for p in shards]
    total = len(shards)
    assert [r["shard"] for r in rows] == [f"{n:05d}-of-{total:05d}" for n in range(1, total + 1)]
    assert base["shard"] is None
    for profile in ("spec", "ggml", "llama_cpp"):
        assert all(r[f"valid_{profile}"] == base[f"valid_{profile}"] for r in rows), profile
    assert sum(r["parameter_count"] for r in rows) == base["parameter_count"]
    assert sum(r["tensor_count"] for r in rows) == base["tensor_count"]


def test_hash_set_from_any_shard_equals_the_unsplit_file(split_model, capsys):
    whole, shards = split_model
    capsys.readouterr()
    main(["hash", whole])
    want = capsys.readouterr().out.split()[1]
    for path in shards:
        main(["hash", "--set", path])
        assert capsys.readouterr().out.split()[1] == want


# -- broken sets ------------------------------------------------------------------------------------------------
def _split_copy(tmp_path, arch="llama", n=5) -> list[str]:
    whole = tmp_path / "m.gguf"
    quantized_model(arch).save(whole)
    assert main(["split", str(whole), str(tmp_path / "m"), "--max-tensors", str(n)]) == 0
    return sorted(str(p) for p in tmp_path.glob("m-*-of-*.gguf"))


def test_missing_shard_is_a_finding_of_its_own(tmp_path):
    shards = _split_copy(tmp_path)
    os.remove(shards[2])
    first = check(shards[0], profile="llama.cpp")
    missing = [f for f in first.findings if f.rule == "META-SPLIT-MISSING"]
    assert len(missing) == 1 and missing[0].severity == "error" and "00003" in missing[0].message
    assert not [f for f in first.findings if f.rule.startswith("MODEL-")]  # the model is unknown, not broken
    assert check(shards[0], profile="spec").valid  # each file is still a valid GGUF file
    os.remove(shards[0])
    later = check(shards[1], profile="llama.cpp", as_member=True)
    assert [f.rule for f in later.findings if f.rule.startswith("META-SPLIT")] == ["META-SPLIT-MISSING"]


def test_first_shard_read_without_a_location_leaves_the_model_unjudged_and_says_so(tmp_path, capsys, monkeypatch):
    shards = _split_copy(tmp_path)
    with open(shards[0], "rb") as fh:
        data = fh.read()
    alone = check(data, profile="llama.cpp")
    assert not [f for f in alone.findings if f.rule.startswith("MODEL-")]  # its tensors are only a fifth
    assert [n for n in alone.notes if "first shard of a split model" in n and f"of {len(shards)} shards" in n]
    by_path = check(shards[0], profile="llama.cpp")
    assert not [n for n in by_path.notes if "first shard" in n]
    # the same from the command line's standard input
    monkeypatch.setattr("sys.stdin", type("In", (), {"buffer": __import__("io").BytesIO(data)})())
    rc, reports = _cli_json(capsys, "--profile", "llama.cpp", "-")
    assert [n for n in reports[0]["notes"] if "first shard of a split model" in n]


def test_inconsistent_shards_are_findings_of_the_first(tmp_path):
    shards = _split_copy(tmp_path)
    f = g.load(shards[1], shards=False)
    f.metadata.set("split.no", 2, "UINT16")  # claims the third place
    f.metadata.set("split.tensors.count", 99, "INT32")
    f.save(shards[1] + ".tmp")
    f.close()
    os.replace(shards[1] + ".tmp", shards[1])
    report = check(shards[0], profile="llama.cpp")
    by_rule = {x.rule: x for x in report.findings if x.rule.startswith("META-SPLIT")}
    assert "invalid split file idx" in by_rule["META-SPLIT-COUNT"].message
    assert by_rule["META-SPLIT-COUNT"].severity == "error"
    assert by_rule["META-SPLIT-AGREE"].severity == "warning"  # llama.cpp reads the first shard's count only


def test_first_shard_name_must_let_llama_cpp_find_the_others(tmp_path):
    shards = _split_copy(tmp_path)
    renamed = tmp_path / "model.gguf"
    os.rename(shards[0], renamed)
    report = check(renamed, profile="llama.cpp")
    assert any(f.rule == "META-SPLIT-COUNT" and "invalid split file name" in f.message for f in report.findings)
    assert not report.valid


@pytest.mark.parametrize("count", [0, 1])
def test_split_count_below_two_is_a_whole_file(count):
    f = minimal_model("llama")
    for key, value in ((splitset.SPLIT_NO, 0), (splitset.SPLIT_COUNT, count), (splitset.SPLIT_TENSORS, len(f.tensors))):
        f.metadata.set(key, value, "INT32" if key == splitset.SPLIT_TENSORS else "UINT16")
    report = check(f.to_bytes(), profile="llama.cpp")
    assert not [x for x in report.findings if x.rule.startswith("META-SPLIT")]
    assert splitset.role(0, count) == splitset.SINGLE


def test_roles_and_names_follow_llama_cpp():
    assert splitset.role(None, None) == splitset.SINGLE
    assert splitset.role(0, 3) == splitset.FIRST and splitset.role(None, 3) == splitset.FIRST
    assert splitset.role(2, 3) == splitset.LATER
    assert splitset.member_paths("d/m-00001-of-00003.gguf", 3) == [
        "d/m-00001-of-00003.gguf",
        "d/m-00002-of-00003.gguf",
        "d/m-00003-of-00003.gguf",
    ]
    assert splitset.member_paths("d/m-00002-of-00003.gguf", 3) is None  # not a first shard's name
    assert splitset.member_paths("d/m.gguf", 3) is None
    assert splitset.shard_numbers(1, 3) == ("00002", "00003")


def test_check_of_a_shard_url_judges_the_set(tmp_path):
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from gguf_construct.base.rangeserver import RangeServer

    shards = _split_copy(tmp_path)
    whole = check(str(tmp_path / "m.gguf"), profile="llama.cpp")
    with RangeServer(str(tmp_path)) as srv:
        first = check(srv.url(os.path.basename(shards[0])), profile="llama.cpp")
        later = check(srv.url(os.path.basename(shards[1])), profile="llama.cpp")
    assert first.valid == whole.valid and _model_rules([first]) == _model_rules([whole])
    assert "META-SPLIT-LATER" in later.rules()


def test_a_defect_in_a_later_shard_is_judged_on_the_first_naming_its_shard(tmp_path):
    f = quantized_model("llama")
    last = f.tensors[-1]
    f.remove_tensor(last.name)
    f.add_tensor(last.name, np.zeros((3, 32), np.float32))  # a shape llama.cpp does not expect
    f.save(tmp_path / "bad.gguf")
    assert main(["split", str(tmp_path / "bad.gguf"), str(tmp_path / "b"), "--max-tensors", "5"]) == 0
    shards = sorted(str(p) for p in tmp_path.glob("b-*-of-*.gguf"))
    whole = check(tmp_path / "bad.gguf", profile="llama.cpp")
    first = check(shards[0], profile="llama.cpp")
    assert not whole.valid and not first.valid and _model_rules([first]) == _model_rules([whole])
    shape = next(x for x in first.findings if x.rule == "MODEL-TENSOR-SHAPE")
    assert shape.offset is None and shape.path.startswith(os.path.basename(shards[-1]) + ":tensor_infos[")


def test_a_whole_file_named_like_a_shard_loads_alone(tmp_path):
    f = minimal_model("llama")
    f.metadata.set(splitset.SPLIT_COUNT, 0, "UINT16")  # as merge writes it
    f.save(tmp_path / "m-00001-of-00002.gguf")
    one = g.load(tmp_path / "m-00001-of-00002.gguf")  # no error for the absent "shard 2": it is no split model
    assert one.shards == [one] and len(one.tensors) == len(f.tensors)


def test_metadata_only_first_shard_as_published_layouts_have_it(tmp_path, capsys):
    """gguf-split --no-tensor-first-split (used by published models): the first shard holds only the metadata."""
    whole = tmp_path / "m.gguf"
    quantized_model("gemma3").save(whole)
    assert main(["split", str(whole), str(tmp_path / "p"), "--max-size", "20K", "--no-tensor-first-split"]) == 0
    shards = sorted(str(p) for p in tmp_path.glob("p-*-of-*.gguf"))
    assert len(g.load(shards[0], shards=False).tensors) == 0 and len(shards) >= 3
    for profile in PROFILES:
        rc_whole, (doc_whole,) = _cli_json(capsys, "--profile", profile, str(whole))
        # named by a later shard (the spec's view) or, under llama.cpp, which refuses a later shard, by the first
        rc, doc = _cli_json(capsys, "--profile", profile, shards[0 if profile == "llama.cpp" else -1])
        assert rc == rc_whole and [e["file"] for e in doc] == shards
        assert {f["rule"] for f in doc[0]["findings"] if not f["rule"].startswith(NOT_MODEL)} == {
            f["rule"] for f in doc_whole["findings"] if not f["rule"].startswith(NOT_MODEL)
        }
