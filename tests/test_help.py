"""Help where users are: gguf.md's tensor-name spellings in the reference (more in this file as the rule command,
man page and completions arrive)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_tensor_names_page_lists_gguf_md_spellings_beside_llama_cpps():
    text = (ROOT / "docs" / "tensor-names.md").read_text(encoding="utf-8")
    section = text.split("tensor-names-gguf-md")[-1]
    for gguf_md, ours in (("pos_embd", "position_embd"), ("blk.{i}.ffn_gate_exp", "blk.{i}.ffn_gate_exps"),
                          ("blk.{i}.ffn_down_exp", "blk.{i}.ffn_down_exps"),
                          ("blk.{i}.ffn_up_exp", "blk.{i}.ffn_up_exps")):
        row = next(line for line in section.splitlines() if line.startswith(f"| `{gguf_md}` |"))
        assert f"[`{ours}`](#tensor-" in row
        assert "errata.md#erratum-gguf-md-tensor-names" in row


def test_gguf_md_spellings_are_not_llama_cpp_names():
    names = yaml.safe_load((ROOT / "spec" / "tensor_names.yaml").read_text(encoding="utf-8"))
    loader = yaml.safe_load((ROOT / "spec" / "architectures" / "_loader.yaml").read_text(encoding="utf-8"))
    known = {n.replace("%d", "{i}", 1).replace("%d", "{j}", 1) for n in loader["tensor_names"].values()}
    for item in names["gguf_md_spellings"]:
        assert item["gguf_md"] not in known
        assert all(n in known for n in item["llama_cpp"]), item
