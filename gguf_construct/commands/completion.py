"""A man page and bash/zsh/fish completions generated from the command line's argument parser.

Written here rather than with shtab (no fish) or argparse-manpage (one more dependency for a page this small):
both walk the same ``argparse`` objects, so whatever sub-commands and options the parser has when the command runs
are in the output.  ``gguf-construct man`` and ``gguf-construct completion SHELL`` print them, ``--install`` puts
them where man and the shell look (per user, XDG locations).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.atomic import atomic_path
from .._version import __version__

__all__ = ["Command", "commands", "manpage", "completion", "SHELLS", "install_path", "add_cli", "cli_main"]

SHELLS = ("bash", "zsh", "fish")
PROG = "gguf-construct"


@dataclass(frozen=True)
class Option:
    """One option of a command: its flags, whether it takes a value, its choices and help."""

    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...]
    metavar: str
    help: str
    candidates: tuple[str, ...] = ()  # what completion offers for its value: the choices, else its candidates()


@dataclass(frozen=True)
class Command:
    """One sub-command: name, one-line help, description, usage, options and positional arguments."""

    name: str
    help: str
    description: str
    usage: str
    options: tuple[Option, ...]
    positionals: tuple[Option, ...]

    @property
    def words(self) -> tuple[str, ...]:
        """What completion offers for the positional arguments (rule IDs, shells, sub-commands ...)."""
        return tuple(w for o in self.positionals for w in o.candidates)

    @property
    def files(self) -> bool:
        """Whether a positional argument takes a path (one without candidates): then file names are offered."""
        return any(not o.candidates for o in self.positionals)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    text = parser._get_formatter()._expand_help(action)  # %(default)s and friends, as --help shows them
    return " ".join(text.split())


def _option(parser: argparse.ArgumentParser, action: argparse.Action) -> Option:
    takes = action.nargs != 0 and not isinstance(action, (argparse._HelpAction, argparse._VersionAction))
    choices = tuple(str(c) for c in action.choices) if action.choices and not isinstance(action.choices, dict) else ()
    metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    metavar = metavar[0] if isinstance(metavar, tuple) else metavar
    return Option(tuple(action.option_strings), takes, choices, str(metavar), _help(parser, action), candidates(action))


def candidates(action: argparse.Action) -> tuple[str, ...]:
    """What completion offers for ``action``'s value: its choices (sub-command names too), else what the
    ``candidates`` callable a command put on it returns (``rule``'s rule IDs, ``set --special-token``'s names);
    empty for a path or free text."""
    if action.choices:
        return tuple(str(c) for c in action.choices)
    found = getattr(action, "candidates", None)
    return tuple(found()) if callable(found) else ()


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """The sub-commands of ``parser`` in their help order."""
    sub = _subparsers(parser)
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    out = []
    for name, p in sub.choices.items():
        opts = tuple(_option(p, a) for a in p._actions if a.option_strings and a.help != argparse.SUPPRESS)
        pos = tuple(_option(p, a) for a in p._actions if not a.option_strings)
        usage = " ".join(p.format_usage().split())
        usage = usage[len("usage: ") :] if usage.startswith("usage: ") else usage
        out.append(
            Command(
                name, " ".join(helps.get(name, "").split()), " ".join((p.description or "").split()), usage, opts, pos
            )
        )
    return out


def _top_options(parser: argparse.ArgumentParser) -> list[Option]:
    return [_option(parser, a) for a in parser._actions if a.option_strings]


# -- man page ------------------------------------------------------------------------------------------------------
def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def manpage(parser: argparse.ArgumentParser) -> str:
    """The man page (section 1, roff) of ``parser``: synopsis, description, every sub-command with its options."""
    cmds = commands(parser)
    out = [
        f'.TH "{PROG.upper()}" "1" "" "{PROG} {__version__}" "User Commands"',
        ".SH NAME",
        f"{_roff(PROG)} \\- {_roff(parser.description or '')}",
        ".SH SYNOPSIS",
        f".B {_roff(PROG)}",
        "[\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] ...",
        ".SH DESCRIPTION",
        _roff(
            "GGUF model files (llama.cpp / ggml) read, written and checked against a declarative, executable "
            "specification. Every command has --help; the reference is generated by `gguf-construct docs`."
        ),
        ".SH COMMANDS",
    ]
    for c in cmds:
        out += [f".SS {_roff(c.name)}", f".B {_roff(c.usage)}", ".PP", _roff(c.description or c.help)]
        for opt in c.positionals:
            out += [".TP", f"\\fI{_roff(opt.metavar)}\\fR", _roff(opt.help)]
        for opt in c.options:
            value = f" \\fI{_roff(opt.metavar)}\\fR" if opt.takes_value else ""
            flags = ", ".join(f"\\fB{_roff(f)}\\fR" for f in opt.flags)
            extra = f" One of: {', '.join(opt.choices)}." if opt.choices else ""
            out += [".TP", flags + value, _roff(opt.help + extra)]
    out += [
        ".SH EXIT STATUS",
        _roff(
            "0 on success; 1 when check finds what --fail-on names, diff finds a difference "
            "or docs --check finds stale files; 2 on usage, input or I/O errors."
        ),
        ".SH SEE ALSO",
        _roff(
            "gguf-construct rule ID (one conformance rule explained); "
            "gguf-construct completion SHELL; the reference in docs/ or built with "
            "gguf-construct docs --site OUT."
        ),
    ]
    return "\n".join(out) + "\n"


# -- completions ---------------------------------------------------------------------------------------------------
def _words(options: list[Option] | tuple[Option, ...]) -> str:
    return " ".join(f for o in options for f in o.flags)


def _bash(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    fn = "_" + PROG.replace("-", "_")
    lines = [
        f"# bash completion for {PROG} (generated from its argument parser by `{PROG} completion bash`)",
        f"{fn}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        f'        COMPREPLY=($(compgen -W "{" ".join(c.name for c in cmds)} {_words(_top_options(parser))}"'
        ' -- "$cur"))',
        "        return",
        "    fi",
        '    local opts="" words="" files=1 free=""',
        '    case "$cmd" in',
    ]
    for c in cmds:
        valued_free = [o for o in c.options if o.takes_value and not o.candidates]
        lines.append(
            f'        {c.name}) opts="{_words(c.options)}" words="{" ".join(c.words)}" files={int(c.files)} '
            f'free="{_words(valued_free)}"'
        )
        valued = [o for o in c.options if o.candidates]
        if valued:
            lines.append('            case "$prev" in')
            for o in valued:
                lines.append(
                    f'                {"|".join(o.flags)}) COMPREPLY=($(compgen -W "{" ".join(o.candidates)}"'
                    ' -- "$cur")); return ;;'
                )
            lines.append("            esac")
        lines.append("            ;;")
    lines += [
        "    esac",
        '    if [[ -n "$free" && " $free " == *" $prev "* ]]; then',
        '        COMPREPLY=($(compgen -f -- "$cur"))  # the value of an option: a path or free text',
        '    elif [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        '        [[ "$files" == 1 ]] && COMPREPLY+=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        f"complete -o filenames -F {fn} {PROG}",
    ]
    return "\n".join(lines) + "\n"


def _zsh_text(text: str) -> str:
    text = text.replace("[", "(").replace("]", ")").replace(":", " -").replace("\\", "/")
    return text.replace("'", "'\\''")


def _zsh(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    fn = "_" + PROG.replace("-", "_")
    lines = [
        f"#compdef {PROG}",
        f"# zsh completion for {PROG} (generated from its argument parser by `{PROG} completion zsh`)",
        f"{fn}() {{",
        "    local -a commands",
        "    commands=(",
    ]
    lines += [f"        '{c.name}:{_zsh_text(c.help)}'" for c in cmds]
    lines += [
        "    )",
        "    if (( CURRENT == 2 )); then",
        "        _describe -t commands 'command' commands",
        "        return",
        "    fi",
        "    shift words",
        "    (( CURRENT-- ))",
        '    case "$words[1]" in',
    ]
    for c in cmds:
        specs = []
        for o in c.options:
            for flag in o.flags:
                spec = f"'{flag}[{_zsh_text(o.help[:120])}]"
                if o.takes_value:
                    action = f"({' '.join(o.candidates)})" if o.candidates else "_files"
                    spec += f":{_zsh_text(o.metavar.lower())}:{action}"
                specs.append(spec + "'")
        if c.words:
            specs.append(f"'*:{_zsh_text(c.positionals[0].metavar.lower())}:({' '.join(c.words)})'")
        if c.files:
            specs.append("'*:file:_files'")
        lines.append(f"        {c.name})")
        lines.append("            _arguments -s " + " \\\n                ".join(specs))
        lines.append("            ;;")
    lines += ["    esac", "}", f'{fn} "$@"']
    return "\n".join(lines) + "\n"


def _fish_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _fish(parser: argparse.ArgumentParser) -> str:
    cmds = commands(parser)
    lines = [
        f"# fish completion for {PROG} (generated from its argument parser by `{PROG} completion fish`)",
        f"complete -c {PROG} -f",
    ]
    for c in cmds:
        lines.append(f"complete -c {PROG} -n __fish_use_subcommand -a {c.name} -d '{_fish_text(c.help)}'")
    for c in cmds:
        cond = f"-n '__fish_seen_subcommand_from {c.name}'"
        if c.words:
            lines.append(f"complete -c {PROG} {cond} -x -a '{' '.join(c.words)}'")
        if c.files:
            lines.append(f"complete -c {PROG} {cond} -F")
        for o in c.options:
            parts = []
            for flag in o.flags:
                parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            if o.takes_value:
                parts.append(f"-x -a '{' '.join(o.candidates)}'" if o.candidates else "-r -F")
            lines.append(f"complete -c {PROG} {cond} {' '.join(parts)} -d '{_fish_text(o.help[:120])}'")
    return "\n".join(lines) + "\n"


def completion(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (bash, zsh or fish)."""
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](parser)


