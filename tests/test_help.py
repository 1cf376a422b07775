"""Help where users are: gguf.md's tensor-name spellings in the reference (more in this file as the rule command,
man page and completions arrive)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_tensor_names_page_lists_gguf_md_spellings_beside_llama_cpps():
    text = (ROOT / "docs" / "tensor-names.md").read_text(encoding="utf-8")
    section = text.split("tensor-names-gguf-md")[-1]
    for gguf_md, ours in (
        ("pos_embd", "position_embd"),
        ("blk.{i}.ffn_gate_exp", "blk.{i}.ffn_gate_exps"),
        ("blk.{i}.ffn_down_exp", "blk.{i}.ffn_down_exps"),
        ("blk.{i}.ffn_up_exp", "blk.{i}.ffn_up_exps"),
    ):
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


# -- gguf-construct rule -------------------------------------------------------------------------------------------
def _run(argv, capsys):
    from gguf_construct.commands import main as cli

    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rule_explains_text_severities_references_and_a_checked_example(capsys):
    code, out, _ = _run(["rule", "hdr-magic"], capsys)
    assert code == 0
    assert out.startswith("HDR-MAGIC: Bad magic\n")
    assert "severity    spec: error · ggml: error · llama.cpp: error" in out
    assert "load        refuses the file" in out
    from gguf_construct.commands.rule import rules_page

    assert f"docs        {rules_page()}#rule-hdr-magic" in out  # docs/rules.md in a checkout, the shipped copy else
    assert rules_page().endswith("rules.md")
    assert "ggml/src/gguf.cpp" in out  # its spec reference
    example = out.split("Example: ")[1]
    assert "$ gguf-construct check " in example
    assert "error HDR-MAGIC at byte 0 (header.magic): magic is b'GGUG'" in example  # the checker's own finding


def test_rule_severity_per_profile_comes_from_the_catalog(capsys):
    from gguf_construct.rulebook.catalog import catalog

    code, out, _ = _run(["rule", "HDR-ENDIAN", "--format", "json", "--no-example"], capsys)
    import json

    info = json.loads(out)
    rule = catalog()["HDR-ENDIAN"]
    assert info["severity"] == {
        "spec": rule.severity("spec"),
        "ggml": rule.severity("ggml"),
        "llama.cpp": rule.severity("llama.cpp"),
    }
    assert info["severity"]["spec"] != info["severity"]["ggml"]  # the profiles differ for this rule
    assert "example" not in info


def test_rule_example_of_a_model_rule_runs_under_its_profile(capsys):
    code, out, _ = _run(["rule", "MODEL-TENSOR-MISSING"], capsys)
    assert code == 0
    assert "$ gguf-construct check --profile llama.cpp " in out
    assert "error MODEL-TENSOR-MISSING" in out


def test_every_rule_has_an_example_with_its_finding():
    from gguf_construct.commands.rule import example
    from gguf_construct.rulebook.catalog import catalog

    missing = [
        rid for rid in catalog() if not (example(rid) or {}).get("findings") and "dormant" not in catalog()[rid].raw
    ]
    assert not missing


def test_rule_unknown_id_suggests_and_lists(capsys):
    code, _, err = _run(["rule", "HDR-MAGIK"], capsys)
    assert code == 2 and "did you mean HDR-MAGIC" in err
    code, out, _ = _run(["rule", "--all"], capsys)
    from gguf_construct.rulebook.catalog import catalog

    assert code == 0 and len([x for x in out.splitlines() if x[:1].isupper() and "  " in x]) == len(catalog())


# -- man page and completions --------------------------------------------------------------------------------------
def test_man_page_and_completions_cover_every_sub_command(capsys):
    from gguf_construct.commands.main import build_parser
    from gguf_construct.commands import completion as shellhelp

    parser = build_parser()
    names = list(shellhelp._subparsers(parser).choices)
    assert {"check", "docs", "rule", "man", "completion"} <= set(names)
    code, man, _ = _run(["man"], capsys)
    assert code == 0 and man.startswith('.TH "GGUF-CONSTRUCT" "1"')
    for name in names:
        assert f".SS {name.replace('-', chr(92) + '-')}\n" in man
    assert "\\fB\\-\\-profile\\fR \\fIPROFILE\\fR" in man
    for shell in shellhelp.SHELLS:
        code, script, _ = _run(["completion", shell], capsys)
        assert code == 0
        for name in names:
            assert name in script, (shell, name)
        assert "llama.cpp" in script  # the choices of check --profile


def test_man_and_completion_follow_the_parser():
    """A sub-command added to the parser is in the output without touching the generator."""
    from gguf_construct.commands.main import build_parser
    from gguf_construct.commands import completion as shellhelp

    parser = build_parser()
    sub = shellhelp._subparsers(parser)
    p = sub.add_parser("brand-new", help="a command added later")
    p.add_argument("--colour", choices=("red", "green"), help="which colour")
    assert ".SS brand\\-new" in shellhelp.manpage(parser)
    bash = shellhelp.completion(parser, "bash")
    assert "brand-new) opts=" in bash and '--colour) COMPREPLY=($(compgen -W "red green"' in bash
    assert "'brand-new:a command added later'" in shellhelp.completion(parser, "zsh")
    assert "__fish_seen_subcommand_from brand-new' -l colour -x -a 'red green'" in shellhelp.completion(parser, "fish")


def _shell(cmd: list[str], script: str, tmp_path) -> str:
    import subprocess

    path = tmp_path / "script"
    path.write_text(script, encoding="utf-8")
    return subprocess.run(cmd + [str(path)], capture_output=True, text=True, timeout=60).stdout


def test_bash_completion_completes_commands_options_and_choices(tmp_path):
    import shutil

    from gguf_construct.commands.main import build_parser
    from gguf_construct.commands import completion as shellhelp

    if shutil.which("bash") is None:
        import pytest

        pytest.skip("needs bash")
    script = (
        shellhelp.completion(build_parser(), "bash")
        + """
COMP_WORDS=(gguf-construct ru); COMP_CWORD=1; _gguf_construct; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(gguf-construct check --prof); COMP_CWORD=2; _gguf_construct; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(gguf-construct check --profile ""); COMP_CWORD=3; _gguf_construct; echo "3:${COMPREPLY[*]}"
"""
    )
    out = _shell(["bash"], script, tmp_path)
    assert "1:rule\n" in out and "2:--profile\n" in out and "3:spec ggml llama.cpp\n" in out


def test_zsh_and_fish_scripts_parse(tmp_path):
    import shutil

    import pytest

    from gguf_construct.commands.main import build_parser
    from gguf_construct.commands import completion as shellhelp

    shells = [s for s in ("zsh", "fish") if shutil.which(s)]
    if not shells:
        pytest.skip("needs zsh or fish")
    import subprocess

    for shell in shells:
        path = tmp_path / f"c.{shell}"
        path.write_text(shellhelp.completion(build_parser(), shell), encoding="utf-8")
        flag = ["-n"] if shell == "zsh" else ["--no-execute"]
        run = subprocess.run([shell, *flag, str(path)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (shell, run.stderr)


def test_install_writes_where_asked(tmp_path, capsys):
    target = tmp_path / "man1" / "gguf-construct.1"
    code, out, _ = _run(["man", "--install", str(target)], capsys)
    assert code == 0 and target.read_text(encoding="utf-8").startswith('.TH "GGUF-CONSTRUCT"')
    assert f"wrote {target}" in out