def install_path(kind: str) -> Path:
    """Where ``--install`` puts the man page (``man``) or a shell's completion, per user (XDG locations)."""
    home = Path.home()
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return {
        "man": data / "man" / "man1" / f"{PROG}.1",
        "bash": data / "bash-completion" / "completions" / PROG,
        "zsh": data / "zsh" / "site-functions" / f"_{PROG}",
        "fish": config / "fish" / "completions" / f"{PROG}.fish",
    }[kind]


_AFTER_INSTALL = {
    "man": "`man gguf-construct` finds it when {dir} is under a directory of `manpath` (~/.local/share/man is)",
    "bash": "bash-completion loads it from there in new shells",
    "zsh": "add `fpath=({dir} $fpath)` before `compinit` in ~/.zshrc",
    "fish": "fish loads it from there in new shells",
}


def cli_main(args: argparse.Namespace) -> int:
    """Run ``man`` or ``completion``: build the parser of the command line as it is now, print or install."""
    from .main import build_parser

    parser = build_parser()
    kind = "man" if args.command == "man" else args.shell
    text = manpage(parser) if kind == "man" else completion(parser, kind)
    if args.install is None:
        sys.stdout.write(text)
        return 0
    target = Path(args.install) if args.install else install_path(kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        Path(tmp).write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {target}; " + _AFTER_INSTALL[kind].format(dir=target.parent))
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``man`` and ``completion`` sub-commands on the CLI's subparsers."""
    install_help = "write it to PATH (default: {}) instead of printing it"
    p = subparsers.add_parser(
        "man",
        help="print or install the man page",
        description="Print the man page of gguf-construct (roff, generated from the argument "
        "parser, so it lists every command this installation has), or install "
        "it with --install.",
    )
    p.add_argument(
        "--install",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help=install_help.format("~/.local/share/man/man1/gguf-construct.1"),
    )
    p.set_defaults(func=cli_main)
    p = subparsers.add_parser(
        "completion",
        help="print or install shell completion (bash, zsh, fish)",
        description="Print the completion script for SHELL (generated from the argument "
        "parser), or install it with --install where the shell looks for it. "
        'For one session: eval "$(gguf-construct completion bash)".',
    )
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.add_argument(
        "--install",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help=install_help.format("the shell's per-user completion folder"),
    )
    p.set_defaults(func=cli_main)
